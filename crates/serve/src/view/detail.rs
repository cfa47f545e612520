//! The run's detail, assembled from the views of its report, timeline and samples.

use super::super::runs::{ReportState, SamplesState, TimelineState};
use super::*;

/// Assembles the detail (pure).
pub fn run_detail(
    run_id: &str,
    report: &ReportState,
    timeline: &TimelineState,
    samples: &SamplesState,
    times: &LaneTimes,
) -> RunDetail {
    let report_view = report_view(report);
    let timeline_v = timeline_view(timeline);
    let run_domain: Option<String> = match (report, timeline) {
        (ReportState::Ok(r), _) => Some(r.clock_domain_id.clone()),
        (_, TimelineState::Ok(t)) => Some(t.manifest.clock_domain_id.clone()),
        _ => None,
    };
    let telemetry = telemetry_view(samples, times, run_domain.as_deref());
    let scrape_failures = match samples {
        SamplesState::Ok(s) => s.metrics.as_ref().map_or(0, |m| m.scrapes_failed),
        _ => 0,
    };
    let gaps = gap_markers(
        &report_view,
        timeline,
        &timeline_v,
        &telemetry,
        scrape_failures,
    );
    RunDetail {
        schema: DETAIL_SCHEMA,
        run_id: run_id.to_string(),
        report: report_view,
        timeline: timeline_v,
        telemetry,
        gaps,
    }
}
