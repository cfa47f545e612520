//! Replays a recorded trajectory's shape ([`crate::suite::replay`]) on
//! this endpoint. Each recorded LLM step becomes one request of one user message sized to
//! the recorded `usage.prompt_tokens` (with a token counter: exact filler of the size less
//! the chat template's overhead; else 4 bytes a token), whose text starts with the previous
//! step's text when the recorded prompt grew from it (the prefix a cache can reuse), with a
//! fixed output of the recorded completion tokens. A tool step is a sleep of its recorded
//! duration (a tool span, no fixture runs); each step waits its recorded think time first.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::agentic::{DriverCtx, LlmExecutor, ToolExec, ToolOutcome, llm_step, tool_step};
use crate::client::ChatRequest;
use crate::filler::filler;
use crate::shape::RequestShape;
use crate::steps::{StepStatus, StopReason, TrajectoryRecord};
use crate::suite::replay::{ShapeStep, TrajectoryShape};
use crate::tokens::PromptTokens;

/// Settings of one replayed trajectory.
#[derive(Debug, Clone)]
pub struct ReplayPlan {
    /// `suite::job#index`.
    pub trajectory_id: String,
    /// Repeat index.
    pub index: u32,
    /// Model name sent in each request.
    pub model: String,
    /// The recorded shape.
    pub shape: Arc<TrajectoryShape>,
    /// Filler seed.
    pub seed: u64,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// The suite's counter and template overhead (`None`: the bytes/4 estimate).
    pub tokens: Option<Arc<PromptTokens>>,
    /// The job's `extra_body` (its output length is replaced by each step's).
    pub request: RequestShape,
    /// Prompts whose counter failed: sent as bytes/4 filler, stated in the job's notes.
    pub count_failures: crate::tokens::CountFailures,
}

/// A recorded tool as a sleep of its duration: no output, never fails.
struct Sleep(Duration);

impl ToolExec for Sleep {
    fn execute(&self, _name: &str, _arguments: &str) -> ToolOutcome {
        ToolOutcome {
            content: String::new(),
            failed: false,
            error_code: None,
            latency: self.0,
        }
    }
}

impl ReplayPlan {
    /// The user message of a `prompt_tokens` prompt starting with `prev` (empty: none):
    /// its text and the prompt tokens the server should report.
    async fn content(&self, prev: &str, prompt_tokens: u64, k: usize) -> (String, u64) {
        let seed = self.seed ^ ((k as u64 + 1) << 32);
        let prefix = if prev.is_empty() {
            String::new()
        } else {
            format!("{prev} ")
        };
        if let Some(t) = &self.tokens {
            let want = (prompt_tokens as usize).saturating_sub(t.overhead).max(1);
            let built = crate::tokens::exact_filler_after(&t.counter, &prefix, seed, want, &[]);
            match built.await {
                Ok((text, n)) => return (text, (n + t.overhead) as u64),
                Err(e) => self.count_failures.record(&e),
            }
        }
        let have = prefix.len() / crate::filler::BYTES_PER_TOKEN;
        let more = (prompt_tokens as usize).saturating_sub(have).max(1);
        (
            format!("{prefix}{}", filler(seed, more, &[])),
            prompt_tokens,
        )
    }

    /// Request `k` (the k-th LLM step): `{trajectory_id with # → .t}.replay{k}`.
    fn request(&self, k: usize, content: String, asked: u64, output: u64) -> ChatRequest {
        let mut req = ChatRequest {
            request_id: format!("{}.replay{k}", self.trajectory_id.replace('#', ".t")),
            model: self.model.clone(),
            messages: vec![json!({"role": "user", "content": content})],
            temperature: self.temperature,
            seed: Some(self.seed),
            stream: true,
            prompt_tokens_asked: Some(asked),
            ..Default::default()
        };
        let mut shape = self.request.clone();
        shape.output_tokens = Some(u32::try_from(output).unwrap_or(u32::MAX));
        shape.apply(&mut req);
        req
    }
}

/// Runs the recorded shape once; the trajectory ends `completed`, or at the first failed
/// request, or on Ctrl-C.
pub async fn run_replay<E: LlmExecutor>(
    exec: &E,
    ctx: &DriverCtx,
    plan: &ReplayPlan,
) -> TrajectoryRecord {
    let start_ns = exec.now_ns();
    let case_id = plan.trajectory_id.as_str();
    let (mut steps, mut tools_called) = (Vec::new(), Vec::new());
    let (mut prev, mut k) = (String::new(), 0usize);
    let mut stop_reason = StopReason::Completed;
    for s in plan.shape.steps.iter() {
        if ctx.is_cancelled() {
            stop_reason = StopReason::Cancelled;
            break;
        }
        match s {
            ShapeStep::Llm {
                prompt_tokens,
                prefix_tokens,
                output_tokens,
                think_ns,
            } => {
                tokio::time::sleep(Duration::from_nanos(*think_ns)).await;
                let from = if *prefix_tokens > 0 {
                    prev.as_str()
                } else {
                    ""
                };
                let (content, asked) = plan.content(from, *prompt_tokens, k).await;
                let req = plan.request(k, content.clone(), asked, *output_tokens);
                let step = llm_step(exec, ctx, case_id, &req).await;
                let ok = step.status == StepStatus::Completed;
                let cancelled = step.status == StepStatus::Cancelled;
                steps.push(step);
                if !ok {
                    stop_reason = if cancelled {
                        StopReason::Cancelled
                    } else {
                        StopReason::RequestFailed
                    };
                    break;
                }
                (prev, k) = (content, k + 1);
            }
            ShapeStep::Tool {
                name,
                duration_ns,
                think_ns,
            } => {
                tokio::time::sleep(Duration::from_nanos(*think_ns)).await;
                let sleep = Sleep(Duration::from_nanos(*duration_ns));
                let call = (format!("replay_{}", steps.len()), name.as_str(), "{}");
                let now = || exec.now_ns();
                let (step, _) =
                    tool_step(&sleep, ctx, now, case_id, (&call.0, call.1, call.2)).await;
                steps.push(step);
                tools_called.push(name.clone());
            }
        }
    }
    TrajectoryRecord {
        id: plan.trajectory_id.clone(),
        index: plan.index,
        stop_reason,
        steps,
        tools_called,
        final_answer: None,
        stdout: None,
        start_ns,
        end_ns: exec.now_ns(),
    }
}
