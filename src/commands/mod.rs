//! The subcommands behind the CLI: each takes parsed arguments and returns the process
//! exit status, one of [`ExitCode`]'s (0 ok, 100 a job/gate failed or the run was
//! cancelled, 96 a setup error — the endpoint failed the preflight —, 2 bad input, 1 an
//! integrity or delivery error, 3 inconclusive, 130 aborted by a second signal).
//! Console output goes to stdout; diagnostics to stderr.

pub mod baseline;
pub mod check;
pub mod compare;
pub mod init;
pub mod k8s;
pub mod list;
pub mod merge;
pub mod overhead;
pub mod report;
pub mod run;
pub mod run_dir;
pub mod sim;
pub mod snapshot;
pub mod timeline;
pub mod trajectory;

use crate::cli::{Command, TimelineCommand};

/// Runs one parsed command.
// Boxed at the library's edge (the binary polls it): an unboxed `impl Future` would be
// compiled again in every crate that polls it (docs/architecture.md "Build cost").
pub fn dispatch(cmd: Command) -> futures_util::future::BoxFuture<'static, i32> {
    Box::pin(dispatch_inner(cmd))
}

async fn dispatch_inner(cmd: Command) -> i32 {
    match cmd {
        Command::Check { suites } => check::command(&suites),
        Command::Init(args) => init::command(args).await,
        Command::List {
            suites,
            filter,
            partition,
        } => list::command(&suites, filter.as_deref(), partition),
        Command::Merge {
            run_dirs,
            out,
            host_clock_offset_ms,
        } => merge::command(&run_dirs, &out, host_clock_offset_ms),
        Command::K8s(args) => k8s::command(args),
        Command::Run { args, after } => run::command(args, after).await,
        Command::Serve(args) => crate::serve::run(args.into_config()).await,
        Command::Sim(args) => sim::command(args).await,
        Command::Timeline {
            command: TimelineCommand::Verify { run_dir },
        } => timeline::verify(&run_dir),
        Command::Report {
            run_dir,
            format,
            output,
            otlp_endpoint,
            otlp_protocol,
        } => {
            report::command(
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
        } => baseline::save(&run_dir, &name),
        Command::Compare {
            run_dir,
            baseline,
            noise_pct,
            regression_pct,
        } => compare::command(&run_dir, &baseline, noise_pct, regression_pct),
        Command::Trajectory {
            samples,
            prometheus_range,
            engine,
            model,
            inferscope_report,
            gpu_devices,
            steps,
            out,
        } => trajectory::command(
            samples,
            prometheus_range,
            &engine,
            model,
            inferscope_report.map(|p| (p, gpu_devices)),
            &steps,
            out.as_deref(),
        ),
        Command::Overhead(args) => overhead::command(args.into_request()).await,
        Command::Snapshot { run_dir, into } => snapshot::command(&run_dir, &into),
    }
}

pub use crate::run_dir::{check_new_or_empty_dir, read_report, read_report_with_requests};
pub use crate::suite::diagnose::{load_all, no_job_selected, print_suite_error};
pub use run::resolve_run;
