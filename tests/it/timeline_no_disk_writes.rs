// Capture during the measured window writes nothing: /proc/self/io's write counters do
// not move across 10,000 inserts (docs/artifacts.md; issue 4 "no bytes written to disk by the
// capture during the measured window"). The only test in its binary, so no other test
// thread writes meanwhile.

use inferscope_bench::clock::RunClock;
use inferscope_bench::timeline::{
    Phase, SinkConfig, SpanContext, SpanEnd, SpanName, TimelineSink, proc_self_io,
};

#[test]
fn inserting_writes_no_bytes() {
    let clock = RunClock::start();
    let mut cfg = SinkConfig::new("run-io");
    cfg.tool_names = vec!["read_file".into()];
    let sink = TimelineSink::with_run_clock(&clock, cfg).unwrap();
    let Some(before) = proc_self_io() else {
        eprintln!("/proc/self/io unavailable here; nothing to measure");
        return;
    };
    let exec = sink
        .span_start(
            SpanName::Phase(Phase::RequestExecution),
            None,
            SpanContext::default(),
        )
        .unwrap();
    for i in 0..4_999u32 {
        let name = if i % 2 == 0 {
            SpanName::ChatCompletion
        } else {
            SpanName::Fixture("read_file")
        };
        let ctx = SpanContext {
            case_id: Some("agentic::lookup#0/step1"),
            request_id: None,
            attempt: Some(i),
        };
        let id = sink.span_start(name, Some(exec), ctx).unwrap();
        assert!(sink.span_end(id, SpanEnd::completed().with_tokens(Some(100), Some(10))));
    }
    let after = proc_self_io().unwrap();
    assert_eq!(after.write_bytes, before.write_bytes);
    assert_eq!(after.wchar, before.wchar);
    assert_eq!(after.syscw, before.syscw);
    assert_eq!(sink.summary().event_count, 9_999);
}
