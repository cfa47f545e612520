//! Command-line interface (clap derive). The binary in `main.rs` is a thin shell over
//! this module and the library; every command returns an exit status:
//! 0 success, 100 a job or gate failed, 2 bad input (suite, flags, paths), 3 inconclusive
//! (overhead only), 1 an integrity error (`timeline verify`).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// inferscope-bench: benchmark OpenAI-compatible LLM endpoints per step, in ms, joules
/// and prefix-cache hits, and gate CI on the result.
#[derive(Debug, Parser)]
#[command(name = "inferscope-bench", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate suite files (exit 0 valid, 2 invalid); sends nothing.
    Check {
        /// Suite files.
        #[arg(required = true)]
        suites: Vec<PathBuf>,
    },
    /// List the jobs of suite files (`suite::job  kind`).
    List {
        /// Suite files.
        #[arg(required = true)]
        suites: Vec<PathBuf>,
        /// Only jobs whose id contains this text (or matches this `*` glob).
        #[arg(long)]
        filter: Option<String>,
    },
    /// Run suites against an endpoint (the built-in simulator when none is named).
    Run(RunArgs),
    /// Serve the built-in OpenAI-compatible simulator until Ctrl-C.
    Sim(crate::sim::SimArgs),
    /// Timeline artifact tools.
    Timeline {
        /// Timeline subcommand.
        #[command(subcommand)]
        command: TimelineCommand,
    },
    /// Write a report of a finished run in another format.
    Report {
        /// The run directory (holds report.json).
        run_dir: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Markdown)]
        format: ReportFormat,
        /// Output file (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Offline ADR-013 join of an external driver's step markers with sampled timelines.
    Trajectory {
        /// A `samples/` directory written by a run (see docs of `telemetry`).
        #[arg(long)]
        samples: PathBuf,
        /// Step-marker JSONL file (`step_id, kind, t_start_unix_ns, t_end_unix_ns`).
        #[arg(long)]
        steps: PathBuf,
        /// Where to write the trajectory report JSON (default: print only).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// `timeline` subcommands.
#[derive(Debug, Subcommand)]
pub enum TimelineCommand {
    /// Verify a run's timeline artifact: hash, length, schema, order, parents, spans.
    /// Exit 0 ok, 1 integrity error, 2 unavailable or bad input.
    Verify {
        /// The run directory.
        run_dir: PathBuf,
    },
}

/// Output formats of `report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Markdown summary for a pull-request comment.
    Markdown,
    /// Chrome/Perfetto trace JSON (opens in ui.perfetto.dev).
    Perfetto,
    /// JUnit XML, one test case per job.
    Junit,
    /// The report.json itself (validated and re-emitted).
    Json,
}

/// Console message formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum MessageFormat {
    /// nextest-style human lines.
    #[default]
    Human,
    /// One JSON object per job and one summary object.
    Json,
}

/// Arguments of `run`.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Suite files to run, in order.
    #[arg(required = true)]
    pub suites: Vec<PathBuf>,
    /// Endpoint base URL (e.g. `http://127.0.0.1:8000/v1`); overrides the suite's.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model name; overrides the suite's.
    #[arg(long)]
    pub model: Option<String>,
    /// Capture the correlated timeline (overrides `capture_timeline = false`).
    #[arg(long)]
    pub capture_timeline: bool,
    /// Print every resolved setting and send nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write this run's artifacts exactly into DIR (default
    /// `target/inferscope/runs/<run_id>/`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only jobs whose id contains this text (or matches this `*` glob).
    #[arg(long)]
    pub filter: Option<String>,
    /// Also write JUnit XML here.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Console message format.
    #[arg(long, value_enum, default_value_t = MessageFormat::Human)]
    pub message_format: MessageFormat,
}
