//! A job's report, assembled from plain inputs ([`JobInput`]): its requests and
//! statistics, energy, gate verdicts, status by the one rule ([`crate::status`]), notes,
//! trajectories and, for a load job, its curve. The driver turns each job it ran into a
//! [`JobInput`]; nothing here runs a job or reads a file.

mod input;
mod notes;
mod trajectory;

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};
use std::ops::Range;

use crate::baseline;
use crate::curve::{
    PointSummary, StreamedUnits, WindowEnergy, goodput_criteria, summarize_point_compact,
    summarize_point_streamed,
};
use crate::energy::RunEnergy;
use crate::gate::{self, FigureSet, JobOutcome};
use crate::model::compact::CompactFigureSet;
use crate::model::{
    Basis, FailureCount, Figure, GradingCheck, JobReport, JobStatus, RequestRecord, TokenCount,
    TrajectoryReport,
};
use crate::records::TrajectoryRecord;
use crate::stats::AggregateParams;
use crate::status::{StatusFacts, job_status};

pub use input::{BaselineRef, JobInput, LoadFacts, LoadPointFacts, UnitsFacts};
use trajectory::{output_tokens, trajectory_report};

/// A job's report from what it ran ([`JobInput`]): its requests and statistics, energy,
/// gate verdicts (against `baseline` too, when given), status, notes and trajectories —
/// exactly what `report.json` holds for it. `run` is the run's energy join (the samples
/// taken so far when the job is finalized as it ends).
pub fn job_report(
    e: &JobInput<'_>,
    run: &RunEnergy,
    baseline: Option<BaselineRef<'_>>,
) -> JobReport {
    let secrets = &e.secrets;
    let (requests, point_requests) = job_requests(e, secrets);
    let duration_ns = e.end_ns.saturating_sub(e.start_ns);
    // Load jobs: warm-up requests stay recorded but leave every statistic, and rates are
    // over the points' windows (not the gaps between points).
    let warm_ids: Vec<String> = match (&e.units, &e.load) {
        (Some(u), _) => u.warmup_ids.to_vec(),
        (None, Some(l)) => warmup_ids(l, &requests, &point_requests),
        (None, None) => Vec::new(),
    };
    let warm: HashSet<&str> = warm_ids.iter().map(String::as_str).collect();
    let (set, warm_flags) = figure_set(e, &requests, &warm);
    let set: &CompactFigureSet = &set;
    let streamed = e.units.and_then(|u| u.streamed);
    let stats = job_stats(e, streamed, set, &warm_flags, duration_ns);

    let is_swe = e.swe;
    let (job_energy, in_flight) = job_energy(e, run, &requests, is_swe);
    let mut figs = job_figures(e, stats.as_ref(), &job_energy, is_swe);

    let (load, sweep) = match &e.load {
        Some(l) => {
            // Each point's window energy, by the same integral as the job's.
            let windows: Vec<Option<WindowEnergy>> = l
                .points
                .iter()
                .map(|p| run.window(p.start_ns, p.end_ns).ok())
                .collect();
            let points = curve(e, l, (set, &point_requests), &warm_flags, &windows);
            let mut load = l.report.clone();
            load.warmup_requests = warm_ids.clone();
            let mut sweep = l.sweep.clone();
            sweep.points = points;
            (Some(load), Some(sweep))
        }
        None => (None, None),
    };
    // A streaming job keeps no samples to compare (`compare RUN --baseline NAME` reads
    // its requests.jsonl instead).
    let comparison = baseline
        .filter(|_| streamed.is_none())
        .and_then(|b| compare_job_with(b, e, &requests, &warm));
    figs.regression_pct =
        baseline::compare::regression_figure(comparison.as_ref(), baseline.map(|b| b.name), e.id);
    let mut verdicts = job_verdicts(e.gates, &figs, baseline.is_some());
    let ran = e.status_ran();
    if !ran {
        // A job that never started was not judged: no verdict at all.
        verdicts.clear();
    }

    let mut notes = e.notes.to_vec();
    if let (Some(b), None) = (&baseline, &comparison)
        && ran
    {
        notes.push(notes::uncompared_note(b, streamed.is_some(), e.id));
    }
    notes.extend(streamed.map(notes::streaming_note));
    if e.cancelled_before_start {
        notes.push("not run: cancelled before start".into());
    }
    notes.extend(
        stats
            .as_ref()
            .and_then(notes::workload_notes::short_outputs),
    );
    notes.extend(stats.as_ref().and_then(notes::workload_notes::prompt_diff));
    if ran {
        notes.extend(notes::energy_notes(run, &job_energy, in_flight));
    }
    let harness_ok = e
        .harness
        .as_ref()
        .is_none_or(|h| notes::harness_notes(h, &mut notes));
    let outcome = JobOutcome::from_verdicts(&verdicts, e.grading_passed());
    let status = status_with_notes(e, outcome, harness_ok, &mut notes);
    let (failure_codes, warm_failed) = failure_counts(e, &requests, &warm);
    let (trajectories, units) = job_trajectories(e, run, &warm, secrets);
    notes.extend(notes::workload_notes::counters_low_confidence(
        &trajectories,
    ));
    notes.extend(notes::workload_notes::warmup_failures(&warm_failed));
    JobReport {
        id: e.id.to_string(),
        kind: e.kind,
        status,
        duration_ns,
        start_ns: e.start_ns,
        end_ns: e.end_ns,
        setup_error: e.setup_error.cloned(),
        stats,
        verdicts,
        grading: grading_rows(e)
            .into_iter()
            .map(|mut c| {
                crate::model::request::redact_known_in(&mut c.detail, secrets);
                c
            })
            .collect(),
        grade_pass_rate: e.grade_pass_rate(),
        energy: job_energy,
        failure_codes: failure_codes
            .into_iter()
            .map(|(code, count)| FailureCount { code, count })
            .collect(),
        notes,
        harness: e.harness.clone(),
        load,
        sweep,
        baseline: comparison,
        trajectories,
        units,
        requests,
    }
}

/// Request ids of the warm-up requests of every point of a load job (the first `warmup`
/// of each point by scheduled, then actual send time); `point_requests[i]` is point i's
/// range of `requests`.
fn warmup_ids(
    l: &LoadFacts,
    requests: &[RequestRecord],
    point_requests: &[std::ops::Range<usize>],
) -> Vec<String> {
    let mut out = Vec::new();
    for (p, range) in l.points.iter().zip(point_requests) {
        let reqs: Vec<&RequestRecord> = requests[range.clone()].iter().collect();
        let keys: Vec<(u64, u64)> = reqs.iter().map(|r| (r.scheduled_ns, r.send_ns)).collect();
        for (r, w) in reqs.iter().zip(crate::curve::warmup_flags(&keys, p.warmup)) {
            if w {
                out.push(r.request_id.clone());
            }
        }
    }
    out
}

/// The curve of a load job: one summary per point that ran ([`crate::curve`]);
/// `windows[i]` is point i's window energy; `set` holds the job's requests' compact
/// figures and `warm[i]` flags request i as warm-up.
fn curve(
    e: &JobInput<'_>,
    l: &LoadFacts,
    (set, point_requests): (&CompactFigureSet, &[Range<usize>]),
    warm: &[bool],
    windows: &[Option<WindowEnergy>],
) -> Vec<PointSummary> {
    let criteria = goodput_criteria(e.gates);
    l.points
        .iter()
        .zip(windows)
        .zip(point_requests)
        .enumerate()
        .map(|(i, ((p, window), range))| {
            let facts = p.facts.clone();
            let streamed = e
                .units
                .and_then(|u| u.streamed)
                .and_then(|st| st.points.get(i));
            match streamed {
                Some(sp) => summarize_point_streamed(facts, sp, criteria.as_ref(), *window),
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

/// The grading rows of a job: every check of every trajectory (`#i` prefixed with
/// several trajectories).
fn grading_rows(e: &JobInput<'_>) -> Vec<GradingCheck> {
    let multi = e.checks.len() > 1;
    e.checks
        .iter()
        .enumerate()
        .flat_map(|(i, cs)| {
            cs.iter().map(move |c: &GradingCheck| GradingCheck {
                check: if multi {
                    format!("#{i} {}", c.check)
                } else {
                    c.check.clone()
                },
                passed: c.passed,
                detail: c.detail.clone(),
            })
        })
        .collect()
}

/// The records of every request of `e`, error text redacted, and (for a load job) each
/// point's range of them.
fn job_requests(
    e: &JobInput<'_>,
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
    if let Some(u) = &e.units {
        // Streamed to requests.jsonl as each unit ended.
        return (requests, u.point_requests.to_vec());
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

/// The units of a job that ended without their final answer (max_steps, a repeated tool
/// call, a failed request, Ctrl-C), one line each: they fail the job even without checks
/// (C27).
fn unfinished_units(e: &JobInput<'_>) -> Vec<String> {
    match &e.units {
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
    e: &JobInput<'_>,
    requests: &[RequestRecord],
    warm: &HashSet<&str>,
) -> (
    BTreeMap<crate::model::FailureCode, u64>,
    BTreeMap<crate::model::FailureCode, u64>,
) {
    let (mut failure_codes, mut warm_failed): (BTreeMap<crate::model::FailureCode, u64>, _) =
        match &e.units {
            Some(u) => (u.failure_codes.clone(), u.warmup_failures.clone()),
            None => Default::default(),
        };
    for r in requests.iter().filter(|r| !r.is_success()) {
        let code = r
            .failure_code
            .unwrap_or(crate::model::FailureCode::Cancelled);
        *failure_codes.entry(code).or_default() += 1;
        if e.units.is_none() && warm.contains(r.request_id.as_str()) {
            *warm_failed.entry(code).or_default() += 1;
        }
    }
    (failure_codes, warm_failed)
}

/// The trajectory reports a job keeps, and its unit records. A load job keeps one
/// trajectory report per point (its first unit) and one unit line per unit in
/// requests.jsonl: report.json's size does not grow with the units.
fn job_trajectories(
    e: &JobInput<'_>,
    run: &RunEnergy,
    warm: &HashSet<&str>,
    secrets: &[&str],
) -> (
    Vec<TrajectoryReport>,
    Vec<crate::model::records::UnitRecord>,
) {
    let report_of = |i: usize, t: &TrajectoryRecord| {
        let mut tr = trajectory_report(t, e.graded_pass(i), run, warm);
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
            if e.units.is_some() {
                Vec::new()
            } else {
                unit_records(e, l)
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
    e: &JobInput<'_>,
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
            .map(|p| p.declared_concurrency)
            .max()
            .unwrap_or(1)
    });
    let (tokens, units) = match &e.units {
        Some(u) => (
            match &u.streamed {
                Some(st) if st.all.succeeded() == 0 => Some(TokenCount::server(0)),
                Some(st) => st.all.output_token_count(),
                None => u.figures.output_token_count(),
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
    e: &JobInput<'_>,
    stats: Option<&crate::stats::JobStats>,
    job_energy: &crate::model::JobEnergy,
    is_swe: bool,
) -> FigureSet {
    let mut figs = stats.map(FigureSet::from_job_stats).unwrap_or_default();
    if is_swe {
        // The harness talks to the endpoint itself: its exit status is its own verdict
        // (basis `harness`), never a stand-in count of successful requests.
        figs.successful_requests = None;
        figs.requests = 0;
        figs.harness_exit_code = Some(e.harness.as_ref().map_or_else(
            || Figure::missing(Basis::Harness, "the harness did not run"),
            notes::harness_exit_figure,
        ));
        figs.error_rate = Figure::missing(
            Basis::RequestOutcomes,
            "an SWE harness's own requests are not observed by the runner",
        );
    }
    figs.grade_pass_rate = match e.grade_pass_rate() {
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
    b: BaselineRef<'_>,
    e: &JobInput<'_>,
    requests: &[RequestRecord],
    warm: &HashSet<&str>,
) -> Option<baseline::compare::JobComparison> {
    let (samples, n, ok) = match &e.units {
        Some(u) => baseline::summary::samples_of_compact(u.figures, u.warm),
        None => baseline::summary::samples_of(requests.iter(), warm, e.load.is_some()),
    };
    let summary = baseline::summary::job_summary(e.id, e.kind.as_str(), n, ok, &samples);
    b.compare(&summary, baseline::compare::DEFAULT_NOISE_PCT)
}

/// Job `e`'s status by the one rule ([`job_status`]), with the notes that can decide it
/// pushed onto `notes` (units that did not finish, a schedule that could not place its
/// count, an interruption); when the job fails they are moved to the front (a JUnit
/// failure's message is the first note).
fn status_with_notes(
    e: &JobInput<'_>,
    outcome: JobOutcome,
    harness_ok: bool,
    notes: &mut Vec<String>,
) -> JobStatus {
    let unfinished = unfinished_units(e);
    // Where the notes that can fail a job on their own start (units that did not finish, a
    // schedule that cannot place its count): a failed job lists them first.
    let decisive_from = notes.len();
    match (&e.units, &e.load) {
        // A load job's notes stay bounded: one line per stop reason, with a count and the
        // first unit (every unit's stop reason is a unit line of requests.jsonl).
        (Some(u), _) => notes.extend(notes::unfinished_lines(u.unfinished, u.units)),
        (None, Some(_)) => notes.extend(notes::unfinished_summary(e.trajectories)),
        (None, None) => notes.extend(unfinished.iter().cloned()),
    }
    notes.extend(e.interruption.clone());
    // A schedule that cannot place its count fails the job .
    let schedule = e
        .load
        .as_ref()
        .map(|l| l.schedule_notes.clone())
        .unwrap_or_default();
    notes.extend(schedule.iter().cloned());
    let decisive_to = notes.len();
    // Dropped SYNs inside a window are named, never left silently in TTFT.
    if let Some(l) = &e.load {
        notes.extend(l.connect_notes.iter().cloned());
    }
    let status = job_status(&StatusFacts {
        not_run: e.cancelled_before_start,
        setup_error: e.setup_error.is_some(),
        cancelled: e.interruption.is_some(),
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
    e: &JobInput<'a>,
    requests: &[RequestRecord],
    warm: &HashSet<&str>,
) -> (Cow<'a, CompactFigureSet>, Cow<'a, [bool]>) {
    if let Some(u) = &e.units {
        return (Cow::Borrowed(u.figures), Cow::Borrowed(u.warm));
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
    e: &JobInput<'_>,
    streamed: Option<&StreamedUnits>,
    set: &CompactFigureSet,
    warm_flags: &[bool],
    duration_ns: u64,
) -> Option<crate::stats::JobStats> {
    let window_ns = e.load.as_ref().map_or(duration_ns, |l| {
        l.points.iter().map(|p| p.facts.window_ns).sum()
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

/// The unit lines of a load job: every unit of every point, in point then unit order.
fn unit_records(e: &JobInput<'_>, l: &LoadFacts) -> Vec<crate::model::records::UnitRecord> {
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
                    point: p.facts.index,
                    start_ns: t.start_ns,
                    end_ns: t.end_ns,
                    stop_reason: t.stop_reason,
                    graded_pass: e.graded_pass(first + k),
                    shard: None,
                })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::spec::GateSpec;
    use crate::model::{PowerReport, RequestStatus, StopReason};
    use crate::records::StepRecord;

    const SECRET: &str = "sk-test-0123456789abcdef";

    fn no_power() -> RunEnergy {
        RunEnergy::new(PowerReport {
            source: None,
            reason: Some("nothing was sampled (no telemetry ran)".into()),
            devices: 0,
            not_attributable: Vec::new(),
        })
    }

    fn trajectory() -> TrajectoryRecord {
        let mut r = RequestRecord::new("r1", 0, 0, true);
        r.status = RequestStatus::Success;
        r.completion_tokens = Some(7);
        TrajectoryRecord {
            id: "s::j#0".into(),
            index: 0,
            stop_reason: StopReason::FinalAnswer,
            steps: vec![StepRecord::completed_llm_call(1, 0, 10, r)],
            tools_called: vec![],
            final_answer: None,
            stdout: None,
            start_ns: 0,
            end_ns: 10,
        }
    }

    fn input<'a>(gates: &'a GateSpec, trajectories: &'a [TrajectoryRecord]) -> JobInput<'a> {
        JobInput {
            id: "s::j",
            kind: crate::model::JobKind::Agentic,
            swe: false,
            has_checks: true,
            gates,
            secrets: vec![SECRET],
            trajectories,
            checks: vec![vec![GradingCheck {
                check: "answer".into(),
                passed: false,
                detail: Some(format!("the answer named {SECRET}")),
            }]],
            start_ns: 0,
            end_ns: 1_000_000,
            harness: None,
            notes: &[],
            setup_error: None,
            cancelled_before_start: false,
            interruption: None,
            load: None,
            units: None,
        }
    }

    /// A job's report comes from plain inputs, without running a job: its requests,
    /// trajectories, grading (secrets redacted) and status by the one rule.
    #[test]
    fn a_job_report_is_assembled_from_plain_inputs() {
        let gates = GateSpec::default();
        let t = [trajectory()];
        let run = no_power();
        let j = job_report(&input(&gates, &t), &run, None);
        assert_eq!(j.requests.len(), 1);
        assert_eq!(j.trajectories[0].completion_tokens.value, Some(7));
        assert_eq!(j.status, JobStatus::Fail, "a failed check fails the job");
        assert_eq!(j.grade_pass_rate, Some(0.0));
        let detail = j.grading[0].detail.as_deref().unwrap();
        assert!(!detail.contains(SECRET), "{detail}");

        let mut passing = input(&gates, &t);
        passing.checks[0][0].passed = true;
        assert_eq!(job_report(&passing, &run, None).status, JobStatus::Pass);

        let mut not_run = input(&gates, &t);
        not_run.cancelled_before_start = true;
        let j = job_report(&not_run, &run, None);
        assert_eq!(j.status, JobStatus::NotRun);
        assert!(
            j.verdicts.is_empty(),
            "a job that never started is not judged"
        );
        assert!(
            j.notes
                .iter()
                .any(|n| n == "not run: cancelled before start")
        );

        let mut cut = input(&gates, &t);
        cut.checks[0][0].passed = true;
        let note = "cancelled (Ctrl-C / SIGTERM): 0 of 1 trajectories ran to their end";
        cut.interruption = Some(note.into());
        let j = job_report(&cut, &run, None);
        assert_eq!(j.status, JobStatus::Cancelled);
        assert!(j.notes.iter().any(|n| n == note), "{:?}", j.notes);
    }
}
