//! What the simulated model answers, and when. Pure: no I/O.
//!
//! **Tool calls** (when tools are offered and `tool_choice` is not `"none"`): let `r` be the
//! number of `tool` messages after the last `user` message. If `r < tool_turns` (or
//! `tool_choice` is `"required"` or names a function), the answer is one tool call to the
//! tool at position `r % tools.len()` (or the named one), id `call_<k>` with `k` the number
//! of tool calls already in the conversation, arguments built from the tool's JSON schema
//! (see [`schema_arguments`]), finish reason `tool_calls`. Tool-call turns ignore the
//! output cap. Streamed as one fragment with index, id, type, name and empty arguments,
//! then the arguments in at least two fragments (8 bytes each, at character boundaries).
//!
//! **Text answers** begin with `Answer: ` followed by the first 120 characters of the last
//! `tool` message's content (if any), then `default_output_tokens` seeded filler words. A
//! completion token is one streamed piece: `Answer:`, the excerpt split into words (each
//! with its leading space; pieces longer than 8 bytes split at character boundaries), then
//! one ` word` per filler token. The natural length is pieces + filler; `max_tokens` /
//! `max_completion_tokens` truncates it (finish reason `length`), and `ignore_eos` extends
//! it with filler up to the cap.
//!
//! **Randomness**: a ChaCha8 RNG seeded from `mix(seed, FNV(prompt bytes))` draws the
//! words; a second one (different stream constant) draws the ITL jitter. The same seed and
//! prompt give the same text and schedule.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value};

use super::cache::{hash_bytes, mix64};
use super::config::SimConfig;
use super::prompt::{ChatRequest, content_text};

/// Characters of the last tool result quoted at the start of a text answer.
pub const TOOL_EXCERPT_CHARS: usize = 120;
/// Longest piece (bytes) a text excerpt or tool-argument fragment is streamed in.
pub const MAX_PIECE_BYTES: usize = 8;

/// Filler vocabulary of text answers.
pub const WORDS: [&str; 64] = [
    "the", "model", "token", "cache", "prefix", "block", "stream", "latency", "energy", "joule",
    "step", "tool", "result", "answer", "context", "batch", "decode", "prefill", "kernel",
    "memory", "queue", "request", "server", "client", "trace", "span", "phase", "clock", "metric",
    "counter", "gauge", "sample", "window", "bound", "value", "signal", "engine", "worker",
    "shard", "bench", "suite", "job", "grade", "gate", "report", "event", "field", "case", "check",
    "pass", "fail", "green", "amber", "river", "stone", "cloud", "light", "north", "delta",
    "vector", "matrix", "tensor", "scalar", "graph",
];

/// Why generation ended, in OpenAI terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// Natural end of a text answer.
    Stop,
    /// The output cap cut the answer.
    Length,
    /// The answer is a tool call.
    ToolCalls,
}

impl FinishReason {
    /// The OpenAI `finish_reason` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool_calls",
        }
    }

    /// vLLM's engine-level reason (the `finished_reason` metric label): tool calls end
    /// with the engine's `stop`.
    pub fn engine_label(self) -> &'static str {
        match self {
            Self::Length => "length",
            Self::Stop | Self::ToolCalls => "stop",
        }
    }
}

/// One planned answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completion {
    /// A text answer streamed piece by piece.
    Text {
        /// Streamed pieces; their concatenation is the answer.
        pieces: Vec<String>,
        /// `Stop` or `Length`.
        finish: FinishReason,
    },
    /// One tool call.
    ToolCall {
        /// `call_<k>`.
        id: String,
        /// Tool name.
        name: String,
        /// Argument fragments; their concatenation is the JSON arguments string.
        fragments: Vec<String>,
    },
}

impl Completion {
    /// Completion tokens: text pieces, or 1 (name fragment) + argument fragments.
    pub fn tokens(&self) -> usize {
        match self {
            Self::Text { pieces, .. } => pieces.len(),
            Self::ToolCall { fragments, .. } => 1 + fragments.len(),
        }
    }

    /// The finish reason.
    pub fn finish(&self) -> FinishReason {
        match self {
            Self::Text { finish, .. } => *finish,
            Self::ToolCall { .. } => FinishReason::ToolCalls,
        }
    }

    /// The full text (text answers) or arguments string (tool calls).
    pub fn joined(&self) -> String {
        match self {
            Self::Text { pieces, .. } => pieces.concat(),
            Self::ToolCall { fragments, .. } => fragments.concat(),
        }
    }
}

/// A request the simulator cannot plan (HTTP 400).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanError(pub String);

/// The per-request seed: the request's own `seed` if given, else the simulator's.
pub fn effective_seed(cfg: &SimConfig, req: &ChatRequest) -> u64 {
    req.seed.map(|s| s as u64).unwrap_or(cfg.seed)
}

/// RNG seed of the output words for a prompt.
pub fn text_rng_seed(seed: u64, prompt: &str) -> u64 {
    mix64(seed ^ hash_bytes(prompt.as_bytes()))
}

/// RNG seed of the ITL jitter for a prompt.
pub fn jitter_rng_seed(seed: u64, prompt: &str) -> u64 {
    mix64(text_rng_seed(seed, prompt) ^ 0x6a69_7474_6572_0001)
}

fn tool_name(tool: &Value) -> Option<&str> {
    tool.pointer("/function/name")
        .or_else(|| tool.get("name"))
        .and_then(Value::as_str)
}

fn tool_parameters(tool: &Value) -> Option<&Value> {
    tool.pointer("/function/parameters")
        .or_else(|| tool.get("parameters"))
}

/// Decides the answer to a request (rules in the module docs).
pub fn plan_completion(
    cfg: &SimConfig,
    req: &ChatRequest,
    prompt: &str,
) -> Result<Completion, PlanError> {
    let tools = req.tools();
    let choice = req.tool_choice.as_ref();
    let choice_str = choice.and_then(Value::as_str);
    if !tools.is_empty() && choice_str != Some("none") {
        let last_user = req.messages.iter().rposition(|m| m.role == "user");
        let since = last_user.map_or(0, |i| i + 1);
        let results = req.messages[since..]
            .iter()
            .filter(|m| m.role == "tool")
            .count();
        let forced_name = choice
            .and_then(|c| c.pointer("/function/name"))
            .and_then(Value::as_str);
        let forced = forced_name.is_some() || choice_str == Some("required");
        if forced || results < cfg.tool_turns as usize {
            let tool = match forced_name {
                Some(n) => tools
                    .iter()
                    .find(|t| tool_name(t) == Some(n))
                    .ok_or_else(|| PlanError(format!("tool_choice names unknown tool `{n}`")))?,
                None => &tools[results % tools.len()],
            };
            let name = tool_name(tool)
                .ok_or_else(|| PlanError("a tool has no function.name".into()))?
                .to_string();
            let k: usize = req
                .messages
                .iter()
                .map(|m| m.tool_calls.as_ref().map_or(0, Vec::len))
                .sum();
            let args = schema_arguments(tool_parameters(tool)).to_string();
            return Ok(Completion::ToolCall {
                id: format!("call_{k}"),
                name,
                fragments: argument_fragments(&args),
            });
        }
    }
    Ok(text_answer(cfg, req, prompt))
}

fn text_answer(cfg: &SimConfig, req: &ChatRequest, prompt: &str) -> Completion {
    let mut pieces = vec!["Answer:".to_string()];
    if let Some(tool_msg) = req.messages.iter().rev().find(|m| m.role == "tool") {
        let content = content_text(tool_msg.content.as_ref());
        let excerpt: String = content.chars().take(TOOL_EXCERPT_CHARS).collect();
        if !excerpt.is_empty() {
            pieces.extend(split_words(&format!(" {excerpt}")));
        }
    }
    let natural = pieces.len() + cfg.default_output_tokens as usize;
    let cap = req
        .output_cap()
        .map(|c| usize::try_from(c).unwrap_or(usize::MAX));
    let ignore_eos = req.ignore_eos.unwrap_or(false);
    let (len, finish) = match cap {
        Some(c) if c < natural => (c, FinishReason::Length),
        Some(c) if ignore_eos => (c, FinishReason::Length),
        _ => (natural, FinishReason::Stop),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(text_rng_seed(effective_seed(cfg, req), prompt));
    pieces.truncate(len);
    while pieces.len() < len {
        let w = WORDS[rng.random_range(0..WORDS.len())];
        pieces.push(format!(" {w}"));
    }
    Completion::Text { pieces, finish }
}

/// Splits text into streamed pieces: words with their leading whitespace, each at most
/// [`MAX_PIECE_BYTES`] bytes (longer ones split at character boundaries).
/// Concatenating the pieces gives the text back exactly.
pub fn split_words(text: &str) -> Vec<String> {
    let mut words: Vec<&str> = Vec::new();
    let mut start = 0;
    let mut prev_ws = true;
    for (i, c) in text.char_indices() {
        let ws = c.is_whitespace();
        if ws && !prev_ws && i > start {
            words.push(&text[start..i]);
            start = i;
        }
        prev_ws = ws;
    }
    if start < text.len() {
        words.push(&text[start..]);
    }
    words
        .into_iter()
        .flat_map(|w| chunk_at_char_boundaries(w, MAX_PIECE_BYTES))
        .collect()
}

fn chunk_at_char_boundaries(s: &str, max: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        if !cur.is_empty() && cur.len() + c.len_utf8() > max {
            out.push(std::mem::take(&mut cur));
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Splits a tool's arguments string into at least two fragments (8-byte pieces at
/// character boundaries; a string that fits one piece is split in half).
pub fn argument_fragments(args: &str) -> Vec<String> {
    let mut parts = chunk_at_char_boundaries(args, MAX_PIECE_BYTES);
    if parts.len() < 2 {
        let s = parts.pop().unwrap_or_default();
        let chars: Vec<char> = s.chars().collect();
        let mid = chars.len() / 2;
        let (a, b) = chars.split_at(mid.max(1).min(chars.len()));
        parts = vec![a.iter().collect(), b.iter().collect()];
    }
    parts
}

/// Arguments object built from a tool's JSON-schema `parameters`: for each name in
/// `required` (in order), the property's first `enum` value, else its `default`, else the
/// first of its `examples`, else by type: `"example"` for strings, 1 for numbers and
/// integers, true for booleans, `[]` for arrays, a nested object built the same way for
/// objects, null for `null`. A schema without `required` gives `{}`.
pub fn schema_arguments(schema: Option<&Value>) -> Value {
    let mut out = Map::new();
    let Some(schema) = schema else {
        return Value::Object(out);
    };
    let props = schema.get("properties").and_then(Value::as_object);
    for name in schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        let prop = props.and_then(|p| p.get(name));
        out.insert(name.to_string(), property_value(prop));
    }
    Value::Object(out)
}

fn property_value(prop: Option<&Value>) -> Value {
    let Some(p) = prop else {
        return Value::String("example".into());
    };
    if let Some(v) = p
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return v.clone();
    }
    if let Some(v) = p.get("default") {
        return v.clone();
    }
    if let Some(v) = p
        .get("examples")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
    {
        return v.clone();
    }
    let ty = match p.get("type") {
        Some(Value::String(t)) => Some(t.as_str()),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .or(Some("null")),
        _ => None,
    };
    match ty {
        Some("number" | "integer") => Value::from(1),
        Some("boolean") => Value::Bool(true),
        Some("array") => Value::Array(Vec::new()),
        Some("object") => schema_arguments(Some(p)),
        Some("null") => Value::Null,
        _ => Value::String("example".into()),
    }
}

/// Token arrival offsets, µs from admission, for `tokens` completion tokens:
/// `t_0 = TTFT`, `t_i = t_{i−1} + max(0, itl_ms·1000 + U[−jitter, +jitter] µs)`.
pub fn token_schedule_us(
    cfg: &SimConfig,
    ttft_us: u64,
    tokens: usize,
    jitter_seed: u64,
) -> Vec<u64> {
    let mut out = Vec::with_capacity(tokens);
    if tokens == 0 {
        return out;
    }
    out.push(ttft_us);
    let itl = i64::try_from(cfg.itl_ms.saturating_mul(1000)).unwrap_or(i64::MAX);
    let jit = i64::try_from(cfg.itl_jitter_ms.saturating_mul(1000)).unwrap_or(i64::MAX / 2);
    let mut rng = (jit > 0).then(|| ChaCha8Rng::seed_from_u64(jitter_seed));
    let mut t = ttft_us;
    for _ in 1..tokens {
        let j = rng.as_mut().map_or(0, |r| r.random_range(-jit..=jit));
        t = t.saturating_add(itl.saturating_add(j).max(0) as u64);
        out.push(t);
    }
    out
}

/// TTFT in µs: `ttft_base_ms·1000 + prefill_us_per_token × (prompt − cached)`.
pub fn ttft_us(cfg: &SimConfig, prompt_tokens: usize, cached_tokens: usize) -> u64 {
    let uncached = prompt_tokens.saturating_sub(cached_tokens) as u64;
    cfg.ttft_base_ms
        .saturating_mul(1000)
        .saturating_add(cfg.prefill_us_per_token.saturating_mul(uncached))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prompt::render_prompt;
    use serde_json::json;

    fn req(v: Value) -> ChatRequest {
        serde_json::from_value(v).unwrap()
    }

    fn tools() -> Value {
        json!([
            {"type": "function", "function": {"name": "lookup", "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "enum": ["Oslo", "Rome"]},
                    "units": {"type": "string", "default": "metric"},
                    "days": {"type": "integer"},
                    "verbose": {"type": "boolean"},
                    "q": {"type": "string", "examples": ["weather"]},
                    "free": {"type": "string"},
                    "ratio": {"type": ["number", "null"]},
                    "opt": {"type": "string"}
                },
                "required": ["city", "units", "days", "verbose", "q", "free", "ratio"]
            }}},
            {"type": "function", "function": {"name": "clock", "parameters": {"type": "object", "properties": {}}}}
        ])
    }

    #[test]
    fn schema_arguments_follow_rules() {
        let t = tools();
        let args = schema_arguments(t[0].pointer("/function/parameters"));
        assert_eq!(
            args.to_string(),
            r#"{"city":"Oslo","units":"metric","days":1,"verbose":true,"q":"weather","free":"example","ratio":1}"#
        );
        assert_eq!(
            schema_arguments(t[1].pointer("/function/parameters")),
            json!({})
        );
        assert_eq!(schema_arguments(None), json!({}));
    }

    #[test]
    fn tool_turns_then_answer() {
        let cfg = SimConfig::default();
        let mut msgs = vec![json!({"role": "user", "content": "go"})];
        let r0 = req(json!({"model": "m", "messages": msgs, "tools": tools()}));
        let c0 = plan_completion(&cfg, &r0, "p").unwrap();
        let Completion::ToolCall {
            id,
            name,
            fragments,
        } = &c0
        else {
            panic!("{c0:?}")
        };
        assert_eq!((id.as_str(), name.as_str()), ("call_0", "lookup"));
        assert!(fragments.len() >= 2);
        assert!(serde_json::from_str::<Value>(&fragments.concat()).is_ok());
        assert_eq!(c0.finish(), FinishReason::ToolCalls);
        assert_eq!(c0.tokens(), 1 + fragments.len());

        msgs.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_0", "type": "function", "function": {"name": "lookup", "arguments": fragments.concat()}}]}));
        msgs.push(json!({"role": "tool", "tool_call_id": "call_0", "content": "fact one"}));
        let c1 = plan_completion(
            &cfg,
            &req(json!({"model": "m", "messages": msgs, "tools": tools()})),
            "p",
        )
        .unwrap();
        let Completion::ToolCall {
            id,
            name,
            fragments,
        } = &c1
        else {
            panic!("{c1:?}")
        };
        assert_eq!((id.as_str(), name.as_str()), ("call_1", "clock"));
        assert_eq!(fragments.concat(), "{}");
        assert_eq!(fragments.len(), 2);

        msgs.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "clock", "arguments": "{}"}}]}));
        msgs.push(
            json!({"role": "tool", "tool_call_id": "call_1", "content": "The secret is 42-Oslo."}),
        );
        let c2 = plan_completion(
            &cfg,
            &req(json!({"model": "m", "messages": msgs, "tools": tools()})),
            "p",
        )
        .unwrap();
        assert_eq!(c2.finish(), FinishReason::Stop);
        assert!(
            c2.joined().starts_with("Answer: The secret is 42-Oslo. "),
            "{}",
            c2.joined()
        );

        // A new user message resets the count.
        msgs.push(json!({"role": "assistant", "content": c2.joined()}));
        msgs.push(json!({"role": "user", "content": "again"}));
        let c3 = plan_completion(
            &cfg,
            &req(json!({"model": "m", "messages": msgs, "tools": tools()})),
            "p",
        )
        .unwrap();
        assert!(matches!(c3, Completion::ToolCall { ref id, .. } if id == "call_2"));
    }

    #[test]
    fn tool_choice_none_required_and_named() {
        let cfg = SimConfig {
            tool_turns: 0,
            ..SimConfig::default()
        };
        let m = json!([{"role": "user", "content": "go"}]);
        let none =
            req(json!({"model": "m", "messages": m, "tools": tools(), "tool_choice": "none"}));
        assert!(matches!(
            plan_completion(&SimConfig::default(), &none, "p").unwrap(),
            Completion::Text { .. }
        ));
        let auto = req(json!({"model": "m", "messages": m, "tools": tools()}));
        assert!(matches!(
            plan_completion(&cfg, &auto, "p").unwrap(),
            Completion::Text { .. }
        ));
        let required =
            req(json!({"model": "m", "messages": m, "tools": tools(), "tool_choice": "required"}));
        assert!(matches!(
            plan_completion(&cfg, &required, "p").unwrap(),
            Completion::ToolCall { .. }
        ));
        let named = req(
            json!({"model": "m", "messages": m, "tools": tools(), "tool_choice": {"type": "function", "function": {"name": "clock"}}}),
        );
        assert!(matches!(
            plan_completion(&cfg, &named, "p").unwrap(),
            Completion::ToolCall { ref name, .. } if name == "clock"
        ));
        let unknown = req(
            json!({"model": "m", "messages": m, "tools": tools(), "tool_choice": {"type": "function", "function": {"name": "nope"}}}),
        );
        assert!(plan_completion(&cfg, &unknown, "p").is_err());
    }

    #[test]
    fn text_length_cap_and_determinism() {
        let cfg = SimConfig::default();
        let r = req(json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}));
        let prompt = render_prompt(&r.messages, r.tools());
        let a = plan_completion(&cfg, &r, &prompt).unwrap();
        assert_eq!(a.tokens(), 1 + 16);
        assert_eq!(a.finish(), FinishReason::Stop);
        assert!(a.joined().starts_with("Answer: "));
        assert_eq!(a, plan_completion(&cfg, &r, &prompt).unwrap());
        let other = SimConfig {
            seed: 99,
            ..SimConfig::default()
        };
        assert_ne!(a, plan_completion(&other, &r, &prompt).unwrap());
        let capped = req(
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}),
        );
        let c = plan_completion(&cfg, &capped, &prompt).unwrap();
        assert_eq!((c.tokens(), c.finish()), (5, FinishReason::Length));
        let big = req(
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 500}),
        );
        let c = plan_completion(&cfg, &big, &prompt).unwrap();
        assert_eq!((c.tokens(), c.finish()), (17, FinishReason::Stop));
        let eos = req(
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 40, "ignore_eos": true}),
        );
        let c = plan_completion(&cfg, &eos, &prompt).unwrap();
        assert_eq!((c.tokens(), c.finish()), (40, FinishReason::Length));
    }

    #[test]
    fn pieces_concatenate_back() {
        let t = " The quick brown fox — überlange-Wörter  and\nnewlines";
        let p = split_words(t);
        assert_eq!(p.concat(), t);
        assert!(p.iter().all(|x| x.len() <= MAX_PIECE_BYTES));
        assert_eq!(argument_fragments("{}"), vec!["{", "}"]);
        let long = r#"{"city":"Oslo","units":"metric"}"#;
        assert_eq!(argument_fragments(long).concat(), long);
    }

    #[test]
    fn schedule_and_ttft() {
        let cfg = SimConfig {
            itl_ms: 5,
            itl_jitter_ms: 0,
            ..SimConfig::default()
        };
        assert_eq!(token_schedule_us(&cfg, 100, 3, 1), vec![100, 5_100, 10_100]);
        let jit = SimConfig::default();
        let s = token_schedule_us(&jit, 0, 50, 7);
        assert_eq!(s, token_schedule_us(&jit, 0, 50, 7));
        for w in s.windows(2) {
            let gap = w[1] - w[0];
            assert!((4_000..=6_000).contains(&gap), "{gap}");
        }
        assert!(
            token_schedule_us(&SimConfig::zero_delay(), 0, 4, 1)
                .iter()
                .all(|&t| t == 0)
        );
        assert_eq!(ttft_us(&SimConfig::default(), 1000, 640), 20_000 + 20 * 360);
    }
}
