//! The runner's record of what one job did: steps, trajectories and job results.
//!
//! Every LLM call and every tool call is a step (docs/measurement.md `llm_call` / `tool`); an SWE
//! harness run is one `harness` span and contributes only the steps its own marker file
//! declares. Times are `elapsed_ns` on the run's clock.

use crate::client::RequestRecord;
pub use crate::model::{FailureCode, StepKind, StepStatus, StopReason, ToolErrorCode};

/// One executed step of a trajectory.
#[derive(Debug, Clone)]
pub struct StepRecord {
    /// Run-unique step id (also the marker (docs/artifacts.md) `step_id`).
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
    /// `false` for a step known only from an marker (docs/artifacts.md) (an SWE harness's own file):
    /// its status is then not known.
    pub status_known: bool,
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

/// The results of `checks` on one trajectory.
pub fn grade_trajectory(
    checks: &[crate::grade::Check],
    t: &TrajectoryRecord,
) -> Vec<crate::grade::CheckResult> {
    // A call counts as valid unless its arguments failed the tool's schema (or it named
    // no declared tool).
    let valid: Vec<String> = t
        .steps
        .iter()
        .filter(|s| {
            s.kind == StepKind::Tool
                && !matches!(
                    s.tool_error,
                    Some(
                        crate::model::ToolErrorCode::BadArguments
                            | crate::model::ToolErrorCode::UnknownTool
                    )
                )
        })
        .map(|s| s.name.clone())
        .collect();
    crate::grade::evaluate(
        checks,
        &crate::grade::GradeSubject {
            final_answer: t.final_answer.as_deref(),
            stdout: t.stdout.as_deref(),
            tool_calls: &t.tools_called,
            valid_tool_calls: &valid,
        },
    )
}
