//! Sampler threads: one per source, a deadline-based loop, a shared stop signal.

use super::metrics::{MetricsTracker, Scraped, build_client, scrape};
use super::power::{GpuDevice, GpuSampler, ProbeSampler, nvml};
use super::proc::{ProcOutcome, ProcReader, ProcSample, clk_tck};
use super::profile::map_exposition;
use super::prom::{ExpositionFormat, format_from_content_type, parse_exposition};
use super::{
    GpuConfig, MetricsConfig, MetricsTimeline, PowerTimeline, ProcConfig, ProcTimeline, ScrapeGap,
    SourceStatus, TelemetryConfig, TelemetryRun,
};
use inferscope_clock::RunClock;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Most failed scrapes kept individually (the rest are only counted).
const MAX_GAPS: usize = 1000;
/// Most distinct notes kept.
const MAX_NOTES: usize = 100;

/// The stop flag shared by the handle and the sampler threads, and a "sample now" request
/// ([`StopSignal::poke`]).
#[derive(Default)]
struct StopSignal {
    /// (stopped, poke generation).
    state: Mutex<(bool, u64)>,
    cv: Condvar,
}

/// Why [`StopSignal::wait_until`] returned.
#[derive(Debug, PartialEq, Eq)]
enum Wake {
    Deadline,
    Stopped,
    /// A sample was asked for now (the poke generation moved past the thread's).
    Poked,
}

impl StopSignal {
    fn lock(&self) -> std::sync::MutexGuard<'_, (bool, u64)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stop(&self) {
        self.lock().0 = true;
        self.cv.notify_all();
    }

    /// Asks every sampler for one sample now, out of its schedule (a
    /// job's figures wait for a sample at or after its end; without this, up to one
    /// sampling period).
    fn poke(&self) {
        self.lock().1 += 1;
        self.cv.notify_all();
    }

    /// The poke generation now (a thread's starting point).
    fn generation(&self) -> u64 {
        self.lock().1
    }

    /// Waits until `deadline`, stop, or a poke newer than `*seen` (which it then records).
    fn wait_until(&self, deadline: Instant, seen: &mut u64) -> Wake {
        let mut g = self.lock();
        loop {
            if g.0 {
                return Wake::Stopped;
            }
            if g.1 != *seen {
                *seen = g.1;
                return Wake::Poked;
            }
            let now = Instant::now();
            if now >= deadline {
                return Wake::Deadline;
            }
            g = self
                .cv
                .wait_timeout(g, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// Samples kept up to a cap; later ones are counted as dropped.
struct Bounded<T> {
    items: Vec<T>,
    cap: usize,
    dropped: u64,
}

impl<T> Bounded<T> {
    fn new(cap: usize) -> Self {
        Self {
            items: Vec::new(),
            cap,
            dropped: 0,
        }
    }

    fn push(&mut self, v: T) {
        if self.items.len() < self.cap {
            self.items.push(v);
        } else {
            self.dropped += 1;
        }
    }
}

/// What the power and metrics threads have sampled so far: each thread keeps its timeline
/// here (samples appended under the lock every tick, header fields kept current), so a
/// [`TelemetryHandle::snapshot`] can read it while sampling goes on; at stop the thread
/// takes its timeline out and finishes it.
#[derive(Default)]
struct Live {
    power: Option<PowerTimeline>,
    metrics: Option<MetricsTimeline>,
}

/// [`Live`] and the notification its writers send when they have published (a tick's
/// samples, a status), which a waiting [`TelemetryHandle::snapshot`] wakes on.
#[derive(Default)]
struct LiveCell {
    state: Mutex<Live>,
    published: tokio::sync::Notify,
}

type SharedLive = Arc<LiveCell>;

/// Reads [`Live`] (a reader never wakes the waiting snapshots).
fn lock_live(live: &SharedLive) -> std::sync::MutexGuard<'_, Live> {
    live.state
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes [`Live`]: when the guard is dropped, the waiting snapshots are woken to look.
fn publish_live(live: &SharedLive) -> Publishing<'_> {
    Publishing {
        guard: Some(lock_live(live)),
        published: &live.published,
    }
}

/// The write guard of [`publish_live`]; `guard` is `None` only inside `drop`.
struct Publishing<'a> {
    guard: Option<std::sync::MutexGuard<'a, Live>>,
    published: &'a tokio::sync::Notify,
}

impl std::ops::Deref for Publishing<'_> {
    type Target = Live;
    fn deref(&self) -> &Live {
        self.guard.as_ref().expect("held until drop")
    }
}

impl std::ops::DerefMut for Publishing<'_> {
    fn deref_mut(&mut self) -> &mut Live {
        self.guard.as_mut().expect("held until drop")
    }
}

impl Drop for Publishing<'_> {
    fn drop(&mut self) {
        // Unlocked first, so a woken snapshot does not wait for this thread's lock.
        drop(self.guard.take());
        self.published.notify_waiters();
    }
}

/// Appends `v` to `items` unless `cap` are kept; a sample past the cap is counted in
/// `dropped`, never blocking.
fn push_capped<T>(items: &mut Vec<T>, dropped: &mut u64, cap: usize, v: T) {
    if items.len() < cap {
        items.push(v);
    } else {
        *dropped += 1;
    }
}

/// Whether `newest` (a source's latest sample time) reaches `end_ns`.
fn covers(newest: Option<u64>, end_ns: u64) -> bool {
    newest.is_some_and(|t| t >= end_ns)
}

/// A view of the run's samples while sampling goes on ([`TelemetryHandle::snapshot`]).
#[derive(Debug, Clone)]
pub struct TelemetrySnapshot {
    /// The power and metrics timelines sampled so far (`proc` is not carried: no job figure
    /// reads it), with `stopped_elapsed_ns` = the snapshot instant.
    pub run: TelemetryRun,
    /// The sources (a power device's label, or `metrics`) whose newest sample is still
    /// before the instant asked for after the bounded wait, each with that sample's time
    /// (`None`: no sample at all). Empty when every running source covers it.
    pub uncovered: Vec<(String, Option<u64>)>,
}

enum Tick {
    Continue,
    Finish,
}

/// Runs `tick` now, then every `period` (missed deadlines are skipped, not bunched), until
/// stop; after stop one final tick runs. `ready` is signalled after the first tick.
fn run_loop(
    stop: &StopSignal,
    period: Duration,
    ready: mpsc::SyncSender<()>,
    mut tick: impl FnMut() -> Tick,
) {
    let start = Instant::now();
    let period = period.max(Duration::from_millis(1));
    let mut seen = stop.generation();
    let first = tick();
    let _ = ready.send(());
    if matches!(first, Tick::Finish) {
        return;
    }
    let mut k: u32 = 1;
    loop {
        let mut deadline = start + period * k;
        let now = Instant::now();
        if deadline < now {
            // Skip missed periods.
            let behind = (now - start).as_nanos() / period.as_nanos();
            k = u32::try_from(behind).unwrap_or(u32::MAX - 1) + 1;
            deadline = start + period * k;
        }
        let wake = stop.wait_until(deadline, &mut seen);
        if matches!(tick(), Tick::Finish) || wake == Wake::Stopped {
            return;
        }
        // A poked sample is extra: the schedule's next deadline stays.
        if wake == Wake::Deadline {
            k = k.saturating_add(1);
        }
    }
}

enum SourceResult {
    Proc(ProcTimeline),
    Power(PowerTimeline),
    Metrics(Box<MetricsTimeline>),
}

/// A running set of samplers; [`TelemetryHandle::stop`] ends them and returns the timelines.
/// Dropping the handle without `stop` also signals the threads to end.
pub struct TelemetryHandle {
    stop: Arc<StopSignal>,
    threads: Vec<(&'static str, JoinHandle<SourceResult>)>,
    failed: Vec<(&'static str, String)>,
    clock: RunClock,
    started_elapsed_ns: u64,
    configured: Configured,
    prometheus: Option<super::PrometheusConfig>,
    live: SharedLive,
}

#[derive(Clone)]
struct Configured {
    proc: Option<(ProcConfig, u64)>,
    power: Option<(bool, u64)>,
    metrics: Option<(MetricsConfig, u64)>,
}

/// Starts the configured samplers and returns once each has taken its first sample (or
/// failed to start); the threads stamp samples with `clock`. Never fails: a source that cannot
/// run reports it in its status. Source: docs/samples.md.
pub fn start(config: TelemetryConfig, clock: &RunClock) -> TelemetryHandle {
    let stop = Arc::new(StopSignal::default());
    let started_elapsed_ns = clock.elapsed_ns();
    let cap = config.max_samples_per_source.max(1);
    let period = config.period;
    let mut threads = Vec::new();
    let mut failed = Vec::new();
    let live = SharedLive::default();
    let (ready_tx, ready_rx) = mpsc::sync_channel::<()>(8);
    let mut expected = 0usize;
    let configured = Configured {
        proc: config.proc.clone().map(|p| (p, period.as_nanos() as u64)),
        power: (config.gpu.is_some() || !config.probes.is_empty())
            .then(|| (config.gpu.is_some(), period.as_nanos() as u64)),
        metrics: config
            .metrics
            .clone()
            .map(|m| (m.clone(), m.period.as_nanos() as u64)),
    };

    let mut spawn = |name: &'static str, f: Box<dyn FnOnce() -> SourceResult + Send>| {
        match std::thread::Builder::new()
            .name(format!("telemetry-{name}"))
            .spawn(f)
        {
            Ok(h) => {
                threads.push((name, h));
                expected += 1;
            }
            Err(e) => failed.push((name, format!("could not start sampler thread: {e}"))),
        }
    };

    if let Some(pc) = config.proc.clone() {
        let (s, c, r) = (stop.clone(), clock.clone(), ready_tx.clone());
        spawn(
            "proc",
            Box::new(move || SourceResult::Proc(proc_thread(pc, period, cap, &s, &c, r))),
        );
    }
    let prometheus = config.prometheus.clone();
    if config.gpu.is_some() || !config.probes.is_empty() {
        let (s, c, r) = (stop.clone(), clock.clone(), ready_tx.clone());
        let gpu = config.gpu.clone();
        let probes = config.probes;
        let opener = config.gpu_opener;
        let l = live.clone();
        spawn(
            "power",
            Box::new(move || {
                SourceResult::Power(power_thread(
                    gpu, opener, probes, period, cap, &s, &c, r, &l,
                ))
            }),
        );
    }
    if let Some(mc) = config.metrics.clone() {
        let (s, c, r) = (stop.clone(), clock.clone(), ready_tx.clone());
        let l = live.clone();
        spawn(
            "metrics",
            Box::new(move || {
                SourceResult::Metrics(Box::new(metrics_thread(mc, cap, &s, &c, r, &l)))
            }),
        );
    }
    drop(ready_tx);
    // Wait for first samples; a thread that dies early closes its sender, so this ends.
    let wait_limit = Instant::now()
        + Duration::from_secs(10)
        + config
            .metrics
            .as_ref()
            .map(|m| m.timeout)
            .unwrap_or_default();
    for _ in 0..expected {
        let left = wait_limit.saturating_duration_since(Instant::now());
        if ready_rx.recv_timeout(left).is_err() {
            break;
        }
    }
    TelemetryHandle {
        stop,
        threads,
        failed,
        clock: clock.clone(),
        started_elapsed_ns,
        configured,
        prometheus,
        live,
    }
}

/// The longest [`TelemetryHandle::snapshot`] waits between looks when no sampler publishes
/// (a thread that ended): a published sample wakes it at once.
const SNAPSHOT_POLL: Duration = Duration::from_millis(5);

impl TelemetryHandle {
    /// Whether a job's figures can be final before the run ends: `false` when a Prometheus
    /// server supplies the engine counters, which are read only after the measured window
    /// (`[telemetry] prometheus`).
    pub fn streams(&self) -> bool {
        self.prometheus.is_none()
    }

    /// Whether a source the step-attribution join reads is configured: power (GPUs and
    /// probes) or engine counters (`/metrics`, a Prometheus server). Without one the join
    /// has nothing to attribute, so a load job keeps no unit's spans for it.
    pub fn feeds_step_join(&self) -> bool {
        self.configured.power.is_some()
            || self.configured.metrics.is_some()
            || self.prometheus.is_some()
    }

    /// The longest a [`TelemetryHandle::snapshot`] waits for a sample at or after its
    /// instant: the longest sampling period of the power and metrics sources plus a 250 ms
    /// margin (a scrape's own time, a loaded machine).
    pub fn snapshot_wait(&self) -> Duration {
        let period_ns = [
            self.configured.power.map(|p| p.1),
            self.configured.metrics.as_ref().map(|m| m.1),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(0);
        Duration::from_nanos(period_ns) + Duration::from_millis(250)
    }

    /// The power and metrics samples taken so far, once every running source has a sample
    /// at or after `at_least_ns` (run clock) or `max_wait` has passed; the sources still
    /// short of it are listed in [`TelemetrySnapshot::uncovered`] (their tail is never
    /// invented). Sampling goes on; each device's whole-run energy is over the samples so
    /// far. A metrics source that never answered is asked for a try now (once). The wait
    /// wakes when a sampler publishes, and at least every 5 ms.
    pub async fn snapshot(&self, at_least_ns: u64, max_wait: Duration) -> TelemetrySnapshot {
        let deadline = Instant::now() + max_wait;
        let mut poked = false;
        loop {
            // Registered before looking, so a sample published in between still wakes us.
            let published = self.live.published.notified();
            tokio::pin!(published);
            published.as_mut().enable();
            let uncovered = self.uncovered(at_least_ns);
            if !uncovered.is_empty() && !poked && self.metrics_never_answered() {
                // An endpoint without `/metrics`: one try now (its failure after the end
                // releases the wait) instead of waiting for the next period. A source that
                // answers keeps its schedule: an extra sample at a job's end would change
                // which window a step's counters land in.
                self.stop.poke();
                poked = true;
            }
            if uncovered.is_empty() || Instant::now() >= deadline || self.threads_done() {
                return self.snapshot_now(uncovered);
            }
            tokio::select! {
                () = published => {}
                () = tokio::time::sleep(SNAPSHOT_POLL.min(deadline - Instant::now())) => {}
            }
        }
    }

    /// A metrics source runs and no scrape of it has succeeded yet.
    fn metrics_never_answered(&self) -> bool {
        lock_live(&self.live)
            .metrics
            .as_ref()
            .is_some_and(|m| m.scrapes_ok == 0)
    }

    fn threads_done(&self) -> bool {
        self.threads.iter().all(|(_, h)| h.is_finished())
    }

    /// The running sources whose newest sample is before `end_ns`: each power device still
    /// sampled (status `ok`) and the metrics scrape while it is not failing for good.
    fn uncovered(&self, end_ns: u64) -> Vec<(String, Option<u64>)> {
        let live = lock_live(&self.live);
        let mut out = Vec::new();
        if let Some(p) = &live.power {
            for d in p.devices.iter().filter(|d| d.status == SourceStatus::Ok) {
                let newest = p.device_samples(d.device).map(|s| s.elapsed_ns).max();
                if !covers(newest, end_ns) {
                    out.push((d.label.clone(), newest));
                }
            }
        }
        if let Some(m) = &live.metrics {
            let newest = m.samples.last().map(|s| s.elapsed_ns);
            // An endpoint that never answered a scrape (no `/metrics` at all: 404, refused)
            // and failed again after `end_ns` will not cover it: waiting the whole bound
            // (a period + 250 ms) for it would only delay every job.
            let never_answers =
                m.scrapes_ok == 0 && m.gaps.last().is_some_and(|g| g.elapsed_ns >= end_ns);
            let ended = m.status != SourceStatus::Ok;
            if !covers(newest, end_ns) && !never_answers && !ended {
                out.push(("metrics".to_string(), newest));
            }
        }
        out
    }

    fn snapshot_now(&self, uncovered: Vec<(String, Option<u64>)>) -> TelemetrySnapshot {
        let (power, metrics) = {
            let live = lock_live(&self.live);
            (live.power.clone(), live.metrics.clone())
        };
        let power = power.map(|mut p| {
            settle_gpu_status(&mut p);
            p.compute_energy();
            p
        });
        TelemetrySnapshot {
            run: TelemetryRun {
                clock_domain_id: self.clock.clock_domain_id().to_string(),
                reference_instant_unix_ns: self.clock.reference_instant_unix_ns(),
                started_elapsed_ns: self.started_elapsed_ns,
                stopped_elapsed_ns: self.clock.elapsed_ns(),
                proc: None,
                power,
                metrics,
                prometheus: None,
            },
            uncovered,
        }
    }

    /// Stops every sampler (each takes one final sample), joins the threads and returns all
    /// timelines with per-source status and whole-run energy per power device. A thread that
    /// panicked yields its source with status `failed`.
    pub fn stop(mut self) -> TelemetryRun {
        self.stop.stop();
        let mut run = TelemetryRun {
            clock_domain_id: self.clock.clock_domain_id().to_string(),
            reference_instant_unix_ns: self.clock.reference_instant_unix_ns(),
            started_elapsed_ns: self.started_elapsed_ns,
            stopped_elapsed_ns: 0,
            proc: None,
            power: None,
            metrics: None,
            prometheus: None,
        };
        let threads = std::mem::take(&mut self.threads);
        let mut failed = std::mem::take(&mut self.failed);
        for (name, h) in threads {
            match h.join() {
                Ok(SourceResult::Proc(t)) => run.proc = Some(t),
                Ok(SourceResult::Power(t)) => run.power = Some(t),
                Ok(SourceResult::Metrics(t)) => run.metrics = Some(*t),
                Err(_) => failed.push((name, "sampler thread panicked".into())),
            }
        }
        for (name, reason) in failed {
            let status = SourceStatus::Failed { reason };
            match name {
                "proc" => {
                    if let Some((pc, period_ns)) = self.configured.proc.clone() {
                        run.proc = Some(empty_proc(pc, period_ns, status));
                    }
                }
                "power" => {
                    if let Some((gpu, period_ns)) = self.configured.power {
                        run.power = Some(PowerTimeline {
                            gpu_status: gpu.then(|| status.clone()),
                            period_ns,
                            devices: Vec::new(),
                            sample_count: 0,
                            dropped: 0,
                            gpu_notes: Vec::new(),
                            samples: Vec::new(),
                        });
                    }
                }
                _ => {
                    if let Some((mc, period_ns)) = self.configured.metrics.clone() {
                        let mut t = empty_metrics(&mc, period_ns);
                        t.status = status;
                        run.metrics = Some(t);
                    }
                }
            }
        }
        run.stopped_elapsed_ns = self.clock.elapsed_ns();
        // After the measured window: ask the Prometheus server for the run window.
        if let Some(pc) = self.prometheus.take() {
            run.prometheus = Some(super::prometheus::collect(
                &pc,
                run.reference_instant_unix_ns,
                run.started_elapsed_ns,
                run.stopped_elapsed_ns,
            ));
        }
        run
    }
}

impl Drop for TelemetryHandle {
    fn drop(&mut self) {
        self.stop.stop();
    }
}

fn empty_proc(pc: ProcConfig, period_ns: u64, status: SourceStatus) -> ProcTimeline {
    ProcTimeline {
        status,
        pid: pc.pid,
        include_descendants: pc.include_descendants,
        period_ns,
        clk_tck: clk_tck(),
        sample_count: 0,
        dropped: 0,
        read_errors: 0,
        last_error: None,
        samples: Vec::new(),
    }
}

fn proc_thread(
    pc: ProcConfig,
    period: Duration,
    cap: usize,
    stop: &StopSignal,
    clock: &RunClock,
    ready: mpsc::SyncSender<()>,
) -> ProcTimeline {
    let mut reader = ProcReader::new(pc.pid, pc.include_descendants);
    let mut buf: Bounded<ProcSample> = Bounded::new(cap);
    let mut status = SourceStatus::Ok;
    let mut read_errors = 0u64;
    let mut last_error = None;
    run_loop(stop, period, ready, || {
        let t = clock.elapsed_ns();
        match reader.sample(t) {
            ProcOutcome::Sample(s) => {
                buf.push(s);
                Tick::Continue
            }
            ProcOutcome::Ended(reason) => {
                status = if buf.items.is_empty() && buf.dropped == 0 {
                    SourceStatus::Unavailable { reason }
                } else {
                    SourceStatus::Ended {
                        at_elapsed_ns: Some(t),
                        reason,
                    }
                };
                Tick::Finish
            }
            ProcOutcome::Error(e) => {
                read_errors += 1;
                last_error = Some(e);
                Tick::Continue
            }
        }
    });
    if matches!(status, SourceStatus::Ok) && buf.items.is_empty() {
        status = SourceStatus::Unavailable {
            reason: last_error
                .clone()
                .unwrap_or_else(|| "no sample taken".into()),
        };
    }
    ProcTimeline {
        status,
        pid: pc.pid,
        include_descendants: pc.include_descendants,
        period_ns: period.as_nanos() as u64,
        clk_tck: clk_tck(),
        sample_count: buf.items.len() as u64,
        dropped: buf.dropped,
        read_errors,
        last_error,
        samples: buf.items,
    }
}

#[allow(clippy::too_many_arguments)]
fn power_thread(
    gpu: Option<GpuConfig>,
    opener: Option<super::GpuOpener>,
    probes: Vec<Box<dyn super::PowerProbe>>,
    period: Duration,
    cap: usize,
    stop: &StopSignal,
    clock: &RunClock,
    ready: mpsc::SyncSender<()>,
    live: &SharedLive,
) -> PowerTimeline {
    let mut gpu_status = None;
    let mut gpu_notes = Vec::new();
    let mut gpus: Vec<GpuSampler<Box<dyn GpuDevice>>> = Vec::new();
    if let Some(g) = &gpu {
        let opened = match opener {
            Some(open) => open(),
            None => nvml::open_all(),
        };
        match opened {
            Ok(devs) => {
                let choice = super::gpu::select_gpus(devs, &g.selection);
                gpu_notes = choice.notes;
                match choice.none_reason {
                    Some(reason) => gpu_status = Some(SourceStatus::Unavailable { reason }),
                    None => {
                        gpu_status = Some(SourceStatus::Ok);
                        for (i, sel) in choice.selected.into_iter().enumerate() {
                            gpus.push(GpuSampler::selected(
                                sel.device,
                                i as u32,
                                sel.mig,
                                sel.not_attributable,
                            ));
                        }
                    }
                }
            }
            Err(reason) => gpu_status = Some(SourceStatus::Unavailable { reason }),
        }
    }
    let n_gpus = gpus.len() as u32;
    let mut probes: Vec<ProbeSampler> = probes
        .into_iter()
        .enumerate()
        .map(|(i, p)| ProbeSampler::new(p, n_gpus + i as u32))
        .collect();
    let n_dev = (gpus.len() + probes.len()).max(1);
    let cap = cap.saturating_mul(n_dev);
    let describe = |gpus: &[GpuSampler<Box<dyn GpuDevice>>], probes: &[ProbeSampler]| {
        let mut d: Vec<_> = gpus.iter().map(|g| g.describe()).collect();
        d.extend(probes.iter().map(|p| p.describe()));
        d
    };
    publish_live(live).power = Some(PowerTimeline {
        gpu_status,
        period_ns: period.as_nanos() as u64,
        devices: describe(&gpus, &probes),
        sample_count: 0,
        dropped: 0,
        gpu_notes,
        samples: Vec::new(),
    });
    if !gpus.is_empty() || !probes.is_empty() {
        let mut tick_samples = Vec::with_capacity(n_dev);
        run_loop(stop, period, ready, || {
            for g in gpus.iter_mut().filter(|g| !g.is_lost()) {
                tick_samples.push(g.sample(clock.elapsed_ns()));
            }
            for p in probes.iter_mut() {
                tick_samples.push(p.sample(clock.elapsed_ns()));
            }
            let mut l = publish_live(live);
            if let Some(t) = l.power.as_mut() {
                for s in tick_samples.drain(..) {
                    push_capped(&mut t.samples, &mut t.dropped, cap, s);
                }
                t.sample_count = t.samples.len() as u64;
                t.devices = describe(&gpus, &probes);
            }
            Tick::Continue
        });
    } else {
        let _ = ready.send(());
    }
    // The published timeline stays in place (only its samples move out): a thread with
    // nothing to sample (NVML did not open) ends at once, and the snapshots of jobs that
    // end later must still see its GPU status and reason, not a missing source.
    let mut t = {
        let mut l = lock_live(live);
        let p = l
            .power
            .as_mut()
            .expect("the power thread's timeline is published before its loop");
        let samples = std::mem::take(&mut p.samples);
        PowerTimeline {
            samples,
            ..p.clone()
        }
    };
    t.devices = describe(&gpus, &probes);
    settle_gpu_status(&mut t);
    t.compute_energy();
    t
}

/// When GPUs were opened but none of them is `ok` any more, the GPU source is
/// `unavailable` with each device's reason.
fn settle_gpu_status(t: &mut PowerTimeline) {
    let gpus: Vec<&super::PowerDevice> = t
        .devices
        .iter()
        .filter(|d| d.kind == super::PowerDeviceKind::Nvml)
        .collect();
    if !gpus.is_empty() && gpus.iter().all(|d| !matches!(d.status, SourceStatus::Ok)) {
        let reasons: Vec<String> = gpus
            .iter()
            .map(|d| match &d.status {
                SourceStatus::Unavailable { reason }
                | SourceStatus::Ended { reason, .. }
                | SourceStatus::Failed { reason } => format!("{}: {reason}", d.label),
                SourceStatus::Ok => String::new(),
            })
            .collect();
        t.gpu_status = Some(SourceStatus::Unavailable {
            reason: reasons.join("; "),
        });
    }
}

fn empty_metrics(mc: &MetricsConfig, period_ns: u64) -> MetricsTimeline {
    MetricsTimeline {
        status: SourceStatus::Ok,
        url: mc.url.clone(),
        profile_requested: mc.profile,
        profile: None,
        served_model: mc.served_model.clone(),
        period_ns,
        timeout_ns: mc.timeout.as_nanos() as u64,
        scrapes_ok: 0,
        scrapes_failed: 0,
        scrapes_resent: 0,
        gaps: Vec::new(),
        parse_errors: 0,
        parse_error_lines: Vec::new(),
        counter_resets: Default::default(),
        mapping: Default::default(),
        notes: Vec::new(),
        block_size: None,
        sample_count: 0,
        dropped: 0,
        prometheus: None,
        samples: Vec::new(),
    }
}

/// Answers that say the endpoint serves no `/metrics` at all: `404 Not Found` (an
/// OpenAI-compatible server without the route) and `501 Not Implemented` (llama-server
/// started without `--metrics`).
const ABSENT_STATUSES: [&str; 2] = ["HTTP 404", "HTTP 501"];

/// How many such answers in a row, with no scrape ever answered, end the source.
const ABSENT_ANSWERS: u32 = 3;

/// Counts the scrapes in a row that the endpoint answered with "no `/metrics` here" while
/// no scrape has succeeded: after [`ABSENT_ANSWERS`] of them the source ends as
/// unavailable instead of asking every period for the whole run (a wake-up, a request
/// and a connection's work each time, for nothing). A refused connection or a timeout is
/// not such an answer (the engine may still be starting), and neither is any failure
/// once a scrape has succeeded (a gap, recorded as one).
#[derive(Debug, Default)]
struct Absent {
    in_a_row: u32,
}

impl Absent {
    /// Counts one failed scrape; the source's end reason when it is the last one.
    fn answered(&mut self, scrapes_ok: u64, reason: &str) -> Option<String> {
        let absent = scrapes_ok == 0 && ABSENT_STATUSES.iter().any(|s| reason.starts_with(s));
        self.in_a_row = if absent { self.in_a_row + 1 } else { 0 };
        (self.in_a_row >= ABSENT_ANSWERS).then(|| {
            format!(
                "the endpoint serves no /metrics: {reason} on {ABSENT_ANSWERS} scrapes in a row, \
                 none answered; not scraped further"
            )
        })
    }
}

fn metrics_thread(
    mc: MetricsConfig,
    cap: usize,
    stop: &StopSignal,
    clock: &RunClock,
    ready: mpsc::SyncSender<()>,
    live: &SharedLive,
) -> MetricsTimeline {
    let mut t = empty_metrics(&mc, mc.period.as_nanos() as u64);
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            t.status = SourceStatus::Failed {
                reason: format!("tokio runtime: {e}"),
            };
            let _ = ready.send(());
            return t;
        }
    };
    let client = match build_client(mc.timeout, &mc.url) {
        Ok(c) => c,
        Err(reason) => {
            t.status = SourceStatus::Failed { reason };
            let _ = ready.send(());
            return t;
        }
    };
    let mut tracker = MetricsTracker::new();
    let mut last_error: Option<String> = None;
    let mut absent = Absent::default();
    publish_live(live).metrics = Some(t);
    run_loop(stop, mc.period, ready, || {
        let sent = clock.elapsed_ns();
        let res = rt.block_on(scrape(&client, &mc.url));
        let done = clock.elapsed_ns();
        let mut l = publish_live(live);
        let Some(t) = l.metrics.as_mut() else {
            return Tick::Finish;
        };
        match res {
            Ok(Scraped {
                body,
                content_type,
                resent,
            }) => {
                t.scrapes_ok += 1;
                if resent {
                    t.scrapes_resent += 1;
                }
                let format = format_from_content_type(content_type.as_deref());
                let expo = parse_exposition(&body, format);
                let scrape = t.scrapes_ok;
                super::record_parse_errors(t, scrape, done, &expo.errors, MAX_NOTES);
                if expo.format == ExpositionFormat::OpenMetrics && !expo.eof {
                    let n = "OpenMetrics body without # EOF (possibly truncated)".to_string();
                    if t.notes.len() < MAX_NOTES && !t.notes.contains(&n) {
                        t.notes.push(n);
                    }
                }
                let snap = map_exposition(&expo, mc.profile, mc.served_model.as_deref());
                if snap.profile.is_some() {
                    t.profile = snap.profile;
                }
                if snap.block_size.is_some() {
                    t.block_size = snap.block_size;
                }
                for (k, v) in &snap.mapping {
                    t.mapping.insert(k.clone(), v.clone());
                }
                for n in &snap.notes {
                    if t.notes.len() < MAX_NOTES && !t.notes.contains(n) {
                        t.notes.push(n.clone());
                    }
                }
                let sample = tracker.ingest(sent, done, &snap);
                push_capped(&mut t.samples, &mut t.dropped, cap, sample);
                t.sample_count = t.samples.len() as u64;
                t.counter_resets = tracker.resets();
            }
            Err(reason) => {
                t.scrapes_failed += 1;
                if t.gaps.len() < MAX_GAPS {
                    t.gaps.push(ScrapeGap {
                        elapsed_ns: done,
                        reason: reason.clone(),
                    });
                }
                if let Some(end) = absent.answered(t.scrapes_ok, &reason) {
                    // Published in place: the snapshots of jobs that end later see the
                    // source as unavailable with its reason, and do not wait for it.
                    t.status = SourceStatus::Unavailable { reason: end };
                    return Tick::Finish;
                }
                last_error = Some(reason);
            }
        }
        Tick::Continue
    });
    let mut t = {
        let mut l = lock_live(live);
        let m = l
            .metrics
            .as_mut()
            .expect("the metrics thread's timeline is published before its loop");
        let samples = std::mem::take(&mut m.samples);
        MetricsTimeline {
            samples,
            ..m.clone()
        }
    };
    if t.scrapes_ok == 0 && t.status == SourceStatus::Ok {
        t.status = SourceStatus::Unavailable {
            reason: last_error.unwrap_or_else(|| "no scrape succeeded".into()),
        };
    }
    t.counter_resets = tracker.resets();
    t.sample_count = t.samples.len() as u64;
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// Three 404 or 501 answers in a row, none answered, end the source; a refused
    /// connection or a timeout in between starts the count again, and once a scrape has
    /// succeeded no failure ends it.
    #[test]
    fn three_answers_of_no_metrics_in_a_row_end_the_source() {
        let mut a = Absent::default();
        assert_eq!(a.answered(0, "HTTP 404 Not Found"), None);
        assert_eq!(a.answered(0, "HTTP 501 Not Implemented"), None);
        let end = a.answered(0, "HTTP 404 Not Found").expect("ended");
        assert!(
            end.contains("serves no /metrics: HTTP 404 Not Found on 3 scrapes"),
            "{end}"
        );

        let mut a = Absent::default();
        assert_eq!(a.answered(0, "HTTP 404 Not Found"), None);
        assert_eq!(a.answered(0, "HTTP 404 Not Found"), None);
        assert_eq!(a.answered(0, "request failed: connection refused"), None);
        assert_eq!(a.answered(0, "HTTP 404 Not Found"), None);
        assert_eq!(a.answered(0, "HTTP 503 Service Unavailable"), None);
        assert_eq!(a.answered(0, "HTTP 404 Not Found"), None);
        assert_eq!(a.answered(0, "HTTP 404 Not Found"), None);
        assert!(a.answered(0, "HTTP 404 Not Found").is_some());

        let mut a = Absent::default();
        for _ in 0..10 {
            assert_eq!(a.answered(1, "HTTP 404 Not Found"), None);
        }
    }

    /// A poke gets a sample now instead of at the next period, and the
    /// schedule goes on; a stop ends the loop after one last sample.
    #[test]
    fn a_poke_samples_now_and_a_stop_ends_the_loop() {
        let stop = Arc::new(StopSignal::default());
        let ticks = Arc::new(AtomicU32::new(0));
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let t = std::thread::spawn({
            let (stop, ticks) = (Arc::clone(&stop), Arc::clone(&ticks));
            move || {
                run_loop(&stop, Duration::from_secs(3600), ready_tx, || {
                    ticks.fetch_add(1, Ordering::SeqCst);
                    Tick::Continue
                })
            }
        });
        ready_rx.recv().unwrap();
        assert_eq!(ticks.load(Ordering::SeqCst), 1, "the first sample");
        let wait_for = |n: u32| {
            let until = Instant::now() + Duration::from_secs(5);
            while ticks.load(Ordering::SeqCst) < n && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(1));
            }
            ticks.load(Ordering::SeqCst)
        };
        let poked = Instant::now();
        stop.poke();
        assert_eq!(wait_for(2), 2, "a poke is one sample");
        assert!(poked.elapsed() < Duration::from_secs(5));
        stop.poke();
        assert_eq!(wait_for(3), 3);
        stop.stop();
        t.join().unwrap();
        assert_eq!(
            ticks.load(Ordering::SeqCst),
            4,
            "one last sample at the stop"
        );
    }
}
