//! Pure evaluation of the overhead measurements against the `[overhead]` budgets
//! (docs/measurement.md "Runner overhead (`overhead`)": noisy or thin evidence is
//! inconclusive). No I/O.
//!
//! # Workload effect estimator
//!
//! Runs are interleaved and counterbalanced: pair *i* is one capture-off run (A) and
//! one capture-on run (B), back to back, A first in odd pairs and B first in even pairs
//! (A B · B A · A B · …), so a drift or an order effect (the second run of a pair being
//! slower on a loaded machine) adds to half the pairs and subtracts from the other half
//! instead of posing as a capture effect. The effect of capture in one pair, percent
//! (positive = the workload is slower with capture):
//!
//! - throughput drop: `(1 − thr_B / thr_A) · 100`, `thr` = successful requests per
//!   second of job time;
//! - latency rise: the median over the requests both runs made (matched by request id;
//!   the workload is the same in every run) of `(e2e_B / e2e_A − 1) · 100`. Matching
//!   requests compares like with like; a run-level E2E p50 of a handful of requests from
//!   a bimodal mix (tool-call turns and final answers) jumps between modes.
//!
//! The estimate is the **median of the pair effects**. The **noise** is the larger of
//! two spreads:
//!
//! - the pair spread: the half-range of the pair effects, `(max − min) / 2`;
//! - the null floor: the largest `|effect|` between consecutive runs of the same
//!   configuration, A*i* → A*i+1* and B*i* → B*i+1* (same statistic): what comparing
//!   the runner with itself shows. With few pairs the pair spread alone can be near zero
//!   by chance (two pairs that happen to agree); these null comparisons bound the noise
//!   from below.
//!
//! Both are deliberately conservative (the half-range exceeds the standard error of the
//! median for every pair count ≥ 2), so the rule below errs towards `inconclusive`,
//! never towards a false `pass` or `fail`. With budget `B` (%):
//!
//! 1. fewer than 2 pairs, or a missing figure in any pair → `inconclusive`;
//! 2. `median − noise > B` → `fail` (the effect exceeds the budget beyond the noise);
//! 3. `noise > B` → `inconclusive` (the noise is wider than the budget);
//! 4. `median + noise ≤ B` → `pass`;
//! 5. otherwise → `inconclusive` (the estimate straddles the budget).
//!
//! # Absolute figures
//!
//! - capture disk bytes: per pair `max(0, on − off)` of the `/proc/self/io`
//!   `write_bytes` delta over the measured window (the off run's writes are the
//!   workload's own, e.g. an SWE harness); the figure is the maximum over pairs.
//! - runner GPU bytes: the maximum over capture-on runs of the GPU memory the runner
//!   process holds (NVML process list); unavailable without NVML — never 0.
//! - runner CPU: per capture-on run, CPU time (user + system) per wall second of that
//!   run, percent of one core; the figure is the maximum over capture-on runs.
//! - runner peak RSS: per capture-on run, `VmHWM` after resetting the high-water mark;
//!   the figure is the maximum over capture-on runs, MiB.
//!
//! An absolute figure that is unavailable gives the verdict `unavailable`, which makes
//! the overall verdict at best `inconclusive` (never a pass on missing evidence).
//!
//! # Overall verdict
//!
//! Any gate `fail` → `fail` (exit 100); else any gate `inconclusive` or `unavailable` →
//! `inconclusive` (exit 3); else `pass` (exit 0).

use serde::{Deserialize, Serialize};

use crate::gate::format_number;
use crate::gate::spec::OverheadSpec;
use crate::model::exit::ExitCode;

/// The GPU memory the runner process held, from the NVML process lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum GpuReading {
    /// NVML answered: the runner holds `bytes` of GPU memory on all devices together
    /// (0 when its PID is in no process list).
    Measured {
        /// Bytes.
        bytes: u64,
    },
    /// No answer (no NVML, no device, query not supported, PIDs from another PID
    /// namespace); never read as 0.
    Unavailable {
        /// Why.
        reason: String,
    },
}

impl GpuReading {
    /// The bytes when measured.
    pub fn bytes(&self) -> Option<u64> {
        match self {
            GpuReading::Measured { bytes } => Some(*bytes),
            GpuReading::Unavailable { .. } => None,
        }
    }
}

/// The measurements of one run (one full `runner::run` of the suite).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunMeasure {
    /// Pair number, 1-based (0 = the discarded warm-up run).
    pub pair: u32,
    /// Whether timeline capture was on.
    pub capture: bool,
    /// Requests that succeeded.
    pub requests_ok: u64,
    /// Requests that failed.
    pub requests_failed: u64,
    /// Sum of the jobs' durations (first step start to last step end per job), ns: the
    /// workload's own time.
    pub workload_ns: u64,
    /// `requests_ok / workload_ns`, requests/s; `null` without successes.
    pub throughput_rps: Option<f64>,
    /// E2E p50 over the run's successful streamed requests, ms (linear interpolation,
    /// `h = (n−1)·q`); `null` without any.
    pub e2e_p50_ms: Option<f64>,
    /// E2E of every successful request by request id, ms, in request order (the input of
    /// the matched latency effect).
    pub request_e2e_ms: Vec<(String, f64)>,
    /// Wall time of the whole `runner::run` call, ns (monotonic clock).
    pub wall_ns: u64,
    /// CPU time of the runner process (user + system, all threads) over the same span, ns;
    /// `null` when `getrusage` failed.
    pub cpu_ns: Option<u64>,
    /// Peak RSS (`VmHWM`) over the run, bytes; `null` when unreadable.
    pub peak_rss_bytes: Option<u64>,
    /// Whether the high-water mark was reset before the run (`/proc/self/clear_refs`);
    /// when false `peak_rss_bytes` is the process-lifetime peak (an upper bound).
    pub rss_reset: bool,
    /// `/proc/self/io` `write_bytes` delta over the measured window (report.json
    /// `capture.window_write_bytes`), bytes; `null` when unreadable.
    pub window_write_bytes: Option<u64>,
    /// GPU memory the runner process held after the run.
    pub gpu: GpuReading,
    /// Jobs that passed / ran.
    pub jobs_passed: usize,
    /// Jobs that ran.
    pub jobs: usize,
    /// Capture events kept (`null` when capture was off).
    pub capture_events: Option<u64>,
    /// Capture quality (`complete`, `partial`, `unavailable`; `null` when off).
    pub capture_quality: Option<String>,
}

impl RunMeasure {
    /// CPU time per wall second, percent of one core; `null` without a CPU reading or a
    /// zero-length run.
    pub fn cpu_pct(&self) -> Option<f64> {
        match (self.cpu_ns, self.wall_ns) {
            (Some(c), w) if w > 0 => Some(c as f64 / w as f64 * 100.0),
            _ => None,
        }
    }
}

/// Outcome of one overhead gate, or of the whole command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverheadOutcome {
    /// Within budget beyond the noise.
    Pass,
    /// Over budget beyond the noise.
    Fail,
    /// The noise is wider than the budget, the estimate straddles it, or evidence is
    /// insufficient.
    Inconclusive,
    /// The figure could not be measured.
    Unavailable,
}

impl OverheadOutcome {
    /// `pass`, `fail`, `inconclusive`, `unavailable`.
    pub fn as_str(self) -> &'static str {
        match self {
            OverheadOutcome::Pass => "pass",
            OverheadOutcome::Fail => "fail",
            OverheadOutcome::Inconclusive => "inconclusive",
            OverheadOutcome::Unavailable => "unavailable",
        }
    }
}

/// A pair-ratio estimate of a workload effect, percent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EffectEstimate {
    /// The effect of each pair, percent (`null` where a figure was missing).
    pub pair_effects_pct: Vec<Option<f64>>,
    /// The null effects between consecutive runs of the same configuration, percent:
    /// A1→A2, B1→B2, A2→A3, B2→B3, …
    pub null_effects_pct: Vec<Option<f64>>,
    /// Median of the pair effects, percent; `null` when any pair lacks a figure.
    pub median_pct: Option<f64>,
    /// Half-range of the pair effects, `(max − min) / 2`, percent; `null` likewise.
    pub pair_half_range_pct: Option<f64>,
    /// Null floor: the largest `|null effect|`, percent; `null` with fewer than 2 pairs
    /// or a missing figure.
    pub null_floor_pct: Option<f64>,
    /// The noise: the larger of the two spreads, percent; `null` when either is.
    pub noise_pct: Option<f64>,
}

/// Throughput drop from `a` to `b`, percent: `(1 − thr_b / thr_a) · 100`; `None` when a
/// figure is missing or `thr_a` is not positive.
pub fn throughput_effect(a: &RunMeasure, b: &RunMeasure) -> Option<f64> {
    let (x, y) = (a.throughput_rps?, b.throughput_rps?);
    (x > 0.0 && y.is_finite()).then(|| (1.0 - y / x) * 100.0)
}

/// Latency rise from `a` to `b`, percent: the median over request ids present in both
/// runs of `(e2e_b / e2e_a − 1) · 100`; `None` when no request matches.
pub fn latency_effect(a: &RunMeasure, b: &RunMeasure) -> Option<f64> {
    let base: std::collections::HashMap<&str, f64> = a
        .request_e2e_ms
        .iter()
        .map(|(id, v)| (id.as_str(), *v))
        .collect();
    let ratios: Vec<f64> = b
        .request_e2e_ms
        .iter()
        .filter_map(|(id, v)| {
            let x = *base.get(id.as_str())?;
            (x > 0.0 && v.is_finite()).then(|| (v / x - 1.0) * 100.0)
        })
        .collect();
    median(&ratios)
}

/// Median (mean of the middle two for an even count); `None` when empty.
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

fn half_range(v: &[f64]) -> f64 {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (hi - lo) / 2.0
}

/// Estimates an effect over `pairs` (`(off, on)`, in run order) with the pair statistic
/// `effect(from, to)` (see the module docs).
pub fn estimate(
    pairs: &[(RunMeasure, RunMeasure)],
    effect: impl Fn(&RunMeasure, &RunMeasure) -> Option<f64>,
) -> EffectEstimate {
    let pair_effects_pct: Vec<Option<f64>> = pairs.iter().map(|(a, b)| effect(a, b)).collect();
    let null_effects_pct: Vec<Option<f64>> = pairs
        .windows(2)
        .flat_map(|w| [effect(&w[0].0, &w[1].0), effect(&w[0].1, &w[1].1)])
        .collect();
    let all: Option<Vec<f64>> = pair_effects_pct.iter().copied().collect();
    let nulls: Option<Vec<f64>> = null_effects_pct.iter().copied().collect();
    let median_pct = all.as_deref().and_then(median);
    let pair_half_range_pct = all.as_deref().filter(|v| !v.is_empty()).map(half_range);
    let null_floor_pct = nulls
        .filter(|v| !v.is_empty())
        .map(|v| v.iter().map(|x| x.abs()).fold(0.0, f64::max));
    let noise_pct = match (pair_half_range_pct, null_floor_pct) {
        (Some(s), Some(f)) => Some(s.max(f)),
        _ => None,
    };
    EffectEstimate {
        pair_effects_pct,
        null_effects_pct,
        median_pct,
        pair_half_range_pct,
        null_floor_pct,
        noise_pct,
    }
}

/// The decision rule of the module docs for one workload effect against `budget_pct`.
/// Returns the outcome and the reason in words.
pub fn judge_effect(est: &EffectEstimate, budget_pct: f64) -> (OverheadOutcome, String) {
    let n = est.pair_effects_pct.len();
    if n < 2 {
        return (
            OverheadOutcome::Inconclusive,
            format!(
                "insufficient evidence: {n} pair(s); at least 2 are needed to estimate the noise"
            ),
        );
    }
    let (Some(m), Some(noise)) = (est.median_pct, est.noise_pct) else {
        return (
            OverheadOutcome::Inconclusive,
            "insufficient evidence: a figure is missing in some run".into(),
        );
    };
    let b = format_number(budget_pct);
    let (mt, nt) = (format_number(m), format_number(noise));
    if m - noise > budget_pct {
        (
            OverheadOutcome::Fail,
            format!("median {mt}% − noise {nt}% exceeds the budget {b}%"),
        )
    } else if noise > budget_pct {
        (
            OverheadOutcome::Inconclusive,
            format!(
                "noise ±{nt}% (pair spread or null floor over {n} pairs) is wider than the budget {b}%"
            ),
        )
    } else if m + noise <= budget_pct {
        (
            OverheadOutcome::Pass,
            format!("median {mt}% + noise {nt}% is within the budget {b}%"),
        )
    } else {
        (
            OverheadOutcome::Inconclusive,
            format!("median {mt}% ± {nt}% straddles the budget {b}%"),
        )
    }
}

/// The gate `gate` on the absolute figure `figure`: `value <= bound` (in `unit`) passes,
/// above fails; unavailable (naming `why_missing`) when `value` is `None`. No noise term.
fn absolute_gate(
    gate: &str,
    figure: &str,
    value: Option<f64>,
    bound: f64,
    unit: &str,
    why_missing: &str,
) -> GateResult {
    let u = |v: f64| {
        if unit.is_empty() {
            format_number(v)
        } else {
            format!("{} {unit}", format_number(v))
        }
    };
    let (outcome, reason) = match value {
        None => (
            OverheadOutcome::Unavailable,
            format!("unavailable ({why_missing})"),
        ),
        Some(v) if v <= bound => (OverheadOutcome::Pass, format!("{} <= {}", u(v), u(bound))),
        Some(v) => (OverheadOutcome::Fail, format!("{} > {}", u(v), u(bound))),
    };
    GateResult {
        gate: gate.into(),
        figure: figure.into(),
        value,
        noise: None,
        bound,
        unit: unit.into(),
        outcome,
        reason,
    }
}

/// One gate's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GateResult {
    /// Gate key in `[overhead]`, e.g. `max_workload_effect_pct`.
    pub gate: String,
    /// The figure, e.g. `throughput_drop_pct`.
    pub figure: String,
    /// Its value in `unit` (`null` when unavailable).
    pub value: Option<f64>,
    /// Noise (± in `unit`) for pair-ratio figures, `null` for absolute ones.
    pub noise: Option<f64>,
    /// The budget in `unit`.
    pub bound: f64,
    /// `%`, `bytes`, `MiB`.
    pub unit: String,
    /// The outcome.
    pub outcome: OverheadOutcome,
    /// Why, in words (names figure, value, noise and bound).
    pub reason: String,
}

/// Everything the command concluded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Throughput drop estimate.
    pub throughput: EffectEstimate,
    /// E2E rise estimate (matched requests).
    pub latency: EffectEstimate,
    /// Per gate, in table order.
    pub gates: Vec<GateResult>,
    /// The overall outcome (never `unavailable`).
    pub outcome: OverheadOutcome,
    /// Problems that invalidate the workload comparison (failed requests, cancelled).
    pub warnings: Vec<String>,
}

impl Evaluation {
    /// 0 pass, 100 fail, 3 inconclusive.
    pub fn exit_status(&self) -> i32 {
        match self.outcome {
            OverheadOutcome::Pass => ExitCode::OK,
            OverheadOutcome::Fail => ExitCode::FAILED,
            OverheadOutcome::Inconclusive | OverheadOutcome::Unavailable => ExitCode::INCONCLUSIVE,
        }
    }
}

fn max_opt<I: IntoIterator<Item = Option<f64>>>(it: I) -> Option<f64> {
    let mut out: Option<f64> = None;
    let mut any = false;
    for v in it {
        any = true;
        let v = v?;
        out = Some(out.map_or(v, |o: f64| o.max(v)));
    }
    if any { out } else { None }
}

/// Evaluates interleaved runs (`pairs[i] = (off, on)`) against `spec`. When a request
/// failed in any run, or the measurement was `cancelled` (Ctrl-C) before every planned
/// pair ran, the workload-effect gates are `inconclusive` whatever the figures say, and
/// a warning says why.
pub fn evaluate(
    pairs: &[(RunMeasure, RunMeasure)],
    spec: &OverheadSpec,
    cancelled: bool,
) -> Evaluation {
    let mut warnings = Vec::new();
    if cancelled {
        warnings.push("cancelled before every planned pair ran".to_string());
    }
    let throughput = estimate(pairs, throughput_effect);
    let latency = estimate(pairs, latency_effect);
    let failed_requests: u64 = pairs
        .iter()
        .map(|(a, b)| a.requests_failed + b.requests_failed)
        .sum();
    if failed_requests > 0 {
        warnings.push(format!(
            "{failed_requests} request(s) failed across the runs: the workload comparison is not valid"
        ));
    }
    let workload_valid = failed_requests == 0 && !cancelled;
    let budget = spec.max_workload_effect_pct;
    let mut gates = Vec::new();
    for (figure, est) in [
        ("throughput_drop_pct", &throughput),
        ("e2e_rise_pct", &latency),
    ] {
        let (mut outcome, mut reason) = judge_effect(est, budget);
        if !workload_valid && outcome != OverheadOutcome::Inconclusive {
            outcome = OverheadOutcome::Inconclusive;
            reason = format!("{reason}; but the workload comparison is not valid (see warnings)");
        }
        gates.push(GateResult {
            gate: "max_workload_effect_pct".into(),
            figure: figure.into(),
            value: est.median_pct,
            noise: est.noise_pct,
            bound: budget,
            unit: "%".into(),
            outcome,
            reason,
        });
    }
    // Capture disk bytes: max over pairs of max(0, on − off).
    let disk =
        max_opt(pairs.iter().map(
            |(a, b)| match (a.window_write_bytes, b.window_write_bytes) {
                (Some(off), Some(on)) => Some(on.saturating_sub(off) as f64),
                _ => None,
            },
        ));
    gates.push(absolute_gate(
        "max_capture_disk_bytes",
        "capture_window_write_bytes",
        disk,
        spec.max_capture_disk_bytes as f64,
        "bytes",
        "/proc/self/io unreadable",
    ));
    // GPU bytes of the runner process over capture-on runs.
    let gpu = max_opt(pairs.iter().map(|(_, b)| b.gpu.bytes().map(|x| x as f64)));
    let gpu_why = pairs
        .iter()
        .find_map(|(_, b)| match &b.gpu {
            GpuReading::Unavailable { reason } => Some(reason.clone()),
            GpuReading::Measured { .. } => None,
        })
        .unwrap_or_else(|| "no capture-on run".into());
    gates.push(absolute_gate(
        "max_gpu_bytes",
        "runner_gpu_bytes",
        gpu,
        spec.max_gpu_bytes as f64,
        "bytes",
        &gpu_why,
    ));
    let cpu = max_opt(pairs.iter().map(|(_, b)| b.cpu_pct()));
    gates.push(absolute_gate(
        "max_runner_cpu_pct",
        "runner_cpu_pct",
        cpu,
        spec.max_runner_cpu_pct,
        "%",
        "getrusage failed",
    ));
    let rss = max_opt(
        pairs
            .iter()
            .map(|(_, b)| b.peak_rss_bytes.map(|x| x as f64 / (1024.0 * 1024.0))),
    );
    gates.push(absolute_gate(
        "max_runner_rss_mib",
        "runner_peak_rss_mib",
        rss,
        spec.max_runner_rss_mib as f64,
        "MiB",
        "/proc/self/status VmHWM unreadable",
    ));
    let outcome = if pairs.is_empty() {
        OverheadOutcome::Inconclusive
    } else if gates.iter().any(|g| g.outcome == OverheadOutcome::Fail) {
        OverheadOutcome::Fail
    } else if gates.iter().all(|g| g.outcome == OverheadOutcome::Pass) {
        OverheadOutcome::Pass
    } else {
        OverheadOutcome::Inconclusive
    };
    Evaluation {
        throughput,
        latency,
        gates,
        outcome,
        warnings,
    }
}

#[cfg(test)]
mod tests;
