//! Gate verdicts as reported: which bound, which figure, its value and basis, the outcome.

use serde::{Deserialize, Serialize};

use super::basis::{Basis, TokenSource};

/// Direction of a bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Comparison {
    /// `value <= bound` passes (latencies, error rate, energy, regression).
    #[serde(rename = "<=")]
    AtMost,
    /// `value >= bound` passes (grade pass rate, tokens/J, cache hit rate, successes).
    #[serde(rename = ">=")]
    AtLeast,
    /// `value == bound` passes (the SWE harness exit code).
    #[serde(rename = "==")]
    Equal,
}

impl Comparison {
    /// `"<="`, `">="` or `"=="`.
    pub fn as_str(self) -> &'static str {
        match self {
            Comparison::AtMost => "<=",
            Comparison::AtLeast => ">=",
            Comparison::Equal => "==",
        }
    }

    /// The operator that describes a violation: `">"` for `<=`, `"<"` for `>=`, `"!="` for
    /// `==`.
    pub fn violated_str(self) -> &'static str {
        match self {
            Comparison::AtMost => ">",
            Comparison::AtLeast => "<",
            Comparison::Equal => "!=",
        }
    }

    /// Whether `value` satisfies `bound` in this direction.
    pub fn holds(self, value: f64, bound: f64) -> bool {
        match self {
            Comparison::AtMost => value <= bound,
            Comparison::AtLeast => value >= bound,
            Comparison::Equal => value == bound,
        }
    }
}

/// Result of one gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The figure is within its bound.
    Pass,
    /// The figure is outside its bound (or the bound is invalid).
    Fail,
    /// The figure is unavailable and the gate says `when_unavailable = "fail"` (default):
    /// a failing outcome.
    Unavailable,
    /// The figure is unavailable and the gate says `when_unavailable = "skip"`: not failing.
    Skipped,
}

impl Outcome {
    /// `pass` / `fail` / `unavailable` / `skipped`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Unavailable => "unavailable",
            Outcome::Skipped => "skipped",
        }
    }

    /// `Pass` and `Skipped` do not fail the job; `Fail` and `Unavailable` do.
    pub fn is_passing(self) -> bool {
        matches!(self, Outcome::Pass | Outcome::Skipped)
    }
}

/// One gate's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// The gate's key in `[gates]`, e.g. `ttft_ms.p99`, `max_error_rate`, or a built-in
    /// gate (`successful_requests`, `harness_exit`).
    pub gate: String,
    /// The figure's name, e.g. `ttft_ms.p99`, `error_rate`, `tokens_per_joule`.
    pub figure: String,
    /// The figure's value in `unit`; `null` when unavailable.
    pub value: Option<f64>,
    /// The bound, in `unit`.
    pub bound: f64,
    /// `<=`, `>=` or `==`.
    pub comparison: Comparison,
    /// Unit of value and bound: `ms`, `tokens/J`, `J`, `%`, or empty for fractions/counts.
    pub unit: String,
    /// What the figure rests on.
    pub basis: Basis,
    /// For a token-derived figure: whose token counts (`server`, `client_estimate`).
    pub tokens: Option<TokenSource>,
    /// Whether the gate is built in (zero successful requests, failed requests without a
    /// declared `max_error_rate`, the SWE harness's exit) rather than declared.
    pub built_in: bool,
    /// The outcome.
    pub outcome: Outcome,
    /// Human message naming figure, value, bound and basis, e.g.
    /// `ttft_ms.p99 = 812.4 ms > bound 500 ms (client timing)`; a streamed percentile
    /// says so after its value (`= 41.2 ms ±0.05 % (streaming) <= bound 50 ms`).
    pub message: String,
    /// The error bound of a streamed figure (`aggregation = "streaming"`);
    /// absent for an exact one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_bound: Option<crate::stats::SummaryBound>,
}
