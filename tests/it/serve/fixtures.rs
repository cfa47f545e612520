//! Generator of the `overflowed` fixture run (run by `fixtures/runs/regenerate.sh`, ignored
//! otherwise): a real complete run is replayed, event by event at its own `elapsed_ns`,
//! into a real [`TimelineSink`] bounded to [`OVERFLOW_MAX_EVENTS`] events. The sink decides
//! what is kept and what is dropped exactly as during a run; the report and samples are
//! the source run's, with the report's capture record updated to the new capture.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use inferscope_bench::timeline::{
    Bounds, EndStatus, ManifestInfo, ManualClock, Phase, SinkConfig, SpanContext, SpanEnd,
    SpanFamily, SpanId, SpanName, TimelineSink, read_timeline,
};

/// The event bound of the overflowed capture (the source run has 28 events).
pub const OVERFLOW_MAX_EVENTS: u32 = 16;

pub use crate::support::copy_dir;

/// Replays `src`'s timeline into a bounded sink and writes the run to `out`.
pub fn replay_overflowed(src: &Path, out: &Path, max_events: u32) {
    let t = read_timeline(src).expect("source timeline verifies");
    let m = &t.manifest;
    let clock = Arc::new(ManualClock::new(
        m.reference_instant_unix_ns,
        &m.clock_domain_id,
    ));
    clock.set(m.start_elapsed_ns);
    let mut tools: Vec<String> = t
        .events
        .iter()
        .filter(|e| e.kind.family() == SpanFamily::Fixture)
        .map(|e| e.name.clone())
        .collect();
    tools.sort();
    tools.dedup();
    let cfg = SinkConfig {
        run_id: m.run_id.clone(),
        tool_names: tools,
        bounds: Bounds {
            max_events,
            ..Bounds::default()
        },
    };
    let sink = TimelineSink::new(clock.clone(), cfg).unwrap();
    let mut handles: HashMap<u64, SpanId> = HashMap::new();
    for e in &t.events {
        clock.set(e.elapsed_ns);
        if e.kind.is_start() {
            let name = match e.kind.family() {
                SpanFamily::Phase => SpanName::Phase(Phase::from_name(&e.name).unwrap()),
                SpanFamily::Request => SpanName::ChatCompletion,
                SpanFamily::Fixture => SpanName::Fixture(&e.name),
                SpanFamily::Harness => SpanName::SweHarness,
            };
            let parent = e.parent_span_id.and_then(|p| handles.get(&p).copied());
            let ctx = SpanContext {
                request_id: e.request_id.as_deref(),
                case_id: e.case_id.as_deref(),
                attempt: e.attempt,
            };
            if let Some(h) = sink.span_start(name, parent, ctx) {
                handles.insert(e.span_id, h);
            }
        } else if let Some(h) = handles.get(&e.span_id) {
            let end = match e.status.expect("end status") {
                EndStatus::Completed => SpanEnd::completed(),
                EndStatus::Failed => SpanEnd::failed(e.failure_code),
                EndStatus::Cancelled => SpanEnd::cancelled(),
            }
            .with_tokens(e.prompt_tokens, e.completion_tokens);
            sink.span_end(*h, end);
        }
    }
    clock.set(m.end_elapsed_ns);
    let summary = sink.finalize(false);
    let _ = std::fs::remove_dir_all(out);
    std::fs::create_dir_all(out).unwrap();
    for f in ["report.json", "requests.jsonl", "steps.jsonl"] {
        if src.join(f).is_file() {
            std::fs::copy(src.join(f), out.join(f)).unwrap();
        }
    }
    if src.join("samples").is_dir() {
        copy_dir(&src.join("samples"), &out.join("samples"));
    }
    let written = sink
        .persist(
            out,
            &ManifestInfo {
                io_before: m.measured_window_io.before,
                io_after: m.measured_window_io.after,
                telemetry_session_id: None,
            },
        )
        .unwrap();
    let report_path = out.join("report.json");
    let mut report =
        inferscope_bench::model::RunReport::from_json(&std::fs::read(&report_path).unwrap())
            .unwrap();
    report.capture.quality = Some(written.quality);
    report.capture.events = Some(written.event_count);
    report.capture.dropped = Some(summary.dropped.total());
    report.capture.rejected = Some(summary.rejected.total());
    std::fs::write(&report_path, report.to_json()).unwrap();
}

#[test]
#[ignore = "regenerates fixtures/runs/overflowed; run by fixtures/runs/regenerate.sh"]
fn overflowed_capture() {
    let src = PathBuf::from(std::env::var("INFERSCOPE_FIXTURE_SRC").unwrap());
    let out = PathBuf::from(std::env::var("INFERSCOPE_FIXTURE_OUT").unwrap());
    replay_overflowed(&src, &out, OVERFLOW_MAX_EVENTS);
}
