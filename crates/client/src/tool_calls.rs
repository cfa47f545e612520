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

use super::record::ToolCall;

/// One `tool_calls` entry as the assembler reads it, whatever it was parsed from (the
/// client's typed chunk view, or a `serde_json::Value` in tests and for complete calls).
/// Empty `id` and `name` strings are `None`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolDelta<'a> {
    /// `index`, when a non-negative integer.
    pub index: Option<u64>,
    /// Non-empty `id`.
    pub id: Option<&'a str>,
    /// Whether the entry had a `function` member at all.
    pub has_function: bool,
    /// Non-empty `function.name`.
    pub name: Option<&'a str>,
    /// `function.arguments` as text (an object argument already serialized).
    pub arguments: Option<&'a str>,
}

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

    /// Applies one streamed `delta.tool_calls` entry (entries of one array in order).
    pub fn apply_delta(&mut self, entry: &ToolDelta<'_>) {
        let id = entry.id;
        let pos = match entry.index {
            Some(i) => match self.open_at_index.get(&i).copied() {
                Some(pos) => {
                    let differs = matches!(
                        (&self.calls[pos].id, id),
                        (Some(old), Some(new)) if old != new
                    );
                    if differs {
                        let pos = self.open_new(id);
                        self.open_at_index.insert(i, pos);
                        pos
                    } else {
                        if self.calls[pos].id.is_none() {
                            self.calls[pos].id = id.map(str::to_string);
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
                Some(id) => match self.calls.iter().position(|c| c.id.as_deref() == Some(id)) {
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

    /// Applies a complete (non-streamed) `message.tool_calls` entry as its own call.
    pub fn push_complete(&mut self, entry: &ToolDelta<'_>) {
        let pos = self.open_new(entry.id);
        self.extend(pos, entry);
    }

    fn open_new(&mut self, id: Option<&str>) -> usize {
        self.calls.push(Building {
            id: id.map(str::to_string),
            ..Building::default()
        });
        self.calls.len() - 1
    }

    fn extend(&mut self, pos: usize, entry: &ToolDelta<'_>) {
        if !entry.has_function {
            return;
        }
        let call = &mut self.calls[pos];
        if let Some(name) = entry.name {
            // Servers send the name once; some repeat it on every fragment (ignored).
            if call.name.is_empty() {
                call.name = name.to_string();
            } else if call.name != name {
                call.name.push_str(name);
            }
        }
        if let Some(args) = entry.arguments {
            call.arguments.push_str(args);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn delta<'a>(
        index: Option<u64>,
        id: Option<&'a str>,
        name: &'a str,
        arguments: &'a str,
    ) -> ToolDelta<'a> {
        ToolDelta {
            index,
            id,
            has_function: true,
            name: Some(name),
            arguments: Some(arguments),
        }
    }

    #[test]
    fn later_fragment_sets_missing_id_and_repeated_name_is_kept_once() {
        let mut a = ToolCallAssembler::new();
        a.apply_delta(&delta(Some(0), None, "f", "{\"a\""));
        a.apply_delta(&delta(Some(0), Some("x"), "f", ":1}"));
        let calls = a.finish();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].id, "x");
        assert!(!calls[0].id_synthesized);
        assert_eq!(calls[0].name, "f");
        assert_eq!(calls[0].arguments, "{\"a\":1}");
    }

    #[test]
    fn missing_id_is_synthesized() {
        let mut a = ToolCallAssembler::new();
        a.apply_delta(&delta(None, None, "g", "{\"k\":\"v\"}"));
        let calls = a.finish();
        assert_eq!(calls[0].id, "call_0");
        assert!(calls[0].id_synthesized);
        assert_eq!(calls[0].arguments, "{\"k\":\"v\"}");
    }
}
