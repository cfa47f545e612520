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

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::Path;

use inferscope_report::status::{StatusFacts, job_status};

use crate::attribution::{StepMarker, step_markers_to_jsonl};
use crate::baseline::{self, Baseline};
use crate::capture::Capture;
use crate::client::RequestRecord;
use crate::clock::{RunClock, unix_ns_to_rfc3339};
use crate::energy::{self, RunEnergy};
use crate::events::{EventSink, RunEvent};
use crate::gate::{self, FigureSet, JobOutcome};
use crate::grade::CheckResult;
use crate::job::{ExecutedJob, GradedJob, SuiteRuntime};
use crate::load::{LoadRun, goodput_criteria, load_report, sweep_report};
use crate::model::attribution::CountedStep;
use crate::model::compact::CompactFigureSet;
use crate::model::load::WindowEnergy;
use crate::model::{
    AttributionOutcome, Basis, CaptureReport, EndpointReport, FailureCount, Figure, GradingCheck,
    HarnessReport, JobKind, JobReport, JobStatus, NO_STEP_ENERGY, Quality, REPORT_SCHEMA,
    RunReport, StepAttribution, StepKind, StepReport, SummaryReport, TokenSource,
    TrajectoryOutcome, TrajectoryReport, tokens_per_joule,
};
use crate::render::EndpointLabel;
use crate::stats::{AggregateParams, PERCENTILE_METHOD, RequestFigures};
use crate::steps::{StepRecord, TrajectoryRecord};
use crate::suite::GpuMode;
use crate::telemetry::{TelemetryRun, TelemetrySnapshot};
use crate::timeline::{IoCounters, ManifestInfo};
use inferscope_report::curve::{PointFacts, summarize_point_compact};

pub use crate::model::REPORT_SCHEMA as SCHEMA;

/// A request's figures for the statistics (output tokens: the server's, else the estimate,
/// flagged).
pub fn figures(r: &RequestRecord) -> RequestFigures {
    let tokens = r.output_tokens();
    RequestFigures {
        ok: r.is_success(),
        ttft_ms: r.ttft_ms(),
        itl_ms: r.itl_ms(),
        tpot_ms: r.tpot().map(|t| t.0),
        e2e_ms: r.e2e_ms(),
        output_tokens: tokens.map(|t| t.0),
        output_tokens_estimated: tokens.is_some_and(|t| t.1 == TokenSource::ClientEstimate),
        prompt_tokens: r.prompt_tokens,
        cached_tokens: r.cached_tokens,
        schedule_lag_ms: Some(r.schedule_lag_ns() as f64 / 1e6),
        short_output: r.short_output(),
        prompt_tokens_diff: r.prompt_tokens_diff(),
    }
}

/// The output tokens of `requests`' successful ones and their source: `None` when one has
/// no count (a partial sum is not a total); `Some((0, server))` without any.
fn output_tokens<'a>(
    requests: impl Iterator<Item = &'a RequestRecord>,
) -> Option<(u64, TokenSource)> {
    let mut total = 0u64;
    let mut source = TokenSource::Server;
    for r in requests.filter(|r| r.is_success()) {
        let (n, s) = r.output_tokens()?;
        total = total.saturating_add(n);
        source = source.and(s);
    }
    Some((total, source))
}

/// Why a step has no energy figure, when its join has none (see [`step_energy`]).
fn missing_energy_reason(a: &StepAttribution) -> String {
    let with_power: Vec<&crate::model::attribution::StepDeviceEnergy> = a
        .devices
        .iter()
        .filter(|d| d.samples_in_window.is_some())
        .collect();
    let without: Vec<&str> = with_power
        .iter()
        .filter(|d| d.energy_mj.is_none())
        .map(|d| d.device.as_str())
        .collect();
    if with_power.len() > 1 && without.len() < with_power.len() {
        format!(
            "withheld: device {} had no power-sample segment inside the window, so a sum \
             over the others would be partial (per-device figures in attribution.devices)",
            without.join(", ")
        )
    } else {
        "no power-sample segment lies fully inside the step window (shorter than the \
         sampling grid; its energy is in the trajectory's unattributed energy)"
            .to_string()
    }
}

/// A step's energy figure and its step-attribution figures (docs/measurement.md) from its trajectory's join outcome. The
/// step-attribution figures (docs/measurement.md) (samples, counter deltas, usage) are kept whatever the power source;
/// the energy is `null` with basis `unavailable` without one.
fn step_energy(
    outcome: Option<&TrajectoryOutcome>,
    step_id: u64,
    run: &RunEnergy,
) -> (Figure<u64>, Option<StepAttribution>) {
    let metrics = match outcome {
        Some(AttributionOutcome::Attributed(m)) => Some(m),
        _ => None,
    };
    let step = metrics.and_then(|m| m.steps.iter().find(|s| s.step_id == step_id));
    let attribution = step.map(|s| s.attribution.clone());
    if run.power().source.is_none() {
        let why = format!(
            "no power source: {}",
            run.power()
                .reason
                .as_deref()
                .unwrap_or("nothing supplied power readings")
        );
        return (Figure::missing(Basis::Unavailable, why), attribution);
    }
    let energy = match (outcome, metrics, step) {
        (None, _, _) => Figure::missing(Basis::Unavailable, "no telemetry joined this step"),
        (Some(AttributionOutcome::Withheld(w)), _, _) => {
            let reasons: Vec<&str> = w.reasons.iter().map(|r| r.label()).collect();
            Figure::missing(
                run.basis(w.concurrency.max_trajectories_in_flight),
                format!("attribution withheld ({})", reasons.join(", ")),
            )
        }
        (_, Some(m), None) => {
            let why = m
                .dropped_steps
                .iter()
                .find(|d| d.step_id == step_id)
                .map_or("not in the join", |d| d.reason.label());
            Figure::missing(
                run.basis(m.concurrency.max_trajectories_in_flight),
                format!("step dropped from attribution ({why})"),
            )
        }
        (_, _, Some(sm)) => {
            let basis = sm.energy_basis.map_or(Basis::Unavailable, Basis::from);
            match sm.energy_mj {
                Some(v) => Figure::of(v, basis),
                None => Figure::missing(basis, missing_energy_reason(&sm.attribution)),
            }
        }
        (_, None, None) => Figure::missing(Basis::Unavailable, "no join"),
    };
    (energy, attribution)
}

/// A tokens-per-joule figure from an output-token count and an energy figure (mJ).
fn per_joule_figure(
    tokens: Option<(u64, TokenSource)>,
    energy: &Figure<u64>,
    no_tokens: &str,
) -> Figure<f64> {
    let f = match (tokens, energy.value) {
        (None, _) => Figure::missing(energy.basis, no_tokens),
        (Some(_), None) => Figure::missing(
            energy.basis,
            energy.reason.clone().unwrap_or_else(|| "no energy".into()),
        ),
        (Some((t, _)), Some(e)) => Figure::finite_or(
            tokens_per_joule(Some(t), Some(e)),
            energy.basis,
            if t == 0 {
                "no output tokens"
            } else {
                "no energy"
            },
        ),
    };
    f.with_tokens(tokens.map(|t| t.1))
}

fn step_report(
    s: &StepRecord,
    outcome: Option<&TrajectoryOutcome>,
    run: &RunEnergy,
    warmup: bool,
) -> StepReport {
    let r = s.request.as_ref();
    let (energy, mut attribution) = step_energy(outcome, s.step_id, run);
    if let (Some(a), StepKind::LlmCall) = (attribution.as_mut(), s.kind) {
        a.counters_low_confidence = run.counters_low_confidence(CountedStep {
            start_ns: s.start_ns,
            first_token_ns: r.and_then(|r| r.ttft_ns),
            end_ns: s.end_ns,
        });
    }
    let tokens = r.and_then(|r| r.output_tokens());
    let tokens_per_joule = if s.kind == StepKind::LlmCall {
        per_joule_figure(tokens, &energy, "no output-token count")
    } else {
        Figure::missing(energy.basis, "not an LLM step")
    };
    StepReport {
        step_id: s.step_id,
        kind: s.kind,
        name: s.name.clone(),
        start_ns: s.start_ns,
        end_ns: s.end_ns,
        duration_ms: s.duration_ms(),
        start_before_anchor_ns: s.start_before_anchor_ns,
        end_before_anchor_ns: s.end_before_anchor_ns,
        harness_step_id: s.harness_step_id,
        status: s.status_known.then_some(s.status),
        failure_code: s.failure_code,
        tool_error: s.tool_error,
        prompt_tokens: r.and_then(|r| r.prompt_tokens),
        cached_tokens: r.and_then(|r| r.cached_tokens),
        completion_tokens: r.and_then(|r| r.completion_tokens),
        completion_tokens_estimate: r.and_then(|r| r.completion_tokens_estimate),
        ttft_ms: r.and_then(|r| r.ttft_ms()),
        max_tokens: s.max_tokens.map(u64::from),
        finish_reason: r.and_then(|r| r.finish_reason.clone()),
        http_status: r.and_then(|r| r.http_status),
        response_model: r.and_then(|r| r.response_model.clone()),
        tool_call_id: s.tool_call_id.clone(),
        energy,
        tokens_per_joule,
        warmup,
        attribution,
    }
}

fn trajectory_report(
    t: &TrajectoryRecord,
    graded_pass: Option<bool>,
    run: &RunEnergy,
    warm: &HashSet<&str>,
) -> TrajectoryReport {
    let outcome = run.outcome(&t.id);
    let steps: Vec<StepReport> = t
        .steps
        .iter()
        .map(|s| {
            let warmup = s
                .request
                .as_ref()
                .is_some_and(|r| warm.contains(r.request_id.as_str()));
            step_report(s, outcome, run, warmup)
        })
        .collect();
    // Output tokens over the LLM steps: every one counted, or none (never a sum with 0).
    let llm: Vec<&StepReport> = steps
        .iter()
        .filter(|s| s.kind == StepKind::LlmCall)
        .collect();
    let tokens = if llm.is_empty() {
        Err("no LLM step".to_string())
    } else {
        llm.iter()
            .try_fold((0u64, TokenSource::Server), |(n, src), s| {
                s.output_tokens()
                    .map(|(k, ks)| (n.saturating_add(k), src.and(ks)))
                    .ok_or_else(|| format!("LLM step {} has no output-token count", s.step_id))
            })
    };
    let completion_tokens = match &tokens {
        Ok((n, src)) => Figure::of(*n, src.basis()).with_tokens(Some(*src)),
        Err(why) => Figure::missing(Basis::ServerReported, why.clone()),
    };
    let energy = match outcome {
        Some(AttributionOutcome::Attributed(m)) => {
            let basis = m.energy_basis.map_or(Basis::Unavailable, Basis::from);
            Figure::from_option(m.total_energy_mj, basis, NO_STEP_ENERGY)
        }
        _ => steps
            .first()
            .map(|s| Figure::missing(s.energy.basis, s.energy.reason.clone().unwrap_or_default()))
            .unwrap_or_else(|| Figure::missing(Basis::Unavailable, "no step")),
    };
    let tokens_per_joule = per_joule_figure(
        tokens.as_ref().ok().copied(),
        &energy,
        tokens.as_ref().err().map_or("", String::as_str),
    );
    TrajectoryReport {
        id: t.id.clone(),
        index: t.index,
        stop_reason: t.stop_reason,
        start_ns: t.start_ns,
        end_ns: t.end_ns,
        graded_pass,
        completion_tokens,
        energy,
        tokens_per_joule,
        steps,
        attribution: outcome.map(TrajectoryOutcome::without_steps),
        shard: None,
    }
}

/// Request ids of the warm-up requests of every point of a load job (the first `warmup`
/// of each point by scheduled, then actual send time); `point_requests[i]` is point i's
/// range of `requests`.
fn warmup_ids(
    l: &LoadRun,
    requests: &[RequestRecord],
    point_requests: &[std::ops::Range<usize>],
) -> Vec<String> {
    let mut out = Vec::new();
    for (p, range) in l.points.iter().zip(point_requests) {
        let reqs: Vec<&RequestRecord> = requests[range.clone()].iter().collect();
        let keys: Vec<(u64, u64)> = reqs.iter().map(|r| (r.scheduled_ns, r.send_ns)).collect();
        for (r, w) in reqs
            .iter()
            .zip(crate::load::warmup_flags(&keys, p.point.warmup))
        {
            if w {
                out.push(r.request_id.clone());
            }
        }
    }
    out
}

/// The curve of a load job: one summary per point that ran ([`crate::load::curve`]);
/// `windows[i]` is point i's window energy; `set` holds the job's requests' compact
/// figures and `warm[i]` flags request i as warm-up.
fn curve(
    e: &ExecutedJob,
    l: &LoadRun,
    (set, point_requests): (&CompactFigureSet, &[std::ops::Range<usize>]),
    warm: &[bool],
    windows: &[Option<WindowEnergy>],
) -> Vec<crate::load::PointSummary> {
    let criteria = goodput_criteria(&e.job.gates);
    let values = l
        .spec
        .sweep
        .as_ref()
        .map_or_else(Vec::new, crate::load::Sweep::values);
    l.points
        .iter()
        .zip(windows)
        .zip(point_requests)
        .enumerate()
        .map(|(i, ((p, window), range))| {
            let trajs = &e.trajectories[p.trajectories.clone()];
            let facts = PointFacts {
                index: p.point.index,
                value: values.get(p.point.index).copied(),
                label: p.point.label(),
                concurrency: p.point.concurrency,
                rate: p.point.rate,
                achieved_concurrency: p.max_units_in_flight,
                max_requests_in_flight: p.max_requests_in_flight,
                units: p.units_started,
                units_not_started: p.not_started,
                window_ns: p.measured_window_ns(measured_start(e, i)),
                // The point's trajectory kept in report.json (its first unit).
                trajectories: trajs.first().map(|t| t.id.clone()).into_iter().collect(),
                connections: p.connections,
            };
            let streamed = e
                .load_units
                .as_ref()
                .and_then(|u| u.streamed.as_ref())
                .and_then(|st| st.points.get(i));
            match streamed {
                Some(sp) => inferscope_report::curve::summarize_point_streamed(
                    facts,
                    sp,
                    criteria.as_ref(),
                    *window,
                ),
                None => summarize_point_compact(
                    facts,
                    (set, range.clone()),
                    warm,
                    criteria.as_ref(),
                    *window,
                ),
            }
        })
        .collect()
}

/// Where point `i` of load job `e`'s measured window starts: its first measured request's
/// send (`None`: the point's start).
fn measured_start(e: &ExecutedJob, i: usize) -> Option<u64> {
    e.load_units
        .as_ref()
        .and_then(|u| u.point_measured_start_ns.get(i).copied().flatten())
}

/// The grading rows of a job: every check of every trajectory (`#i` prefixed with
/// several trajectories).
fn grading_rows(g: &GradedJob) -> Vec<GradingCheck> {
    let multi = g.checks.len() > 1;
    g.checks
        .iter()
        .enumerate()
        .flat_map(|(i, cs)| {
            cs.iter().map(move |c: &CheckResult| GradingCheck {
                check: if multi {
                    format!("#{i} {}", c.check)
                } else {
                    c.check.clone()
                },
                passed: c.passed,
                detail: c.reason.clone(),
            })
        })
        .collect()
}

/// The harness's exit code as the built-in `harness_exit` figure (basis `harness`).
fn harness_exit_figure(h: &crate::swe::SweOutcome) -> Figure<f64> {
    match (h.exit_code, h.timed_out, &h.spawn_error) {
        (_, true, _) => Figure::missing(Basis::Harness, "timed out; its process group was killed"),
        (_, _, Some(e)) => Figure::missing(Basis::Harness, format!("could not start: {e}")),
        (Some(c), _, _) => Figure::of(f64::from(c), Basis::Harness),
        (None, _, _) => Figure::missing(Basis::Harness, "ended by a signal, no exit code"),
    }
}

/// The records of every request of `e`, error text redacted, and (for a load job) each
/// point's range of them.
fn job_requests(
    e: &ExecutedJob,
    secrets: &[&str],
) -> (Vec<RequestRecord>, Vec<std::ops::Range<usize>>) {
    // Server error text is kept for the report only: bounded, with the API key and any
    // credential value redacted (it never enters the timeline).
    let redact = |mut r: RequestRecord| {
        r.redact_server_text(secrets);
        r
    };
    let of = |t: &TrajectoryRecord| {
        t.steps
            .iter()
            .filter_map(|s| s.request.clone())
            .map(redact)
            .collect::<Vec<_>>()
    };
    let mut requests = Vec::new();
    if let Some(u) = &e.load_units {
        // Streamed to requests.jsonl as each unit ended (issue 19).
        return (requests, u.point_requests.clone());
    }
    let Some(l) = &e.load else {
        requests.extend(e.trajectories.iter().flat_map(of));
        return (requests, Vec::new());
    };
    let mut ranges = Vec::with_capacity(l.points.len());
    for p in &l.points {
        let start = requests.len();
        requests.extend(e.trajectories[p.trajectories.clone()].iter().flat_map(of));
        ranges.push(start..requests.len());
    }
    (requests, ranges)
}

/// The report of an SWE harness's outcome.
fn harness_report(h: &crate::swe::SweOutcome) -> HarnessReport {
    HarnessReport {
        exit_code: h.exit_code,
        timed_out: h.timed_out,
        spawn_error: h.spawn_error.clone(),
        steps_file: h.steps_file.clone(),
    }
}

/// A job's energy notes: every device that is not attributable (a GPU in MIG mode, with
/// the reason), whether the energy is simulated, and when per-step energy is apportioned.
fn energy_notes(
    run: &RunEnergy,
    job_energy: &crate::model::JobEnergy,
    in_flight: u32,
) -> Vec<String> {
    let mut notes: Vec<String> = run.power().not_attributable.clone();
    match job_energy.energy_per_trajectory_j.basis {
        Basis::Simulated => {
            notes.push("energy is simulated (built-in simulator power model), not measured".into())
        }
        Basis::Apportioned => {
            if job_energy.energy_j.basis == Basis::Simulated {
                notes.push(
                    "energy is simulated (built-in simulator power model), not measured".into(),
                );
            }
            notes.push(format!(
                "{} (achieved per point in the curve): per-step energy is apportioned, \
                 not measured, at every point with more than one in flight \
                 (docs/measurement.md); J/out tok in the curve is window energy",
                crate::attribution::in_flight_phrase(in_flight, None)
            ));
        }
        _ => {}
    }
    notes
}

/// The notes of an SWE harness's outcome, pushed onto `notes`; `true` when the harness
/// succeeded (it ran, was not timed out and exited 0).
fn harness_notes(h: &crate::swe::SweOutcome, notes: &mut Vec<String>) -> bool {
    let mut ok = true;
    if h.timed_out {
        notes.push("harness timed out; its process group was killed".into());
        ok = false;
    } else if let Some(err) = &h.spawn_error {
        notes.push(format!("harness: {err}"));
        ok = false;
    } else if h.exit_code != Some(0) {
        ok = false;
    }
    if let Some(f) = &h.steps_file {
        notes.extend(steps_file_notes(f));
    }
    ok
}

/// The units of a job that ended without their final answer (max_steps, a repeated tool
/// call, a failed request, Ctrl-C), one line each: they fail the job even without checks
/// (C27).
fn unfinished_units(e: &ExecutedJob) -> Vec<String> {
    match &e.load_units {
        Some(u) => u
            .unfinished
            .iter()
            .map(|(reason, (_, first))| format!("{first} stopped: {reason}"))
            .collect(),
        None => e
            .trajectories
            .iter()
            .filter(|t| !t.stop_reason.finished())
            .map(|t| format!("{} stopped: {}", t.id, t.stop_reason.as_str()))
            .collect(),
    }
}

/// Failed requests by code, and of those the warm-up ones (a load job's units counted
/// both as they ended).
fn failure_counts(
    e: &ExecutedJob,
    requests: &[RequestRecord],
    warm: &HashSet<&str>,
) -> (
    BTreeMap<crate::model::FailureCode, u64>,
    BTreeMap<crate::model::FailureCode, u64>,
) {
    let (mut failure_codes, mut warm_failed): (BTreeMap<crate::model::FailureCode, u64>, _) =
        match &e.load_units {
            Some(u) => (u.failure_codes.clone(), u.warmup_failures.clone()),
            None => Default::default(),
        };
    for r in requests.iter().filter(|r| !r.is_success()) {
        let code = r
            .failure_code
            .unwrap_or(crate::model::FailureCode::Cancelled);
        *failure_codes.entry(code).or_default() += 1;
        if e.load_units.is_none() && warm.contains(r.request_id.as_str()) {
            *warm_failed.entry(code).or_default() += 1;
        }
    }
    (failure_codes, warm_failed)
}

/// The trajectory reports a job keeps, and its unit records. A load job keeps one
/// trajectory report per point (its first unit) and one unit line per unit in
/// requests.jsonl: report.json's size does not grow with the units.
fn job_trajectories(
    g: &GradedJob,
    run: &RunEnergy,
    warm: &HashSet<&str>,
    secrets: &[&str],
) -> (
    Vec<TrajectoryReport>,
    Vec<crate::model::records::UnitRecord>,
) {
    let e = &g.executed;
    let report_of = |i: usize, t: &TrajectoryRecord| {
        let graded_pass = g
            .checks
            .get(i)
            .filter(|c| !c.is_empty())
            .map(|c| c.iter().all(|r| r.passed));
        let mut tr = trajectory_report(t, graded_pass, run, warm);
        tr.redact_server_text(secrets);
        tr
    };
    match &e.load {
        Some(l) => (
            l.points
                .iter()
                .filter_map(|p| {
                    let i = p.trajectories.start;
                    e.trajectories
                        .get(i)
                        .filter(|_| !p.trajectories.is_empty())
                        .map(|t| report_of(i, t))
                })
                .collect(),
            // Streamed to requests.jsonl as each unit ended.
            if e.load_units.is_some() {
                Vec::new()
            } else {
                unit_records(e, l, g)
            },
        ),
        None => (
            e.trajectories
                .iter()
                .enumerate()
                .map(|(i, t)| report_of(i, t))
                .collect(),
            Vec::new(),
        ),
    }
}

/// A job's energy figures and the most trajectories it declared in flight: one
/// definition for sequential and load jobs, the device energy over the job's windows (its
/// run, or each load point's window).
fn job_energy(
    e: &ExecutedJob,
    run: &RunEnergy,
    requests: &[RequestRecord],
    is_swe: bool,
) -> (crate::model::JobEnergy, u32) {
    let windows: Vec<(u64, u64)> = match &e.load {
        Some(l) => l.points.iter().map(|p| (p.start_ns, p.end_ns)).collect(),
        None if e.status_ran() => vec![(e.start_ns, e.end_ns)],
        None => Vec::new(),
    };
    let in_flight = e.load.as_ref().map_or(1, |l| {
        l.points
            .iter()
            .map(|p| p.declared_concurrency())
            .max()
            .unwrap_or(1)
    });
    let (tokens, units) = match &e.load_units {
        Some(u) => (
            match &u.streamed {
                Some(st) if st.all.succeeded() == 0 => Some((0, TokenSource::Server)),
                Some(st) => st.all.output_tokens(),
                None => u.figures.output_tokens(),
            },
            u.units,
        ),
        None => (output_tokens(requests.iter()), e.trajectories.len() as u64),
    };
    let mut job_energy = run.job_energy(&windows, tokens, units, in_flight);
    if is_swe {
        job_energy.tokens_per_joule = Figure::missing(
            job_energy.tokens_per_joule.basis,
            "an SWE harness's own requests are not observed by the runner",
        );
    }
    (job_energy, in_flight)
}

/// The figures a job's gates read: its statistics, its grading and its energy (for an
/// SWE job, the harness's exit code in place of the request counts it cannot observe).
/// `regression_pct` is set by the caller, once the baseline is compared.
fn job_figures(
    g: &GradedJob,
    stats: Option<&crate::stats::JobStats>,
    job_energy: &crate::model::JobEnergy,
    is_swe: bool,
) -> FigureSet {
    let e = &g.executed;
    let mut figs = stats.map(FigureSet::from_job_stats).unwrap_or_default();
    if is_swe {
        // The harness talks to the endpoint itself: its exit status is its own verdict
        // (basis `harness`), never a stand-in count of successful requests.
        figs.successful_requests = None;
        figs.requests = 0;
        figs.harness_exit_code = Some(e.harness.as_ref().map_or_else(
            || Figure::missing(Basis::Harness, "the harness did not run"),
            harness_exit_figure,
        ));
        figs.error_rate = Figure::missing(
            Basis::RequestOutcomes,
            "an SWE harness's own requests are not observed by the runner",
        );
    }
    figs.grade_pass_rate = match g.grade_pass_rate() {
        Some(v) => Figure::finite(v, Basis::Grading),
        None => Figure::missing(Basis::Grading, "no checks"),
    };
    figs.tokens_per_joule = job_energy.tokens_per_joule.clone();
    figs.energy_per_trajectory_j = job_energy.energy_per_trajectory_j.clone();
    figs
}

/// The comparison of job `e`'s figures (warm-up requests left out) with baseline `b`'s
/// job of the same id; `None` when the baseline has no such job.
fn compare_job_with(
    b: &Baseline,
    e: &ExecutedJob,
    requests: &[RequestRecord],
    warm: &HashSet<&str>,
) -> Option<baseline::JobComparison> {
    let (samples, n, ok) = match &e.load_units {
        Some(u) => baseline::samples_of_compact(&u.figures, &u.warm),
        None => baseline::samples_of(requests.iter(), warm, e.load.is_some()),
    };
    let summary = baseline::job_summary(&e.job.job.id, job_kind(e).as_str(), n, ok, &samples);
    b.compare(&summary, baseline::DEFAULT_NOISE_PCT)
}

/// Why job `id` that ran was not compared with baseline `b`.
fn uncompared_note(b: &Baseline, streamed: bool, id: &str) -> String {
    if streamed {
        format!(
            "baseline {}: not compared during the run (streaming aggregation keeps no \
             samples); `compare RUN_DIR --baseline {}` compares its requests.jsonl",
            b.name, b.name
        )
    } else {
        format!("baseline {} has no job {id}", b.name)
    }
}

/// The note of a job aggregated by streaming: the error bound of its percentiles.
fn streaming_note(st: &crate::load::units::StreamedUnits) -> String {
    let b = crate::model::streaming::bound();
    format!(
        "streaming aggregation: every percentile within{} of the exact one ({}); \
         {} requests, every record in requests.jsonl",
        b.suffix().trim_end_matches(" (streaming)"),
        b.method,
        st.all.requests()
    )
}

/// Job `e`'s status by the one rule ([`job_status`]), with the notes that can decide it
/// pushed onto `notes` (units that did not finish, a schedule that could not place its
/// count, an interruption); when the job fails they are moved to the front (a JUnit
/// failure's message is the first note).
fn status_with_notes(
    e: &ExecutedJob,
    outcome: JobOutcome,
    harness_ok: bool,
    notes: &mut Vec<String>,
) -> JobStatus {
    let unfinished = unfinished_units(e);
    // Where the notes that can fail a job on their own start (units that did not finish, a
    // schedule that cannot place its count): a failed job lists them first.
    let decisive_from = notes.len();
    match (&e.load_units, &e.load) {
        // A load job's notes stay bounded: one line per stop reason, with a count and the
        // first unit (every unit's stop reason is a unit line of requests.jsonl).
        (Some(u), _) => notes.extend(unfinished_lines(&u.unfinished, u.units)),
        (None, Some(_)) => notes.extend(unfinished_summary(&e.trajectories)),
        (None, None) => notes.extend(unfinished.iter().cloned()),
    }
    if e.interrupted {
        notes.push(e.interruption_note());
    }
    // A schedule that cannot place its count fails the job .
    let schedule = e
        .load
        .as_ref()
        .map(|l| l.schedule_notes())
        .unwrap_or_default();
    notes.extend(schedule.iter().cloned());
    let decisive_to = notes.len();
    // Dropped SYNs inside a window are named, never left silently in TTFT.
    if let Some(l) = &e.load {
        notes.extend(l.connect_notes());
    }
    let status = job_status(&StatusFacts {
        not_run: e.cancelled_before_start,
        setup_error: e.setup_error.is_some(),
        cancelled: e.interrupted,
        outcome,
        complete: harness_ok && unfinished.is_empty() && schedule.is_empty(),
    });
    if status == JobStatus::Fail {
        // What failed the job leads its notes (a JUnit failure's message is the first).
        notes[..decisive_to].rotate_left(decisive_from);
    }
    status
}

/// A job's requests as compact figures (integer ns), with each one's warm-up flag: a
/// load job's were folded in as its units ended ([`LoadUnits`]), a sequential job's are
/// made here.
fn figure_set<'a>(
    e: &'a ExecutedJob,
    requests: &[RequestRecord],
    warm: &HashSet<&str>,
) -> (Cow<'a, CompactFigureSet>, Cow<'a, [bool]>) {
    if let Some(u) = &e.load_units {
        return (Cow::Borrowed(&u.figures), Cow::Borrowed(&u.warm));
    }
    let mut set = CompactFigureSet::new();
    for r in requests {
        set.push_record(r);
    }
    let flags = requests
        .iter()
        .map(|r| warm.contains(r.request_id.as_str()))
        .collect();
    (Cow::Owned(set), Cow::Owned(flags))
}

/// A job's statistics over its requests that are not warm-up, exact over their compact
/// figures (the same figures as the f64 path, without an f64 vector per request), or from
/// the histograms with every percentile's bound under `aggregation = "streaming"`; rates
/// are over the job's run, or a load job's points' windows (not the gaps between points).
/// `None` when no request counts.
fn job_stats(
    e: &ExecutedJob,
    streamed: Option<&crate::load::units::StreamedUnits>,
    set: &CompactFigureSet,
    warm_flags: &[bool],
    duration_ns: u64,
) -> Option<crate::stats::JobStats> {
    let window_ns = e.load.as_ref().map_or(duration_ns, |l| {
        l.points
            .iter()
            .enumerate()
            .map(|(i, p)| p.measured_window_ns(measured_start(e, i)))
            .sum()
    });
    let params = AggregateParams::new(window_ns.max(1));
    match streamed {
        Some(st) => (st.job.requests() > 0).then(|| st.job.stats(params)),
        None => warm_flags
            .iter()
            .any(|w| !w)
            .then(|| set.stats(|i| !warm_flags[i], params)),
    }
}

fn job_report(
    g: &GradedJob,
    suites: &[SuiteRuntime],
    run: &RunEnergy,
    baseline: Option<&Baseline>,
) -> JobReport {
    let e = &g.executed;
    let suite = &suites[e.suite_index];
    let secrets = suite.secrets();
    let (requests, point_requests) = job_requests(e, &secrets);
    let duration_ns = e.end_ns.saturating_sub(e.start_ns);
    // Load jobs: warm-up requests stay recorded but leave every statistic, and rates are
    // over the points' windows (not the gaps between points).
    let warm_ids: Vec<String> = match (&e.load_units, &e.load) {
        (Some(u), _) => u.warmup_ids.clone(),
        (None, Some(l)) => warmup_ids(l, &requests, &point_requests),
        (None, None) => Vec::new(),
    };
    let warm: HashSet<&str> = warm_ids.iter().map(String::as_str).collect();
    let (set, warm_flags) = figure_set(e, &requests, &warm);
    let set: &CompactFigureSet = &set;
    let streamed = e.load_units.as_ref().and_then(|u| u.streamed.as_ref());
    let stats = job_stats(e, streamed, set, &warm_flags, duration_ns);

    let is_swe = e.harness.is_some() || e.job.job.kind_name().as_str() == "swe";
    let (job_energy, in_flight) = job_energy(e, run, &requests, is_swe);
    let mut figs = job_figures(g, stats.as_ref(), &job_energy, is_swe);

    let (load, sweep) = match &e.load {
        Some(l) => {
            // Each point's window energy, by the same integral as the job's.
            let windows: Vec<Option<WindowEnergy>> = l
                .points
                .iter()
                .map(|p| run.window(p.start_ns, p.end_ns).ok())
                .collect();
            let points = curve(e, l, (set, &point_requests), &warm_flags, &windows);
            (
                Some(load_report(l, warm_ids.clone())),
                Some(sweep_report(&l.spec, points)),
            )
        }
        None => (None, None),
    };
    // A streaming job keeps no samples to compare (`compare RUN --baseline NAME` reads
    // its requests.jsonl instead).
    let comparison = baseline
        .filter(|_| streamed.is_none())
        .and_then(|b| compare_job_with(b, e, &requests, &warm));
    figs.regression_pct = baseline::compare::regression_figure(
        comparison.as_ref(),
        baseline.map(|b| b.name.as_str()),
        &e.job.job.id,
    );
    let mut verdicts = job_verdicts(&e.job.gates, &figs, baseline.is_some());
    let ran = e.status_ran();
    if !ran {
        // A job that never started was not judged: no verdict at all.
        verdicts.clear();
    }

    let mut notes = e.notes.clone();
    if let (Some(b), None) = (baseline, &comparison)
        && ran
    {
        notes.push(uncompared_note(b, streamed.is_some(), &e.job.job.id));
    }
    notes.extend(streamed.map(streaming_note));
    if e.cancelled_before_start {
        notes.push("not run: cancelled before start".into());
    }
    notes.extend(stats.as_ref().and_then(workload_notes::short_outputs));
    notes.extend(stats.as_ref().and_then(workload_notes::prompt_diff));
    if ran {
        notes.extend(energy_notes(run, &job_energy, in_flight));
    }
    let harness_ok = e
        .harness
        .as_ref()
        .is_none_or(|h| harness_notes(h, &mut notes));
    let outcome = JobOutcome::from_verdicts(&verdicts, g.grading_passed());
    let status = status_with_notes(e, outcome, harness_ok, &mut notes);
    let (failure_codes, warm_failed) = failure_counts(e, &requests, &warm);
    let (trajectories, units) = job_trajectories(g, run, &warm, &secrets);
    notes.extend(workload_notes::counters_low_confidence(&trajectories));
    notes.extend(workload_notes::warmup_failures(&warm_failed));
    JobReport {
        id: e.job.job.id.clone(),
        kind: job_kind(e),
        status,
        duration_ns,
        start_ns: e.start_ns,
        end_ns: e.end_ns,
        setup_error: e.setup_error.clone(),
        stats,
        verdicts,
        grading: grading_rows(g)
            .into_iter()
            .map(|mut c| {
                crate::model::request::redact_known_in(&mut c.detail, &secrets);
                c
            })
            .collect(),
        grade_pass_rate: g.grade_pass_rate(),
        energy: job_energy,
        failure_codes: failure_codes
            .into_iter()
            .map(|(code, count)| FailureCount { code, count })
            .collect(),
        notes,
        harness: e.harness.as_ref().map(harness_report),
        load,
        sweep,
        baseline: comparison,
        trajectories,
        units,
        requests,
    }
}

/// The unit lines of a load job: every unit of every point, in point then unit order.
fn unit_records(
    e: &ExecutedJob,
    l: &LoadRun,
    g: &GradedJob,
) -> Vec<crate::model::records::UnitRecord> {
    l.points
        .iter()
        .flat_map(|p| {
            let first = p.trajectories.start;
            e.trajectories[p.trajectories.clone()]
                .iter()
                .enumerate()
                .map(move |(k, t)| crate::model::records::UnitRecord {
                    id: t.id.clone(),
                    index: t.index,
                    point: p.point.index,
                    start_ns: t.start_ns,
                    end_ns: t.end_ns,
                    stop_reason: t.stop_reason,
                    graded_pass: g
                        .checks
                        .get(first + k)
                        .filter(|c| !c.is_empty())
                        .map(|c| c.iter().all(|r| r.passed)),
                    shard: None,
                })
        })
        .collect()
}

/// One note per stop reason of the units that did not finish: `N of M trajectories
/// stopped: REASON (first: ID)`, in reason order.
fn unfinished_summary(trajectories: &[TrajectoryRecord]) -> Vec<String> {
    let mut by_reason: BTreeMap<&'static str, (u64, String)> = BTreeMap::new();
    for t in trajectories.iter().filter(|t| !t.stop_reason.finished()) {
        by_reason
            .entry(t.stop_reason.as_str())
            .or_insert((0, t.id.clone()))
            .0 += 1;
    }
    unfinished_lines(&by_reason, trajectories.len() as u64)
}

/// [`unfinished_summary`]'s lines from the counts by stop reason of `total` units.
fn unfinished_lines(by_reason: &BTreeMap<&'static str, (u64, String)>, total: u64) -> Vec<String> {
    by_reason
        .iter()
        .map(|(reason, (n, first))| {
            format!(
                "{n} of {total} units stopped: {reason} (first: {first}; every unit in requests.jsonl)"
            )
        })
        .collect()
}

/// A job's verdicts: its gates against its figures ([`gate::evaluate`]). Without a
/// baseline, `regression_pct` (which compares with `--baseline NAME`) is reported skipped,
/// never passed (e.g. the run a baseline is saved from). Shared by the run and `merge`.
pub fn job_verdicts(
    spec: &gate::spec::GateSpec,
    figs: &FigureSet,
    has_baseline: bool,
) -> Vec<crate::model::Verdict> {
    let mut verdicts = gate::evaluate(spec, figs);
    if !has_baseline {
        for v in verdicts.iter_mut().filter(|v| v.gate == "regression_pct") {
            *v = gate::judge(
                &v.gate.clone(),
                &v.figure.clone(),
                &v.unit.clone(),
                v.comparison,
                v.bound,
                &figs.regression_pct,
                gate::spec::WhenUnavailable::Skip,
                false,
            );
        }
    }
    verdicts
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
    let mut job = job_report(g, suites, &run, baseline);
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
        .map(|(g, r)| r.unwrap_or_else(|| job_report(g, suites, &run, baseline)))
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
    RunReport {
        schema: REPORT_SCHEMA.into(),
        run_id: run_id.into(),
        tool: format!("inferscope-bench {}", env!("CARGO_PKG_VERSION")),
        started_utc: unix_ns_to_rfc3339(clock.reference_instant_unix_ns()),
        reference_instant_unix_ns: clock.reference_instant_unix_ns(),
        clock_domain_id: clock.clock_domain_id().into(),
        percentile_method: PERCENTILE_METHOD.into(),
        cancelled,
        endpoint: endpoints.first().cloned(),
        endpoints,
        capture: CaptureReport::default(),
        power: run.power().clone(),
        telemetry: telemetry.map(crate::telemetry::summary::summarize),
        attribution: run.summary(),
        summary: SummaryReport::of(&jobs, end_ns, cancelled),
        jobs,
        shard: None,
        merge: None,
        requests_file: None,
    }
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

/// The console notes of an SWE steps file: a truncated tail, every rejected line (by its
/// line number) and steps that start before the run's anchor.
fn steps_file_notes(f: &crate::model::StepsFileReport) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(e) = &f.read_error {
        notes.push(format!("steps file unreadable: {e}"));
    }
    if let Some(l) = f.truncated_line {
        notes.push(format!(
            "steps file: truncated_tail: line {l} was half-written and left out; the {} \
             marker(s) before it are kept",
            f.markers
        ));
    }
    for r in &f.rejected {
        notes.push(format!(
            "steps file line {}: rejected step marker: {}",
            r.line, r.message
        ));
    }
    if f.rejected_count > f.rejected.len() {
        notes.push(format!(
            "steps file: {} more rejected line(s)",
            f.rejected_count - f.rejected.len()
        ));
    }
    if !f.before_anchor_steps.is_empty() {
        notes.push(format!(
            "steps file: {} step(s) start before the run's reference instant (steps {:?}): \
             kept with their real times, dropped from attribution by the outside_run rule \
             (docs/measurement.md)",
            f.before_anchor_steps.len(),
            f.before_anchor_steps
        ));
    }
    notes
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

/// The console notes of issue 27's workload figures.
mod workload_notes {
    use crate::stats::JobStats;

    /// `warm-up: N request(s) failed (connect ×2, …)`, when any did: they are in
    /// `failure_codes`, yet no statistic or gate counts them.
    pub(super) fn warmup_failures(
        failed: &std::collections::BTreeMap<crate::model::FailureCode, u64>,
    ) -> Option<String> {
        let n: u64 = failed.values().sum();
        (n > 0).then(|| {
            let codes: Vec<String> = failed
                .iter()
                .map(|(c, k)| format!("{} ×{k}", c.as_str()))
                .collect();
            format!(
                "warm-up: {n} request(s) failed ({}): they are in failure_codes, and left out \
                 of every statistic and gate like every warm-up request",
                codes.join(", ")
            )
        })
    }

    /// `N of M fixed-length requests came back short`, when any did.
    pub(super) fn short_outputs(s: &JobStats) -> Option<String> {
        let short = s.short_outputs.filter(|&n| n > 0)?;
        Some(format!(
            "short_output: {short} of the successful requests that asked for a fixed output \
             length came back shorter (rate {:.3}); the engine ignored `ignore_eos` / \
             `min_tokens` or stopped early",
            s.short_output_rate.unwrap_or(f64::NAN)
        ))
    }

    /// How many LLM steps' counter deltas are low confidence (each step's own reason is in
    /// its `attribution.counters_low_confidence`).
    pub(super) fn counters_low_confidence(
        trajectories: &[crate::model::TrajectoryReport],
    ) -> Option<String> {
        let flagged = trajectories
            .iter()
            .flat_map(|t| &t.steps)
            .filter(|s| {
                s.attribution
                    .as_ref()
                    .is_some_and(|a| a.counters_low_confidence.is_some())
            })
            .count();
        (flagged > 0).then(|| {
            format!(
                "engine counters: {flagged} LLM step(s) low confidence: their prompt and cache \
                 deltas may miss their own counts or hold another request's (each step's \
                 attribution.counters_low_confidence says which); a step's own usage, where \
                 the server sent it, is its figure"
            )
        })
    }

    /// The largest asked-vs-reported prompt-token difference, when it is not 0.
    pub(super) fn prompt_diff(s: &JobStats) -> Option<String> {
        let d = s.prompt_tokens_diff_max.filter(|&d| d != 0)?;
        Some(format!(
            "prompt tokens: the server reported up to {d:+} tokens against the size asked \
             (prompt_tokens_diff_max; reported − asked)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{StepStatus, StopReason};
    use crate::steps::StepRecord;

    fn llm(step_id: u64, completion: Option<u64>) -> StepRecord {
        let mut r = RequestRecord::new(&format!("r{step_id}"), 0, 0, true);
        r.status = crate::model::RequestStatus::Success;
        r.completion_tokens = completion;
        StepRecord {
            step_id,
            kind: StepKind::LlmCall,
            name: "chat".into(),
            start_ns: 0,
            end_ns: 1,
            status: StepStatus::Completed,
            failure_code: None,
            tool_error: None,
            request: Some(r),
            max_tokens: None,
            tool_call_id: None,
            status_known: true,
            start_before_anchor_ns: None,
            end_before_anchor_ns: None,
            harness_step_id: None,
        }
    }

    /// Issue 13 item 3: a trajectory with an LLM step that lacks a token count has no
    /// token total and no tokens per joule — never a sum with 0 for the missing step.
    #[test]
    fn a_step_without_a_token_count_makes_the_trajectory_figures_missing() {
        let t = TrajectoryRecord {
            id: "s::j#0".into(),
            index: 0,
            stop_reason: StopReason::FinalAnswer,
            steps: vec![llm(1, Some(10)), llm(2, None)],
            tools_called: vec![],
            final_answer: None,
            stdout: None,
            start_ns: 0,
            end_ns: 2,
        };
        let run = energy::attribute_run_energy(&[], None, energy::power_report(None, false));
        let r = trajectory_report(&t, None, &run, &HashSet::new());
        assert_eq!(r.completion_tokens.value, None);
        assert_eq!(
            r.completion_tokens.reason.as_deref(),
            Some("LLM step 2 has no output-token count")
        );
        assert_eq!(r.tokens_per_joule.value, None);
        // With energy present, a missing token count still gives no ratio.
        let e = Figure::of(5000, Basis::Measured);
        let f = per_joule_figure(None, &e, "LLM step 2 has no output-token count");
        assert_eq!(f.value, None);
        assert_eq!(f.basis, Basis::Measured);
        let f = per_joule_figure(Some((10, TokenSource::ClientEstimate)), &e, "");
        assert_eq!(f.value, Some(2.0));
        assert_eq!(f.tokens, Some(TokenSource::ClientEstimate));
        // Every count present: the total, with the weaker source.
        let t = TrajectoryRecord {
            steps: vec![llm(1, Some(10)), llm(2, Some(5))],
            ..t
        };
        let r = trajectory_report(&t, None, &run, &HashSet::new());
        assert_eq!(r.completion_tokens.value, Some(15));
        assert_eq!(r.completion_tokens.basis, Basis::ServerReported);
    }
}
