//! The run command against a scripted hostile server ("Done when"): a
//! context job of four requests where one request misbehaves — an error object after HTTP
//! 200, a disconnect inside the chunked body, an oversized event, a slow response head past
//! `request_timeout_s`, a silent body past `idle_timeout_s`, an HTTP 500 — while the others
//! are well-formed streams whose events are split across reads. The run completes, the
//! other requests are recorded successes, and the job fails (exit 100) with the typed
//! failure code in `report.json`, in the job's output lines and in the timeline.

use crate::support;

use std::time::Duration;

use serde_json::Value;
use support::{Hostile, Received, Reply, describe, events, job, report, run, text, write};

const OK_TEXT: &str = "fine answer from the hostile server";

/// The faulty request of every case: the third of four (`sizes = [8, 9, 10, 11]`), so
/// requests after it prove that the run went on.
const FAULTY: &str = ".s10.";

fn ctx_suite(url: &str, extra: &str) -> String {
    format!(
        "name = \"hostile\"\n\
         endpoint = \"{url}\"\n\
         model = \"hostile-model\"\n\
         {extra}\n\
         [telemetry]\nmetrics = false\n\
         [gates]\nmax_error_rate = 0.0\n\
         [[jobs]]\nname = \"ctx\"\nkind = \"context\"\nsizes = [8, 9, 10, 11]\nmax_tokens = 8\n"
    )
}

/// Runs the context suite with `reply` on the third request and asserts the outcome;
/// returns the report and the failed request.
fn fault_case(reply: Reply, code: &str, extra: &str) -> (Value, Value) {
    let server = Hostile::start("hostile-model", move |r: &Received| {
        if r.request_id().contains(FAULTY) {
            reply.clone()
        } else {
            Reply::Ok(OK_TEXT.into())
        }
    });
    let cwd = tempfile::tempdir().unwrap();
    write(cwd.path(), "s.toml", &ctx_suite(&server.base_url(), extra));
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            "s.toml",
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(100), "{}", describe(&o));
    let (stdout, _) = text(&o);

    // The run went on: all four requests reached the server.
    let ids: Vec<String> = server
        .chat_requests()
        .iter()
        .map(|r| r.request_id().to_string())
        .collect();
    assert_eq!(ids.len(), 4, "{ids:?}");

    // Output lines: FAIL with the typed code as a reason, then the plain line.
    let fail = stdout
        .lines()
        .position(|l| l.trim_start().starts_with("FAIL [") && l.ends_with("hostile::ctx"))
        .unwrap_or_else(|| panic!("no FAIL line:\n{stdout}"));
    let reasons: Vec<&str> = stdout
        .lines()
        .skip(fail + 1)
        .take_while(|l| l.starts_with("             "))
        .collect();
    assert!(
        reasons.iter().any(|l| l.contains(code)),
        "no reason line names `{code}`: {reasons:?}"
    );
    assert!(
        stdout.lines().any(|l| l == "0 passed, 1 failed"),
        "{stdout}"
    );

    // report.json: one failure with the typed code, three recorded successes.
    let r = report(&out);
    let j = job(&r, "hostile::ctx");
    assert_eq!(j["status"], "fail");
    let reqs = j["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 4);
    let (bad, good): (Vec<&Value>, Vec<&Value>) = reqs
        .iter()
        .partition(|q| q["request_id"].as_str().unwrap().contains(FAULTY));
    assert_eq!(bad.len(), 1);
    let bad = bad[0].clone();
    assert_eq!(bad["status"], "failed");
    assert_eq!(bad["failure_code"], code, "{bad}");
    for q in &good {
        assert_eq!(q["status"], "success", "{q}");
        assert!(q["failure_code"].is_null());
        assert!(q["ttft_ns"].as_u64().unwrap() >= q["send_ns"].as_u64().unwrap());
        assert_eq!(q["finish_reason"], "stop");
        assert_eq!(q["token_event_count"], OK_TEXT.split(' ').count());
        assert!(q["prompt_tokens"].is_u64(), "server usage recorded: {q}");
        assert_eq!(q["cached_tokens"], 0);
    }
    assert_eq!(j["stats"]["succeeded"], 3);
    assert_eq!(j["stats"]["failed"], 1);
    assert_eq!(
        j["failure_codes"],
        serde_json::json!([{"code": code, "count": 1}])
    );
    let err_gate = j["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["gate"] == "max_error_rate")
        .expect("max_error_rate verdict");
    assert_eq!(err_gate["outcome"], "fail");
    // The failed step carries the code too.
    let steps = j["trajectories"][0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 4);
    assert_eq!(
        steps
            .iter()
            .filter(|s| s["failure_code"] == code && s["status"] == "failed")
            .count(),
        1
    );

    // Timeline: three completed request ends and one failed with the same code.
    let ends: Vec<Value> = events(&out)
        .into_iter()
        .filter(|e| e["kind"] == "request_end")
        .collect();
    assert_eq!(ends.len(), 4);
    assert_eq!(
        ends.iter().filter(|e| e["status"] == "completed").count(),
        3
    );
    let failed: Vec<&Value> = ends.iter().filter(|e| e["status"] == "failed").collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["failure_code"], code);
    let v = run(cwd.path(), &["timeline", "verify", out.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
    (r, bad)
}

#[test]
fn error_object_mid_stream_is_stream_error() {
    let (_, bad) = fault_case(
        Reply::ErrorMidStream("the engine fell over".into()),
        "stream_error",
        "",
    );
    assert_eq!(bad["http_status"], 200);
    assert!(bad["ttft_ns"].is_u64(), "tokens arrived before the error");
}

#[test]
fn disconnect_inside_the_body_is_disconnect() {
    let (_, bad) = fault_case(Reply::Disconnect, "disconnect", "");
    assert_eq!(bad["http_status"], 200);
}

#[test]
fn oversized_event_is_event_too_large() {
    // 256 KiB in one event against a 64 KiB cap: refused as soon as the cap is passed.
    let (_, bad) = fault_case(
        Reply::Oversized(256 * 1024),
        "event_too_large",
        "max_event_bytes = 65536",
    );
    assert!(bad["ttft_ns"].is_null());
}

#[test]
fn slow_response_head_past_request_timeout_is_timeout() {
    let (_, bad) = fault_case(
        Reply::SlowHead(Duration::from_secs(6), OK_TEXT.into()),
        "timeout",
        "request_timeout_s = 1.0",
    );
    assert!(bad["headers_ns"].is_null(), "no head arrived");
    let waited = bad["end_ns"].as_u64().unwrap() - bad["send_ns"].as_u64().unwrap();
    assert!(
        waited >= 900_000_000,
        "gave up after {waited} ns, before the timeout"
    );
}

#[test]
fn silent_body_past_idle_timeout_is_idle_timeout() {
    let (_, bad) = fault_case(
        Reply::SlowBody(Duration::from_secs(6), OK_TEXT.into()),
        "idle_timeout",
        "idle_timeout_s = 0.5",
    );
    assert_eq!(bad["http_status"], 200);
    assert!(bad["headers_ns"].is_u64());
}

#[test]
fn http_500_is_http_status() {
    let (_, bad) = fault_case(
        Reply::Status(500, "internal error".into()),
        "http_status",
        "",
    );
    assert_eq!(bad["http_status"], 500);
}

/// A slow first byte within the limits is no failure: it is inside that request's TTFT.
#[test]
fn slow_first_byte_within_limits_is_inside_ttft() {
    let server = Hostile::start("hostile-model", |r: &Received| {
        if r.request_id().contains(FAULTY) {
            Reply::SlowFirstByte(Duration::from_millis(400), OK_TEXT.into())
        } else {
            Reply::Ok(OK_TEXT.into())
        }
    });
    let cwd = tempfile::tempdir().unwrap();
    write(cwd.path(), "s.toml", &ctx_suite(&server.base_url(), ""));
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "s.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = report(&out);
    let j = job(&r, "hostile::ctx");
    assert_eq!(j["status"], "pass");
    let slow = j["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["request_id"].as_str().unwrap().contains(FAULTY))
        .unwrap();
    assert_eq!(slow["status"], "success");
    let ttft = slow["ttft_ns"].as_u64().unwrap() - slow["send_ns"].as_u64().unwrap();
    assert!(
        ttft >= 400_000_000,
        "TTFT {ttft} ns excludes the slow first byte"
    );
    assert!(slow["first_byte_ns"].as_u64().unwrap() > slow["headers_ns"].as_u64().unwrap());
}

/// A failed LLM call ends a scripted trajectory (`request_failed`, no further requests of
/// that trajectory); the next job still runs and passes.
#[test]
fn failed_llm_call_stops_its_trajectory_and_the_run_goes_on() {
    let server = Hostile::start("hostile-model", |r: &Received| {
        if r.request_id().starts_with("hostile::broken.") && r.request_id().ends_with(".llm1") {
            Reply::Status(503, "overloaded".into())
        } else {
            Reply::Ok(OK_TEXT.into())
        }
    });
    let cwd = tempfile::tempdir().unwrap();
    write(cwd.path(), "fixtures/tools/notes.json", "{\"notes\": []}");
    let suite = format!(
        "name = \"hostile\"\nendpoint = \"{}\"\nmodel = \"hostile-model\"\n\
         [telemetry]\nmetrics = false\n\
         [[tools]]\nname = \"notes\"\nresponse_file = \"tools/notes.json\"\n\
         [[jobs]]\nname = \"broken\"\nkind = \"agentic\"\nmode = \"scripted\"\n\
         task = \"t\"\ntools = [\"notes\"]\n\
         [[jobs.script]]\ntool = \"notes\"\n\
         [[jobs.script]]\ntool = \"notes\"\n\
         [[jobs.script]]\ntool = \"notes\"\n\
         [[jobs]]\nname = \"after\"\nkind = \"context\"\nsizes = [8]\n",
        server.base_url()
    );
    write(cwd.path(), "s.toml", &suite);
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "s.toml", "--out", out.to_str().unwrap()],
    );
    assert!(matches!(o.status.code(), Some(0 | 100)), "{}", describe(&o));
    let ids: Vec<String> = server
        .chat_requests()
        .iter()
        .map(|r| r.request_id().to_string())
        .collect();
    assert_eq!(
        ids,
        vec![
            "hostile::broken.t0.llm0",
            "hostile::broken.t0.llm1",
            "hostile::after.t0.s8.r0"
        ]
    );
    let r = report(&out);
    let broken = job(&r, "hostile::broken");
    let t = &broken["trajectories"][0];
    assert_eq!(t["stop_reason"], "request_failed");
    let kinds: Vec<&str> = t["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, vec!["llm_call", "tool", "llm_call"]);
    assert_eq!(t["steps"][2]["failure_code"], "http_status");
    assert_eq!(broken["requests"][1]["http_status"], 503);
    assert_eq!(job(&r, "hostile::after")["status"], "pass");
    // A trajectory cut short by a failed request is a failed job, gates or not (issue 2
    // item 8: exit 100 when any job fails).
    assert_eq!(broken["status"], "fail", "an aborted trajectory passed");
    let (stdout, _) = text(&o);
    assert!(
        stdout.lines().any(|l| l == "1 passed, 1 failed"),
        "{stdout}"
    );
    assert_eq!(o.status.code(), Some(100), "{}", describe(&o));
}

#[test]
fn invalid_json_event_is_malformed_event() {
    let role = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
    fault_case(
        Reply::Events(vec![role.into(), "{\"choices\": [ {not json".into()]),
        "malformed_event",
        "",
    );
}

#[test]
fn clean_end_without_finish_or_done_is_incomplete_stream() {
    let content = r#"{"choices":[{"index":0,"delta":{"content":"half "},"finish_reason":null}]}"#;
    let (_, bad) = fault_case(
        Reply::Events(vec![content.into(), content.into()]),
        "incomplete_stream",
        "",
    );
    assert_eq!(bad["token_event_count"], 2);
}

// ---------------------------------------------------------------------------------------
// Hostile content: what a model or server may send that must not crash the run, escape
// the fixtures root, or corrupt the statistics.
// ---------------------------------------------------------------------------------------

/// A model that calls an undeclared tool, escapes the read root with `..`, an absolute
/// path and a symlink, and sends arguments that are not JSON: every call is a failed tool
/// step with its code, nothing outside the fixtures root is read, and the run completes.
#[test]
fn hostile_tool_calls_are_tool_errors_and_never_leave_the_fixtures_root() {
    let server = Hostile::start("hostile-model", |r: &Received| {
        if r.request_id().ends_with(".llm0") {
            Reply::ToolCalls(vec![
                ("rm_rf".into(), "{}".into()),
                (
                    "read_doc".into(),
                    r#"{"path": "../../../../../../etc/passwd"}"#.into(),
                ),
                ("read_doc".into(), r#"{"path": "/etc/passwd"}"#.into()),
                ("read_doc".into(), r#"{"path": "escape.txt"}"#.into()),
                ("read_doc".into(), r#"{"path": "sub/../../s.toml"}"#.into()),
                ("read_doc".into(), "{not json".into()),
                ("read_doc".into(), r#"{"path": "doc.md"}"#.into()),
            ])
        } else {
            Reply::Ok(OK_TEXT.into())
        }
    });
    let cwd = tempfile::tempdir().unwrap();
    write(cwd.path(), "fixtures/repo/doc.md", "inside the root\n");
    write(cwd.path(), "fixtures/repo/sub/x.md", "x\n");
    let outside = write(cwd.path(), "outside.txt", "OUTSIDE-THE-ROOT\n");
    std::os::unix::fs::symlink(&outside, cwd.path().join("fixtures/repo/escape.txt")).unwrap();
    let suite = format!(
        "name = \"hostile\"\nendpoint = \"{}\"\nmodel = \"hostile-model\"\n\
         [telemetry]\nmetrics = false\n\
         [[tools]]\nname = \"read_doc\"\nread_root = \"repo\"\npath_argument = \"path\"\n\
         parameters = {{ type = \"object\", properties = {{ path = {{ type = \"string\" }} }}, required = [\"path\"] }}\n\
         [[jobs]]\nname = \"agent\"\nkind = \"agentic\"\nmode = \"model\"\ntask = \"t\"\n\
         tools = [\"read_doc\"]\nmax_steps = 3\n",
        server.base_url()
    );
    write(cwd.path(), "s.toml", &suite);
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            "s.toml",
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(matches!(o.status.code(), Some(0 | 100)), "{}", describe(&o));

    // What went back to the model: error objects, and the one file inside the root.
    let reqs = server.chat_requests();
    assert_eq!(reqs.len(), 2, "tool results, then the final answer");
    let second: Value = serde_json::from_str(&reqs[1].body).unwrap();
    let tool_msgs: Vec<String> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(tool_msgs.len(), 7);
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let first_line = passwd.lines().next().unwrap_or("root:x:0:0");
    for m in &tool_msgs {
        assert!(
            !m.contains(first_line),
            "a file outside the root was read: {m}"
        );
        assert!(!m.contains("[[jobs]]"), "the suite file was read: {m}");
        assert!(
            !m.contains("OUTSIDE-THE-ROOT"),
            "a symlink escaped the root: {m}"
        );
    }
    assert_eq!(tool_msgs[6], "inside the root\n");

    let r = report(&out);
    let j = job(&r, "hostile::agent");
    let tools: Vec<(&str, &str)> = j["trajectories"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "tool")
        .map(|s| {
            // A failed tool step's code is `tool_error`; which one is its `tool_error`.
            if !s["failure_code"].is_null() {
                assert_eq!(s["failure_code"], "tool_error", "{s}");
            }
            (
                s["status"].as_str().unwrap(),
                s["tool_error"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        tools,
        vec![
            ("failed", "unknown_tool"),
            ("failed", "sandbox_violation"),
            ("failed", "sandbox_violation"),
            ("failed", "sandbox_violation"),
            ("failed", "sandbox_violation"),
            ("failed", "bad_arguments"),
            ("completed", "-"),
        ]
    );
    assert_eq!(j["trajectories"][0]["stop_reason"], "final_answer");
    let v = run(cwd.path(), &["timeline", "verify", out.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
}

/// Absurd usage (u64::MAX counts, cached > prompt, negative and fractional numbers) must
/// not panic the run (debug builds check overflow) or break `report.json` and its exports.
#[test]
fn absurd_usage_numbers_do_not_crash_or_poison_the_report() {
    let max = u64::MAX;
    let usages = [
        format!(
            r#"{{"choices":[],"usage":{{"prompt_tokens":{max},"completion_tokens":{max},"total_tokens":{max},"prompt_tokens_details":{{"cached_tokens":{max}}}}}}}"#
        ),
        r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":500}}}"#.to_string(),
        r#"{"choices":[],"usage":{"prompt_tokens":-5,"completion_tokens":2.5,"total_tokens":"many","prompt_tokens_details":{"cached_tokens":-1}}}"#.to_string(),
        r#"{"choices":[],"usage":{"prompt_tokens":1e30,"completion_tokens":1e30,"total_tokens":null}}"#.to_string(),
    ];
    let server = Hostile::start("hostile-model", move |r: &Received| {
        let k = ["s8", "s9", "s10", "s11"]
            .iter()
            .position(|s| r.request_id().contains(&format!(".{s}.")))
            .unwrap_or(0);
        Reply::Events(vec![
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"a "},"finish_reason":null}]}"#.into(),
            r#"{"choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}"#.into(),
            usages[k].clone(),
            "[DONE]".into(),
        ])
    });
    let cwd = tempfile::tempdir().unwrap();
    let suite = ctx_suite(&server.base_url(), "").replace("max_error_rate = 0.0", "");
    write(cwd.path(), "s.toml", &suite);
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            "s.toml",
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let (_, stderr) = text(&o);
    assert!(!stderr.contains("panicked"), "{}", describe(&o));
    assert!(matches!(o.status.code(), Some(0 | 100)), "{}", describe(&o));
    let r = report(&out);
    let j = job(&r, "hostile::ctx");
    assert_eq!(j["requests"].as_array().unwrap().len(), 4);
    if let Some(rate) = j["stats"]["cache_hit_rate"].as_f64() {
        assert!((0.0..=1.0).contains(&rate), "cache hit rate {rate}");
    }
    let v = run(cwd.path(), &["timeline", "verify", out.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
    for cmd in ["markdown", "junit", "perfetto", "json"] {
        let rep = run(
            cwd.path(),
            &["report", out.to_str().unwrap(), "--format", cmd],
        );
        assert_eq!(
            rep.status.code(),
            Some(0),
            "report {cmd}: {}",
            describe(&rep)
        );
    }
}

/// A model turn with more tool calls than the timeline holds (10,000 events): the capture
/// overflows, is marked `partial` with an exact dropped count, and the run completes.
#[test]
fn a_flood_of_tool_calls_overflows_the_capture_into_a_partial_timeline() {
    const CALLS: usize = 5_200;
    let server = Hostile::start("hostile-model", |r: &Received| {
        if r.request_id().ends_with(".llm0") {
            Reply::ToolCalls(
                (0..CALLS)
                    .map(|i| ("lookup".to_string(), format!("{{\"key\": \"k{i}\"}}")))
                    .collect(),
            )
        } else {
            Reply::Ok(OK_TEXT.into())
        }
    });
    let cwd = tempfile::tempdir().unwrap();
    let suite = format!(
        "name = \"hostile\"\nendpoint = \"{}\"\nmodel = \"hostile-model\"\n\
         [telemetry]\nmetrics = false\n\
         [[tools]]\nname = \"lookup\"\ndefault_text = \"nothing\"\n\
         parameters = {{ type = \"object\", properties = {{ key = {{ type = \"string\" }} }} }}\n\
         [[tools.responses]]\nwhen = {{ key = \"k0\" }}\ntext = \"zero\"\n\
         [[jobs]]\nname = \"agent\"\nkind = \"agentic\"\nmode = \"model\"\ntask = \"t\"\n\
         tools = [\"lookup\"]\nmax_steps = 2\n",
        server.base_url()
    );
    write(cwd.path(), "s.toml", &suite);
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            "s.toml",
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(matches!(o.status.code(), Some(0 | 100)), "{}", describe(&o));
    let r = report(&out);
    let steps = job(&r, "hostile::agent")["trajectories"][0]["steps"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(steps, CALLS + 2, "every tool call is a step");
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("timeline/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["quality"], "partial", "{manifest}");
    let kept = manifest["event_count"].as_u64().unwrap();
    let dropped = manifest["dropped_count"].as_u64().unwrap();
    assert_eq!(kept, 10_000, "the sink holds exactly its bound");
    let ev = events(&out);
    assert_eq!(kept, ev.len() as u64);
    assert_eq!(r["capture"]["dropped"], dropped);
    // The dropped count is accurate: every fixture span whose start is missing from the
    // file, and every kept start whose end is missing, was a counted drop; beyond those,
    // only the few phase and request events after the overflow can have been dropped.
    let starts: Vec<u64> = ev
        .iter()
        .filter(|e| e["kind"] == "fixture_start")
        .map(|e| e["span_id"].as_u64().unwrap())
        .collect();
    let ends: std::collections::HashSet<u64> = ev
        .iter()
        .filter(|e| e["kind"] == "fixture_end")
        .map(|e| e["span_id"].as_u64().unwrap())
        .collect();
    let ended = |id: u64| ends.contains(&id);
    let missing_starts = CALLS as u64 - starts.len() as u64;
    let missing_ends = starts.iter().filter(|&&id| !ended(id)).count() as u64;
    assert!(missing_starts > 0);
    assert!(
        dropped >= missing_starts + missing_ends && dropped <= missing_starts + missing_ends + 10,
        "dropped {dropped}, missing fixture starts {missing_starts}, ends {missing_ends}"
    );
    assert_eq!(manifest["dropped"]["capacity"], dropped);
    let v = run(cwd.path(), &["timeline", "verify", out.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
}
