// The sink's contract: exact bounds, overflow accounting (also under concurrent
// producers), clock regression, parents, span matching, stop, names. Deterministic:
// logical time from `ManualClock` where times matter.

use std::sync::{Arc, Barrier};

use inferscope_bench::clock::RunClock;
use inferscope_bench::timeline::{
    Bounds, ManualClock, Phase, Quality, QualityReason, SinkConfig, SinkConfigError, SpanContext,
    SpanEnd, SpanName, TimelineSink,
};

const ANCHOR: u64 = 1_726_000_000_000_000_000;

fn manual() -> Arc<ManualClock> {
    Arc::new(ManualClock::new(ANCHOR, "mono:test:1:1"))
}

fn sink_with(clock: Arc<ManualClock>, bounds: Bounds, tools: &[&str]) -> TimelineSink {
    let mut cfg = SinkConfig::new("run-1");
    cfg.bounds = bounds;
    cfg.tool_names = tools.iter().map(|s| s.to_string()).collect();
    TimelineSink::new(clock, cfg).unwrap()
}

fn ctx() -> SpanContext<'static> {
    SpanContext::default()
}

#[test]
fn ten_thousandth_event_kept_ten_thousand_first_dropped() {
    let clock = manual();
    let sink = sink_with(clock.clone(), Bounds::default(), &[]);
    // 5,000 start/end pairs = exactly 10,000 events.
    for i in 0..5_000u64 {
        clock.set(i * 10);
        let s = sink
            .span_start(SpanName::ChatCompletion, None, ctx())
            .unwrap_or_else(|| panic!("start {i} dropped"));
        assert!(sink.span_end(s, SpanEnd::completed()), "end {i} dropped");
    }
    let s = sink.summary();
    assert_eq!(s.event_count, 10_000);
    assert_eq!(s.quality, Quality::Complete);
    assert_eq!(s.dropped.total(), 0);
    // The 10,001st event is dropped, counted, and marks the capture partial.
    assert!(
        sink.span_start(SpanName::ChatCompletion, None, ctx())
            .is_none()
    );
    let s = sink.summary();
    assert_eq!(s.event_count, 10_000);
    assert_eq!(s.dropped.capacity, 1);
    assert_eq!(s.dropped.total(), 1);
    assert_eq!(s.quality, Quality::Partial);
    assert_eq!(s.quality_reasons, vec![QualityReason::CapacityExceeded]);
    // A full sink rejects at once, every time, and counts every one.
    for _ in 0..7 {
        assert!(sink.span_start(SpanName::SweHarness, None, ctx()).is_none());
    }
    assert_eq!(sink.summary().dropped.capacity, 8);
}

/// Line lengths (bytes, newline excluded) of `n` identical phase starts at a fixed time.
fn line_lengths(n: usize) -> Vec<u64> {
    let clock = manual();
    clock.set(123_456);
    let sink = sink_with(clock, Bounds::default(), &[]);
    for _ in 0..n {
        sink.span_start(SpanName::Phase(Phase::Grading), None, ctx())
            .unwrap();
    }
    sink.finalize(false);
    let dir = tempfile::tempdir().unwrap();
    sink.persist(dir.path(), &Default::default()).unwrap();
    std::fs::read_to_string(dir.path().join("timeline/events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| l.len() as u64)
        .collect()
}

#[test]
fn byte_budget_is_exact_and_fills_the_sink() {
    let lens = line_lengths(50);
    assert_eq!(
        lens[9],
        lens[8] + 2,
        "seq 10: one more digit in seq and in span_id"
    );
    let budget: u64 = lens[..20].iter().map(|l| l + 1).sum();
    for (max_total, kept) in [
        (budget, 20u64),
        (budget + lens[20], 20),
        (budget + lens[20] + 1, 21),
    ] {
        let clock = manual();
        clock.set(123_456);
        let bounds = Bounds {
            max_total_bytes: max_total as u32,
            ..Bounds::default()
        };
        let sink = sink_with(clock, bounds, &[]);
        let accepted = (0..50)
            .filter(|_| {
                sink.span_start(SpanName::Phase(Phase::Grading), None, ctx())
                    .is_some()
            })
            .count() as u64;
        let s = sink.summary();
        assert_eq!(accepted, kept, "budget {max_total}");
        assert_eq!(s.event_count, kept);
        assert_eq!(s.dropped.byte_budget, 50 - kept);
        assert_eq!(s.dropped.capacity, 0);
        assert!(
            s.quality_reasons
                .contains(&QualityReason::ByteBudgetExceeded)
        );
        let expected_bytes: u64 = lens[..kept as usize].iter().map(|l| l + 1).sum();
        assert_eq!(s.serialized_bytes, expected_bytes);
        // The file is exactly the claimed bytes.
        sink.finalize(false);
        let dir = tempfile::tempdir().unwrap();
        let r = sink.persist(dir.path(), &Default::default()).unwrap();
        assert_eq!(r.byte_length, expected_bytes);
        assert!(r.byte_length <= max_total);
    }
}

#[test]
fn largest_events_fit_the_default_budget_at_the_event_bound() {
    // Every field at its longest: the 10,000-event bound is reached before 8 MiB.
    let tool = format!("t{}", "x".repeat(63));
    let case = "c".repeat(128);
    let req = "r".repeat(128);
    let domain = format!("mono:{}", "h".repeat(123));
    let clock = Arc::new(ManualClock::new(ANCHOR, &domain));
    clock.set(u64::MAX / 2);
    let sink = sink_with(clock, Bounds::default(), &[&tool]);
    let parent = sink
        .span_start(SpanName::Phase(Phase::RequestExecution), None, ctx())
        .unwrap();
    let c = SpanContext {
        request_id: Some(&req),
        case_id: Some(&case),
        attempt: Some(u32::MAX),
    };
    let mut kept = 1u64;
    while sink
        .span_start(SpanName::Fixture(&tool), Some(parent), c)
        .is_some()
    {
        kept += 1;
    }
    let s = sink.summary();
    assert_eq!(kept, 10_000);
    assert_eq!(s.dropped.capacity, 1);
    assert_eq!(s.dropped.byte_budget, 0);
    assert!(
        s.serialized_bytes <= 8 * 1024 * 1024,
        "{}",
        s.serialized_bytes
    );
    sink.finalize(false);
    let dir = tempfile::tempdir().unwrap();
    let r = sink.persist(dir.path(), &Default::default()).unwrap();
    let text = std::fs::read_to_string(r.events_path).unwrap();
    assert!(text.lines().all(|l| l.len() <= 2048));
    assert_eq!(text.len() as u64, s.serialized_bytes);
}

#[test]
fn concurrent_overflow_count_is_exact_and_order_holds() {
    // Real monotonic clock, 4 producers, 20,000 offers for 10,000 slots.
    let clock = RunClock::start();
    let sink = TimelineSink::with_run_clock(&clock, SinkConfig::new("run-c")).unwrap();
    let threads = 4;
    let barrier = Barrier::new(threads);
    let (offered, kept): (u64, u64) = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let sink = sink.clone();
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    let (mut offered, mut kept) = (0u64, 0u64);
                    for _ in 0..2_500 {
                        offered += 1;
                        if let Some(id) = sink.span_start(SpanName::ChatCompletion, None, ctx()) {
                            kept += 1;
                            offered += 1;
                            kept += u64::from(sink.span_end(id, SpanEnd::completed()));
                        }
                    }
                    (offered, kept)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    });
    let s = sink.finalize(false);
    assert_eq!(kept, 10_000);
    assert_eq!(s.event_count, 10_000);
    assert_eq!(s.dropped.capacity, offered - kept);
    assert_eq!(s.dropped.total(), offered - kept);
    assert_eq!(s.rejected.total(), 0);
    assert_eq!(s.quality, Quality::Partial);
    // seq is 1..=10,000 without holes and elapsed_ns never decreases in seq order (the
    // reader checks both; a violation is an integrity error).
    let dir = tempfile::tempdir().unwrap();
    sink.persist(dir.path(), &Default::default()).unwrap();
    let report = inferscope_bench::timeline::verify(dir.path());
    assert!(report.ok(), "{report}");
    let seqs: Vec<u64> = report.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=10_000).collect::<Vec<_>>());
    assert!(
        report
            .events
            .windows(2)
            .all(|w| w[0].elapsed_ns <= w[1].elapsed_ns)
    );
}

#[test]
fn concurrent_producers_on_a_real_clock_are_never_rejected() {
    // Stale clock readings under contention must retry, not count as regressions.
    let clock = RunClock::start();
    for round in 0..20 {
        let sink = TimelineSink::with_run_clock(&clock, SinkConfig::new("run-s")).unwrap();
        std::thread::scope(|s| {
            for _ in 0..8 {
                let sink = sink.clone();
                s.spawn(move || {
                    for _ in 0..600 {
                        if let Some(id) = sink.span_start(SpanName::ChatCompletion, None, ctx()) {
                            sink.span_end(id, SpanEnd::completed());
                        }
                    }
                });
            }
        });
        let s = sink.finalize(false);
        assert_eq!(s.rejected.total(), 0, "round {round}: {:?}", s.rejected);
        assert_eq!(s.event_count, 9_600);
        assert_eq!(s.quality, Quality::Complete);
    }
}

#[test]
fn clock_regression_is_rejected_and_counted() {
    let clock = manual();
    let sink = sink_with(clock.clone(), Bounds::default(), &[]);
    clock.set(1_000);
    let a = sink
        .span_start(SpanName::ChatCompletion, None, ctx())
        .unwrap();
    clock.set(999);
    assert!(
        sink.span_start(SpanName::ChatCompletion, None, ctx())
            .is_none()
    );
    assert!(!sink.span_end(a, SpanEnd::completed()));
    let s = sink.summary();
    assert_eq!(s.rejected.clock_regression, 2);
    assert_eq!(s.event_count, 1);
    // Equal time is not a regression, and the rejected end left the span open.
    clock.set(1_000);
    assert!(sink.span_end(a, SpanEnd::completed()));
    let s = sink.summary();
    assert_eq!(s.event_count, 2);
    assert_eq!(s.quality_reasons, vec![QualityReason::EventsRejected]);
}

#[test]
fn parents_must_be_open_spans_of_this_timeline() {
    let clock = manual();
    let a = sink_with(clock.clone(), Bounds::default(), &[]);
    let b = sink_with(clock.clone(), Bounds::default(), &[]);
    let pa = a
        .span_start(SpanName::Phase(Phase::Preflight), None, ctx())
        .unwrap();
    // A span of timeline A is not a parent in timeline B, nor can B end it.
    assert!(
        b.span_start(SpanName::ChatCompletion, Some(pa), ctx())
            .is_none()
    );
    assert!(!b.span_end(pa, SpanEnd::completed()));
    assert_eq!(b.summary().rejected.foreign_span, 2);
    assert_eq!(b.summary().event_count, 0);
    // An ended parent is not open.
    let child = a
        .span_start(SpanName::ChatCompletion, Some(pa), ctx())
        .unwrap();
    assert!(a.span_end(child, SpanEnd::completed()));
    assert!(a.span_end(pa, SpanEnd::completed()));
    assert!(
        a.span_start(SpanName::ChatCompletion, Some(pa), ctx())
            .is_none()
    );
    assert_eq!(a.summary().rejected.parent_not_open, 1);
    // A span ends once.
    assert!(!a.span_end(child, SpanEnd::failed(None)));
    assert_eq!(a.summary().rejected.span_not_open, 1);
    assert_eq!(a.summary().event_count, 4);
}

#[test]
fn names_and_ids_are_validated_before_keeping() {
    let clock = manual();
    let sink = sink_with(clock, Bounds::default(), &["read_file", "search"]);
    assert!(
        sink.span_start(SpanName::Fixture("read_file"), None, ctx())
            .is_some()
    );
    assert!(
        sink.span_start(SpanName::Fixture("write_file"), None, ctx())
            .is_none()
    );
    assert!(
        sink.span_start(SpanName::Fixture("Read File"), None, ctx())
            .is_none()
    );
    let bad_case = SpanContext {
        case_id: Some("agentic::lookup#0/step 3"),
        ..ctx()
    };
    assert!(
        sink.span_start(SpanName::ChatCompletion, None, bad_case)
            .is_none()
    );
    let good_case = SpanContext {
        case_id: Some("agentic::lookup#0/step3"),
        request_id: Some("req-17"),
        attempt: Some(1),
    };
    let id = sink
        .span_start(SpanName::ChatCompletion, None, good_case)
        .unwrap();
    assert!(!sink.span_end(id, SpanEnd::completed().with_request_id("chatcmpl 1")));
    assert!(sink.span_end(id, SpanEnd::completed().with_request_id("chatcmpl-1")));
    let s = sink.summary();
    assert_eq!(s.rejected.invalid_name, 2);
    assert_eq!(s.rejected.invalid_case_id, 1);
    assert_eq!(s.rejected.invalid_request_id, 1);
    assert_eq!(s.rejected.total(), 4);
    assert_eq!(s.event_count, 3);
}

#[test]
fn stopped_sink_rejects_at_once_and_keeps_spans_open() {
    let clock = manual();
    let sink = sink_with(clock, Bounds::default(), &[]);
    let phase = sink
        .span_start(SpanName::Phase(Phase::RequestExecution), None, ctx())
        .unwrap();
    let s = sink.finalize(true);
    assert!(s.stopped && s.cancelled);
    assert_eq!(s.unclosed_span_count, 1);
    assert_eq!(
        s.quality_reasons,
        vec![QualityReason::Cancelled, QualityReason::UnclosedSpans]
    );
    assert!(
        sink.span_start(SpanName::ChatCompletion, None, ctx())
            .is_none()
    );
    assert!(!sink.span_end(phase, SpanEnd::completed()));
    let s = sink.summary();
    assert_eq!(s.rejected.sink_stopped, 2);
    assert_eq!(s.event_count, 1, "finalize closed nothing");
    // Idempotent.
    assert_eq!(sink.finalize(false).event_count, 1);
    assert!(sink.summary().cancelled);
}

#[test]
fn config_is_validated_without_echoing_it() {
    let clock = manual();
    let mk = |run: &str, tools: &[&str], bounds: Bounds| {
        let mut c = SinkConfig::new(run);
        c.tool_names = tools.iter().map(|s| s.to_string()).collect();
        c.bounds = bounds;
        TimelineSink::new(clock.clone(), c).map(|_| ())
    };
    let d = Bounds::default();
    assert_eq!(mk("run 1", &[], d), Err(SinkConfigError::InvalidRunId));
    assert_eq!(
        mk("r", &["ok", "Bad Tool"], d),
        Err(SinkConfigError::InvalidToolName { index: 1 })
    );
    assert_eq!(
        mk("r", &["a", "a"], d),
        Err(SinkConfigError::DuplicateToolName { index: 1 })
    );
    let loose = Bounds {
        max_events: 10_001,
        ..d
    };
    assert_eq!(
        mk("r", &[], loose),
        Err(SinkConfigError::InvalidBounds("max_events"))
    );
    let bad_domain = Arc::new(ManualClock::new(0, "mono:host name:1"));
    assert!(matches!(
        TimelineSink::new(bad_domain, SinkConfig::new("r")),
        Err(SinkConfigError::InvalidClockDomain)
    ));
}

#[test]
fn handle_is_cheap_clone_send_sync_and_preallocated() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<TimelineSink>();
    let sink = sink_with(manual(), Bounds::default(), &[]);
    let clone = sink.clone();
    clone.span_start(SpanName::SweHarness, None, ctx()).unwrap();
    assert_eq!(sink.summary().event_count, 1);
    // Fixed footprint, known up front (about 3.6 MB for 10,000 slots).
    let bytes = sink.preallocated_bytes();
    assert!((10_000 * 300..=10_000 * 512).contains(&bytes), "{bytes}");
}

#[test]
fn quality_reason_as_str_is_the_serde_name() {
    for r in [
        QualityReason::Cancelled,
        QualityReason::CapacityExceeded,
        QualityReason::ByteBudgetExceeded,
        QualityReason::EventTooLarge,
        QualityReason::EventsLost,
        QualityReason::EventsRejected,
        QualityReason::UnclosedSpans,
    ] {
        assert_eq!(serde_json::to_value(r).unwrap(), r.as_str());
    }
}
