//! Steps and trajectories as reported: ONE step shape ([`StepReport`]) for `report.json`, the
//! console tables, the JSON messages, the dashboard, the snapshots and OTLP. The attribution
//! figures of a step sit inside it ([`StepReport::attribution`]), never in a parallel list
//! (docs/measurement.md "Per step and per trajectory (energy and engine counters)").

use serde::{Deserialize, Serialize};

use super::attribution::{AttributionOutcome, StepAttribution, TrajectoryAttribution};
use super::basis::{TokenCount, TokenEstimate};
use super::figure::Figure;
use super::request::FailureCode;
pub use super::step_kind::StepKind;

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// The step ran to completion.
    Completed,
    /// The request failed (transport or protocol), or the tool failed.
    Failed,
    /// Cut short by Ctrl-C / SIGTERM.
    Cancelled,
}

impl StepStatus {
    /// `completed`, `failed` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Completed => "completed",
            StepStatus::Failed => "failed",
            StepStatus::Cancelled => "cancelled",
        }
    }
}

/// Why a fixture tool failed (the detail behind a step's `failure_code = tool_error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolErrorCode {
    /// The model called a tool the suite does not declare.
    UnknownTool,
    /// Arguments are not JSON, not an object, or do not fit the declared parameters.
    BadArguments,
    /// A read tool was asked for an absolute path, a `..` path or a symlink leaving its
    /// root.
    SandboxViolation,
    /// A read tool was asked for a file that does not exist (or is a directory).
    NotFound,
    /// No response-table row matches the arguments and there is no default.
    NoMatchingResponse,
    /// Reading a file failed (permissions, too large, not UTF-8).
    Io,
}

impl ToolErrorCode {
    /// The snake_case code.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolErrorCode::UnknownTool => "unknown_tool",
            ToolErrorCode::BadArguments => "bad_arguments",
            ToolErrorCode::SandboxViolation => "sandbox_violation",
            ToolErrorCode::NotFound => "not_found",
            ToolErrorCode::NoMatchingResponse => "no_matching_response",
            ToolErrorCode::Io => "io",
        }
    }
}

/// Why a trajectory stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without calling a tool (or the script ended with the final call).
    FinalAnswer,
    /// `max_steps` LLM calls were made without a final answer.
    MaxSteps,
    /// The same tool call repeated `max_repeated_tool_calls` times in a row (C27).
    RepeatedToolCall,
    /// An LLM request failed; the trajectory cannot continue.
    RequestFailed,
    /// Ctrl-C / SIGTERM.
    Cancelled,
    /// Context sweep or SWE harness finished (not an agentic loop).
    Completed,
    /// The SWE harness exceeded its timeout and was killed with its process group.
    Timeout,
    /// The SWE harness exited non-zero or could not start.
    HarnessFailed,
}

impl StopReason {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::FinalAnswer => "final_answer",
            StopReason::MaxSteps => "max_steps",
            StopReason::RepeatedToolCall => "repeated_tool_call",
            StopReason::RequestFailed => "request_failed",
            StopReason::Cancelled => "cancelled",
            StopReason::Completed => "completed",
            StopReason::Timeout => "timeout",
            StopReason::HarnessFailed => "harness_failed",
        }
    }

    /// The trajectory reached its end (a final answer, or a sweep/harness that completed).
    pub fn finished(self) -> bool {
        matches!(self, StopReason::FinalAnswer | StopReason::Completed)
    }
}

/// One step of a trajectory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// Run-unique step id (also the `step_id` of its step marker).
    pub step_id: u64,
    /// `llm_call` or `tool`.
    pub kind: StepKind,
    /// `chat` or the tool name (a marker's name, or its kind when it had none).
    pub name: String,
    /// Start, ns from the reference instant.
    pub start_ns: u64,
    /// End, ns from the reference instant.
    pub end_ns: u64,
    /// Duration, ms (from the real start, also one before the reference instant).
    pub duration_ms: f64,
    /// For an SWE harness marker that starts before the run's reference instant: how long
    /// before it, ns (`start_ns` is then 0, the real start `reference_instant_unix_ns −`
    /// this); `null` otherwise.
    pub start_before_anchor_ns: Option<u64>,
    /// For an SWE harness marker that also ends before the reference instant: how long
    /// before it, ns (`end_ns` is then 0, the real end `reference_instant_unix_ns −` this);
    /// absent otherwise. `duration_ms` runs from the real start to the real end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_before_anchor_ns: Option<u64>,
    /// For an SWE harness marker: the `step_id` the harness wrote in its steps file
    /// (`step_id` above is the run-unique id the runner gave the step); absent for the
    /// runner's own steps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_step_id: Option<u64>,
    /// How the step ended; `null` when the step is known only from a step marker (an
    /// SWE harness's own markers say when a step ran, not how it ended; docs/artifacts.md).
    pub status: Option<StepStatus>,
    /// Failure code, `null` on success.
    pub failure_code: Option<FailureCode>,
    /// For `failure_code = tool_error`: which.
    pub tool_error: Option<ToolErrorCode>,
    /// Prompt tokens from this response's usage (exact); `null` for tools or unreported.
    pub prompt_tokens: Option<u64>,
    /// Cached prompt tokens from this response's usage; `null` when not reported.
    pub cached_tokens: Option<u64>,
    /// Completion tokens from this response's server usage only; `null` for tools, and
    /// when the server reported none (see `completion_tokens_estimate`).
    pub completion_tokens: Option<u64>,
    /// The client's estimate with its method when the server reported no usage.
    pub completion_tokens_estimate: Option<TokenEstimate>,
    /// TTFT, ms from send; `null` for tools or when no token arrived.
    pub ttft_ms: Option<f64>,
    /// The request's `max_tokens`; `null` for tools and when the request set none.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// The response's last `finish_reason` (`stop`, `length`, `tool_calls`, …); `null` for
    /// tools and when none arrived.
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// The HTTP status of the response head; `null` for tools and when none arrived.
    #[serde(default)]
    pub http_status: Option<u16>,
    /// The `model` the server named in its response (it may differ from the model asked
    /// for); `null` for tools and when the response named none.
    #[serde(default)]
    pub response_model: Option<String>,
    /// For a tool step: the id of the tool call it executed (the server's, or the runner's
    /// `call_<k>` in a scripted trajectory); `null` otherwise.
    #[serde(default)]
    pub tool_call_id: Option<String>,
    /// Step energy, mJ (step-attribution trapezoid (docs/measurement.md), summed over devices; withheld, with the reason,
    /// when some device with a power series had no sample segment inside the window).
    pub energy: Figure<u64>,
    /// Output tokens per joule of this step (server count, else the estimate, labelled).
    pub tokens_per_joule: Figure<f64>,
    /// A warm-up request of a load point: recorded, excluded from statistics.
    pub warmup: bool,
    /// The step-attribution figures (docs/measurement.md) of this step (samples, coverage, per-device energy, counter
    /// deltas); `null` when the trajectory's attribution was withheld or not computed.
    pub attribution: Option<StepAttribution>,
}

impl TrajectoryReport {
    /// The server strings of every step (`finish_reason`, `response_model`,
    /// `tool_call_id`) with the `secrets` (the run's API key) redacted.
    pub fn redact_server_text(&mut self, secrets: &[&str]) {
        use crate::request::redact_known_in;
        for st in &mut self.steps {
            redact_known_in(&mut st.finish_reason, secrets);
            redact_known_in(&mut st.response_model, secrets);
            redact_known_in(&mut st.tool_call_id, secrets);
        }
    }
}

impl StepReport {
    /// The step's start as unix ns, given the run's anchor (its real start, before the
    /// anchor too).
    pub fn start_unix_ns(&self, anchor: u64) -> u64 {
        match self.start_before_anchor_ns {
            Some(b) => anchor.saturating_sub(b),
            None => anchor + self.start_ns,
        }
    }

    /// The step's end as unix ns, given the run's anchor (its real end, before the anchor
    /// too).
    pub fn end_unix_ns(&self, anchor: u64) -> u64 {
        match self.end_before_anchor_ns {
            Some(b) => anchor.saturating_sub(b),
            None => anchor + self.end_ns,
        }
    }

    /// The step's output-token count and its source: the server's, else the estimate.
    pub fn output_token_count(&self) -> Option<TokenCount> {
        TokenCount::of_usage(self.completion_tokens, self.completion_tokens_estimate)
    }
}

/// The reason of an attributed trajectory's missing energy when no step of it has an
/// energy figure of its own (every window shorter than the sampling grid).
pub const NO_STEP_ENERGY: &str = "no step has an energy figure";

/// One trajectory (one agentic task attempt, one context sweep repeat, one SWE run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryReport {
    /// `suite::job#index`.
    pub id: String,
    /// Repeat index.
    pub index: u32,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Whether every check passed for this trajectory (`null` without checks).
    pub graded_pass: Option<bool>,
    /// Output tokens over its LLM steps: missing when any LLM step lacks a count (never a
    /// sum with 0); `client_estimate` when any count is estimated.
    pub completion_tokens: Figure<u64>,
    /// Energy of its steps, mJ (docs/measurement.md: the sum over devices of the step windows; the
    /// energy between and across step boundaries is in `attribution.unattributed_energy_mj`).
    pub energy: Figure<u64>,
    /// `completion_tokens / energy`: missing when either is.
    pub tokens_per_joule: Figure<f64>,
    /// Steps, in order.
    pub steps: Vec<StepReport>,
    /// The trajectory's step attribution (docs/measurement.md): totals, reconciliation, drops, condition; or
    /// why it was withheld. `null` without telemetry. In a merged run it stays in its
    /// shard's clock domain (joined against that shard's samples).
    pub attribution: Option<AttributionOutcome<TrajectoryAttribution>>,
    /// In a merged run, the shard (K) that ran it: its times are that shard's, shifted by
    /// the shard's `merge.shards[].offset_ns` onto the merged axis. `null` otherwise.
    pub shard: Option<u32>,
}
