//! `inferscope-bench overhead SUITE [--pairs N] [--negative-control blocking-sink|disk-write-sink]`:
//! the measured overhead gate of timeline capture (docs/ci.md, docs/artifacts.md).
//!
//! The suite runs `1 + 2·N` times in this process: one discarded capture-off warm-up run
//! (first-run costs: page faults, lazy statics, connection pools), then N interleaved
//! pairs of a capture-off run A and a capture-on run B, counterbalanced A B · B A · A B …
//! (each a full [`crate::runner::run`] with no console, no progress bar, and its own
//! directory under the work directory; [`analysis`] says why the order alternates). With a
//! negative control the capture-on runs use a deliberately bad sink
//! ([`crate::timeline::BlockingSink`], [`crate::timeline::DiskWriteSink`]).
//!
//! Per run ([`analysis::RunMeasure`]): workload throughput (successful requests per second
//! of job time), E2E p50 and each request's E2E (ms) from the run's report (the latency
//! effect compares the same requests across runs); the runner process's CPU time
//! (`getrusage`, user + system) and peak RSS (`VmHWM`, reset through
//! `/proc/self/clear_refs` before each run); the `/proc/self/io` `write_bytes` delta over
//! the measured window (report.json `capture.window_write_bytes`, read before the
//! artifacts are written); the GPU memory this process holds after the run (NVML
//! process lists — a CUDA context, once made, stays for the process's life; `unavailable`
//! without NVML, never 0). The runs are in-process, so the process figures
//! cover the whole runner, including the in-process simulator when the suite is
//! simulated.
//!
//! Budgets: the suite's `[overhead]` table ([`crate::gate::spec::OverheadSpec`];
//! docs/suite.md "`[overhead]`" defaults: ≤ 1 % workload effect, 0 capture disk bytes, 0 GPU bytes,
//! CPU ≤ 50 % of a core, peak RSS ≤ 512 MiB, 5 pairs). The estimator and decision rule are
//! documented in [`analysis`]. Exit status: 0 pass, 100 fail, 3 inconclusive, 2 bad input.

pub mod analysis;
pub mod measure;
pub(crate) mod render;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::gate::spec::OverheadSpec;
use crate::runner::{self, RunOptions, options::SinkChoice};
use crate::suite::{EndpointSetting, ResolvedSuite, Setting, SettingSource};

pub use analysis::{Evaluation, GateResult, GpuReading, OverheadOutcome, RunMeasure};
pub use render::render_text;

/// The negative controls of `--negative-control`: deliberately bad sinks the overhead gate
/// must fail (docs/measurement.md "Runner overhead (`overhead`)").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NegativeControl {
    /// Capture-on runs use [`crate::timeline::BlockingSink`] (2 ms stall per insert).
    BlockingSink,
    /// Capture-on runs use [`crate::timeline::DiskWriteSink`] (write + fsync per event).
    DiskWriteSink,
}

impl NegativeControl {
    /// `blocking-sink` or `disk-write-sink`.
    pub fn as_str(self) -> &'static str {
        match self {
            NegativeControl::BlockingSink => "blocking-sink",
            NegativeControl::DiskWriteSink => "disk-write-sink",
        }
    }
}

/// What the `overhead` command was asked (the flags of `crate::cli::OverheadArgs`, as
/// plain values).
#[derive(Debug, Clone)]
pub struct OverheadRequest {
    /// The suite file whose jobs are the workload.
    pub suite: PathBuf,
    /// Number of capture-off/capture-on pairs (default: the suite's `[overhead] pairs`).
    pub pairs: Option<u32>,
    /// A deliberately bad capture sink for the capture-on runs.
    pub negative_control: Option<NegativeControl>,
    /// Endpoint base URL; overrides the suite's.
    pub endpoint: Option<String>,
    /// Model name; overrides the suite's.
    pub model: Option<String>,
    /// Only jobs whose id contains this text (or matches this `*` glob).
    pub filter: Option<String>,
    /// Keep every run directory and write `overhead.json` here.
    pub out: Option<PathBuf>,
}

/// What [`measure`] needs.
pub struct OverheadPlan {
    /// The resolved suite(s) (capture is forced on/off per run).
    pub suites: Vec<ResolvedSuite>,
    /// Pairs to run (≥ 1).
    pub pairs: u32,
    /// Negative control for the capture-on runs.
    pub control: Option<NegativeControl>,
    /// Directory for the runs' directories (must exist, on a real disk for the
    /// disk-write control to be visible in `write_bytes`).
    pub work_dir: PathBuf,
}

impl OverheadPlan {
    /// The suite files as given, joined by `, ` (the report's `suite`, the header's list).
    pub fn suite_names(&self) -> String {
        self.suites
            .iter()
            .map(|s| s.suite.file.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// True when some suite's endpoint is the built-in (in-process) simulator.
    pub fn simulated(&self) -> bool {
        self.suites
            .iter()
            .any(|s| matches!(s.endpoint.value, EndpointSetting::Simulated))
    }
}

/// The command's result (`overhead.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OverheadReport {
    /// `inferscope-bench.overhead/v1`.
    pub schema: String,
    /// The suite file.
    pub suite: String,
    /// Whether the endpoint was the built-in simulator (in-process).
    pub simulated: bool,
    /// Pairs planned.
    pub pairs_planned: u32,
    /// The negative control, `null` for the real sink.
    pub negative_control: Option<NegativeControl>,
    /// The budgets used.
    pub budgets: OverheadSpec,
    /// The discarded warm-up run (`null` when cancelled before it finished).
    pub warmup: Option<RunMeasure>,
    /// The measured pairs `(off, on)`.
    pub pairs: Vec<(RunMeasure, RunMeasure)>,
    /// Verdicts.
    pub evaluation: Evaluation,
}

impl OverheadReport {
    /// 0 pass, 100 fail, 3 inconclusive.
    pub fn exit_status(&self) -> i32 {
        self.evaluation.exit_status()
    }
}

/// Schema id of `overhead.json`.
pub const OVERHEAD_SCHEMA: &str = "inferscope-bench.overhead/v1";

fn with_capture(suites: &[ResolvedSuite], on: bool) -> Vec<ResolvedSuite> {
    suites
        .iter()
        .cloned()
        .map(|mut s| {
            s.capture_timeline = Setting {
                value: on,
                source: SettingSource::Flag,
            };
            s
        })
        .collect()
}

async fn one_run(
    plan: &OverheadPlan,
    pair: u32,
    capture: bool,
    cancelled: &Arc<AtomicBool>,
) -> RunMeasure {
    let name = if pair == 0 {
        "warmup".to_string()
    } else {
        format!("pair-{pair:02}-{}", if capture { "on" } else { "off" })
    };
    let out = plan.work_dir.join(&name);
    let sink_override = match (capture, plan.control) {
        (true, Some(NegativeControl::BlockingSink)) => Some(SinkChoice::Blocking),
        (true, Some(NegativeControl::DiskWriteSink)) => Some(SinkChoice::DiskWrite(
            plan.work_dir.join(format!("{name}.control.jsonl")),
        )),
        _ => None,
    };
    let rss_reset = measure::reset_peak_rss();
    let cpu0 = measure::process_cpu_ns();
    let t0 = Instant::now();
    let outcome = runner::run_with(
        RunOptions {
            suites: with_capture(&plan.suites, capture),
            out: Some(out),
            sink_override,
        },
        cancelled.clone(),
        // No console: only the run's diagnostics, on stderr.
        runner::RunExtras {
            events: runner::events::EventSink::new(vec![Box::new(
                crate::reporter::Diagnostics::new(std::io::stderr()),
            )]),
            ..runner::RunExtras::default()
        },
    )
    .await;
    let wall_ns = t0.elapsed().as_nanos() as u64;
    let cpu1 = measure::process_cpu_ns();
    let peak_rss_bytes = measure::peak_rss_bytes();
    let gpu = measure::runner_gpu_bytes();
    // A load job's records are in requests.jsonl (streamed as its units ended).
    let mut with_records = outcome.report.clone();
    if let Err(e) = crate::records::read_into(&outcome.run_dir, &mut with_records) {
        eprintln!("warning: overhead: {e}");
    }
    let w = measure::workload_figures(&with_records);
    let rep = &outcome.report;
    RunMeasure {
        pair,
        capture,
        requests_ok: w.ok,
        requests_failed: w.failed,
        workload_ns: w.workload_ns,
        throughput_rps: w.throughput_rps,
        e2e_p50_ms: w.e2e_p50_ms,
        request_e2e_ms: w.request_e2e_ms,
        wall_ns,
        cpu_ns: match (cpu0, cpu1) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        },
        peak_rss_bytes,
        rss_reset,
        window_write_bytes: rep.capture.window_write_bytes,
        gpu,
        jobs_passed: rep.summary.passed,
        jobs: rep.summary.jobs,
        capture_events: rep.capture.events,
        capture_quality: rep.capture.quality.map(|q| q.as_str().to_string()),
    }
}

/// Runs the warm-up and the interleaved pairs of `plan` and evaluates them against
/// `budgets`. `progress` receives one line per finished run. Stops early (and the
/// workload gates become inconclusive) when `cancelled` is set.
pub async fn measure(
    plan: &OverheadPlan,
    budgets: &OverheadSpec,
    cancelled: Arc<AtomicBool>,
    mut progress: impl FnMut(&RunMeasure),
) -> OverheadReport {
    let mut warmup = None;
    let mut pairs = Vec::new();
    if !cancelled.load(Ordering::Relaxed) {
        let w = one_run(plan, 0, false, &cancelled).await;
        progress(&w);
        warmup = Some(w);
    }
    for i in 1..=plan.pairs {
        if cancelled.load(Ordering::Relaxed) {
            break;
        }
        // Counterbalanced: A B in odd pairs, B A in even pairs (see `analysis`).
        let off_first = i % 2 == 1;
        let first = one_run(plan, i, !off_first, &cancelled).await;
        progress(&first);
        let second = one_run(plan, i, off_first, &cancelled).await;
        progress(&second);
        pairs.push(if off_first {
            (first, second)
        } else {
            (second, first)
        });
    }
    let was_cancelled = cancelled.load(Ordering::Relaxed);
    let evaluation = analysis::evaluate(&pairs, budgets, was_cancelled);
    OverheadReport {
        schema: OVERHEAD_SCHEMA.into(),
        suite: plan.suite_names(),
        simulated: plan.simulated(),
        pairs_planned: plan.pairs,
        negative_control: plan.control,
        budgets: budgets.clone(),
        warmup,
        pairs,
        evaluation,
    }
}
