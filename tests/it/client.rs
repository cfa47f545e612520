// Integration tests of `client::Client` against scripted hostile HTTP/1.1 servers started
// in-process on 127.0.0.1:0 (split reads, in-band errors, disconnects, oversized events,
// slow first byte, idle streams, HTTP errors). Timing bounds are generous: the box may be a
// loaded 2-core machine.

use std::time::{Duration, Instant};

use inferscope_bench::client::{
    ChatRequest, Client, ClientConfig, ClientError, FailureCode, RecordWarning, RequestRecord,
    RequestStatus, TokenSource,
};
use inferscope_bench::clock::RunClock;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

const MS: u64 = 1_000_000;

/// One scripted action of the server after it has read the request.
enum Step {
    Write(Vec<u8>),
    Sleep(u64),
}
use Step::{Sleep, Write};

/// What the server received.
struct Captured {
    head: String,
    body: Vec<u8>,
}

/// Starts a server that handles the i-th accepted connection with `scripts[i]` (one request
/// per connection), then closes it. Returns the `/v1` base URL and the captured requests.
async fn serve(scripts: Vec<Vec<Step>>) -> (String, mpsc::UnboundedReceiver<Captured>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        for script in scripts {
            let Ok((sock, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(handle(sock, script, tx.clone()));
        }
    });
    (format!("http://{addr}/v1"), rx)
}

async fn handle(mut sock: TcpStream, script: Vec<Step>, tx: mpsc::UnboundedSender<Captured>) {
    sock.set_nodelay(true).unwrap();
    let mut buf = Vec::new();
    let Some(captured) = read_request(&mut sock, &mut buf).await else {
        return;
    };
    let _ = tx.send(captured);
    if play(&mut sock, script).await {
        let _ = sock.shutdown().await;
    }
}

/// Reads one request (head and `content-length` body) from `sock`; bytes past it stay in
/// `buf` for the next one. `None` when the connection ends first.
async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Captured> {
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        match sock.read(&mut tmp).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())
                .flatten()
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        match sock.read(&mut tmp).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
    let body = buf[head_end..head_end + len].to_vec();
    buf.drain(..head_end + len);
    Some(Captured { head, body })
}

/// Plays `script` on `sock`; `false` when a write failed.
async fn play(sock: &mut TcpStream, script: Vec<Step>) -> bool {
    for step in script {
        match step {
            Write(bytes) => {
                if sock.write_all(&bytes).await.is_err() {
                    return false;
                }
                let _ = sock.flush().await;
            }
            Sleep(ms) => tokio::time::sleep(Duration::from_millis(ms)).await,
        }
    }
    true
}

const SSE_CHUNKED: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
const SSE_CLOSE_DELIMITED: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

fn w(s: &str) -> Step {
    Write(s.as_bytes().to_vec())
}

/// One HTTP/1.1 chunk carrying `s`.
fn chunk(s: &str) -> Step {
    let mut v = format!("{:x}\r\n", s.len()).into_bytes();
    v.extend_from_slice(s.as_bytes());
    v.extend_from_slice(b"\r\n");
    Write(v)
}

fn last_chunk() -> Step {
    w("0\r\n\r\n")
}

fn content(text: &str) -> String {
    format!(
        "data: {}\n\n",
        json!({"choices":[{"index":0,"delta":{"content":text},"finish_reason":null}]})
    )
}

const ROLE: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
const FINISH: &str =
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
const DONE: &str = "data: [DONE]\n\n";

fn config(base: &str) -> ClientConfig {
    let mut c = ClientConfig::new(base);
    c.request_timeout = Duration::from_secs(5);
    c.idle_timeout = Duration::from_secs(5);
    c
}

/// [`config`], on reqwest's transport when `reqwest` (a plain-`http` endpoint otherwise
/// goes over the client's own HTTP/1.1 pool): the scenarios that differ by transport run
/// on both.
fn config_on(reqwest: bool, base: &str) -> ClientConfig {
    let mut c = config(base);
    c.reqwest_for_http = reqwest;
    c
}

fn request(id: &str, stream: bool) -> ChatRequest {
    ChatRequest {
        request_id: id.into(),
        model: "m".into(),
        messages: vec![json!({"role":"user","content":"hello"})],
        max_tokens: Some(16),
        stream,
        ..ChatRequest::default()
    }
}

async fn chat_once(cfg: ClientConfig, stream: bool) -> RequestRecord {
    let client = Client::new(cfg).unwrap();
    let clock = RunClock::start();
    let scheduled = clock.elapsed_ns();
    client
        .chat(&request("req-1", stream), &clock, scheduled)
        .await
}

#[tokio::test]
async fn split_reads_c04_over_the_network() {
    split_reads_c04_over_the_network_on(false).await;
}

/// [`split_reads_c04_over_the_network`] over the reqwest transport (`https` endpoints use it).
#[tokio::test]
async fn split_reads_c04_over_the_network_over_reqwest() {
    split_reads_c04_over_the_network_on(true).await;
}

async fn split_reads_c04_over_the_network_on(reqwest: bool) {
    let e1 = content("Hel");
    let e2 = content("lo");
    let r1 = "data: {\"choices\":[{\"ind";
    let r2 = format!("{}{}da", &e1[r1.len()..], e2);
    let (base, _rx) = serve(vec![vec![
        w(SSE_CHUNKED),
        chunk(r1),
        Sleep(60),
        chunk(&r2),
        Sleep(60),
        chunk("ta: [DONE]\n\n"),
        last_chunk(),
    ]])
    .await;
    let r = chat_once(config_on(reqwest, &base), true).await;
    assert_eq!(r.status, RequestStatus::Success, "{:?}", r.error);
    assert_eq!(r.output.text, "Hello");
    assert_eq!(r.token_event_count, 2);
    // Both events complete in the same read R2: one ITL sample of exactly 0.
    assert_eq!(r.itl_ns, vec![0]);
    let first_byte = r.first_byte_ns.unwrap();
    let ttft = r.ttft_ns.unwrap();
    let end = r.end_ns.unwrap();
    // E1 completes in R2 (60 ms after R1), [DONE] in R3 (60 ms after R2).
    assert!(
        ttft - first_byte >= 50 * MS,
        "ttft {ttft} first byte {first_byte}"
    );
    assert!(end - ttft >= 50 * MS);
    assert_eq!(r.http_status, Some(200));
    assert!(r.headers_ns.unwrap() >= r.send_ns);
    assert!(r.send_ns >= r.scheduled_ns);
}

#[tokio::test]
async fn c12a_outgoing_body_headers_and_missing_usage() {
    let (base, mut rx) = serve(vec![vec![
        w(SSE_CHUNKED),
        chunk(ROLE),
        chunk(&content("abcdefgh")),
        chunk(FINISH),
        chunk(DONE),
        last_chunk(),
    ]])
    .await;
    let mut cfg = config(&base);
    cfg.api_key = Some("sk-test-key".into());
    let r = chat_once(cfg, true).await;
    let got = rx.recv().await.unwrap();
    let body = String::from_utf8(got.body).unwrap();
    assert!(
        body.contains(r#""stream":true,"stream_options":{"include_usage":true}"#),
        "{body}"
    );
    let head = got.head.to_ascii_lowercase();
    assert!(
        head.starts_with("post /v1/chat/completions http/1.1"),
        "{head}"
    );
    assert!(head.contains("x-request-id: req-1"));
    assert!(head.contains("authorization: bearer sk-test-key"));
    assert!(head.contains("accept: text/event-stream"));
    // What an HTTP/1.1 origin server needs, as reqwest sent it: the host with its port,
    // the body's length, who is asking.
    let authority = base.trim_start_matches("http://").trim_end_matches("/v1");
    assert!(head.contains(&format!("host: {authority}\r\n")), "{head}");
    assert!(
        head.contains(&format!("content-length: {}\r\n", body.len())),
        "{head}"
    );
    assert!(head.contains("user-agent: inferscope-bench/"), "{head}");
    assert_eq!(head.matches("accept:").count(), 1, "{head}");
    assert!(r.is_success());
    assert_eq!(r.token_source(), Some(TokenSource::ClientEstimate));
    assert_eq!(r.completion_tokens, None, "an estimate is not usage");
    assert_eq!(r.completion_tokens_estimate.map(|e| e.tokens), Some(2));
    assert_eq!(r.prompt_tokens, None);
    assert_eq!(r.cached_tokens, None);
    assert_eq!(r.request_id, "req-1");
}

#[tokio::test]
async fn server_usage_and_cached_tokens_are_recorded() {
    let usage = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":2,\"total_tokens\":14,\"prompt_tokens_details\":{\"cached_tokens\":8}}}\n\n";
    let (base, _rx) = serve(vec![vec![
        w(SSE_CHUNKED),
        chunk(ROLE),
        Sleep(20),
        chunk(&content("A")),
        Sleep(20),
        chunk(&content("B")),
        chunk(FINISH),
        chunk(usage),
        chunk(DONE),
        last_chunk(),
    ]])
    .await;
    let r = chat_once(config(&base), true).await;
    assert!(r.is_success());
    assert_eq!(r.completion_tokens, Some(2));
    assert_eq!(r.token_source(), Some(TokenSource::Server));
    assert_eq!(r.prompt_tokens, Some(12));
    assert_eq!(r.cached_tokens, Some(8));
    assert_eq!(r.itl_ns.len(), 1);
    assert!(r.tpot_ms().unwrap() >= 10.0);
    let json = serde_json::to_string(&r).unwrap();
    assert!(
        !json.contains("\"AB\""),
        "response content never serialized"
    );
}

#[tokio::test]
async fn error_mid_stream_c07a_fails_with_stream_error() {
    let (base, _rx) = serve(vec![vec![
        w(SSE_CHUNKED),
        chunk(ROLE),
        chunk(&content("Par")),
        chunk(&content("tial")),
        Sleep(10),
        chunk("data: {\"error\":{\"message\":\"generation failed (sanitized)\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}\n\n"),
        chunk(DONE),
        last_chunk(),
    ]])
    .await;
    let r = chat_once(config(&base), true).await;
    assert_eq!(r.status, RequestStatus::Failed);
    assert_eq!(r.failure_code, Some(FailureCode::StreamError));
    assert_eq!(r.http_status, Some(200));
    assert_eq!(r.error.as_deref(), Some("generation failed (sanitized)"));
    assert!(r.ttft_ns.is_some());
}

#[tokio::test]
async fn error_event_type_c07c_then_eof() {
    let (base, _rx) = serve(vec![vec![
        w(SSE_CLOSE_DELIMITED),
        w(ROLE),
        w("event: error\ndata: {\"message\":\"bad request\"}\n\n"),
    ]])
    .await;
    let r = chat_once(config(&base), true).await;
    assert_eq!(r.failure_code, Some(FailureCode::StreamError));
    assert_eq!(r.error.as_deref(), Some("bad request"));
}

#[tokio::test]
async fn disconnect_mid_stream_is_disconnect() {
    // Chunked body cut before its terminating chunk: a transport error mid-stream.
    let (base, _rx) = serve(vec![vec![
        w(SSE_CHUNKED),
        chunk(ROLE),
        chunk(&content("Par")),
        Sleep(20),
        w("20\r\ndata: {\"cho"),
    ]])
    .await;
    let r = chat_once(config(&base), true).await;
    assert_eq!(r.status, RequestStatus::Failed);
    assert_eq!(
        r.failure_code,
        Some(FailureCode::Disconnect),
        "{:?}",
        r.error
    );
    assert!(r.ttft_ns.is_some());
    assert_eq!(r.output.text, "Par");
}

#[tokio::test]
async fn clean_eof_without_finish_or_done_is_incomplete_c07d() {
    let (base, _rx) = serve(vec![vec![
        w(SSE_CLOSE_DELIMITED),
        w(ROLE),
        w(&content("Par")),
        w("error: {\"code\":500}\n\n"),
    ]])
    .await;
    let r = chat_once(config(&base), true).await;
    assert_eq!(r.failure_code, Some(FailureCode::IncompleteStream));
}

#[tokio::test]
async fn clean_eof_after_finish_reason_succeeds() {
    let (base, _rx) = serve(vec![vec![
        w(SSE_CLOSE_DELIMITED),
        w(&content("ok")),
        w(FINISH),
    ]])
    .await;
    let r = chat_once(config(&base), true).await;
    assert!(r.is_success(), "{:?}", r.error);
    assert_eq!(r.finish_reason.as_deref(), Some("stop"));
}

#[tokio::test]
async fn oversized_event_fails_fast_with_event_too_large() {
    // 1 MiB of one event with no terminator, then the server hangs: the cap must fire
    // without waiting for the event (or the connection) to end.
    let mut steps = vec![
        w(SSE_CHUNKED),
        chunk("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\""),
    ];
    let piece = "a".repeat(16 * 1024);
    for _ in 0..64 {
        steps.push(chunk(&piece));
    }
    steps.push(Sleep(10_000));
    let (base, _rx) = serve(vec![steps]).await;
    let mut cfg = config(&base);
    cfg.max_event_bytes = 64 * 1024;
    let t0 = Instant::now();
    let r = chat_once(cfg, true).await;
    assert!(t0.elapsed() < Duration::from_secs(3), "no hang");
    assert_eq!(r.failure_code, Some(FailureCode::EventTooLarge));
    assert!(r.error.as_deref().unwrap().contains("max_event_bytes"));
}

#[tokio::test]
async fn c30_three_mib_event_parses_under_the_default_cap() {
    let args = format!("{{\"blob\":\"{}\"}}", "a".repeat(3_145_728));
    let event = format!(
        "data: {}\n\n",
        json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"put","arguments":args}}]}}]})
    );
    let mut steps = vec![w(SSE_CHUNKED)];
    for part in event.as_bytes().chunks(64 * 1024) {
        steps.push(chunk(std::str::from_utf8(part).unwrap()));
    }
    steps.push(chunk(
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    ));
    steps.push(chunk(DONE));
    steps.push(last_chunk());
    let (base, _rx) = serve(vec![steps]).await;
    let r = chat_once(config(&base), true).await;
    assert!(r.is_success(), "{:?}", r.error);
    assert_eq!(r.output.tool_calls.len(), 1);
    assert_eq!(r.output.tool_calls[0].arguments.chars().count(), 3_145_739);
    assert!(r.output.is_tool_call_turn());
}

#[tokio::test]
async fn slow_first_byte_is_inside_ttft() {
    let (base, _rx) = serve(vec![vec![
        Sleep(300),
        w(SSE_CHUNKED),
        chunk(ROLE),
        chunk(&content("late")),
        chunk(FINISH),
        chunk(DONE),
        last_chunk(),
    ]])
    .await;
    let r = chat_once(config(&base), true).await;
    assert!(r.is_success(), "{:?}", r.error);
    let ttft = r.ttft_ms().unwrap();
    assert!((300.0..3000.0).contains(&ttft), "ttft {ttft} ms");
    assert!(r.headers_ns.unwrap() - r.send_ns >= 300 * MS);
    assert_eq!(r.ttfo_ms(), Some(ttft));
}

#[tokio::test]
async fn slow_first_token_after_role_chunk_is_inside_ttft() {
    let (base, _rx) = serve(vec![vec![
        w(SSE_CHUNKED),
        chunk(ROLE),
        Sleep(300),
        chunk(&content("late")),
        chunk(FINISH),
        chunk(DONE),
        last_chunk(),
    ]])
    .await;
    let r = chat_once(config(&base), true).await;
    assert!(r.is_success());
    assert!(r.ttft_ms().unwrap() >= 300.0);
    assert!(r.first_byte_ns.unwrap() <= r.ttft_ns.unwrap());
}

#[tokio::test]
async fn idle_stream_fires_idle_timeout() {
    let (base, _rx) = serve(vec![vec![w(SSE_CHUNKED), chunk(ROLE), Sleep(10_000)]]).await;
    let mut cfg = config(&base);
    cfg.idle_timeout = Duration::from_millis(300);
    let t0 = Instant::now();
    let r = chat_once(cfg, true).await;
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert_eq!(r.failure_code, Some(FailureCode::IdleTimeout));
    let last_read = r.first_byte_ns.unwrap();
    assert!(r.end_ns.unwrap() - last_read >= 300 * MS);
}

#[tokio::test]
async fn comments_keep_an_idle_stream_alive_c03() {
    // No data event for ~1 s, with `: ping` comments every 100 ms; idle timeout 400 ms.
    let mut steps = vec![w(SSE_CHUNKED), chunk(ROLE)];
    for _ in 0..10 {
        steps.push(Sleep(100));
        steps.push(chunk(": ping\n\n"));
    }
    steps.push(chunk(": keep-alive\n\nevent: ping\n\n"));
    steps.extend([
        chunk(&content("ok")),
        chunk(FINISH),
        chunk(DONE),
        last_chunk(),
    ]);
    let (base, _rx) = serve(vec![steps]).await;
    let mut cfg = config(&base);
    cfg.idle_timeout = Duration::from_millis(400);
    let r = chat_once(cfg, true).await;
    assert!(r.is_success(), "{:?} {:?}", r.failure_code, r.error);
    assert_eq!(r.output.text, "ok");
    assert!(r.ttft_ns.unwrap() - r.first_byte_ns.unwrap() >= 900 * MS);
}

#[tokio::test]
async fn http_500_is_http_status_with_code_and_text() {
    http_500_is_http_status_with_code_and_text_on(false).await;
}

/// [`http_500_is_http_status_with_code_and_text`] over the reqwest transport (`https` endpoints use it).
#[tokio::test]
async fn http_500_is_http_status_with_code_and_text_over_reqwest() {
    http_500_is_http_status_with_code_and_text_on(true).await;
}

async fn http_500_is_http_status_with_code_and_text_on(reqwest: bool) {
    let body = r#"{"error":{"message":"boom","type":"InternalServerError","code":500}}"#;
    let resp = format!(
        "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let (base, _rx) = serve(vec![vec![w(&resp)]]).await;
    let r = chat_once(config_on(reqwest, &base), true).await;
    assert_eq!(r.status, RequestStatus::Failed);
    assert_eq!(r.failure_code, Some(FailureCode::HttpStatus));
    assert_eq!(r.http_status, Some(500));
    assert_eq!(r.error.as_deref(), Some("HTTP 500: boom"));
    assert_eq!(r.token_source(), None);
    assert_eq!(r.completion_tokens, None);
}

#[tokio::test]
async fn non_streaming_request_has_e2e_but_no_ttft() {
    let body = json!({"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}).to_string();
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let (base, mut rx) = serve(vec![vec![Sleep(50), w(&resp)]]).await;
    let r = chat_once(config(&base), false).await;
    let sent = String::from_utf8(rx.recv().await.unwrap().body).unwrap();
    assert!(sent.contains(r#""stream":false"#) && !sent.contains("stream_options"));
    assert!(r.is_success(), "{:?}", r.error);
    assert!(!r.stream);
    assert_eq!(r.ttft_ns, None);
    assert!(r.e2e_ms().unwrap() >= 50.0);
    assert_eq!(r.output.text, "Hello there");
    assert_eq!(r.completion_tokens, Some(2));
    assert_eq!(r.token_source(), Some(TokenSource::Server));
}

#[tokio::test]
async fn streaming_request_answered_with_json_is_parsed_as_non_streamed() {
    let body = json!({"choices":[{"index":0,"message":{"content":"hi"},"finish_reason":"stop"}]})
        .to_string();
    let resp = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let (base, _rx) = serve(vec![vec![w(&resp)]]).await;
    let r = chat_once(config(&base), true).await;
    assert!(r.is_success());
    assert_eq!(r.warnings, vec![RecordWarning::NotStreamed]);
    assert_eq!(r.ttft_ns, None);
}

#[tokio::test]
async fn list_models_for_preflight() {
    list_models_for_preflight_on(false).await;
}

/// [`list_models_for_preflight`] over the reqwest transport (`https` endpoints use it).
#[tokio::test]
async fn list_models_for_preflight_over_reqwest() {
    list_models_for_preflight_on(true).await;
}

async fn list_models_for_preflight_on(reqwest: bool) {
    let body =
        r#"{"object":"list","data":[{"id":"m1","object":"model"},{"id":"m2","object":"model"}]}"#;
    let ok = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let err = "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: 32\r\nconnection: close\r\n\r\n{\"error\":{\"message\":\"bad key!\"}}";
    let (base, mut rx) = serve(vec![vec![w(&ok)], vec![w(err)]]).await;
    let client = Client::new(config_on(reqwest, &base)).unwrap();
    assert_eq!(client.list_models().await.unwrap(), vec!["m1", "m2"]);
    assert!(rx.recv().await.unwrap().head.starts_with("GET /v1/models "));
    match client.list_models().await {
        Err(ClientError::HttpStatus {
            status, message, ..
        }) => {
            assert_eq!(status, 401);
            assert_eq!(message, "bad key!");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn connection_refused_is_connect() {
    connection_refused_is_connect_on(false).await;
}

/// [`connection_refused_is_connect`] over the reqwest transport (`https` endpoints use it).
#[tokio::test]
async fn connection_refused_is_connect_over_reqwest() {
    connection_refused_is_connect_on(true).await;
}

async fn connection_refused_is_connect_on(reqwest: bool) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let r = chat_once(config_on(reqwest, &format!("http://{addr}/v1")), true).await;
    assert_eq!(r.failure_code, Some(FailureCode::Connect));
    assert_eq!(r.headers_ns, None);
    assert_eq!(r.http_status, None);
    assert!(r.end_ns.is_some());
}

/// A response head over hyper's limit (one 600 KB header here) is the
/// server answering with a head too large to read, `head_too_large`, not `connect`
/// ("endpoint unreachable" in JUnit). The same head within the limit is read.
#[tokio::test]
async fn oversized_response_head_is_head_too_large() {
    oversized_response_head_is_head_too_large_on(false).await;
}

/// [`oversized_response_head_is_head_too_large`] over the reqwest transport (`https` endpoints use it).
#[tokio::test]
async fn oversized_response_head_is_head_too_large_over_reqwest() {
    oversized_response_head_is_head_too_large_on(true).await;
}

async fn oversized_response_head_is_head_too_large_on(reqwest: bool) {
    for (pad, code) in [(600_000, Some(FailureCode::HeadTooLarge)), (1_000, None)] {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nx-pad: {}\r\n\
             transfer-encoding: chunked\r\nconnection: close\r\n\r\n",
            "a".repeat(pad)
        );
        let (base, _rx) = serve(vec![vec![
            w(&head),
            chunk(ROLE),
            chunk(&content("hi")),
            chunk(FINISH),
            chunk(DONE),
            last_chunk(),
        ]])
        .await;
        let r = chat_once(config_on(reqwest, &base), true).await;
        assert_eq!(r.failure_code, code, "{pad}: {:?}", r.error);
        if code.is_some() {
            assert_eq!(r.headers_ns, None);
            assert!(r.error.is_some());
        }
    }
}

/// The preflight's `GET /models` answered with a head too large to read is a response
/// that is not a model list, not an endpoint that does not answer.
#[tokio::test]
async fn an_oversized_models_head_is_an_invalid_response_not_unreachable() {
    an_oversized_models_head_is_an_invalid_response_not_unreachable_on(false).await;
}

/// [`an_oversized_models_head_is_an_invalid_response_not_unreachable`] over the reqwest transport (`https` endpoints use it).
#[tokio::test]
async fn an_oversized_models_head_is_an_invalid_response_not_unreachable_over_reqwest() {
    an_oversized_models_head_is_an_invalid_response_not_unreachable_on(true).await;
}

async fn an_oversized_models_head_is_an_invalid_response_not_unreachable_on(reqwest: bool) {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nx-pad: {}\r\n\
         content-length: 2\r\nconnection: close\r\n\r\n{{}}",
        "a".repeat(600_000)
    );
    let (base, _rx) = serve(vec![vec![w(&head)]]).await;
    let client = inferscope_bench::client::Client::new(config_on(reqwest, &base)).unwrap();
    match client.list_models().await {
        Err(inferscope_bench::client::ClientError::InvalidResponse { reason, .. }) => {
            assert!(reason.contains("head_too_large"), "{reason}")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn no_response_head_within_request_timeout_is_timeout() {
    let (base, _rx) = serve(vec![vec![Sleep(10_000)]]).await;
    let mut cfg = config(&base);
    cfg.request_timeout = Duration::from_millis(300);
    let t0 = Instant::now();
    let r = chat_once(cfg, true).await;
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert_eq!(r.failure_code, Some(FailureCode::Timeout));
    assert!(r.e2e_ms().unwrap() >= 300.0);
}

#[tokio::test]
async fn request_timeout_while_streaming_is_timeout() {
    // Comments keep the idle timer happy, but the whole-request deadline still applies.
    let mut steps = vec![w(SSE_CHUNKED), chunk(ROLE)];
    for _ in 0..100 {
        steps.push(Sleep(50));
        steps.push(chunk(": ping\n\n"));
    }
    let (base, _rx) = serve(vec![steps]).await;
    let mut cfg = config(&base);
    cfg.request_timeout = Duration::from_millis(400);
    let t0 = Instant::now();
    let r = chat_once(cfg, true).await;
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert_eq!(r.failure_code, Some(FailureCode::Timeout), "{:?}", r.error);
    assert!(r.e2e_ms().unwrap() >= 400.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_are_not_capped_by_the_pool() {
    // Every response waits 300 ms before its first token; 16 requests on a pool of 2 idle
    // connections still run concurrently (total well under 16 × 300 ms).
    let scripts = (0..16)
        .map(|_| {
            vec![
                w(SSE_CHUNKED),
                Sleep(300),
                chunk(&content("x")),
                chunk(FINISH),
                chunk(DONE),
                last_chunk(),
            ]
        })
        .collect();
    let (base, _rx) = serve(scripts).await;
    let mut cfg = config(&base);
    cfg.max_connections = 2;
    let client = Client::new(cfg).unwrap();
    let clock = RunClock::start();
    let t0 = Instant::now();
    let futs = (0..16).map(|i| {
        let req = request(&format!("r{i}"), true);
        let client = &client;
        let clock = &clock;
        async move { client.chat(&req, clock, clock.elapsed_ns()).await }
    });
    let records = futures_util::future::join_all(futs).await;
    assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
    assert!(records.iter().all(|r| r.is_success()));
}

#[tokio::test]
async fn chat_future_is_send_and_can_be_spawned() {
    let (base, _rx) = serve(vec![vec![
        w(SSE_CHUNKED),
        chunk(&content("x")),
        chunk(FINISH),
        chunk(DONE),
        last_chunk(),
    ]])
    .await;
    let client = std::sync::Arc::new(Client::new(config(&base)).unwrap());
    let clock = RunClock::start();
    let handle = tokio::spawn({
        let client = client.clone();
        let clock = clock.clone();
        async move { client.chat(&request("spawned", true), &clock, 0).await }
    });
    let r = handle.await.unwrap();
    assert!(r.is_success());
    assert_eq!(r.request_id, "spawned");
    assert_eq!(r.scheduled_ns, 0);
    assert!(r.schedule_lag_ns() > 0);
}

/// A pooled connection that the server drops when the next request arrives (llama-server
/// closes after each streamed response while advertising keep-alive): the request is sent
/// once more on a fresh connection, succeeds, and carries the `retried_stale_connection`
/// warning; the server saw exactly one complete request on the fresh connection.
#[tokio::test]
async fn stale_pooled_connection_is_retried_once_on_a_fresh_connection() {
    stale_pooled_connection_is_retried_once_on_a_fresh_connection_on(false).await;
}

/// [`stale_pooled_connection_is_retried_once_on_a_fresh_connection`] over the reqwest transport (`https` endpoints use it).
#[tokio::test]
async fn stale_pooled_connection_is_retried_once_on_a_fresh_connection_over_reqwest() {
    stale_pooled_connection_is_retried_once_on_a_fresh_connection_on(true).await;
}

async fn stale_pooled_connection_is_retried_once_on_a_fresh_connection_on(reqwest: bool) {
    use inferscope_bench::client::RecordWarning;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let body = format!("{ROLE}{}{FINISH}{DONE}", content("ok"));
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: keep-alive\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let served2 = served.clone();
    tokio::spawn(async move {
        let mut conn = 0;
        while let Ok((mut sock, _)) = listener.accept().await {
            conn += 1;
            let response = response.clone();
            let served = served2.clone();
            tokio::spawn(async move {
                let mut tmp = [0u8; 65536];
                let mut requests_on_conn = 0;
                loop {
                    match sock.read(&mut tmp).await {
                        Ok(0) | Err(_) => return,
                        Ok(_) => {}
                    }
                    requests_on_conn += 1;
                    // Connection 1 answers its first request, then drops the next one
                    // 300 ms after reading it.
                    if conn == 1 && requests_on_conn == 2 {
                        tokio::time::sleep(Duration::from_millis(300)).await;
                        return;
                    }
                    served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    if sock.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    let client = Client::new(config_on(reqwest, &format!("http://{addr}/v1"))).unwrap();
    let clock = RunClock::start();
    let first = client
        .chat(&request("r1", true), &clock, clock.elapsed_ns())
        .await;
    assert!(first.is_success(), "{first:?}");
    assert!(
        !first
            .warnings
            .contains(&RecordWarning::RetriedStaleConnection)
    );
    let second = client
        .chat(&request("r2", true), &clock, clock.elapsed_ns())
        .await;
    assert!(second.is_success(), "{second:?}");
    assert!(
        second
            .warnings
            .contains(&RecordWarning::RetriedStaleConnection),
        "{:?}",
        second.warnings
    );
    assert!(second.send_ns >= second.scheduled_ns);
    // The retry is a send of its own: its `send_ns` comes after the failed try (the 300 ms
    // the server held it are in the schedule lag, not in the E2E), and the connection it
    // opened is its connect time.
    assert!(second.schedule_lag_ns() >= 300_000_000, "{second:?}");
    assert!(second.e2e_ms().unwrap() < 250.0, "{second:?}");
    assert!(second.connect_ns.is_some(), "{second:?}");
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 2);
}

/// A keep-alive server that answers every request on a connection with `script()` and
/// counts the connections it accepted.
async fn serve_keep_alive(
    script: fn() -> Vec<Step>,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::spawn(async move {
                sock.set_nodelay(true).unwrap();
                let mut buf = Vec::new();
                while read_request(&mut sock, &mut buf).await.is_some() {
                    if !play(&mut sock, script()).await {
                        return;
                    }
                }
            });
        }
    });
    (format!("http://{addr}/v1"), accepted)
}

const SSE_KEEP_ALIVE: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";

/// Three streamed requests in a row on one client: each must leave its connection idle in
/// the pool, so the server accepts one connection, whether the body's end came with
/// `[DONE]` (read without the drain timer) or 20 ms after it (read with it).
#[tokio::test]
async fn keep_alive_streams_return_their_connection_to_the_pool() {
    keep_alive_streams_return_their_connection_to_the_pool_on(false).await;
}

/// [`keep_alive_streams_return_their_connection_to_the_pool`] over the reqwest transport (`https` endpoints use it).
#[tokio::test]
async fn keep_alive_streams_return_their_connection_to_the_pool_over_reqwest() {
    keep_alive_streams_return_their_connection_to_the_pool_on(true).await;
}

async fn keep_alive_streams_return_their_connection_to_the_pool_on(reqwest: bool) {
    fn end_with_done() -> Vec<Step> {
        let mut tail = format!("{:x}\r\n{DONE}\r\n", DONE.len()).into_bytes();
        tail.extend_from_slice(b"0\r\n\r\n");
        vec![
            w(SSE_KEEP_ALIVE),
            chunk(ROLE),
            chunk(&content("ok")),
            chunk(FINISH),
            Write(tail),
        ]
    }
    fn end_later() -> Vec<Step> {
        vec![
            w(SSE_KEEP_ALIVE),
            chunk(ROLE),
            chunk(&content("ok")),
            chunk(FINISH),
            chunk(DONE),
            Sleep(20),
            last_chunk(),
        ]
    }
    for script in [end_with_done as fn() -> Vec<Step>, end_later] {
        let (base, accepted) = serve_keep_alive(script).await;
        let client = Client::new(config_on(reqwest, &base)).unwrap();
        let clock = RunClock::start();
        for id in ["r1", "r2", "r3"] {
            let rec = client
                .chat(&request(id, true), &clock, clock.elapsed_ns())
                .await;
            assert!(rec.is_success(), "{rec:?}");
            assert_eq!(rec.token_event_count, 1, "{rec:?}");
        }
        assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}

/// A server that sends `[DONE]` and then neither ends the body nor closes: the request is
/// a success with its end at `[DONE]`, and the drain after it is bounded (the call
/// returns; the 10 s guard only catches a hang).
#[tokio::test]
async fn body_left_open_after_done_does_not_hold_the_request() {
    fn open_after_done() -> Vec<Step> {
        vec![
            w(SSE_KEEP_ALIVE),
            chunk(ROLE),
            chunk(&content("ok")),
            chunk(FINISH),
            chunk(DONE),
            Sleep(60_000),
        ]
    }
    let (base, _) = serve_keep_alive(open_after_done).await;
    let client = Client::new(config(&base)).unwrap();
    let clock = RunClock::start();
    let rec = tokio::time::timeout(
        Duration::from_secs(10),
        client.chat(&request("r1", true), &clock, clock.elapsed_ns()),
    )
    .await
    .expect("the drain after [DONE] is bounded");
    assert!(rec.is_success(), "{rec:?}");
    assert!(
        rec.end_ns.is_some() && rec.end_ns >= rec.last_token_ns,
        "{rec:?}"
    );
}
