//! The I/O edge of a load job: runs each point's units (agentic trajectories or context
//! requests) against the endpoint with the executor of [`super::exec`], on the run clock.
//!
//! Every unit's first request is sent with the unit's *scheduled* time
//! ([`super::exec::UnitTicket::scheduled_ns`]) recorded as `scheduled_ns` beside the actual
//! `send_ns`; later requests of an agentic unit are scheduled when the previous step ended.
//! Requests and units in flight are counted (achieved concurrency). Trajectory ids are
//! `suite::job#k` (one point) or `suite::job#pP.k` (point `P` of a sweep).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::arrival::{arrival_offsets_ns, trace_offsets_ns};
use super::exec::{InFlight, PointPlan, Timer, UnitRunner, UnitTicket, run_point};
use super::record::{LoadRun, PointRecord};
use super::spec::{LoadSpec, Stop, point_seed};
use crate::agentic::{AgenticPlan, DriverCtx, LlmExecutor, ToolExec, llm_step, run_trajectory};
use crate::client::{ChatRequest, Client, RequestRecord};
use crate::clock::RunClock;
use crate::context::ContextPlan;
use crate::interrupt::wait_flag;
use crate::steps::{StepStatus, StopReason, TrajectoryRecord};

use super::units::{LoadUnits, RecordsSink, UnitMsg, UnitWriterEnv, spawn_unit_writer};

/// A context job replaying a trace's timestamps (`dataset.time_scale`): its
/// arrivals, the open loop's schedule in place of a rate's.
fn trace_arrivals(template: &UnitTemplate, stop: Stop) -> Option<Vec<u64>> {
    let UnitTemplate::Context(plan) = template else {
        return None;
    };
    let d = plan.dataset.as_ref()?;
    let ts: Vec<u64> = d.entries.iter().filter_map(|e| e.timestamp_ms).collect();
    Some(trace_offsets_ns(&ts, d.time_scale?, stop))
}

/// What one unit of a load job is.
#[derive(Debug, Clone)]
pub enum UnitTemplate {
    /// One agentic trajectory; `trajectory_id` and `index` are set per unit.
    Agentic(AgenticPlan),
    /// One context request; unit `k` uses entry `k mod (len(sizes) × repeat)` of the
    /// size-major list of `(size, repeat)` (distinct prompts on later cycles unless
    /// `shared_prefix`).
    Context(ContextPlan),
}

impl UnitTemplate {
    /// `trajectory` or `request`.
    pub fn unit_name(&self) -> &'static str {
        match self {
            UnitTemplate::Agentic(_) => "trajectory",
            UnitTemplate::Context(_) => "request",
        }
    }
}

/// The runtime a load job needs (owned, so each unit runs as its own tokio task).
pub struct LoadEnv<T: ToolExec + Send + 'static> {
    /// The suite's client (cheap to clone: a shared pool).
    pub client: Client,
    /// The run clock.
    pub clock: RunClock,
    /// Fixture tools (agentic units).
    pub tools: Arc<T>,
    /// Step ids, cancellation, capture.
    pub ctx: DriverCtx,
    /// `suite::job`.
    pub job_id: String,
    /// The job's position in its suite (arrival seeds).
    pub job_index: usize,
    /// The suite seed (arrival seeds).
    pub suite_seed: u64,
    /// The client's idle-pool size (reported).
    pub client_max_connections: usize,
    /// `--shard K/N`: run this shard's share of each point ([`crate::shard::split_point`]);
    /// `suite_seed` is then the shard's derived seed.
    pub shard: Option<crate::shard::ShardSpec>,
    /// The job grades its trajectories (keep each unit's final answer and stdout for the
    /// checks); without checks they are dropped as each unit ends.
    pub keep_answers: bool,
    /// The job's grading checks: each unit is graded as it ends (its answer is then
    /// dropped with the record).
    pub checks: Vec<crate::grade::Check>,
    /// Keep a slim copy of every unit (steps and usage, no ITL gaps) for the run's
    /// step-attribution join: only when the run samples a source the join reads (power or
    /// engine counters; without one the join has nothing to attribute).
    pub keep_spans: bool,
    /// The run's `requests.jsonl`, the job's index in the report and what the unit writer
    /// needs ([`super::units`]).
    pub records: RecordsSink,
    /// The job's index in the report (its `j` in `requests.jsonl`).
    pub report_index: usize,
    /// Secrets redacted from server error text before a record is written.
    pub secrets: Vec<String>,
    /// The run's events (`StepFinished` per step, as each unit ends).
    pub events: crate::events::EventSink,
    /// The job's goodput criteria (a streaming job counts good requests as they end).
    pub criteria: Option<crate::load::GoodputCriteria>,
}

/// A unit the job keeps whole: the first of each point (its trajectory report), or every
/// unit slimmed when the run joins steps with telemetry; with its check results.
#[derive(Debug)]
pub struct KeptUnit {
    /// The unit.
    pub rec: TrajectoryRecord,
    /// Its check results (empty without checks).
    pub checks: Vec<crate::grade::CheckResult>,
}

/// The run clock as the executor's [`Timer`]; a sleep ends early on cancellation.
struct ClockTimer<'a> {
    clock: &'a RunClock,
    cancelled: &'a AtomicBool,
}

impl Timer for ClockTimer<'_> {
    fn now_ns(&self) -> u64 {
        self.clock.elapsed_ns()
    }
    fn sleep_until(&self, t_ns: u64) -> impl std::future::Future<Output = ()> + Send {
        let deadline = tokio::time::Instant::from_std(self.clock.instant_at(t_ns));
        let cancelled = self.cancelled;
        async move {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {}
                _ = wait_flag(cancelled) => {}
            }
        }
    }
}

/// A unit's executor: the first request carries the unit's scheduled time; every request
/// is counted in flight.
struct UnitExec<'a> {
    client: &'a Client,
    clock: &'a RunClock,
    cancelled: &'a AtomicBool,
    first_scheduled: Mutex<Option<u64>>,
    in_flight: &'a InFlight,
}

impl LlmExecutor for UnitExec<'_> {
    async fn chat(&self, req: &ChatRequest) -> RequestRecord {
        let scheduled = self
            .first_scheduled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_else(|| self.clock.elapsed_ns());
        let _guard = self.in_flight.enter();
        // Biased: the request first, so a poll draws no random branch order (every read
        // of a stream polls this), and a request that completed is never called cancelled.
        tokio::select! {
            biased;
            r = self.client.chat(req, self.clock, scheduled) => r,
            _ = wait_flag(self.cancelled) => {
                let now = self.clock.elapsed_ns();
                RequestRecord::cancelled(&req.request_id, scheduled, now.max(scheduled), req.stream, now)
            }
        }
    }
    fn now_ns(&self) -> u64 {
        self.clock.elapsed_ns()
    }
}

/// Runs units as tokio tasks, so units in flight are polled in parallel on the runtime's
/// workers (SSE parsing of one stream never delays another's stamps or sends). Each
/// finished unit goes to the job's unit writer ([`super::units`]); the executor gets back
/// only the units the job keeps.
struct Units<T: ToolExec + Send + 'static> {
    env: Arc<LoadEnv<T>>,
    template: Arc<UnitTemplate>,
    point: usize,
    sweep: bool,
    in_flight: Arc<InFlight>,
    /// Unit `k` of this runner is unit `k · stride + offset` of the point (1 and 0
    /// unsharded; see [`crate::shard::split_point`]).
    index_stride: u64,
    index_offset: u64,
    writer: tokio::sync::mpsc::Sender<UnitMsg>,
}

fn trajectory_id(job_id: &str, sweep: bool, point: usize, k: u64) -> String {
    format!(
        "{}{k}",
        crate::model::records::unit_id_prefix(job_id, sweep, point)
    )
}

async fn run_unit<T: ToolExec + Send + 'static>(
    env: &LoadEnv<T>,
    template: &UnitTemplate,
    in_flight: &InFlight,
    id: String,
    point: usize,
    t: UnitTicket,
) -> TrajectoryRecord {
    let exec = UnitExec {
        client: &env.client,
        clock: &env.clock,
        cancelled: &env.ctx.cancelled,
        first_scheduled: Mutex::new(Some(t.scheduled_ns)),
        in_flight,
    };
    match template {
        UnitTemplate::Agentic(p) => {
            let mut plan = p.clone();
            plan.trajectory_id = id;
            plan.index = u32::try_from(t.index).unwrap_or(u32::MAX);
            // Boxed: a trajectory's future is larger than a context unit's, and a spawned
            // task's cell is as large as its largest state (see `context_unit`).
            Box::pin(run_trajectory(&exec, &*env.tools, &env.ctx, &plan)).await
        }
        UnitTemplate::Context(c) => context_unit(&exec, &env.ctx, c, id, point, t.index).await,
    }
}

impl<T: ToolExec + Send + 'static> UnitRunner for Units<T> {
    type Output = Option<Box<KeptUnit>>;
    /// Only the units kept whole (the point's first, or every one's spans for the join):
    /// the others' results went to the unit writer as they ended.
    fn keeps(&self, output: &Self::Output) -> bool {
        output.is_some()
    }
    fn run(&self, t: UnitTicket) -> impl std::future::Future<Output = Self::Output> + Send {
        let env = Arc::clone(&self.env);
        let template = Arc::clone(&self.template);
        let in_flight = Arc::clone(&self.in_flight);
        let writer = self.writer.clone();
        let first = t.index == 0;
        let point = self.point;
        let t = UnitTicket {
            index: t.index * self.index_stride + self.index_offset,
            ..t
        };
        let id = trajectory_id(&env.job_id, self.sweep, self.point, t.index);
        let task = tokio::spawn(async move {
            let mut rec = run_unit(&env, &template, &in_flight, id, point, t).await;
            compact_unit(&mut rec, env.keep_answers);
            let checks = if env.checks.is_empty() {
                Vec::new()
            } else {
                crate::steps::grade_trajectory(&env.checks, &rec)
            };
            let graded_pass = (!checks.is_empty()).then(|| checks.iter().all(|r| r.passed));
            let kept = if first {
                Some(Box::new(KeptUnit {
                    rec: rec.clone(),
                    checks,
                }))
            } else if env.keep_spans {
                let mut slim = rec.clone();
                for s in &mut slim.steps {
                    if let Some(r) = &mut s.request {
                        r.itl_ns = Vec::new();
                        for c in &mut r.choices {
                            c.itl_ns = Vec::new();
                        }
                    }
                }
                Some(Box::new(KeptUnit { rec: slim, checks }))
            } else {
                None
            };
            // The record moves to the writer thread; this task waits for a slot (never a
            // runtime worker), so a stream in flight is never delayed by the disk.
            let _ = writer
                .send(UnitMsg::Unit {
                    rec: Box::new(rec),
                    graded_pass,
                    point,
                })
                .await;
            kept
        });
        async move {
            match task.await {
                Ok(r) => r,
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => panic!("load unit task ended without a result: {e}"),
            }
        }
    }
}

/// What a finished unit keeps until the report is built: no response text,
/// reasoning or tool-call arguments in its records (no artifact holds them), no final
/// answer or stdout unless the job's checks read them, vectors at their length.
fn compact_unit(rec: &mut TrajectoryRecord, keep_answers: bool) {
    if !keep_answers {
        rec.final_answer = None;
        rec.stdout = None;
    }
    for s in &mut rec.steps {
        if let Some(r) = &mut s.request {
            r.output = Default::default();
            r.itl_ns.shrink_to_fit();
            for c in &mut r.choices {
                c.output = Default::default();
                c.itl_ns.shrink_to_fit();
            }
        }
    }
    rec.steps.shrink_to_fit();
}

/// One context unit: its request, the stream, the estimate refined. Every unit is a
/// spawned task whose cell is as large as the unit future's largest state, for the whole
/// unit, and a cell's pages are all touched before the unit ends: the request's build and
/// the estimate's refinement (tokenizer work, 2.4 and 1.8 KB of state) and the finished
/// step are boxed, so the cell holds the stream's state and not theirs (BENCHMARKS.md,
/// memory per stream).
async fn context_unit<E: LlmExecutor>(
    exec: &E,
    ctx: &DriverCtx,
    plan: &ContextPlan,
    id: String,
    point: usize,
    k: u64,
) -> TrajectoryRecord {
    let start_ns = exec.now_ns();
    let (size, r) = plan.unit_spec(point, k);
    let mut rec = TrajectoryRecord {
        id: id.clone(),
        index: u32::try_from(k).unwrap_or(u32::MAX),
        stop_reason: StopReason::Completed,
        steps: Vec::new(),
        tools_called: Vec::new(),
        final_answer: None,
        stdout: None,
        start_ns,
        end_ns: start_ns,
    };
    if ctx.is_cancelled() {
        rec.stop_reason = StopReason::Cancelled;
        return rec;
    }
    let (req, case) = match &plan.dataset {
        Some(d) => (plan.dataset_request(d, &id, k), format!("{id}/e{k}")),
        None => (
            Box::pin(plan.request(&id, size, r)).await,
            format!("{id}/s{size}r{r}"),
        ),
    };
    // The step is boxed too: a value held across a later await gets its own slot, which
    // the stream's state (the `llm_step` future) would otherwise sit beside.
    let mut step = Box::new(llm_step(exec, ctx, &case, &req).await);
    Box::pin(plan.refine_estimate(&mut step)).await;
    if step.status == StepStatus::Completed {
        rec.final_answer = step
            .request
            .as_mut()
            .map(|r| std::mem::take(&mut r.output.text));
    } else if step.status == StepStatus::Cancelled {
        rec.stop_reason = StopReason::Cancelled;
    }
    rec.steps.push(*step);
    rec.end_ns = exec.now_ns();
    rec
}

/// What [`run_load`] returns: the units the job keeps (point by point, unit order within
/// a point) with their check results, the executed points, and what the job keeps of all
/// its units ([`LoadUnits`]; their records are in `requests.jsonl`).
pub struct LoadOutcome {
    /// Kept units ([`KeptUnit`]).
    pub trajectories: Vec<TrajectoryRecord>,
    /// Their check results, index for index.
    pub checks: Vec<Vec<crate::grade::CheckResult>>,
    /// The executed points (each point's `trajectories` range indexes the kept units).
    pub run: LoadRun,
    /// Every unit, compact.
    pub units: LoadUnits,
}

/// The record of a point this shard runs no unit of: empty, at `now`, its kept-unit range
/// empty at `at`.
fn empty_point(point: super::LoadPoint, now: u64, at: usize) -> PointRecord {
    PointRecord {
        point,
        start_ns: now,
        end_ns: now,
        trajectories: at..at,
        units_started: 0,
        not_started: 0,
        stopped_early: false,
        unscheduled: 0,
        max_units_in_flight: 0,
        max_requests_in_flight: 0,
        connections: None,
    }
}

/// A point's executor plan: its concurrency cap, its stop, and its arrivals (a dataset's
/// timestamps, else the open loop's offsets from the point's seed); with the units a
/// counted stop asks for beyond the arrivals (unscheduled).
fn point_plan(
    template: &UnitTemplate,
    point: &super::LoadPoint,
    suite_seed: u64,
    job_index: usize,
) -> (PointPlan, u64) {
    let arrivals = trace_arrivals(template, point.stop).or_else(|| {
        point.rate.map(|r| {
            arrival_offsets_ns(
                point.arrival,
                r,
                point_seed(suite_seed, job_index, point.index),
                point.stop,
            )
        })
    });
    let unscheduled = match (&arrivals, point.stop) {
        (Some(a), Stop::Count(n)) => n.saturating_sub(a.len() as u64),
        _ => 0,
    };
    let plan = PointPlan {
        concurrency: point.concurrency,
        arrivals,
        stop: point.stop,
    };
    (plan, unscheduled)
}

/// Runs a point's units with its connections counted: the pool warmed before the window,
/// the connections opened inside it.
async fn run_point_connected<T: ToolExec + Send + 'static>(
    env: &LoadEnv<T>,
    plan: &PointPlan,
    units: &Units<T>,
    timer: &ClockTimer<'_>,
) -> (
    super::exec::PointRun<<Units<T> as UnitRunner>::Output>,
    crate::model::load::PointConnections,
) {
    // Connections before the window: a pool at the point's
    // concurrency cap, opened at a bounded rate; an uncapped open loop has no known
    // size and opens its connections as its arrivals need them.
    let warm = match plan.concurrency {
        Some(c) if !env.ctx.is_cancelled() => Some(
            env.client
                .warm_pool(usize::try_from(c).unwrap_or(usize::MAX))
                .await,
        ),
        _ => None,
    };
    let before = env.client.connect_counts();
    let run = run_point(plan, units, timer, &env.ctx.cancelled).await;
    let in_window = env.client.connect_counts().since(before);
    let connections = crate::model::load::PointConnections {
        warm_wanted: warm.map(|w| w.wanted),
        warm_opened: warm.map_or(0, |w| w.opened),
        warm_failed: warm.map_or(0, |w| w.failed),
        warm_ns: warm.map_or(0, |w| w.elapsed_ns),
        warm_retransmits: warm.map_or(0, |w| w.retransmits),
        opened_in_window: in_window.opened,
        connect_retransmits: in_window.retransmits,
    };
    (run, connections)
}

/// Runs every point of `spec` in order (stopping at cancellation); see [`LoadOutcome`].
pub async fn run_load<T: ToolExec + Send + 'static>(
    env: LoadEnv<T>,
    spec: &LoadSpec,
    template: UnitTemplate,
) -> LoadOutcome {
    let (writer, writer_thread) = spawn_unit_writer(UnitWriterEnv {
        sink: env.records.clone(),
        job_index: env.report_index,
        job_id: env.job_id.clone(),
        secrets: env.secrets.clone(),
        events: env.events.clone(),
        streaming: spec.aggregation == crate::suite::load_spec::Aggregation::Streaming,
        criteria: env.criteria.clone(),
        miss_threshold_ms: crate::stats::DEFAULT_SCHEDULE_MISS_THRESHOLD_MS,
    });
    let env = Arc::new(env);
    let template = Arc::new(template);
    let timer = ClockTimer {
        clock: &env.clock,
        cancelled: &env.ctx.cancelled,
    };
    let mut trajectories = Vec::new();
    let mut checks = Vec::new();
    let mut points = Vec::new();
    let mut shares = Vec::new();
    for point in spec.points() {
        if env.ctx.is_cancelled() {
            break;
        }
        let (point, stride, offset) = match env.shard {
            None => (point, 1, 0),
            Some(s) => {
                let (mine, share) = crate::shard::split_point(&point, s);
                let runs = share.runs;
                let (stride, offset) = (share.index_stride, share.index_offset);
                shares.push(share);
                if !runs {
                    // This shard's share of the point is nothing: it runs no unit and says
                    // so (the share's note); the point is recorded empty.
                    let _ = writer.send(UnitMsg::Point { warmup: 0 }).await;
                    let now = env.clock.elapsed_ns();
                    points.push(empty_point(mine, now, trajectories.len()));
                    continue;
                }
                (mine, stride, offset)
            }
        };
        let _ = writer
            .send(UnitMsg::Point {
                warmup: point.warmup,
            })
            .await;
        let (plan, unscheduled) = point_plan(&template, &point, env.suite_seed, env.job_index);
        let units = Units {
            env: Arc::clone(&env),
            template: Arc::clone(&template),
            point: point.index,
            sweep: spec.sweep.is_some(),
            in_flight: Arc::new(InFlight::default()),
            index_stride: stride,
            index_offset: offset,
            writer: writer.clone(),
        };
        let (run, connections) = run_point_connected(&env, &plan, &units, &timer).await;
        let first = trajectories.len();
        let started = run.finished;
        for k in run.units.into_iter().filter_map(|u| u.output) {
            trajectories.push(k.rec);
            checks.push(k.checks);
        }
        points.push(PointRecord {
            point,
            start_ns: run.start_ns,
            end_ns: run.end_ns,
            trajectories: first..trajectories.len(),
            units_started: started,
            not_started: run.not_started,
            stopped_early: run.stopped_early,
            unscheduled,
            max_units_in_flight: run.max_in_flight,
            max_requests_in_flight: units.in_flight.max(),
            connections: Some(connections),
        });
    }
    drop(writer);
    // Every unit task has sent its unit (the executor awaited them all): the writer ends
    // once the channel is drained.
    let units = match tokio::task::spawn_blocking(move || writer_thread.join()).await {
        Ok(Ok(u)) => u,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(e) => panic!("the unit writer's join task ended without a result: {e}"),
    };
    LoadOutcome {
        trajectories,
        checks,
        run: LoadRun {
            spec: spec.clone(),
            unit: template.unit_name(),
            client_max_connections: env.client_max_connections,
            points,
            shares,
        },
        units,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(sizes: Vec<usize>, repeat: u32) -> ContextPlan {
        ContextPlan {
            job_id: "s::j".into(),
            model: "m".into(),
            sizes,
            repeat,
            shared_prefix: false,
            seed: 1,
            words: vec![],
            max_tokens: Some(4),
            temperature: Some(0.0),
            n: None,
            shape: Default::default(),
            tokens: None,
            dataset: None,
            count_failures: Default::default(),
            prebuilt: Default::default(),
        }
    }

    #[test]
    fn context_units_cycle_size_major_with_fresh_repeat_indices() {
        let p = plan(vec![256, 1024], 2);
        let got: Vec<(usize, u64)> = (0..6).map(|k| p.unit_spec(0, k)).collect();
        assert_eq!(
            got,
            vec![(256, 0), (256, 1), (1024, 0), (1024, 1), (256, 2), (256, 3)]
        );
        // A later point: the same sizes in the same order, repeat indices of its own.
        let s = crate::context::POINT_REPEAT_STRIDE;
        let got: Vec<(usize, u64)> = (0..3).map(|k| p.unit_spec(2, k)).collect();
        assert_eq!(got, vec![(256, 2 * s), (256, 2 * s + 1), (1024, 2 * s)]);
    }

    /// What the executor keeps per unit of a load job is a fixed-size entry: the unit's
    /// outcome, boxed, beside the executor's own figures (no record, no string).
    #[test]
    fn the_state_a_load_job_retains_per_unit_is_compact() {
        type Done = super::super::exec::UnitDone<Option<Box<KeptUnit>>>;
        assert!(
            std::mem::size_of::<Done>() <= 40,
            "{}",
            std::mem::size_of::<Done>()
        );
    }

    /// The prompt text of unit `k` of point `point`.
    async fn prompt(p: &ContextPlan, point: usize, k: u64) -> String {
        let (size, r) = p.unit_spec(point, k);
        let req = p.request("s::j#p0.0", size, r).await;
        req.messages[0]["content"].as_str().unwrap().to_string()
    }

    /// A later point's prompts are new to an engine's prefix cache, as the first point's
    /// were; a shared-prefix job shares one prompt per size across every point.
    #[tokio::test]
    async fn each_point_sends_prompts_of_its_own_unless_the_prefix_is_shared() {
        let mut p = plan(vec![256], 1);
        let first: Vec<String> =
            futures_util::future::join_all((0..4).map(|k| prompt(&p, 0, k))).await;
        let second: Vec<String> =
            futures_util::future::join_all((0..4).map(|k| prompt(&p, 1, k))).await;
        for a in &second {
            assert!(
                !first.contains(a),
                "a point-1 prompt repeats one of point 0"
            );
            assert_eq!(a.len(), first[0].len(), "the same size");
        }
        p.shared_prefix = true;
        assert_eq!(prompt(&p, 0, 0).await, prompt(&p, 1, 3).await);
    }
}
