//! The I/O edge of a run: the simulator, clients, tool registries and samplers of one
//! session, and the execution of each job with its driver.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use crate::agentic::{AgenticPlan, DriverCtx, LlmExecutor, ToolExec, ToolOutcome, run_trajectory};
use crate::baseline::Baseline;
use crate::client::{ChatRequest, Client, ClientConfig, ClientError, RequestRecord};
use crate::clock::RunClock;
use crate::context::{ContextPlan, run_context};
use crate::interrupt::wait_flag;
use crate::load::drive::{LoadEnv, UnitTemplate, run_load};
use crate::load::{LoadSpec, PointRecord};
use crate::model::request::redact_secrets;
use crate::model::{JobReport, SetupCause, SetupError};
use crate::options::{RunOptions, SinkChoice};
use crate::replay::run_replay;
use crate::run_dir::read_step_markers;
use crate::shape::RequestShape;
use crate::sim::{SimConfig, SimHandle};
use crate::steps::{StepRecord, StepStatus, StopReason, TrajectoryRecord};
use crate::suite::{AgenticMode, EndpointSetting, JobKind, ResolvedJob, ResolvedSuite, SIM_MODEL};
use crate::swe::{StepsFileReport, SweOutcome, SwePlan, resolve_arg, run_harness};
use crate::telemetry::{TelemetryHandle, TelemetryRun};
use crate::timeline::{BlockingSink, DiskWriteSink, Phase, Sink, SinkConfig, TimelineSink};
use crate::tools::{ToolRegistry, ToolStatus};

pub use crate::job::{ExecutedJob, GradedJob, SuiteRuntime};

/// `INFERSCOPE_CAPTURE_MAX_EVENTS` (a diagnostic knob: a tighter event bound, 1 to the default
/// 10,000 of docs/artifacts.md "Timeline capture rules"): `None` when unset; an error naming the
/// variable when it is not a number in range (`run` refuses it as bad input before any request).
pub fn capture_max_events_from_env() -> Result<Option<u32>, String> {
    let Ok(v) = std::env::var("INFERSCOPE_CAPTURE_MAX_EVENTS") else {
        return Ok(None);
    };
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|n| (1..=crate::timeline::bounds::MAX_EVENTS).contains(n))
        .map(Some)
        .ok_or_else(|| {
            format!(
                "INFERSCOPE_CAPTURE_MAX_EVENTS={v:?}: expected a whole number from 1 to {}",
                crate::timeline::bounds::MAX_EVENTS
            )
        })
}

/// Makes the run's capture sink.
pub fn make_sink(
    clock: &RunClock,
    run_id: &str,
    tool_names: &[String],
    choice: Option<&SinkChoice>,
) -> Result<Arc<dyn Sink>, String> {
    let mut cfg = SinkConfig::new(run_id);
    cfg.tool_names = tool_names.to_vec();
    // A diagnostic knob: a tighter event bound (never looser than the default), to see how a
    // run reports a capture that dropped events.
    if let Some(n) = capture_max_events_from_env()? {
        cfg.bounds.max_events = n;
    }
    let sink = TimelineSink::with_run_clock(clock, cfg).map_err(|e| e.to_string())?;
    Ok(match choice {
        None | Some(SinkChoice::Timeline) => Arc::new(sink),
        Some(SinkChoice::Blocking) => Arc::new(BlockingSink::new(sink, Duration::from_millis(2))),
        Some(SinkChoice::DiskWrite(p)) => {
            Arc::new(DiskWriteSink::create(sink, p).map_err(|e| e.to_string())?)
        }
    })
}

/// A set-up error of kind `configuration` (simulator, client, tools, API key variable).
fn configuration_error(message: String) -> SetupError {
    SetupError {
        cause: SetupCause::Configuration,
        message,
        url: None,
        http_status: None,
        body_excerpt: None,
        listed_models: Vec::new(),
    }
}

/// Everything a run holds between preparation and shutdown.
pub struct Session {
    /// The run clock.
    pub clock: RunClock,
    /// Per-suite runtimes, in order.
    pub suites: Vec<SuiteRuntime>,
    sim: Option<SimHandle>,
    telemetry: Option<TelemetryHandle>,
    /// `--shard K/N`: load jobs run this shard's share of their load.
    pub shard: Option<crate::shard::ShardSpec>,
    /// The run's `requests.jsonl`, open from the start: load units stream their records
    /// to it as they end.
    pub records: crate::load::units::RecordsSink,
}

/// Grades a job's trajectories with its checks (a load job's units were graded as each
/// ended: their results are taken over).
pub fn grade(mut e: ExecutedJob) -> GradedJob {
    let checks = if e.load_units.is_some() {
        std::mem::take(&mut e.load_checks)
    } else {
        e.trajectories
            .iter()
            .map(|t| crate::steps::grade_trajectory(&e.job.job.checks, t))
            .collect()
    };
    GradedJob {
        executed: e,
        checks,
    }
}

/// A job once it ended: graded, and — when the run streams ([`Session::streams`]) — its
/// final report, built and already delivered as `JobFinished`.
pub struct FinishedJob {
    /// The graded job (kept for the run-level join and a shard's identity).
    pub graded: GradedJob,
    /// The job's final report; `None` when it is finalized at the run's end instead.
    pub report: Option<JobReport>,
}

struct NetExec<'a> {
    client: &'a Client,
    clock: &'a RunClock,
    cancelled: &'a AtomicBool,
}

impl LlmExecutor for NetExec<'_> {
    async fn chat(&self, req: &ChatRequest) -> RequestRecord {
        let scheduled = self.clock.elapsed_ns();
        tokio::select! {
            r = self.client.chat(req, self.clock, scheduled) => r,
            _ = wait_flag(self.cancelled) => {
                let now = self.clock.elapsed_ns();
                RequestRecord::cancelled(&req.request_id, scheduled, scheduled, req.stream, now)
            }
        }
    }
    fn now_ns(&self) -> u64 {
        self.clock.elapsed_ns()
    }
}

struct Tools<'a>(&'a ToolRegistry);

impl ToolExec for Tools<'_> {
    fn execute(&self, name: &str, arguments: &str) -> ToolOutcome {
        tool_outcome(self.0, name, arguments)
    }
}

/// The suite's tools shared with load units running as their own tasks.
struct SharedTools(Arc<ToolRegistry>);

impl ToolExec for SharedTools {
    fn execute(&self, name: &str, arguments: &str) -> ToolOutcome {
        tool_outcome(&self.0, name, arguments)
    }
}

fn tool_outcome(tools: &ToolRegistry, name: &str, arguments: &str) -> ToolOutcome {
    let r = tools.execute(name, arguments);
    ToolOutcome {
        content: r.content,
        failed: r.status != ToolStatus::Ok,
        error_code: r.error_code,
        latency: r.latency,
    }
}

impl Session {
    /// Preparation: starts the simulator when any suite needs it, builds clients and tool
    /// registries, and starts the samplers.
    pub async fn prepare(opts: &RunOptions, clock: &RunClock, ctx: &DriverCtx) -> Session {
        ctx.capture.phase(Phase::Preparation);
        let mut sim: Option<SimHandle> = None;
        let mut suites = Vec::new();
        for rs in &opts.suites {
            let mut setup_error = None;
            let (base_url, simulated) = match &rs.endpoint.value {
                EndpointSetting::Url(u) => (u.clone(), false),
                EndpointSetting::Simulated => {
                    if sim.is_none() {
                        let cfg = SimConfig {
                            seed: rs.suite.seed,
                            ..SimConfig::default()
                        };
                        match crate::sim::spawn(cfg, "127.0.0.1:0".parse().expect("addr")).await {
                            Ok(h) => sim = Some(h),
                            Err(e) => {
                                setup_error = Some(configuration_error(format!(
                                    "cannot start simulator: {e}"
                                )))
                            }
                        }
                    }
                    (sim.as_ref().map(|s| s.base_url()).unwrap_or_default(), true)
                }
            };
            let model = match rs.model_name() {
                Ok(m) => m.to_string(),
                Err(_) if simulated => SIM_MODEL.to_string(),
                Err(e) => {
                    setup_error.get_or_insert(configuration_error(e.to_string()));
                    String::new()
                }
            };
            let api_key = match rs.api_key() {
                Ok(k) => k,
                Err(e) => {
                    setup_error.get_or_insert(configuration_error(e.to_string()));
                    None
                }
            };
            let client = ClientConfig {
                base_url: base_url.clone(),
                api_key: api_key.clone(),
                request_timeout: rs.suite.request_timeout,
                idle_timeout: rs.suite.idle_timeout,
                max_event_bytes: rs.suite.max_event_bytes as usize,
                max_connections: pool_size(rs),
                reqwest_for_http: false,
            };
            let client = match Client::new(client) {
                Ok(c) => Some(c),
                Err(e) => {
                    setup_error.get_or_insert(configuration_error(format!("client: {e}")));
                    None
                }
            };
            let tools = match ToolRegistry::new(&rs.suite) {
                Ok(t) => Some(Arc::new(t)),
                Err(e) => {
                    setup_error.get_or_insert(configuration_error(format!("tools: {e}")));
                    None
                }
            };
            suites.push(SuiteRuntime {
                resolved: rs.clone(),
                base_url,
                simulated,
                model,
                api_key,
                client,
                tools,
                setup_error,
                prompt_tokens: None,
            });
        }
        Session {
            clock: clock.clone(),
            suites,
            sim,
            telemetry: None,
            shard: None,
            records: Default::default(),
        }
    }

    /// Starts the samplers (after a preflight that let at least one suite through, so a
    /// run that cannot start measures nothing); returns once each source took its first
    /// sample, before the measured window.
    pub fn start_telemetry(&mut self) {
        self.telemetry =
            super::energy::start_telemetry(&self.suites, self.sim.as_ref(), &self.clock);
    }

    /// Whether some suite can run (no setup error).
    pub fn any_runnable(&self) -> bool {
        self.suites.iter().any(|s| s.setup_error.is_none())
    }

    /// The simulator handle, when one runs.
    pub fn sim(&self) -> Option<&SimHandle> {
        self.sim.as_ref()
    }

    /// Preflight: each endpoint reachable, its `/models` answering, and the model listed.
    /// Any failure is the suite's setup error ([`preflight_error`]): its jobs send
    /// nothing and the run exits 96.
    pub async fn preflight(&mut self) {
        for s in &mut self.suites {
            if s.setup_error.is_some() {
                continue;
            }
            let Some(client) = &s.client else { continue };
            let answer = tokio::time::timeout(Duration::from_secs(10), client.list_models())
                .await
                .map_err(|_| None)
                .and_then(|r| r.map_err(Some));
            let secrets: Vec<&str> = s.api_key.iter().map(String::as_str).collect();
            s.setup_error = preflight_error(
                &s.base_url,
                &s.model,
                s.simulated,
                s.resolved.suite.api_key_env.as_deref(),
                answer,
                &secrets,
            );
            if s.setup_error.is_none() {
                match prompt_tokens_of(s, client).await {
                    Ok(t) => s.prompt_tokens = t.map(Arc::new),
                    Err(m) => s.setup_error = Some(configuration_error(format!("tokenizer: {m}"))),
                }
            }
        }
    }

    /// Whether each job is finalized when it ends (graded, joined with the samples taken
    /// so far, gated, and its `JobFinished` delivered before the next job starts): always,
    /// except when a Prometheus server supplies the engine counters, which are read only
    /// after the measured window — then every job is finalized at the run's end.
    pub fn streams(&self) -> bool {
        self.telemetry.as_ref().is_none_or(TelemetryHandle::streams)
    }

    /// A job's final report as it ends: its grading, its figures over the samples taken so
    /// far — after waiting, bounded by [`TelemetryHandle::snapshot_wait`], for a sample at or
    /// after the job's end — and its gates ([`super::report::finalize_job`]).
    pub async fn finalize(&self, g: &GradedJob, baseline: Option<&Baseline>) -> JobReport {
        let e = &g.executed;
        let snapshot = match &self.telemetry {
            // A job that never started has no window to cover.
            Some(t) if e.status_ran() => Some(t.snapshot(e.end_ns, t.snapshot_wait()).await),
            Some(t) => Some(t.snapshot(0, Duration::ZERO).await),
            None => None,
        };
        super::report::finalize_job(g, &self.suites, snapshot.as_ref(), baseline)
    }

    /// Runs every selected job, one trajectory at a time; each job is graded as it ends
    /// and, when the run streams ([`Session::streams`]), finalized and reported
    /// (`JobFinished`) before the next job starts.
    pub async fn execute_jobs(
        &self,
        ctx: &DriverCtx,
        events: &super::events::EventSink,
        baseline: Option<&Baseline>,
    ) -> Vec<FinishedJob> {
        use super::events::RunEvent;
        let mut out = Vec::new();
        let mut cancelling = false;
        for (si, s) in self.suites.iter().enumerate() {
            for job in &s.resolved.jobs {
                if ctx.is_cancelled() && !cancelling {
                    cancelling = true;
                    events.emit(RunEvent::RunCancelling);
                }
                events.emit(RunEvent::JobStarted {
                    id: job.job.id.clone(),
                });
                let start_ns = self.clock.elapsed_ns();
                let executed = if ctx.is_cancelled() {
                    ExecutedJob {
                        suite_index: si,
                        job: job.clone(),
                        trajectories: vec![],
                        start_ns,
                        end_ns: start_ns,
                        harness: None,
                        notes: vec![],
                        setup_error: None,
                        cancelled_before_start: true,
                        interrupted: false,
                        units: (0, 0),
                        load: None,
                        load_units: None,
                        load_checks: Vec::new(),
                    }
                } else {
                    let mut ex = self.run_job(si, s, job, ctx, (out.len(), events)).await;
                    ex.settle_cancellation(ctx.is_cancelled());
                    let note = match &ex.load_units {
                        Some(u) => u.choice_count_note(job.job.n),
                        None => crate::client::choice_count_note(
                            job.job.n,
                            ex.trajectories
                                .iter()
                                .flat_map(|t| t.steps.iter().filter_map(|st| st.request.as_ref())),
                        ),
                    };
                    ex.notes.extend(note);
                    ex
                };
                // A load job's steps were reported as each unit ended.
                let emitted_live = executed.load_units.is_some();
                for t in executed.trajectories.iter().filter(|_| !emitted_live) {
                    for st in &t.steps {
                        events.emit(RunEvent::StepFinished {
                            job: job.job.id.clone(),
                            step_id: st.step_id,
                            kind: st.kind,
                            name: st.name.clone(),
                        });
                    }
                }
                let span = ctx.capture.grading_start(&job.job.id);
                let graded = grade(executed);
                ctx.capture.grading_end(span);
                let report = if self.streams() {
                    let r = self.finalize(&graded, baseline).await;
                    events.emit(RunEvent::JobFinished(Box::new(r.clone())));
                    Some(r)
                } else {
                    None
                };
                out.push(FinishedJob { graded, report });
            }
        }
        if ctx.is_cancelled() && !cancelling {
            events.emit(RunEvent::RunCancelling);
        }
        events.emit(RunEvent::JobsEnded);
        out
    }

    async fn run_job(
        &self,
        si: usize,
        s: &SuiteRuntime,
        job: &ResolvedJob,
        ctx: &DriverCtx,
        report_slot: (usize, &super::events::EventSink),
    ) -> ExecutedJob {
        let start_ns = self.clock.elapsed_ns();
        let mut ex = ExecutedJob {
            suite_index: si,
            job: job.clone(),
            trajectories: vec![],
            start_ns,
            end_ns: start_ns,
            harness: None,
            notes: Vec::new(),
            setup_error: s.setup_error.clone(),
            cancelled_before_start: false,
            interrupted: false,
            units: (0, 0),
            load: None,
            load_units: None,
            load_checks: Vec::new(),
        };
        let (None, Some(client), Some(tools)) = (&s.setup_error, &s.client, &s.tools) else {
            ex.end_ns = self.clock.elapsed_ns();
            return ex;
        };
        // On the built-in simulator every job starts with an empty prefix cache, as it does
        // alone (a harness trial, whose snapshot `snapshot RUN_DIR` compares with); a real
        // endpoint's cache carries over between jobs, as it does in service.
        if s.simulated
            && let Some(sim) = &self.sim
        {
            sim.state().clear_prefix_cache();
        }
        let tools = (client, tools);
        match &job.job.kind {
            JobKind::Agentic(a) => {
                self.run_agentic_job(&mut ex, s, tools, ctx, (&job.job, a), report_slot)
                    .await;
            }
            JobKind::Context(c) => {
                self.run_context_job(&mut ex, s, tools, ctx, (&job.job, c), report_slot)
                    .await;
            }
            JobKind::Swe(w) => {
                for r in 0..job.job.repeat.max(1) {
                    if ctx.is_cancelled() {
                        break;
                    }
                    let (t, o) = self.run_swe(s, &job.job, w, r, ctx).await;
                    ex.trajectories.push(t);
                    ex.harness = Some(o);
                }
            }
        }
        ex.end_ns = self.clock.elapsed_ns();
        ex
    }

    /// An agentic job's trajectories: under load, replayed from a recorded source, or
    /// scripted, `repeat` times (until cancelled).
    async fn run_agentic_job(
        &self,
        ex: &mut ExecutedJob,
        s: &SuiteRuntime,
        (client, tools): (&Client, &Arc<ToolRegistry>),
        ctx: &DriverCtx,
        (j, a): (&crate::suite::Job, &crate::suite::AgenticJob),
        report_slot: (usize, &super::events::EventSink),
    ) {
        let seed = s.resolved.suite.seed;
        let tool_names: Vec<String> = if a.tools.is_empty() {
            let mut v: Vec<String> = a.script.iter().map(|x| x.tool.clone()).collect();
            v.dedup();
            v
        } else {
            a.tools.clone()
        };
        let offered = tools.openai_tools(&tool_names);
        if let Some(spec) = &j.load {
            let template = UnitTemplate::Agentic(agentic_plan(j, a, s, &offered, 0, seed));
            self.run_load_job(ex, s, (client, tools), ctx, spec, template, report_slot)
                .await;
            return;
        }
        let exec = self.net_exec(client, ctx);
        if let Some(src) = &a.replay {
            ex.notes.push(replay_note(src, s));
            let count_failures = crate::tokens::CountFailures::default();
            for r in 0..j.repeat.max(1) {
                if ctx.is_cancelled() {
                    break;
                }
                let mut plan = replay_plan(j, src, s, r, seed);
                plan.count_failures = count_failures.clone();
                ex.trajectories.push(run_replay(&exec, ctx, &plan).await);
            }
            ex.notes.extend(count_failures.note());
            return;
        }
        for r in 0..j.repeat.max(1) {
            if ctx.is_cancelled() {
                break;
            }
            let plan = agentic_plan(j, a, s, &offered, r, seed);
            let t = run_trajectory(&exec, &Tools(tools), ctx, &plan).await;
            ex.trajectories.push(t);
        }
    }

    /// A context job: its prompt-size note, then one sweep of its sizes, or the sweep
    /// under load.
    async fn run_context_job(
        &self,
        ex: &mut ExecutedJob,
        s: &SuiteRuntime,
        tools: (&Client, &Arc<ToolRegistry>),
        ctx: &DriverCtx,
        (j, c): (&crate::suite::Job, &crate::suite::ContextJob),
        report_slot: (usize, &super::events::EventSink),
    ) {
        let words = filler_words(c, &mut ex.notes);
        let plan = ContextPlan {
            job_id: j.id.clone(),
            model: s.model.clone(),
            sizes: c.sizes.iter().map(|&x| x as usize).collect(),
            repeat: j.repeat.max(1),
            shared_prefix: c.shared_prefix,
            seed: s.resolved.suite.seed,
            words,
            max_tokens: Some(j.max_tokens),
            temperature: Some(j.temperature),
            n: j.n,
            shape: request_shape(j, &s.resolved.suite),
            tokens: s.prompt_tokens.clone(),
            dataset: c.dataset.clone(),
            count_failures: Default::default(),
            prebuilt: Default::default(),
        };
        let count_failures = plan.count_failures.clone();
        if let Some(d) = &c.dataset {
            ex.notes.push(dataset_note(d));
        }
        ex.notes.push(prompt_sizes_note(s));
        if let Some(spec) = &j.load {
            ex.notes.extend(prebuild_prompts(&plan, spec).await);
            let template = UnitTemplate::Context(plan);
            self.run_load_job(ex, s, tools, ctx, spec, template, report_slot)
                .await;
        } else {
            let exec = self.net_exec(tools.0, ctx);
            ex.trajectories.push(run_context(&exec, ctx, &plan).await);
        }
        ex.notes.extend(count_failures.note());
    }

    /// The executor of a job's requests: its suite's client on the run clock, racing the
    /// run's cancellation.
    fn net_exec<'a>(&'a self, client: &'a Client, ctx: &'a DriverCtx) -> NetExec<'a> {
        NetExec {
            client,
            clock: &self.clock,
            cancelled: &ctx.cancelled,
        }
    }

    /// Runs a job under load: every point of its sweep, its units concurrently
    /// per the point's closed or open loop; records the points on `ex.load`.
    #[allow(clippy::too_many_arguments)]
    async fn run_load_job(
        &self,
        ex: &mut ExecutedJob,
        s: &SuiteRuntime,
        (client, tools): (&Client, &Arc<ToolRegistry>),
        ctx: &DriverCtx,
        spec: &LoadSpec,
        template: UnitTemplate,
        (report_index, events): (usize, &super::events::EventSink),
    ) {
        let env = LoadEnv {
            client: client.clone(),
            clock: self.clock.clone(),
            tools: Arc::new(SharedTools(Arc::clone(tools))),
            ctx: ctx.clone(),
            job_id: ex.job.job.id.clone(),
            job_index: ex.job.job.index,
            suite_seed: match self.shard {
                Some(sh) => crate::shard::shard_seed(s.resolved.suite.seed, sh.k, sh.n),
                None => s.resolved.suite.seed,
            },
            client_max_connections: client.config().max_connections,
            shard: self.shard,
            keep_answers: !ex.job.job.checks.is_empty(),
            checks: ex.job.job.checks.clone(),
            // Every unit's spans wait for the end-of-run join only when a source the join reads
            // is configured; otherwise a load job holds only its compact figures.
            keep_spans: self.telemetry.as_ref().is_some_and(|t| t.feeds_step_join()),
            records: self.records.clone(),
            report_index,
            secrets: s.secrets().into_iter().map(str::to_string).collect(),
            events: events.clone(),
            criteria: crate::load::goodput_criteria(&ex.job.gates),
        };
        let out = run_load(env, spec, template).await;
        let run = out.run;
        ex.notes
            .extend(run.points.iter().filter_map(PointRecord::shortfall_note));
        ex.notes
            .extend(run.shares.iter().filter_map(|p| p.note.clone()));
        ex.trajectories = out.trajectories;
        ex.load_checks = out.checks;
        ex.load_units = Some(out.units);
        ex.load = Some(run);
    }

    async fn run_swe(
        &self,
        s: &SuiteRuntime,
        j: &crate::suite::Job,
        w: &crate::suite::SweJob,
        r: u32,
        ctx: &DriverCtx,
    ) -> (TrajectoryRecord, SweOutcome) {
        let tmp = tempfile::tempdir().ok();
        let steps_file = tmp
            .as_ref()
            .map(|d| d.path().join("steps.jsonl"))
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("inferscope-steps-{}.jsonl", std::process::id()))
            });
        let root = &s.resolved.suite.project_root;
        let plan = SwePlan {
            command: w
                .command
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    if i == 0 {
                        a.clone()
                    } else {
                        resolve_arg(root, a)
                    }
                })
                .collect(),
            cwd: w.cwd.clone(),
            env: w.env.clone(),
            timeout: w.timeout,
            endpoint: s.base_url.clone(),
            model: s.model.clone(),
            api_key: s.api_key.clone(),
            steps_file: steps_file.clone(),
        };
        let traj_id = format!("{}#{r}", j.id);
        let span = ctx.capture.harness_start(&traj_id);
        let start_ns = self.clock.elapsed_ns();
        let outcome = run_harness(&plan).await;
        let end_ns = self.clock.elapsed_ns();
        let ok = outcome.exit_code == Some(0);
        ctx.capture.harness_end(span, ok, outcome.timed_out);
        let mut outcome = outcome;
        let mut steps = Vec::new();
        let mut prov = StepsFileReport::default();
        if steps_file.exists() {
            match read_step_markers(&steps_file) {
                Err(e) => prov.read_error = Some(e.to_string()),
                Ok(file) => {
                    let anchor = self.clock.reference_instant_unix_ns();
                    prov.markers = file.markers.len();
                    prov.truncated_tail = file.truncated_tail.is_some();
                    prov.truncated_line = file.truncated_tail;
                    prov.rejected = file.rejected.clone();
                    prov.rejected_count = file.rejected_count;
                    for m in file.markers {
                        // Harness step ids are renumbered run-unique; times map onto the
                        // run clock through the anchor (step-attribution join (docs/measurement.md)). A start before the
                        // anchor keeps its real time (never rewritten to the anchor) and
                        // is flagged; the join drops it by its `outside_run` rule.
                        let step_id = ctx.step_id();
                        let before = anchor.checked_sub(m.t_start_unix_ns).filter(|&b| b > 0);
                        let end_before = anchor.checked_sub(m.t_end_unix_ns).filter(|&b| b > 0);
                        if before.is_some() {
                            prov.before_anchor_steps.push(step_id);
                        }
                        steps.push(StepRecord {
                            step_id,
                            kind: m.kind,
                            name: m.name.clone().unwrap_or_else(|| m.kind.label().into()),
                            start_ns: m.t_start_unix_ns.saturating_sub(anchor),
                            end_ns: m.t_end_unix_ns.saturating_sub(anchor),
                            status: StepStatus::Completed,
                            failure_code: None,
                            tool_error: None,
                            request: None,
                            max_tokens: None,
                            tool_call_id: None,
                            status_known: false,
                            start_before_anchor_ns: before,
                            end_before_anchor_ns: end_before,
                            harness_step_id: Some(m.step_id),
                        });
                    }
                }
            }
            outcome.steps_file = Some(prov);
        }
        let stop_reason = if outcome.timed_out {
            StopReason::Timeout
        } else if ok {
            StopReason::Completed
        } else {
            StopReason::HarnessFailed
        };
        let t = TrajectoryRecord {
            id: traj_id,
            index: r,
            stop_reason,
            steps,
            tools_called: vec![],
            final_answer: None,
            stdout: Some(outcome.stdout.clone()),
            start_ns,
            end_ns,
        };
        (t, outcome)
    }

    /// Stops the samplers (after the measured window) and returns their timelines.
    pub fn stop_telemetry(&mut self) -> Option<TelemetryRun> {
        self.telemetry.take().map(TelemetryHandle::stop)
    }

    /// Stops the simulator.
    pub async fn shutdown(self) {
        if let Some(s) = self.sim {
            s.shutdown().await;
        }
    }
}

/// The preflight's verdict on one endpoint, from `GET {base}/models`'s answer (`Err(None)`:
/// no answer within 10 s): `None` when the model is listed, else the setup error naming
/// the cause — nothing listening; `/models` 404 (with the hint to add `/v1`); auth refused
/// (401/403, naming the API-key variable); another status or a body that is not a model
/// list; the model not listed (with the listed names). Error bodies are kept as a bounded
/// excerpt with `secrets` and credential values redacted.
pub fn preflight_error(
    base_url: &str,
    model: &str,
    simulated: bool,
    api_key_env: Option<&str>,
    answer: Result<Vec<String>, Option<ClientError>>,
    secrets: &[&str],
) -> Option<SetupError> {
    let url = crate::render::EndpointLabel::Url(base_url.to_string()).display();
    let models_url = format!("{}/models", url.trim_end_matches('/'));
    let err = |cause, message: String, status: Option<u16>, body: Option<&str>| SetupError {
        cause,
        message,
        url: Some(models_url.clone()),
        http_status: status,
        body_excerpt: body
            .filter(|b| !b.is_empty())
            .map(|b| redact_secrets(b, secrets)),
        listed_models: Vec::new(),
    };
    match answer {
        Ok(models) if models.iter().any(|m| m == model) => None,
        Ok(models) => {
            // A listed id may echo the API key back.
            let models: Vec<String> = models
                .iter()
                .map(|m| crate::model::request::redact_known(m, secrets))
                .collect();
            let listed = if models.is_empty() {
                "none".to_string()
            } else {
                models.join(", ")
            };
            let mut e = err(
                SetupCause::ModelNotListed,
                format!(
                    "model `{model}` is not served by {url} (it lists: {listed}); set `model` in the suite or --model to one of them"
                ),
                None,
                None,
            );
            e.listed_models = models;
            if simulated {
                // The built-in simulator serves any name it is given.
                return None;
            }
            Some(e)
        }
        Err(None) => Some(err(
            SetupCause::Unreachable,
            format!("{url} did not answer GET /models within 10 s"),
            None,
            None,
        )),
        Err(Some(ClientError::HttpStatus {
            status: 404,
            message,
            ..
        })) => {
            let hint = if url.trim_end_matches('/').ends_with("/v1") {
                "check the base URL".to_string()
            } else {
                format!(
                    "the base URL probably lacks `/v1`: try {}/v1",
                    url.trim_end_matches('/')
                )
            };
            Some(err(
                SetupCause::ModelsNotFound,
                format!("GET {models_url} answered 404 Not Found: {hint}"),
                Some(404),
                Some(&message),
            ))
        }
        Err(Some(ClientError::HttpStatus {
            status: status @ (401 | 403),
            message,
            ..
        })) => {
            let key = match api_key_env {
                Some(v) => format!("the API key from `{v}`"),
                None => "no API key (set `api_key_env` in the suite)".to_string(),
            };
            Some(err(
                SetupCause::AuthRefused,
                format!("{url} refused the request with HTTP {status}: it was sent {key}"),
                Some(status),
                Some(&message),
            ))
        }
        Err(Some(ClientError::HttpStatus {
            status, message, ..
        })) => Some(err(
            SetupCause::BadPreflightResponse,
            format!("GET {models_url} answered HTTP {status}"),
            Some(status),
            Some(&message),
        )),
        Err(Some(ClientError::Request { reason, .. })) => Some(err(
            SetupCause::Unreachable,
            format!(
                "nothing answers at {url}: {} (is the server running, and is this its address?)",
                redact_secrets(&reason, secrets)
            ),
            None,
            None,
        )),
        Err(Some(ClientError::Timeout { timeout_ms, .. })) => Some(err(
            SetupCause::Unreachable,
            format!("{url} did not answer GET /models within {timeout_ms} ms"),
            None,
            None,
        )),
        Err(Some(other)) => Some(err(
            SetupCause::BadPreflightResponse,
            format!(
                "GET {models_url}: {} (not an OpenAI-compatible model list)",
                redact_secrets(&other.to_string(), secrets)
            ),
            None,
            None,
        )),
    }
}

/// The plan of agentic trajectory `r` of job `j` (shared by the sequential driver and
/// the load executor's template).
fn agentic_plan(
    j: &crate::suite::Job,
    a: &crate::suite::AgenticJob,
    s: &SuiteRuntime,
    offered: &[serde_json::Value],
    r: u32,
    seed: u64,
) -> AgenticPlan {
    AgenticPlan {
        trajectory_id: format!("{}#{r}", j.id),
        index: r,
        model: s.model.clone(),
        system: a.system.clone(),
        task: a.task.clone(),
        tools: offered.to_vec(),
        max_tokens: Some(j.max_tokens),
        temperature: Some(j.temperature),
        seed: Some(seed),
        n: j.n,
        max_steps: a.max_steps,
        max_repeated_tool_calls: a.max_repeated_tool_calls,
        tool_choice: a.tool_choice.clone(),
        script: (a.mode == AgenticMode::Scripted).then(|| {
            a.script
                .iter()
                .map(|x| (x.tool.clone(), x.arguments.clone()))
                .collect()
        }),
        shape: request_shape(j, &s.resolved.suite),
        tokens: s.prompt_tokens.clone(),
    }
}

/// A replay job's plan for repeat `r`.
fn replay_plan(
    j: &crate::suite::Job,
    src: &crate::suite::ReplaySource,
    s: &SuiteRuntime,
    r: u32,
    seed: u64,
) -> crate::replay::ReplayPlan {
    crate::replay::ReplayPlan {
        trajectory_id: format!("{}#{r}", j.id),
        index: r,
        model: s.model.clone(),
        shape: src.shape.clone(),
        seed,
        temperature: Some(j.temperature),
        tokens: s.prompt_tokens.clone(),
        request: request_shape(j, &s.resolved.suite),
        count_failures: Default::default(),
    }
}

/// What a replay job replays and how its prompts are sized (the job's notes).
fn replay_note(src: &crate::suite::ReplaySource, s: &SuiteRuntime) -> String {
    let sizing = match &s.prompt_tokens {
        Some(t) => format!(
            "counted by the {} source, {} tokens of chat template measured in the preflight",
            t.label, t.overhead
        ),
        None => "the bytes/4 estimate (4 bytes a token); set `tokenizer` for exact sizes".into(),
    };
    format!(
        "replay of trajectory {} from {} ({} steps): prompts synthesized to the recorded \
         usage.prompt_tokens ({sizing}), outputs fixed at the recorded completion tokens, tools \
         as sleeps of their recorded durations",
        src.shape.trajectory,
        src.shape.source,
        src.shape.steps.len()
    )
}

/// Builds a context load job's exact prompts before its measured window
/// ([`ContextPlan::prebuild`]): the units of every point (its count, or rate × duration for
/// an open loop; each point's prompts are its own, `ContextPlan::unit_spec`); the job's
/// note says how many, in how long, and when the rest are built as they are sent. `None`
/// without a token counter.
async fn prebuild_prompts(plan: &ContextPlan, spec: &crate::load::LoadSpec) -> Option<String> {
    use crate::load::Stop;
    let t = plan.tokens.as_ref().filter(|_| plan.dataset.is_none())?;
    let units: Vec<Option<u64>> = spec
        .points()
        .iter()
        .map(|p| match (p.stop, p.rate) {
            (Stop::Count(n), _) => Some(n),
            (Stop::Duration(d), Some(rate)) => Some((rate * d as f64 / 1e9).ceil() as u64),
            (Stop::Duration(_), None) => None,
        })
        .collect();
    if units.iter().all(Option::is_none) {
        return Some(
            "prompts: built as each unit is sent (a closed loop stopped by duration has no \
             unit count to build ahead), counted inside the measured window"
                .into(),
        );
    }
    let counts: Vec<u64> = units.iter().map(|u| u.unwrap_or(0)).collect();
    let started = std::time::Instant::now();
    let built = plan.prebuild(&counts).await;
    let total = counts.iter().fold(0u64, |a, &n| a.saturating_add(n));
    let rest = if total > crate::context::PREBUILD_MAX_PROMPTS {
        format!(
            "; units past the first {} build theirs as they are sent",
            crate::context::PREBUILD_MAX_PROMPTS
        )
    } else if units.iter().any(Option::is_none) {
        "; the units of a closed loop stopped by duration build theirs as they are sent".into()
    } else {
        String::new()
    };
    Some(format!(
        "prompts: {built} distinct prompts counted by the {} source before the first point, \
         in {:.0} ms (outside the measured window){rest}",
        t.label,
        started.elapsed().as_secs_f64() * 1e3
    ))
}

/// The suite's token counter and its chat template's overhead: `None` for the
/// bytes/4 estimate or a suite without a context or agentic job; an overhead of 0, not
/// measured, when no job sizes its prompts (agentic jobs only count replies). The overhead is measured with one
/// chat request (`max_tokens = 1`, not recorded) whose user message is 32 counted tokens:
/// the server's `usage.prompt_tokens` less 32.
async fn prompt_tokens_of(
    s: &SuiteRuntime,
    client: &Client,
) -> Result<Option<crate::tokens::PromptTokens>, String> {
    use crate::suite::TokenizerSource;
    use crate::tokens::{Counter, TokenizeShape, exact_filler, overhead_of};
    let suite = &s.resolved.suite;
    // Context and replay jobs size their prompts with it; agentic jobs count a reply the
    // server reported no usage for with it.
    let sizes_prompts = s.resolved.jobs.iter().any(|j| match &j.job.kind {
        JobKind::Context(_) => true,
        JobKind::Agentic(a) => a.replay.is_some(),
        JobKind::Swe(_) => false,
    });
    let counts_replies = s
        .resolved
        .jobs
        .iter()
        .any(|j| matches!(j.job.kind, JobKind::Agentic(_)));
    let counter = match (&suite.tokenizer, sizes_prompts || counts_replies) {
        (TokenizerSource::Bytes, _) | (_, false) => return Ok(None),
        (TokenizerSource::File(p), _) => Counter::from_file(p)?,
        (TokenizerSource::Endpoint, _) => Counter::Endpoint {
            client: Box::new(client.clone()),
            model: s.model.clone(),
            shape: TokenizeShape::detect(client, &s.model).await?,
        },
    };
    if !sizes_prompts {
        // Only replies are counted: no prompt is sized, so no template probe (a server
        // without usage, the case the count is for, could not answer it).
        return Ok(Some(crate::tokens::PromptTokens {
            counter,
            overhead: 0,
            label: suite.tokenizer.label(),
        }));
    }
    let (text, n) = exact_filler(&counter, suite.seed ^ 0x27, 32, &[]).await?;
    let probe = ChatRequest {
        request_id: "inferscope-preflight-template".into(),
        model: s.model.clone(),
        messages: vec![serde_json::json!({"role": "user", "content": text})],
        max_tokens: Some(1),
        temperature: Some(0.0),
        stream: true,
        ..Default::default()
    };
    let rec = client.chat(&probe, &RunClock::start(), 0).await;
    let overhead = overhead_of(rec.prompt_tokens, n).ok_or_else(|| match rec.prompt_tokens {
        None => format!(
            "the chat template's overhead could not be measured: the probe request reported \
             no prompt tokens ({})",
            rec.error.as_deref().unwrap_or("no usage")
        ),
        Some(p) => format!(
            "the server reported {p} prompt tokens for a message of {n} tokens by the \
             {} source: it does not count as the engine does",
            suite.tokenizer.label()
        ),
    })?;
    Ok(Some(crate::tokens::PromptTokens {
        counter,
        overhead,
        label: suite.tokenizer.label(),
    }))
}

/// The console note of a dataset job: the file, its format and size, and every
/// scale in force.
fn dataset_note(d: &crate::suite::Dataset) -> String {
    let mut s = format!(
        "dataset {} ({}, {} entries)",
        d.path.display(),
        d.format.as_str(),
        d.entries.len()
    );
    if d.turns == crate::suite::dataset::Turns::All {
        s.push_str("; every human turn a request carrying the conversation before it");
    }
    if d.format == crate::suite::dataset::DatasetFormat::Mooncake {
        s.push_str(&format!(
            "; prompts synthesized from hash ids, blocks of {} tokens (4 bytes each)",
            d.block_size()
        ));
        let [head, tail] = d.template_bytes;
        if head + tail > 0 {
            s.push_str(&format!(
                ", the chat template's {head} + {tail} bytes counted in them (a scaled \
                 last block is at least the tail)"
            ));
        }
    }
    if let Some(t) = d.time_scale {
        s.push_str(&format!(
            "; open-loop arrivals at the recorded timestamps × time scale {t}"
        ));
    }
    s.push_str(&format!(
        "; length scale {}: {}",
        d.length_scale,
        if d.length_scale == 1.0 {
            "lengths as recorded"
        } else {
            "every prompt and output length multiplied by it"
        }
    ));
    s
}

/// A context job's filler words: its `filler` file's words, or none (the built-in words)
/// when it has none or it cannot be read, which a note says.
fn filler_words(c: &crate::suite::ContextJob, notes: &mut Vec<String>) -> Vec<String> {
    let Some(p) = &c.filler else {
        return vec![];
    };
    match crate::fsio::read(p, crate::fsio::limits::TOOL_FILE_BYTES)
        .map_err(|e| e.to_string())
        .and_then(|b| String::from_utf8(b).map_err(|_| "not UTF-8".into()))
    {
        Ok(t) => t.split_whitespace().map(str::to_string).collect(),
        Err(e) => {
            notes.push(format!("filler {}: {e}; built-in words used", p.display()));
            vec![]
        }
    }
}

/// How a context job's prompt sizes are counted: the suite's token source with the chat
/// template's overhead, or the bytes/4 estimate.
fn prompt_sizes_note(s: &SuiteRuntime) -> String {
    match &s.prompt_tokens {
        Some(t) => format!(
            "prompt sizes: counted by the {} source, {} tokens of chat template \
             measured in the preflight (sizes are the prompt tokens the server \
             reports)",
            t.label, t.overhead
        ),
        None => "prompt sizes: the bytes/4 estimate (4 bytes a token), not the \
                 engine's tokens; set `tokenizer` for exact sizes"
            .into(),
    }
}

/// A job's [`RequestShape`]: its `output_tokens` and the suite's `extra_body`.
fn request_shape(j: &crate::suite::Job, suite: &crate::suite::Suite) -> RequestShape {
    RequestShape {
        output_tokens: j.output_tokens,
        extra_body: suite.extra_body.clone(),
    }
}

/// Idle connections the suite's client keeps: 64, or the largest load concurrency of its
/// jobs when larger (256 for an uncapped open loop). reqwest never caps concurrent
/// connections; sizing the idle pool to the concurrency keeps every connection reusable,
/// so no reconnect lands inside a TTFT (the pool never silently caps load).
fn pool_size(rs: &ResolvedSuite) -> usize {
    rs.jobs
        .iter()
        .filter_map(|j| j.job.load.as_ref())
        .map(|l| l.max_concurrency().map_or(256, |c| c as usize))
        .fold(64, usize::max)
}
