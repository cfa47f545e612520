//! Agentic driver: the model-driven tool loop and the scripted replay (docs/suite.md).
//!
//! Generic over an [`LlmExecutor`] and a [`ToolExec`] so the loop logic is tested with
//! mocks (the hyperfine executor pattern): no network in the unit tests.
//!
//! - `mode = "model"`: the model chooses tool calls; the loop ends at a final answer, at
//!   `max_steps` LLM calls, or when the same call (tool name + parsed-JSON-equal
//!   arguments) repeats `max_repeated_tool_calls` times in a row (field case C27, reason
//!   `repeated_tool_call`; the repeated call is not executed).
//! - `mode = "scripted"`: a fixed trajectory: each script entry is one LLM call whose
//!   assistant turn is *replaced* by the scripted tool call, then that tool runs; one final
//!   LLM call follows. The same requests are sent every run, so engines and commits are
//!   compared on identical work, and history grows each step (prefix-cache reuse).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use crate::capture::Capture;
use crate::client::{ChatRequest, RequestRecord};
use crate::steps::{
    FailureCode, StepKind, StepRecord, StepStatus, StopReason, ToolErrorCode, TrajectoryRecord,
};

/// Sends one chat request and returns its record (never fails: failures are records).
pub trait LlmExecutor: Sync {
    /// Performs the request; the record's times are on the run clock.
    fn chat(&self, req: &ChatRequest) -> impl Future<Output = RequestRecord> + Send;
    /// Now, in ns from the reference instant.
    fn now_ns(&self) -> u64;
}

/// The result of one fixture-tool execution as the driver needs it.
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    /// Text returned to the model as the tool message (never written to artifacts).
    pub content: String,
    /// The tool failed.
    pub failed: bool,
    /// Which failure (e.g. `sandbox_violation`), when the tool said.
    pub error_code: Option<ToolErrorCode>,
    /// Declared latency the driver waits before returning the result.
    pub latency: Duration,
}

/// Executes fixture tools.
pub trait ToolExec: Sync {
    /// Runs tool `name` with JSON `arguments`; errors are outcomes, never panics.
    fn execute(&self, name: &str, arguments: &str) -> ToolOutcome;
}

/// Settings of one agentic trajectory.
#[derive(Debug, Clone)]
pub struct AgenticPlan {
    /// `suite::job#index`.
    pub trajectory_id: String,
    /// Repeat index.
    pub index: u32,
    /// Model name sent in each request.
    pub model: String,
    /// System prompt (omitted when empty).
    pub system: Option<String>,
    /// The user task.
    pub task: String,
    /// OpenAI tool declarations offered on each call.
    pub tools: Vec<Value>,
    /// Max tokens per LLM call.
    pub max_tokens: Option<u32>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Request seed.
    pub seed: Option<u64>,
    /// Choices per LLM call (`n`; `None`: not sent). Choice 0 drives the trajectory.
    pub n: Option<u32>,
    /// Max LLM calls (model mode).
    pub max_steps: u32,
    /// Identical consecutive calls that stop the loop (model mode).
    pub max_repeated_tool_calls: u32,
    /// `tool_choice` of the n-th LLM call (the last entry repeats); empty = not sent.
    pub tool_choice: Vec<String>,
    /// `Some(script)` for scripted mode: `(tool name, JSON arguments)` per entry.
    pub script: Option<Vec<(String, Value)>>,
    /// Fixed output length and `extra_body` of every request.
    pub shape: crate::shape::RequestShape,
    /// The suite's token counter (`None`: the bytes/4 estimate): an LLM step the server
    /// reported no output tokens for gets its estimate from it.
    pub tokens: Option<Arc<crate::tokens::PromptTokens>>,
}

impl AgenticPlan {
    /// The step's output-token estimate by the suite's counter, when it has one
    /// ([`crate::tokens::refine_estimate`]).
    async fn refine_estimate(&self, step: &mut StepRecord) {
        if let (Some(t), Some(r)) = (&self.tokens, step.request.as_mut()) {
            crate::tokens::refine_estimate(&t.counter, r).await;
        }
    }
}

/// Shared run state the drivers need: step ids, cancellation, capture.
#[derive(Clone)]
pub struct DriverCtx {
    /// Run-wide step id counter (docs/measurement.md `step_id`s are unique in `steps.jsonl`).
    pub next_step_id: Arc<AtomicU64>,
    /// Set by Ctrl-C: no new work starts.
    pub cancelled: Arc<AtomicBool>,
    /// Timeline capture (no-op when off).
    pub capture: Capture,
}

impl DriverCtx {
    /// Allocates the next step id (starting at 1).
    pub fn step_id(&self) -> u64 {
        self.next_step_id.fetch_add(1, Ordering::Relaxed) + 1
    }
    /// Whether Ctrl-C was received.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }
}

/// Why a trajectory stops at a step that did not complete: `cancelled` when Ctrl-C /
/// SIGTERM cut its request short, else `request_failed`.
fn stop_of(step: &StepRecord) -> StopReason {
    if step.status == StepStatus::Cancelled {
        StopReason::Cancelled
    } else {
        StopReason::RequestFailed
    }
}

/// Runs one LLM call as a step (request span in the timeline).
pub async fn llm_step<E: LlmExecutor>(
    exec: &E,
    ctx: &DriverCtx,
    case_id: &str,
    req: &ChatRequest,
) -> StepRecord {
    let step_id = ctx.step_id();
    let span = ctx.capture.request_start(&req.request_id, case_id);
    let start_ns = exec.now_ns();
    let mut rec = exec.chat(req).await;
    rec.set_asked(req.output_tokens_asked, req.prompt_tokens_asked);
    let end_ns = rec.end_ns.unwrap_or_else(|| exec.now_ns()).max(start_ns);
    let ok = rec.is_success();
    // A request cut short by Ctrl-C ends `cancelled`, not `failed` (docs/artifacts.md lifecycle).
    let cancelled = rec.failure_code == Some(FailureCode::Cancelled);
    if cancelled {
        ctx.capture.request_cancelled(span);
    } else {
        ctx.capture.request_end(span, &rec);
    }
    StepRecord {
        step_id,
        kind: StepKind::LlmCall,
        name: "chat".into(),
        start_ns,
        end_ns,
        status: if ok {
            StepStatus::Completed
        } else if cancelled {
            StepStatus::Cancelled
        } else {
            StepStatus::Failed
        },
        failure_code: rec.failure_code,
        tool_error: None,
        start_before_anchor_ns: None,
        end_before_anchor_ns: None,
        harness_step_id: None,
        request: Some(rec),
        max_tokens: req.max_tokens,
        tool_call_id: None,
        status_known: true,
    }
}

/// The most bytes of a tool-call id kept in a report (a server-chosen identifier).
const MAX_TOOL_CALL_ID_BYTES: usize = 128;

/// A tool-call id as a report keeps it: printable ASCII without spaces, at most
/// [`MAX_TOOL_CALL_ID_BYTES`]; anything else (model output that is not an id) is left out.
fn report_call_id(id: &str) -> Option<String> {
    (!id.is_empty()
        && id.len() <= MAX_TOOL_CALL_ID_BYTES
        && id.bytes().all(|b| b.is_ascii_graphic()))
    .then(|| id.to_string())
}

/// Runs one tool call (`call_id` is the call's id) as a step (fixture span in the
/// timeline).
pub async fn tool_step<T: ToolExec>(
    tools: &T,
    ctx: &DriverCtx,
    now_ns: impl Fn() -> u64,
    case_id: &str,
    (call_id, name, arguments): (&str, &str, &str),
) -> (StepRecord, ToolOutcome) {
    let step_id = ctx.step_id();
    let span = ctx.capture.fixture_start(name, case_id);
    let start_ns = now_ns();
    let out = tools.execute(name, arguments);
    if !out.latency.is_zero() {
        tokio::time::sleep(out.latency).await;
    }
    let end_ns = now_ns().max(start_ns);
    ctx.capture.fixture_end(span, !out.failed);
    // A tool name the model invented is model output: it never becomes a step name.
    let declared = out.error_code != Some(ToolErrorCode::UnknownTool);
    let step = StepRecord {
        step_id,
        kind: StepKind::Tool,
        name: if declared {
            name.to_string()
        } else {
            "unknown_tool".to_string()
        },
        start_ns,
        end_ns,
        status: if out.failed {
            StepStatus::Failed
        } else {
            StepStatus::Completed
        },
        failure_code: out.failed.then_some(FailureCode::ToolError),
        tool_error: out.error_code,
        start_before_anchor_ns: None,
        end_before_anchor_ns: None,
        harness_step_id: None,
        request: None,
        max_tokens: None,
        tool_call_id: report_call_id(call_id),
        status_known: true,
    };
    (step, out)
}

fn request(plan: &AgenticPlan, messages: &[Value], n: usize) -> ChatRequest {
    let mut extra = serde_json::Map::new();
    if !plan.tools.is_empty()
        && let Some(c) = plan.tool_choice.get(n).or(plan.tool_choice.last())
    {
        extra.insert("tool_choice".into(), Value::String(c.clone()));
    }
    let mut req = ChatRequest {
        request_id: format!("{}.llm{}", plan.trajectory_id.replace('#', ".t"), n),
        model: plan.model.clone(),
        messages: messages.to_vec(),
        tools: plan.tools.clone(),
        max_tokens: plan.max_tokens,
        temperature: plan.temperature,
        seed: plan.seed,
        n: plan.n,
        stream: true,
        extra,
        ..Default::default()
    };
    plan.shape.apply(&mut req);
    req
}

fn assistant_tool_message(text: Option<&str>, calls: &[(String, String, String)]) -> Value {
    let tool_calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    json!({"role": "assistant", "content": text.filter(|t| !t.is_empty()), "tool_calls": tool_calls})
}

/// Parses tool arguments for equality (C27: `{"q":"x"}` equals `{ "q" : "x" }`);
/// unparsable text compares as a string.
fn parsed_args(args: &str) -> Value {
    serde_json::from_str(args).unwrap_or_else(|_| Value::String(args.to_string()))
}

/// Runs one agentic trajectory to its end.
pub async fn run_trajectory<E: LlmExecutor, T: ToolExec>(
    exec: &E,
    tools: &T,
    ctx: &DriverCtx,
    plan: &AgenticPlan,
) -> TrajectoryRecord {
    let start_ns = exec.now_ns();
    let mut messages: Vec<Value> = Vec::new();
    if let Some(s) = plan.system.as_deref().filter(|s| !s.is_empty()) {
        messages.push(json!({"role": "system", "content": s}));
    }
    messages.push(json!({"role": "user", "content": plan.task}));
    let mut t = Trajectory {
        messages,
        steps: Vec::new(),
        tools_called: Vec::new(),
        final_answer: None,
    };
    let stop_reason = match &plan.script {
        Some(script) => t.run_script(exec, tools, ctx, plan, script).await,
        None => t.run_model_led(exec, tools, ctx, plan).await,
    };
    TrajectoryRecord {
        id: plan.trajectory_id.clone(),
        index: plan.index,
        stop_reason,
        steps: t.steps,
        tools_called: t.tools_called,
        final_answer: t.final_answer,
        stdout: None,
        start_ns,
        end_ns: exec.now_ns(),
    }
}

/// What a trajectory accumulates as it runs: the conversation sent with each request, its
/// steps, the tools it called and the model's final answer.
struct Trajectory {
    messages: Vec<Value>,
    steps: Vec<StepRecord>,
    tools_called: Vec<String>,
    final_answer: Option<String>,
}

impl Trajectory {
    /// The LLM step of request `k` of the conversation so far, its output estimate refined.
    async fn llm_step<E: LlmExecutor>(
        &self,
        exec: &E,
        ctx: &DriverCtx,
        plan: &AgenticPlan,
        k: usize,
    ) -> StepRecord {
        let mut step = llm_step(
            exec,
            ctx,
            &plan.trajectory_id,
            &request(plan, &self.messages, k),
        )
        .await;
        plan.refine_estimate(&mut step).await;
        step
    }

    /// Runs tool call `call` (id, name, arguments) as a step and adds its result to the
    /// conversation.
    async fn call_tool<E: LlmExecutor, T: ToolExec>(
        &mut self,
        exec: &E,
        tools: &T,
        ctx: &DriverCtx,
        plan: &AgenticPlan,
        (id, name, args): (&str, &str, &str),
    ) {
        let now = || exec.now_ns();
        let (tstep, out) = tool_step(tools, ctx, now, &plan.trajectory_id, (id, name, args)).await;
        self.steps.push(tstep);
        self.tools_called.push(name.to_string());
        self.messages
            .push(json!({"role": "tool", "tool_call_id": id, "content": out.content}));
    }

    /// A scripted trajectory: each request is answered by calling the script's next tool,
    /// then one last request for the final answer. Stops early when a request fails or
    /// the run is cancelled.
    async fn run_script<E: LlmExecutor, T: ToolExec>(
        &mut self,
        exec: &E,
        tools: &T,
        ctx: &DriverCtx,
        plan: &AgenticPlan,
        script: &[(String, Value)],
    ) -> StopReason {
        for (k, (tool, args)) in script.iter().enumerate() {
            if ctx.is_cancelled() {
                return StopReason::Cancelled;
            }
            let step = self.llm_step(exec, ctx, plan, k).await;
            let ok = step.status == StepStatus::Completed;
            let stop = stop_of(&step);
            self.steps.push(step);
            if !ok {
                return stop;
            }
            let id = format!("call_{k}");
            let args_text = args.to_string();
            self.messages.push(assistant_tool_message(
                None,
                &[(id.clone(), tool.clone(), args_text.clone())],
            ));
            self.call_tool(exec, tools, ctx, plan, (&id, tool, &args_text))
                .await;
        }
        if ctx.is_cancelled() {
            return StopReason::Cancelled;
        }
        let step = self.llm_step(exec, ctx, plan, script.len()).await;
        let mut reason = StopReason::FinalAnswer;
        if step.status == StepStatus::Completed {
            self.final_answer = step.request.as_ref().map(|r| r.output.text.clone());
        } else {
            reason = stop_of(&step);
        }
        self.steps.push(step);
        reason
    }

    /// A trajectory the model leads: each answer's tool calls are run and sent back, until
    /// an answer without tool calls (the final answer), a failed request, the same call
    /// repeated `max_repeated_tool_calls` times in a row, `max_steps` requests, or
    /// cancellation.
    async fn run_model_led<E: LlmExecutor, T: ToolExec>(
        &mut self,
        exec: &E,
        tools: &T,
        ctx: &DriverCtx,
        plan: &AgenticPlan,
    ) -> StopReason {
        let mut last_call: Option<(String, Value)> = None;
        let mut repeats = 0u32;
        for n in 0..plan.max_steps as usize {
            if ctx.is_cancelled() {
                return StopReason::Cancelled;
            }
            let step = self.llm_step(exec, ctx, plan, n).await;
            let ok = step.status == StepStatus::Completed;
            let output = step.request.as_ref().map(|r| r.output.clone());
            let stop = stop_of(&step);
            self.steps.push(step);
            if !ok {
                return stop;
            }
            let output = output.unwrap_or_default();
            if output.tool_calls.is_empty() {
                self.final_answer = Some(output.text);
                return StopReason::FinalAnswer;
            }
            let calls: Vec<(String, String, String)> = output
                .tool_calls
                .iter()
                .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
                .collect();
            self.messages
                .push(assistant_tool_message(Some(&output.text), &calls));
            for (id, name, args) in &calls {
                let key = (name.clone(), parsed_args(args));
                repeats = if last_call.as_ref() == Some(&key) {
                    repeats + 1
                } else {
                    1
                };
                last_call = Some(key);
                if repeats >= plan.max_repeated_tool_calls.max(1) {
                    return StopReason::RepeatedToolCall;
                }
                self.call_tool(exec, tools, ctx, plan, (id, name, args))
                    .await;
            }
        }
        StopReason::MaxSteps
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::{AssistantOutput, ToolCall};
    use std::sync::Mutex;

    /// A mock model: returns scripted outputs in order, logical time advancing 10 ms a call.
    struct MockModel {
        outputs: Mutex<Vec<AssistantOutput>>,
        clock: AtomicU64,
        requests: Mutex<Vec<ChatRequest>>,
    }

    impl MockModel {
        fn new(outputs: Vec<AssistantOutput>) -> Self {
            Self {
                outputs: Mutex::new(outputs.into_iter().rev().collect()),
                clock: AtomicU64::new(0),
                requests: Mutex::new(Vec::new()),
            }
        }
    }

    impl LlmExecutor for MockModel {
        fn chat(&self, req: &ChatRequest) -> impl Future<Output = RequestRecord> + Send {
            self.requests.lock().unwrap().push(req.clone());
            let t0 = self.clock.fetch_add(10_000_000, Ordering::SeqCst);
            let out = self.outputs.lock().unwrap().pop().unwrap_or_default();
            let mut rec = RequestRecord::new(&req.request_id, t0, t0, true);
            rec.end_ns = Some(t0 + 10_000_000);
            rec.finish_reason = Some("stop".into());
            rec.status = crate::client::RequestStatus::Success;
            rec.output = out;
            async move { rec }
        }
        fn now_ns(&self) -> u64 {
            self.clock.load(Ordering::SeqCst)
        }
    }

    struct EmptyTool;
    impl ToolExec for EmptyTool {
        fn execute(&self, _name: &str, _arguments: &str) -> ToolOutcome {
            ToolOutcome {
                content: "[]".into(),
                failed: false,
                error_code: None,
                latency: Duration::ZERO,
            }
        }
    }

    fn call(args: &str) -> AssistantOutput {
        AssistantOutput {
            tool_calls: vec![ToolCall {
                id: "c".into(),
                id_synthesized: false,
                name: "search".into(),
                arguments: args.into(),
            }],
            ..Default::default()
        }
    }

    fn ctx() -> DriverCtx {
        DriverCtx {
            next_step_id: Arc::new(AtomicU64::new(0)),
            cancelled: Arc::new(AtomicBool::new(false)),
            capture: Capture::off(),
        }
    }

    fn plan(script: Option<Vec<(String, Value)>>) -> AgenticPlan {
        AgenticPlan {
            trajectory_id: "s::j#0".into(),
            index: 0,
            model: "m".into(),
            system: Some("sys".into()),
            task: "task".into(),
            tools: vec![],
            max_tokens: Some(8),
            temperature: Some(0.0),
            seed: None,
            n: None,
            max_steps: 8,
            max_repeated_tool_calls: 3,
            tool_choice: vec![],
            script,
            shape: Default::default(),
            tokens: None,
        }
    }

    #[tokio::test]
    async fn c27_repeated_identical_tool_call_stops_the_loop() {
        let model = MockModel::new(vec![
            call(r#"{"q":"x"}"#),
            call(r#"{"q":"x"}"#),
            call(r#"{ "q" : "x" }"#),
            call(r#"{"q":"x"}"#),
        ]);
        let t = run_trajectory(&model, &EmptyTool, &ctx(), &plan(None)).await;
        assert_eq!(t.stop_reason, StopReason::RepeatedToolCall);
        let llm = t
            .steps
            .iter()
            .filter(|s| s.kind == StepKind::LlmCall)
            .count();
        let tool = t.steps.iter().filter(|s| s.kind == StepKind::Tool).count();
        assert!(llm <= 3 && tool <= 3, "llm {llm} tool {tool}");
        assert_eq!(llm, 3);
        assert_eq!(tool, 2, "the repeated call is not executed");
    }

    #[tokio::test]
    async fn model_mode_reaches_final_answer_and_history_grows() {
        let model = MockModel::new(vec![
            call(r#"{"q":"a"}"#),
            AssistantOutput {
                text: "done".into(),
                ..Default::default()
            },
        ]);
        let t = run_trajectory(&model, &EmptyTool, &ctx(), &plan(None)).await;
        assert_eq!(t.stop_reason, StopReason::FinalAnswer);
        assert_eq!(t.final_answer.as_deref(), Some("done"));
        assert_eq!(t.tools_called, vec!["search"]);
        let reqs = model.requests.lock().unwrap();
        assert_eq!(reqs[0].messages.len(), 2);
        assert_eq!(
            reqs[1].messages.len(),
            4,
            "assistant tool call + tool result appended"
        );
        assert_eq!(
            t.steps.iter().map(|s| s.step_id).collect::<Vec<_>>(),
            vec![1, 2, 3]
        );
    }

    /// `tool_choice = ["required", "auto"]`: the first call forces a tool call, every later
    /// one leaves the choice to the model; without tools nothing is sent.
    #[tokio::test]
    async fn tool_choice_list_applies_per_call_and_the_last_repeats() {
        let model = MockModel::new(vec![
            call(r#"{"q":"a"}"#),
            call(r#"{"q":"b"}"#),
            AssistantOutput {
                text: "done".into(),
                ..Default::default()
            },
        ]);
        let mut p = plan(None);
        p.tools = vec![json!({"type": "function", "function": {"name": "search"}})];
        p.tool_choice = vec!["required".into(), "auto".into()];
        let t = run_trajectory(&model, &EmptyTool, &ctx(), &p).await;
        assert_eq!(t.stop_reason, StopReason::FinalAnswer);
        {
            let reqs = model.requests.lock().unwrap();
            let sent: Vec<Option<&Value>> =
                reqs.iter().map(|r| r.extra.get("tool_choice")).collect();
            assert_eq!(
                sent,
                vec![
                    Some(&json!("required")),
                    Some(&json!("auto")),
                    Some(&json!("auto"))
                ]
            );
        }
        let model = MockModel::new(vec![AssistantOutput::default()]);
        let mut p = plan(None);
        p.tool_choice = vec!["required".into()];
        run_trajectory(&model, &EmptyTool, &ctx(), &p).await;
        assert!(
            model.requests.lock().unwrap()[0]
                .extra
                .get("tool_choice")
                .is_none()
        );
    }

    #[tokio::test]
    async fn max_steps_without_answer() {
        let outs = (0..10).map(|i| call(&format!(r#"{{"q":{i}}}"#))).collect();
        let model = MockModel::new(outs);
        let mut p = plan(None);
        p.max_steps = 4;
        let t = run_trajectory(&model, &EmptyTool, &ctx(), &p).await;
        assert_eq!(t.stop_reason, StopReason::MaxSteps);
        assert_eq!(
            t.steps
                .iter()
                .filter(|s| s.kind == StepKind::LlmCall)
                .count(),
            4
        );
    }

    #[tokio::test]
    async fn scripted_replay_sends_identical_requests_every_run() {
        let script = vec![
            ("read_file".to_string(), json!({"path": "a"})),
            ("read_file".to_string(), json!({"path": "b"})),
        ];
        let mut sent = Vec::new();
        for _ in 0..2 {
            // The model's own answers differ between runs; the requests must not.
            let model = MockModel::new(vec![call(r#"{"q":"zz"}"#), AssistantOutput::default()]);
            let t = run_trajectory(&model, &EmptyTool, &ctx(), &plan(Some(script.clone()))).await;
            assert_eq!(t.stop_reason, StopReason::FinalAnswer);
            assert_eq!(t.steps.len(), 5, "2 llm + 2 tool + final llm");
            let reqs = model.requests.lock().unwrap();
            sent.push(
                reqs.iter()
                    .map(|r| serde_json::to_string(&r.messages).unwrap())
                    .collect::<Vec<_>>(),
            );
        }
        assert_eq!(sent[0], sent[1]);
        assert!(
            sent[0][2].len() > sent[0][1].len(),
            "history grows each step"
        );
    }

    #[tokio::test]
    async fn cancellation_stops_before_next_step() {
        let model = MockModel::new(vec![call(r#"{"q":"a"}"#)]);
        let c = ctx();
        c.cancelled.store(true, Ordering::Relaxed);
        let t = run_trajectory(&model, &EmptyTool, &c, &plan(None)).await;
        assert_eq!(t.stop_reason, StopReason::Cancelled);
        assert!(t.steps.is_empty());
    }
}
