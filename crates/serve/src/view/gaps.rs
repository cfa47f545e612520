//! Every gap and missing association of a run, as text markers (pure;
//! docs/artifacts.md "The dashboard API": capture quality, dropped events, gaps and missing
//! associations are shown, never hidden).

use crate::timeline::verify_report::Gap;
use crate::timeline::{Quality, VerifiedTimeline};

use super::super::runs::TimelineState;
use super::*;

fn elapsed_of_seq(t: &VerifiedTimeline, seq: u64) -> Option<u64> {
    t.events
        .binary_search_by_key(&seq, |e| e.seq)
        .ok()
        .map(|i| t.events[i].elapsed_ns)
}

/// The markers of the report itself: missing or refused, or cancelled.
fn report_markers(report: &ReportView, out: &mut Vec<GapMarker>) {
    if report.state != "ok" {
        out.push(GapMarker::new(
            "report_missing",
            match report.state {
                "missing" => "report.json missing: the run did not finish (killed?)".to_string(),
                _ => format!("report.json refused ({})", report.fault.unwrap_or("fault")),
            },
        ));
    }
    if report.cancelled == Some(true) {
        out.push(GapMarker::new(
            "run_cancelled",
            "Run cancelled (Ctrl-C): jobs stopped early; the capture holds what existed",
        ));
    }
}

/// The marker of a timeline that cannot be shown: unavailable, or failing its integrity
/// check.
fn timeline_markers(timeline: &TimelineView, out: &mut Vec<GapMarker>) {
    match timeline.state {
        "unavailable" => {
            let why = match timeline.reason {
                Some("no_manifest") => {
                    "no timeline manifest (the run was killed before persistence, or persistence failed)"
                }
                Some("run_incomplete") => {
                    "the run is incomplete (no report.json, written last: killed or out of disk)"
                }
                _ => "no timeline (capture was off for this run)",
            };
            let mut g = GapMarker::new(
                "capture_unavailable",
                format!("Timeline unavailable: {why}"),
            );
            g.lane = Some("timeline".into());
            out.push(g);
        }
        "integrity_error" => {
            let codes: Vec<&str> = timeline.errors.iter().map(|e| e.code).take(5).collect();
            let mut g = GapMarker::new(
                "integrity_error",
                format!(
                    "Timeline integrity error: {} ({} problem(s)); nothing from it is shown",
                    codes.join(", "),
                    timeline.errors.len() as u64 + timeline.errors_omitted
                ),
            );
            g.lane = Some("timeline".into());
            g.count = Some(timeline.errors.len() as u64 + timeline.errors_omitted);
            out.push(g);
        }
        _ => {}
    }
}

/// The markers of a verified capture `t`: partial quality, dropped and rejected events,
/// sequence gaps and spans with a missing start, parent or end, and a clock domain other
/// than the report's.
fn capture_markers(
    t: &VerifiedTimeline,
    report: &ReportView,
    timeline: &TimelineView,
    out: &mut Vec<GapMarker>,
) {
    let m = &t.manifest;
    if m.quality == Quality::Partial {
        out.push(GapMarker::new(
            "capture_partial",
            format!("Capture partial: {}", timeline.quality_reasons.join(", ")),
        ));
    }
    if m.dropped_count > 0 {
        let d = &m.dropped;
        let mut parts = Vec::new();
        for (n, what) in [
            (d.capacity, "event bound"),
            (d.byte_budget, "byte budget"),
            (d.event_too_large, "event too large"),
            (d.slot_contention + d.unwritten, "lost"),
        ] {
            if n > 0 {
                parts.push(format!("{n} at {what}"));
            }
        }
        let mut g = GapMarker::new(
            "dropped_events",
            format!(
                "{} events dropped ({}); spans after the drop are missing or have an unknown end",
                m.dropped_count,
                parts.join(", ")
            ),
        );
        g.count = Some(m.dropped_count);
        out.push(g);
    }
    if m.rejected_count > 0 {
        let mut g = GapMarker::new(
            "rejected_events",
            format!("{} events rejected by validation", m.rejected_count),
        );
        g.count = Some(m.rejected_count);
        out.push(g);
    }
    for gap in &t.gaps {
        match gap {
            Gap::SeqGap { previous, next } => {
                let mut g = GapMarker::new(
                    "seq_gap",
                    format!("Events {}–{} missing", previous + 1, next - 1),
                );
                g.start_ns = elapsed_of_seq(t, *previous);
                g.end_ns = elapsed_of_seq(t, *next);
                g.count = Some(next - previous - 1);
                out.push(g);
            }
            Gap::MissingStart { span_id, seq } => {
                let mut g = GapMarker::new(
                    "missing_start",
                    format!("Span {span_id}: end without its start (unknown duration)"),
                );
                g.end_ns = elapsed_of_seq(t, *seq);
                out.push(g);
            }
            Gap::MissingParent { span_id, parent } => {
                out.push(GapMarker::new(
                    "missing_parent",
                    format!("Span {span_id}: parent span {parent} not in the capture"),
                ));
            }
            Gap::DroppedEvents { .. } | Gap::RejectedEvents { .. } => {}
        }
    }
    for id in &t.unknown_end_spans {
        let start = t
            .events
            .iter()
            .find(|e| e.span_id == *id && e.kind.is_start());
        let mut g = GapMarker::new(
            "unknown_end",
            format!(
                "Span {id} ({}): started, end unknown",
                start.map(|e| e.name.as_str()).unwrap_or("?")
            ),
        );
        g.start_ns = start.map(|e| e.elapsed_ns);
        g.lane = start.and_then(|e| e.case_id.clone());
        out.push(g);
    }
    if let Some(rd) = &report.clock_domain
        && Some(rd) != timeline.clock_domain.as_ref()
    {
        out.push(GapMarker::new(
            "clock_domain_mismatch",
            format!(
                "Clock-domain mismatch: timeline {} vs report {rd}; not compared",
                timeline.clock_domain.as_deref().unwrap_or("?")
            ),
        ));
    }
}

/// The markers of resource telemetry: samples in another clock domain, telemetry or a
/// source unavailable, intervals without samples.
fn telemetry_markers(
    report: &ReportView,
    timeline: &TimelineView,
    telemetry: &TelemetryView,
    out: &mut Vec<GapMarker>,
) {
    match telemetry.state {
        "ok" | "fault" if telemetry.aligned == Some(false) => {
            let mut g = GapMarker::new(
                "clock_domain_mismatch",
                format!(
                    "Clock-domain mismatch: resource samples are in {}, the run in {}; \
                     samples are not placed on this time axis (never subtracted across domains)",
                    telemetry.clock_domain.as_deref().unwrap_or("?"),
                    report
                        .clock_domain
                        .as_deref()
                        .or(timeline.clock_domain.as_deref())
                        .unwrap_or("?")
                ),
            );
            g.lane = Some("resources".into());
            out.push(g);
        }
        "unavailable" | "fault" => {
            let mut g = GapMarker::new(
                "telemetry_unavailable",
                format!(
                    "Resource telemetry unavailable: {}",
                    telemetry.reason.as_deref().unwrap_or("unknown")
                ),
            );
            g.lane = Some("resources".into());
            out.push(g);
        }
        _ => {}
    }
    for l in &telemetry.lanes {
        if l.status != "ok" {
            let mut g = GapMarker::new(
                "source_unavailable",
                format!(
                    "{} ({}): {}{}",
                    l.label,
                    l.host,
                    l.status,
                    l.reason
                        .as_deref()
                        .map(|r| format!(" — {r}"))
                        .unwrap_or_default()
                ),
            );
            g.lane = Some(l.lane_id.clone());
            out.push(g);
        }
        let n = l.gaps.len() as u64 + l.gaps_omitted;
        if n > 0 && telemetry.aligned != Some(false) {
            let total: u64 = l.gaps.iter().map(|g| g.end_ns - g.start_ns).sum();
            let mut g = GapMarker::new(
                "missing_samples",
                format!(
                    "{} ({}): {n} interval(s) without samples, {:.1} ms in total",
                    l.label,
                    l.host,
                    total as f64 / 1e6
                ),
            );
            g.lane = Some(l.lane_id.clone());
            g.count = Some(n);
            out.push(g);
        }
    }
}

/// Every gap marker of a run (pure), in display order.
pub fn gap_markers(
    report: &ReportView,
    timeline_state: &TimelineState,
    timeline: &TimelineView,
    telemetry: &TelemetryView,
    scrape_failures: u64,
) -> Vec<GapMarker> {
    let mut out = Vec::new();
    report_markers(report, &mut out);
    timeline_markers(timeline, &mut out);
    if let TimelineState::Ok(t) = timeline_state {
        capture_markers(t, report, timeline, &mut out);
    }
    telemetry_markers(report, timeline, telemetry, &mut out);
    if scrape_failures > 0 {
        let mut g = GapMarker::new(
            "failed_scrapes",
            format!("{scrape_failures} failed /metrics scrape(s)"),
        );
        g.count = Some(scrape_failures);
        out.push(g);
    }
    out
}
