//! A job's figures and their spread, from its per-request samples (pure).
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

use crate::model::RequestRecord;
pub use crate::model::baseline::FigureSummary;
use crate::stats::FigureRow;
use crate::stats::{ns_to_ms, percentile_of, sorted_finite};
use std::collections::HashSet;

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
    // pmf(k) of Binomial(n, q) in log space (no underflow for large n), summed into
    // cdf(k) = P(B ≤ k) one k at a time: nothing of size n is held (a pooled
    // ITL population of a million-request run has tens of millions of samples).
    let pmf = |k: usize, ln: f64| -> f64 {
        if q <= 0.0 || q >= 1.0 {
            f64::from(u8::from((q <= 0.0 && k == 0) || (q >= 1.0 && k == n)))
        } else {
            ln.exp()
        }
    };
    let (lq, lp) = if q > 0.0 && q < 1.0 {
        (q.ln(), (1.0 - q).ln())
    } else {
        (0.0, 0.0)
    };
    let mut ln = n as f64 * lp;
    let mut acc = 0.0f64;
    // l: largest rank in 1..=n with P(B ≤ l − 1) ≤ α/2; u: smallest rank in 1..=n with
    // P(B ≥ u) = 1 − P(B ≤ u − 1) ≤ α/2. cdf is non-decreasing, so l's condition holds
    // for a prefix of ranks and u's from some rank on.
    let mut l = None;
    let mut u = None;
    for k in 0..n {
        acc += pmf(k, ln);
        if k < n {
            ln += ((n - k) as f64 / (k + 1) as f64).ln() + lq - lp;
        }
        let cdf = acc.min(1.0);
        let rank = k + 1;
        if cdf <= HALF_ALPHA {
            l = Some(rank);
        }
        if u.is_none() && 1.0 - cdf <= HALF_ALPHA {
            u = Some(rank);
            if cdf > HALF_ALPHA {
                break;
            }
        }
    }
    (l, u)
}

/// Per-request samples of one job, successful non-warm-up requests only, kept compact:
/// latencies as the integer ns the client recorded (ITL gaps as `u32`, gaps
/// ≥ 2³² − 1 ns in a `u64` side list), converted to ms ([`ns_to_ms`]) when a figure is
/// read — the same values the f64 samples gave. TPOT and E2E from schedule are the `f64`
/// ms the records compute.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobSamples {
    /// TTFT from send, ns.
    pub ttft_ns: Vec<u64>,
    /// E2E from send, ns.
    pub e2e_ns: Vec<u64>,
    /// Every ITL gap below 2³² − 1 ns, ns.
    pub itl_ns: Vec<u32>,
    /// Every ITL gap of 2³² − 1 ns or more, ns.
    pub itl_wide_ns: Vec<u64>,
    /// TPOT per request (> 1 output token, server counts), ms.
    pub tpot_ms: Vec<f64>,
    /// E2E from the scheduled send (load jobs only; empty otherwise), ms.
    pub e2e_from_schedule_ms: Vec<f64>,
}

impl JobSamples {
    /// Adds a successful request's samples (`load`: a load job's, with E2E from schedule).
    pub fn push(&mut self, r: &crate::model::RequestRecord, load: bool) {
        let since_send = |t: Option<u64>| t.map(|t| t.saturating_sub(r.send_ns));
        self.ttft_ns.extend(since_send(r.ttft_ns));
        if let Some(e) = since_send(r.end_ns) {
            self.e2e_ns.push(e);
            if load {
                self.e2e_from_schedule_ms
                    .push(ns_to_ms(e) + r.schedule_lag_ns() as f64 / 1e6);
            }
        }
        for &g in &r.itl_ns {
            match u32::try_from(g) {
                Ok(g) if g != u32::MAX => self.itl_ns.push(g),
                _ => self.itl_wide_ns.push(g),
            }
        }
        self.tpot_ms.extend(r.tpot_ms());
    }

    /// Adds a successful request's samples from its compact figures (the same samples as
    /// [`JobSamples::push`] of its record).
    pub fn push_compact(
        &mut self,
        c: &crate::model::compact::CompactFigures,
        gaps: crate::model::compact::Gaps<'_>,
        load: bool,
    ) {
        self.ttft_ns.extend(c.ttft_ns());
        if let Some(e) = c.e2e_ns() {
            self.e2e_ns.push(e);
            if load {
                let lag = c.schedule_lag_ns().unwrap_or(0);
                self.e2e_from_schedule_ms
                    .push(ns_to_ms(e) + lag as f64 / 1e6);
            }
        }
        for g in gaps.ns() {
            match u32::try_from(g) {
                Ok(g) if g != u32::MAX => self.itl_ns.push(g),
                _ => self.itl_wide_ns.push(g),
            }
        }
        self.tpot_ms.extend(c.server_tpot_ms());
    }

    /// ITL gaps, ms, for a test or a caller that wants them as f64.
    pub fn itl_ms(&self) -> Vec<f64> {
        let narrow = self.itl_ns.iter().map(|&g| u64::from(g));
        narrow
            .chain(self.itl_wide_ns.iter().copied())
            .map(ns_to_ms)
            .collect()
    }
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
    sorted_population_figures(population, sorted.len(), |i| sorted[i], qs)
}

/// [`population_figures`] of `n` values in ascending order that `at(i)` gives (f64
/// samples, or integer ns converted as they are read: the same figures either way).
pub fn sorted_population_figures(
    population: &str,
    n: usize,
    at: impl Fn(usize) -> f64,
    qs: &[f64],
) -> Vec<(String, FigureSummary)> {
    if n == 0 {
        return Vec::new();
    }
    let p = |q: f64| percentile_of(n, &at, q);
    qs.iter()
        .map(|&q| {
            let value = p(q);
            let (l, u) = quantile_ci_ranks(n, q);
            (
                format!("{population}.p{}", (q * 100.0).round() as u32),
                FigureSummary {
                    value,
                    ci_low: l.map(|l| at(l - 1).min(value)),
                    ci_high: u.map(|u| at(u - 1).max(value)),
                    n: n as u64,
                    p25: p(0.25),
                    p75: p(0.75),
                    unit: "ms".into(),
                },
            )
        })
        .collect()
}

/// Figures of integer-ns samples (sorted here), converted to ms as they are read.
fn ns_population_figures(
    population: &str,
    mut ns: Vec<u64>,
    qs: &[f64],
) -> Vec<(String, FigureSummary)> {
    ns.sort_unstable();
    sorted_population_figures(population, ns.len(), |i| ns_to_ms(ns[i]), qs)
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
    figures.extend(ns_population_figures(
        "ttft_ms",
        samples.ttft_ns.clone(),
        &[0.5, 0.9, 0.99],
    ));
    figures.extend(ns_population_figures(
        "e2e_ms",
        samples.e2e_ns.clone(),
        &[0.5, 0.9, 0.99],
    ));
    {
        // The pooled gaps: u32 below 2³² − 1 ns, then the wide ones (all larger).
        let mut narrow = samples.itl_ns.clone();
        narrow.sort_unstable();
        let mut wide = samples.itl_wide_ns.clone();
        wide.sort_unstable();
        let k = narrow.len();
        let at = |i: usize| {
            ns_to_ms(if i < k {
                u64::from(narrow[i])
            } else {
                wide[i - k]
            })
        };
        figures.extend(sorted_population_figures(
            "itl_ms",
            k + wide.len(),
            at,
            &[0.5, 0.99],
        ));
    }
    figures.extend(population_figures("tpot_ms", &samples.tpot_ms, &[0.5, 0.9]));
    figures.extend(population_figures(
        "e2e_from_schedule_ms",
        &samples.e2e_from_schedule_ms,
        &[0.5, 0.99],
    ));
    JobSummary {
        id: id.to_string(),
        kind: kind.to_string(),
        requests,
        succeeded,
        figures,
    }
}

/// Per-request samples of `requests` (successful, non-`warmup` ones): TTFT, E2E, ITL
/// gaps, TPOT, and E2E from schedule when `load` (a load job). Returns the samples, the
/// number of non-warm-up requests and of those that succeeded.
pub fn samples_of<'a>(
    requests: impl Iterator<Item = &'a RequestRecord>,
    warmup: &HashSet<&str>,
    load: bool,
) -> (JobSamples, u64, u64) {
    let mut s = JobSamples::default();
    let (mut n, mut ok) = (0u64, 0u64);
    // Warm-up: the record's own mark (`"wu":true` in requests.jsonl), or the report's list.
    for r in requests.filter(|r| !r.warmup && !warmup.contains(r.request_id.as_str())) {
        n += 1;
        if r.is_success() {
            ok += 1;
            s.push(r, load);
        }
    }
    (s, n, ok)
}

/// [`samples_of`] a load job's compact figures (`warm[i]`: request i is warm-up).
pub fn samples_of_compact(
    set: &crate::model::compact::CompactFigureSet,
    warm: &[bool],
) -> (JobSamples, u64, u64) {
    let mut s = JobSamples::default();
    let (mut n, mut ok) = (0u64, 0u64);
    for (i, (c, gaps)) in set.iter().enumerate() {
        if warm.get(i).copied().unwrap_or(false) {
            continue;
        }
        n += 1;
        if c.ok() {
            ok += 1;
            s.push_compact(c, gaps, true);
        }
    }
    (s, n, ok)
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
            ttft_ns: vec![1_000_000, 2_000_000],
            itl_ns: vec![3_000_000],
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
