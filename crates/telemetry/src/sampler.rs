//! Sampler threads: one per source, a deadline-based loop, a shared stop signal.

use super::metrics::{MetricsTracker, build_client, scrape};
use super::power::{GpuDevice, GpuSampler, PowerSample, ProbeSampler, nvml};
use super::proc::{ProcOutcome, ProcReader, ProcSample, clk_tck};
use super::profile::map_exposition;
use super::prom::{ExpositionFormat, format_from_content_type, parse_exposition};
use super::{
    GpuConfig, MetricsConfig, MetricsSample, MetricsTimeline, PowerTimeline, ProcConfig,
    ProcTimeline, ScrapeGap, SourceStatus, TelemetryConfig, TelemetryRun,
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

/// The stop flag shared by the handle and the sampler threads.
#[derive(Default)]
struct StopSignal {
    stopped: Mutex<bool>,
    cv: Condvar,
}

impl StopSignal {
    fn stop(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }

    /// Waits until `deadline` or stop; returns `true` when stopped.
    fn wait_until(&self, deadline: Instant) -> bool {
        let mut g = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if *g {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
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
        let stopped = stop.wait_until(deadline);
        if matches!(tick(), Tick::Finish) || stopped {
            return;
        }
        k = k.saturating_add(1);
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
}

#[derive(Clone)]
struct Configured {
    proc: Option<(ProcConfig, u64)>,
    power: Option<(bool, u64)>,
    metrics: Option<(MetricsConfig, u64)>,
}

/// Starts the configured samplers and returns once each has taken its first sample (or
/// failed to start); the threads stamp samples with `clock`. Never fails: a source that cannot
/// run reports it in its status. Source: issue 5 item 2, docs/samples.md.
pub fn start(config: TelemetryConfig, clock: &RunClock) -> TelemetryHandle {
    let stop = Arc::new(StopSignal::default());
    let started_elapsed_ns = clock.elapsed_ns();
    let cap = config.max_samples_per_source.max(1);
    let period = config.period;
    let mut threads = Vec::new();
    let mut failed = Vec::new();
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
        spawn(
            "power",
            Box::new(move || {
                SourceResult::Power(power_thread(gpu, opener, probes, period, cap, &s, &c, r))
            }),
        );
    }
    if let Some(mc) = config.metrics.clone() {
        let (s, c, r) = (stop.clone(), clock.clone(), ready_tx.clone());
        spawn(
            "metrics",
            Box::new(move || SourceResult::Metrics(Box::new(metrics_thread(mc, cap, &s, &c, r)))),
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
    }
}

impl TelemetryHandle {
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
                            gpus.push(GpuSampler::selected(sel, i as u32));
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
    let mut buf: Bounded<PowerSample> = Bounded::new(cap.saturating_mul(n_dev));
    if !gpus.is_empty() || !probes.is_empty() {
        run_loop(stop, period, ready, || {
            for g in gpus.iter_mut().filter(|g| !g.is_lost()) {
                let s = g.sample(clock.elapsed_ns());
                buf.push(s);
            }
            for p in probes.iter_mut() {
                let s = p.sample(clock.elapsed_ns());
                buf.push(s);
            }
            Tick::Continue
        });
    } else {
        let _ = ready.send(());
    }
    let mut devices: Vec<_> = gpus.iter().map(|g| g.describe()).collect();
    if !gpus.is_empty()
        && devices
            .iter()
            .all(|d| !matches!(d.status, SourceStatus::Ok))
    {
        let reasons: Vec<String> = devices
            .iter()
            .map(|d| match &d.status {
                SourceStatus::Unavailable { reason }
                | SourceStatus::Ended { reason, .. }
                | SourceStatus::Failed { reason } => format!("{}: {reason}", d.label),
                SourceStatus::Ok => String::new(),
            })
            .collect();
        gpu_status = Some(SourceStatus::Unavailable {
            reason: reasons.join("; "),
        });
    }
    devices.extend(probes.iter().map(|p| p.describe()));
    let mut t = PowerTimeline {
        gpu_status,
        period_ns: period.as_nanos() as u64,
        devices,
        sample_count: buf.items.len() as u64,
        dropped: buf.dropped,
        gpu_notes,
        samples: buf.items,
    };
    t.compute_energy();
    t
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
        gaps: Vec::new(),
        parse_errors: 0,
        counter_resets: Default::default(),
        mapping: Default::default(),
        notes: Vec::new(),
        sample_count: 0,
        dropped: 0,
        prometheus: None,
        samples: Vec::new(),
    }
}

fn metrics_thread(
    mc: MetricsConfig,
    cap: usize,
    stop: &StopSignal,
    clock: &RunClock,
    ready: mpsc::SyncSender<()>,
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
    let client = match build_client(mc.timeout) {
        Ok(c) => c,
        Err(reason) => {
            t.status = SourceStatus::Failed { reason };
            let _ = ready.send(());
            return t;
        }
    };
    let mut tracker = MetricsTracker::new();
    let mut buf: Bounded<MetricsSample> = Bounded::new(cap);
    let mut last_error: Option<String> = None;
    run_loop(stop, mc.period, ready, || {
        let sent = clock.elapsed_ns();
        let res = rt.block_on(scrape(&client, &mc.url));
        let done = clock.elapsed_ns();
        match res {
            Ok((body, ct)) => {
                t.scrapes_ok += 1;
                let expo = parse_exposition(&body, format_from_content_type(ct.as_deref()));
                t.parse_errors += expo.errors.len() as u64;
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
                for (k, v) in &snap.mapping {
                    t.mapping.insert(k.clone(), v.clone());
                }
                for n in &snap.notes {
                    if t.notes.len() < MAX_NOTES && !t.notes.contains(n) {
                        t.notes.push(n.clone());
                    }
                }
                buf.push(tracker.ingest(sent, done, &snap));
            }
            Err(reason) => {
                t.scrapes_failed += 1;
                if t.gaps.len() < MAX_GAPS {
                    t.gaps.push(ScrapeGap {
                        elapsed_ns: done,
                        reason: reason.clone(),
                    });
                }
                last_error = Some(reason);
            }
        }
        Tick::Continue
    });
    if t.scrapes_ok == 0 {
        t.status = SourceStatus::Unavailable {
            reason: last_error.unwrap_or_else(|| "no scrape succeeded".into()),
        };
    }
    t.counter_resets = tracker.resets();
    t.sample_count = buf.items.len() as u64;
    t.dropped = buf.dropped;
    t.samples = buf.items;
    t
}
