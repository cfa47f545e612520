//! `report.json`, `steps.jsonl` and the console lines of a run (docs/artifacts.md "report.json" and
//! docs/artifacts.md "steps.jsonl").
//!
//! The report is the typed model of [`crate::model`] (schema
//! [`crate::model::REPORT_SCHEMA`], `inferscope-bench.report/v3`); this module assembles it
//! from what the drivers executed: per request the times in ns from the reference instant,
//! tokens (server usage, or the client's estimate beside it) and failure code; per job its
//! status (`pass`, `fail`, `cancelled`, `not_run`, `setup_error`), statistics, gate
//! verdicts with their bases, energy figures; per trajectory its steps, each with its
//! step-attribution figures (docs/measurement.md) inside; for load jobs the settings under `load` and the curve under
//! `sweep`; with `--baseline`, the per-figure comparison under `baseline`. Missing values are
//! `null` with a reason, never 0. No prompt, response or tool payload is written; a server's
//! error text is kept bounded and redacted (never in the timeline).

use std::io::Write;
use std::path::Path;

use inferscope_report::job::{
    BaselineRef, JobInput, LoadFacts, LoadPointFacts, UnitsFacts, job_report,
};
use inferscope_report::run::{RunFacts, run_report};

use crate::attribution::{StepMarker, step_markers_to_jsonl};
use crate::baseline::Baseline;
use crate::capture::Capture;
use crate::clock::{RunClock, unix_ns_to_rfc3339};
use crate::energy;
use crate::events::{EventSink, RunEvent};
use crate::job::{ExecutedJob, GradedJob, SuiteRuntime};
use crate::load::units::LoadUnits;
use crate::load::{LoadRun, load_report, sweep_report};
use crate::model::load::PointFacts;
use crate::model::{
    EndpointReport, GradingCheck, HarnessReport, JobKind, JobReport, Quality, RunReport,
};
use crate::render::EndpointLabel;
use crate::suite::GpuMode;
use crate::telemetry::{TelemetryRun, TelemetrySnapshot};
use crate::timeline::{IoCounters, ManifestInfo};

pub use crate::model::REPORT_SCHEMA as SCHEMA;
pub use inferscope_report::job::job_verdicts;

/// What report assembly reads of job `g` ([`JobInput`]): its settings, its records, its
/// grading, and its suite's secrets.
fn job_input<'a>(g: &'a GradedJob, suites: &'a [SuiteRuntime]) -> JobInput<'a> {
    let e = &g.executed;
    JobInput {
        id: &e.job.job.id,
        kind: job_kind(e),
        swe: e.harness.is_some() || e.job.job.kind_name().as_str() == "swe",
        has_checks: !e.job.job.checks.is_empty(),
        gates: &e.job.gates,
        secrets: suites[e.suite_index].secrets(),
        trajectories: &e.trajectories,
        checks: g
            .checks
            .iter()
            .map(|cs| {
                cs.iter()
                    .map(|c| GradingCheck {
                        check: c.check.clone(),
                        passed: c.passed,
                        detail: c.reason.clone(),
                    })
                    .collect()
            })
            .collect(),
        start_ns: e.start_ns,
        end_ns: e.end_ns,
        harness: e.harness.as_ref().map(|h| HarnessReport {
            exit_code: h.exit_code,
            timed_out: h.timed_out,
            spawn_error: h.spawn_error.clone(),
            steps_file: h.steps_file.clone(),
        }),
        notes: &e.notes,
        setup_error: e.setup_error.as_ref(),
        cancelled_before_start: e.cancelled_before_start,
        interruption: e.interrupted.then(|| e.interruption_note()),
        load: e.load.as_ref().map(|l| load_facts(e, l)),
        units: e.load_units.as_ref().map(units_facts),
    }
}

/// What report assembly reads of load job `e`'s run `l`: each point's curve facts and
/// windows, and the parts of its report its settings decide.
fn load_facts(e: &ExecutedJob, l: &LoadRun) -> LoadFacts {
    let values = l
        .spec
        .sweep
        .as_ref()
        .map_or_else(Vec::new, crate::load::Sweep::values);
    let points = l
        .points
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // The point's trajectory kept in report.json (its first unit).
            let first = e
                .trajectories
                .get(p.trajectories.clone())
                .and_then(<[_]>::first);
            // Where the point's measured window starts: its first measured request's send
            // (without one, the point's start).
            let measured_start = e
                .load_units
                .as_ref()
                .and_then(|u| u.point_measured_start_ns.get(i).copied().flatten());
            LoadPointFacts {
                facts: PointFacts {
                    index: p.point.index,
                    value: values.get(p.point.index).copied(),
                    label: p.point.label(),
                    concurrency: p.point.concurrency,
                    rate: p.point.rate,
                    achieved_concurrency: p.max_units_in_flight,
                    max_requests_in_flight: p.max_requests_in_flight,
                    units: p.units_started,
                    units_not_started: p.not_started,
                    window_ns: p.measured_window_ns(measured_start),
                    trajectories: first.map(|t| t.id.clone()).into_iter().collect(),
                    connections: p.connections,
                },
                trajectories: p.trajectories.clone(),
                start_ns: p.start_ns,
                end_ns: p.end_ns,
                declared_concurrency: p.declared_concurrency(),
                warmup: p.point.warmup,
            }
        })
        .collect();
    LoadFacts {
        points,
        report: load_report(l, Vec::new()),
        sweep: sweep_report(&l.spec, Vec::new()),
        schedule_notes: l.schedule_notes(),
        connect_notes: l.connect_notes(),
    }
}

/// A load job's compact units, as report assembly reads them.
fn units_facts(u: &LoadUnits) -> UnitsFacts<'_> {
    UnitsFacts {
        figures: &u.figures,
        point_requests: &u.point_requests,
        warm: &u.warm,
        warmup_ids: &u.warmup_ids,
        units: u.units,
        unfinished: &u.unfinished,
        failure_codes: &u.failure_codes,
        warmup_failures: &u.warmup_failures,
        graded: u.graded,
        streamed: u.streamed.as_ref(),
    }
}

/// The baseline a run compares with, as report assembly reads it.
fn baseline_ref(b: &Baseline) -> BaselineRef<'_> {
    BaselineRef {
        name: &b.name,
        run_id: &b.run_id,
        jobs: &b.jobs,
    }
}

fn job_kind(e: &ExecutedJob) -> JobKind {
    match e.job.job.kind {
        crate::suite::JobKind::Agentic(_) => JobKind::Agentic,
        crate::suite::JobKind::Context(_) => JobKind::Context,
        crate::suite::JobKind::Swe(_) => JobKind::Swe,
    }
}

/// Whether the first suite turned GPU sampling off (`[telemetry] gpu = "off"`).
fn gpu_off(suites: &[SuiteRuntime]) -> bool {
    suites
        .first()
        .is_some_and(|s| s.resolved.suite.telemetry.gpu == GpuMode::Off)
}

/// A job's final report when it ends: statistics, its own step-attribution join over the
/// samples taken so far (`snapshot`; `None` without telemetry), energy, gates and status —
/// exactly what `report.json` will hold for it. A running source whose newest sample is
/// still before the job's end after the bounded wait is named in the job's notes: the
/// window's tail is not covered, and no figure is extended over it.
pub fn finalize_job(
    g: &GradedJob,
    suites: &[SuiteRuntime],
    snapshot: Option<&TelemetrySnapshot>,
    baseline: Option<&Baseline>,
) -> JobReport {
    let telemetry = snapshot.map(|s| &s.run);
    let power = energy::power_report(telemetry, gpu_off(suites));
    let run = energy::attribute_run_energy(std::slice::from_ref(g), telemetry, power);
    let mut job = job_report(&job_input(g, suites), &run, baseline.map(baseline_ref));
    if g.executed.status_ran() {
        let end_ms = g.executed.end_ns as f64 / 1e6;
        for (source, newest) in snapshot.iter().flat_map(|s| &s.uncovered) {
            let newest = newest.map_or_else(
                || "it has no sample yet".to_string(),
                |t| format!("its newest is at {:.1} ms", t as f64 / 1e6),
            );
            job.notes.push(format!(
                "telemetry: {source} had no sample at or after the job's end ({end_ms:.1} ms) \
                 when the job was finalized ({newest}): the window's tail is not covered, so \
                 a figure that needs it is missing or covers the window only up to that sample"
            ));
        }
    }
    job
}

/// Builds the report at the run's end: the jobs' reports (`reports[i]`, the one finalized
/// when job `i` ended, else built now from the whole run's join), and the run-level
/// figures over the whole measured window — the power report, the attribution summary
/// with the whole-run energy, the telemetry summary and the job totals.
#[allow(clippy::too_many_arguments)]
pub fn build(
    run_id: &str,
    clock: &RunClock,
    suites: &[SuiteRuntime],
    graded: &[GradedJob],
    reports: Vec<Option<JobReport>>,
    telemetry: Option<&TelemetryRun>,
    cancelled: bool,
    baseline: Option<&Baseline>,
) -> RunReport {
    let end_ns = clock.elapsed_ns();
    let power = energy::power_report(telemetry, gpu_off(suites));
    let run = energy::attribute_run_energy(graded, telemetry, power);
    let jobs: Vec<JobReport> = graded
        .iter()
        .zip(reports)
        .map(|(g, r)| {
            r.unwrap_or_else(|| job_report(&job_input(g, suites), &run, baseline.map(baseline_ref)))
        })
        .collect();
    let endpoints: Vec<EndpointReport> = suites
        .iter()
        .map(|s| EndpointReport {
            suite: s.resolved.suite.name.clone(),
            base_url: s.base_url.clone(),
            simulated: s.simulated,
            model: s.model.clone(),
            engine_profile: s.resolved.suite.engine.as_str().into(),
            setup_error: s.setup_error.clone(),
        })
        .collect();
    let facts = RunFacts {
        run_id: run_id.into(),
        tool: format!("inferscope-bench {}", env!("CARGO_PKG_VERSION")),
        started_utc: unix_ns_to_rfc3339(clock.reference_instant_unix_ns()),
        reference_instant_unix_ns: clock.reference_instant_unix_ns(),
        clock_domain_id: clock.clock_domain_id().into(),
        end_ns,
        cancelled,
        endpoints,
        telemetry: telemetry.map(crate::telemetry::summary::summarize),
    };
    run_report(facts, jobs, &run)
}

/// The endpoint label for console output.
pub fn endpoint_label(report: &RunReport) -> EndpointLabel {
    match &report.endpoint {
        Some(e) if e.simulated => EndpointLabel::Simulated,
        Some(e) => EndpointLabel::Url(e.base_url.clone()),
        None => EndpointLabel::Simulated,
    }
}

/// Per-step tables of every trajectory (printed after the job lines): see
/// [`inferscope_report::table::step_tables`].
pub fn trajectory_tables(report: &RunReport) -> Vec<String> {
    inferscope_report::table::step_tables(report)
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Writes `path` atomically (a temporary file in its directory, synced, then renamed) from
/// what `fill` writes through a buffer: a large artifact is never one buffer in memory.
fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = tempfile::NamedTempFile::new_in(dir)?;
    let mut w = std::io::BufWriter::with_capacity(256 << 10, tmp);
    fill(&mut w)?;
    let tmp = w.into_inner().map_err(|e| e.into_error())?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The markers (docs/artifacts.md) of every step of every trajectory (unix ns from the anchor).
pub fn step_markers(report: &RunReport) -> Vec<StepMarker> {
    let anchor = report.reference_instant_unix_ns;
    report
        .jobs
        .iter()
        .flat_map(|j| j.trajectories.iter())
        .flat_map(|t| {
            t.steps.iter().map(move |s| {
                StepMarker::at(
                    &t.id,
                    s.step_id,
                    s.kind,
                    s.start_unix_ns(anchor),
                    s.end_unix_ns(anchor),
                    &s.name,
                )
            })
        })
        .collect()
}

/// Writes `report.json`, `steps.jsonl`, `samples/` and the timeline (when captured)
/// into `run_dir`, after the measured window. A timeline persistence failure is recorded
/// as a capture diagnostic and never changes results; samples that cannot be written are
/// said in an event ([`RunEvent::SamplesNotWritten`]) and fail nothing.
#[allow(clippy::too_many_arguments)]
pub fn write_artifacts(
    run_dir: &Path,
    events: &EventSink,
    records: &crate::load::units::RecordsSink,
    report: &mut RunReport,
    telemetry: Option<&TelemetryRun>,
    capture: &Capture,
    io_before: Option<IoCounters>,
    io_after: Option<IoCounters>,
    cancelled: bool,
) -> std::io::Result<()> {
    std::fs::create_dir_all(run_dir)?;
    report.capture.enabled = capture.is_on();
    report.capture.window_write_bytes = match (io_before, io_after) {
        (Some(a), Some(b)) => Some(b.write_bytes.saturating_sub(a.write_bytes)),
        _ => None,
    };
    if let Some(sink) = capture.sink() {
        let tl = sink.timeline();
        let summary = tl.finalize(cancelled);
        report.capture.events = Some(summary.event_count);
        report.capture.dropped = Some(summary.dropped.total());
        report.capture.rejected = Some(summary.rejected.total());
        report.capture.quality = Some(summary.quality);
        let info = ManifestInfo {
            io_before,
            io_after,
            telemetry_session_id: None,
        };
        match tl.persist(run_dir, &info) {
            Ok(p) => {
                report.capture.quality = Some(p.quality);
                report.capture.manifest = Some("timeline/manifest.json".into());
            }
            Err(e) => report.capture.diagnostic = Some(e.to_string()),
        }
    }
    if report.capture.quality.is_none() && capture.is_on() {
        report.capture.quality = Some(Quality::Unavailable);
    }
    if let Some(t) = telemetry
        && let Err(e) = t.write_samples(run_dir)
    {
        events.emit(RunEvent::SamplesNotWritten {
            error: e.to_string(),
        });
    }
    let markers = step_markers(report);
    write_atomic(
        &run_dir.join("steps.jsonl"),
        step_markers_to_jsonl(&markers).as_bytes(),
    )?;
    // The per-request records stream to `requests.jsonl` before `report.json`, which
    // states their length, count and hash and is written last.
    // Load units streamed theirs as they ended; the sequential jobs' are appended now.
    match records.take().map_err(std::io::Error::other)? {
        Some(mut w) => {
            for (i, j) in report.jobs.iter().enumerate() {
                for r in &j.requests {
                    w.append(i, r)?;
                }
                for u in &j.units {
                    w.append_unit(i, u)?;
                }
            }
            report.requests_file = Some(w.finish()?);
        }
        None => crate::records::write_report_records(run_dir, report)?,
    }
    // Serialized straight to the file (the same bytes as `RunReport::to_json`, which a
    // test checks), never held whole in memory.
    write_atomic_with(&run_dir.join("report.json"), |w| report.write_json(w))?;
    Ok(())
}
