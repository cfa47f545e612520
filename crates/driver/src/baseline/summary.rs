//! A job's figures and their spread, from its per-request samples (pure; issue 8 item 2).
//!
//! Figures (latency, ms, lower is better), over successful non-warm-up requests:
//! `ttft_ms.{p50,p90,p99}` and `e2e_ms.{p50,p90,p99}` (from send), `itl_ms.{p50,p99}`
//! (every gap pooled, C26), `tpot_ms.{p50,p90}`, and for load jobs
//! `e2e_from_schedule_ms.{p50,p99}` (C24). Values use the project's percentile method
//! ([`crate::stats::PERCENTILE_METHOD`]).
//!
//! **Spread** ([`SPREAD_METHOD`]): a distribution-free 95 % confidence interval of each
//! quantile from the order statistics of its samples. The number of samples below the true
//! `q`-quantile is `B ~ Binomial(n, q)`; the interval is `[x₍ₗ₎, x₍ᵤ₎]` (1-based order
//! statistics) with `l` the largest rank such that `P(B ≤ l − 1) ≤ 2.5 %` and `u` the
//! smallest such that `P(B ≥ u) ≤ 2.5 %`. When no rank satisfies a side — too few samples
//! to bound a tail quantile, e.g. a p99 from fewer than ~370 samples — that end is `null`
//! (unbounded): the comparison then cannot call a change on that side, instead of
//! trusting an extreme sample. Exact, deterministic (no resampling), and valid for any
//! distribution (Hahn & Meeker, *Statistical Intervals*, §5.2). Each figure also carries
//! the samples' interquartile range (p25, p75) as a plain description of their spread.

use serde::{Deserialize, Serialize};

pub use crate::model::baseline::FigureSummary;
use crate::stats::{percentile_sorted, sorted_finite};

/// How every figure's spread is computed (recorded in each baseline).
pub const SPREAD_METHOD: &str = "distribution-free 95% CI of each quantile from order \
statistics (Binomial(n, q) ranks; an end too few samples can bound is null); IQR of the \
samples beside it";

/// The 1-based ranks `(l, u)` of the distribution-free 95 % CI of the `q`-quantile of `n`
/// samples (see the module docs); `None` for an end no rank can bound.
pub fn quantile_ci_ranks(n: usize, q: f64) -> (Option<usize>, Option<usize>) {
    const HALF_ALPHA: f64 = 0.025;
    if n == 0 || !(0.0..=1.0).contains(&q) {
        return (None, None);
    }
    // pmf(k) of Binomial(n, q) in log space (no underflow for large n).
    let pmf: Vec<f64> = if q <= 0.0 || q >= 1.0 {
        (0..=n)
            .map(|k| f64::from(u8::from((q <= 0.0 && k == 0) || (q >= 1.0 && k == n))))
            .collect()
    } else {
        let (lq, lp) = (q.ln(), (1.0 - q).ln());
        let mut ln = n as f64 * lp;
        let mut out = Vec::with_capacity(n + 1);
        for k in 0..=n {
            out.push(ln.exp());
            if k < n {
                ln += ((n - k) as f64 / (k + 1) as f64).ln() + lq - lp;
            }
        }
        out
    };
    // cdf[k] = P(B ≤ k).
    let mut cdf = Vec::with_capacity(n + 1);
    let mut acc = 0.0;
    for p in &pmf {
        acc += p;
        cdf.push(acc.min(1.0));
    }
    // l: largest rank in 1..=n with P(B ≤ l − 1) ≤ α/2.
    let l = (1..=n).rev().find(|&l| cdf[l - 1] <= HALF_ALPHA);
    // u: smallest rank in 1..=n with P(B ≥ u) = 1 − P(B ≤ u − 1) ≤ α/2.
    let u = (1..=n).find(|&u| 1.0 - cdf[u - 1] <= HALF_ALPHA);
    (l, u)
}

/// Per-request samples of one job (ms), successful non-warm-up requests only.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobSamples {
    /// TTFT from send.
    pub ttft_ms: Vec<f64>,
    /// E2E from send.
    pub e2e_ms: Vec<f64>,
    /// Every ITL gap.
    pub itl_ms: Vec<f64>,
    /// TPOT per request (> 1 output token).
    pub tpot_ms: Vec<f64>,
    /// E2E from the scheduled send (load jobs only; empty otherwise).
    pub e2e_from_schedule_ms: Vec<f64>,
}

/// One job's summary in a baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSummary {
    /// `suite::job`.
    pub id: String,
    /// `agentic`, `context` or `swe`.
    pub kind: String,
    /// Requests (warm-up excluded).
    pub requests: u64,
    /// Successful requests (warm-up excluded).
    pub succeeded: u64,
    /// Figures by name (`ttft_ms.p50`, …), in a stable order.
    pub figures: std::collections::BTreeMap<String, FigureSummary>,
}

/// Figures of one population: each quantile `qs` with its 95 % CI and the IQR, named
/// `{population}.p{100·q}`. Non-finite samples are ignored; an empty population gives no
/// figure.
pub fn population_figures(
    population: &str,
    samples: &[f64],
    qs: &[f64],
) -> Vec<(String, FigureSummary)> {
    let sorted = sorted_finite(samples);
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let p = |q: f64| percentile_sorted(&sorted, q).expect("non-empty, q in range");
    qs.iter()
        .map(|&q| {
            let value = p(q);
            let (l, u) = quantile_ci_ranks(n, q);
            (
                format!("{population}.p{}", (q * 100.0).round() as u32),
                FigureSummary {
                    value,
                    ci_low: l.map(|l| sorted[l - 1].min(value)),
                    ci_high: u.map(|u| sorted[u - 1].max(value)),
                    n: n as u64,
                    p25: p(0.25),
                    p75: p(0.75),
                    unit: "ms".into(),
                },
            )
        })
        .collect()
}

/// Summarises one job from its samples (see the module docs for the figures).
pub fn job_summary(
    id: &str,
    kind: &str,
    requests: u64,
    succeeded: u64,
    samples: &JobSamples,
) -> JobSummary {
    let mut figures = std::collections::BTreeMap::new();
    let pops: [(&str, &Vec<f64>, &[f64]); 5] = [
        ("ttft_ms", &samples.ttft_ms, &[0.5, 0.9, 0.99]),
        ("e2e_ms", &samples.e2e_ms, &[0.5, 0.9, 0.99]),
        ("itl_ms", &samples.itl_ms, &[0.5, 0.99]),
        ("tpot_ms", &samples.tpot_ms, &[0.5, 0.9]),
        (
            "e2e_from_schedule_ms",
            &samples.e2e_from_schedule_ms,
            &[0.5, 0.99],
        ),
    ];
    for (name, s, qs) in pops {
        figures.extend(population_figures(name, s, qs));
    }
    JobSummary {
        id: id.to_string(),
        kind: kind.to_string(),
        requests,
        succeeded,
        figures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_ranks_match_the_binomial_table() {
        // n = 20, median: the classic distribution-free 95% interval is [x(6), x(15)]
        // (coverage 95.9%).
        assert_eq!(quantile_ci_ranks(20, 0.5), (Some(6), Some(15)));
        // n = 10: [x(2), x(9)] (97.9%).
        assert_eq!(quantile_ci_ranks(10, 0.5), (Some(2), Some(9)));
        // Too few samples to bound anything.
        assert_eq!(quantile_ci_ranks(1, 0.5), (None, None));
        assert_eq!(quantile_ci_ranks(0, 0.5), (None, None));
    }

    #[test]
    fn tail_quantiles_need_enough_samples_to_be_bounded_above() {
        // p99 of 30 or 210 samples: P(all below) = 0.99^n > 2.5% -> no upper bound.
        assert_eq!(quantile_ci_ranks(30, 0.99).1, None);
        assert_eq!(quantile_ci_ranks(210, 0.99).1, None);
        // 0.99^368 < 2.5% <= 0.99^367: bounded from 368 samples, by the largest.
        assert_eq!(quantile_ci_ranks(367, 0.99).1, None);
        assert_eq!(quantile_ci_ranks(368, 0.99).1, Some(368));
        let (l, u) = quantile_ci_ranks(10_000, 0.99);
        let (l, u) = (l.unwrap(), u.unwrap());
        assert!(l < 9_900 && 9_900 < u && u - l < 60, "{l} {u}");
    }

    #[test]
    fn figures_carry_value_interval_and_iqr() {
        let s: Vec<f64> = (1..=20).map(f64::from).collect();
        let f = population_figures("ttft_ms", &s, &[0.5, 0.99]);
        assert_eq!(f[0].0, "ttft_ms.p50");
        let m = &f[0].1;
        assert_eq!(m.value, 10.5);
        assert_eq!((m.ci_low, m.ci_high), (Some(6.0), Some(15.0)));
        assert_eq!((m.p25, m.p75), (5.75, 15.25));
        assert_eq!(m.n, 20);
        assert_eq!(f[1].0, "ttft_ms.p99");
        assert_eq!(f[1].1.ci_high, None, "20 samples cannot bound a p99");
        assert!(population_figures("x", &[], &[0.5]).is_empty());
        let j = serde_json::to_value(&f[1].1).unwrap();
        assert!(j["ci_high"].is_null(), "unbounded is null, never a number");
    }

    #[test]
    fn job_summary_names_the_figures() {
        let s = JobSamples {
            ttft_ms: vec![1.0, 2.0],
            itl_ms: vec![3.0],
            ..Default::default()
        };
        let j = job_summary("s::j", "context", 2, 2, &s);
        let names: Vec<&str> = j.figures.keys().map(String::as_str).collect();
        assert_eq!(
            names,
            vec![
                "itl_ms.p50",
                "itl_ms.p99",
                "ttft_ms.p50",
                "ttft_ms.p90",
                "ttft_ms.p99"
            ]
        );
    }
}
