//! The pure stream accumulator: SSE events in, a [`RequestRecord`] out. No I/O, no clock.
//!
//! Fed the dispatched SSE events of one response in order, each with the arrival time of
//! the network read that completed it, it applies the field cases' reference semantics
//! (docs/measurement.md; C01, C02, C07, C08, C09, C11, C12, C30):
//!
//! - a **token event** is a JSON data event where some choice has non-empty
//!   `delta.content`, `delta.reasoning_content` / `delta.reasoning`, a non-empty
//!   `delta.tool_calls` array, or (`/v1/completions`) non-empty `text`. Role-only, empty,
//!   finish-only, usage-only (`choices: []`), `usage: null`, comment and `[DONE]` events
//!   are not;
//! - TTFT = first token event (any choice), TTFO = first non-empty visible content (any
//!   choice), ITL = one sample per gap between consecutive token events of one choice (an
//!   event carrying k tokens is one sample);
//! - `data: [DONE]` terminates the stream; its arrival is the end (E2E);
//! - an in-band error after HTTP 200 (`{"error":{..}}`, `{"error":"..."}`, `event: error`,
//!   legacy `{"object":"error",..}`) fails the request with `stream_error`;
//! - a data event that is not a JSON object fails it with `malformed_event`;
//! - a clean end with neither `finish_reason` nor `[DONE]` fails it with
//!   `incomplete_stream` (C07 D).
//!
//! **Several choices** (`n > 1`): every choice is tracked by its
//! `choices[].index` (a choice without one takes its position in the array), with its own
//! text, reasoning, tool calls, finish reason, TTFT, TTFO and ITL. The request's output
//! (what drivers and graders read) is choice 0 (the lowest index seen, if the server sent no
//! 0); the request's ITL samples are every choice's gaps, choice by choice; when more or
//! fewer choices come back than were asked for, the record carries
//! [`RecordWarning::ChoiceCountMismatch`].
//!
//! **Parsing**. A data event is read into a typed view of exactly the fields
//! read here ([`ChunkView`]), borrowing every string that has no escapes: no
//! `serde_json::Value` tree, no map. The common chunk shapes are read by a one-pass
//! scanner (`scan`: skips every other member without building it, decodes escapes only
//! where present); whatever it does not read itself (usage, timings, tool-call entries, an
//! error, an unexpected type, input that is not JSON) it leaves to serde_json's typed
//! deserialization of the same view, and property tests hold it to serde's answer wherever
//! it gives one. The typed view is strict (a field of an unexpected
//! type, a duplicate key, an array where an object belongs fails it); then, and for error
//! payloads, the event is parsed once more as a `Value` and read leniently (a field of the
//! wrong type counts as absent), giving the same view. Both decoders feed one
//! [`StreamAccumulator::on_chunk`], so the semantics above exist once.

use serde_json::Value;

use super::record::{
    AssistantOutput, ChoiceRecord, FailureCode, MAX_RECORDED_GAPS, RecordWarning, RequestRecord,
    RequestStatus, estimate_all, keep_text, sanitize_error,
};
use super::tool_calls::ToolCallAssembler;
pub use view::Usage;
use view::{ChoiceView, Choices, ChunkView, JStr, ToolDeltaView};

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

/// llama.cpp's per-response `timings` counters (docs/measurement.md):
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
    /// The `n` the request asked for (`None`: not sent, one choice).
    pub choices_requested: Option<u32>,
    /// How long the request waited on a connection opened for it, ns (`None`: it went
    /// out on an open one).
    pub connect_ns: Option<u64>,
    /// That connect itself took 0.9 s or more (a dropped SYN waited out).
    pub connect_retransmit: bool,
}

impl RequestHead {
    /// A record holding what the head knows (ids, send and response-head times, status,
    /// stream, `n`); the body's figures are filled in by whoever read it.
    pub fn record(&self) -> RequestRecord {
        let mut rec = RequestRecord::new(
            &self.request_id,
            self.scheduled_ns,
            self.send_ns,
            self.stream,
        );
        rec.headers_ns = self.headers_ns;
        rec.first_byte_ns = self.first_byte_ns;
        rec.http_status = self.http_status;
        rec.choices_requested = self.choices_requested;
        rec.set_connect(self.connect_ns, self.connect_retransmit);
        rec
    }
}

#[derive(Clone, Debug)]
struct Failure {
    code: FailureCode,
    message: String,
    at_ns: Option<u64>,
}

/// Most distinct choice indices tracked per response; a hostile server sending more is
/// still measured (its token events count), but the extra choices' content is not kept.
pub const MAX_TRACKED_CHOICES: usize = 256;

/// One choice of a response while it streams.
#[derive(Debug, Default)]
struct ChoiceState {
    index: u64,
    /// Visible text, at most `MAX_KEPT_TEXT_BYTES` (the rest counted in `text_omitted`).
    text: String,
    text_omitted: u64,
    reasoning: String,
    reasoning_omitted: u64,
    tools: ToolCallAssembler,
    /// A gap of this choice was not kept ([`MAX_RECORDED_GAPS`] reached).
    gaps_dropped: bool,
    finish_reason: Option<String>,
    ttft_ns: Option<u64>,
    ttfo_ns: Option<u64>,
    last_token_ns: Option<u64>,
    itl_ns: Vec<u64>,
    token_event_count: u64,
    /// The chunk (by `chunk_count`) that last gave this choice a token event: two entries
    /// for one choice in one chunk are one event.
    last_token_chunk: u64,
}

impl ChoiceState {
    fn new(index: u64) -> Self {
        Self {
            index,
            ..Self::default()
        }
    }

    /// Applies one streamed choice entry; returns (token, visible). A gap is kept only
    /// while `gap_room` (the response's gaps are below [`MAX_RECORDED_GAPS`]).
    fn apply_delta(
        &mut self,
        c: &ChoiceView<'_>,
        chunk: u64,
        arrival_ns: u64,
        gap_room: bool,
    ) -> (bool, bool) {
        if let Some(fr) = &c.finish_reason {
            self.finish_reason = Some(fr.0.to_string());
        }
        let mut token = false;
        let mut visible = false;
        if let Some(delta) = &c.delta {
            if let Some(s) = non_empty(&delta.content) {
                keep_text(&mut self.text, &mut self.text_omitted, s);
                token = true;
                visible = true;
            }
            // vLLM has sent the same text under both names; take one.
            if let Some(s) = non_empty(&delta.reasoning_content).or(non_empty(&delta.reasoning)) {
                keep_text(&mut self.reasoning, &mut self.reasoning_omitted, s);
                token = true;
            }
            if let Some(calls) = &delta.tool_calls
                && calls.len > 0
            {
                for call in &calls.entries {
                    self.tools.apply_delta(&call.as_delta());
                }
                token = true;
            }
        }
        if let Some(s) = non_empty(&c.text) {
            keep_text(&mut self.text, &mut self.text_omitted, s);
            token = true;
            visible = true;
        }
        if token && self.last_token_chunk != chunk {
            self.last_token_chunk = chunk;
            self.token_event_count += 1;
            match self.last_token_ns {
                Some(prev) if gap_room => self.itl_ns.push(arrival_ns.saturating_sub(prev)),
                Some(_) => self.gaps_dropped = true,
                None => self.ttft_ns = Some(arrival_ns),
            }
            self.last_token_ns = Some(arrival_ns);
        }
        if visible && self.ttfo_ns.is_none() {
            self.ttfo_ns = Some(arrival_ns);
        }
        (token, visible)
    }

    /// Applies one choice of a complete (non-streamed) body.
    fn apply_message(&mut self, choice: &Value) {
        if let Some(fr) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(fr.to_string());
        }
        if let Some(msg) = choice.get("message") {
            if let Some(s) = non_empty_value(msg.get("content")) {
                keep_text(&mut self.text, &mut self.text_omitted, s);
            }
            if let Some(s) = non_empty_value(msg.get("reasoning_content"))
                .or_else(|| non_empty_value(msg.get("reasoning")))
            {
                keep_text(&mut self.reasoning, &mut self.reasoning_omitted, s);
            }
            if let Some(Value::Array(calls)) = msg.get("tool_calls") {
                for call in calls {
                    let owned = ToolDeltaView::from_value(call);
                    self.tools.push_complete(&owned.as_delta());
                }
            }
        }
        if let Some(s) = non_empty_value(choice.get("text")) {
            keep_text(&mut self.text, &mut self.text_omitted, s);
        }
    }

    fn into_parts(self) -> (ChoiceRecord, Vec<u64>) {
        let output = AssistantOutput {
            text: self.text,
            reasoning: self.reasoning,
            tool_calls: self.tools.finish(),
            text_omitted_bytes: self.text_omitted,
            reasoning_omitted_bytes: self.reasoning_omitted,
        };
        let rec = ChoiceRecord {
            index: self.index,
            ttft_ns: self.ttft_ns,
            ttfo_ns: self.ttfo_ns,
            last_token_ns: self.last_token_ns,
            itl_ns: Vec::new(),
            token_event_count: self.token_event_count,
            finish_reason: self.finish_reason,
            tool_call_count: output.tool_calls.len() as u64,
            text_bytes: Some(output.text.len() as u64 + output.text_omitted_bytes),
            output,
        };
        (rec, self.itl_ns)
    }
}

/// Pure accumulator of one response (see the module docs for the semantics).
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    ttft_ns: Option<u64>,
    ttfo_ns: Option<u64>,
    last_token_ns: Option<u64>,
    token_event_count: u64,
    chunk_count: u64,
    /// Last non-null `finish_reason` of any choice.
    finish_reason: Option<String>,
    /// The first `model` the response named (a bounded identifier), if any.
    response_model: Option<String>,
    /// Choices in order of first appearance.
    choices: Vec<ChoiceState>,
    /// Distinct choice indices seen beyond [`MAX_TRACKED_CHOICES`] (not kept).
    untracked_choices: u64,
    /// Inter-token gaps kept so far over every choice (at most [`MAX_RECORDED_GAPS`]).
    gaps_recorded: usize,
    usage: Option<Usage>,
    timings: Option<LlamaTimings>,
    done_ns: Option<u64>,
    failure: Option<Failure>,
    warnings: Vec<RecordWarning>,
    /// The last content chunk's shape (of each of two choices), read again without a scan
    /// (`scan::ContentMemo`).
    memo: scan::ContentMemos,
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
        self.on_event_with(event_type, data, arrival_ns, true)
    }

    /// [`StreamAccumulator::on_event`] with the typed view skipped: every data event goes
    /// through a `Value` (the lenient reading). For the tests that hold the two readings
    /// to one result.
    #[cfg(test)]
    pub(crate) fn on_event_lenient(
        &mut self,
        event_type: Option<&str>,
        data: &str,
        arrival_ns: u64,
    ) -> Flow {
        self.on_event_with(event_type, data, arrival_ns, false)
    }

    #[inline]
    fn on_event_with(
        &mut self,
        event_type: Option<&str>,
        data: &str,
        arrival_ns: u64,
        typed: bool,
    ) -> Flow {
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
        // The typed view first (an object only: serde would also read a struct from an
        // array); anything it refuses goes through a Value.
        if typed && data.as_bytes()[0] == b'{' {
            // The last content chunk's shape again: only the text is new.
            if let Some((index, text)) = self.memo.content(data) {
                return self.on_chunk(&ChunkView::content_only(index, text), arrival_ns);
            }
            // Filled in place by the scanner (see `scan::scan_into`); the serde reading
            // when the scanner does not read this shape.
            let mut chunk = ChunkView::default();
            let scanned = scan::scan_into(data, &mut chunk);
            if !scanned {
                match ChunkView::parse(data) {
                    Some(parsed) => chunk = parsed,
                    None => return self.on_event_value(data, arrival_ns),
                }
            }
            if chunk.error.is_some() || chunk.object.as_ref().is_some_and(|o| o.0 == "error") {
                return self.on_event_value(data, arrival_ns);
            }
            // Learned only here: after the error check, and always followed by
            // `on_chunk` of the same chunk. A memo read leaves `model` and `object` out
            // (`ChunkView::content_only`): its bytes there are the learned chunk's, whose
            // model `read_model` has already seen, and which was no error.
            if scanned {
                self.memo.learn(data, &chunk);
            }
            return self.on_chunk(&chunk, arrival_ns);
        }
        self.on_event_value(data, arrival_ns)
    }

    /// The lenient path: `data` as a `Value` (errors, unexpected types, non-objects).
    #[cold]
    fn on_event_value(&mut self, data: &str, arrival_ns: u64) -> Flow {
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
        let chunk = ChunkView::from_value(&value);
        self.on_chunk(&chunk, arrival_ns)
    }

    /// Applies one chunk without an in-band error: its choices, then usage and timings.
    fn on_chunk(&mut self, chunk: &ChunkView<'_>, arrival_ns: u64) -> Flow {
        if let Some(choices) = &chunk.choices
            && !choices.is_empty()
        {
            self.on_choices(choices, arrival_ns);
        }
        self.read_usage_and_timings(chunk);
        self.read_model(chunk);
        Flow::Continue
    }

    /// The first `model` a response names, kept when it is a plausible model identifier
    /// (at most 256 bytes, no control characters); anything else is left out.
    fn read_model(&mut self, chunk: &ChunkView<'_>) {
        if self.response_model.is_none()
            && let Some(JStr(m)) = &chunk.model
            && !m.is_empty()
            && m.len() <= 256
            && !m.chars().any(char::is_control)
        {
            self.response_model = Some(m.to_string());
        }
    }

    fn read_usage_and_timings(&mut self, chunk: &ChunkView<'_>) {
        if let Some(u) = &chunk.usage {
            self.usage = Some(u.0.usage());
        }
        if let Some(t) = &chunk.timings {
            self.timings = Some(LlamaTimings {
                cache_n: t.0.cache_n,
                prompt_n: t.0.prompt_n,
            });
        }
    }

    fn on_choices(&mut self, choices: &Choices<'_>, arrival_ns: u64) {
        self.chunk_count += 1;
        let chunk = self.chunk_count;
        let mut token = false;
        let mut visible = false;
        for (pos, c) in choices.iter().enumerate() {
            if let Some(fr) = &c.finish_reason {
                self.finish_reason = Some(fr.0.to_string());
            }
            let index = c.index.unwrap_or(pos as u64);
            let room = self.gaps_recorded < MAX_RECORDED_GAPS;
            let (t, v, gaps) = match self.choice_mut(index) {
                Some(state) => {
                    let before = state.itl_ns.len();
                    let (t, v) = state.apply_delta(c, chunk, arrival_ns, room);
                    (t, v, state.itl_ns.len() - before)
                }
                None => {
                    let (t, v) = ChoiceState::new(index).apply_delta(c, chunk, arrival_ns, room);
                    (t, v, 0)
                }
            };
            self.gaps_recorded += gaps;
            token |= t;
            visible |= v;
        }
        if token {
            self.token_event_count += 1;
            if self.ttft_ns.is_none() {
                self.ttft_ns = Some(arrival_ns);
            }
            self.last_token_ns = Some(arrival_ns);
        }
        if visible && self.ttfo_ns.is_none() {
            self.ttfo_ns = Some(arrival_ns);
        }
    }

    /// The state of choice `index`, opened on first sight; `None` past
    /// [`MAX_TRACKED_CHOICES`] distinct choices (counted in `untracked_choices`).
    #[inline]
    fn choice_mut(&mut self, index: u64) -> Option<&mut ChoiceState> {
        // The common case, one choice: the first entry.
        let pos = match self.choices.first() {
            Some(c) if c.index == index => Some(0),
            _ => self.choices.iter().position(|c| c.index == index),
        };
        match pos {
            Some(p) => Some(&mut self.choices[p]),
            None if self.choices.len() < MAX_TRACKED_CHOICES => {
                self.choices.push(ChoiceState::new(index));
                self.choices.last_mut()
            }
            None => {
                self.untracked_choices += 1;
                None
            }
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
        for (pos, choice) in choices.iter().enumerate() {
            if let Some(fr) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(fr.to_string());
            }
            let index = choice
                .get("index")
                .and_then(Value::as_u64)
                .unwrap_or(pos as u64);
            if let Some(state) = self.choice_mut(index) {
                state.apply_message(choice);
            }
        }
        let chunk = ChunkView::from_value(&value);
        self.read_usage_and_timings(&chunk);
        self.read_model(&chunk);
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
    /// Tokens: server `usage` when present; usage that is all-zero despite non-empty
    /// output is dropped with [`RecordWarning::UsageAllZero`] (C12 D); without usage,
    /// `completion_tokens` stays `None` and `completion_tokens_estimate` is the client
    /// estimate over the whole output of every choice ([`estimate_all`]). Prompt and cached
    /// tokens fall back to llama.cpp `timings` (`prompt_n + cache_n`, `cache_n`);
    /// otherwise they stay `None`.
    ///
    /// Choices: the record's output, tool calls and `finish_reason` are choice 0's (see the
    /// module docs; `finish_reason` falls back to the last one of any choice); `itl_ns`
    /// holds every choice's gaps; `choices` lists each choice when more than one came back
    /// or more than one was asked for.
    pub fn finish(mut self, head: RequestHead, end_ns: u64, eof_clean: bool) -> RequestRecord {
        let mut rec = head.record();

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
        rec.token_event_count = self.token_event_count;
        rec.chunk_count = self.chunk_count;
        rec.response_model = self.response_model.take();

        let received = self.choices.len() as u64 + self.untracked_choices;
        let requested = u64::from(head.choices_requested.unwrap_or(1));
        let mismatch =
            received > requested || (status == RequestStatus::Success && received < requested);
        if mismatch {
            self.warn(RecordWarning::ChoiceCountMismatch);
        }
        if self.choices.iter().any(|c| c.gaps_dropped) {
            self.warn(RecordWarning::ItlTruncated);
        }
        // Choice 0 first, then by index.
        self.choices.sort_by_key(|c| c.index);
        let mut parts: Vec<(ChoiceRecord, Vec<u64>)> = self
            .choices
            .into_iter()
            .map(ChoiceState::into_parts)
            .collect();
        let list_choices = parts.len() > 1 || requested > 1;
        rec.itl_ns = match (parts.len(), list_choices) {
            (1, false) => std::mem::take(&mut parts[0].1),
            _ => parts
                .iter()
                .flat_map(|(_, gaps)| gaps.iter().copied())
                .collect(),
        };
        let output_bytes_nonempty = parts.iter().any(|(c, _)| !c.output.is_empty());
        let estimate = estimate_all(parts.iter().map(|(c, _)| &c.output));
        let mut choices: Vec<ChoiceRecord> = parts
            .into_iter()
            .map(|(mut c, gaps)| {
                c.itl_ns = gaps;
                c
            })
            .collect();
        // Choice 0 (the lowest index) is the request's output; the list keeps every
        // choice, the primary's output included.
        let primary = match (list_choices, choices.first()) {
            (true, Some(first)) => first.clone(),
            _ => choices.pop().unwrap_or_default(),
        };
        rec.finish_reason = primary.finish_reason.clone().or(self.finish_reason);

        let output = primary.output;
        // The head's own warnings (a slow connect) first, then the body's.
        let mut warnings = std::mem::take(&mut rec.warnings);
        for w in self.warnings {
            if !warnings.contains(&w) {
                warnings.push(w);
            }
        }
        let mut usage = self.usage;
        if usage.is_some_and(|u| u.is_all_zero()) && output_bytes_nonempty {
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
            rec.completion_tokens_estimate = Some(estimate);
        }
        rec.tool_call_count = output.tool_calls.len() as u64;
        rec.warnings = warnings;
        rec.output = output;
        if list_choices {
            rec.choices = choices;
        }
        rec
    }
}

fn non_empty<'a>(v: &'a Option<JStr<'_>>) -> Option<&'a str> {
    match v {
        Some(JStr(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

fn non_empty_value(v: Option<&Value>) -> Option<&str> {
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

mod scan;
mod view;

#[cfg(test)]
mod tests;
