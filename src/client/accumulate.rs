//! The pure stream accumulator: SSE events in, a [`RequestRecord`] out. No I/O, no clock.
//!
//! Fed the dispatched SSE events of one response in order, each with the arrival time of
//! the network read that completed it, it applies the field cases' reference semantics
//! (cases README §0; C01, C02, C07, C08, C09, C11, C12, C30):
//!
//! - a **token event** is a JSON data event where some choice has non-empty
//!   `delta.content`, `delta.reasoning_content` / `delta.reasoning`, a non-empty
//!   `delta.tool_calls` array, or (`/v1/completions`) non-empty `text`. Role-only, empty,
//!   finish-only, usage-only (`choices: []`), `usage: null`, comment and `[DONE]` events
//!   are not;
//! - TTFT = first token event, TTFO = first non-empty visible content, ITL = one sample per
//!   gap between consecutive token events (an event carrying k tokens is one sample);
//! - `data: [DONE]` terminates the stream; its arrival is the end (E2E);
//! - an in-band error after HTTP 200 (`{"error":{..}}`, `{"error":"..."}`, `event: error`,
//!   legacy `{"object":"error",..}`) fails the request with `stream_error`;
//! - a data event that is not a JSON object fails it with `malformed_event`;
//! - a clean end with neither `finish_reason` nor `[DONE]` fails it with
//!   `incomplete_stream` (C07 D);
//! - the request asks for exactly one choice (`n` = 1); content of every choice present is
//!   concatenated in arrival order.

use serde_json::Value;

use super::record::{
    AssistantOutput, FailureCode, RecordWarning, RequestRecord, RequestStatus, estimate,
    sanitize_error,
};
use super::tool_calls::ToolCallAssembler;

/// What the caller should do after feeding an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// `data: [DONE]` (or a complete non-streamed body) was seen; stop reading.
    Done,
    /// The request has failed (in-band error or malformed event); stop reading.
    Failed,
}

/// Token counts from one `usage` object (OpenAI schema). `None` = not reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
    /// `usage.total_tokens`.
    pub total_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`; `None` when `prompt_tokens_details`
    /// is absent or `null` (C12 B), `Some(0)` when reported as 0 (C12 C).
    pub cached_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens`.
    pub reasoning_tokens: Option<u64>,
}

impl Usage {
    /// Reads a `usage` JSON object; non-numeric fields are treated as absent.
    pub fn from_json(v: &Value) -> Self {
        Self {
            prompt_tokens: v.get("prompt_tokens").and_then(Value::as_u64),
            completion_tokens: v.get("completion_tokens").and_then(Value::as_u64),
            total_tokens: v.get("total_tokens").and_then(Value::as_u64),
            cached_tokens: v
                .get("prompt_tokens_details")
                .and_then(|d| d.get("cached_tokens"))
                .and_then(Value::as_u64),
            reasoning_tokens: v
                .get("completion_tokens_details")
                .and_then(|d| d.get("reasoning_tokens"))
                .and_then(Value::as_u64),
        }
    }

    /// True when every reported prompt/completion/total count is 0 (and at least one is
    /// reported): implausible for a response with output (C12 D).
    pub fn is_all_zero(&self) -> bool {
        let counts = [
            self.prompt_tokens,
            self.completion_tokens,
            self.total_tokens,
        ];
        counts.iter().any(Option::is_some) && counts.iter().all(|c| matches!(c, None | Some(0)))
    }
}

/// llama.cpp's per-response `timings` counters (ref/energy-and-engine-metrics.md §4.3):
/// `cache_n` = prompt tokens served from the cache, `prompt_n` = prompt tokens newly
/// processed; the whole prompt is `prompt_n + cache_n`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LlamaTimings {
    /// `timings.cache_n`.
    pub cache_n: Option<u64>,
    /// `timings.prompt_n`.
    pub prompt_n: Option<u64>,
}

impl LlamaTimings {
    /// Reads a `timings` JSON object.
    pub fn from_json(v: &Value) -> Self {
        Self {
            cache_n: v.get("cache_n").and_then(Value::as_u64),
            prompt_n: v.get("prompt_n").and_then(Value::as_u64),
        }
    }

    /// Whole prompt size `prompt_n + cache_n` (needs both).
    pub fn prompt_tokens(&self) -> Option<u64> {
        Some(self.prompt_n?.saturating_add(self.cache_n?))
    }
}

/// The request-side facts the accumulator does not see, joined in [`StreamAccumulator::finish`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestHead {
    /// Caller's request id (`X-Request-ID`).
    pub request_id: String,
    /// Scheduled send time (elapsed ns).
    pub scheduled_ns: u64,
    /// Actual send time (elapsed ns).
    pub send_ns: u64,
    /// Response head arrival (elapsed ns).
    pub headers_ns: Option<u64>,
    /// First non-empty body read arrival (elapsed ns).
    pub first_byte_ns: Option<u64>,
    /// HTTP status of the response head.
    pub http_status: Option<u16>,
    /// Whether a streamed response was requested.
    pub stream: bool,
}

#[derive(Clone, Debug)]
struct Failure {
    code: FailureCode,
    message: String,
    at_ns: Option<u64>,
}

/// Pure accumulator of one response (see the module docs for the semantics).
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    ttft_ns: Option<u64>,
    ttfo_ns: Option<u64>,
    last_token_ns: Option<u64>,
    itl_ns: Vec<u64>,
    token_event_count: u64,
    chunk_count: u64,
    finish_reason: Option<String>,
    response_model: Option<String>,
    text: String,
    reasoning: String,
    tools: ToolCallAssembler,
    usage: Option<Usage>,
    timings: Option<LlamaTimings>,
    done_ns: Option<u64>,
    failure: Option<Failure>,
    warnings: Vec<RecordWarning>,
}

impl StreamAccumulator {
    /// A fresh accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// True once `[DONE]` (or a complete non-streamed body) was accepted.
    pub fn is_done(&self) -> bool {
        self.done_ns.is_some()
    }

    /// The failure recorded so far, if any.
    pub fn failure_code(&self) -> Option<FailureCode> {
        self.failure.as_ref().map(|f| f.code)
    }

    /// Arrival (elapsed ns) of the first token event so far.
    pub fn ttft_ns(&self) -> Option<u64> {
        self.ttft_ns
    }

    /// Records an external failure (idle timeout, oversized event, disconnect, ...). The
    /// first failure wins; `message` is sanitized. The record's end is the `end_ns` given
    /// to [`StreamAccumulator::finish`].
    pub fn fail(&mut self, code: FailureCode, message: &str) {
        self.fail_inner(code, message, None);
    }

    /// Adds a warning (deduplicated).
    pub fn warn(&mut self, w: RecordWarning) {
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    fn fail_inner(&mut self, code: FailureCode, message: &str, at_ns: Option<u64>) -> Flow {
        if self.failure.is_none() {
            self.failure = Some(Failure {
                code,
                message: sanitize_error(message),
                at_ns,
            });
        }
        Flow::Failed
    }

    /// Feeds one dispatched SSE event. `event_type` is the SSE `event:` field (`None` or
    /// `"message"` for ordinary data events; `"error"` fails the request; other types are
    /// ignored), `data` the joined data lines, `arrival_ns` the arrival (elapsed ns) of the
    /// read that completed the event. After `Done` or `Failed`, further events are ignored.
    pub fn on_event(&mut self, event_type: Option<&str>, data: &str, arrival_ns: u64) -> Flow {
        if self.failure.is_some() {
            return Flow::Failed;
        }
        if self.done_ns.is_some() {
            return Flow::Done;
        }
        match event_type {
            None | Some("") | Some("message") => {}
            Some("error") => {
                let msg = error_text_from_data(data);
                return self.fail_inner(FailureCode::StreamError, &msg, Some(arrival_ns));
            }
            Some(_) => return Flow::Continue,
        }
        let data = data.trim();
        if data.is_empty() {
            return Flow::Continue;
        }
        if data == "[DONE]" {
            self.done_ns = Some(arrival_ns);
            return Flow::Done;
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(v) => v,
            Err(e) => {
                // serde_json's message names only the position, never the content.
                let msg = format!("invalid JSON in data event: {e}");
                return self.fail_inner(FailureCode::MalformedEvent, &msg, Some(arrival_ns));
            }
        };
        if !value.is_object() {
            return self.fail_inner(
                FailureCode::MalformedEvent,
                "data event is not a JSON object",
                Some(arrival_ns),
            );
        }
        if let Some(msg) = in_band_error(&value) {
            return self.fail_inner(FailureCode::StreamError, &msg, Some(arrival_ns));
        }
        if let Some(Value::Array(choices)) = value.get("choices") {
            self.on_choices(choices, arrival_ns);
        }
        self.read_usage_and_timings(&value);
        self.read_model(&value);
        Flow::Continue
    }

    fn on_choices(&mut self, choices: &[Value], arrival_ns: u64) {
        if choices.is_empty() {
            return;
        }
        self.chunk_count += 1;
        let mut token = false;
        let mut visible = false;
        for choice in choices {
            if let Some(fr) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(fr.to_string());
            }
            if let Some(delta) = choice.get("delta") {
                if let Some(s) = non_empty(delta.get("content")) {
                    self.text.push_str(s);
                    token = true;
                    visible = true;
                }
                // vLLM has sent the same text under both names; take one.
                if let Some(s) = non_empty(delta.get("reasoning_content"))
                    .or_else(|| non_empty(delta.get("reasoning")))
                {
                    self.reasoning.push_str(s);
                    token = true;
                }
                if let Some(Value::Array(tc)) = delta.get("tool_calls")
                    && !tc.is_empty()
                {
                    self.tools.apply_deltas(tc);
                    token = true;
                }
            }
            if let Some(s) = non_empty(choice.get("text")) {
                self.text.push_str(s);
                token = true;
                visible = true;
            }
        }
        if token {
            self.token_event_count += 1;
            match self.last_token_ns {
                Some(prev) => self.itl_ns.push(arrival_ns.saturating_sub(prev)),
                None => self.ttft_ns = Some(arrival_ns),
            }
            self.last_token_ns = Some(arrival_ns);
        }
        if visible && self.ttfo_ns.is_none() {
            self.ttfo_ns = Some(arrival_ns);
        }
    }

    /// The first `model` a response names, kept when it is a plausible model identifier
    /// (at most 256 bytes, no control characters); anything else is left out.
    fn read_model(&mut self, value: &Value) {
        if self.response_model.is_none()
            && let Some(m) = value.get("model").and_then(Value::as_str)
            && !m.is_empty()
            && m.len() <= 256
            && !m.chars().any(char::is_control)
        {
            self.response_model = Some(m.to_string());
        }
    }

    fn read_usage_and_timings(&mut self, value: &Value) {
        if let Some(u @ Value::Object(_)) = value.get("usage") {
            self.usage = Some(Usage::from_json(u));
        }
        if let Some(t @ Value::Object(_)) = value.get("timings") {
            self.timings = Some(LlamaTimings::from_json(t));
        }
    }

    /// Feeds a complete non-streamed response body (chat `message` or completions `text`)
    /// that arrived at `arrival_ns`. Returns `Done` on success; `Failed` with
    /// `invalid_response` when it is not a JSON object with `choices`, or `stream_error`
    /// when it carries an error object.
    pub fn on_body(&mut self, body: &str, arrival_ns: u64) -> Flow {
        if self.failure.is_some() {
            return Flow::Failed;
        }
        let value: Value = match serde_json::from_str(body.trim()) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                return self.fail_inner(
                    FailureCode::InvalidResponse,
                    "response body is not a JSON object",
                    Some(arrival_ns),
                );
            }
            Err(e) => {
                let msg = format!("invalid JSON response body: {e}");
                return self.fail_inner(FailureCode::InvalidResponse, &msg, Some(arrival_ns));
            }
        };
        if let Some(msg) = in_band_error(&value) {
            return self.fail_inner(FailureCode::StreamError, &msg, Some(arrival_ns));
        }
        let Some(Value::Array(choices)) = value.get("choices") else {
            return self.fail_inner(
                FailureCode::InvalidResponse,
                "response body has no choices array",
                Some(arrival_ns),
            );
        };
        for choice in choices {
            if let Some(fr) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(fr.to_string());
            }
            if let Some(msg) = choice.get("message") {
                if let Some(s) = non_empty(msg.get("content")) {
                    self.text.push_str(s);
                }
                if let Some(s) = non_empty(msg.get("reasoning_content"))
                    .or_else(|| non_empty(msg.get("reasoning")))
                {
                    self.reasoning.push_str(s);
                }
                if let Some(Value::Array(calls)) = msg.get("tool_calls") {
                    for call in calls {
                        self.tools.push_complete(call);
                    }
                }
            }
            if let Some(s) = non_empty(choice.get("text")) {
                self.text.push_str(s);
            }
        }
        self.read_usage_and_timings(&value);
        self.read_model(&value);
        self.done_ns = Some(arrival_ns);
        Flow::Done
    }

    /// Closes the response into a record.
    ///
    /// `end_ns` is when reading stopped (elapsed ns) and `eof_clean` whether the body ended
    /// normally. Outcome, in order: a recorded failure (its end is the failing event's
    /// arrival, else `end_ns`); `[DONE]` seen → success ending at its arrival; clean EOF
    /// after a `finish_reason` → success ending at `end_ns`; clean EOF otherwise →
    /// `incomplete_stream`; an unclean end → `disconnect`.
    ///
    /// Tokens: server `usage` when present (`token_source = server`); usage that is
    /// all-zero despite non-empty output is dropped with [`RecordWarning::UsageAllZero`]
    /// (C12 D); without usage, `completion_tokens` stays `None` and
    /// `completion_tokens_estimate` is [`super::estimate_tokens`] over the whole output.
    /// Prompt and cached tokens fall back to llama.cpp
    /// `timings` (`prompt_n + cache_n`, `cache_n`); otherwise they stay `None`.
    pub fn finish(mut self, head: RequestHead, end_ns: u64, eof_clean: bool) -> RequestRecord {
        let mut rec = RequestRecord::new(
            &head.request_id,
            head.scheduled_ns,
            head.send_ns,
            head.stream,
        );
        rec.headers_ns = head.headers_ns;
        rec.first_byte_ns = head.first_byte_ns;
        rec.http_status = head.http_status;

        let (status, end, failure) = match (self.failure.take(), self.done_ns) {
            (Some(f), _) => (RequestStatus::Failed, f.at_ns.unwrap_or(end_ns), Some(f)),
            (None, Some(done)) => (RequestStatus::Success, done, None),
            (None, None) if eof_clean && self.finish_reason.is_some() => {
                (RequestStatus::Success, end_ns, None)
            }
            (None, None) if eof_clean => (
                RequestStatus::Failed,
                end_ns,
                Some(Failure {
                    code: FailureCode::IncompleteStream,
                    message: "stream ended without finish_reason or [DONE]".into(),
                    at_ns: None,
                }),
            ),
            (None, None) => (
                RequestStatus::Failed,
                end_ns,
                Some(Failure {
                    code: FailureCode::Disconnect,
                    message: "response body ended abnormally".into(),
                    at_ns: None,
                }),
            ),
        };
        rec.status = status;
        rec.end_ns = Some(end);
        if let Some(f) = failure {
            rec.failure_code = Some(f.code);
            rec.error = Some(f.message);
        }

        rec.ttft_ns = self.ttft_ns;
        rec.ttfo_ns = self.ttfo_ns;
        rec.last_token_ns = self.last_token_ns;
        rec.itl_ns = self.itl_ns;
        rec.token_event_count = self.token_event_count;
        rec.chunk_count = self.chunk_count;
        rec.finish_reason = self.finish_reason;
        rec.response_model = self.response_model;

        let output = AssistantOutput {
            text: self.text,
            reasoning: self.reasoning,
            tool_calls: self.tools.finish(),
        };
        let mut warnings = self.warnings;
        let mut usage = self.usage;
        if usage.is_some_and(|u| u.is_all_zero()) && !output.is_empty() {
            warnings.push(RecordWarning::UsageAllZero);
            usage = None;
        }
        let usage = usage.unwrap_or_default();
        let timings = self.timings.unwrap_or_default();
        rec.prompt_tokens = usage.prompt_tokens.or_else(|| timings.prompt_tokens());
        rec.cached_tokens = usage.cached_tokens.or(timings.cache_n);
        rec.total_tokens = usage.total_tokens;
        rec.reasoning_tokens = usage.reasoning_tokens;
        rec.completion_tokens = usage.completion_tokens;
        if rec.completion_tokens.is_none() {
            rec.completion_tokens_estimate = Some(estimate(&output));
        }
        rec.tool_call_count = output.tool_calls.len() as u64;
        rec.warnings = warnings;
        rec.output = output;
        rec
    }
}

fn non_empty(v: Option<&Value>) -> Option<&str> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Some(s.as_str()),
        _ => None,
    }
}

/// The error text of an in-band error payload, if `value` is one: a non-null `error`
/// member (object with `message`, or a string — C07 A/B), or vLLM's legacy
/// `{"object":"error","message":..}`.
fn in_band_error(value: &Value) -> Option<String> {
    match value.get("error") {
        Some(Value::Null) | None => {}
        Some(err) => return Some(error_text(err)),
    }
    if value.get("object").and_then(Value::as_str) == Some("error") {
        return Some(error_text(value));
    }
    None
}

fn error_text(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("message") {
            Some(Value::String(m)) => m.clone(),
            _ => err.to_string(),
        },
        other => other.to_string(),
    }
}

/// Error text of an `event: error` payload: its `error`/`message` when JSON, else the raw
/// data (sanitized later).
fn error_text_from_data(data: &str) -> String {
    match serde_json::from_str::<Value>(data.trim()) {
        Ok(v) => in_band_error(&v).unwrap_or_else(|| error_text(&v)),
        Err(_) => data.to_string(),
    }
}

#[cfg(test)]
mod tests;
