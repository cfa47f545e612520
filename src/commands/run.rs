//! `run SUITE... [flags]`: the measured run (see docs/architecture.md for its data flow).

use std::path::Path;

use super::check_new_or_empty_dir;
use crate::cli::{MessageFormat, RunArgs};
use crate::model::exit::ExitCode;
use crate::render::Style;
use crate::runner::{self, RunOptions};
use crate::suite::{ResolvedSuite, RunOverrides};

/// Loads and resolves suites for `run` (exit 2 on any problem, before any request): the
/// flags as plain overrides, then [`crate::suite::diagnose::resolve_for_run`].
pub fn resolve_run(args: &RunArgs) -> Result<Vec<ResolvedSuite>, i32> {
    let overrides = RunOverrides {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        capture_timeline: args.capture_timeline,
        filter: args.filter.clone(),
    };
    let mut resolved = crate::suite::diagnose::resolve_for_run(&args.suites, &overrides)?;
    // `--aggregation` overrides every load job's `aggregation`.
    if let Some(a) = args.aggregation {
        for s in &mut resolved {
            for j in &mut s.jobs {
                if let Some(l) = &mut j.job.load {
                    l.aggregation = a.mode();
                }
            }
        }
    }
    // `--tokenizer` overrides every suite's `tokenizer` (a path is relative to the cwd).
    if let Some(t) = &args.tokenizer {
        let source = crate::suite::TokenizerSource::parse(t, Path::new("")).map_err(|m| {
            eprintln!("error: --tokenizer: {m}");
            ExitCode::BAD_INPUT
        })?;
        for s in &mut resolved {
            s.suite.tokenizer = source.clone();
            s.suite.set_by_flag("tokenizer");
        }
    }
    for s in &mut resolved {
        if let Some(pid) = args.engine_pid {
            s.suite.telemetry.engine_pid = Some(pid);
            s.suite.telemetry.include_descendants = true;
            s.suite.set_by_flag("telemetry.engine_pid");
            s.suite.set_by_flag("telemetry.include_descendants");
        }
        if let Some(ms) = args.metrics_period_ms {
            s.suite.telemetry.metrics_period_ms = ms;
            s.suite.set_by_flag("telemetry.metrics_period_ms");
        }
    }
    Ok(resolved)
}

/// Runs `run`: resolves the suites, checks the output paths, drives the run and writes
/// its artifacts; the exit status is the run's.
pub async fn command(args: RunArgs, after: crate::cli::RunAfterArgs) -> i32 {
    let mut resolved = match resolve_run(&args) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0);
    let shard = match crate::shard::plan(
        args.partition,
        args.shard,
        args.start_at.as_deref(),
        &mut resolved,
        now,
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::BAD_INPUT;
        }
    };
    let baseline = match load_baseline(after.baseline.as_deref(), &resolved) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::BAD_INPUT;
        }
    };
    if let Err(e) = check_output_paths(&args) {
        eprintln!("error: {e}");
        return ExitCode::BAD_INPUT;
    }
    if let Err(e) = crate::runner::execute::capture_max_events_from_env() {
        eprintln!("error: {e}");
        return ExitCode::BAD_INPUT;
    }
    if args.dry_run {
        for r in &resolved {
            println!("{}", r.dry_run_text());
        }
        println!("dry run: nothing was sent");
        return ExitCode::OK;
    }
    if let Some(dir) = &args.out
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("error: --out {}: {e}", dir.display());
        return ExitCode::BAD_INPUT;
    }
    // The reporters: the diagnostics on stderr, the console or JSON lines on stdout, and
    // the JUnit file, under the progress bar.
    let mut reporters: Vec<Box<dyn runner::events::Reporter>> = vec![
        Box::new(crate::reporter::Diagnostics::new(std::io::stderr())),
        match args.message_format {
            MessageFormat::Human => {
                Box::new(crate::reporter::Human::new(std::io::stdout(), Style::PLAIN))
            }
            MessageFormat::Json => Box::new(crate::reporter::Json::new(std::io::stdout())),
        },
    ];
    let junit_error = args.junit.as_ref().map(|path| {
        let (r, error) = crate::reporter::Junit::new(path.clone());
        reporters.push(Box::new(r));
        (path, error)
    });
    let events =
        runner::events::EventSink::new(vec![Box::new(crate::reporter::Progress::new(reporters))]);
    let interrupts = runner::install_signal_handler(events.clone());
    let run = runner::run_with(
        RunOptions {
            suites: resolved,
            out: args.out.clone(),
            sink_override: None,
        },
        interrupts.cancelled.clone(),
        runner::RunExtras {
            baseline,
            shard,
            events,
        },
    );
    // A second signal abandons the run where it stands.
    let outcome = tokio::select! {
        o = run => o,
        () = interrupts.aborted() => return ExitCode::INTERRUPTED,
    };
    let mut exit_status = outcome.exit_status;
    if let Some((path, error)) = junit_error
        && let Some(e) = error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    {
        eprintln!("error: --junit {}: {e}", path.display());
        exit_status = ExitCode::BAD_INPUT;
    }
    if let Some(url) = &after.otlp_endpoint {
        // Delivery problems are reported and never change the run's result.
        crate::otlp::send_report(&outcome.report, url, after.otlp_protocol.encoding()).await;
    }
    exit_status
}

/// `--baseline NAME`, loaded and checked against the selected jobs before any request: as
/// in `compare`, a baseline that shares no selected job would compare nothing, and every
/// `regression_pct` gate would be unavailable. The error is the message after `error: `.
fn load_baseline(
    name: Option<&str>,
    resolved: &[crate::suite::ResolvedSuite],
) -> Result<Option<crate::baseline::Baseline>, String> {
    let Some(name) = name else {
        return Ok(None);
    };
    let b = crate::baseline::Baseline::load(Path::new("."), name)
        .map_err(|e| format!("--baseline: {e}"))?;
    let selected: Vec<&str> = resolved
        .iter()
        .flat_map(|r| r.jobs.iter().map(|j| j.job.id.as_str()))
        .collect();
    if !selected.iter().any(|id| b.job(id).is_some()) {
        let has: Vec<&str> = b.jobs.iter().map(|j| j.id.as_str()).collect();
        return Err(format!(
            "--baseline {}: the baseline (saved from run {}) shares no job with this run: it has [{}], \
             the run selects [{}]",
            b.name,
            b.run_id,
            has.join(", "),
            selected.join(", ")
        ));
    }
    Ok(Some(b))
}

/// Checks `--out DIR` and `--junit FILE` before any request (exit 2 on error), so a run
/// is never measured only to lose its artifacts:
/// - `--out` must be a new path or an empty directory. A directory holding files (a
///   previous run) is refused: its old `timeline/` or `samples/` would otherwise sit next
///   to the new `report.json` and be read as this run's.
/// - `--junit` must not be a directory, and its parent directory must exist.
///
/// Errors: one line naming the flag, the path and the reason.
fn check_output_paths(args: &RunArgs) -> Result<(), String> {
    if let Some(dir) = &args.out {
        check_new_or_empty_dir(dir)?;
    }
    if let Some(path) = &args.junit {
        if path.is_dir() {
            return Err(format!("--junit {}: is a directory", path.display()));
        }
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if !parent.is_dir() {
            return Err(format!(
                "--junit {}: the directory {} does not exist",
                path.display(),
                parent.display()
            ));
        }
    }
    Ok(())
}
