// Perfetto / Chrome trace export shape: JSON object format, µs timestamps, metadata,
// complete events for phases, async slices for overlapping spans, instants for unknown
// boundaries, counter tracks with non-finite points omitted.

use inferscope_bench::timeline::{
    CounterTrack, EndStatus, EventKind, FailureCode, Quality, TimelineEvent, TraceMeta,
    perfetto_trace,
};
use serde_json::Value;

fn ev(
    seq: u64,
    span: u64,
    parent: Option<u64>,
    kind: EventKind,
    name: &str,
    t: u64,
) -> TimelineEvent {
    TimelineEvent {
        seq,
        span_id: span,
        parent_span_id: parent,
        kind,
        name: name.into(),
        elapsed_ns: t,
        wall_time_utc: String::new(),
        clock_domain_id: "d".into(),
        status: (!kind.is_start()).then_some(EndStatus::Completed),
        request_id: None,
        case_id: None,
        attempt: None,
        prompt_tokens: None,
        completion_tokens: None,
        completion_tokens_estimate: None,
        failure_code: None,
    }
}

fn all_numbers_finite(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_f64().is_some_and(f64::is_finite),
        Value::Array(a) => a.iter().all(all_numbers_finite),
        Value::Object(o) => o.values().all(all_numbers_finite),
        _ => true,
    }
}

#[test]
fn trace_has_the_chrome_json_object_shape() {
    use EventKind::*;
    let mut r2_end = ev(6, 4, Some(2), RequestEnd, "chat_completion", 9_000_500);
    r2_end.status = Some(EndStatus::Failed);
    r2_end.failure_code = Some(FailureCode::Timeout);
    let events = vec![
        ev(1, 1, None, PhaseStart, "preparation", 1_500),
        ev(2, 2, None, PhaseStart, "request_execution", 2_000), // unknown end
        ev(3, 3, Some(2), RequestStart, "chat_completion", 3_000),
        ev(4, 4, Some(2), RequestStart, "chat_completion", 4_000), // overlaps span 3
        ev(5, 3, Some(2), RequestEnd, "chat_completion", 8_000_000),
        r2_end,
        ev(7, 99, Some(2), FixtureEnd, "read_file", 9_100_000), // start missing (partial)
        ev(8, 1, None, PhaseEnd, "preparation", 9_200_000),
    ];
    let counters = vec![CounterTrack {
        name: "gpu0 power".into(),
        unit: "mW".into(),
        points: vec![
            (0, 300_000.0),
            (50_000_000, f64::NAN),
            (100_000_000, 700_000.0),
            (150_000_000, f64::INFINITY),
        ],
    }];
    let meta = TraceMeta {
        process_name: "inferscope-bench run r1".into(),
        run_id: Some("r1".into()),
        clock_domain_id: Some("d".into()),
        reference_instant_unix_ns: Some(1),
        quality: Some(Quality::Partial),
        dropped_count: Some(0),
    };
    let trace = perfetto_trace(&events, &counters, &meta);
    assert_eq!(trace["displayTimeUnit"], "ms");
    assert!(all_numbers_finite(&trace));
    assert_eq!(trace["otherData"]["quality"], "partial");
    let te = trace["traceEvents"].as_array().unwrap();
    let ph = |p: &str| te.iter().filter(|e| e["ph"] == p).collect::<Vec<_>>();

    let m = ph("M");
    assert!(
        m.iter()
            .any(|e| e["name"] == "process_name" && e["args"]["name"] == "inferscope-bench run r1")
    );
    assert!(
        m.iter()
            .any(|e| e["name"] == "thread_name" && e["args"]["name"] == "phases")
    );

    // The closed phase: a complete event in µs (1.5 µs start, 9,198.5 µs long).
    let x = ph("X");
    assert_eq!(x.len(), 1);
    assert_eq!(x[0]["name"], "preparation");
    assert_eq!(x[0]["ts"].as_f64(), Some(1.5));
    assert_eq!(x[0]["dur"].as_f64(), Some(9_198.5));

    // Two overlapping requests: async begin/end pairs with matching id and cat.
    let (b, e) = (ph("b"), ph("e"));
    assert_eq!(b.len(), 2);
    assert_eq!(e.len(), 2);
    for begin in &b {
        assert_eq!(begin["cat"], "request");
        let end = e.iter().find(|x| x["id"] == begin["id"]).unwrap();
        assert_eq!(end["cat"], begin["cat"]);
        assert_eq!(end["name"], begin["name"]);
        assert!(end["ts"].as_f64().unwrap() > begin["ts"].as_f64().unwrap());
    }
    let failed = e.iter().find(|x| x["id"] == 4).unwrap();
    assert_eq!(failed["args"]["failure_code"], "timeout");
    assert_eq!(failed["args"]["status"], "failed");
    assert!(failed["args"]["prompt_tokens"].is_null());

    // Unknown end and missing start are instants, not invented slices.
    let i = ph("i");
    let names: Vec<&str> = i.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "request_execution (unknown end)",
            "read_file (start missing)"
        ]
    );

    // Counter track: only the finite points.
    let c = ph("C");
    assert_eq!(c.len(), 2);
    assert_eq!(c[0]["name"], "gpu0 power (mW)");
    assert_eq!(c[1]["ts"].as_f64(), Some(100_000.0));
    assert_eq!(c[1]["args"]["value"].as_f64(), Some(700_000.0));

    // Timed events are in timestamp order after the metadata.
    let ts: Vec<f64> = te
        .iter()
        .filter(|e| e["ph"] != "M")
        .map(|e| e["ts"].as_f64().unwrap())
        .collect();
    assert!(ts.windows(2).all(|w| w[0] <= w[1]));
    assert_eq!(te.len(), 3 + 1 + 4 + 2 + 2);
}
