//! Command-line interface (clap derive). The binary in `main.rs` is a thin shell over
//! this module and the library; every command returns an exit status:
//! 0 success, 100 a job or gate failed, 2 bad input (suite, flags, paths), 3 inconclusive
//! (overhead only), 1 an integrity error (`timeline verify`).

use std::path::PathBuf;

pub mod examples;
mod init;
mod k8s;
mod overhead;
mod serve;
mod sim;
pub use init::{DEFAULT_INIT_OUT, InitArgs};
pub use k8s::{K8sArgs, KubeRelease, PartitionMode};
pub use overhead::{NegativeControlArg, OverheadArgs};
pub use serve::ServeArgs;
pub use sim::SimArgs;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// inferscope-bench: benchmark OpenAI-compatible LLM endpoints per step, in ms, joules
/// and prefix-cache hits, and gate CI on the result.
#[derive(Debug, Parser)]
#[command(
    name = "inferscope-bench",
    version,
    about,
    long_about = None,
    after_help = examples::TOP
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Parses `argv` (program name first) as the binary does, exiting on bad flags as clap
/// does: the parsed command.
pub fn parse_from<I, T>(argv: I) -> Command
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    Cli::parse_from(argv).command
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write a commented starter suite for an endpoint: lists its models (`GET
    /// /models`) and picks one. Exit 0 written, 2 bad input or an existing file (without
    /// --force), 96 the endpoint did not answer with a model list.
    #[command(after_help = examples::INIT)]
    Init(InitArgs),
    /// Validate suite files (exit 0 valid, 2 invalid); sends nothing.
    #[command(after_help = examples::CHECK)]
    Check {
        /// Suite files.
        #[arg(required = true)]
        suites: Vec<PathBuf>,
    },
    /// List the jobs of suite files (`suite::job  kind`).
    #[command(after_help = examples::LIST)]
    List {
        /// Suite files.
        #[arg(required = true)]
        suites: Vec<PathBuf>,
        /// Only jobs whose id contains this text (or matches this `*` glob).
        #[arg(long)]
        filter: Option<String>,
        /// Only the jobs of partition K of N (`count:K/N` or `hash:K/N`, as in
        /// `run --partition`), after `--filter`.
        #[arg(long, value_name = "KIND:K/N", value_parser = parse_partition)]
        partition: Option<crate::shard::Partition>,
    },
    /// Run suites against an endpoint (the built-in simulator when none is named).
    #[command(after_help = examples::RUN)]
    Run {
        /// Suites, endpoint, capture and output.
        #[command(flatten)]
        args: RunArgs,
        /// Baseline comparison and OTLP delivery.
        #[command(flatten)]
        after: RunAfterArgs,
    },
    /// Serve the built-in OpenAI-compatible simulator until Ctrl-C.
    #[command(after_help = examples::SIM)]
    Sim(SimArgs),
    /// Serve the read-only, authenticated timeline API and dashboard page over retained
    /// run directories until Ctrl-C.
    #[command(after_help = examples::SERVE)]
    Serve(ServeArgs),
    /// Timeline artifact tools.
    #[command(after_help = examples::TIMELINE)]
    Timeline {
        /// Timeline subcommand.
        #[command(subcommand)]
        command: TimelineCommand,
    },
    /// Write a report of a finished run in another format.
    #[command(after_help = examples::REPORT)]
    Report {
        /// The run directory (holds report.json).
        run_dir: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = ReportFormat::Markdown)]
        format: ReportFormat,
        /// Output file (default: standard output).
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Also send the run's OTLP trace spans to this collector (OTLP/HTTP,
        /// `POST URL/v1/traces`).
        #[arg(long, value_name = "URL")]
        otlp_endpoint: Option<String>,
        /// The encoding sent to `--otlp-endpoint`: `http/protobuf` (gzip) or `http/json`.
        #[arg(long, value_enum, value_name = "PROTOCOL", default_value_t = OtlpProtocol::HttpProtobuf)]
        otlp_protocol: OtlpProtocol,
    },
    /// Saved baselines (`.inferscope/baselines/NAME.json` under the current directory).
    #[command(after_help = examples::BASELINE)]
    Baseline {
        /// Baseline subcommand.
        #[command(subcommand)]
        command: BaselineCommand,
    },
    /// Compare a finished run with a saved baseline: per job and figure, improved,
    /// regressed or within noise (exit 0; 100 with --regression-pct exceeded; 2 bad input).
    #[command(after_help = examples::COMPARE)]
    Compare {
        /// The run directory (holds report.json).
        run_dir: PathBuf,
        /// The baseline's name.
        #[arg(long)]
        baseline: String,
        /// Changes smaller than this percent are within noise even when the runs' 95%
        /// intervals do not overlap.
        #[arg(long, value_name = "PCT", default_value_t = crate::baseline::DEFAULT_NOISE_PCT)]
        noise_pct: f64,
        /// Exit 100 when any figure regressed by more than PCT percent.
        #[arg(long, value_name = "PCT")]
        regression_pct: Option<f64>,
    },
    /// Measure the overhead of timeline capture: interleaved capture-off/on runs of a
    /// suite against the `[overhead]` budgets. Exit 0 pass, 100 fail, 3 inconclusive.
    #[command(after_help = examples::OVERHEAD)]
    Overhead(OverheadArgs),
    /// Write each job's redacted trajectory report of a finished run as an insta
    /// `.snap.new` file (review with `cargo insta review`). Exit 0 when every snapshot
    /// matches, 100 when any is new or changed, 2 bad input. The `suites` test harness
    /// runs each job alone against a fresh simulator; to compare with its snapshots,
    /// snapshot a run of one job (`run SUITE --filter JOB`): in a run of several jobs the
    /// endpoint's prefix cache carries over from job to job.
    #[command(after_help = examples::SNAPSHOT)]
    Snapshot {
        /// The run directory (holds report.json).
        run_dir: PathBuf,
        /// The snapshots directory (`snapshots/` of the repository).
        #[arg(long, value_name = "DIR")]
        into: PathBuf,
    },
    /// Merge the run directories of every shard of one run (`run --partition` or
    /// `--shard`) into one run directory: figures from the union of the shards' requests,
    /// each shard's clock domain, anchor and artifacts kept (`shards/K/`). Exit: the merged
    /// run's status (0 passed, 100 a job or gate failed or a shard was cancelled, 96 a
    /// setup error); 2 when the shards do not belong together or a directory cannot be
    /// read or written.
    #[command(after_help = examples::MERGE)]
    Merge {
        /// The shards' run directories (each K of 1..=N exactly once, any order).
        #[arg(required = true)]
        run_dirs: Vec<PathBuf>,
        /// Where to write the merged run directory (new or empty).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Assumed bound of the wall-clock offset between the shards' hosts, ms: shards on
        /// other hosts are aligned by their unix anchors, whose clocks differ by their
        /// sync error (not measured). Shards of one host share one wall clock and use the
        /// anchors' measured read brackets instead.
        #[arg(long, value_name = "MS", default_value_t = crate::shard::DEFAULT_HOST_OFFSET_MS)]
        host_clock_offset_ms: f64,
    },
    /// Print Kubernetes manifests that run a suite as N shards (an Indexed Job) and merge
    /// them (a Job that waits for the Indexed Job's completion condition).
    #[command(after_help = examples::K8S)]
    K8s(K8sArgs),
    /// Offline step-attribution join (docs/measurement.md) of an external driver's step markers with sampled timelines:
    /// a samples directory, saved Prometheus query_range answers, or an inferscope report.
    #[command(after_help = examples::TRAJECTORY)]
    Trajectory {
        /// A `samples/` directory written by a run or by any tool (docs/samples.md).
        #[arg(long, required_unless_present_any = ["prometheus_range", "inferscope_report"],
              conflicts_with_all = ["prometheus_range", "inferscope_report"])]
        samples: Option<PathBuf>,
        /// A saved Prometheus `/api/v1/query_range` answer (JSON) of a plain selector,
        /// e.g. `{__name__=~"vllm:.*",job="vllm"}`; repeat for several.
        #[arg(long, value_name = "FILE", conflicts_with = "inferscope_report")]
        prometheus_range: Vec<PathBuf>,
        /// Engine profile naming the families of `--prometheus-range`.
        #[arg(long, value_name = "ENGINE", default_value = "auto", requires = "prometheus_range",
              value_parser = ["auto", "vllm", "sglang", "llamacpp", "sim"])]
        engine: String,
        /// Served model selecting `--prometheus-range` series by `model_name`/`model`.
        #[arg(long, value_name = "NAME", requires = "prometheus_range")]
        model: Option<String>,
        /// A report JSON of the inferscope project (its reference_instant_unix_ns and its
        /// gpu/kvcache/phase timelines).
        #[arg(long, value_name = "FILE")]
        inferscope_report: Option<PathBuf>,
        /// With `--inferscope-report`: keep only these GPUs' power (their
        /// `device_index` values, comma-separated, as `gpu_devices` for a live run);
        /// without it every device of the report is summed, and a note says so.
        #[arg(
            long,
            value_name = "INDEX,…",
            value_delimiter = ',',
            requires = "inferscope_report"
        )]
        gpu_devices: Option<Vec<u32>>,
        /// Step-marker JSONL file (`step_id, kind, t_start_unix_ns, t_end_unix_ns`).
        #[arg(long)]
        steps: PathBuf,
        /// Where to write the trajectory report JSON (default: print only).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

impl Command {
    /// Whether the command only reads files and prints (`check`, `list`, `timeline`,
    /// `compare`, `report` without `--otlp-endpoint`, `trajectory` without `--out`,
    /// `run --dry-run`): such a command may end at once
    /// when its reader closes stdout (SIGPIPE's default), as Unix filters do. Commands
    /// that measure, serve or write artifacts return `false`.
    pub fn prints_only(&self) -> bool {
        match self {
            Command::Check { .. }
            | Command::List { .. }
            | Command::K8s(_)
            | Command::Timeline { .. }
            | Command::Compare { .. } => true,
            Command::Report { otlp_endpoint, .. } => otlp_endpoint.is_none(),
            Command::Trajectory { out, .. } => out.is_none(),
            Command::Run { args, .. } => args.dry_run,
            _ => false,
        }
    }

    /// Async runtime workers the command runs on (`TOKIO_WORKER_THREADS=n` overrides):
    /// one for `run` and `overhead`, two for the rest. The command itself runs as a task
    /// on the workers (`main.rs`), never on the main thread.
    ///
    /// One worker is how the client is measured (BENCHMARKS.md, client timing fidelity and
    /// client cost): the load executor, the units, their streams and hyper's connection
    /// tasks all run on it, so a read is stamped without a wake-up across threads, and a
    /// connection task a request wakes runs next (the worker's LIFO slot) instead of
    /// behind every other runnable task. When the command ran on the main thread, a job not
    /// under load (a trajectory, a sweep, a replay) read its streams there while the
    /// connections ran on the worker: each streamed chunk woke the main thread and its
    /// stamp waited for that wake-up (median ITL gap error 0.20–0.21 ms against 0.12–0.13
    /// against a mock pacing tokens at 10 ms; a one-request paced run 15–18 ms of CPU
    /// against 9–10 with everything on one thread). A current-thread runtime also keeps
    /// everything on one thread but has no LIFO slot: at c = 10,000 the connection tasks
    /// queued behind the units, and TTFT p50 read 1,076 ms against 1,002 for a mock
    /// answering at 1,000 ms. The built-in simulator serves on a thread of its own.
    pub fn runtime_workers(&self) -> usize {
        let default = match self {
            Command::Run { .. } | Command::Overhead(_) => 1,
            _ => 2,
        };
        runtime_workers_from(
            default,
            std::env::var("TOKIO_WORKER_THREADS").ok().as_deref(),
        )
    }
}

/// [`Command::runtime_workers`] given the command's default and `TOKIO_WORKER_THREADS`: a
/// positive count there wins, anything else leaves the default.
fn runtime_workers_from(default: usize, env: Option<&str>) -> usize {
    env.and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// `timeline` subcommands.
#[derive(Debug, Subcommand)]
pub enum TimelineCommand {
    /// Verify a run's timeline artifact: hash, length, schema, order, parents, spans.
    /// Exit 0 ok, 1 integrity error, 2 unavailable or bad input.
    #[command(after_help = examples::TIMELINE_VERIFY)]
    Verify {
        /// The run directory.
        run_dir: PathBuf,
    },
}

/// `baseline` subcommands.
#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// Save a finished run's summary (figures and their spread) as baseline NAME.
    #[command(after_help = examples::BASELINE_SAVE)]
    Save {
        /// The run directory (holds report.json).
        run_dir: PathBuf,
        /// The baseline's name (`[A-Za-z0-9_.-]+`).
        #[arg(long)]
        name: String,
    },
}

/// What `run` does after the run: compare with a baseline, send OTLP spans.
#[derive(Debug, Args, Clone, Default)]
pub struct RunAfterArgs {
    /// Compare every job with this saved baseline (printed per figure; feeds
    /// `[gates] regression_pct`).
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// Send the run's OTLP trace spans to this collector after the run (OTLP/HTTP,
    /// `POST URL/v1/traces`).
    #[arg(long, value_name = "URL")]
    pub otlp_endpoint: Option<String>,
    /// The encoding sent to `--otlp-endpoint`: `http/protobuf` (gzip) or `http/json`.
    #[arg(long, value_enum, value_name = "PROTOCOL", default_value_t = OtlpProtocol::HttpProtobuf)]
    pub otlp_protocol: OtlpProtocol,
}

/// The OTLP/HTTP encoding sent to a collector (`OTEL_EXPORTER_OTLP_PROTOCOL`'s names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OtlpProtocol {
    /// Binary protobuf, gzip-compressed (what collectors expect by default).
    #[default]
    #[value(name = "http/protobuf")]
    HttpProtobuf,
    /// The OTLP/JSON mapping.
    #[value(name = "http/json")]
    HttpJson,
}

impl OtlpProtocol {
    /// The export encoding.
    pub fn encoding(self) -> crate::otlp::Encoding {
        match self {
            OtlpProtocol::HttpProtobuf => crate::otlp::Encoding::Protobuf,
            OtlpProtocol::HttpJson => crate::otlp::Encoding::Json,
        }
    }
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
    /// The dashboard's view of the run as one self-contained HTML file (data inline).
    Html,
    /// OTLP/JSON trace spans (one trace per trajectory, GenAI attributes), anchored at
    /// the run's reference instant.
    OtlpJson,
    /// The same spans as an OTLP protobuf `ExportTraceServiceRequest` (binary,
    /// uncompressed).
    OtlpProtobuf,
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

/// `run --aggregation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AggregationArg {
    /// Every percentile exact.
    Exact,
    /// HDR histograms with a stated error bound.
    Streaming,
}

impl AggregationArg {
    /// The suite's value.
    pub fn mode(self) -> crate::suite::load_spec::Aggregation {
        match self {
            AggregationArg::Exact => crate::suite::load_spec::Aggregation::Exact,
            AggregationArg::Streaming => crate::suite::load_spec::Aggregation::Streaming,
        }
    }
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
    /// How every load job aggregates its statistics (overrides each job's
    /// `aggregation`): `exact` (the default: every percentile exact) or `streaming` (HDR
    /// histograms, memory flat in the request count, each percentile with its error bound).
    #[arg(long, value_enum, value_name = "MODE")]
    pub aggregation: Option<AggregationArg>,
    /// Where context jobs count prompt tokens (overrides every suite's `tokenizer`):
    /// `bytes` (the 4-bytes-a-token estimate), `endpoint` (the engine's `POST /tokenize`)
    /// or the path of a Hugging Face tokenizer.json.
    #[arg(long, value_name = "SOURCE")]
    pub tokenizer: Option<String>,
    /// The engine process whose `/proc` is sampled, with its descendants (overrides every
    /// suite's `telemetry.engine_pid` and sets `include_descendants`): a server started
    /// by a script, e.g. vLLM's API server with its engine-core and worker processes.
    #[arg(long, value_name = "PID", value_parser = clap::value_parser!(u32).range(1..))]
    pub engine_pid: Option<u32>,
    /// The engine `/metrics` scrape period, ms (overrides every suite's
    /// `telemetry.metrics_period_ms`).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub metrics_period_ms: Option<u64>,
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
    /// Run only partition K of N of the selected jobs: `count:K/N` (round-robin over the
    /// sorted job ids) or `hash:K/N` (XXH64 of the job id mod N, stable across runs and
    /// hosts); nextest's syntax. Applied after `--filter`.
    #[arg(long, value_name = "KIND:K/N", value_parser = parse_partition, conflicts_with = "shard")]
    pub partition: Option<crate::shard::Partition>,
    /// Run shard K of N of every load job's load: a share of its concurrency, arrival rate
    /// and unit count, with a seed derived from the suite seed (sequential jobs run on
    /// shard 1 only). `merge` joins the N run directories.
    #[arg(long, value_name = "K/N", value_parser = parse_shard)]
    pub shard: Option<crate::shard::ShardSpec>,
    /// Hold the first request until this wall-clock instant (seconds since the Unix
    /// epoch, fractional allowed), so shards on several hosts start together; the lag
    /// from it is recorded in report.json (`shard.start_at`).
    #[arg(long, value_name = "UNIX_TS")]
    pub start_at: Option<String>,
}

fn parse_partition(s: &str) -> Result<crate::shard::Partition, String> {
    s.parse()
}

fn parse_shard(s: &str) -> Result<crate::shard::ShardSpec, String> {
    s.parse()
}

#[cfg(test)]
mod tests;
