//! Field-case tests of the pure accumulator (docs/field-cases.md: C01, C02, C07–C09, C11, C12).
//! Times are given in ms after `send_ns = 0`, as in the cases.

use super::*;
use crate::record::{RecordWarning, RequestStatus, TokenSource};
use std::borrow::Cow;

const MS: u64 = 1_000_000;

fn head() -> RequestHead {
    RequestHead {
        request_id: "t".into(),
        stream: true,
        ..RequestHead::default()
    }
}

/// Feeds `(ms, event type, data)` events, stopping at Done/Failed like the client does,
/// then finishes with a clean EOF at the last event's arrival. Every test's events go
/// through both readings of a chunk (the typed view and the lenient `Value` one), which
/// must give the same record.
fn run_typed(events: &[(u64, Option<&str>, &str)]) -> RequestRecord {
    run_typed_with(events, head())
}

fn run_typed_with(events: &[(u64, Option<&str>, &str)], head: RequestHead) -> RequestRecord {
    let feed = |lenient: bool| {
        let mut acc = StreamAccumulator::new();
        let mut end = 0;
        for &(ms, ty, data) in events {
            end = ms * MS;
            let flow = if lenient {
                acc.on_event_lenient(ty, data, ms * MS)
            } else {
                acc.on_event(ty, data, ms * MS)
            };
            if flow != Flow::Continue {
                break;
            }
        }
        acc.finish(head.clone(), end, true)
    };
    let typed = feed(false);
    let lenient = feed(true);
    assert_eq!(typed, lenient, "the typed and the lenient reading differ");
    assert_eq!(typed.output, lenient.output);
    typed
}

/// `chunks` as untyped data events 10 ms apart, from 10 ms.
fn spaced(chunks: &[String]) -> Vec<(u64, Option<&str>, &str)> {
    chunks
        .iter()
        .enumerate()
        .map(|(i, c)| (10 * (i as u64 + 1), None, c.as_str()))
        .collect()
}

fn run(events: &[(u64, &str)]) -> RequestRecord {
    let typed: Vec<_> = events.iter().map(|&(ms, d)| (ms, None, d)).collect();
    run_typed(&typed)
}

fn ms(v: Option<f64>) -> Option<f64> {
    v.map(|x| (x * 1000.0).round() / 1000.0)
}

#[test]
fn c01a_role_only_first_chunk_is_not_ttft() {
    let r = run(&[
        (
            5,
            r#"{"id":"t1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
        ),
        (
            120,
            r#"{"id":"t1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
        ),
        (
            140,
            r#"{"id":"t1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}"#,
        ),
        (
            160,
            r#"{"id":"t1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ),
        (161, "[DONE]"),
    ]);
    assert_eq!(r.status, RequestStatus::Success);
    assert_eq!(r.ttft_ms(), Some(120.0));
    assert_eq!(r.ttfo_ms(), Some(120.0));
    assert_eq!(r.itl_ms(), vec![20.0]);
    assert_eq!(r.last_token_ms(), Some(140.0));
    assert_eq!(r.e2e_ms(), Some(161.0));
    assert_eq!(r.output.text, "Hi there");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.token_event_count, 2);
    assert_eq!(r.chunk_count, 4);
}

#[test]
fn c01b_role_frame_with_null_content() {
    let r = run(&[
        (
            5,
            r#"{"id":"t1","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}"#,
        ),
        (
            120,
            r#"{"id":"t1","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
        ),
        (
            140,
            r#"{"id":"t1","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":null}]}"#,
        ),
        (
            160,
            r#"{"id":"t1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ),
        (161, "[DONE]"),
    ]);
    assert_eq!(r.ttft_ms(), Some(120.0));
    assert_eq!(r.itl_ms(), vec![20.0]);
    assert_eq!(r.last_token_ms(), Some(140.0));
    assert_eq!(r.e2e_ms(), Some(161.0));
    assert_eq!(r.output.text, "Hi there");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
}

#[test]
fn c01c_all_empty_stream_has_null_ttft_and_succeeds() {
    let r = run(&[
        (
            5,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        ),
        (20, r#"{"choices":[{"index":0,"delta":{"content":""}}]}"#),
        (
            30,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ),
        (31, "[DONE]"),
    ]);
    assert_eq!(r.status, RequestStatus::Success);
    assert_eq!(r.ttft_ns, None);
    assert_eq!(r.ttft_ms(), None);
    assert_eq!(r.ttfo_ns, None);
    assert_eq!(r.last_token_ns, None);
    assert!(r.itl_ns.is_empty());
    assert_eq!(r.tpot_ms(), None);
    assert_eq!(r.completion_tokens, None, "an estimate is not usage");
    assert_eq!(r.completion_tokens_estimate.map(|e| e.tokens), Some(0));
    assert_eq!(r.token_source(), Some(TokenSource::ClientEstimate));
    assert_eq!(r.e2e_ms(), Some(31.0));
    let json = serde_json::to_string(&r).unwrap();
    assert!(json.contains(r#""ttft_ns":null"#));
}

#[test]
fn c02_usage_only_final_chunk_with_empty_choices() {
    let r = run(&[
        (
            90,
            r#"{"id":"t2","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        ),
        (
            110,
            r#"{"id":"t2","choices":[{"index":0,"delta":{"content":"A"}}]}"#,
        ),
        (
            130,
            r#"{"id":"t2","choices":[{"index":0,"delta":{"content":"B"}}]}"#,
        ),
        (
            150,
            r#"{"id":"t2","choices":[{"index":0,"delta":{"content":"C"},"finish_reason":"stop"}],"usage":null}"#,
        ),
        (151, r#"{"id":"t2","choices":[],"usage":null}"#),
        (
            400,
            r#"{"id":"t2","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}}}"#,
        ),
        (401, "[DONE]"),
    ]);
    assert_eq!(r.status, RequestStatus::Success);
    assert_eq!(r.error, None);
    assert_eq!(r.ttft_ms(), Some(110.0));
    assert_eq!(r.itl_ms(), vec![20.0, 20.0]);
    assert_eq!(r.last_token_ms(), Some(150.0));
    assert_eq!(r.e2e_ms(), Some(401.0));
    assert_eq!(r.completion_tokens, Some(3));
    assert_eq!(r.token_source(), Some(TokenSource::Server));
    assert_eq!(r.prompt_tokens, Some(12));
    assert_eq!(r.total_tokens, Some(15));
    assert_eq!(r.cached_tokens, Some(8));
    assert_eq!(r.tpot_ms(), Some(20.0));
    assert_eq!(r.token_event_count, 3);
    assert_eq!(r.chunk_count, 4);
    assert_eq!(r.output.text, "ABC");
}

const C07_PREFIX: [(u64, &str); 3] = [
    (
        40,
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
    ),
    (
        200,
        r#"{"choices":[{"index":0,"delta":{"content":"Par"}}]}"#,
    ),
    (
        220,
        r#"{"choices":[{"index":0,"delta":{"content":"tial"}}]}"#,
    ),
];

#[test]
fn c07a_error_object_after_200_fails_the_request() {
    let mut ev = C07_PREFIX.to_vec();
    ev.push((230, r#"{"error":{"message":"generation failed (sanitized)","type":"InternalServerError","param":null,"code":500}}"#));
    ev.push((231, "[DONE]"));
    let r = run(&ev);
    assert_eq!(r.status, RequestStatus::Failed);
    assert_eq!(r.failure_code, Some(FailureCode::StreamError));
    assert_eq!(r.error.as_deref(), Some("generation failed (sanitized)"));
    assert_eq!(r.e2e_ms(), Some(230.0));
    assert!(!r.is_success());
}

#[test]
fn c07b_error_string_after_200_fails_the_request() {
    let mut ev = C07_PREFIX.to_vec();
    ev.push((
        230,
        r#"{"error":"Request failed during generation: out of memory","error_type":"generation"}"#,
    ));
    ev.push((231, "[DONE]"));
    let r = run(&ev);
    assert_eq!(r.status, RequestStatus::Failed);
    assert_eq!(r.failure_code, Some(FailureCode::StreamError));
    assert_eq!(
        r.error.as_deref(),
        Some("Request failed during generation: out of memory")
    );
}

#[test]
fn c07c_error_event_type_fails_the_request() {
    let mut ev: Vec<(u64, Option<&str>, &str)> =
        C07_PREFIX.iter().map(|&(t, d)| (t, None, d)).collect();
    ev.push((230, Some("error"), r#"{"message":"bad request"}"#));
    let r = run_typed(&ev);
    assert_eq!(r.status, RequestStatus::Failed);
    assert_eq!(r.failure_code, Some(FailureCode::StreamError));
    assert_eq!(r.error.as_deref(), Some("bad request"));
}

#[test]
fn c07d_stream_without_finish_or_done_is_incomplete() {
    // `error: {"code":500}` is an unknown SSE field: it dispatches nothing, then EOF.
    let r = run(&C07_PREFIX);
    assert_eq!(r.status, RequestStatus::Failed);
    assert_eq!(r.failure_code, Some(FailureCode::IncompleteStream));
}

#[test]
fn legacy_object_error_and_null_error_member() {
    let r = run(&[(10, r#"{"object":"error","message":"too long","code":400}"#)]);
    assert_eq!(r.failure_code, Some(FailureCode::StreamError));
    assert_eq!(r.error.as_deref(), Some("too long"));
    let ok = run(&[
        (
            10,
            r#"{"error":null,"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
        ),
        (11, "[DONE]"),
    ]);
    assert!(ok.is_success());
}

#[test]
fn c08_reasoning_tokens_before_visible_content() {
    let r = run(&[
        (
            40,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        ),
        (
            300,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"Check","content":null}}]}"#,
        ),
        (
            320,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":" 91=7*13"}}]}"#,
        ),
        (
            340,
            r#"{"choices":[{"index":0,"delta":{"reasoning":"."}}]}"#,
        ),
        (
            1000,
            r#"{"choices":[{"index":0,"delta":{"content":"No"}}]}"#,
        ),
        (
            1020,
            r#"{"choices":[{"index":0,"delta":{"content":"."},"finish_reason":"stop"}]}"#,
        ),
        (
            1021,
            r#"{"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":9,"total_tokens":29,"completion_tokens_details":{"reasoning_tokens":6}}}"#,
        ),
        (1022, "[DONE]"),
    ]);
    assert!(r.is_success());
    assert_eq!(r.ttft_ms(), Some(300.0));
    assert_eq!(r.ttfo_ms(), Some(1000.0));
    assert_eq!(r.reasoning_tokens, Some(6));
    assert_eq!(r.completion_tokens, Some(9));
    assert_eq!(r.token_source(), Some(TokenSource::Server));
    assert_eq!(r.output.text, "No.");
    assert_eq!(r.output.reasoning, "Check 91=7*13.");
    assert_eq!(r.itl_ms(), vec![20.0, 20.0, 660.0, 20.0]);
    assert_eq!(r.tpot_ms(), Some(90.0));
    assert_eq!(r.e2e_ms(), Some(1022.0));
}

#[test]
fn c08_reasoning_only_stream_has_ttft_but_no_ttfo() {
    let r = run(&[
        (
            40,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#,
        ),
        (
            300,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"Check","content":null}}]}"#,
        ),
        (
            320,
            r#"{"choices":[{"index":0,"delta":{"reasoning":" more"},"finish_reason":"length"}]}"#,
        ),
        (321, "[DONE]"),
    ]);
    assert!(r.is_success());
    assert_eq!(r.ttft_ms(), Some(300.0));
    assert_eq!(r.ttfo_ns, None);
    assert_eq!(r.ttfo_ms(), None);
    assert_eq!(r.output.text, "");
    assert_eq!(r.output.reasoning, "Check more");
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
}

#[test]
fn reasoning_sent_under_both_names_is_taken_once() {
    let r = run(&[
        (
            10,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"ab","reasoning":"ab"}}]}"#,
        ),
        (11, "[DONE]"),
    ]);
    assert_eq!(r.output.reasoning, "ab");
}

#[test]
fn c09a_interleaved_tool_calls_with_duplicate_index_entries() {
    let r = run(&[
        (
            200,
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}},{"index":0,"function":{"arguments":"{\"ci"}}]}}]}"#,
        ),
        (
            220,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":"}}]}}]}"#,
        ),
        (
            240,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Oslo\"}"}}]}}]}"#,
        ),
        (
            260,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"UTC\"}"}}]}}]}"#,
        ),
        (
            270,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ),
        (271, "[DONE]"),
    ]);
    assert!(r.is_success());
    assert_eq!(r.ttft_ms(), Some(200.0));
    assert_eq!(r.ttfo_ns, None);
    let calls = &r.output.tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!(r.tool_call_count, 2);
    assert_eq!(
        (
            calls[0].id.as_str(),
            calls[0].name.as_str(),
            calls[0].arguments.as_str()
        ),
        ("call_a", "get_weather", r#"{"city":"Oslo"}"#)
    );
    assert_eq!(
        (
            calls[1].id.as_str(),
            calls[1].name.as_str(),
            calls[1].arguments.as_str()
        ),
        ("call_b", "get_time", r#"{"tz":"UTC"}"#)
    );
    for c in calls {
        serde_json::from_str::<Value>(&c.arguments).expect("valid JSON arguments");
    }
    assert!(r.output.is_tool_call_turn());
}

fn check_two_write_file_calls(r: &RequestRecord) {
    assert!(r.is_success());
    let calls = &r.output.tool_calls;
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].id, "c1");
    assert_eq!(calls[1].id, "c2");
    assert_eq!(calls[0].name, "write_file");
    assert_eq!(calls[1].name, "write_file");
    assert_eq!(calls[0].arguments, r#"{"path":"a.txt"}"#);
    assert_eq!(calls[1].arguments, r#"{"path":"b.txt"}"#);
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert!(r.output.is_tool_call_turn());
}

#[test]
fn c09b_reused_index_with_new_id_starts_a_new_call() {
    let r = run(&[
        (
            300,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a.txt\"}"}}]}}]}"#,
        ),
        (
            310,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c2","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"b.txt\"}"}}]}}]}"#,
        ),
        (
            320,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ),
    ]);
    check_two_write_file_calls(&r);
    assert_eq!(r.e2e_ms(), Some(320.0));
}

#[test]
fn c09c_absent_index_is_not_zero() {
    let r = run(&[
        (
            300,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c1","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"a.txt\"}"}}]}}]}"#,
        ),
        (
            310,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c2","type":"function","function":{"name":"write_file","arguments":"{\"path\":\"b.txt\"}"}}]}}]}"#,
        ),
        (
            320,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ),
    ]);
    check_two_write_file_calls(&r);
}

#[test]
fn c09d_parameterless_tool_gets_empty_object_arguments() {
    let r = run(&[
        (
            100,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c9","type":"function","function":{"name":"switch_led_on"}}]}}]}"#,
        ),
        (
            110,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ),
        (111, "[DONE]"),
    ]);
    assert!(r.is_success());
    let calls = &r.output.tool_calls;
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "c9");
    assert_eq!(calls[0].name, "switch_led_on");
    assert_eq!(calls[0].arguments, "{}");
    assert_eq!(r.ttft_ms(), Some(100.0));
}

const C11_A: [(u64, &str); 3] = [
    (
        100,
        r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
    ),
    (130, r#"{"choices":[{"index":0,"delta":{"content":"lo"}}]}"#),
    (
        160,
        r#"{"choices":[{"index":0,"delta":{"content":" world"},"finish_reason":"stop"}]}"#,
    ),
];

#[test]
fn c11a_chunks_are_not_tokens() {
    let mut ev = C11_A.to_vec();
    ev.push((
        161,
        r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}"#,
    ));
    ev.push((162, "[DONE]"));
    let r = run(&ev);
    assert_eq!(r.completion_tokens, Some(2));
    assert_eq!(r.token_source(), Some(TokenSource::Server));
    assert_eq!(r.chunk_count, 3);
    assert_eq!(r.tpot_ms(), Some(60.0));
}

#[test]
fn c11a_without_usage_estimates_once_over_the_whole_text() {
    let mut ev = C11_A.to_vec();
    ev.push((162, "[DONE]"));
    let r = run(&ev);
    assert_eq!(r.output.text, "Hello world");
    assert_eq!(r.token_source(), Some(TokenSource::ClientEstimate));
    // ceil(11 bytes / 4) = 3 over the joined text; per chunk it would be 1 + 1 + 2 = 4.
    assert_eq!(r.completion_tokens, None, "an estimate is not usage");
    assert_eq!(r.completion_tokens_estimate.map(|e| e.tokens), Some(3));
    // A TPOT from the estimate says so; the server-only TPOT does not exist.
    assert_eq!(r.tpot(), Some((30.0, TokenSource::ClientEstimate)));
    assert_eq!(r.tpot_ms(), None);
    assert_eq!(r.prompt_tokens, None);
}

#[test]
fn c11b_multi_token_events_are_one_itl_sample_each() {
    let r = run(&[
        (
            100,
            r#"{"choices":[{"index":0,"delta":{"content":"one two three"}}]}"#,
        ),
        (
            110,
            r#"{"choices":[{"index":0,"delta":{"content":" four five"}}]}"#,
        ),
        (
            120,
            r#"{"choices":[{"index":0,"delta":{"content":" six seven"}}]}"#,
        ),
        (
            130,
            r#"{"choices":[{"index":0,"delta":{"content":" eight nine ten"},"finish_reason":"stop"}]}"#,
        ),
        (
            131,
            r#"{"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":10,"total_tokens":14}}"#,
        ),
        (132, "[DONE]"),
    ]);
    assert_eq!(r.itl_ms(), vec![10.0, 10.0, 10.0]);
    assert_eq!(r.token_event_count, 4);
    assert_eq!(ms(r.tpot_ms()), Some(3.333));
    let exact = r.tpot_ms().unwrap();
    assert!((exact - 30.0 / 9.0).abs() < 1e-9);
}

fn usage_stream(usage: &str) -> RequestRecord {
    let last = format!(r#"{{"choices":[],"usage":{usage}}}"#);
    let ev = [
        (
            10,
            r#"{"choices":[{"index":0,"delta":{"content":"some output"},"finish_reason":"stop"}]}"#,
        ),
        (11, last.as_str()),
        (12, "[DONE]"),
    ];
    run(&ev)
}

#[test]
fn c12b_null_prompt_tokens_details_means_unknown_cached_tokens() {
    let r = usage_stream(
        r#"{"prompt_tokens":1000,"completion_tokens":50,"total_tokens":1050,"prompt_tokens_details":null}"#,
    );
    assert_eq!(r.cached_tokens, None);
    assert_eq!(r.prompt_tokens, Some(1000));
    assert_eq!(r.completion_tokens, Some(50));
    assert!(
        serde_json::to_string(&r)
            .unwrap()
            .contains(r#""cached_tokens":null"#)
    );
}

#[test]
fn c12c_zero_cached_tokens_is_a_real_miss() {
    let r = usage_stream(
        r#"{"prompt_tokens":1000,"completion_tokens":50,"total_tokens":1050,"prompt_tokens_details":{"cached_tokens":0}}"#,
    );
    assert_eq!(r.cached_tokens, Some(0));
    assert!(
        serde_json::to_string(&r)
            .unwrap()
            .contains(r#""cached_tokens":0"#)
    );
}

#[test]
fn c12d_all_zero_usage_with_output_is_treated_as_missing() {
    let r = usage_stream(r#"{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}"#);
    assert!(r.is_success());
    assert_eq!(r.warnings, vec![RecordWarning::UsageAllZero]);
    assert_eq!(r.token_source(), Some(TokenSource::ClientEstimate));
    assert_eq!(r.completion_tokens, None, "an estimate is not usage");
    assert_eq!(r.completion_tokens_estimate.map(|e| e.tokens), Some(3)); // ceil(11 / 4)
    assert_eq!(r.prompt_tokens, None);
    assert_eq!(r.total_tokens, None);
}

#[test]
fn c12a_stream_without_usage_is_a_client_estimate() {
    let r = run(&[
        (
            10,
            r#"{"choices":[{"index":0,"delta":{"content":"abcdefgh"},"finish_reason":"stop"}]}"#,
        ),
        (12, "[DONE]"),
    ]);
    assert_eq!(r.token_source(), Some(TokenSource::ClientEstimate));
    assert_eq!(r.completion_tokens, None, "an estimate is not usage");
    assert_eq!(r.completion_tokens_estimate.map(|e| e.tokens), Some(2));
    assert_eq!(r.cached_tokens, None);
    assert!(r.warnings.is_empty());
}

#[test]
fn llama_cpp_timings_fill_prompt_and_cached_tokens() {
    // usage without prompt_tokens_details: cached from timings.cache_n.
    let r = usage_stream(
        r#"{"prompt_tokens":1824,"completion_tokens":4,"total_tokens":1828},"timings":{"cache_n":1823,"prompt_n":1}"#,
    );
    assert_eq!(r.prompt_tokens, Some(1824));
    assert_eq!(r.cached_tokens, Some(1823));
    // No usage at all: prompt = prompt_n + cache_n.
    let r = run(&[
        (
            10,
            r#"{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"length"}],"timings":{"cache_n":7,"prompt_n":1817,"prompt_ms":63.0}}"#,
        ),
        (11, "[DONE]"),
    ]);
    assert_eq!(r.prompt_tokens, Some(1824));
    assert_eq!(r.cached_tokens, Some(7));
    assert_eq!(r.token_source(), Some(TokenSource::ClientEstimate));
    // usage's own cached_tokens wins over timings.
    let r = usage_stream(
        r#"{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11,"prompt_tokens_details":{"cached_tokens":4}},"timings":{"cache_n":9,"prompt_n":1}"#,
    );
    assert_eq!(r.cached_tokens, Some(4));
}

#[test]
fn malformed_json_data_event_fails() {
    let r = run(&[
        (10, r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#),
        (20, r#"{"choices":[{"index":0,"delta":{"content":"b"#),
        (30, "[DONE]"),
    ]);
    assert_eq!(r.failure_code, Some(FailureCode::MalformedEvent));
    assert_eq!(r.e2e_ms(), Some(20.0));
    let r = run(&[(10, "42")]);
    assert_eq!(r.failure_code, Some(FailureCode::MalformedEvent));
}

#[test]
fn unknown_event_types_and_blank_data_are_ignored() {
    let r = run_typed(&[
        (10, Some("ping"), "{}"),
        (11, None, "   "),
        (
            12,
            None,
            r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
        ),
        (13, Some("message"), "[DONE]"),
    ]);
    assert!(r.is_success());
    assert_eq!(r.chunk_count, 1);
    assert_eq!(r.e2e_ms(), Some(13.0));
}

#[test]
fn completions_text_is_a_token_event() {
    let r = run(&[
        (
            10,
            r#"{"object":"text_completion","choices":[{"index":0,"text":"","finish_reason":null}]}"#,
        ),
        (
            20,
            r#"{"object":"text_completion","choices":[{"index":0,"text":"ab","finish_reason":null}]}"#,
        ),
        (
            25,
            r#"{"object":"text_completion","choices":[{"index":0,"text":"c","finish_reason":"length"}]}"#,
        ),
        (26, "[DONE]"),
    ]);
    assert_eq!(r.ttft_ms(), Some(20.0));
    assert_eq!(r.ttfo_ms(), Some(20.0));
    assert_eq!(r.output.text, "abc");
    assert_eq!(r.itl_ms(), vec![5.0]);
}

#[test]
fn finish_reason_then_clean_eof_succeeds_at_eof_time() {
    let mut acc = StreamAccumulator::new();
    acc.on_event(
        None,
        r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
        10 * MS,
    );
    let r = acc.finish(head(), 15 * MS, true);
    assert!(r.is_success());
    assert_eq!(r.e2e_ms(), Some(15.0));
}

#[test]
fn unclean_end_is_disconnect_and_external_failure_keeps_partial_timing() {
    let mut acc = StreamAccumulator::new();
    acc.on_event(
        None,
        r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
        10 * MS,
    );
    let r = acc.finish(head(), 15 * MS, false);
    assert_eq!(r.failure_code, Some(FailureCode::Disconnect));
    assert_eq!(r.ttft_ms(), Some(10.0));

    let mut acc = StreamAccumulator::new();
    acc.on_event(
        None,
        r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
        10 * MS,
    );
    acc.fail(FailureCode::IdleTimeout, "no bytes for 20000 ms");
    acc.fail(FailureCode::Timeout, "later failures do not overwrite");
    let r = acc.finish(head(), 30 * MS, false);
    assert_eq!(r.failure_code, Some(FailureCode::IdleTimeout));
    assert_eq!(r.error.as_deref(), Some("no bytes for 20000 ms"));
    assert_eq!(r.e2e_ms(), Some(30.0));
}

#[test]
fn non_streamed_body_is_parsed() {
    let mut acc = StreamAccumulator::new();
    let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello","reasoning_content":"think","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":7,"completion_tokens":5,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0}}}"#;
    assert_eq!(acc.on_body(body, 50 * MS), Flow::Done);
    let mut h = head();
    h.stream = false;
    let r = acc.finish(h, 50 * MS, true);
    assert!(r.is_success());
    assert_eq!(r.ttft_ns, None);
    assert_eq!(r.e2e_ms(), Some(50.0));
    assert_eq!(r.output.text, "Hello");
    assert_eq!(r.output.reasoning, "think");
    assert_eq!(r.output.tool_calls[0].arguments, r#"{"a":1}"#);
    assert_eq!(r.completion_tokens, Some(5));
    assert_eq!(r.cached_tokens, Some(0));
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));

    let mut acc = StreamAccumulator::new();
    assert_eq!(acc.on_body("<html>", MS), Flow::Failed);
    assert_eq!(
        acc.finish(head(), MS, true).failure_code,
        Some(FailureCode::InvalidResponse)
    );
    let mut acc = StreamAccumulator::new();
    assert_eq!(
        acc.on_body(r#"{"error":{"message":"nope"}}"#, MS),
        Flow::Failed
    );
    let r = acc.finish(head(), MS, true);
    assert_eq!(r.failure_code, Some(FailureCode::StreamError));
    assert_eq!(r.error.as_deref(), Some("nope"));
}

/// The response's `model` is recorded (the first one named; OTLP's
/// `gen_ai.response.model`), and an implausible one (control characters, too long) is left
/// out rather than kept.
#[test]
fn the_response_model_is_the_first_one_named() {
    let r = run(&[
        (
            5,
            r#"{"id":"t1","model":"served-7b","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#,
        ),
        (
            9,
            r#"{"id":"t1","model":"other","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ),
        (10, "[DONE]"),
    ]);
    assert_eq!(r.response_model.as_deref(), Some("served-7b"));
    let long = "m".repeat(300);
    let bad = run(&[
        (
            5,
            &format!(
                r#"{{"model":"{long}","choices":[{{"index":0,"delta":{{"content":"Hi"}},"finish_reason":"stop"}}]}}"#
            ),
        ),
        (6, "[DONE]"),
    ]);
    assert_eq!(bad.response_model, None);
    let none = run(&[
        (
            5,
            r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
        ),
        (6, "[DONE]"),
    ]);
    assert_eq!(none.response_model, None);
    // Not a string: the lenient reading leaves it out and the response still counts.
    let odd = run(&[
        (
            5,
            r#"{"model":5,"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":"stop"}]}"#,
        ),
        (6, "[DONE]"),
    ]);
    assert_eq!(odd.response_model, None);
    assert_eq!(odd.failure_code, None);
}

// ---- Several choices ----------------------------------------------------

fn head_n(n: u32) -> RequestHead {
    RequestHead {
        choices_requested: Some(n),
        ..head()
    }
}

/// n = 2 interleaved by `choices[].index`, vLLM's shape: one choice per chunk, role chunks
/// first, each choice finishing on its own, then usage over both.
const N2_INTERLEAVED: [(u64, &str); 10] = [
    (
        5,
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
    ),
    (
        6,
        r#"{"choices":[{"index":1,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#,
    ),
    (
        100,
        r#"{"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}"#,
    ),
    (
        110,
        r#"{"choices":[{"index":1,"delta":{"content":"Bon"},"finish_reason":null}]}"#,
    ),
    (
        130,
        r#"{"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}"#,
    ),
    (
        150,
        r#"{"choices":[{"index":1,"delta":{"content":"jour"},"finish_reason":null}]}"#,
    ),
    (
        160,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
    ),
    (
        190,
        r#"{"choices":[{"index":1,"delta":{"content":"!"},"finish_reason":"length"}]}"#,
    ),
    (
        191,
        r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":5,"total_tokens":10}}"#,
    ),
    (192, "[DONE]"),
];

fn run_n(events: &[(u64, &str)], n: u32) -> RequestRecord {
    let typed: Vec<_> = events.iter().map(|&(ms, d)| (ms, None, d)).collect();
    run_typed_with(&typed, head_n(n))
}

#[test]
fn n2_interleaved_choices_are_kept_apart_and_choice_0_is_the_output() {
    let r = run_n(&N2_INTERLEAVED, 2);
    assert!(r.is_success());
    // The graded text is choice 0's alone (it used to be "HelBonlojour!").
    assert_eq!(r.output.text, "Hello");
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
    assert_eq!(r.choices_requested, Some(2));
    assert_eq!(r.choices.len(), 2);
    let (c0, c1) = (&r.choices[0], &r.choices[1]);
    assert_eq!((c0.index, c1.index), (0, 1));
    assert_eq!(c0.output.text, "Hello");
    assert_eq!(c1.output.text, "Bonjour!");
    assert_eq!(c0.finish_reason.as_deref(), Some("stop"));
    assert_eq!(c1.finish_reason.as_deref(), Some("length"));
    // Per-choice TTFT and ITL; request TTFT is the first token event of any choice.
    assert_eq!(c0.ttft_ms(0), Some(100.0));
    assert_eq!(c1.ttft_ms(0), Some(110.0));
    assert_eq!(c0.itl_ms(), vec![30.0]);
    assert_eq!(c1.itl_ms(), vec![40.0, 40.0]);
    assert_eq!((c0.token_event_count, c1.token_event_count), (2, 3));
    assert_eq!(r.ttft_ms(), Some(100.0));
    assert_eq!(r.ttfo_ms(), Some(100.0));
    assert_eq!(r.last_token_ms(), Some(190.0));
    assert_eq!(r.token_event_count, 5);
    // The request's ITL samples are each choice's gaps, never gaps across choices.
    assert_eq!(r.itl_ms(), vec![30.0, 40.0, 40.0]);
    assert_eq!(r.completion_tokens, Some(5));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn n2_choices_in_one_chunk_and_per_choice_tool_calls() {
    let r = run_n(
        &[
            (
                10,
                r#"{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"tool_calls":[{"index":0,"id":"t1","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            ),
            (
                20,
                r#"{"choices":[{"index":1,"delta":{"tool_calls":[{"index":0,"function":{"arguments":""}}]},"finish_reason":"tool_calls"},{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}]}"#,
            ),
            (21, "[DONE]"),
        ],
        2,
    );
    assert!(r.is_success());
    assert_eq!(r.output.text, "ab");
    assert!(
        r.output.tool_calls.is_empty(),
        "choice 1's call is not choice 0's"
    );
    assert_eq!(r.tool_call_count, 0);
    assert_eq!(r.choices[1].output.tool_calls.len(), 1);
    assert_eq!(r.choices[1].output.tool_calls[0].name, "f");
    assert_eq!(r.choices[1].tool_call_count, 1);
    // Two events, each a token event of both choices.
    assert_eq!(r.token_event_count, 2);
    assert_eq!(r.itl_ms(), vec![10.0, 10.0]);
    // Without usage the estimate covers every choice: "ab" + "f" + "{}" = 5 bytes.
    assert_eq!(r.token_source(), Some(TokenSource::ClientEstimate));
    assert_eq!(r.completion_tokens, None);
    assert_eq!(r.completion_tokens_estimate.map(|e| e.tokens), Some(2));
}

#[test]
fn fewer_choices_than_requested_warns() {
    let r = run_n(&C11_A, 2);
    assert!(r.is_success());
    assert_eq!(r.warnings, vec![RecordWarning::ChoiceCountMismatch]);
    assert_eq!(r.choices.len(), 1, "the list says what came back");
    assert_eq!(r.output.text, "Hello world");
}

#[test]
fn more_choices_than_requested_warns_and_grades_choice_0() {
    let r = run(&N2_INTERLEAVED);
    assert!(r.is_success());
    assert_eq!(r.warnings, vec![RecordWarning::ChoiceCountMismatch]);
    assert_eq!(r.output.text, "Hello");
    assert_eq!(r.choices.len(), 2);
}

#[test]
fn one_choice_requested_and_received_lists_no_choices() {
    let r = run(&C11_A);
    assert!(r.choices.is_empty());
    assert_eq!(r.choices_requested, None);
    let json = serde_json::to_string(&r).unwrap();
    assert!(!json.contains("\"choices\""), "{json}");
}

#[test]
fn choice_without_index_takes_its_position_and_lowest_index_is_primary() {
    let r = run_n(
        &[
            (
                10,
                r#"{"choices":[{"delta":{"content":"x"}},{"delta":{"content":"y"}}]}"#,
            ),
            (
                20,
                r#"{"choices":[{"index":0,"delta":{"content":"x"}},{"index":1,"delta":{"content":"y"},"finish_reason":"stop"}]}"#,
            ),
            (21, "[DONE]"),
        ],
        2,
    );
    assert_eq!(r.output.text, "xx");
    assert_eq!(r.choices[1].output.text, "yy");
    let r = run_n(
        &[
            (
                10,
                r#"{"choices":[{"index":3,"delta":{"content":"late"}},{"index":2,"delta":{"content":"first"}}]}"#,
            ),
            (11, "[DONE]"),
        ],
        2,
    );
    assert_eq!(
        r.output.text, "first",
        "no choice 0: the lowest index is the output"
    );
    assert_eq!(r.choices[0].index, 2);
}

#[test]
fn a_failed_request_with_fewer_choices_does_not_warn() {
    let r = run_n(
        &[
            (10, r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#),
            (20, r#"{"error":{"message":"boom"}}"#),
        ],
        2,
    );
    assert_eq!(r.failure_code, Some(FailureCode::StreamError));
    assert!(r.warnings.is_empty());
}

#[test]
fn non_streamed_body_with_two_choices() {
    let mut acc = StreamAccumulator::new();
    let body = r#"{"choices":[{"index":1,"message":{"role":"assistant","content":"second"},"finish_reason":"length"},{"index":0,"message":{"role":"assistant","content":"first","tool_calls":[{"id":"c","function":{"name":"g","arguments":{"k":1}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#;
    assert_eq!(acc.on_body(body, 9 * MS), Flow::Done);
    let r = acc.finish(head_n(2), 9 * MS, true);
    assert!(r.is_success());
    assert_eq!(r.output.text, "first");
    assert_eq!(r.output.tool_calls[0].arguments, r#"{"k":1}"#);
    assert_eq!(r.finish_reason.as_deref(), Some("tool_calls"));
    assert_eq!(r.choices[1].output.text, "second");
    assert_eq!(r.completion_tokens, Some(4));
    assert!(r.warnings.is_empty());
}

// ---- The typed view and the lenient reading agree on odd shapes ---------------

#[test]
fn odd_shapes_read_as_before() {
    // Each of these fails the strict typed view (or is an error payload) and is read
    // leniently; run_typed asserts both readings give one record.
    let cases: &[&str] = &[
        r#"{"choices":[{"index":0,"delta":{"content":["parts"]}}]}"#,
        r#"{"choices":[{"index":"0","delta":{"content":"a"}}]}"#,
        r#"{"choices":[{"index":-1,"delta":{"content":"a"}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":7}]}"#,
        r#"{"choices":[{"index":0,"delta":["content","a"]}]}"#,
        r#"{"choices":[{"index":0,"delta":null,"text":"t"}]}"#,
        r#"{"choices":"none"}"#,
        r#"{"choices":[1,2]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[1,{"index":0,"id":"x","function":{"name":"n","arguments":{"b":2,"a":1}}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":"f"}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[]}}]}"#,
        r#"{"choices":[],"usage":[12,3,15]}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1.5,"completion_tokens":2,"total_tokens":"3"}}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens_details":5}}"#,
        r#"{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":null}}}"#,
        r#"{"choices":[],"timings":{"cache_n":4.0,"prompt_n":8}}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"choices":[{"index":0,"delta":{"content":"b"}}]}"#,
        r#"{"object":5,"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
        r#"{"error":null,"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
        r#"{"object":"error","message":"legacy"}"#,
        r#"{"error":{"code":5}}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"a\nb\u00e9\"q"}}]}"#,
    ];
    for data in cases {
        let r = run(&[
            (10, data),
            (
                20,
                r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            ),
        ]);
        // A sanity check that the case was read at all: no malformed_event.
        assert_ne!(r.failure_code, Some(FailureCode::MalformedEvent), "{data}");
    }
    let r = run(&[(10, cases[8]), (20, "[DONE]")]);
    assert_eq!(
        r.output.tool_calls[0].arguments, r#"{"b":2,"a":1}"#,
        "an object argument is serialized as sent"
    );
    let r = run(&[(10, cases[16]), (20, "[DONE]")]);
    assert_eq!(r.output.text, "b", "a duplicate key: the last one");
    let r = run(&[(10, cases[21]), (20, "[DONE]")]);
    assert_eq!(r.output.text, "a\nbé\"q");
}

mod typed_vs_lenient {
    use super::*;
    use proptest::prelude::*;

    /// A JSON value of any type the tests care about.
    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("null".to_string()),
            Just("\"\"".to_string()),
            "[a-z\\\\n\"é]{1,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            (0u64..4).prop_map(|n| n.to_string()),
            Just("-1".to_string()),
            Just("2.5".to_string()),
            Just("true".to_string()),
            Just("[]".to_string()),
            Just("{}".to_string()),
        ]
    }

    /// Mostly a string (or null, or empty), sometimes any other type: most chunks then
    /// pass the typed view and some fall back to the lenient reading.
    fn string() -> impl Strategy<Value = String> {
        prop_oneof![
            2 => Just("null".to_string()),
            1 => Just("\"\"".to_string()),
            8 => "[a-z\\\\n\"é]{1,6}".prop_map(|s| serde_json::to_string(&s).unwrap()),
            1 => scalar(),
        ]
    }

    /// Mostly a small index, sometimes any other type.
    fn number() -> impl Strategy<Value = String> {
        prop_oneof![
            10 => (0u64..3).prop_map(|n| n.to_string()),
            1 => Just("null".to_string()),
            1 => scalar(),
        ]
    }

    fn obj(fields: Vec<(&'static str, String)>, keep: Vec<bool>) -> String {
        let body: Vec<String> = fields
            .into_iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|((k, v), _)| format!("\"{k}\":{v}"))
            .collect();
        format!("{{{}}}", body.join(","))
    }

    fn tool_call() -> impl Strategy<Value = String> {
        (
            number(),
            string(),
            string(),
            string(),
            proptest::collection::vec(any::<bool>(), 3),
        )
            .prop_map(|(index, id, name, args, keep)| {
                let function = format!("{{\"name\":{name},\"arguments\":{args}}}");
                obj(
                    vec![("index", index), ("id", id), ("function", function)],
                    keep,
                )
            })
    }

    fn choice() -> impl Strategy<Value = String> {
        (
            (number(), string(), string(), string()),
            string(),
            proptest::collection::vec(tool_call(), 0..3),
            string(),
            proptest::collection::vec(any::<bool>(), 8),
        )
            .prop_map(
                |((index, content, reasoning_content, reasoning), fr, calls, text, keep)| {
                    let delta = obj(
                        vec![
                            ("content", content),
                            ("reasoning_content", reasoning_content),
                            ("reasoning", reasoning),
                            ("tool_calls", format!("[{}]", calls.join(","))),
                        ],
                        keep[..4].to_vec(),
                    );
                    obj(
                        vec![
                            ("index", index),
                            ("delta", delta),
                            ("finish_reason", fr),
                            ("text", text),
                        ],
                        keep[4..].to_vec(),
                    )
                },
            )
    }

    pub(super) fn chunk() -> impl Strategy<Value = String> {
        (
            proptest::collection::vec(choice(), 0..3),
            number(),
            number(),
            number(),
            proptest::collection::vec(any::<bool>(), 4),
        )
            .prop_map(|(choices, pt, ct, cached, keep)| {
                let usage = format!(
                    "{{\"prompt_tokens\":{pt},\"completion_tokens\":{ct},\"total_tokens\":{pt},\"prompt_tokens_details\":{{\"cached_tokens\":{cached}}}}}"
                );
                let timings = format!("{{\"cache_n\":{cached},\"prompt_n\":{pt}}}");
                obj(
                    vec![
                        ("choices", format!("[{}]", choices.join(","))),
                        ("usage", usage),
                        ("timings", timings),
                        ("object", "\"chat.completion.chunk\"".to_string()),
                    ],
                    keep,
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// Any stream of chunks with fields of expected and unexpected types gives one
        /// record through the typed view and through the lenient reading (run_typed_with
        /// asserts it), for n = 1 and n = 2.
        #[test]
        fn typed_and_lenient_readings_agree(chunks in proptest::collection::vec(chunk(), 1..6), n in 1u32..3) {
            let _ = run_typed_with(&spaced(&chunks), head_n(n));
        }
    }

    /// How many of `total` chunks from [`chunk`] (a fixed seed) `pass`.
    pub(super) fn generated_passing(total: usize, pass: impl Fn(&str) -> bool) -> usize {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = chunk();
        (0..total)
            .filter(|_| pass(&strategy.new_tree(&mut runner).unwrap().current()))
            .count()
    }

    /// The generator is a fair test of the typed view only if most of its chunks pass it.
    #[test]
    fn most_generated_chunks_pass_the_typed_view() {
        let total = 400;
        let typed = generated_passing(total, |c| ChunkView::parse(c).is_some());
        assert!(
            typed * 4 >= total,
            "only {typed} of {total} chunks pass the typed view"
        );
    }
}

/// The one-pass reader ([`scan::scan_chunk`]) is a fast path of the serde reading
/// ([`ChunkView::parse`]): wherever it gives a view, it is the serde reading's view.
mod scan_vs_serde {
    use super::scan::scan_chunk;
    use super::typed_vs_lenient::{chunk, generated_passing};
    use super::*;
    use proptest::prelude::*;

    /// The scanner's answer, checked against serde's; true when the scanner read it.
    fn agree(data: &str) -> bool {
        let fast = scan_chunk(data);
        let read = fast.is_some();
        if let Some(view) = fast {
            assert_eq!(Some(view), ChunkView::parse(data), "on {data:?}");
        }
        read
    }

    /// vLLM's, SGLang's, llama.cpp's and OpenAI's common chunk shapes: all read by the
    /// scanner (the fast path is taken), and read as serde reads them.
    #[test]
    fn common_shapes_take_the_fast_path() {
        let shapes = [
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1733000000,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"t5 "},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"length","stop_reason":null}]}"#,
            // SGLang: nulls for every absent member.
            r#"{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":null,"content":"Hi","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}"#,
            // llama.cpp
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" there"}}],"created":1,"id":"chatcmpl-x","model":"gpt-3.5-turbo","system_fingerprint":"b1-abc","object":"chat.completion.chunk"}"#,
            // Escapes in content, decoded: newline, quote, backslash, BMP and astral.
            r#"{"choices":[{"index":0,"delta":{"content":"a\n\"b\\ \u00e9 \ud83d\ude00 \/"}}]}"#,
            // Reasoning under both names, whitespace everywhere, an error member that is null.
            " { \"error\" : null , \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"reasoning_content\" : \"r\" , \"reasoning\" : \"r\" } } ] } ",
            // Logprobs (skipped): nested arrays of objects with `content` keys, floats.
            r#"{"choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[{"token":"x","logprob":-1.25e-05,"bytes":[120],"top_logprobs":[{"token":"\n","logprob":-0.5,"bytes":[10]}]}]},"finish_reason":null}]}"#,
            // n > 1, completions text, empty tool_calls, no index.
            r#"{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b","tool_calls":[]}},{"text":"c"}]}"#,
            r#"{"choices":[]}"#,
            r#"{}"#,
        ];
        for s in shapes {
            assert!(agree(s), "not read by the scanner: {s}");
        }
        let view = scan_chunk(shapes[5]).unwrap();
        let content = &view.choices.unwrap().first.unwrap().delta.unwrap().content;
        assert_eq!(content.as_ref().unwrap().0, "a\n\"b\\ é 😀 /");
        // Borrowed when there is no escape.
        let view = scan_chunk(shapes[1]).unwrap();
        let delta = view.choices.unwrap().first.unwrap().delta.unwrap();
        assert!(matches!(delta.content.unwrap().0, Cow::Borrowed("t5 ")));
    }

    /// Shapes the scanner leaves to serde (and cases where serde refuses the typed view):
    /// never a different answer.
    #[test]
    fn adversarial_chunks_agree_or_fall_back() {
        let fall_back = [
            // Read by serde only: usage, timings, an error, tool calls.
            r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#,
            r#"{"choices":[],"timings":{"cache_n":1,"prompt_n":2}}"#,
            r#"{"error":{"message":"boom"}}"#,
            r#"{"error":"boom"}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"a\""}}]}}]}"#,
            // An escaped key (could name a read member).
            r#"{"choices":[{"index":0,"delta":{"cont\u0065nt":"x"}}]}"#,
            // Duplicates of read members.
            r#"{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}]}"#,
            r#"{"model":"a","model":"b"}"#,
            r#"{"usage":null,"usage":null}"#,
            // Unexpected types.
            r#"{"choices":[{"index":-1,"delta":{"content":"x"}}]}"#,
            r#"{"choices":[{"index":-0,"delta":{"content":"x"}}]}"#,
            r#"{"choices":[{"index":1.0,"delta":{"content":"x"}}]}"#,
            r#"{"choices":[{"index":1e0,"delta":{"content":"x"}}]}"#,
            r#"{"choices":[{"index":18446744073709551616}]}"#,
            r#"{"choices":[{"index":01}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":5}}]}"#,
            r#"{"choices":[{"index":0,"delta":[]}]}"#,
            r#"{"choices":[null]}"#,
            r#"{"choices":{}}"#,
            r#"{"model":true}"#,
            // Escapes serde refuses or that need care.
            r#"{"choices":[{"delta":{"content":"\ud800"}}]}"#,
            r#"{"choices":[{"delta":{"content":"\udc00"}}]}"#,
            r#"{"choices":[{"delta":{"content":"\ud800\u0041"}}]}"#,
            r#"{"choices":[{"delta":{"content":"\x"}}]}"#,
            r#"{"choices":[{"delta":{"content":"\u12"}}]}"#,
            r#"{"id":"\ud800","choices":[]}"#,
            "{\"choices\":[{\"delta\":{\"content\":\"a\tb\"}}]}",
            // Not JSON, or more than one value.
            r#"{"choices":[],}"#,
            r#"{"choices":[1,]}"#,
            r#"{"choices":[]} x"#,
            r#"{"choices":[]}{}"#,
            r#"{"a":nul}"#,
            r#"{"a":-}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":+1}"#,
            r#"{"a":1e}"#,
            r#"{"a" 1}"#,
            r#"{a:1}"#,
            r#"{"choices":["#,
            r#"{"#,
        ];
        for s in fall_back {
            assert!(!agree(s), "the scanner should leave {s} to serde");
        }
        // Nesting: within the scanner's depth it reads; past it, serde decides.
        let nested = |d: usize| {
            format!(
                "{{\"x\":{}{},\"choices\":[]}}",
                "[".repeat(d),
                "]".repeat(d)
            )
        };
        assert!(agree(&nested(10)));
        assert!(!agree(&nested(200)));
        // Skipped values of every kind, serde's numbers included.
        assert!(agree(
            r#"{"a":[true,false,null,-0,0.5,1E+9,-2.5e-3,123456789012345678901234567890,1e999,"\"\\\/\b\f\n\r\t\u0000\ud83d\ude00",{"k":{}}],"choices":[]}"#
        ));
    }

    /// One byte of a chunk changed, dropped or doubled (from JSON's structural characters,
    /// escapes, digits and letters): a corrupt chunk is never read differently.
    fn mutated() -> impl Strategy<Value = String> {
        let pieces = prop_oneof![
            Just("{"),
            Just("}"),
            Just("["),
            Just("]"),
            Just("\""),
            Just(","),
            Just(":"),
            Just("\\"),
            Just("\\u"),
            Just("\\ud83d"),
            Just("\\ude00"),
            Just("\\ud800"),
            Just("0"),
            Just("-"),
            Just("."),
            Just("e"),
            Just(" "),
            Just("\t"),
            Just("\u{1}"),
            Just("n"),
            Just("null"),
            Just("é"),
            Just("content"),
            Just("index"),
            Just(""),
        ];
        (
            chunk(),
            proptest::collection::vec((any::<prop::sample::Index>(), pieces, 0u8..3), 1..4),
        )
            .prop_map(|(mut c, edits)| {
                for (at, piece, kind) in edits {
                    let mut pos = at.index(c.len() + 1);
                    while !c.is_char_boundary(pos) {
                        pos -= 1;
                    }
                    match kind {
                        0 => c.insert_str(pos, piece),
                        1 => {
                            let end = c[pos..]
                                .chars()
                                .next()
                                .map_or(pos, |ch| pos + ch.len_utf8());
                            c.replace_range(pos..end, piece);
                        }
                        _ => {
                            let end = c[pos..]
                                .chars()
                                .next()
                                .map_or(pos, |ch| pos + ch.len_utf8());
                            c.replace_range(pos..end, "");
                        }
                    }
                }
                c
            })
    }

    /// Raw JSON text of any value, with escapes serde reads and ones it refuses.
    fn raw_value() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            Just("null".to_string()),
            Just("true".to_string()),
            Just("-0.5e-7".to_string()),
            Just("42".to_string()),
            Just(r#""plain""#.to_string()),
            Just(r#""\n\"\\\u00e9""#.to_string()),
            Just(r#""\ud83d\ude00""#.to_string()),
            Just(r#""\ud83d""#.to_string()),
            Just(r#""\q""#.to_string()),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4)
                    .prop_map(|v| format!("[{}]", v.join(","))),
                proptest::collection::vec(("[a-z]{1,3}|content|index|delta", inner), 0..4)
                    .prop_map(|v| {
                        let m: Vec<String> =
                            v.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                        format!("{{{}}}", m.join(","))
                    }),
            ]
        })
    }

    /// The generated chunks are a fair test of the scanner only if it reads many of them.
    #[test]
    fn many_generated_chunks_are_read_by_the_scanner() {
        let total = 400;
        let read = generated_passing(total, |c| scan_chunk(c).is_some());
        assert!(
            read * 10 >= total,
            "only {read} of {total} chunks read by the scanner"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(600))]
        #[test]
        fn scanner_agrees_on_generated_chunks(c in chunk()) {
            agree(&c);
        }

        #[test]
        fn scanner_agrees_on_corrupted_chunks(c in mutated()) {
            agree(&c);
        }

        /// Unknown members of any shape, at the top, in a choice and in a delta, and
        /// values of any shape in the members read.
        #[test]
        fn scanner_agrees_with_any_values(a in raw_value(), b in raw_value(), c in raw_value(), d in raw_value()) {
            agree(&format!(r#"{{"x":{a},"choices":[{{"index":0,"y":{b},"delta":{{"content":"t","z":{c}}}}}]}}"#));
            agree(&format!(r#"{{"model":{a},"choices":[{{"index":{b},"finish_reason":{c},"delta":{{"content":{d}}}}}]}}"#));
            agree(&format!(r#"{{"choices":{a},"object":{b}}}"#));
        }
    }
}

/// The content memo ([`scan::ContentMemo`]): a chunk of the last content chunk's shape is
/// read without a scan, and the record is the one the scan (and the lenient reading) give.
mod content_memo {
    use super::scan::{ContentMemo, ContentMemos, scan_chunk};
    use super::typed_vs_lenient::chunk;
    use super::*;
    use proptest::prelude::*;

    const VLLM: (&str, &str) = (
        r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":""#,
        r#""},"logprobs":null,"finish_reason":null}]}"#,
    );

    fn vllm(text: &str) -> String {
        format!("{}{text}{}", VLLM.0, VLLM.1)
    }

    fn learned(data: &str) -> ContentMemo {
        let mut memo = ContentMemo::default();
        memo.learn(data, &scan_chunk(data).expect("scanned"));
        memo
    }

    #[test]
    fn the_same_shape_is_read_without_a_scan() {
        let memo = learned(&vllm("t1 "));
        let next = vllm("a longer token, é and 😀");
        assert_eq!(
            memo.content(&next),
            Some((Some(0), "a longer token, é and 😀"))
        );
        assert_eq!(memo.content(&vllm("")), Some((Some(0), "")));
    }

    #[test]
    fn anything_else_is_not() {
        let memo = learned(&vllm("t1 "));
        let misses = [
            // An escape in the text (decoded by the scan).
            vllm(r#"a\"b"#),
            vllm(r"a\nb"),
            // Another shape around the text.
            vllm("x").replace("chatcmpl-1", "chatcmpl-2"),
            vllm("x").replace(r#""finish_reason":null"#, r#""finish_reason":"stop""#),
            vllm("x").replace("\"content\":\"x\"", "\"content\":\"x\",\"content\":\"y\""),
            format!("{} ", vllm("x")),
            vllm("x")[..40].to_string(),
            // The text followed by more than the memo's tail.
            format!(
                "{}{}",
                VLLM.0, r#"x","reasoning":"y"},"logprobs":null,"finish_reason":null}]}"#
            ),
        ];
        for m in &misses {
            assert_eq!(memo.content(m), None, "{m}");
        }
        // Nothing learned: nothing read.
        assert_eq!(ContentMemo::default().content(&vllm("x")), None);
    }

    #[test]
    fn only_plain_one_choice_content_chunks_are_learned() {
        let not_learned = [
            vllm(r"a\nb"),
            vllm("x").replace(r#""finish_reason":null"#, r#""finish_reason":"stop""#),
            r#"{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}"#.to_string(),
            r#"{"choices":[{"index":0,"delta":{"content":"a","reasoning_content":"r"}}]}"#.to_string(),
            r#"{"choices":[{"index":0,"delta":{"content":"a","tool_calls":[]}}]}"#.to_string(),
            r#"{"choices":[{"index":0,"text":"a","delta":{"content":"a"}}]}"#.to_string(),
            r#"{"choices":[{"index":0,"delta":{}}]}"#.to_string(),
            r#"{"choices":[]}"#.to_string(),
        ];
        for data in &not_learned {
            assert_eq!(learned(data).content(data), None, "{data}");
        }
        // llama.cpp's shape (content first, members after it) and a role chunk are.
        let llama = r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" there"}}],"created":1,"id":"chatcmpl-x","model":"gpt-3.5-turbo","object":"chat.completion.chunk"}"#;
        assert_eq!(learned(llama).content(llama), Some((Some(0), " there")));
        let role = r#"{"choices":[{"index":2,"delta":{"role":"assistant","content":""}}]}"#;
        assert_eq!(learned(role).content(role), Some((Some(2), "")));
    }

    /// Any JSON string as a content text, in one of the common shapes.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => "[a-z ]{0,12}",
            2 => "[a-z\\\\\n\"é😀\u{1}/]{0,8}",
            1 => Just(String::new()),
        ]
        .prop_map(|s| serde_json::to_string(&s).unwrap())
    }

    fn shaped(shape: usize, index: u64, text: &str) -> String {
        shaped_with(shape, index, text, "null", "")
    }

    /// Shape 0 takes a `finish_reason` and more `delta` members after the content: the
    /// bytes after the text differ while the bytes before it do not.
    fn shaped_with(shape: usize, index: u64, text: &str, finish: &str, more: &str) -> String {
        match shape {
            0 => format!(
                r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":0,"model":"m","choices":[{{"index":{index},"delta":{{"content":{text}{more}}},"logprobs":null,"finish_reason":{finish}}}]}}"#
            ),
            1 => format!(
                r#"{{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":{index},"delta":{{"role":null,"content":{text},"reasoning_content":null,"tool_calls":null}},"logprobs":null,"finish_reason":null,"matched_stop":null}}],"usage":null}}"#
            ),
            _ => format!(
                r#"{{"choices":[{{"finish_reason":null,"index":{index},"delta":{{"content":{text}}}}}],"created":1,"id":"chatcmpl-x","model":"{}","object":"chat.completion.chunk"}}"#,
                "m".repeat(index as usize * 200)
            ),
        }
    }

    /// One event of a stream: mostly a content chunk of a few shapes, choices 0 and 1
    /// (the second shape's `model` too long to keep), sometimes any generated chunk.
    fn event() -> impl Strategy<Value = String> {
        prop_oneof![
            8 => (0usize..3, 0u64..2, text()).prop_map(|(s, i, t)| shaped(s, i, &t)),
            2 => (
                0u64..2,
                text(),
                prop_oneof![Just("null"), Just("\"length\""), Just("3")],
                prop_oneof![Just(""), Just(r#","reasoning":"r""#), Just(r#","x":1"#), Just(r#","content":"y""#)],
            )
                .prop_map(|(i, t, f, m)| shaped_with(0, i, &t, f, m)),
            1 => chunk(),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Streams where most chunks repeat the last one's shape give the record of the
        /// lenient reading (`run_typed_with` asserts it), for n = 1 and n = 2.
        #[test]
        fn memo_reads_agree_with_the_lenient_reading(
            events in proptest::collection::vec(event(), 1..24),
            n in 1u32..3,
        ) {
            let _ = run_typed_with(&spaced(&events), head_n(n));
        }

        /// Wherever the memos read a chunk, the scan reads the same text and index from it
        /// (each chunk the memos do not read is learned, as the accumulator does).
        #[test]
        fn memo_reads_what_the_scan_reads(events in proptest::collection::vec(event(), 2..12)) {
            let mut memos = ContentMemos::default();
            for data in &events {
                match memos.content(data) {
                    Some((index, text)) => {
                        let view = scan_chunk(data).expect("scanned");
                        let c = view.choices.unwrap().first.unwrap();
                        prop_assert_eq!(c.index, index);
                        let content = c.delta.unwrap().content.unwrap();
                        prop_assert_eq!(content.0.as_ref(), text);
                    }
                    None => {
                        if let Some(view) = scan_chunk(data) {
                            memos.learn(data, &view);
                        }
                    }
                }
            }
        }
    }

    /// n = 2 as vLLM streams it, the choices alternating chunk by chunk: each index has a
    /// memo of its own, so every chunk after each choice's first is read without a scan.
    #[test]
    fn alternating_choices_each_keep_a_memo() {
        let mut memos = ContentMemos::default();
        let mut hits = 0;
        for k in 0..6 {
            for index in 0..2 {
                let data = shaped(0, index, &format!("\"t{k}\""));
                match memos.content(&data) {
                    Some(read) => {
                        assert_eq!(read, (Some(index), format!("t{k}").as_str()));
                        hits += 1;
                    }
                    None => memos.learn(&data, &scan_chunk(&data).unwrap()),
                }
            }
        }
        assert_eq!(hits, 10, "the first chunk of each choice scanned");
        // A third index takes the second memo; the first keeps index 0.
        let third = shaped(0, 2, "\"x\"");
        memos.learn(&third, &scan_chunk(&third).unwrap());
        assert_eq!(memos.content(&shaped(0, 2, "\"y\"")), Some((Some(2), "y")));
        assert_eq!(memos.content(&shaped(0, 0, "\"z\"")), Some((Some(0), "z")));
        assert_eq!(memos.content(&shaped(0, 1, "\"w\"")), None);
    }

    /// The generator above is a fair test only if the memo reads a good part of it.
    #[test]
    fn most_repeated_shapes_are_read_by_the_memo() {
        let texts = ["a", "bc", "", "longer text", "é"];
        let mut memo = ContentMemo::default();
        let mut hits = 0;
        for shape in 0..3 {
            for t in texts {
                let data = shaped(shape, 0, &serde_json::to_string(t).unwrap());
                if memo.content(&data).is_some() {
                    hits += 1;
                } else {
                    memo.learn(&data, &scan_chunk(&data).unwrap());
                }
            }
        }
        assert_eq!(
            hits, 12,
            "three shapes of five chunks: the first of each scanned"
        );
    }
}

/// The content memo's limits, from an adversarial review: an unarmed memo, several
/// shapes that differ only in the index, bytes that end a plain run, and chunks with more
/// than the text (never learned).
mod content_memo_limits {
    use super::*;

    const PRE: &str = r#"{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":""#;
    const POST: &str = r#""},"logprobs":null,"finish_reason":null}]}"#;

    fn run_n(events: &[String], n: u32) -> RequestRecord {
        run_typed_with(&spaced(events), head_n(n))
    }

    /// Nothing learned yet: a chunk without a quote is not read as a text (an unarmed
    /// memo has an empty prefix and suffix).
    #[test]
    fn an_unlearned_memo_reads_nothing() {
        for first in ["{}", "{ }", "{\t}"] {
            let r = run_n(&[first.into(), format!("{PRE}a{POST}"), "[DONE]".into()], 1);
            assert_eq!((r.token_event_count, r.output.text.as_str()), (1, "a"));
        }
    }

    /// Choices 0, 1 and an index of `null` in chunks of one shape but for the index, each
    /// shape repeated: every memo read keeps its own chunk's index.
    #[test]
    fn each_learned_shape_reads_its_own_index() {
        let pre1 = PRE.replace(r#""index":0"#, r#""index":1"#);
        let pre_none = PRE.replace(r#""index":0"#, r#""index":null"#);
        let mut events = Vec::new();
        for i in 0..4 {
            events.push(format!("{PRE}a{i}{POST}"));
            events.push(format!("{PRE}b{i}{POST}"));
            events.push(format!("{pre1}c{i}{POST}"));
            events.push(format!("{pre1}d{i}{POST}"));
            events.push(format!("{pre_none}e{i}{POST}"));
            events.push(format!("{pre_none}f{i}{POST}"));
        }
        events.push("[DONE]".into());
        let r = run_n(&events, 2);
        assert_eq!(r.output.text, "a0b0e0f0a1b1e1f1a2b2e2f2a3b3e3f3");
        assert_eq!(r.choices[1].output.text, "c0d0c1d1c2d2c3d3");
    }

    /// A text the scan decodes or refuses (an escape, a raw control character) after a
    /// learned chunk of the same shape: the memo stops at the first such byte.
    #[test]
    fn escapes_and_control_bytes_end_the_memo_read() {
        for bad in [
            r"a\nb", r#"a\"b"#, r"\u00e9", r"a\\", "a\u{1}b", "\t", "\u{1f}",
        ] {
            let events = [
                format!("{PRE}x{POST}"),
                format!("{PRE}{bad}{POST}"),
                format!("{PRE}y{POST}"),
                "[DONE]".into(),
            ];
            run_n(&events, 1);
        }
    }

    /// Members the memo's view does not carry (a second choice, `finish_reason`, `text`,
    /// reasoning) before or after the text: such a chunk is never learned, so its repeats
    /// are scanned. The finish-only chunk between repeats changes the finish reason, so a
    /// memo read that dropped one would show.
    #[test]
    fn chunks_with_more_than_the_text_are_not_learned() {
        let shapes = [
            (
                r#"{"choices":[{"index":0,"delta":{"content":""#,
                r#""}},{"index":1,"delta":{"content":"B"}}]}"#,
            ),
            (
                r#"{"choices":[{"index":0,"finish_reason":"stop","delta":{"content":""#,
                r#""}}]}"#,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{"content":""#,
                r#""},"finish_reason":"stop"}]}"#,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{"content":""#,
                r#""},"text":"T"}]}"#,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{"reasoning_content":"R","content":""#,
                r#""}}]}"#,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{"content":""#,
                r#"","reasoning":"R"}}]}"#,
            ),
        ];
        let finish_other = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#;
        for (pre, post) in shapes {
            let events = [
                format!("{pre}a{post}"),
                finish_other.to_string(),
                format!("{pre}b{post}"),
                format!("{pre}c{post}"),
                "[DONE]".into(),
            ];
            let r = run_n(&events, 2);
            assert!(r.output.text.contains('c'), "{pre}");
        }
    }

    /// Valid JSON grammar that a `serde_json::Value` cannot hold (a number beyond f64, a
    /// lone surrogate escape, as Python's `json.dumps` writes for byte-level logprob
    /// tokens) in a member the accumulator never reads: the typed readings skip it by
    /// grammar and the request succeeds; only a chunk that needs the lenient reading
    /// would fail on it (`malformed_event`). The one place where the two readings are
    /// not held to one record.
    #[test]
    fn unread_members_are_skipped_by_grammar_only() {
        for chunk in [
            r#"{"created":1e400,"choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            r#"{"id":"\ud800","choices":[{"index":0,"delta":{"content":"a"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"\udcff","logprob":-0.1}]}}]}"#,
        ] {
            let mut acc = StreamAccumulator::new();
            for (ms, data) in [(1, chunk), (2, chunk), (3, "[DONE]")] {
                acc.on_event(None, data, ms * MS);
            }
            let r = acc.finish(head(), 3 * MS, true);
            assert_eq!(r.status, RequestStatus::Success, "{chunk}");
            assert_eq!((r.token_event_count, r.output.text.as_str()), (2, "aa"));
        }
    }
}

/// A response longer than what the client keeps. The visible text is
/// kept up to `MAX_KEPT_TEXT_BYTES` (cut at a character boundary), the rest counted, and
/// the token estimate still counts every byte received; reasoning is bounded apart.
#[test]
fn a_long_answer_keeps_a_bounded_text_and_counts_the_rest() {
    use crate::record::MAX_KEPT_TEXT_BYTES;
    // 3 bytes a character, 1 MiB + 1 a chunk: the cut falls inside a character.
    let piece = "é".repeat(1 << 19) + "x"; // 2 bytes × 2¹⁹ + 1
    let content = |s: &str| {
        format!(
            r#"{{"choices":[{{"index":0,"delta":{{"content":"{s}","reasoning_content":"{s}"}}}}]}}"#
        )
    };
    let mut chunks: Vec<String> = (0..5).map(|_| content(&piece)).collect();
    chunks.push(r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#.into());
    chunks.push("[DONE]".into());
    let r = run_typed(&spaced(&chunks));
    let total = 5 * piece.len() as u64;
    let out = &r.output;
    assert!(out.text.len() <= MAX_KEPT_TEXT_BYTES);
    assert!(out.text.len() > MAX_KEPT_TEXT_BYTES - 4);
    assert!(piece.repeat(5).starts_with(&out.text));
    assert_eq!(out.text.len() as u64 + out.text_omitted_bytes, total);
    assert!(out.text_truncated());
    assert_eq!(out.reasoning.len(), out.text.len());
    assert_eq!(out.reasoning_omitted_bytes, out.text_omitted_bytes);
    let est = r.completion_tokens_estimate.unwrap();
    assert_eq!(
        est.tokens,
        (2 * total).div_ceil(4),
        "every byte received counts"
    );
    assert_eq!(r.token_event_count, 5);
}

/// A record keeps at most `MAX_RECORDED_GAPS` inter-token gaps; the
/// token events beyond are counted, and the record says `itl_truncated`.
#[test]
fn gaps_beyond_the_recorded_bound_are_counted_not_kept() {
    use crate::record::MAX_RECORDED_GAPS;
    let mut acc = StreamAccumulator::new();
    let chunk = r#"{"choices":[{"index":0,"delta":{"content":"a"}}]}"#;
    let events = MAX_RECORDED_GAPS as u64 + 11;
    for i in 0..events {
        assert_eq!(acc.on_event(None, chunk, (i + 1) * 1_000), Flow::Continue);
    }
    acc.on_event(None, "[DONE]", (events + 1) * 1_000);
    let r = acc.finish(head(), (events + 2) * 1_000, true);
    assert_eq!(r.token_event_count, events);
    assert_eq!(r.itl_ns.len(), MAX_RECORDED_GAPS);
    assert!(r.itl_ns.iter().all(|&g| g == 1_000));
    assert!(r.warnings.contains(&RecordWarning::ItlTruncated));
    // One gap fewer than the bound: no warning.
    let mut acc = StreamAccumulator::new();
    for i in 0..MAX_RECORDED_GAPS as u64 {
        acc.on_event(None, chunk, (i + 1) * 1_000);
    }
    acc.on_event(None, "[DONE]", 0);
    let r = acc.finish(head(), 0, true);
    assert_eq!(r.itl_ns.len(), MAX_RECORDED_GAPS - 1);
    assert!(!r.warnings.contains(&RecordWarning::ItlTruncated));
}
