//! The per-request measurement record and its closed vocabularies (moved here from
//! `client::record`, which re-exports them).
//!
//! Every timestamp is an ABSOLUTE `elapsed_ns` on the run's clock
//! (docs/measurement.md, docs/samples.md "The clock"); the `*_ms` helpers turn them into
//! durations relative to [`RequestRecord::send_ns`]. Missing is `None` / JSON `null`, never 0.
//! Response content (visible text, reasoning, tool calls) lives in
//! [`RequestRecord::output`], which is `#[serde(skip)]` so it never reaches an artifact.

use serde::{Deserialize, Serialize};

use super::basis::{EstimateMethod, TokenCount, TokenEstimate, TokenSource};

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

/// Why a request, a step or a span failed: ONE closed set for the client's records, the
/// runner's steps and the timeline's end events (serialized in snake_case; `as_str` gives
/// the same text).
///
/// Source: field cases C03, C07, C30; the set is listed in
/// docs/artifacts.md "Timeline capture rules" (a code from a closed set, never exception text).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCode {
    /// No response head was obtained: connection refused/reset, TLS failure, DNS, or the
    /// connection closed before the response head.
    Connect,
    /// The response head (status line and headers) exceeded the client's head limit: the
    /// server answered, with a head too large to read.
    HeadTooLarge,
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
    /// A fixture tool failed (refused path, bad arguments, missing entry); the step's
    /// `tool_error` says which.
    ToolError,
    /// The SWE harness exceeded its timeout.
    HarnessTimeout,
    /// The SWE harness exited non-zero or could not start.
    HarnessFailed,
    /// Cut short by Ctrl-C / SIGTERM.
    Cancelled,
}

impl FailureCode {
    /// The snake_case name, identical to the serde form (e.g. `"idle_timeout"`).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureCode::Connect => "connect",
            FailureCode::HeadTooLarge => "head_too_large",
            FailureCode::HttpStatus => "http_status",
            FailureCode::Timeout => "timeout",
            FailureCode::IdleTimeout => "idle_timeout",
            FailureCode::StreamError => "stream_error",
            FailureCode::IncompleteStream => "incomplete_stream",
            FailureCode::EventTooLarge => "event_too_large",
            FailureCode::MalformedEvent => "malformed_event",
            FailureCode::Disconnect => "disconnect",
            FailureCode::InvalidResponse => "invalid_response",
            FailureCode::ToolError => "tool_error",
            FailureCode::HarnessTimeout => "harness_timeout",
            FailureCode::HarnessFailed => "harness_failed",
            FailureCode::Cancelled => "cancelled",
        }
    }

    /// Every code, in declaration order (for closed-mapping checks).
    pub const ALL: [FailureCode; 15] = [
        FailureCode::Connect,
        FailureCode::HeadTooLarge,
        FailureCode::HttpStatus,
        FailureCode::Timeout,
        FailureCode::IdleTimeout,
        FailureCode::StreamError,
        FailureCode::IncompleteStream,
        FailureCode::EventTooLarge,
        FailureCode::MalformedEvent,
        FailureCode::Disconnect,
        FailureCode::InvalidResponse,
        FailureCode::ToolError,
        FailureCode::HarnessTimeout,
        FailureCode::HarnessFailed,
        FailureCode::Cancelled,
    ];

    /// The code spelled `s`, if it is one of the closed set; `None` for anything else.
    pub fn from_code(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl std::fmt::Display for FailureCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
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
    /// successful one) fewer; `choices` lists what came back.
    ChoiceCountMismatch,
    /// The response had more token events than the [`MAX_RECORDED_GAPS`] inter-token gaps
    /// a record keeps: `token_event_count` counts them all, `itl` holds the first ones.
    ItlTruncated,
    /// The request asked for a fixed output length (`output_tokens`) and came back with
    /// fewer output tokens (server `usage`, else the client's estimate) than asked:
    /// the engine ignored the switch or stopped early.
    ShortOutput,
    /// Opening the request's connection took [`CONNECT_RETRANSMIT_NS`] or more
    /// (`connect_ns`): Linux retransmits an unanswered SYN after 1 s, so on loopback or a
    /// LAN this is a dropped SYN (a full listen backlog) waited out inside the request's
    /// TTFT.
    ConnectRetransmit,
}

/// A connect this slow is named [`RecordWarning::ConnectRetransmit`]: 0.9 s, just under
/// Linux's initial SYN retransmission timeout of 1 s (`TCP_TIMEOUT_INIT`).
pub const CONNECT_RETRANSMIT_NS: u64 = 900_000_000;

/// The most inter-token gaps one request's record keeps over all its choices (524,288:
/// four 128k-token answers); a longer response's further gaps are counted in
/// `token_event_count`, not kept, and the record says [`RecordWarning::ItlTruncated`].
/// It bounds a `requests.jsonl` line (`fsio::limits::REQUESTS_LINE_BYTES`).
pub const MAX_RECORDED_GAPS: usize = 1 << 19;

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
    /// Bytes of visible text received beyond the [`MAX_KEPT_TEXT_BYTES`] kept in `text`
    /// (counted, not kept). 0 when the whole text is kept.
    pub text_omitted_bytes: u64,
    /// Bytes of reasoning received beyond the [`MAX_KEPT_TEXT_BYTES`] kept in `reasoning`.
    pub reasoning_omitted_bytes: u64,
}

/// The most bytes of one choice's visible text (and, apart, of its reasoning) the client
/// keeps for grading and the next turn; the rest is counted
/// ([`AssistantOutput::text_omitted_bytes`]), never kept, so a response of any length
/// holds a bounded amount of memory (about a million tokens of English fit).
pub const MAX_KEPT_TEXT_BYTES: usize = 4 << 20;

/// Appends `s` to `kept`, up to [`MAX_KEPT_TEXT_BYTES`] in all (cut at a character
/// boundary); the bytes not kept are added to `omitted`.
pub fn keep_text(kept: &mut String, omitted: &mut u64, s: &str) {
    let room = MAX_KEPT_TEXT_BYTES.saturating_sub(kept.len());
    if *omitted == 0 && s.len() <= room {
        kept.push_str(s);
        return;
    }
    let mut cut = room.min(s.len());
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    if *omitted == 0 {
        kept.push_str(&s[..cut]);
    } else {
        cut = 0;
    }
    *omitted = omitted.saturating_add((s.len() - cut) as u64);
}

impl AssistantOutput {
    /// Whether the visible text was longer than what was kept ([`MAX_KEPT_TEXT_BYTES`]).
    pub fn text_truncated(&self) -> bool {
        self.text_omitted_bytes > 0
    }

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
/// vocabularies); records carrying it hold it as `completion_tokens_estimate` with method
/// [`EstimateMethod::Utf8BytesDiv4`], never as `completion_tokens`.
pub fn estimate_tokens(output: &AssistantOutput) -> u64 {
    estimate_tokens_all([output])
}

/// [`estimate_tokens`] over several choices' outputs at once (`n > 1`): `ceil(bytes / 4)`
/// of all of them together, one pass over the whole output, as server `usage` counts every
/// choice. Equal to [`estimate_tokens`] for one output.
pub fn estimate_tokens_all<'a>(outputs: impl IntoIterator<Item = &'a AssistantOutput>) -> u64 {
    let mut bytes = 0usize;
    for output in outputs {
        // Every byte received, kept or not.
        bytes += output.text.len() + output.reasoning.len();
        bytes += (output.text_omitted_bytes + output.reasoning_omitted_bytes) as usize;
        for call in &output.tool_calls {
            bytes += call.name.len() + call.arguments.len();
        }
    }
    (bytes as u64).div_ceil(4)
}

/// [`estimate_tokens`] as a [`TokenEstimate`] with its method.
pub fn estimate(output: &AssistantOutput) -> TokenEstimate {
    estimate_all([output])
}

/// [`estimate_tokens_all`] as a [`TokenEstimate`] with its method.
pub fn estimate_all<'a>(outputs: impl IntoIterator<Item = &'a AssistantOutput>) -> TokenEstimate {
    TokenEstimate {
        tokens: estimate_tokens_all(outputs),
        method: EstimateMethod::Utf8BytesDiv4,
    }
}

/// One choice of a response with several (`n > 1`): its own timing on the
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
    /// Bytes of this choice's visible text as received (kept or not); `null` when not
    /// known (a record read from a file written before records carried it). Never the text itself.
    #[serde(default)]
    pub text_bytes: Option<u64>,
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

/// Most bytes of server error text a report keeps per request or setup error (redacted
/// by [`redact_secrets`], cut on a char boundary with `…`).
pub const MAX_ERROR_EXCERPT_BYTES: usize = 512;

/// Credential markers whose following token is replaced by `[redacted]` (matched
/// case-insensitively): bearer tokens, `Authorization` and API-key header or query values.
const SECRET_MARKERS: [&str; 8] = [
    "bearer ",
    "basic ",
    "authorization:",
    "authorization=",
    "api_key=",
    "api-key:",
    "api_key:",
    "apikey=",
];

/// Server error text made fit for `report.json`: every occurrence of one of `secrets` (the
/// suite's API key) and the value after a credential marker (`Bearer …`, `Authorization:
/// …`, `api_key=…`) becomes `[redacted]`, then the text is cut to
/// [`MAX_ERROR_EXCERPT_BYTES`]. Pure.
pub fn redact_secrets(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        out = out.replace(s, "[redacted]");
        out = redact_fragments(&out, s);
    }
    let mut result = String::with_capacity(out.len());
    let lower = out.to_ascii_lowercase();
    let mut i = 0;
    while i < out.len() {
        let hit = SECRET_MARKERS
            .iter()
            .find(|m| lower[i..].starts_with(**m))
            .copied();
        if let Some(m) = hit {
            result.push_str(&out[i..i + m.len()]);
            let mut j = i + m.len();
            while out[j..].starts_with(' ') {
                j += 1;
            }
            // Keep the scheme word of an `Authorization: Bearer x` pair, redact the rest.
            let end = out[j..]
                .find(|c: char| {
                    c.is_whitespace() || matches!(c, '"' | '\'' | ',' | ';' | '&' | '}')
                })
                .map_or(out.len(), |k| j + k);
            if end > j {
                if matches!(&lower[j..end], "bearer" | "basic") {
                    // `Authorization: Bearer x`: the scheme word's own marker redacts x.
                    result.push_str(&out[i + m.len()..j]);
                    i = j;
                    continue;
                }
                result.push_str(&out[i + m.len()..j]);
                result.push_str("[redacted]");
            }
            i = end.max(j);
            continue;
        }
        let c = out[i..].chars().next().expect("in bounds");
        result.push(c);
        i += c.len_utf8();
    }
    cut(&result, MAX_ERROR_EXCERPT_BYTES)
}

/// `text` with every occurrence of one of `secrets` (the run's API key; values shorter than
/// 4 bytes are ignored) replaced by `[redacted]`, nothing else changed (pure). For server
/// strings a run stores that are not error text (a response's `model` or
/// `finish_reason`, a tool call's id, a listed model): a server may echo the key back in
/// any of them.
pub fn redact_known(text: &str, secrets: &[&str]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.len() >= 4) {
        if out.contains(s) {
            out = out.replace(s, "[redacted]");
        }
        out = redact_fragments(&out, s);
    }
    out
}

/// Bytes of a secret that make a fragment of it: a third of it, and at least 12 (more
/// than a key's common prefix such as `sk-proj-`), so that a part of a key echoed alone
/// (a streamed tool call id sent in pieces, a key cut by the server) is still found.
fn fragment_len(secret: &str) -> usize {
    (secret.len() / 3).max(12)
}

/// `text` with every run of bytes made of overlapping [`fragment_len`]-byte pieces of
/// `secret` replaced by `[redacted]` (pure; linear in `text` times the fragment length).
fn redact_fragments(text: &str, secret: &str) -> String {
    let n = fragment_len(secret);
    if secret.len() <= n || text.len() < n {
        return text.to_string();
    }
    let pieces: std::collections::HashSet<&[u8]> = secret.as_bytes().windows(n).collect();
    let b = text.as_bytes();
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, w) in b.windows(n).enumerate() {
        if !pieces.contains(w) || !text.is_char_boundary(i) || !text.is_char_boundary(i + n) {
            continue;
        }
        match runs.last_mut() {
            Some(r) if r.end >= i => r.end = i + n,
            _ => runs.push(i..i + n),
        }
    }
    if runs.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for r in runs {
        out.push_str(&text[last..r.start]);
        out.push_str("[redacted]");
        last = r.end;
    }
    out.push_str(&text[last..]);
    out
}

/// [`redact_known`] in place on an optional string.
pub fn redact_known_in(text: &mut Option<String>, secrets: &[&str]) {
    if let Some(t) = text.as_mut() {
        *t = redact_known(t, secrets);
    }
}

/// `s` cut to at most `max` bytes on a char boundary, `…` appended when cut.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The record of one request: timing, tokens, outcome. Serialized into `report.json`
/// (every `Option` as `null`); [`RequestRecord::output`] is never serialized.
///
/// Times are ABSOLUTE `elapsed_ns` on the run clock. Definitions follow the field cases'
/// reference semantics (docs/measurement.md): TTFT = arrival of the read completing the first
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
    /// Output tokens from server `usage.completion_tokens` only; `null` when the server
    /// reported none (see `completion_tokens_estimate`).
    pub completion_tokens: Option<u64>,
    /// The client's output-token estimate with its method, set only when the server
    /// reported no usable `completion_tokens` (never both).
    pub completion_tokens_estimate: Option<TokenEstimate>,
    /// `usage.total_tokens` as reported.
    pub total_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens`, else llama.cpp `timings.cache_n`;
    /// `null` when the server does not say (C12 B), `0` for a real miss (C12 C).
    pub cached_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens` (C08).
    pub reasoning_tokens: Option<u64>,
    /// Last non-null `finish_reason` seen.
    pub finish_reason: Option<String>,
    /// The first `model` the response named (a bounded identifier; `null` when none).
    #[serde(default)]
    pub response_model: Option<String>,
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
    /// A warm-up request of a load point: recorded, excluded from every statistic (its
    /// `requests.jsonl` line says `"wu":true`; absent = not warm-up).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warmup: bool,
    /// The fixed output length the request asked for (`output_tokens`, per choice);
    /// absent when it asked for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_asked: Option<u32>,
    /// The prompt tokens the request was built to have (a context job's size under a
    /// tokenizer source, chat template included); absent when none was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_asked: Option<u64>,
    /// How long this request waited on a connection being opened for it (TCP connect,
    /// plus the TLS handshake for `https`), ns: from the later of its send and the
    /// connect's start to the connect's end. Part of its TTFT, which still counts from
    /// `send_ns`. Absent when it went out on a connection already open (a warm pool, a
    /// kept-alive connection), never 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_ns: Option<u64>,
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
            completion_tokens_estimate: None,
            total_tokens: None,
            cached_tokens: None,
            reasoning_tokens: None,
            finish_reason: None,
            response_model: None,
            status: RequestStatus::Failed,
            failure_code: None,
            http_status: None,
            error: None,
            warnings: Vec::new(),
            tool_call_count: 0,
            stream,
            choices_requested: None,
            choices: Vec::new(),
            warmup: false,
            output_tokens_asked: None,
            prompt_tokens_asked: None,
            connect_ns: None,
            output: AssistantOutput::default(),
        }
    }

    /// Records what the request asked for: the fixed output length per choice
    /// and the prompt size it was built to. A successful request whose output-token count
    /// (server `usage`, else the client's estimate) is below `output_tokens × choices`
    /// gets [`RecordWarning::ShortOutput`]; one without any count is not judged.
    pub fn set_asked(&mut self, output_tokens: Option<u32>, prompt_tokens: Option<u64>) {
        self.output_tokens_asked = output_tokens;
        self.prompt_tokens_asked = prompt_tokens;
        let Some(asked) = output_tokens else { return };
        let choices = u64::from(self.choices_requested.unwrap_or(1).max(1));
        let short = self.is_success()
            && self
                .output_token_count()
                .is_some_and(|c| c.tokens < u64::from(asked).saturating_mul(choices));
        if short && !self.warnings.contains(&RecordWarning::ShortOutput) {
            self.warnings.push(RecordWarning::ShortOutput);
        }
    }

    /// Whether the request came back short of the fixed output length it asked for;
    /// `None` when it asked for none.
    pub fn short_output(&self) -> Option<bool> {
        self.output_tokens_asked
            .map(|_| self.warnings.contains(&RecordWarning::ShortOutput))
    }

    /// Records `connect_ns` (see the field), and names a connect that itself took
    /// [`CONNECT_RETRANSMIT_NS`] or more (`retransmit`, judged by the client without any
    /// wait for a connect slot) [`RecordWarning::ConnectRetransmit`]. A connect of 0 ns
    /// (no clock tick) is kept as 1 ns: the field is absent, never 0, when no connection
    /// was opened.
    pub fn set_connect(&mut self, connect_ns: Option<u64>, retransmit: bool) {
        self.connect_ns = connect_ns.map(|n| n.max(1));
        if self.connect_ns.is_some()
            && retransmit
            && !self.warnings.contains(&RecordWarning::ConnectRetransmit)
        {
            self.warnings.push(RecordWarning::ConnectRetransmit);
        }
    }

    /// `prompt_tokens − prompt_tokens_asked` when both are known.
    pub fn prompt_tokens_diff(&self) -> Option<i64> {
        let (got, asked) = (self.prompt_tokens?, self.prompt_tokens_asked?);
        Some((i128::from(got) - i128::from(asked)).clamp(i64::MIN.into(), i64::MAX.into()) as i64)
    }

    /// The record of a request Ctrl-C / SIGTERM cut short at `end_ns`: failed with code
    /// `cancelled` (never counted as a server failure code of its own kind).
    pub fn cancelled(
        request_id: &str,
        scheduled_ns: u64,
        send_ns: u64,
        stream: bool,
        end_ns: u64,
    ) -> Self {
        let mut r = Self::new(request_id, scheduled_ns, send_ns, stream);
        r.failure_code = Some(FailureCode::Cancelled);
        r.error = Some("cancelled".into());
        r.end_ns = Some(end_ns);
        r
    }

    /// Every server string of the record made fit to store: the error
    /// text through [`redact_secrets`], and `finish_reason`, `response_model` and each
    /// choice's `finish_reason` with the `secrets` (the run's API key) redacted.
    pub fn redact_server_text(&mut self, secrets: &[&str]) {
        self.error = self.error.take().map(|t| redact_secrets(&t, secrets));
        redact_known_in(&mut self.finish_reason, secrets);
        redact_known_in(&mut self.response_model, secrets);
        for c in &mut self.choices {
            redact_known_in(&mut c.finish_reason, secrets);
        }
    }

    /// True when `status == success`.
    pub fn is_success(&self) -> bool {
        self.status == RequestStatus::Success
    }

    /// Output tokens and their source: the server's `completion_tokens`, else the client
    /// estimate; `None` when neither exists.
    pub fn output_token_count(&self) -> Option<TokenCount> {
        TokenCount::of_usage(self.completion_tokens, self.completion_tokens_estimate)
    }

    /// Where the output-token count came from; `None` without one.
    pub fn token_source(&self) -> Option<TokenSource> {
        self.output_token_count().map(|c| c.source)
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

    /// TPOT in ms: `(last_token − ttft) / (output_tokens − 1)` (docs/measurement.md), with the
    /// source of the token count (a TPOT from an estimate is labelled `client_estimate`);
    /// `None` when either time is missing or `output_tokens ≤ 1`.
    pub fn tpot(&self) -> Option<(f64, TokenSource)> {
        let first = self.ttft_ns?;
        let last = self.last_token_ns?;
        let TokenCount { tokens: n, source } = self.output_token_count()?;
        if n <= 1 {
            return None;
        }
        Some((
            ns_to_ms(last.saturating_sub(first)) / (n - 1) as f64,
            source,
        ))
    }

    /// [`RequestRecord::tpot`] from server-reported tokens only; `None` otherwise.
    pub fn tpot_ms(&self) -> Option<f64> {
        self.tpot()
            .filter(|(_, s)| *s == TokenSource::Server)
            .map(|(v, _)| v)
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

    #[test]
    fn secrets_are_redacted_and_excerpts_bounded() {
        let t = "denied: Authorization: Bearer sk-live-123 for key sk-live-123, api_key=abc&x=1";
        let r = redact_secrets(t, &["sk-live-123"]);
        let unnamed = redact_secrets("Authorization: Bearer tok-9 and bearer tok-8", &[]);
        assert_eq!(
            unnamed,
            "Authorization: Bearer [redacted] and bearer [redacted]"
        );
        assert!(!r.contains("sk-live-123"), "{r}");
        assert!(!r.contains("abc"), "{r}");
        assert!(r.contains("Authorization: Bearer [redacted]"), "{r}");
        assert!(r.contains("api_key=[redacted]&x=1"), "{r}");
        let long = "é".repeat(1000);
        let c = redact_secrets(&long, &[]);
        assert!(c.len() <= MAX_ERROR_EXCERPT_BYTES + '…'.len_utf8());
        assert!(c.ends_with('…'));
        assert_eq!(redact_secrets("plain text", &[]), "plain text");
    }

    #[test]
    fn an_estimate_is_never_a_server_count() {
        let mut r = RequestRecord::new("r", 0, 0, true);
        r.ttft_ns = Some(0);
        r.last_token_ns = Some(30_000_000);
        r.completion_tokens_estimate = Some(TokenEstimate {
            tokens: 4,
            method: EstimateMethod::Utf8BytesDiv4,
        });
        assert_eq!(
            r.output_token_count(),
            Some(TokenCount {
                tokens: 4,
                source: TokenSource::ClientEstimate
            })
        );
        assert_eq!(r.tpot(), Some((10.0, TokenSource::ClientEstimate)));
        assert_eq!(r.tpot_ms(), None, "a server-only TPOT ignores estimates");
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"completion_tokens\":null"), "{json}");
        assert!(
            json.contains(
                "\"completion_tokens_estimate\":{\"tokens\":4,\"method\":\"utf8_bytes_div_4\"}"
            ),
            "{json}"
        );
    }
}
