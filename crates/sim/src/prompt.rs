//! The chat-completions request the simulator accepts, its deterministic chat rendering
//! and its deterministic tokenizer. Pure: no I/O.
//!
//! **Rendering** (ChatML-like, so a growing history keeps an identical prefix):
//! ```text
//! <|im_start|>system\n# Tools\n{tools JSON, compact, as sent}<|im_end|>\n     (only when tools are offered)
//! <|im_start|>{role}\n{content}{tool calls}<|im_end|>\n                         (every message, in order)
//! <|im_start|>assistant\n                                                      (generation prompt)
//! ```
//! A `tool` message's header line is `<|im_start|>tool {tool_call_id}`. `content` is the
//! string as sent; an array of parts renders the `text` of text parts and the compact JSON
//! of any other part, concatenated; null renders nothing. Each assistant tool call renders
//! as `\n<tool_call>\n{"name":NAME,"arguments":ARGS}\n</tool_call>` where ARGS is the
//! `arguments` string verbatim (compact JSON when a client sent an object).
//!
//! **Tokenizer**: the rendered prompt's UTF-8 bytes in 4-byte tokens; token `i` is the
//! little-endian `u32` of bytes `4i..4i+4`, the last one zero-padded. Prompt tokens =
//! `ceil(bytes / 4)`. Equal byte prefixes therefore give equal token prefixes (except the
//! padded last token), which is what the prefix cache needs.

use serde::Deserialize;
use serde_json::Value;

/// Bytes per simulated token.
pub const BYTES_PER_TOKEN: usize = 4;

/// A `POST /v1/chat/completions` body, as far as the simulator reads it. Unknown fields
/// are ignored; wrong types are a 400.
#[derive(Clone, Debug, Deserialize)]
pub struct ChatRequest {
    /// The requested model; must equal the served model name (else 404).
    pub model: String,
    /// The conversation (must not be empty).
    pub messages: Vec<ChatMessage>,
    /// Stream as SSE when true.
    #[serde(default)]
    pub stream: Option<bool>,
    /// `{"include_usage": true}` adds the usage-only final chunk.
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    /// Output cap in tokens (older name).
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// Output cap in tokens (newer name; wins over `max_tokens`).
    #[serde(default)]
    pub max_completion_tokens: Option<u64>,
    /// vLLM extension: generate exactly the cap, ignoring the natural end.
    #[serde(default)]
    pub ignore_eos: Option<bool>,
    /// Offered tools (OpenAI `{"type":"function","function":{name,parameters,...}}`).
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// `"none"`, `"auto"`, `"required"` or `{"type":"function","function":{"name":N}}`.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// Per-request seed; overrides the simulator's seed for this request.
    #[serde(default)]
    pub seed: Option<i64>,
    /// Number of choices; only 1 is supported.
    #[serde(default)]
    pub n: Option<u64>,
}

impl ChatRequest {
    /// Whether the response is streamed.
    pub fn is_stream(&self) -> bool {
        self.stream.unwrap_or(false)
    }

    /// Whether a streamed response ends with the usage-only chunk.
    pub fn include_usage(&self) -> bool {
        self.stream_options
            .as_ref()
            .and_then(|o| o.include_usage)
            .unwrap_or(false)
    }

    /// The output cap in tokens, if any (`max_completion_tokens` over `max_tokens`).
    pub fn output_cap(&self) -> Option<u64> {
        self.max_completion_tokens.or(self.max_tokens)
    }

    /// The offered tools, empty when none.
    pub fn tools(&self) -> &[Value] {
        self.tools.as_deref().unwrap_or(&[])
    }
}

/// `stream_options` of a request.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct StreamOptions {
    /// Send the usage-only chunk before `[DONE]`.
    #[serde(default)]
    pub include_usage: Option<bool>,
}

/// One conversation message.
#[derive(Clone, Debug, Deserialize)]
pub struct ChatMessage {
    /// `system`, `user`, `assistant`, `tool` (any string is accepted and rendered).
    pub role: String,
    /// String, array of content parts, or null.
    #[serde(default)]
    pub content: Option<Value>,
    /// Assistant tool calls.
    #[serde(default)]
    pub tool_calls: Option<Vec<ToolCallIn>>,
    /// The call a `tool` message answers.
    #[serde(default)]
    pub tool_call_id: Option<String>,
}

/// An assistant tool call inside the conversation.
#[derive(Clone, Debug, Deserialize)]
pub struct ToolCallIn {
    /// The call id.
    #[serde(default)]
    pub id: Option<String>,
    /// Name and arguments.
    pub function: FunctionCallIn,
}

/// The function part of a tool call.
#[derive(Clone, Debug, Deserialize)]
pub struct FunctionCallIn {
    /// Tool name.
    pub name: String,
    /// JSON-encoded arguments string (or, leniently, an object).
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// The text of a message's `content` as rendered (see the module docs).
pub fn content_text(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => {
            let mut out = String::new();
            for p in parts {
                match (p.get("type").and_then(Value::as_str), p.get("text")) {
                    (Some("text"), Some(Value::String(t))) => out.push_str(t),
                    _ => out.push_str(&p.to_string()),
                }
            }
            out
        }
        Some(other) => other.to_string(),
    }
}

fn push_json_str(out: &mut String, s: &str) {
    out.push_str(&Value::String(s.to_string()).to_string());
}

/// Renders the full prompt text of a conversation (format in the module docs).
pub fn render_prompt(messages: &[ChatMessage], tools: &[Value]) -> String {
    let mut s = String::with_capacity(256);
    if !tools.is_empty() {
        s.push_str("<|im_start|>system\n# Tools\n");
        // Serializing a slice of values cannot fail.
        s.push_str(&serde_json::to_string(tools).unwrap_or_default());
        s.push_str("<|im_end|>\n");
    }
    for m in messages {
        s.push_str("<|im_start|>");
        s.push_str(&m.role);
        if m.role == "tool"
            && let Some(id) = &m.tool_call_id
        {
            s.push(' ');
            s.push_str(id);
        }
        s.push('\n');
        s.push_str(&content_text(m.content.as_ref()));
        for tc in m.tool_calls.iter().flatten() {
            s.push_str("\n<tool_call>\n{\"name\":");
            push_json_str(&mut s, &tc.function.name);
            s.push_str(",\"arguments\":");
            match &tc.function.arguments {
                None | Some(Value::Null) => s.push_str("{}"),
                Some(Value::String(a)) => s.push_str(a),
                Some(other) => s.push_str(&other.to_string()),
            }
            s.push_str("}\n</tool_call>");
        }
        s.push_str("<|im_end|>\n");
    }
    s.push_str("<|im_start|>assistant\n");
    s
}

/// Tokenizes text into 4-byte little-endian `u32` tokens (last one zero-padded).
pub fn tokenize(text: &str) -> Vec<u32> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len().div_ceil(BYTES_PER_TOKEN));
    let mut chunks = bytes.chunks_exact(BYTES_PER_TOKEN);
    for c in &mut chunks {
        out.push(u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    let rem = chunks.remainder();
    if !rem.is_empty() {
        let mut b = [0u8; 4];
        b[..rem.len()].copy_from_slice(rem);
        out.push(u32::from_le_bytes(b));
    }
    out
}

/// Number of tokens [`tokenize`] yields for a text of `len_bytes` bytes.
pub fn token_count(len_bytes: usize) -> usize {
    len_bytes.div_ceil(BYTES_PER_TOKEN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msgs(v: Value) -> Vec<ChatMessage> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn tokenizer_is_4_byte_chunks() {
        assert_eq!(tokenize(""), Vec::<u32>::new());
        assert_eq!(tokenize("abcd"), vec![u32::from_le_bytes(*b"abcd")]);
        assert_eq!(
            tokenize("abcdef"),
            vec![u32::from_le_bytes(*b"abcd"), u32::from_le_bytes(*b"ef\0\0")]
        );
        assert_eq!(token_count(0), 0);
        assert_eq!(token_count(5), 2);
        assert_eq!(
            tokenize("héllo wörld").len(),
            token_count("héllo wörld".len())
        );
    }

    #[test]
    fn rendering_is_exact() {
        let m = msgs(json!([
            {"role": "system", "content": "S"},
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_0", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_0", "content": "R"}
        ]));
        let tools = vec![json!({"type": "function", "function": {"name": "f"}})];
        let text = render_prompt(&m, &tools);
        assert_eq!(
            text,
            "<|im_start|>system\n# Tools\n[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}]<|im_end|>\n\
             <|im_start|>system\nS<|im_end|>\n\
             <|im_start|>user\nab<|im_end|>\n\
             <|im_start|>assistant\n\n<tool_call>\n{\"name\":\"f\",\"arguments\":{\"x\":1}}\n</tool_call><|im_end|>\n\
             <|im_start|>tool call_0\nR<|im_end|>\n\
             <|im_start|>assistant\n"
        );
    }

    #[test]
    fn growing_history_keeps_prefix() {
        let turn1 = msgs(json!([{"role": "user", "content": "hello"}]));
        let turn2 = msgs(json!([
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": "Answer: hi"},
            {"role": "user", "content": "more"}
        ]));
        let a = render_prompt(&turn1, &[]);
        let b = render_prompt(&turn2, &[]);
        assert!(b.starts_with(&a));
        let (ta, tb) = (tokenize(&a), tokenize(&b));
        let full = a.len() / BYTES_PER_TOKEN;
        assert_eq!(ta[..full], tb[..full]);
    }

    #[test]
    fn request_parses_leniently() {
        let r: ChatRequest = serde_json::from_value(json!({
            "model": "m", "messages": [{"role": "user", "content": "x"}],
            "stream": null, "temperature": 0.2, "max_tokens": 5, "max_completion_tokens": 7,
            "stream_options": {"include_usage": true}
        }))
        .unwrap();
        assert!(!r.is_stream());
        assert!(r.include_usage());
        assert_eq!(r.output_cap(), Some(7));
        assert!(r.tools().is_empty());
    }
}
