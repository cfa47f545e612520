//! Assembly of streamed tool-call deltas into whole calls (field case C09). Pure.
//!
//! Rules (OpenAI streaming format, hardened against the server deviations in C09):
//! - a fragment with `index: i` continues the call currently open at `i`, or opens a new one;
//! - a fragment whose non-empty `id` differs from the id of the call open at its index opens
//!   a NEW call at that index (Ollama-style reuse of `index: 0`, C09 B);
//! - the id is usually only on the first fragment; later id-less fragments continue the call;
//! - several entries for the same index in one frame are applied in order (C09 A);
//! - an ABSENT `index` is not 0 (C09 C): such a fragment continues the call with the same
//!   id if one exists, opens a new call when it carries a new id, else continues the most
//!   recently opened call;
//! - `arguments` fragments are concatenated as text (a JSON object is serialized first);
//!   a call that never received arguments gets `{}` (C09 D).

use std::collections::HashMap;

use serde_json::Value;

use super::record::ToolCall;

#[derive(Debug, Default)]
struct Building {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Accumulates `delta.tool_calls` entries of one response into [`ToolCall`]s.
#[derive(Debug, Default)]
pub struct ToolCallAssembler {
    calls: Vec<Building>,
    open_at_index: HashMap<u64, usize>,
}

impl ToolCallAssembler {
    /// An empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when no fragment has been applied.
    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }

    /// Applies one `delta.tool_calls` array (entries in order). Non-object entries are
    /// ignored.
    pub fn apply_deltas(&mut self, entries: &[Value]) {
        for entry in entries {
            if let Value::Object(_) = entry {
                self.apply_one(entry);
            }
        }
    }

    /// Applies a complete (non-streamed) `message.tool_calls` entry as its own call.
    pub fn push_complete(&mut self, entry: &Value) {
        let pos = self.open_new(non_empty_str(entry.get("id")));
        self.extend(pos, entry);
    }

    fn apply_one(&mut self, entry: &Value) {
        let index = entry.get("index").and_then(Value::as_u64);
        let id = non_empty_str(entry.get("id"));
        let pos = match index {
            Some(i) => match self.open_at_index.get(&i).copied() {
                Some(pos) => {
                    let differs = matches!(
                        (&self.calls[pos].id, &id),
                        (Some(old), Some(new)) if old != new
                    );
                    if differs {
                        let pos = self.open_new(id);
                        self.open_at_index.insert(i, pos);
                        pos
                    } else {
                        if self.calls[pos].id.is_none() {
                            self.calls[pos].id = id;
                        }
                        pos
                    }
                }
                None => {
                    let pos = self.open_new(id);
                    self.open_at_index.insert(i, pos);
                    pos
                }
            },
            None => match id {
                Some(id) => match self
                    .calls
                    .iter()
                    .position(|c| c.id.as_deref() == Some(id.as_str()))
                {
                    Some(pos) => pos,
                    None => self.open_new(Some(id)),
                },
                None => match self.calls.len() {
                    0 => self.open_new(None),
                    n => n - 1,
                },
            },
        };
        self.extend(pos, entry);
    }

    fn open_new(&mut self, id: Option<String>) -> usize {
        self.calls.push(Building {
            id,
            ..Building::default()
        });
        self.calls.len() - 1
    }

    fn extend(&mut self, pos: usize, entry: &Value) {
        let Some(function) = entry.get("function") else {
            return;
        };
        let call = &mut self.calls[pos];
        if let Some(name) = non_empty_str(function.get("name")) {
            // Servers send the name once; some repeat it on every fragment (ignored).
            if call.name.is_empty() {
                call.name = name;
            } else if call.name != name {
                call.name.push_str(&name);
            }
        }
        match function.get("arguments") {
            Some(Value::String(s)) => call.arguments.push_str(s),
            Some(v @ Value::Object(_)) => call.arguments.push_str(&v.to_string()),
            _ => {}
        }
    }

    /// The assembled calls in order of first appearance. Missing ids become `call_<k>`
    /// (flagged `id_synthesized`); empty or whitespace-only arguments become `{}`.
    pub fn finish(self) -> Vec<ToolCall> {
        self.calls
            .into_iter()
            .enumerate()
            .map(|(k, b)| {
                let (id, id_synthesized) = match b.id {
                    Some(id) => (id, false),
                    None => (format!("call_{k}"), true),
                };
                let arguments = if b.arguments.trim().is_empty() {
                    "{}".to_string()
                } else {
                    b.arguments
                };
                ToolCall {
                    id,
                    id_synthesized,
                    name: b.name,
                    arguments,
                }
            })
            .collect()
    }
}

fn non_empty_str(v: Option<&Value>) -> Option<String> {
    match v {
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn later_fragment_sets_missing_id_and_repeated_name_is_kept_once() {
        let mut a = ToolCallAssembler::new();
        a.apply_deltas(&[json!({"index":0,"function":{"name":"f","arguments":"{\"a\""}})]);
        a.apply_deltas(&[json!({"index":0,"id":"x","function":{"name":"f","arguments":":1}"}})]);
        let calls = a.finish();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "x");
        assert!(!calls[0].id_synthesized);
        assert_eq!(calls[0].name, "f");
        assert_eq!(calls[0].arguments, "{\"a\":1}");
    }

    #[test]
    fn missing_id_is_synthesized_and_object_arguments_serialized() {
        let mut a = ToolCallAssembler::new();
        a.apply_deltas(&[json!({"function":{"name":"g","arguments":{"k":"v"}}})]);
        let calls = a.finish();
        assert_eq!(calls[0].id, "call_0");
        assert!(calls[0].id_synthesized);
        assert_eq!(calls[0].arguments, "{\"k\":\"v\"}");
    }
}
