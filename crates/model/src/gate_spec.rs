//! Gate and overhead-budget declarations as written in a suite's `[gates]` and
//! `[overhead]` tables (docs/suite.md; the figures: docs/measurement.md "Gate figures", the
//! budgets: docs/measurement.md "Runner overhead (`overhead`)"). Pure data: evaluation lives
//! in the gate crate (`inferscope_gate`); a shard's report carries a load job's effective
//! spec ([`crate::shard::JobShare`]), so the data lives in the model.
//!
//! Every field is optional; an absent bound is not evaluated. Unknown keys are rejected
//! (`deny_unknown_fields`) so a typo never silently disables a gate (field case C31).

use serde::{Deserialize, Serialize};

/// Upper bounds on the percentiles of one latency figure, in milliseconds.
///
/// Percentiles use linear interpolation between closest ranks, `h = (n−1)·q`
/// (field case C26).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PercentileBounds {
    /// Maximum p50, ms.
    pub p50: Option<f64>,
    /// Maximum p90, ms.
    pub p90: Option<f64>,
    /// Maximum p95, ms.
    pub p95: Option<f64>,
    /// Maximum p99, ms.
    pub p99: Option<f64>,
    /// Maximum mean, ms.
    pub mean: Option<f64>,
}

/// What a gate does when its figure is unavailable (no GPU, no usage, no cache report).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WhenUnavailable {
    /// The gate fails with the verdict `unavailable` (the default: no pass on missing data).
    #[default]
    Fail,
    /// The gate is skipped and reported as `skipped`.
    Skip,
}

/// The `[gates]` table of a suite (applies to every job) or of a job (overrides the
/// suite's bounds field by field).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GateSpec {
    /// TTFT bounds (ms): arrival of the first token event after the request was sent.
    pub ttft_ms: Option<PercentileBounds>,
    /// ITL bounds (ms): one sample per gap between consecutive token events.
    pub itl_ms: Option<PercentileBounds>,
    /// TPOT bounds (ms): `(last_token − ttft) / (output_tokens − 1)` per request.
    pub tpot_ms: Option<PercentileBounds>,
    /// E2E bounds (ms): send to `[DONE]` (or clean EOF).
    pub e2e_ms: Option<PercentileBounds>,
    /// Maximum fraction (0..=1) of requests that failed (transport, protocol, HTTP status).
    /// Not declared, a job that made requests gets the built-in bound 0: a failed request
    /// fails its job unless the suite tolerates an error rate.
    pub max_error_rate: Option<f64>,
    /// Minimum fraction (0..=1) of graded units (trajectories, jobs) that passed grading.
    pub min_grade_pass_rate: Option<f64>,
    /// Minimum tokens per joule of the job: its successful requests' output tokens over the
    /// device energy of its windows (`docs/figures.md`).
    pub min_tokens_per_joule: Option<f64>,
    /// Minimum prefix-cache hit rate (0..=1): cached prompt tokens / prompt tokens over
    /// requests that reported cached tokens.
    pub min_cache_hit_rate: Option<f64>,
    /// Maximum energy per trajectory, joules: the job's window energy over the trajectories
    /// it ran (the mean trajectory).
    pub max_energy_per_trajectory_j: Option<f64>,
    /// Maximum regression against a saved baseline, percent (issue: load and comparison).
    pub regression_pct: Option<f64>,
    /// Maximum fraction (0..=1) of the successful requests that asked for a fixed output
    /// length (`output_tokens`) and came back shorter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_short_output_rate: Option<f64>,
    /// Behaviour of every gate in this table when its figure is unavailable.
    pub when_unavailable: Option<WhenUnavailable>,
}

impl GateSpec {
    /// This table with every bound that `over` sets replacing ours (job over suite).
    pub fn merged_with(&self, over: &GateSpec) -> GateSpec {
        fn pick<T: Clone>(base: &Option<T>, over: &Option<T>) -> Option<T> {
            over.clone().or_else(|| base.clone())
        }
        fn pct(
            base: &Option<PercentileBounds>,
            over: &Option<PercentileBounds>,
        ) -> Option<PercentileBounds> {
            match (base, over) {
                (None, None) => None,
                (Some(b), None) => Some(b.clone()),
                (None, Some(o)) => Some(o.clone()),
                (Some(b), Some(o)) => Some(PercentileBounds {
                    p50: o.p50.or(b.p50),
                    p90: o.p90.or(b.p90),
                    p95: o.p95.or(b.p95),
                    p99: o.p99.or(b.p99),
                    mean: o.mean.or(b.mean),
                }),
            }
        }
        GateSpec {
            ttft_ms: pct(&self.ttft_ms, &over.ttft_ms),
            itl_ms: pct(&self.itl_ms, &over.itl_ms),
            tpot_ms: pct(&self.tpot_ms, &over.tpot_ms),
            e2e_ms: pct(&self.e2e_ms, &over.e2e_ms),
            max_error_rate: pick(&self.max_error_rate, &over.max_error_rate),
            min_grade_pass_rate: pick(&self.min_grade_pass_rate, &over.min_grade_pass_rate),
            min_tokens_per_joule: pick(&self.min_tokens_per_joule, &over.min_tokens_per_joule),
            min_cache_hit_rate: pick(&self.min_cache_hit_rate, &over.min_cache_hit_rate),
            max_energy_per_trajectory_j: pick(
                &self.max_energy_per_trajectory_j,
                &over.max_energy_per_trajectory_j,
            ),
            regression_pct: pick(&self.regression_pct, &over.regression_pct),
            max_short_output_rate: pick(&self.max_short_output_rate, &over.max_short_output_rate),
            when_unavailable: pick(&self.when_unavailable, &over.when_unavailable),
        }
    }
}

/// The `[overhead]` table: budgets for `inferscope-bench overhead` (docs/ci.md, docs/artifacts.md).
/// Defaults follow the docs/artifacts.md: ≤ 1 % workload effect, zero capture disk bytes, zero GPU bytes.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct OverheadSpec {
    /// Maximum workload effect (throughput drop or latency rise), percent. Default 1.0.
    pub max_workload_effect_pct: f64,
    /// Maximum bytes the runner writes to disk during the measured window with capture on.
    /// Default 0.
    pub max_capture_disk_bytes: u64,
    /// Maximum GPU memory the runner process allocates, bytes. Default 0.
    pub max_gpu_bytes: u64,
    /// Maximum runner CPU time per measured second, percent of one core. Default 50.
    pub max_runner_cpu_pct: f64,
    /// Maximum runner peak RSS, MiB. Default 512.
    pub max_runner_rss_mib: u64,
    /// Number of capture-off/capture-on pairs. Default 5.
    pub pairs: u32,
}

impl Default for OverheadSpec {
    fn default() -> Self {
        Self {
            max_workload_effect_pct: 1.0,
            max_capture_disk_bytes: 0,
            max_gpu_bytes: 0,
            max_runner_cpu_pct: 50.0,
            max_runner_rss_mib: 512,
            pairs: 5,
        }
    }
}
