//! The report and timeline parts of the view (pure).

use crate::runner::report::RunReport;
use crate::timeline::ids::{is_valid_case_id, is_valid_id};

use super::super::runs::{ReportState, TimelineState};
use super::*;

/// The report part of the view (pure): [`report_head`] with the jobs, trajectories and
/// steps filled in.
pub fn report_view(state: &ReportState) -> ReportView {
    let mut view = report_head(state);
    if let ReportState::Ok(r) = state {
        view.jobs = job_views(r);
    }
    view
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
            kind: code_or_other(&j.kind),
            status: code_or_other(&j.status),
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
                    basis: bounded_text(&v.basis, 64),
                    outcome: v.outcome,
                })
                .collect(),
            grading: j
                .grading
                .iter()
                .map(|(check, passed, _reason)| GradingView {
                    check: bounded_text(check, 200),
                    passed: *passed,
                })
                .collect(),
            failure_codes: j
                .failure_codes
                .iter()
                .map(|(c, n)| (code_or_other(c), *n))
                .collect(),
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
                    stop_reason: code_or_other(&t.stop_reason),
                    start_ns: t.start_ns,
                    end_ns: t.end_ns,
                    graded_pass: t.graded_pass,
                    steps: t
                        .steps
                        .iter()
                        .map(|s| StepView {
                            step_id: s.step_id,
                            kind: code_or_other(&s.kind),
                            name: code_or_other(&s.name),
                            start_ns: s.start_ns,
                            end_ns: s.end_ns,
                            status: code_or_other(&s.status),
                            failure_code: s.failure_code.as_deref().map(code_or_other),
                            prompt_tokens: s.prompt_tokens,
                            cached_tokens: s.cached_tokens,
                            completion_tokens: s.completion_tokens,
                            ttft_ms: s.ttft_ms,
                            energy_mj: s.energy_mj,
                            energy_basis: s.energy_basis.as_deref().map(code_or_other),
                        })
                        .collect(),
                })
                .collect(),
        })
        .collect()
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
        clock_domain: Some(clock_domain_fingerprint(&r.clock_domain_id)),
        endpoint: r.endpoint.as_ref().map(|e| EndpointView {
            suite: bounded_text(&e.suite, 64),
            model: bounded_text(&e.model, 128),
            simulated: e.simulated,
            engine_profile: code_or_other(&e.engine_profile),
        }),
        summary: Some(SummaryView {
            jobs: r.summary.jobs,
            passed: r.summary.passed,
            failed: r.summary.failed,
            not_run: r.summary.not_run,
            duration_ns: r.summary.duration_ns,
            exit_status: r.summary.exit_status,
        }),
        capture: Some(CaptureView {
            enabled: r.capture.enabled,
            quality: r.capture.quality.as_deref().map(code_or_other),
            events: r.capture.events,
            dropped: r.capture.dropped,
            rejected: r.capture.rejected,
            diagnostic: r.capture.diagnostic.is_some(),
        }),
        jobs: Vec::new(),
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
                clock_domain: Some(clock_domain_fingerprint(&m.clock_domain_id)),
                start_elapsed_ns: Some(m.start_elapsed_ns),
                end_elapsed_ns: Some(m.end_elapsed_ns),
                telemetry_session_id: m.telemetry_session_id.clone(),
                unknown_end_spans: t.unknown_end_spans.clone(),
            }
        }
    }
}
