//! The kind of a step: an LLM call or a tool execution (the marker kinds of
//! docs/artifacts.md).

use serde::{Deserialize, Serialize};

/// Kind of a step (the marker kinds of docs/artifacts.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// One LLM call (a chat-completions request).
    LlmCall,
    /// One tool execution (no tokens flow; its window carries idle or tool energy).
    Tool,
}

impl StepKind {
    /// The marker label: `llm_call` or `tool`.
    pub fn label(self) -> &'static str {
        match self {
            StepKind::LlmCall => "llm_call",
            StepKind::Tool => "tool",
        }
    }
}
