//! The runner's record of what one job did: steps, trajectories and job results.
//!
//! Every LLM call and every tool call is a step (ADR-013 `llm_call` / `tool`); an SWE
//! harness run is one `harness` span and contributes only the steps its own marker file
//! declares. Times are `elapsed_ns` on the run's clock.

use serde::Serialize;

use crate::client::RequestRecord;

/// Kind of a step (ADR-013 marker kinds; `harness` is the opaque SWE harness span).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// One chat-completions request.
    LlmCall,
    /// One fixture-tool execution.
    Tool,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// The step ran to completion (a tool that returned an error result is still completed;
    /// see `failure_code`).
    Completed,
    /// The request failed (transport or protocol), or the tool failed.
    Failed,
    /// Cut short by Ctrl-C.
    Cancelled,
}

/// One executed step of a trajectory.
#[derive(Debug, Clone, Serialize)]
pub struct StepRecord {
    /// Run-unique step id (also the ADR-013 marker `step_id`).
    pub step_id: u64,
    /// `llm_call` or `tool`.
    pub kind: StepKind,
    /// `chat` for LLM calls, the tool name for tool steps.
    pub name: String,
    /// Window start, ns from the reference instant.
    pub start_ns: u64,
    /// Window end, ns from the reference instant.
    pub end_ns: u64,
    /// How the step ended.
    pub status: StepStatus,
    /// Typed failure code (client failure code, or tool error code), `null` on success.
    pub failure_code: Option<String>,
    /// The request record for `llm_call` steps (timings, usage); `null` for tools.
    #[serde(skip)]
    pub request: Option<RequestRecord>,
    /// For an external marker that starts before the run's reference instant: how long
    /// before it, ns (`start_ns` is then 0). The real start is `anchor −` this; nothing is
    /// rewritten (issue 15 item 8). `None` for every step that starts at or after it.
    pub start_before_anchor_ns: Option<u64>,
}

impl StepRecord {
    /// Step duration in milliseconds (from the real start, also before the anchor).
    pub fn duration_ms(&self) -> f64 {
        let start_to_anchor = self.start_before_anchor_ns.unwrap_or(0);
        (self.end_ns + start_to_anchor).saturating_sub(self.start_ns) as f64 / 1e6
    }

    /// The step's start as unix ns, given the run's anchor (its real start, before the
    /// anchor too).
    pub fn start_unix_ns(&self, anchor: u64) -> u64 {
        match self.start_before_anchor_ns {
            Some(b) => anchor.saturating_sub(b),
            None => anchor + self.start_ns,
        }
    }
}

/// Why a trajectory stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without calling a tool (or the script ended with the final call).
    FinalAnswer,
    /// `max_steps` LLM calls were made without a final answer.
    MaxSteps,
    /// The same tool call (parsed-JSON equal arguments) repeated `max_repeated_tool_calls`
    /// times in a row (field case C27).
    RepeatedToolCall,
    /// An LLM request failed; the trajectory cannot continue.
    RequestFailed,
    /// Ctrl-C.
    Cancelled,
    /// Context sweep or SWE harness finished (not an agentic loop).
    Completed,
    /// The SWE harness exceeded its timeout and was killed with its process group.
    Timeout,
    /// The SWE harness exited non-zero or could not start.
    HarnessFailed,
}

/// One trajectory (one agentic task attempt, one context sweep repeat, one SWE run).
#[derive(Debug, Clone, Serialize)]
pub struct TrajectoryRecord {
    /// `suite::job#index`.
    pub id: String,
    /// 0-based repeat index.
    pub index: u32,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Executed steps, in order.
    pub steps: Vec<StepRecord>,
    /// Tool names called, in order (for `tool_called` checks).
    pub tools_called: Vec<String>,
    /// Final answer text (graded; never written to artifacts).
    #[serde(skip)]
    pub final_answer: Option<String>,
    /// Harness standard output (graded; never written to artifacts).
    #[serde(skip)]
    pub stdout: Option<String>,
    /// Start, ns from the reference instant.
    pub start_ns: u64,
    /// End, ns from the reference instant.
    pub end_ns: u64,
}
