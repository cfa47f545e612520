// Perfetto / Chrome trace export, checked structurally against the Trace Event Format
// (JSON object format): every event has the fields its phase requires; one process per job
// with one thread per trajectory; complete events nest on their thread (no partial
// overlap); each request slice holds a nested `ttft` slice; instants for unknown
// boundaries; one counter track per resource lane of the dashboard, with non-finite
// points omitted. Synthetic events first, then a real load run (suites/load.toml on the
// simulator) against its own dashboard view.

use crate::support;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use inferscope_bench::timeline::{
    CounterTrack, EndStatus, EventKind, FailureCode, Quality, TimelineEvent, TraceMeta,
    TraceTracks, perfetto_trace,
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

fn start(
    seq: u64,
    span: u64,
    kind: EventKind,
    name: &str,
    t: u64,
    case: &str,
    request: Option<&str>,
) -> TimelineEvent {
    let mut e = ev(seq, span, Some(2), kind, name, t);
    e.case_id = Some(case.into());
    e.request_id = request.map(str::to_string);
    e
}

fn all_numbers_finite(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.as_f64().is_some_and(f64::is_finite),
        Value::Array(a) => a.iter().all(all_numbers_finite),
        Value::Object(o) => o.values().all(all_numbers_finite),
        _ => true,
    }
}

/// The Trace Event Format's per-phase fields, and the nesting rule of complete events:
/// on each (pid, tid), two `X` slices are disjoint or one contains the other. Returns
/// the thread names by (pid, tid) and process names by pid.
fn check_trace_event_format(
    trace: &Value,
) -> (BTreeMap<(u64, u64), String>, BTreeMap<u64, String>) {
    assert!(trace["traceEvents"].is_array(), "JSON object format");
    assert!(all_numbers_finite(trace));
    let te = trace["traceEvents"].as_array().unwrap();
    let mut threads = BTreeMap::new();
    let mut processes = BTreeMap::new();
    let mut slices: HashMap<(u64, u64), Vec<(f64, f64)>> = HashMap::new();
    let mut open_async: HashMap<(u64, u64), f64> = HashMap::new();
    for e in te {
        let ph = e["ph"].as_str().expect("ph");
        let pid = e["pid"].as_u64().expect("pid on every event");
        assert!(e["name"].is_string(), "{e}");
        match ph {
            "M" => {
                let name = e["args"]["name"].as_str();
                match e["name"].as_str().unwrap() {
                    "process_name" => {
                        processes.insert(pid, name.unwrap().to_string());
                    }
                    "thread_name" => {
                        threads.insert((pid, e["tid"].as_u64().unwrap()), name.unwrap().into());
                    }
                    "process_sort_index" | "thread_sort_index" => {
                        assert!(e["args"]["sort_index"].is_u64(), "{e}");
                    }
                    other => panic!("unexpected metadata {other}"),
                }
            }
            "X" => {
                let ts = e["ts"].as_f64().expect("ts");
                let dur = e["dur"].as_f64().expect("X has dur");
                assert!(dur >= 0.0, "{e}");
                let tid = e["tid"].as_u64().expect("X has tid");
                slices.entry((pid, tid)).or_default().push((ts, ts + dur));
            }
            "b" | "e" => {
                assert!(
                    e["cat"].is_string() && !e["id"].is_null(),
                    "async needs cat and id: {e}"
                );
                let key = (pid, e["id"].as_u64().unwrap());
                let ts = e["ts"].as_f64().unwrap();
                if ph == "b" {
                    open_async.insert(key, ts);
                } else {
                    let b = open_async.remove(&key).expect("e after its b");
                    assert!(b <= ts);
                }
            }
            "i" => {
                assert!(e["ts"].is_f64() || e["ts"].is_u64());
                assert!(["g", "p", "t"].contains(&e["s"].as_str().unwrap()), "{e}");
            }
            "C" => {
                assert!(e["ts"].is_f64() || e["ts"].is_u64());
                let args = e["args"].as_object().expect("counter args");
                assert!(
                    !args.is_empty() && args.values().all(Value::is_number),
                    "{e}"
                );
            }
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
    assert!(open_async.is_empty(), "every async slice is closed");
    for (track, mut s) in slices {
        s.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut stack: Vec<f64> = Vec::new();
        for (a, z) in s {
            while stack.last().is_some_and(|&end| end <= a) {
                stack.pop();
            }
            if let Some(&end) = stack.last() {
                assert!(
                    z <= end + 1e-6,
                    "{track:?}: slice [{a}, {z}] crosses its parent's end {end}"
                );
            }
            stack.push(z);
        }
    }
    (threads, processes)
}

#[test]
fn trace_has_the_trace_event_format_tracks_and_nesting() {
    use EventKind::*;
    let mut failed = ev(12, 8, Some(2), RequestEnd, "chat_completion", 9_000_500);
    failed.status = Some(EndStatus::Failed);
    failed.failure_code = Some(FailureCode::Timeout);
    let events = vec![
        ev(1, 1, None, PhaseStart, "preparation", 1_500),
        ev(2, 2, None, PhaseStart, "request_execution", 2_000), // unknown end
        start(
            3,
            3,
            RequestStart,
            "chat_completion",
            3_000,
            "s::a#0",
            Some("r1"),
        ),
        start(
            4,
            4,
            RequestStart,
            "chat_completion",
            4_000,
            "s::a#1",
            Some("r2"),
        ),
        ev(5, 3, Some(2), RequestEnd, "chat_completion", 8_000_000),
        start(6, 5, FixtureStart, "read_file", 8_100_000, "s::a#0", None),
        ev(7, 5, Some(2), FixtureEnd, "read_file", 8_200_000),
        start(
            8,
            6,
            RequestStart,
            "chat_completion",
            8_300_000,
            "s::b#0/s128r0",
            Some("r3"),
        ),
        ev(9, 6, Some(2), RequestEnd, "chat_completion", 8_900_000),
        start(
            10,
            7,
            RequestStart,
            "chat_completion",
            5_000,
            "other::x#0",
            None,
        ),
        ev(11, 7, Some(2), RequestEnd, "chat_completion", 6_000),
        start(
            12,
            8,
            RequestStart,
            "chat_completion",
            8_400_000,
            "s::a#1",
            None,
        ),
        ev(13, 4, Some(2), RequestEnd, "chat_completion", 8_500_000),
        failed,
        ev(14, 99, Some(2), FixtureEnd, "read_file", 9_100_000), // start missing
        ev(15, 1, None, PhaseEnd, "preparation", 9_200_000),
    ];
    let counters = vec![
        CounterTrack {
            name: "probe · simulated".into(),
            unit: "mW".into(),
            points: vec![
                (0, 300_000.0),
                (50_000_000, f64::NAN),
                (100_000_000, 700_000.0),
                (150_000_000, f64::INFINITY),
            ],
        },
        CounterTrack {
            name: "engine /metrics · requests_running".into(),
            unit: "requests".into(),
            points: vec![(10, 1.0), (20, 0.0)],
        },
    ];
    let meta = TraceMeta {
        process_name: "inferscope-bench run r1".into(),
        run_id: Some("r1".into()),
        clock_domain_id: Some("d".into()),
        reference_instant_unix_ns: Some(1),
        quality: Some(Quality::Partial),
        dropped_count: Some(0),
    };
    let tracks = TraceTracks {
        jobs: vec![
            ("s::a".into(), vec!["s::a#0".into(), "s::a#1".into()]),
            ("s::b".into(), vec!["s::b#0".into()]),
        ],
        ttft: [
            ("r1".to_string(), (3_000, 1_003_000)),
            ("r3".to_string(), (8_300_100, 8_350_100)),
        ]
        .into_iter()
        .collect(),
    };
    let trace = perfetto_trace(&events, &counters, &meta, &tracks);
    assert_eq!(trace["displayTimeUnit"], "ms");
    assert_eq!(trace["otherData"]["quality"], "partial");
    let (threads, processes) = check_trace_event_format(&trace);
    assert_eq!(processes[&1], "inferscope-bench run r1");
    assert_eq!(processes[&2], "job s::a");
    assert_eq!(processes[&3], "job s::b");
    assert_eq!(threads[&(1, 1)], "phases");
    assert_eq!(threads[&(2, 1)], "s::a#0");
    assert_eq!(threads[&(2, 2)], "s::a#1");
    assert_eq!(threads[&(3, 1)], "s::b#0");

    let te = trace["traceEvents"].as_array().unwrap();
    let on = |pid: u64, tid: u64, ph: &str| -> Vec<&Value> {
        te.iter()
            .filter(|e| e["pid"] == pid && e["tid"] == tid && e["ph"] == ph)
            .collect()
    };
    // The phase: a complete event in µs on the run's phase thread.
    let x = on(1, 1, "X");
    assert_eq!(x.len(), 1);
    assert_eq!(x[0]["name"], "preparation");
    assert_eq!(x[0]["ts"].as_f64(), Some(1.5));
    assert_eq!(x[0]["dur"].as_f64(), Some(9_198.5));
    // s::a#0: its request (with a nested TTFT of 1 ms) and then its tool, on its thread.
    let a0 = on(2, 1, "X");
    let names: Vec<&str> = a0.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["chat_completion", "ttft", "read_file"]);
    assert_eq!(a0[1]["ts"], a0[0]["ts"]);
    assert_eq!(a0[1]["args"]["ttft_ms"].as_f64(), Some(1.0));
    assert_eq!(a0[1]["dur"].as_f64(), Some(1_000.0));
    // A case id's sub-part (`/s128r0`) belongs to its trajectory's thread.
    let b0 = on(3, 1, "X");
    assert_eq!(b0.len(), 2, "{b0:?}");
    assert_eq!(b0[1]["name"], "ttft");
    // s::a#1: its first request, then one overlapping it: an async slice, not a broken
    // nesting.
    assert_eq!(on(2, 2, "X").len(), 1);
    let b = on(2, 2, "b");
    assert_eq!(b.len(), 1);
    let e = on(2, 2, "e");
    assert_eq!(e[0]["args"]["failure_code"], "timeout");
    assert_eq!(e[0]["args"]["status"], "failed");
    // A span of no known trajectory: an async slice on the run's loose thread.
    assert_eq!(threads[&(1, 2)], "spans of no known trajectory");
    assert_eq!(on(1, 2, "b").len(), 1);
    // Unknown end and missing start are instants, never invented slices.
    let names: Vec<&str> = te
        .iter()
        .filter(|e| e["ph"] == "i")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "request_execution (unknown end)",
            "read_file (start missing)"
        ]
    );
    // Counter tracks: only the finite points, on the run's process.
    let c: Vec<&Value> = te.iter().filter(|e| e["ph"] == "C").collect();
    assert_eq!(c.len(), 4);
    let power: Vec<&&Value> = c
        .iter()
        .filter(|e| e["name"] == "probe · simulated (mW)")
        .collect();
    assert_eq!(power.len(), 2);
    assert_eq!(power[1]["ts"].as_f64(), Some(100_000.0));
    assert_eq!(power[1]["args"]["value"].as_f64(), Some(700_000.0));
    assert!(c.iter().all(|e| e["pid"] == 1));
}

/// A real load run: every trajectory of the report has its thread in its job's process,
/// every request slice with a first token holds its TTFT, and the counter tracks are the
/// dashboard's resource lanes, one for one.
#[test]
fn a_load_run_has_a_thread_per_trajectory_and_a_counter_per_lane() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    support::captured_run("suites/load.toml", &run);
    let file = tmp.path().join("trace.json");
    let o = support::run(
        &support::repo(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "perfetto",
            "-o",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", support::describe(&o));
    let trace: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let (threads, processes) = check_trace_event_format(&trace);
    let report = support::report(&run);
    let te = trace["traceEvents"].as_array().unwrap();

    let mut trajectories = 0;
    for job in report["jobs"].as_array().unwrap() {
        let id = job["id"].as_str().unwrap();
        let pid = *processes
            .iter()
            .find(|(_, n)| *n == &format!("job {id}"))
            .unwrap_or_else(|| panic!("no process for {id}: {processes:?}"))
            .0;
        let ttft: HashMap<&str, f64> = job["requests"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| {
                let t = r["ttft_ns"].as_u64()? - r["send_ns"].as_u64()?;
                Some((r["request_id"].as_str()?, t as f64 / 1e6))
            })
            .collect();
        for t in job["trajectories"].as_array().unwrap() {
            trajectories += 1;
            let tid = threads
                .iter()
                .find(|((p, _), n)| *p == pid && *n == t["id"].as_str().unwrap())
                .unwrap_or_else(|| panic!("no thread for {}", t["id"]))
                .0
                .1;
            let slices: Vec<&Value> = te
                .iter()
                .filter(|e| e["pid"] == pid && e["tid"] == tid && e["ph"] == "X")
                .collect();
            let requests: Vec<&&Value> = slices.iter().filter(|e| e["cat"] == "request").collect();
            let llm_steps = t["steps"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| s["kind"] == "llm_call")
                .count();
            assert_eq!(requests.len(), llm_steps, "{}: request slices", t["id"]);
            for r in requests {
                let rid = r["args"]["start"]["request_id"].as_str().unwrap();
                let nested: Vec<&&Value> = slices
                    .iter()
                    .filter(|e| e["name"] == "ttft" && e["args"]["request_id"] == rid)
                    .collect();
                match ttft.get(rid) {
                    Some(ms) => {
                        assert_eq!(nested.len(), 1, "{rid}: one TTFT slice");
                        let got = nested[0]["args"]["ttft_ms"].as_f64().unwrap();
                        assert!((got - ms).abs() < 0.01, "{rid}: {got} vs {ms}");
                        let (ts, dur) = (r["ts"].as_f64().unwrap(), r["dur"].as_f64().unwrap());
                        let n = nested[0]["ts"].as_f64().unwrap();
                        assert!(ts <= n && n + nested[0]["dur"].as_f64().unwrap() <= ts + dur);
                    }
                    None => assert!(nested.is_empty()),
                }
            }
        }
    }
    // report.json keeps each load point's first trajectory (checked step by step above);
    // every unit (requests.jsonl's unit lines) has its thread in its job's process.
    assert_eq!(trajectories, 4, "one kept trajectory per load point");
    let full = inferscope_bench::run_dir::read_report_with_requests(&run).unwrap();
    let mut units = 0;
    for job in &full.jobs {
        let pid = *processes
            .iter()
            .find(|(_, n)| *n == &format!("job {}", job.id))
            .unwrap()
            .0;
        for u in &job.units {
            units += 1;
            assert!(
                threads.iter().any(|((p, _), n)| *p == pid && *n == u.id),
                "no thread for unit {}",
                u.id
            );
        }
    }
    assert_eq!(units, 88, "the load suite's 16 × 3 + 40 trajectories");

    // The dashboard's resource lanes of the same run (its inlined view).
    let html = tmp.path().join("run.html");
    support::report_html(&run, &html);
    let page = std::fs::read_to_string(&html).unwrap();
    let at = page.find("id=\"inferscope-data\"").unwrap();
    let body = &page[page[at..].find('>').unwrap() + at + 1..];
    let body = &body[..body.find("</script>").unwrap()];
    let bundle: Value = serde_json::from_str(body).unwrap();
    let lanes_of = |sampled_only: bool| -> BTreeSet<String> {
        bundle["detail"]["telemetry"]["lanes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| !sampled_only || l["sample_count"].as_u64().unwrap() > 0)
            .map(|l| {
                format!(
                    "{} ({})",
                    l["label"].as_str().unwrap(),
                    l["unit"].as_str().unwrap()
                )
            })
            .collect()
    };
    let lanes = lanes_of(false);
    let counters: BTreeSet<String> = te
        .iter()
        .filter(|e| e["ph"] == "C")
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    for want in [
        "probe · simulated (mW)",
        "engine /metrics · requests_running (requests)",
        "engine /metrics · kv_cache_usage (fraction)",
        "engine /metrics · prefix_cache_hits (tokens)",
    ] {
        assert!(lanes.contains(want), "dashboard lane {want}: {lanes:?}");
    }
    // Every lane that has samples is a counter track, and nothing else is.
    assert_eq!(counters, lanes_of(true));
}
