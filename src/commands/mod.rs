//! The subcommands behind the CLI: each takes parsed arguments and returns the process
//! exit status (0 ok, 100 a job/gate failed or the run was cancelled, 96 a setup error —
//! the endpoint failed the preflight —, 2 bad input, 1 integrity error, 3 inconclusive).
//! Console output goes to stdout; diagnostics to stderr.

pub mod merge;

use std::path::{Path, PathBuf};

use crate::cli::{Command, MessageFormat, ReportFormat, RunArgs, TimelineCommand};
use crate::gate::EXIT_BAD_INPUT;
use crate::model::RunReport;
use crate::render::{self, Style};
use crate::runner::{self, RunOptions};
use crate::suite::{self, ResolvedSuite, RunOverrides};

/// Runs one parsed command.
pub async fn dispatch(cmd: Command) -> i32 {
    match cmd {
        Command::Check { suites } => check(&suites),
        Command::List {
            suites,
            filter,
            partition,
        } => list(&suites, filter.as_deref(), partition),
        Command::Merge {
            run_dirs,
            out,
            host_clock_offset_ms,
        } => merge::command(&run_dirs, &out, host_clock_offset_ms),
        Command::K8s(args) => crate::shard::k8s::command(args),
        Command::Run { args, after } => run(args, after).await,
        Command::Serve(args) => crate::serve::run(args).await,
        Command::Sim(args) => match crate::sim::serve(args.to_config(), args.socket_addr()).await {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("error: simulator: {e}");
                EXIT_BAD_INPUT
            }
        },
        Command::Timeline {
            command: TimelineCommand::Verify { run_dir },
        } => match merge::shard_dirs(&run_dir) {
            // A merged run keeps each shard's timeline verbatim under shards/K: each is
            // verified against its own report (1 when any fails, else 2 when any is
            // unavailable, else 0).
            Some(shards) => {
                let mut code = 0;
                for (k, dir) in shards {
                    let r = crate::timeline::verify_run(&dir);
                    println!("shard {k}: {r}");
                    code = match (code, r.exit_code()) {
                        (1, _) | (_, 1) => 1,
                        (c, 0) => c,
                        (_, e) => e,
                    };
                }
                code
            }
            None => {
                let r = crate::timeline::verify_run(&run_dir);
                println!("{r}");
                r.exit_code()
            }
        },
        Command::Report {
            run_dir,
            format,
            output,
            otlp_endpoint,
            otlp_protocol,
        } => {
            report_command(
                &run_dir,
                format,
                output.as_deref(),
                otlp_endpoint
                    .as_deref()
                    .map(|u| (u, otlp_protocol.encoding())),
            )
            .await
        }
        Command::Baseline {
            command: crate::cli::BaselineCommand::Save { run_dir, name },
        } => crate::baseline::save_command(&run_dir, &name),
        Command::Compare {
            run_dir,
            baseline,
            noise_pct,
            regression_pct,
        } => crate::baseline::compare_command(&run_dir, &baseline, noise_pct, regression_pct),
        Command::Trajectory {
            samples,
            prometheus_range,
            engine,
            model,
            inferscope_report,
            steps,
            out,
        } => {
            let src = match (samples, inferscope_report) {
                (Some(dir), _) => crate::offline::OfflineSource::Samples(dir),
                (None, Some(f)) => crate::offline::OfflineSource::InferscopeReport(f),
                (None, None) => crate::offline::OfflineSource::PrometheusRange {
                    files: prometheus_range,
                    profile: crate::telemetry::EngineProfile::parse(&engine)
                        .unwrap_or(crate::telemetry::EngineProfile::Auto),
                    model,
                },
            };
            crate::offline::command(&src, &steps, out.as_deref())
        }
        Command::Overhead(args) => crate::overhead::command(args.into_request()).await,
        Command::Snapshot { run_dir, into } => crate::harness::snapshot_command(&run_dir, &into),
    }
}

fn check(paths: &[PathBuf]) -> i32 {
    match load_all(paths) {
        Ok(suites) => {
            for s in &suites {
                println!(
                    "ok: {} ({} jobs, {} tools)",
                    s.file.display(),
                    s.jobs.len(),
                    s.tools.len()
                );
            }
            0
        }
        Err(code) => code,
    }
}

fn list(
    paths: &[PathBuf],
    filter: Option<&str>,
    partition: Option<crate::shard::Partition>,
) -> i32 {
    match load_all(paths) {
        Ok(suites) => {
            let jobs: Vec<&suite::Job> = suites
                .iter()
                .flat_map(|s| s.jobs.iter())
                .filter(|j| filter.is_none_or(|f| suite::filter_matches(f, &j.id)))
                .collect();
            if jobs.is_empty() && filter.is_some() {
                // As `run`: a filter that selects nothing is a bad flag, not an empty list.
                return no_job_selected(filter);
            }
            let ids: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
            // As `run --partition`: the partition applies to what the filter selected, and
            // may hold no job (that shard has nothing to do).
            let keep = partition.map_or_else(|| vec![true; ids.len()], |p| p.selects(&ids));
            for (j, k) in jobs.iter().zip(keep) {
                if k {
                    println!("{}  {}", j.id, j.kind_name().as_str());
                }
            }
            0
        }
        Err(code) => code,
    }
}

/// Loads and resolves suites for `run` (exit 2 on any problem, before any request): the
/// flags as plain overrides, then [`crate::suite::diagnose::resolve_for_run`].
pub fn resolve_run(args: &RunArgs) -> Result<Vec<ResolvedSuite>, i32> {
    let overrides = RunOverrides {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        capture_timeline: args.capture_timeline,
        filter: args.filter.clone(),
    };
    crate::suite::diagnose::resolve_for_run(&args.suites, &overrides)
}

async fn run(args: RunArgs, after: crate::cli::RunAfterArgs) -> i32 {
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
            return EXIT_BAD_INPUT;
        }
    };
    let baseline = match &after.baseline {
        None => None,
        Some(name) => match crate::baseline::Baseline::load(Path::new("."), name) {
            Ok(b) => Some(b),
            Err(e) => {
                eprintln!("error: --baseline: {e}");
                return EXIT_BAD_INPUT;
            }
        },
    };
    if let Some(b) = &baseline {
        // As `compare`: a baseline that shares no selected job would compare nothing, and
        // every `regression_pct` gate would be unavailable; refused before any request.
        let selected: Vec<&str> = resolved
            .iter()
            .flat_map(|r| r.jobs.iter().map(|j| j.job.id.as_str()))
            .collect();
        if !selected.iter().any(|id| b.job(id).is_some()) {
            eprintln!(
                "error: --baseline {}: the baseline (saved from run {}) shares no job with \
                 this run: it has [{}], the run selects [{}]",
                b.name,
                b.run_id,
                b.jobs
                    .iter()
                    .map(|j| j.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                selected.join(", ")
            );
            return EXIT_BAD_INPUT;
        }
    }
    if let Err(e) = check_output_paths(&args) {
        eprintln!("error: {e}");
        return EXIT_BAD_INPUT;
    }
    if let Err(e) = crate::runner::execute::capture_max_events_from_env() {
        eprintln!("error: {e}");
        return EXIT_BAD_INPUT;
    }
    if args.dry_run {
        for r in &resolved {
            println!("{}", r.dry_run_text());
        }
        println!("dry run: nothing was sent");
        return 0;
    }
    if let Some(dir) = &args.out
        && let Err(e) = std::fs::create_dir_all(dir)
    {
        eprintln!("error: --out {}: {e}", dir.display());
        return EXIT_BAD_INPUT;
    }
    // The reporters: the console or JSON lines on stdout, and the JUnit file.
    let mut reporters: Vec<Box<dyn runner::events::Reporter>> = vec![match args.message_format {
        MessageFormat::Human => {
            Box::new(crate::reporter::Human::new(std::io::stdout(), Style::PLAIN))
        }
        MessageFormat::Json => Box::new(crate::reporter::Json::new(std::io::stdout())),
    }];
    let junit_error = args.junit.as_ref().map(|path| {
        let (r, error) = crate::reporter::Junit::new(path.clone());
        reporters.push(Box::new(r));
        (path, error)
    });
    let cancelled = runner::install_signal_flag();
    let outcome = runner::run_with(
        RunOptions {
            suites: resolved,
            out: args.out.clone(),
            progress: true,
            sink_override: None,
            quiet: false,
        },
        cancelled,
        runner::RunExtras {
            baseline,
            shard,
            events: runner::events::EventSink::new(reporters),
        },
    )
    .await;
    let mut exit_status = outcome.exit_status;
    if let Some((path, error)) = junit_error
        && let Some(e) = error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    {
        eprintln!("error: --junit {}: {e}", path.display());
        exit_status = EXIT_BAD_INPUT;
    }
    if let Some(url) = &after.otlp_endpoint {
        // Delivery problems are reported and never change the run's result.
        crate::otlp::send_report(&outcome.report, url, after.otlp_protocol.encoding()).await;
    }
    exit_status
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

pub use crate::run_dir::{check_new_or_empty_dir, load_report, read_report};
pub use crate::run_dir::{load_report_with_requests, read_report_with_requests};
pub use crate::suite::diagnose::{load_all, no_job_selected, print_suite_error};

/// `report RUN_DIR [--format F] [--output FILE] [--otlp-endpoint URL [--otlp-protocol P]]`:
/// reads the run once, renders it, then (when the render succeeded and a URL is given)
/// sends its spans in that encoding. Exit 0; 1 when the collector refused or could not be
/// reached (or JUnit rendering failed); 2 when the run is unreadable or the output cannot
/// be written.
async fn report_command(
    run_dir: &Path,
    format: ReportFormat,
    output: Option<&Path>,
    otlp: Option<(&str, crate::otlp::Encoding)>,
) -> i32 {
    // JUnit (an endpoint that was never reached: every request failed to connect) and
    // Perfetto (each request's TTFT slice) read the per-request records; the other formats
    // need only report.json's summaries.
    let loaded = match format {
        ReportFormat::Junit | ReportFormat::Perfetto => load_report_with_requests(run_dir),
        _ => load_report(run_dir),
    };
    let rep = match loaded {
        Ok(r) => r,
        Err(code) => return code,
    };
    match (report(&rep, run_dir, format, output), otlp) {
        (0, Some((url, encoding))) => {
            if crate::otlp::send_report(&rep, url, encoding).await {
                0
            } else {
                1
            }
        }
        (code, _) => code,
    }
}

fn report(rep: &RunReport, run_dir: &Path, format: ReportFormat, output: Option<&Path>) -> i32 {
    let text = match format {
        ReportFormat::Markdown => render::markdown_summary(
            &rep.jobs,
            &rep.summary,
            &runner::report::endpoint_label(rep),
        ),
        ReportFormat::Junit => match render::junit_xml(rep) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("error: {e}");
                return 1;
            }
        },
        // Byte-for-byte the `report.json` the run wrote (the typed model round-trips).
        ReportFormat::Json => String::from_utf8(rep.to_json()).unwrap_or_default(),
        ReportFormat::OtlpJson => crate::otlp::to_json(&crate::otlp::export(rep)),
        ReportFormat::OtlpProtobuf => {
            return write_output(output, &crate::otlp::to_protobuf(&crate::otlp::export(rep)));
        }
        ReportFormat::Html => {
            let (page, integrity_error) = crate::serve::html::report_html(run_dir);
            if integrity_error {
                eprintln!(
                    "warning: {}: the timeline failed verification; the page shows the error",
                    run_dir.display()
                );
            }
            page
        }
        ReportFormat::Perfetto if rep.merge.is_some() => match merge::perfetto(run_dir, rep) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_BAD_INPUT;
            }
        },
        ReportFormat::Perfetto => match runner::energy::perfetto(run_dir, rep) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_BAD_INPUT;
            }
        },
    };
    let mut text = text.into_bytes();
    if output.is_none() {
        text.push(b'\n');
    }
    write_output(output, &text)
}

/// Writes a rendered report to `output` (printing `wrote PATH`), else to standard output
/// as it is. Exit 0, or 2 when it cannot be written.
fn write_output(output: Option<&Path>, bytes: &[u8]) -> i32 {
    use std::io::Write;
    match output {
        Some(p) => match std::fs::write(p, bytes) {
            Ok(()) => {
                println!("wrote {}", p.display());
                0
            }
            Err(e) => {
                eprintln!("error: {}: {e}", p.display());
                EXIT_BAD_INPUT
            }
        },
        None => {
            let mut out = std::io::stdout().lock();
            match out.write_all(bytes).and_then(|()| out.flush()) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("error: standard output: {e}");
                    EXIT_BAD_INPUT
                }
            }
        }
    }
}
