//! The measured figures gates read, each with its basis or the reason it is unavailable.
//!
//! A [`Figure`] is `value: Option<f64>` plus `basis` (how it was obtained: `client timing`,
//! `server usage`, energy `simulated` / `measured` / `apportioned`, …) plus, when the value is
//! missing, a `reason` (no GPU, no usage, no successful request). Missing is `None`, never 0.

use crate::stats::{JobStats, Summary};
use serde::{Deserialize, Serialize};

/// Basis labels used by the product (free text is allowed; these keep outputs consistent).
pub mod basis {
    /// Latencies measured by the runner's client on the run's monotonic clock.
    pub const CLIENT_TIMING: &str = "client timing";
    /// Counts of request outcomes observed by the client (success, failure codes).
    pub const REQUEST_OUTCOMES: &str = "request outcomes";
    /// Token counts from the server's `usage` object.
    pub const SERVER_USAGE: &str = "server usage";
    /// Deterministic grading checks.
    pub const GRADING: &str = "grading";
    /// Energy from the simulator's power model (never a measurement of hardware).
    pub const SIMULATED: &str = "simulated";
    /// Energy measured on the device at controlled concurrency (one trajectory in flight).
    pub const MEASURED: &str = "measured";
    /// Energy split between trajectories in flight together (ADR-013's wall): not measured.
    pub const APPORTIONED: &str = "apportioned";
    /// A comparison against a saved baseline run.
    pub const BASELINE: &str = "baseline comparison";
}

/// One gated figure: its value (units of the gate's bound), how it was obtained, and why it
/// is missing when it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// The value, in the unit of the bound that gates it; `None` when unavailable.
    pub value: Option<f64>,
    /// How the value was (or would have been) obtained, e.g. `client timing`, `measured`.
    pub basis: String,
    /// Why the value is unavailable (`None` when it is available).
    pub reason: Option<String>,
}

impl Figure {
    /// An available figure. A non-finite `value` is turned into an unavailable figure with
    /// reason `non-finite value` (a NaN never passes or fails a bound by accident).
    pub fn available(value: f64, basis: impl Into<String>) -> Figure {
        if value.is_finite() {
            Figure {
                value: Some(value),
                basis: basis.into(),
                reason: None,
            }
        } else {
            Figure::unavailable(basis, "non-finite value")
        }
    }

    /// An unavailable figure with the basis it would have had and the reason it is missing.
    pub fn unavailable(basis: impl Into<String>, reason: impl Into<String>) -> Figure {
        Figure {
            value: None,
            basis: basis.into(),
            reason: Some(reason.into()),
        }
    }

    /// [`Figure::available`] for `Some`, [`Figure::unavailable`] with `reason` for `None`.
    pub fn from_option(
        value: Option<f64>,
        basis: impl Into<String>,
        reason: impl Into<String>,
    ) -> Figure {
        match value {
            Some(v) => Figure::available(v, basis),
            None => Figure::unavailable(basis, reason),
        }
    }

    /// A figure nobody measured for this job (`reason = "not measured"`).
    pub fn not_measured(basis: impl Into<String>) -> Figure {
        Figure::unavailable(basis, "not measured")
    }
}

/// The five gated statistics of one latency population (ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyFigures {
    /// Median, ms.
    pub p50: Figure,
    /// 90th percentile, ms.
    pub p90: Figure,
    /// 95th percentile, ms.
    pub p95: Figure,
    /// 99th percentile, ms.
    pub p99: Figure,
    /// Mean, ms.
    pub mean: Figure,
}

impl LatencyFigures {
    /// Figures from a summary (basis for all five), or all unavailable with `reason`.
    pub fn from_summary(summary: Option<&Summary>, basis: &str, reason: &str) -> LatencyFigures {
        let f = |v: Option<f64>| Figure::from_option(v, basis, reason);
        LatencyFigures {
            p50: f(summary.map(|s| s.p50)),
            p90: f(summary.map(|s| s.p90)),
            p95: f(summary.map(|s| s.p95)),
            p99: f(summary.map(|s| s.p99)),
            mean: f(summary.map(|s| s.mean)),
        }
    }

    /// All five unavailable with reason `not measured`.
    pub fn not_measured(basis: &str) -> LatencyFigures {
        LatencyFigures::from_summary(None, basis, "not measured")
    }
}

/// Every figure a [`crate::gate::spec::GateSpec`] can gate, for one job.
///
/// Build it with [`FigureSet::from_job_stats`] and set the figures the stats do not carry
/// (grade pass rate, tokens per joule, energy per trajectory, regression) from their sources.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureSet {
    /// Successful requests of the job (the built-in gate: at least 1).
    pub successful_requests: u64,
    /// TTFT, ms.
    pub ttft_ms: LatencyFigures,
    /// ITL (gap-weighted), ms.
    pub itl_ms: LatencyFigures,
    /// TPOT (request-weighted), ms.
    pub tpot_ms: LatencyFigures,
    /// E2E, ms.
    pub e2e_ms: LatencyFigures,
    /// Fraction (0..=1) of requests that failed.
    pub error_rate: Figure,
    /// Fraction (0..=1) of graded units that passed grading.
    pub grade_pass_rate: Figure,
    /// Trajectory tokens per joule (generated tokens / trajectory energy); basis
    /// `simulated`, `measured` or `apportioned`.
    pub tokens_per_joule: Figure,
    /// Prefix-cache hit rate (0..=1) over requests that reported cached tokens.
    pub cache_hit_rate: Figure,
    /// Energy per trajectory, joules (worst trajectory of the job); basis as for tokens/J.
    pub energy_per_trajectory_j: Figure,
    /// Worst regression against the saved baseline, percent (positive = worse).
    pub regression_pct: Figure,
}

impl Default for FigureSet {
    /// Zero successful requests and every figure unavailable (`not measured`).
    fn default() -> Self {
        FigureSet {
            successful_requests: 0,
            ttft_ms: LatencyFigures::not_measured(basis::CLIENT_TIMING),
            itl_ms: LatencyFigures::not_measured(basis::CLIENT_TIMING),
            tpot_ms: LatencyFigures::not_measured(basis::CLIENT_TIMING),
            e2e_ms: LatencyFigures::not_measured(basis::CLIENT_TIMING),
            error_rate: Figure::not_measured(basis::REQUEST_OUTCOMES),
            grade_pass_rate: Figure::not_measured(basis::GRADING),
            tokens_per_joule: Figure::not_measured(basis::MEASURED),
            cache_hit_rate: Figure::not_measured(basis::SERVER_USAGE),
            energy_per_trajectory_j: Figure::not_measured(basis::MEASURED),
            regression_pct: Figure::not_measured(basis::BASELINE),
        }
    }
}

impl FigureSet {
    /// Latency, error-rate and cache figures from a job's request statistics; the rest stay
    /// unavailable (`not measured`) until the caller sets them.
    ///
    /// Reasons: `no requests`, `no successful requests`, `no request with more than one
    /// output token` (TPOT), `no token gaps` (ITL), `no request reported cached tokens` (C12).
    /// The cache figure's basis names its coverage, e.g. `server usage (3/4 requests)`.
    pub fn from_job_stats(stats: &JobStats) -> FigureSet {
        let no_ok = if stats.requests == 0 {
            "no requests"
        } else {
            "no successful requests"
        };
        let lat = |s: Option<&Summary>, reason: &str| {
            let reason = if stats.succeeded == 0 { no_ok } else { reason };
            LatencyFigures::from_summary(s, basis::CLIENT_TIMING, reason)
        };
        let reporting = stats.cache_reporting_requests;
        let cache_basis = format!(
            "{} ({}/{} requests)",
            basis::SERVER_USAGE,
            reporting,
            stats.succeeded
        );
        let cache_reason = if stats.succeeded == 0 {
            no_ok
        } else if reporting == 0 {
            "no request reported cached tokens"
        } else {
            "no prompt tokens reported"
        };
        FigureSet {
            successful_requests: stats.succeeded,
            ttft_ms: lat(stats.ttft_ms.as_ref(), "no token event"),
            itl_ms: lat(stats.itl_ms.as_ref(), "no token gaps"),
            tpot_ms: lat(
                stats.tpot_ms.as_ref(),
                "no request with more than one output token",
            ),
            e2e_ms: lat(stats.e2e_ms.as_ref(), "no completion time"),
            error_rate: Figure::from_option(
                stats.error_rate,
                basis::REQUEST_OUTCOMES,
                "no requests",
            ),
            cache_hit_rate: Figure::from_option(stats.cache_hit_rate, cache_basis, cache_reason),
            ..FigureSet::default()
        }
    }
}
