//! The measured figures gates read, each with its basis or the reason it is unavailable.
//!
//! A [`Figure`] is the report model's value-with-basis ([`inferscope_model::Figure`]): `value`
//! plus `basis` (`client_timing`, `server_reported`, `client_estimate`, energy `simulated` /
//! `measured` / `apportioned`, …), `tokens` for a figure derived from token counts, and,
//! when the value is missing, a `reason` (no power source, no usage, no successful request).
//! Missing is `None`, never 0.

use inferscope_model::stats::{JobStats, Summary};
use inferscope_model::{Basis, TokenSource};

/// A gated figure: the report model's [`Figure`] of an `f64` in the unit of its bound.
pub type Figure = inferscope_model::Figure<f64>;

/// The five gated statistics of one latency population (ms).
#[derive(Debug, Clone, PartialEq)]
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
    /// The error bound of all five when they were streamed; `None` when exact.
    pub bound: Option<inferscope_model::SummaryBound>,
}

impl LatencyFigures {
    /// Figures from a summary (basis and token source for all five), or all unavailable with
    /// `reason`.
    pub fn from_summary(
        summary: Option<&Summary>,
        basis: Basis,
        tokens: Option<TokenSource>,
        reason: &str,
    ) -> LatencyFigures {
        let f = |v: Option<f64>| Figure::finite_or(v, basis, reason).with_tokens(tokens);
        LatencyFigures {
            p50: f(summary.map(|s| s.p50)),
            p90: f(summary.map(|s| s.p90)),
            p95: f(summary.map(|s| s.p95)),
            p99: f(summary.map(|s| s.p99)),
            mean: f(summary.map(|s| s.mean)),
            bound: summary.and_then(|s| s.bound.clone()),
        }
    }

    /// All five unavailable with reason `not measured`.
    pub fn not_measured(basis: Basis) -> LatencyFigures {
        LatencyFigures::from_summary(None, basis, None, "not measured")
    }
}

/// Every figure a [`crate::spec::GateSpec`] can gate, for one job.
///
/// Build it with [`FigureSet::from_job_stats`] and set the figures the stats do not carry
/// (grade pass rate, tokens per joule, energy per trajectory, regression) from their sources.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureSet {
    /// Successful requests of the job (the built-in gate: at least 1); `None` for an SWE
    /// job, whose harness talks to the endpoint itself (its exit is the built-in gate).
    pub successful_requests: Option<u64>,
    /// Requests the runner made (the built-in error-rate gate applies when > 0).
    pub requests: u64,
    /// The SWE harness's exit code (the built-in gate `harness_exit`: == 0); `None` for
    /// other jobs.
    pub harness_exit_code: Option<Figure>,
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
    /// The job's output tokens per joule of device energy over its windows (basis
    /// `simulated` or `measured`; `tokens` says whose counts).
    pub tokens_per_joule: Figure,
    /// Prefix-cache hit rate (0..=1) over requests that reported cached tokens.
    pub cache_hit_rate: Figure,
    /// `(requests that reported cached tokens, successful requests)`: the coverage the
    /// cache gate's message names.
    pub cache_coverage: Option<(u64, u64)>,
    /// Energy per trajectory, joules: the job's window energy / trajectories run (the MEAN
    /// trajectory; `apportioned` above one trajectory in flight).
    pub energy_per_trajectory_j: Figure,
    /// Worst regression against the saved baseline, percent (positive = worse).
    pub regression_pct: Figure,
    /// Fraction (0..=1) of the successful fixed-length requests that came back short;
    /// basis: whose output-token counts they are.
    pub short_output_rate: Figure,
}

impl Default for FigureSet {
    /// Zero successful requests and every figure unavailable (`not measured`).
    fn default() -> Self {
        let nm = |b: Basis| Figure::missing(b, "not measured");
        FigureSet {
            successful_requests: Some(0),
            requests: 0,
            harness_exit_code: None,
            ttft_ms: LatencyFigures::not_measured(Basis::ClientTiming),
            itl_ms: LatencyFigures::not_measured(Basis::ClientTiming),
            tpot_ms: LatencyFigures::not_measured(Basis::ClientTiming),
            e2e_ms: LatencyFigures::not_measured(Basis::ClientTiming),
            error_rate: nm(Basis::RequestOutcomes),
            grade_pass_rate: nm(Basis::Grading),
            tokens_per_joule: nm(Basis::Unavailable),
            cache_hit_rate: nm(Basis::ServerReported),
            cache_coverage: None,
            energy_per_trajectory_j: nm(Basis::Unavailable),
            regression_pct: nm(Basis::Baseline),
            short_output_rate: nm(Basis::ServerReported),
        }
    }
}

impl FigureSet {
    /// Latency, error-rate and cache figures from a job's request statistics; the rest stay
    /// unavailable (`not measured`) until the caller sets them.
    ///
    /// Reasons: `no requests`, `no successful requests`, `no request with more than one
    /// output token` (TPOT), `no token gaps` (ITL), `no request reported cached tokens` (C12).
    /// TPOT carries the token source of its counts (`client_estimate` when any count was the
    /// client's estimate).
    pub fn from_job_stats(stats: &JobStats) -> FigureSet {
        let no_ok = if stats.requests == 0 {
            "no requests"
        } else {
            "no successful requests"
        };
        let lat = |s: Option<&Summary>, tokens: Option<TokenSource>, reason: &str| {
            let reason = if stats.succeeded == 0 { no_ok } else { reason };
            LatencyFigures::from_summary(s, Basis::ClientTiming, tokens, reason)
        };
        let reporting = stats.cache_reporting_requests;
        let cache_reason = if stats.succeeded == 0 {
            no_ok
        } else if reporting == 0 {
            "no request reported cached tokens"
        } else {
            "no prompt tokens reported"
        };
        FigureSet {
            successful_requests: Some(stats.succeeded),
            requests: stats.requests,
            ttft_ms: lat(stats.ttft_ms.as_ref(), None, "no token event"),
            itl_ms: lat(stats.itl_ms.as_ref(), None, "no token gaps"),
            tpot_ms: lat(
                stats.tpot_ms.value.as_ref(),
                stats.tpot_ms.tokens,
                "no request with more than one output token",
            ),
            e2e_ms: lat(stats.e2e_ms.as_ref(), None, "no completion time"),
            error_rate: Figure::finite_or(stats.error_rate, Basis::RequestOutcomes, "no requests"),
            cache_hit_rate: Figure::finite_or(
                stats.cache_hit_rate,
                Basis::ServerReported,
                cache_reason,
            ),
            cache_coverage: Some((reporting, stats.succeeded)),
            short_output_rate: Figure::finite_or(
                stats.short_output_rate,
                stats
                    .output_tokens
                    .tokens
                    .map_or(Basis::ServerReported, |t| t.basis()),
                if stats.succeeded == 0 {
                    no_ok
                } else {
                    "no request asked for a fixed output length"
                },
            ),
            ..FigureSet::default()
        }
    }
}
