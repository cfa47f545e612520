// The overhead gate's NEGATIVE CONTROLS are real sinks: one blocks the caller on every
// insert, one writes and fsyncs every event to disk. Both still feed a normal timeline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use inferscope_bench::timeline::{
    BlockingSink, DiskWriteSink, ManualClock, Sink, SinkConfig, SinkKind, SpanContext, SpanEnd,
    SpanName, TimelineEvent, TimelineSink, proc_self_io,
};

fn sink() -> TimelineSink {
    TimelineSink::new(
        Arc::new(ManualClock::new(0, "mono:t:1:1")),
        SinkConfig::new("run-n"),
    )
    .unwrap()
}

fn drive(s: &dyn Sink, n: usize) {
    for _ in 0..n {
        let id = s
            .span_start(SpanName::ChatCompletion, None, SpanContext::default())
            .unwrap();
        assert!(s.span_end(id, SpanEnd::completed()));
    }
}

#[test]
fn blocking_sink_blocks_every_insert() {
    let real = sink();
    let control = BlockingSink::new(real.clone(), Duration::from_millis(2));
    assert_eq!(control.kind(), SinkKind::BlockingControl);
    let t0 = Instant::now();
    drive(&control, 5);
    // 10 inserts, each sleeping at least 2 ms (a lower bound: never flaky).
    assert!(t0.elapsed() >= Duration::from_millis(20));
    assert_eq!(control.timeline().summary().event_count, 10);
}

#[test]
fn disk_write_sink_writes_and_fsyncs_every_event() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.jsonl");
    let control = DiskWriteSink::create(sink(), &path).unwrap();
    assert_eq!(control.kind(), SinkKind::DiskWriteControl);
    let before = proc_self_io();
    drive(&control, 5);
    let after = proc_self_io();
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<TimelineEvent> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 10);
    assert_eq!(
        lines.iter().map(|e| e.seq).collect::<Vec<_>>(),
        (1..=10).collect::<Vec<_>>()
    );
    if let (Some(b), Some(a)) = (before, after) {
        // The writes are visible in the process's I/O accounting.
        assert!(a.wchar - b.wchar >= text.len() as u64);
        assert!(a.syscw - b.syscw >= 10);
    }
    assert_eq!(control.timeline().summary().event_count, 10);
}

#[test]
fn the_real_sink_is_a_sink_too() {
    let real = sink();
    let s: Arc<dyn Sink> = Arc::new(real.clone());
    assert_eq!(s.kind(), SinkKind::Timeline);
    drive(s.as_ref(), 3);
    assert_eq!(real.summary().event_count, 6);
}
