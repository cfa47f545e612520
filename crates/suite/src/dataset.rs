//! A context job's `dataset`: the prompts of a JSONL file, a ShareGPT file or a
//! Mooncake trace, read and checked when the suite loads, before any request. Pure: the
//! caller reads the bytes; every error names the file, the line and the field.
//!
//! - `jsonl`: one object a line, `prompt` (a string: one user message) or `messages` (an
//!   OpenAI messages array: each a `role` of [`ROLES`] and a `content` string or array of
//!   content parts), optional `output_tokens` (≥ 1).
//! - `sharegpt`: a JSON array (or JSONL) of `{"conversations": [{"from", "value"}, …]}`;
//!   the first `human` turn is the prompt, and the reply after it gives the output length
//!   (its bytes / 4, rounded up: an estimate). With `turns = "all"`, every `human` turn is
//!   one entry (in order: the conversation is a session) whose messages carry the earlier
//!   turns (`system`, `human` → `user`, `gpt` → `assistant`, the recorded replies as sent),
//!   its output length the reply after it.
//! - `mooncake`: one object a line, `timestamp` (ms), `input_length`, `output_length`,
//!   `hash_ids` (one id per block of `block_tokens`, the last block partial). Ids must
//!   chain (an id is always preceded by the same ids, at the same position) and the length
//!   must fit its blocks (`(k − 1) × B < input_length ≤ k × B` for k ids).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `dataset.format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DatasetFormat {
    /// One prompt per line.
    Jsonl,
    /// ShareGPT conversations.
    Sharegpt,
    /// A Mooncake trace.
    Mooncake,
}

impl DatasetFormat {
    /// The suite's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Jsonl => "jsonl",
            Self::Sharegpt => "sharegpt",
            Self::Mooncake => "mooncake",
        }
    }
}

/// `dataset.turns` of a ShareGPT file: the first `human` turn of each conversation, or
/// every `human` turn as one request of a multi-turn session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Turns {
    /// The first `human` turn (the default).
    #[default]
    First,
    /// Every `human` turn, each carrying the conversation before it.
    All,
}

impl Turns {
    /// The name used in suites.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::All => "all",
        }
    }
}

/// What one dataset entry sends.
#[derive(Debug, Clone, PartialEq)]
pub enum DatasetPrompt {
    /// OpenAI messages, as given (a `prompt` string is one user message).
    Messages(Vec<Value>),
    /// A Mooncake request: its prompt is synthesized block by block from the ids, so equal
    /// ids give byte-identical blocks.
    Blocks {
        /// `input_length`, tokens.
        input_tokens: u64,
        /// `hash_ids`.
        hash_ids: Vec<u64>,
    },
}

/// One entry of a dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetEntry {
    /// 1-based line of the file where the entry starts.
    pub line: usize,
    /// The prompt.
    pub prompt: DatasetPrompt,
    /// The output length it asks for (tokens), when the entry gives one.
    pub output_tokens: Option<u32>,
    /// The recorded arrival, ms from the trace's start (Mooncake).
    pub timestamp_ms: Option<u64>,
}

/// Parses a dataset file's bytes. `file` names the file in errors; `block_tokens` is a
/// Mooncake trace's block size.
pub fn parse(
    bytes: &[u8],
    format: DatasetFormat,
    file: &str,
    block_tokens: u64,
) -> Result<Vec<DatasetEntry>, String> {
    parse_turns(bytes, format, file, block_tokens, Turns::First)
}

/// [`parse`] with the ShareGPT `turns` rule.
pub fn parse_turns(
    bytes: &[u8],
    format: DatasetFormat,
    file: &str,
    block_tokens: u64,
    turns: Turns,
) -> Result<Vec<DatasetEntry>, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let line = bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        format!("{file}:{line}: not UTF-8")
    })?;
    let entries = match format {
        DatasetFormat::Jsonl => lines(text, file, &|l| jsonl_entry(l).map(|e| vec![e]))?,
        DatasetFormat::Sharegpt if text.trim_start().starts_with('[') => {
            sharegpt_array(text, file, turns)?
        }
        DatasetFormat::Sharegpt => lines(text, file, &|l| sharegpt_entries(l, turns))?,
        DatasetFormat::Mooncake => mooncake(text, file, block_tokens.max(1))?,
    };
    if entries.is_empty() {
        return Err(format!("{file}: the dataset has no entry"));
    }
    Ok(entries)
}

/// One parsed line: its prompt and output length.
type Parsed = Result<(DatasetPrompt, Option<u32>), String>;

/// One parsed line's entries (a multi-turn conversation gives several).
type ParsedMany = Result<Vec<(DatasetPrompt, Option<u32>)>, String>;

/// Parses each non-blank line with `entry`; errors as `file:line: …`.
fn lines(
    text: &str,
    file: &str,
    entry: &dyn Fn(&str) -> ParsedMany,
) -> Result<Vec<DatasetEntry>, String> {
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let parsed = entry(l).map_err(|m| format!("{file}:{}: {m}", i + 1))?;
        push_entries(&mut out, i + 1, parsed);
    }
    Ok(out)
}

/// Appends the entries parsed from the line `line`.
fn push_entries(
    out: &mut Vec<DatasetEntry>,
    line: usize,
    parsed: Vec<(DatasetPrompt, Option<u32>)>,
) {
    out.extend(
        parsed
            .into_iter()
            .map(|(prompt, output_tokens)| DatasetEntry {
                line,
                prompt,
                output_tokens,
                timestamp_ms: None,
            }),
    );
}

/// A line (or array element) parsed into `T`; errors name the field's path.
fn typed<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(s);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // A string value is never quoted back (`invalid type: a string (12 characters)`).
        let shown = crate::redact::serde_strings(&inner.to_string()).into_owned();
        if inner.is_syntax() || inner.is_eof() {
            format!("not JSON: {shown}")
        } else if path == "." {
            shown
        } else {
            format!("field `{path}`: {shown}")
        }
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonlLine {
    prompt: Option<String>,
    messages: Option<Vec<Value>>,
    output_tokens: Option<u32>,
}

fn jsonl_entry(l: &str) -> Parsed {
    let j: JsonlLine = typed(l)?;
    if j.output_tokens == Some(0) {
        return Err("field `output_tokens`: must be at least 1".into());
    }
    let messages = match (j.prompt, j.messages) {
        (Some(p), None) => vec![serde_json::json!({"role": "user", "content": p})],
        (None, Some(m)) if !m.is_empty() => m,
        (None, Some(_)) => return Err("field `messages`: empty".into()),
        _ => {
            return Err(
                "field `prompt`: exactly one of `prompt` and `messages` is required".into(),
            );
        }
    };
    for (i, m) in messages.iter().enumerate() {
        message(m).map_err(|(field, why)| format!("field `messages[{i}]{field}`: {why}"))?;
    }
    Ok((DatasetPrompt::Messages(messages), j.output_tokens))
}

/// The OpenAI chat roles a dataset message may have.
pub const ROLES: [&str; 5] = ["system", "user", "assistant", "tool", "developer"];

/// Checks one OpenAI chat message: an object with a known `role` and a `content` that is
/// a string or an array of content parts (objects with a string `type`; a `text` part
/// has a string `text`). An `assistant` message with `tool_calls` may leave `content` out
/// or null. The problem as (the field below the message, why).
fn message(m: &Value) -> Result<(), (String, String)> {
    let Some(obj) = m.as_object() else {
        return Err((String::new(), "a message must be an object".into()));
    };
    let role = match obj.get("role") {
        None => return Err((".role".into(), "missing".into())),
        Some(Value::String(r)) if ROLES.contains(&r.as_str()) => r.as_str(),
        Some(other) => {
            return Err((
                ".role".into(),
                format!("{other} is not `system`, `user`, `assistant`, `tool` or `developer`"),
            ));
        }
    };
    let calls = obj
        .get("tool_calls")
        .and_then(Value::as_array)
        .is_some_and(|c| !c.is_empty());
    match obj.get("content") {
        Some(Value::String(_)) => Ok(()),
        Some(Value::Array(parts)) => {
            for (k, part) in parts.iter().enumerate() {
                let at = format!(".content[{k}]");
                match part.get("type").and_then(Value::as_str) {
                    Some("text") if !part.get("text").is_some_and(Value::is_string) => {
                        return Err((
                            format!("{at}.text"),
                            "a `text` part needs a string `text`".into(),
                        ));
                    }
                    Some(_) => {}
                    None => {
                        return Err((
                            format!("{at}.type"),
                            "a content part is an object with a string `type`".into(),
                        ));
                    }
                }
            }
            Ok(())
        }
        None | Some(Value::Null) if role == "assistant" && calls => Ok(()),
        None => Err((
            ".content".into(),
            "missing (a string or an array of content parts)".into(),
        )),
        Some(other) => Err((
            ".content".into(),
            format!("{other} is not a string or an array of content parts"),
        )),
    }
}

#[derive(Deserialize)]
struct ShareGpt {
    conversations: Vec<Turn>,
}

#[derive(Deserialize)]
struct Turn {
    from: String,
    value: String,
}

fn sharegpt_entry(s: &str) -> Parsed {
    let c: ShareGpt = typed(s)?;
    let first = c
        .conversations
        .iter()
        .position(|t| t.from == "human")
        .ok_or("field `conversations`: no `human` turn")?;
    let reply = c.conversations[first + 1..]
        .iter()
        .find(|t| t.from == "gpt")
        .map(|t| reply_tokens(&t.value));
    let msg = serde_json::json!({"role": "user", "content": c.conversations[first].value});
    Ok((DatasetPrompt::Messages(vec![msg]), reply))
}

/// A reply's output length: its bytes / 4, rounded up (an estimate), at least 1.
fn reply_tokens(value: &str) -> u32 {
    u32::try_from(value.len().div_ceil(4))
        .unwrap_or(u32::MAX)
        .max(1)
}

/// A conversation's entries by `turns`: the first `human` turn, or every one (each with
/// the turns before it as messages, the recorded replies as assistant messages).
fn sharegpt_entries(s: &str, turns: Turns) -> ParsedMany {
    if turns == Turns::First {
        return sharegpt_entry(s).map(|e| vec![e]);
    }
    let c: ShareGpt = typed(s)?;
    let mut history: Vec<Value> = Vec::new();
    let mut out = Vec::new();
    for (i, t) in c.conversations.iter().enumerate() {
        let role = match t.from.as_str() {
            "human" => "user",
            "gpt" => "assistant",
            "system" => "system",
            other => {
                return Err(format!(
                    "field `conversations[{i}].from`: {other:?} is not `human`, `gpt` or \
                     `system`"
                ));
            }
        };
        history.push(serde_json::json!({"role": role, "content": t.value}));
        if role == "user" {
            let reply = c.conversations.get(i + 1).filter(|r| r.from == "gpt");
            let output = reply.map(|r| reply_tokens(&r.value));
            out.push((DatasetPrompt::Messages(history.clone()), output));
        }
    }
    if out.is_empty() {
        return Err("field `conversations`: no `human` turn".into());
    }
    Ok(out)
}

/// A ShareGPT JSON array: each top-level element parsed on its own, located at the line
/// where it starts.
fn sharegpt_array(text: &str, file: &str, turns: Turns) -> Result<Vec<DatasetEntry>, String> {
    let mut out = Vec::new();
    for (start, end) in array_elements(text).map_err(|m| format!("{file}: {m}"))? {
        let line = text[..start].matches('\n').count() + 1;
        let parsed = sharegpt_entries(&text[start..end], turns)
            .map_err(|m| format!("{file}:{line}: {m}"))?;
        push_entries(&mut out, line, parsed);
    }
    Ok(out)
}

/// Byte ranges of the top-level elements of a JSON array (strings and nesting respected).
fn array_elements(text: &str) -> Result<Vec<(usize, usize)>, String> {
    let b = text.as_bytes();
    let (mut depth, mut in_str, mut esc) = (0usize, false, false);
    let mut out = Vec::new();
    let mut start = None;
    for (i, &c) in b.iter().enumerate() {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => in_str = false,
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => {
                in_str = true;
                start = start.or(Some(i)).filter(|_| depth >= 1);
            }
            b'[' | b'{' => {
                if depth == 1 && start.is_none() {
                    start = Some(i);
                }
                depth += 1;
            }
            b']' | b'}' => {
                depth = depth.checked_sub(1).ok_or("unbalanced brackets")?;
                if depth == 1 && c == b'}' {
                    out.extend(start.take().map(|s| (s, i + 1)));
                }
            }
            b',' if depth == 1 => start = None,
            _ => {}
        }
    }
    if depth != 0 || in_str {
        return Err("the JSON array does not end".into());
    }
    Ok(out)
}

#[derive(Deserialize)]
struct MooncakeLine {
    timestamp: u64,
    input_length: u64,
    output_length: u64,
    hash_ids: Vec<u64>,
}

fn mooncake(text: &str, file: &str, block: u64) -> Result<Vec<DatasetEntry>, String> {
    // id → (the id before it, its position): the chain every later use must repeat.
    let mut chain: HashMap<u64, (Option<u64>, usize, usize)> = HashMap::new();
    let mut out = Vec::new();
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let line = i + 1;
        let at = |m: String| format!("{file}:{line}: {m}");
        let m: MooncakeLine = typed(l).map_err(at)?;
        if let Some((prev, at_line)) = out
            .last()
            .and_then(|e: &DatasetEntry| e.timestamp_ms.zip(Some(e.line)))
            && m.timestamp < prev
        {
            return Err(at(format!(
                "field `timestamp`: {} ms is before line {at_line}'s {prev} ms (a trace is in \
                 arrival order)",
                m.timestamp
            )));
        }
        let k = m.hash_ids.len() as u64;
        if m.input_length == 0
            || m.input_length > k * block
            || m.input_length <= (k.max(1) - 1) * block
        {
            return Err(at(format!(
                "field `input_length`: {} tokens do not fit {k} blocks of {block} (the last \
                 one partial); is `block_tokens` the trace's block size?",
                m.input_length
            )));
        }
        for (pos, &id) in m.hash_ids.iter().enumerate() {
            let parent = pos.checked_sub(1).map(|p| m.hash_ids[p]);
            match chain.get(&id) {
                Some(&(p, q, first)) if (p, q) != (parent, pos) => {
                    return Err(at(format!(
                        "field `hash_ids[{pos}]`: id {id} does not chain: line {first} has it \
                         at position {q}{}",
                        p.map(|p| format!(" after id {p}")).unwrap_or_default()
                    )));
                }
                Some(_) => {}
                None => {
                    chain.insert(id, (parent, pos, line));
                }
            }
        }
        out.push(DatasetEntry {
            line,
            prompt: DatasetPrompt::Blocks {
                input_tokens: m.input_length,
                hash_ids: m.hash_ids,
            },
            output_tokens: Some(u32::try_from(m.output_length.max(1)).map_err(|_| {
                at(format!(
                    "field `output_length`: {} tokens is more than {}",
                    m.output_length,
                    u32::MAX
                ))
            })?),
            timestamp_ms: Some(m.timestamp),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str, f: DatasetFormat) -> String {
        parse(text.as_bytes(), f, "d.jsonl", 4).unwrap_err()
    }

    #[test]
    fn jsonl_reads_prompts_and_messages_and_locates_bad_lines() {
        let ok = "{\"prompt\": \"hi\", \"output_tokens\": 8}\n\n{\"messages\": [{\"role\": \"user\", \"content\": \"yo\"}]}\n";
        let e = parse(ok.as_bytes(), DatasetFormat::Jsonl, "d", 4).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].line, e[0].output_tokens), (1, Some(8)));
        assert_eq!(e[1].line, 3);
        let bad = "{\"prompt\": \"a\"}\n{\"prompt\": 3}\n";
        assert!(err(bad, DatasetFormat::Jsonl).starts_with("d.jsonl:2: field `prompt`"));
        let e = err("{\"prompt\": \"a\"}\nnot json\n", DatasetFormat::Jsonl);
        assert!(e.starts_with("d.jsonl:2: not JSON"), "{e}");
        let e = err(
            "{\"prompt\": \"a\", \"output_tokens\": -1}\n",
            DatasetFormat::Jsonl,
        );
        assert!(e.starts_with("d.jsonl:1: field `output_tokens`"), "{e}");
        let e = err("{\"text\": \"a\"}\n", DatasetFormat::Jsonl);
        assert!(e.starts_with("d.jsonl:1: field `text`"), "{e}");
        let e = err("{}\n", DatasetFormat::Jsonl);
        assert!(e.starts_with("d.jsonl:1: field `prompt`"), "{e}");
    }

    #[test]
    fn jsonl_messages_need_a_known_role_and_a_content_and_are_located() {
        // Break-it review: a message without `content` or with an unknown `role` passed
        // `check` and went to the engine.
        let ok = [
            r#"{"messages": [{"role": "developer", "content": "d"}, {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}]}]}"#,
            r#"{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "c", "content": "r"}, {"role": "assistant", "tool_calls": [{"id": "d", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]}"#,
        ];
        for l in ok {
            parse(l.as_bytes(), DatasetFormat::Jsonl, "d", 4).unwrap_or_else(|e| panic!("{e}"));
        }
        let bad = [
            (
                r#"{"messages": [{"role": "user"}]}"#,
                "d.jsonl:2: field `messages[0].content`: missing",
            ),
            (
                r#"{"messages": [{"role": "wizard", "content": "x"}]}"#,
                "d.jsonl:2: field `messages[0].role`: \"wizard\" is not `system`, `user`, \
                 `assistant`, `tool` or `developer`",
            ),
            (
                r#"{"messages": [{"role": "user", "content": "x"}, {"content": "y"}]}"#,
                "d.jsonl:2: field `messages[1].role`: missing",
            ),
            (
                r#"{"messages": [{"role": "user", "content": 3}]}"#,
                "d.jsonl:2: field `messages[0].content`: 3 is not a string",
            ),
            (
                r#"{"messages": [{"role": "user", "content": null}]}"#,
                "d.jsonl:2: field `messages[0].content`: null is not a string",
            ),
            (
                r#"{"messages": [{"role": "assistant", "tool_calls": []}]}"#,
                "d.jsonl:2: field `messages[0].content`: missing",
            ),
            (
                r#"{"messages": [{"role": "user", "content": [{"text": "a"}]}]}"#,
                "d.jsonl:2: field `messages[0].content[0].type`",
            ),
            (
                r#"{"messages": [{"role": "user", "content": [{"type": "text"}]}]}"#,
                "d.jsonl:2: field `messages[0].content[0].text`",
            ),
            (
                r#"{"messages": ["hi"]}"#,
                "d.jsonl:2: field `messages[0]`: a message must be an object",
            ),
        ];
        for (l, want) in bad {
            let m = err(
                &format!("{{\"prompt\": \"a\"}}\n{l}\n"),
                DatasetFormat::Jsonl,
            );
            assert!(m.starts_with(want), "{l}: {m}");
        }
    }

    #[test]
    fn a_mooncake_output_length_past_u32_is_located_not_clamped() {
        let l = "{\"timestamp\": 0, \"input_length\": 4, \"output_length\": 5000000000, \"hash_ids\": [1]}\n";
        let m = err(l, DatasetFormat::Mooncake);
        assert!(
            m.starts_with("d.jsonl:1: field `output_length`: 5000000000 tokens"),
            "{m}"
        );
    }

    #[test]
    fn sharegpt_takes_the_first_human_turn_and_the_reply_length_in_both_layouts() {
        let arr = "[\n {\"id\": \"a\", \"conversations\": [\n  {\"from\": \"system\", \"value\": \"s\"},\n  {\"from\": \"human\", \"value\": \"hello [x]\"},\n  {\"from\": \"gpt\", \"value\": \"12345678\"}]},\n {\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}]}\n]\n";
        let e = parse(arr.as_bytes(), DatasetFormat::Sharegpt, "s", 4).unwrap();
        assert_eq!(e.len(), 2);
        assert_eq!((e[0].line, e[0].output_tokens), (2, Some(2)));
        assert_eq!(
            e[0].prompt,
            DatasetPrompt::Messages(vec![
                serde_json::json!({"role": "user", "content": "hello [x]"})
            ])
        );
        assert_eq!((e[1].line, e[1].output_tokens), (6, None));
        let bad = "[\n {\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}]},\n {\"conversations\": [{\"from\": \"gpt\"}]}\n]";
        let m = err(bad, DatasetFormat::Sharegpt);
        assert!(m.starts_with("d.jsonl:3: field `conversations[0]"), "{m}");
        let m = err("{\"conversations\": []}\n", DatasetFormat::Sharegpt);
        assert!(
            m.starts_with("d.jsonl:1: field `conversations`: no `human` turn"),
            "{m}"
        );
    }

    #[test]
    fn sharegpt_all_turns_make_a_session_carrying_the_earlier_turns() {
        use serde_json::json;
        let conv = "{\"conversations\": [{\"from\": \"system\", \"value\": \"be brief\"}, \
                    {\"from\": \"human\", \"value\": \"hi\"}, {\"from\": \"gpt\", \"value\": \"hello there\"}, \
                    {\"from\": \"human\", \"value\": \"and?\"}, {\"from\": \"gpt\", \"value\": \"12345\"}, \
                    {\"from\": \"human\", \"value\": \"bye\"}]}\n";
        let e = parse_turns(conv.as_bytes(), DatasetFormat::Sharegpt, "s", 4, Turns::All).unwrap();
        let got: Vec<(usize, Option<u32>)> = e.iter().map(|x| (x.line, x.output_tokens)).collect();
        assert_eq!(got, [(1, Some(3)), (1, Some(2)), (1, None)]);
        let (sys, u1) = (
            json!({"role": "system", "content": "be brief"}),
            json!({"role": "user", "content": "hi"}),
        );
        let a1 = json!({"role": "assistant", "content": "hello there"});
        let u2 = json!({"role": "user", "content": "and?"});
        let a2 = json!({"role": "assistant", "content": "12345"});
        let u3 = json!({"role": "user", "content": "bye"});
        assert_eq!(
            e[0].prompt,
            DatasetPrompt::Messages(vec![sys.clone(), u1.clone()])
        );
        assert_eq!(
            e[1].prompt,
            DatasetPrompt::Messages(vec![sys.clone(), u1.clone(), a1.clone(), u2.clone()])
        );
        assert_eq!(
            e[2].prompt,
            DatasetPrompt::Messages(vec![sys, u1, a1, u2, a2, u3])
        );
        // The default keeps the first human turn only.
        let first = parse(conv.as_bytes(), DatasetFormat::Sharegpt, "s", 4).unwrap();
        assert_eq!(first.len(), 1);
        // An unknown role is located in `all` mode.
        let bad = "[\n {\"conversations\": [{\"from\": \"human\", \"value\": \"q\"}]},\n {\"conversations\": [{\"from\": \"bot\", \"value\": \"x\"}]}\n]";
        let m = parse_turns(
            bad.as_bytes(),
            DatasetFormat::Sharegpt,
            "d.json",
            4,
            Turns::All,
        )
        .unwrap_err();
        assert!(
            m.starts_with("d.json:3: field `conversations[0].from`: \"bot\""),
            "{m}"
        );
    }

    #[test]
    fn mooncake_checks_lengths_chains_and_signs() {
        let ok = "{\"timestamp\": 0, \"input_length\": 6, \"output_length\": 3, \"hash_ids\": [1, 2]}\n\
                  {\"timestamp\": 5, \"input_length\": 9, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n";
        let e = parse(ok.as_bytes(), DatasetFormat::Mooncake, "m", 4).unwrap();
        assert_eq!(e[1].timestamp_ms, Some(5));
        assert_eq!(e[1].output_tokens, Some(1));
        let neg = "{\"timestamp\": 0, \"input_length\": -6, \"output_length\": 3, \"hash_ids\": [1, 2]}\n";
        assert!(err(neg, DatasetFormat::Mooncake).starts_with("d.jsonl:1: field `input_length`"));
        let unchained = format!(
            "{}{}",
            ok,
            "{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [7, 2]}\n"
        );
        let m = err(&unchained, DatasetFormat::Mooncake);
        assert!(
            m.starts_with("d.jsonl:3: field `hash_ids[1]`: id 2 does not chain: line 1 has it at position 1 after id 1"),
            "{m}"
        );
        let late = format!(
            "{ok}{}",
            "{\"timestamp\": 4, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [8, 9]}\n"
        );
        let m = err(&late, DatasetFormat::Mooncake);
        assert!(
            m.starts_with("d.jsonl:3: field `timestamp`: 4 ms is before line 2's 5 ms"),
            "{m}"
        );
        let long =
            "{\"timestamp\": 0, \"input_length\": 9, \"output_length\": 3, \"hash_ids\": [1, 2]}\n";
        assert!(
            err(long, DatasetFormat::Mooncake)
                .starts_with("d.jsonl:1: field `input_length`: 9 tokens")
        );
    }

    #[test]
    fn the_real_trace_parses_with_its_block_size() {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/traces/mooncake-conversation-first200.jsonl"
        );
        let bytes = std::fs::read(p).unwrap();
        let e = parse(&bytes, DatasetFormat::Mooncake, "t", 512).unwrap();
        assert_eq!(e.len(), 200);
    }
}
