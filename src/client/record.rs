//! The per-request measurement record and its closed vocabularies.
//!
//! Every timestamp is an ABSOLUTE `elapsed_ns` on the run's [`crate::clock::RunClock`]
//! (DESIGN §5, ADR-003 "shared reference instant"); the `*_ms` helpers turn them into
//! durations relative to [`RequestRecord::send_ns`]. Missing is `None` / JSON `null`, never 0.
//! Response content (visible text, reasoning, tool calls) lives in
//! [`RequestRecord::output`], which is `#[serde(skip)]` so it never reaches an artifact.

use serde::{Deserialize, Serialize};

/// Outcome of one request (field cases C07, C12): `success` only when the stream ended with
/// `data: [DONE]`, or with a clean EOF after a `finish_reason`, and no in-band error was seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RequestStatus {
    /// The request completed; its timings enter the TTFT/E2E/throughput populations.
    Success,
    /// The request failed; see [`RequestRecord::failure_code`]. Excluded from latency and
    /// throughput populations (C07: completed=0, failed=1).
    Failed,
}

/// Why a request failed: a closed set, serialized in snake_case (`as_str` gives the same text).
///
/// Source: issue 2 item 3 ("typed failure code"), field cases C03, C07, C30.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCode {
    /// No response head was obtained: connection refused/reset, TLS failure, DNS, or the
    /// connection closed before the response head.
    Connect,
    /// The server answered with a non-2xx status; [`RequestRecord::http_status`] keeps it.
    HttpStatus,
    /// The whole-request deadline (`ClientConfig::request_timeout`, from send) passed.
    Timeout,
    /// No bytes at all (not even an SSE comment) arrived for `ClientConfig::idle_timeout`
    /// after the response head (C03: comments count as liveness).
    IdleTimeout,
    /// An error reported in-band after HTTP 200 (C07 A `{"error":{..}}`, B `{"error":"..."}`,
    /// C `event: error`), or an error object in a 200 non-streamed body.
    StreamError,
    /// The stream ended cleanly with neither a `finish_reason` nor `data: [DONE]` (C07 D).
    IncompleteStream,
    /// One SSE event (bytes buffered since the last event boundary), or a non-streamed body,
    /// exceeded `ClientConfig::max_event_bytes` (C30).
    EventTooLarge,
    /// A data event was not a JSON object (bad JSON), or the byte stream was not UTF-8.
    MalformedEvent,
    /// The response body failed mid-stream (connection reset, truncated chunked body).
    Disconnect,
    /// A non-streamed body could not be parsed as a chat completion.
    InvalidResponse,
}

impl FailureCode {
    /// The snake_case name, identical to the serde form (e.g. `"idle_timeout"`).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::Connect => "connect",
            FailureCode::HttpStatus => "http_status",
            FailureCode::Timeout => "timeout",
            FailureCode::IdleTimeout => "idle_timeout",
            FailureCode::StreamError => "stream_error",
            FailureCode::IncompleteStream => "incomplete_stream",
            FailureCode::EventTooLarge => "event_too_large",
            FailureCode::MalformedEvent => "malformed_event",
            FailureCode::Disconnect => "disconnect",
            FailureCode::InvalidResponse => "invalid_response",
        }
    }

    /// Every code, in declaration order (for closed-mapping checks).
    pub const ALL: [FailureCode; 10] = [
        FailureCode::Connect,
        FailureCode::HttpStatus,
        FailureCode::Timeout,
        FailureCode::IdleTimeout,
        FailureCode::StreamError,
        FailureCode::IncompleteStream,
        FailureCode::EventTooLarge,
        FailureCode::MalformedEvent,
        FailureCode::Disconnect,
        FailureCode::InvalidResponse,
    ];
}

impl std::fmt::Display for FailureCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where `completion_tokens` came from (DESIGN §5, field cases C11, C12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// `usage.completion_tokens` reported by the server.
    Server,
    /// The client estimate [`estimate_tokens`] over the whole concatenated output
    /// (one pass, never per chunk — C11).
    ClientEstimate,
}

/// A non-fatal oddity noticed while reading a response (closed set, snake_case).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordWarning {
    /// `usage` reported all-zero counts although output was non-empty; the usage was
    /// treated as missing (C12 D).
    UsageAllZero,
    /// A streaming request was answered with a non-SSE (JSON) body; it was parsed as a
    /// non-streamed response and has no TTFT.
    NotStreamed,
    /// The first attempt died on a pooled connection that the server had already closed
    /// (no response head; e.g. llama-server closes after every streamed response while
    /// advertising keep-alive). The request was sent once more on a fresh connection;
    /// `send_ns` is the second send, `scheduled_ns` keeps the original due time.
    RetriedStaleConnection,
    /// The response carried more choices than the request's `n` asked for, or (a
    /// successful one) fewer; `choices` lists what came back (issue 13 item 5).
    ChoiceCountMismatch,
}

/// One assembled tool call (field case C09).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolCall {
    /// The server's call id; `call_<k>` (k = position in the turn) when the server sent none.
    pub id: String,
    /// True when [`ToolCall::id`] was synthesized because the server sent no id.
    pub id_synthesized: bool,
    /// Function name.
    pub name: String,
    /// Argument JSON text, fragments concatenated; `{}` when none was ever sent (C09 D).
    pub arguments: String,
}

/// The assistant's output for one request. Never serialized (response content must not
/// reach any artifact); drivers and graders read it in memory.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AssistantOutput {
    /// Concatenated visible `content` (chat) or `text` (completions).
    pub text: String,
    /// Concatenated `reasoning_content` / `reasoning` deltas.
    pub reasoning: String,
    /// Tool calls assembled by index and id, in order of first appearance.
    pub tool_calls: Vec<ToolCall>,
}

impl AssistantOutput {
    /// True when the turn produced at least one tool call, whatever the `finish_reason`
    /// (C09 B/C: servers send `stop` on tool-call turns).
    pub fn is_tool_call_turn(&self) -> bool {
        !self.tool_calls.is_empty()
    }

    /// True when no text, reasoning or tool call was produced.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty() && self.reasoning.is_empty() && self.tool_calls.is_empty()
    }
}

/// The client-side output-token estimate: `ceil(bytes / 4)` of the UTF-8 concatenation of
/// reasoning text, visible text and every tool call's name and arguments, computed ONCE over
/// the whole output (C11: never per chunk). 0 for empty output.
///
/// This is a coarse stand-in for a tokenizer (about 4 bytes per token for English BPE
/// vocabularies); records carrying it say `token_source = client_estimate`.
pub fn estimate_tokens(output: &AssistantOutput) -> u64 {
    estimate_tokens_all([output])
}

/// [`estimate_tokens`] over several choices' outputs at once: `ceil(bytes / 4)` of all of
/// them together (one pass over the whole output, as server `usage` counts every choice).
/// Equal to [`estimate_tokens`] for one output.
pub fn estimate_tokens_all<'a>(outputs: impl IntoIterator<Item = &'a AssistantOutput>) -> u64 {
    let mut bytes = 0usize;
    for output in outputs {
        bytes += output.text.len() + output.reasoning.len();
        for call in &output.tool_calls {
            bytes += call.name.len() + call.arguments.len();
        }
    }
    (bytes as u64).div_ceil(4)
}

/// One choice of a response with several (`n > 1`, issue 13 item 5): its own timing on the
/// run clock (absolute `elapsed_ns`, like the request's) and outcome. The request-level
/// figures of [`RequestRecord`] stay defined over all choices (TTFT = first token event of
/// any choice); its output is choice 0's.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct ChoiceRecord {
    /// `choices[].index` as sent (a choice without one: its position in the array).
    pub index: u64,
    /// Arrival of this choice's first token event (elapsed ns).
    pub ttft_ns: Option<u64>,
    /// Arrival of this choice's first non-empty visible content (elapsed ns).
    pub ttfo_ns: Option<u64>,
    /// Arrival of this choice's last token event (elapsed ns).
    pub last_token_ns: Option<u64>,
    /// One sample (ns) per gap between this choice's consecutive token events.
    pub itl_ns: Vec<u64>,
    /// Number of events carrying a token of this choice.
    pub token_event_count: u64,
    /// Last non-null `finish_reason` of this choice.
    pub finish_reason: Option<String>,
    /// Number of tool calls assembled for this choice.
    pub tool_call_count: u64,
    /// This choice's content; never serialized.
    #[serde(skip)]
    pub output: AssistantOutput,
}

impl ChoiceRecord {
    /// This choice's TTFT in ms from `send_ns` (the request's send).
    pub fn ttft_ms(&self, send_ns: u64) -> Option<f64> {
        self.ttft_ns.map(|t| ns_to_ms(t.saturating_sub(send_ns)))
    }

    /// This choice's ITL samples in ms.
    pub fn itl_ms(&self) -> Vec<f64> {
        self.itl_ns.iter().map(|&g| ns_to_ms(g)).collect()
    }
}

/// The job note for requests that came back with another number of choices than asked
/// for ([`RecordWarning::ChoiceCountMismatch`]); `None` when there is none. `requested` is
/// the job's `n` (`None`: one choice). One line for the whole job, e.g. `choices: 2 of 4
/// requests returned another number of choices than n = 2 asked for (1 choice: 2 requests);
/// marked choice_count_mismatch` — the per-request detail is in each record.
pub fn choice_count_note<'a>(
    requested: Option<u32>,
    records: impl IntoIterator<Item = &'a RequestRecord>,
) -> Option<String> {
    let mut total = 0usize;
    let mut by_count: std::collections::BTreeMap<usize, usize> = Default::default();
    for r in records {
        total += 1;
        if r.warnings.contains(&RecordWarning::ChoiceCountMismatch) {
            // A record lists its choices when more than one came back or was asked for;
            // a mismatch without a list is one choice asked for and none returned.
            let received = r.choices.len();
            *by_count.entry(received).or_default() += 1;
        }
    }
    let mismatched: usize = by_count.values().sum();
    if mismatched == 0 {
        return None;
    }
    let detail: Vec<String> = by_count
        .iter()
        .map(|(c, k)| {
            format!(
                "{c} choice{}: {k} request{}",
                if *c == 1 { "" } else { "s" },
                if *k == 1 { "" } else { "s" }
            )
        })
        .collect();
    Some(format!(
        "choices: {mismatched} of {total} requests returned another number of choices than \
         n = {} asked for ({}); marked {}",
        requested.unwrap_or(1),
        detail.join(", "),
        "choice_count_mismatch"
    ))
}

/// Longest error text kept in a record, in bytes (cut on a char boundary, `…` appended).
pub const MAX_ERROR_BYTES: usize = 240;

/// Makes server-provided error text safe for a record: control characters become spaces,
/// whitespace runs collapse to one space, and the result is cut to [`MAX_ERROR_BYTES`].
pub fn sanitize_error(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_ERROR_BYTES + 4));
    let mut last_space = true;
    for c in text.chars() {
        let c = if c.is_control() || c.is_whitespace() {
            ' '
        } else {
            c
        };
        if c == ' ' {
            if last_space {
                continue;
            }
            last_space = true;
        } else {
            last_space = false;
        }
        if out.len() + c.len_utf8() > MAX_ERROR_BYTES {
            while out.ends_with(' ') {
                out.pop();
            }
            out.push('…');
            return out;
        }
        out.push(c);
    }
    while out.ends_with(' ') {
        out.pop();
    }
    out
}

/// The record of one request: timing, tokens, outcome. Serialized into `report.json`
/// (every `Option` as `null`); [`RequestRecord::output`] is never serialized.
///
/// Times are ABSOLUTE `elapsed_ns` on the run clock. Definitions follow the field cases'
/// reference semantics (cases README §0): TTFT = arrival of the read completing the first
/// token event (content, reasoning or tool-call delta), TTFO = first non-empty visible
/// content, ITL = one sample per gap between consecutive token events, E2E = arrival of
/// `data: [DONE]` (or clean EOF after a finish_reason). Durations are measured from
/// `send_ns`, taken just before the request is handed to the HTTP stack (the client cannot
/// observe the last byte being written).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RequestRecord {
    /// Caller-chosen id, also sent as the `X-Request-ID` header.
    pub request_id: String,
    /// When the request was scheduled to be sent (elapsed ns); `send_ns - scheduled_ns` is
    /// the schedule lag (no coordinated omission).
    pub scheduled_ns: u64,
    /// Just before the request was sent (elapsed ns).
    pub send_ns: u64,
    /// When the response head arrived (elapsed ns); `null` when none did.
    pub headers_ns: Option<u64>,
    /// Arrival of the first non-empty body read (elapsed ns).
    pub first_byte_ns: Option<u64>,
    /// Arrival of the first token event (elapsed ns); `null` if none (C01 C) or not streamed.
    pub ttft_ns: Option<u64>,
    /// Arrival of the first event with non-empty visible content (elapsed ns) (C08).
    pub ttfo_ns: Option<u64>,
    /// Arrival of the last token event (elapsed ns).
    pub last_token_ns: Option<u64>,
    /// End of the request (elapsed ns): `[DONE]` arrival, clean EOF, or the failure time.
    pub end_ns: Option<u64>,
    /// Inter-token latencies: one sample (ns) per gap between consecutive token events of
    /// one choice (with several choices: every choice's gaps, choice by choice).
    pub itl_ns: Vec<u64>,
    /// Number of token events.
    pub token_event_count: u64,
    /// Number of stream chunks carrying at least one choice (role-only and finish-only
    /// chunks included; usage-only `choices: []` chunks and `[DONE]` excluded) (C11).
    pub chunk_count: u64,
    /// Prompt tokens: `usage.prompt_tokens`, else llama.cpp `timings.prompt_n + cache_n`.
    pub prompt_tokens: Option<u64>,
    /// Output tokens: server `usage.completion_tokens`, else the client estimate (see
    /// `token_source`).
    pub completion_tokens: Option<u64>,
    /// `usage.total_tokens` as reported.
    pub total_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`, else llama.cpp `timings.cache_n`;
    /// `null` when the server does not say (C12 B), `0` for a real miss (C12 C).
    pub cached_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens` (C08).
    pub reasoning_tokens: Option<u64>,
    /// Source of `completion_tokens`; `null` when no response was read.
    pub token_source: Option<TokenSource>,
    /// Last non-null `finish_reason` seen.
    pub finish_reason: Option<String>,
    /// Success or failure.
    pub status: RequestStatus,
    /// Typed failure reason; `null` on success.
    pub failure_code: Option<FailureCode>,
    /// HTTP status of the response head; `null` when none arrived.
    pub http_status: Option<u16>,
    /// Sanitized, length-capped error text (see [`sanitize_error`]); `null` on success.
    pub error: Option<String>,
    /// Non-fatal oddities (closed set).
    pub warnings: Vec<RecordWarning>,
    /// Number of assembled tool calls (the calls themselves are in `output`).
    pub tool_call_count: u64,
    /// Whether the request asked for a streamed response.
    pub stream: bool,
    /// The `n` (choices) the request asked for; absent when it did not set one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub choices_requested: Option<u32>,
    /// Each choice's timing, by index, when more than one choice came back or was asked
    /// for (absent otherwise: the request's own fields are its single choice's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub choices: Vec<ChoiceRecord>,
    /// Response content (choice 0's); never serialized.
    #[serde(skip)]
    pub output: AssistantOutput,
}

fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / 1_000_000.0
}

impl RequestRecord {
    /// A record with only the request-side fields set and every observation missing;
    /// `status = failed` until a caller says otherwise.
    pub fn new(request_id: &str, scheduled_ns: u64, send_ns: u64, stream: bool) -> Self {
        Self {
            request_id: request_id.to_string(),
            scheduled_ns,
            send_ns,
            headers_ns: None,
            first_byte_ns: None,
            ttft_ns: None,
            ttfo_ns: None,
            last_token_ns: None,
            end_ns: None,
            itl_ns: Vec::new(),
            token_event_count: 0,
            chunk_count: 0,
            prompt_tokens: None,
            completion_tokens: None,
            total_tokens: None,
            cached_tokens: None,
            reasoning_tokens: None,
            token_source: None,
            finish_reason: None,
            status: RequestStatus::Failed,
            failure_code: None,
            http_status: None,
            error: None,
            warnings: Vec::new(),
            tool_call_count: 0,
            stream,
            choices_requested: None,
            choices: Vec::new(),
            output: AssistantOutput::default(),
        }
    }

    /// True when `status == success`.
    pub fn is_success(&self) -> bool {
        self.status == RequestStatus::Success
    }

    /// Output tokens (alias of `completion_tokens`; see `token_source`).
    pub fn output_tokens(&self) -> Option<u64> {
        self.completion_tokens
    }

    /// Schedule lag `send_ns - scheduled_ns` in ns (0 when sent early).
    pub fn schedule_lag_ns(&self) -> u64 {
        self.send_ns.saturating_sub(self.scheduled_ns)
    }

    /// TTFT in ms from `send_ns`; `None` without a token event.
    pub fn ttft_ms(&self) -> Option<f64> {
        self.ttft_ns
            .map(|t| ns_to_ms(t.saturating_sub(self.send_ns)))
    }

    /// TTFO (time to first visible output) in ms from `send_ns`.
    pub fn ttfo_ms(&self) -> Option<f64> {
        self.ttfo_ns
            .map(|t| ns_to_ms(t.saturating_sub(self.send_ns)))
    }

    /// Arrival of the last token event in ms from `send_ns`.
    pub fn last_token_ms(&self) -> Option<f64> {
        self.last_token_ns
            .map(|t| ns_to_ms(t.saturating_sub(self.send_ns)))
    }

    /// E2E in ms from `send_ns` to `end_ns`.
    pub fn e2e_ms(&self) -> Option<f64> {
        self.end_ns
            .map(|t| ns_to_ms(t.saturating_sub(self.send_ns)))
    }

    /// ITL samples in ms.
    pub fn itl_ms(&self) -> Vec<f64> {
        self.itl_ns.iter().map(|&g| ns_to_ms(g)).collect()
    }

    /// TPOT in ms: `(last_token − ttft) / (output_tokens − 1)` (cases README §0);
    /// `None` when either time is missing or `output_tokens ≤ 1`.
    pub fn tpot_ms(&self) -> Option<f64> {
        let first = self.ttft_ns?;
        let last = self.last_token_ns?;
        let n = self.completion_tokens?;
        if n <= 1 {
            return None;
        }
        Some(ns_to_ms(last.saturating_sub(first)) / (n - 1) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_codes_serialize_as_their_names() {
        for code in FailureCode::ALL {
            let json = serde_json::to_string(&code).unwrap();
            assert_eq!(json, format!("\"{}\"", code.as_str()));
        }
    }

    #[test]
    fn record_serializes_missing_as_null_and_never_output() {
        let mut r = RequestRecord::new("r1", 5, 10, true);
        r.output.text = "SECRET-RESPONSE".into();
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"ttft_ns\":null"));
        assert!(json.contains("\"cached_tokens\":null"));
        assert!(json.contains("\"failure_code\":null"));
        assert!(!json.contains("SECRET-RESPONSE"));
        assert!(!json.contains("output"));
        let back: RequestRecord = serde_json::from_str(&json).unwrap();
        assert_eq!(back.request_id, "r1");
        assert!(back.output.is_empty());
    }

    #[test]
    fn sanitize_collapses_controls_and_caps_length() {
        assert_eq!(sanitize_error("a\n\tb\u{0}  c "), "a b c");
        let long = "é".repeat(500);
        let s = sanitize_error(&long);
        assert!(s.len() <= MAX_ERROR_BYTES + '…'.len_utf8());
        assert!(s.ends_with('…'));
    }

    #[test]
    fn estimate_is_whole_text_ceil_bytes_over_4() {
        let out = AssistantOutput {
            text: "Hello world".into(),
            ..Default::default()
        };
        assert_eq!(estimate_tokens(&out), 3);
        assert_eq!(estimate_tokens(&AssistantOutput::default()), 0);
    }

    #[test]
    fn tpot_undefined_for_one_token() {
        let mut r = RequestRecord::new("r", 0, 0, true);
        r.ttft_ns = Some(100);
        r.last_token_ns = Some(100);
        r.completion_tokens = Some(1);
        assert_eq!(r.tpot_ms(), None);
        r.completion_tokens = Some(0);
        assert_eq!(r.tpot_ms(), None);
    }
}
