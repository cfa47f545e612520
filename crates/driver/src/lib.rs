//! The `run` command: drives resolved suites against an endpoint (or the built-in
//! simulator), then grades, attributes and gates (docs/architecture.md "The data flow of `run`").
//!
//! Phases, in order, each a span when capture is on: `preparation` (simulator, clients,
//! tools), `preflight` (endpoint reachable, `/models` answering, model listed; then the
//! samplers start — a preflight failure is a setup error: no sampler, no measured window,
//! exit 96), `request_execution`
//! (the jobs, one trajectory in flight at a time: the step-attribution controlled (docs/measurement.md)-concurrency
//! condition — except jobs with load keys, which run their units concurrently per
//! [`crate::load`] and are labelled `apportioned` above one in flight; each job is
//! graded as it ends — and, unless its figures need the run's end, joined with the
//! samples taken so far, gated and reported then), `finalization` (the run-level figures,
//! the jobs deferred to the run's end, the artifacts). No `grading` phase is recorded:
//! grading happens per job inside `request_execution`. Artifacts are written only after
//! the measured window.

pub mod agentic;
pub mod baseline;
pub mod capture;
pub mod context;
pub mod energy;
pub mod events;
pub mod execute;
pub mod filler;
pub mod interrupt;
pub mod job;
pub mod load;
pub mod options;
pub mod replay;
pub mod report;
pub mod run_dir;
pub mod shape;
pub mod shard;
pub mod steps;
pub mod swe;
pub mod tokens;
pub mod tools;

pub use inferscope_report::table;

// The workspace crates the driver reads, under the names its modules use.
use inferscope_attribution as attribution;
use inferscope_client as client;
use inferscope_clock as clock;
use inferscope_fsio as fsio;
use inferscope_model as model;
use inferscope_model::stats;
use inferscope_records as records;
use inferscope_render as render;
use inferscope_sim as sim;
use inferscope_suite::{self as suite, grade, json};
use inferscope_telemetry as telemetry;
use inferscope_timeline as timeline;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::clock::RunClock;
use crate::model::exit::ExitCode;
use crate::timeline::Phase;

use self::agentic::DriverCtx;
use self::capture::Capture;
pub use self::execute::ExecutedJob;
pub use self::interrupt::{Interrupts, cancel, install_signal_handler, sleep_unless_cancelled};
pub use self::options::{RunExtras, RunOptions};

/// What a run produced.
pub struct RunOutcome {
    /// Exit status ([`ExitCode`]): `OK` all jobs and gates passed, `FAILED` any failed or
    /// the run was cancelled, `SETUP_ERROR` a setup error (preflight), `BAD_INPUT` when the
    /// artifacts could not be written to the run directory (the run's figures are then
    /// only on the console, so CI must not read it as a pass).
    pub exit_status: i32,
    /// The run directory.
    pub run_dir: PathBuf,
    /// The report (also written as `report.json`).
    pub report: crate::model::RunReport,
}

/// A run id: `YYYYMMDDTHHMMSSZ-xxxxxx` (UTC start + 6 random hex digits).
pub fn new_run_id(clock: &RunClock) -> String {
    let secs = (clock.reference_instant_unix_ns() / 1_000_000_000) as i64;
    let stamp = chrono::DateTime::from_timestamp(secs, 0)
        .map(|d| d.format("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_else(|| "run".into());
    let r: u32 = rand::random();
    format!("{stamp}-{:06x}", r & 0x00ff_ffff)
}

pub use crate::run_dir::default_run_dir;

/// The future of a run ([`run`], [`run_with`]), boxed at this crate's edge: the run's
/// whole async call tree (jobs, trajectories, load points, the client's requests) is one
/// state machine, and an unboxed `impl Future` would be compiled again in every crate that
/// polls it (the CLI, the harness, the overhead command). Boxed, it is compiled once, here;
/// the callers poll it through one virtual call per wake-up.
/// (docs/architecture.md "Build cost")
pub type RunFuture = futures_util::future::BoxFuture<'static, RunOutcome>;

/// Runs every selected job of `opts.suites`, writes the artifacts, and returns the
/// outcome. Cancellation (Ctrl-C / SIGTERM) is observed through `cancelled`: no new step
/// starts, in-flight spans end `cancelled`, and what exists is finalized as `partial`.
pub fn run(opts: RunOptions, cancelled: Arc<AtomicBool>) -> RunFuture {
    run_with(opts, cancelled, RunExtras::default())
}

/// [`run`] with [`RunExtras`] (a baseline to compare against).
pub fn run_with(opts: RunOptions, cancelled: Arc<AtomicBool>, extras: RunExtras) -> RunFuture {
    Box::pin(run_inner(opts, cancelled, extras))
}

async fn run_inner(opts: RunOptions, cancelled: Arc<AtomicBool>, extras: RunExtras) -> RunOutcome {
    let clock = RunClock::start();
    let run_id = new_run_id(&clock);
    let run_dir = opts.out.clone().unwrap_or_else(|| default_run_dir(&run_id));
    let capture = start_capture(&opts, &clock, &run_id, &extras.events);
    let ctx = DriverCtx {
        next_step_id: Arc::new(AtomicU64::new(0)),
        cancelled: cancelled.clone(),
        capture: capture.clone(),
    };
    let events = extras.events.clone();
    events.emit(run_started(&opts, extras.shard.as_ref()));
    let mut session = execute::Session::prepare(&opts, &clock, &ctx).await;
    session.shard = extras.shard.as_ref().and_then(|s| s.spec);
    // `requests.jsonl` is open from the start: load units stream their records to it as
    // they end; its header lists the jobs in report order.
    session.records = load::units::RecordsSink::create(
        &run_dir,
        &run_id,
        session
            .suites
            .iter()
            .flat_map(|s| s.resolved.jobs.iter().map(|j| j.job.id.clone()))
            .collect(),
    );
    // The window's I/O counters start after the set-up's own writes (the records file and
    // its header): what `capture.window_write_bytes` counts is the measured window's.
    let io_before = crate::timeline::proc_self_io();
    capture.phase(Phase::Preflight);
    session.preflight().await;
    // A run whose every suite failed set-up or the preflight starts no sampler and no
    // measured window: its jobs are `setup_error` and it exits 96.
    let released_ns = if session.any_runnable() {
        open_window(&mut session, extras.shard.as_ref(), &clock, &ctx).await
    } else {
        None
    };
    // Each job is graded and, when the run streams, finalized and reported as it ends
    // (docs/architecture.md "Order, and what is final when").
    let finished = session
        .execute_jobs(&ctx, &events, extras.baseline.as_ref())
        .await;
    if ctx.cancelled.load(Ordering::Relaxed) {
        capture.cancel_open_spans();
    }
    let telemetry = session.stop_telemetry();
    let io_after = crate::timeline::proc_self_io();
    let (graded, reports): (Vec<_>, Vec<_>) =
        finished.into_iter().map(|f| (f.graded, f.report)).unzip();
    // The jobs not finalized as they ended (their figures need the run's end) are reported
    // after the artifacts are written, in job order.
    let deferred: Vec<bool> = reports.iter().map(Option::is_none).collect();
    // Read once, so the report, the timeline's last span and its summary state one outcome.
    // An interrupt that cut nothing short (it arrived after every job had ended) leaves the
    // run's outcome as its jobs decided it.
    let signalled = ctx.cancelled.load(Ordering::Relaxed);
    let cancelled = cut_short(
        signalled,
        graded
            .iter()
            .map(|g| g.executed.interrupted || g.executed.cancelled_before_start),
    );
    if signalled && !cancelled {
        events.emit(events::RunEvent::InterruptCutNothing);
    }
    capture.phase(Phase::Finalization);
    let mut report = report::build(
        &run_id,
        &clock,
        &session.suites,
        &graded,
        reports,
        telemetry.as_ref(),
        cancelled,
        extras.baseline.as_ref(),
    );
    if let Some(s) = &extras.shard {
        report.shard = Some(shard_identity(s, &graded, &report, &clock, released_ns));
        if report.jobs.is_empty() && !report.cancelled {
            // A partition may hold no job: that shard has nothing to do, which is not bad
            // input (every K must still leave its run directory for `merge`).
            report.summary.exit_status = ExitCode::OK;
        }
    }
    // The executed trajectories (every request's full record, response text included)
    // are in the report now: free them before the artifacts are written.
    drop(graded);
    capture.end_phase(cancelled);
    let writes = report::write_artifacts(
        &run_dir,
        &events,
        &session.records,
        &mut report,
        telemetry.as_ref(),
        &capture,
        io_before,
        io_after,
        cancelled,
    );
    let exit_status = match writes {
        Ok(_) => report.summary.exit_status,
        Err(e) => {
            events.emit(events::RunEvent::ArtifactsNotWritten {
                run_dir: run_dir.clone(),
                error: e.to_string(),
            });
            ExitCode::BAD_INPUT
        }
    };
    session.shutdown().await;
    for (j, _) in report.jobs.iter().zip(&deferred).filter(|(_, d)| **d) {
        events.emit(events::RunEvent::JobFinished(Box::new(j.clone())));
    }
    events.emit(events::RunEvent::RunFinished {
        report: Box::new(report.clone()),
        run_dir: run_dir.clone(),
    });
    RunOutcome {
        exit_status,
        run_dir,
        report,
    }
}

/// The run's timeline capture: on when a suite asks for it and its sink can be made (the
/// sink knows every suite's tool names); when the sink cannot be made the run goes on
/// without capture and says so ([`events::RunEvent::CaptureDisabled`]).
fn start_capture(
    opts: &RunOptions,
    clock: &RunClock,
    run_id: &str,
    events: &events::EventSink,
) -> Capture {
    if !opts.suites.iter().any(|s| s.capture_timeline.value) {
        return Capture::off();
    }
    let mut tool_names: Vec<String> = opts
        .suites
        .iter()
        .flat_map(|s| s.suite.tools.iter().map(|t| t.name.clone()))
        .collect();
    tool_names.sort();
    tool_names.dedup();
    match execute::make_sink(clock, run_id, &tool_names, opts.sink_override.as_ref()) {
        Ok(sink) => Capture::on(sink),
        Err(reason) => {
            events.emit(events::RunEvent::CaptureDisabled { reason });
            Capture::off()
        }
    }
}

/// The run's first event: how many jobs and suites, the first suite's endpoint (the
/// simulator when any suite is simulated) and the shard line.
fn run_started(opts: &RunOptions, shard: Option<&crate::shard::ShardRun>) -> events::RunEvent {
    let simulated = opts
        .suites
        .iter()
        .any(|r| matches!(r.endpoint.value, crate::suite::EndpointSetting::Simulated));
    events::RunEvent::RunStarted {
        jobs: opts.suites.iter().map(|r| r.jobs.len()).sum(),
        suites: opts.suites.len(),
        endpoint: match opts.suites.first().map(|r| &r.endpoint.value) {
            Some(crate::suite::EndpointSetting::Url(u)) if !simulated => {
                crate::render::EndpointLabel::Url(u.clone())
            }
            _ => crate::render::EndpointLabel::Simulated,
        },
        shard: shard.map(crate::shard::describe_run),
    }
}

/// Opens the measured window of a run with something to run: starts the samplers, waits
/// for `--start-at` (unless cancelled) and enters the request-execution phase. Returns
/// when a `--start-at` wait released the run, on the run clock.
async fn open_window(
    session: &mut execute::Session,
    shard: Option<&crate::shard::ShardRun>,
    clock: &RunClock,
    ctx: &DriverCtx,
) -> Option<u64> {
    session.start_telemetry();
    let mut released_ns = None;
    if let Some(t) = shard.and_then(|s| s.start_at_unix_ns) {
        // `--start-at`: the first request waits for the shards' common instant, on the
        // run clock (the anchor maps the wall-clock instant onto it).
        let target = t.saturating_sub(clock.reference_instant_unix_ns());
        tokio::select! {
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(clock.instant_at(target))) => {}
            _ = interrupt::wait_flag(&ctx.cancelled) => {}
        }
        released_ns = Some(clock.elapsed_ns());
    }
    ctx.capture.phase(Phase::RequestExecution);
    released_ns
}

/// Whether an interrupt (`signalled`) cancelled the run: it did when it cut some job short
/// (`jobs_cut`: each job interrupted before its end or never started). One that arrived
/// after every job had ended cancelled nothing.
fn cut_short(signalled: bool, mut jobs_cut: impl Iterator<Item = bool>) -> bool {
    signalled && jobs_cut.any(|c| c)
}

/// The identity `report.json` records for a shard run: `run`'s plan with the start-at
/// lag (release and first request against the target), the anchor's read bracket and each
/// load job's shares and effective gates.
fn shard_identity(
    r: &crate::shard::ShardRun,
    graded: &[execute::GradedJob],
    report: &crate::model::RunReport,
    clock: &crate::clock::RunClock,
    released_ns: Option<u64>,
) -> crate::model::shard::ShardIdentity {
    let mut id = r.identity.clone();
    id.anchor_read_ns = clock.anchor_read_ns();
    if let (Some(t), Some(rel)) = (r.start_at_unix_ns, released_ns) {
        // A load job's records went to requests.jsonl as its units ended: its earliest
        // send is kept with its compact units.
        let streamed = graded
            .iter()
            .filter_map(|g| g.executed.load_units.as_ref()?.first_send_ns);
        let first = report
            .jobs
            .iter()
            .flat_map(|j| j.requests.iter().map(|q| q.send_ns))
            .chain(streamed)
            .min();
        id.start_at = Some(crate::shard::start_at_record(
            t,
            report.reference_instant_unix_ns,
            clock.anchor_read_ns(),
            rel,
            first,
        ));
    }
    id.load = graded
        .iter()
        .filter_map(|g| {
            let l = g.executed.load.as_ref()?;
            (!l.shares.is_empty()).then(|| crate::model::shard::JobShare {
                job: g.executed.job.job.id.clone(),
                gates: g.executed.job.gates.clone(),
                points: l.shares.clone(),
            })
        })
        .collect();
    id
}

#[cfg(test)]
mod cancellation_tests {
    use super::cut_short;

    #[test]
    fn an_interrupt_cancels_the_run_only_where_it_cut_a_job_short() {
        assert!(cut_short(true, [false, true].into_iter()));
        assert!(
            !cut_short(true, [false, false].into_iter()),
            "after every job ended"
        );
        assert!(!cut_short(false, [true].into_iter()), "no interrupt");
        assert!(!cut_short(true, std::iter::empty()));
    }
}
