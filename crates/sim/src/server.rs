//! HTTP routes of the simulator and the per-request engine bookkeeping.
//!
//! Routes: `GET /v1/models`, `POST /v1/chat/completions`, `GET /metrics`, `GET /health`.
//! Errors use the OpenAI/vLLM body `{"error":{"message","type","param","code"}}`:
//! bad JSON or an unsupported request → 400 `BadRequestError`; an unknown model → 404
//! `NotFoundError` with `param: "model"`.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderMap, HeaderValue};
use hyper::{Method, Request, StatusCode};
use serde_json::{Value, json};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::cache::block_hashes;
use super::config::SimConfig;
use super::fault::{FAULT_HEADER, Faults};
use super::generate::{
    Completion, PlanError, effective_seed, jitter_rng_seed, plan_completion, token_schedule_us,
    ttft_us,
};
use super::metrics::Counters;
use super::prompt::{ChatRequest, render_prompt, tokenize};
use super::request::RequestGuard;
use super::state::SimState;
use super::stream::{ChunkEncoder, SimBody, TimedBody, Usage, build_stream, fault_cut};

/// Largest accepted request body (long-context prompts), bytes.
const MAX_BODY_BYTES: usize = 64 * 1024 * 1024;

pub(crate) type Response = hyper::Response<SimBody>;

/// Answers one request (see the module docs). An unknown path is 404 with an empty body;
/// a known path with another method is 405 with `allow`; a `GET` route answers `HEAD`
/// too (hyper sends no body for it); a request body over [`MAX_BODY_BYTES`] is 413.
pub(crate) async fn handle(st: Arc<SimState>, req: Request<Incoming>) -> Response {
    let get = matches!(*req.method(), Method::GET | Method::HEAD);
    match req.uri().path() {
        "/v1/chat/completions" if req.method() == Method::POST => {
            let (parts, body) = req.into_parts();
            match Limited::new(body, MAX_BODY_BYTES).collect().await {
                Ok(b) => chat_completions(st, &parts.headers, b.to_bytes()).await,
                Err(e) => body_error(&*e),
            }
        }
        "/v1/chat/completions" => method_not_allowed("POST"),
        "/tokenize" if req.method() == Method::POST => {
            if st.tokenize_fails() {
                return error_response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "ServiceUnavailableError",
                    "simulated /tokenize fault".into(),
                    None,
                );
            }
            match Limited::new(req.into_body(), MAX_BODY_BYTES)
                .collect()
                .await
            {
                Ok(b) => tokenize_route(&b.to_bytes()),
                Err(e) => body_error(&*e),
            }
        }
        "/tokenize" => method_not_allowed("POST"),
        "/v1/models" if get => models(&st),
        "/metrics" if get => metrics(&st),
        "/health" if get => plain(StatusCode::OK, None, SimBody::empty()),
        "/v1/models" | "/metrics" | "/health" => method_not_allowed("GET,HEAD"),
        _ => plain(StatusCode::NOT_FOUND, None, SimBody::empty()),
    }
}

/// A response with `status`, an optional `content-type` and `body`.
fn plain(status: StatusCode, content_type: Option<&'static str>, body: SimBody) -> Response {
    let mut r = hyper::Response::new(body);
    *r.status_mut() = status;
    if let Some(ct) = content_type {
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    r
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    // Serialising a `Value` into a Vec cannot fail.
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    plain(status, Some("application/json"), SimBody::full(bytes))
}

fn method_not_allowed(allow: &'static str) -> Response {
    let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, None, SimBody::empty());
    r.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    r
}

/// A request body that could not be read whole: over the limit (413) or cut (400).
fn body_error(e: &(dyn std::error::Error + Send + Sync + 'static)) -> Response {
    let status = if e.is::<LengthLimitError>() {
        StatusCode::PAYLOAD_TOO_LARGE
    } else {
        StatusCode::BAD_REQUEST
    };
    plain(
        status,
        Some("text/plain; charset=utf-8"),
        SimBody::full(format!("Failed to buffer the request body: {e}")),
    )
}

fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn error_response(
    status: StatusCode,
    kind: &str,
    message: String,
    param: Option<&str>,
) -> Response {
    let body = json!({"error": {
        "message": message,
        "type": kind,
        "param": param,
        "code": status.as_u16(),
    }});
    json_response(status, &body)
}

/// `POST /tokenize` in vLLM's shape: `{"prompt": TEXT}` is tokenized as it
/// is, `{"messages": [...]}` (and `tools`) rendered with the chat template and its
/// generation prompt first; the answer is `{"count", "max_model_len", "tokens"}`.
fn tokenize_route(body: &[u8]) -> Response {
    #[derive(serde::Deserialize)]
    struct Body {
        prompt: Option<String>,
        messages: Option<Vec<super::prompt::ChatMessage>>,
        #[serde(default)]
        tools: Vec<Value>,
    }
    let b: Body = match serde_json::from_slice(body) {
        Ok(b) => b,
        Err(e) => return bad_request(format!("invalid tokenize body: {e}")),
    };
    let tokens = match (b.prompt, b.messages) {
        (Some(p), None) => tokenize(&p),
        (None, Some(m)) => tokenize(&render_prompt(&m, &b.tools)),
        _ => return bad_request("exactly one of `prompt` and `messages` is required".into()),
    };
    json_response(
        StatusCode::OK,
        &json!({"count": tokens.len(), "max_model_len": u32::MAX, "tokens": tokens}),
    )
}

fn bad_request(message: String) -> Response {
    error_response(StatusCode::BAD_REQUEST, "BadRequestError", message, None)
}

fn models(st: &SimState) -> Response {
    let m = &st.config().model;
    json_response(
        StatusCode::OK,
        &json!({
        "object": "list",
        "data": [{
            "id": m,
            "object": "model",
            "created": st.created_unix_s as u64,
            "owned_by": "inferscope-sim",
            "root": m,
            "parent": null,
        }]
        }),
    )
}

fn metrics(st: &SimState) -> Response {
    plain(
        StatusCode::OK,
        Some("text/plain; version=0.0.4; charset=utf-8"),
        SimBody::full(st.render_metrics()),
    )
}

/// Holds `vllm:num_requests_waiting` up while a request waits for a running slot.
struct WaitingGuard<'a>(&'a SimState);

impl Drop for WaitingGuard<'_> {
    fn drop(&mut self) {
        Counters::sub(&self.0.counters.waiting, 1);
    }
}

async fn acquire_slot(st: &SimState) -> Option<OwnedSemaphorePermit> {
    let sem = st.seqs.as_ref()?;
    match sem.clone().try_acquire_owned() {
        Ok(p) => Some(p),
        Err(_) => {
            Counters::add(&st.counters.waiting, 1);
            let _w = WaitingGuard(st);
            sem.clone().acquire_owned().await.ok()
        }
    }
}

async fn sleep_until_us(start: Instant, at_us: u64) {
    if at_us > 0 {
        let deadline = start + Duration::from_micros(at_us);
        if Instant::now() < deadline {
            tokio::time::sleep_until(deadline).await;
        }
    }
}

fn completion_message(c: &Completion) -> Value {
    match c {
        Completion::Text { pieces, .. } => json!({"role": "assistant", "content": pieces.concat()}),
        Completion::ToolCall {
            id,
            name,
            fragments,
        } => json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [{
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": fragments.concat()},
            }],
        }),
    }
}

/// The faults to inject into request `number`: the configured rules, merged with the
/// request's fault header ([`FAULT_HEADER`]); `Err` says what is wrong with the header.
fn request_faults(cfg: &SimConfig, number: u64, headers: &HeaderMap) -> Result<Faults, String> {
    let faults = Faults::for_request(&cfg.faults, number);
    let Some(v) = headers.get(FAULT_HEADER) else {
        return Ok(faults);
    };
    let parsed = v
        .to_str()
        .map_err(|_| format!("{FAULT_HEADER}: not ASCII"))
        .and_then(Faults::parse_header);
    parsed.map(|f| faults.merge(f))
}

/// The request body read as a chat request the simulator serves, or the error answer
/// (400 for a bad body or an unsupported parameter, 404 for another model).
fn read_request(cfg: &SimConfig, body: &[u8]) -> Result<ChatRequest, Box<Response>> {
    let req: ChatRequest = match serde_json::from_slice(body) {
        Ok(r) => r,
        Err(e) => return Err(Box::new(bad_request(format!("invalid request body: {e}")))),
    };
    if req.model != cfg.model {
        return Err(Box::new(error_response(
            StatusCode::NOT_FOUND,
            "NotFoundError",
            format!("The model `{}` does not exist.", req.model),
            Some("model"),
        )));
    }
    if req.messages.is_empty() {
        return Err(Box::new(bad_request("`messages` must not be empty".into())));
    }
    if req.n.is_some_and(|n| n != 1) {
        return Err(Box::new(bad_request(
            "the simulator supports only n = 1".into(),
        )));
    }
    if req.output_cap() == Some(0) {
        return Err(Box::new(bad_request(
            "max_tokens must be at least 1".into(),
        )));
    }
    Ok(req)
}

async fn chat_completions(st: Arc<SimState>, headers: &HeaderMap, body: Bytes) -> Response {
    let number = st.next_request_number();
    let cfg = st.config();
    let faults = match request_faults(cfg, number, headers) {
        Ok(f) => f,
        Err(e) => return bad_request(e),
    };
    let req = match read_request(cfg, &body) {
        Ok(r) => r,
        Err(r) => return *r,
    };
    let prompt = render_prompt(&req.messages, req.tools());
    let completion = match plan_completion(cfg, &req, &prompt) {
        Ok(c) => c,
        Err(PlanError(m)) => return bad_request(m),
    };
    let tokens = tokenize(&prompt);
    let prompt_tokens = tokens.len();
    let bs = cfg.block_size.max(1) as usize;
    let hashes = block_hashes(&tokens, bs);
    drop(tokens);

    if faults.slow_first_byte_ms > 0 {
        tokio::time::sleep(Duration::from_millis(faults.slow_first_byte_ms)).await;
    }

    // Admission (scheduling): a running slot, the prefix-cache lookup, the guard.
    let permit = acquire_slot(&st).await;
    let cached = st.lookup_and_insert(&hashes, prompt_tokens);
    let out_tokens = completion.tokens();
    let kv_blocks = (prompt_tokens + out_tokens).div_ceil(bs) as u64;
    let start = Instant::now();
    let mut guard = RequestGuard::admit(
        st.clone(),
        permit,
        prompt_tokens as u64,
        cached as u64,
        kv_blocks,
    );

    let ttft = ttft_us(cfg, prompt_tokens, cached);
    let jitter_seed = jitter_rng_seed(effective_seed(cfg, &req), &prompt);
    let schedule = token_schedule_us(cfg, ttft, out_tokens, jitter_seed);
    let usage = Usage {
        prompt_tokens,
        completion_tokens: out_tokens,
        cached_tokens: cached,
    };
    let id = format!("chatcmpl-sim-{number}");
    let created = unix_now_s();

    if req.is_stream() {
        let include_usage = req.include_usage();
        let enc = ChunkEncoder::new(&id, created, &cfg.model, include_usage);
        let usage_chunk = (include_usage && !faults.no_usage).then_some(&usage);
        let segs = build_stream(&enc, &completion, &schedule, usage_chunk, &faults);
        let body = SimBody::timed(TimedBody::new(segs, start, guard));
        let mut r = plain(StatusCode::OK, Some("text/event-stream"), body);
        r.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        return r;
    }

    // Non-streaming: wait out the schedule, keeping the phases in step.
    sleep_until_us(start, ttft).await;
    guard.first_token();
    if faults.disconnect || faults.error_mid_stream {
        let k = fault_cut(out_tokens);
        let at = schedule.get(k).or(schedule.last()).copied().unwrap_or(0);
        sleep_until_us(start, at).await;
        guard.generated(k as u64);
        guard.abort();
        if faults.disconnect {
            let partial = Bytes::from(format!("{{\"id\":\"{id}\",\"object\":\"chat.comp"));
            return plain(
                StatusCode::OK,
                Some("application/json"),
                SimBody::disconnecting(partial),
            );
        }
        return error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalServerError",
            "inferscope-sim: injected error".into(),
            None,
        );
    }
    sleep_until_us(start, schedule.last().copied().unwrap_or(0)).await;
    guard.generated(out_tokens as u64);
    guard.finish(completion.finish());
    let mut body = json!({
        "id": id,
        "object": "chat.completion",
        "created": created,
        "model": cfg.model,
        "choices": [{
            "index": 0,
            "message": completion_message(&completion),
            "logprobs": null,
            "finish_reason": completion.finish().as_str(),
        }],
    });
    if !faults.no_usage {
        body["usage"] = serde_json::from_str(&usage.json()).unwrap_or(Value::Null);
    }
    json_response(StatusCode::OK, &body)
}
