//! What a job's drivers recorded of its steps and trajectories: the report's input
//! (the drivers fill them in; report assembly reads them). Times are `elapsed_ns` on the
//! run's clock.

use crate::model::RequestRecord;
use crate::model::{FailureCode, StepKind, StepStatus, StopReason, ToolErrorCode};

/// One executed step of a trajectory.
#[derive(Debug, Clone)]
pub struct StepRecord {
    /// Run-unique step id (also the `step_id` of its step marker, docs/artifacts.md).
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
    /// Typed failure code (the client's, `tool_error`, `cancelled`), `None` on success.
    pub failure_code: Option<FailureCode>,
    /// Which tool error, for `failure_code = tool_error`.
    pub tool_error: Option<ToolErrorCode>,
    /// The request record for `llm_call` steps (timings, usage); `None` for tools.
    pub request: Option<RequestRecord>,
    /// The request's `max_tokens` for `llm_call` steps; `None` for tools or when unset.
    pub max_tokens: Option<u32>,
    /// For a tool step: the id of the tool call it executed; `None` otherwise.
    pub tool_call_id: Option<String>,
    /// `false` for a step known only from a step marker in an SWE harness's own file:
    /// its status is then not known.
    pub status_known: bool,
    /// For an external marker that starts before the run's reference instant: how long
    /// before it, ns (`start_ns` is then 0). The real start is `anchor −` this; nothing is
    /// rewritten. `None` for every step that starts at or after it.
    pub start_before_anchor_ns: Option<u64>,
    /// For an external marker that also ends before the reference instant: how long
    /// before it, ns (`end_ns` is then 0, the real end `anchor −` this); `None` otherwise.
    pub end_before_anchor_ns: Option<u64>,
    /// For an SWE harness marker: the `step_id` the harness wrote (`step_id` is the
    /// run-unique id the runner gave the step); `None` for the runner's own steps.
    pub harness_step_id: Option<u64>,
}

impl StepRecord {
    /// A completed `chat` LLM step of the runner's own over `[start_ns, end_ns]`, with
    /// its request record and nothing else set.
    pub fn completed_llm_call(
        step_id: u64,
        start_ns: u64,
        end_ns: u64,
        request: RequestRecord,
    ) -> StepRecord {
        StepRecord {
            step_id,
            kind: StepKind::LlmCall,
            name: "chat".into(),
            start_ns,
            end_ns,
            status: StepStatus::Completed,
            failure_code: None,
            tool_error: None,
            request: Some(request),
            max_tokens: None,
            tool_call_id: None,
            status_known: true,
            start_before_anchor_ns: None,
            end_before_anchor_ns: None,
            harness_step_id: None,
        }
    }

    /// Step duration in milliseconds, from the real start to the real end (also when
    /// either lies before the anchor).
    pub fn duration_ms(&self) -> f64 {
        step_duration_ns(
            self.start_ns,
            self.end_ns,
            self.start_before_anchor_ns,
            self.end_before_anchor_ns,
        ) as f64
            / 1e6
    }

    /// The step's end as unix ns, given the run's anchor (its real end, before the anchor
    /// too).
    pub fn end_unix_ns(&self, anchor: u64) -> u64 {
        match self.end_before_anchor_ns {
            Some(b) => anchor.saturating_sub(b),
            None => anchor + self.end_ns,
        }
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

/// A step's duration, ns, from its times on the run clock and how far before the anchor
/// its start and end lie (each `None` when at or after it).
pub fn step_duration_ns(
    start_ns: u64,
    end_ns: u64,
    start_before: Option<u64>,
    end_before: Option<u64>,
) -> u64 {
    // Signed ns from the anchor; both fit an i128 exactly.
    let at = |t: u64, before: Option<u64>| match before {
        Some(b) => -(b as i128),
        None => t as i128,
    };
    let d = at(end_ns, end_before) - at(start_ns, start_before);
    u64::try_from(d.max(0)).unwrap_or(u64::MAX)
}

/// One trajectory (one agentic task attempt, one context sweep repeat, one SWE run).
#[derive(Debug, Clone)]
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
    pub final_answer: Option<String>,
    /// Harness standard output (graded; never written to artifacts).
    pub stdout: Option<String>,
    /// Start, ns from the reference instant.
    pub start_ns: u64,
    /// End, ns from the reference instant.
    pub end_ns: u64,
}
