//! The report and timeline parts of the view (pure).

use crate::model::RunReport;
use crate::timeline::ids::{is_valid_case_id, is_valid_id};

use super::super::runs::{ReportState, TimelineState};
use super::*;

/// The report part of the view (pure): [`report_head`] with the jobs, trajectories and
/// steps filled in.
pub fn report_view(state: &ReportState) -> ReportView {
    let mut view = report_head(state);
    if let ReportState::Ok(r) = state {
        view.jobs = job_views(r);
        view.shards = shard_views(r);
    }
    view
}

/// A merged run's lane groups: one per shard, its trajectories, its offset onto the
/// merged axis and the alignment's uncertainty (pure).
pub fn shard_views(r: &RunReport) -> Vec<ShardView> {
    let Some(m) = &r.merge else { return Vec::new() };
    m.shards
        .iter()
        .map(|s| ShardView {
            k: s.k,
            n: m.n,
            clock_domain: clock_domain_label(&s.clock_domain_id),
            offset_ns: s.offset_ns,
            alignment: code_or_other(&m.alignment.basis),
            uncertainty_ns: m.alignment.uncertainty_ns,
            start_ns: s.aligned.start_ns,
            end_ns: s.aligned.end_ns,
            trajectories: r
                .jobs
                .iter()
                .flat_map(|j| j.trajectories.iter())
                .filter(|t| t.shard == Some(s.k) && is_valid_case_id(&t.id))
                .map(|t| t.id.clone())
                .collect(),
        })
        .collect()
}

/// The report part of the view without its jobs (pure): every field of [`report_view`]
/// except `jobs`, which is left empty. For callers that read only the header (state, ids,
/// summary, capture), such as the run listing.
pub fn report_head(state: &ReportState) -> ReportView {
    match state {
        ReportState::Missing => ReportView {
            state: "missing",
            ..Default::default()
        },
        ReportState::Fault(f) => ReportView {
            state: "fault",
            fault: Some(f.code()),
            ..Default::default()
        },
        ReportState::Ok(r) => report_head_ok(r),
    }
}

/// The jobs of a report that read well (pure).
fn job_views(r: &RunReport) -> Vec<JobView> {
    r.jobs
        .iter()
        .map(|j| JobView {
            id: bounded_text(&j.id, 128),
            kind: j.kind,
            status: j.status,
            setup_cause: j.setup_error.as_ref().map(|e| e.cause),
            start_ns: j.start_ns,
            end_ns: j.end_ns,
            duration_ns: j.duration_ns,
            grade_pass_rate: j.grade_pass_rate,
            verdicts: j
                .verdicts
                .iter()
                .map(|v| VerdictView {
                    gate: bounded_text(&v.gate, 64),
                    figure: bounded_text(&v.figure, 64),
                    value: v.value,
                    bound: v.bound,
                    comparison: v.comparison,
                    unit: bounded_text(&v.unit, 16),
                    basis: v.basis,
                    tokens: v.tokens,
                    outcome: v.outcome,
                    error_bound: v
                        .error_bound
                        .as_ref()
                        .map(|b| b.suffix().trim_start().to_string()),
                })
                .collect(),
            grading: j
                .grading
                .iter()
                .take(MAX_GRADING_SHOWN)
                .map(|g| GradingView {
                    check: bounded_text(&g.check, 200),
                    passed: g.passed,
                })
                .collect(),
            grading_omitted: j.grading.len().saturating_sub(MAX_GRADING_SHOWN) as u64,
            failure_codes: aggregate_failure_codes(&j.failure_codes),
            trajectories: j
                .trajectories
                .iter()
                .enumerate()
                .map(|(i, t)| TrajectoryView {
                    id: if is_valid_case_id(&t.id) {
                        t.id.clone()
                    } else {
                        format!("trajectory-{i}")
                    },
                    index: t.index,
                    stop_reason: t.stop_reason,
                    start_ns: t.start_ns,
                    end_ns: t.end_ns,
                    graded_pass: t.graded_pass,
                    shard: t.shard,
                    steps: t.steps.iter().map(step_view).collect(),
                })
                .collect(),
            points: j
                .sweep
                .iter()
                .flat_map(|s| &s.points)
                .map(|p| PointView {
                    label: bounded_text(&p.facts.label, 96),
                    unit_prefix: crate::model::records::unit_id_prefix(
                        &j.id,
                        j.sweep.as_ref().is_some_and(|s| s.variable.is_some()),
                        p.facts.index,
                    ),
                    trajectories: p
                        .facts
                        .trajectories
                        .iter()
                        .filter(|t| is_valid_case_id(t))
                        .cloned()
                        .collect(),
                })
                .collect(),
            request_ttft_ms: j
                .requests
                .iter()
                .filter(|_| j.load.is_some())
                .filter(|r| is_valid_case_id(&r.request_id))
                .filter_map(|r| Some((r.request_id.clone(), r.ttft_ms()?)))
                .collect(),
        })
        .collect()
}

/// A report step as the page shows it: the step itself, its name passed through its syntax
/// (a tool name, `chat`, or `other`), reasons bounded, the step-attribution breakdown (docs/measurement.md) left out.
fn step_view(s: &crate::model::StepReport) -> crate::model::StepReport {
    let bound = |f: &mut Option<String>| *f = f.as_deref().map(|r| bounded_text(r, 240));
    let mut v = s.clone();
    v.name = code_or_other(&s.name);
    v.attribution = None;
    bound(&mut v.energy.reason);
    bound(&mut v.tokens_per_joule.reason);
    v
}

/// The header of a report that read well (pure); `jobs` is left empty.
fn report_head_ok(r: &RunReport) -> ReportView {
    ReportView {
        state: "ok",
        fault: None,
        run_id: is_valid_id(&r.run_id).then(|| r.run_id.clone()),
        started_utc: Some(bounded_text(&r.started_utc, 40)),
        tool: Some(bounded_text(&r.tool, 64)),
        cancelled: Some(r.cancelled),
        clock_domain: Some(clock_domain_label(&r.clock_domain_id)),
        endpoint: r.endpoint.as_ref().map(|e| EndpointView {
            suite: bounded_text(&e.suite, 64),
            model: bounded_text(&e.model, 128),
            simulated: e.simulated,
            engine_profile: code_or_other(&e.engine_profile),
        }),
        summary: Some(r.summary),
        capture: Some(CaptureView {
            enabled: r.capture.enabled,
            quality: r.capture.quality.map(|q| q.as_str().to_string()),
            events: r.capture.events,
            dropped: r.capture.dropped,
            rejected: r.capture.rejected,
            diagnostic: r.capture.diagnostic.is_some(),
        }),
        jobs: Vec::new(),
        shards: Vec::new(),
    }
}

/// The timeline part of the view (pure).
pub fn timeline_view(state: &TimelineState) -> TimelineView {
    match state {
        TimelineState::Unavailable(reason) => TimelineView {
            state: "unavailable",
            reason: Some(reason),
            ..Default::default()
        },
        TimelineState::Integrity(items, omitted) => TimelineView {
            state: "integrity_error",
            errors: items.clone(),
            errors_omitted: *omitted,
            ..Default::default()
        },
        TimelineState::Ok(t) => {
            let m = &t.manifest;
            TimelineView {
                state: "ok",
                reason: None,
                errors: Vec::new(),
                errors_omitted: 0,
                timeline_id: Some(m.timeline_id.clone()),
                quality: Some(m.quality),
                quality_reasons: m
                    .quality_reasons
                    .iter()
                    .map(|r| r.as_str().to_string())
                    .collect(),
                event_count: Some(m.event_count),
                dropped_count: Some(m.dropped_count),
                dropped: Some(m.dropped),
                rejected_count: Some(m.rejected_count),
                unclosed_span_count: Some(m.unclosed_span_count),
                clock_domain: Some(clock_domain_label(&m.clock_domain_id)),
                start_elapsed_ns: Some(m.start_elapsed_ns),
                end_elapsed_ns: Some(m.end_elapsed_ns),
                telemetry_session_id: m.telemetry_session_id.clone(),
                unknown_end_spans: t.unknown_end_spans.clone(),
            }
        }
    }
}
