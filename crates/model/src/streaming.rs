//! Streaming aggregation (opt-in: a load job's `aggregation = "streaming"` or
//! `run --aggregation streaming`): each latency population is an HDR histogram
//! ([`hdrhistogram`], [`SIGNIFICANT_FIGURES`] significant figures) instead of every sample,
//! so a soak run's statistics take the same memory after a million requests as after a
//! thousand.
//!
//! What it states (documented for users in `docs/figures.md`): every value is recorded in
//! integer ns (TPOT in ps), exact below 2048; above, a histogram bucket is at most 1/1024
//! of its lowest value wide and a percentile reads the middle of the bucket that holds its
//! rank, so each order statistic lies within [`RELATIVE_ERROR`] (1/2048 ≈ 0.049 %) of
//! the sample's true value. Percentiles interpolate between the same two ranks as the
//! exact method ([`crate::stats::PERCENTILE_METHOD`]), so a percentile lies within the same
//! relative error of the exact percentile of the same samples (a weighted mean of two
//! positive values each within ε is within ε). The count, min and max are exact, and the
//! mean is the exact sum over the count. Every [`Summary`] it produces carries its
//! [`SummaryBound`] ("±0.05 % (streaming)" wherever the figure is printed).

use hdrhistogram::Histogram;

use super::compact::{CompactFigures, Gaps};
use super::stats::{
    AggregateParams, FigureRow, JobStats, Populations, Summary, SummaryBound, Tally, percentile_of,
};

/// Significant figures of every histogram.
pub const SIGNIFICANT_FIGURES: u8 = 3;

/// The largest relative error of a streamed percentile against the exact one of the same
/// samples: half the widest bucket (1/1024 of its value at 3 significant figures).
pub const RELATIVE_ERROR: f64 = 1.0 / 2048.0;

/// How a streamed summary was made (its [`SummaryBound::method`]).
pub const METHOD: &str = "HDR histogram, 3 significant figures (integer ns; each order \
statistic within 1/2048 of its value, exact below 2048 ns); count, min, max exact; mean = \
exact sum / count";

/// The bound every streamed summary carries.
pub fn bound() -> SummaryBound {
    SummaryBound {
        aggregation: "streaming".into(),
        relative_error: RELATIVE_ERROR,
        method: METHOD.into(),
    }
}

/// One latency population, streamed: an HDR histogram of integer values plus the exact
/// count, sum, min and max. `scale` is the values' unit in ms (1e-6 for ns).
#[derive(Debug, Clone)]
pub struct StreamedPopulation {
    hist: Histogram<u64>,
    n: u64,
    sum: u128,
    min: u64,
    max: u64,
    per_ms: f64,
}

impl StreamedPopulation {
    /// A population of integer ns.
    pub fn ns() -> Self {
        Self::with_unit(1e6)
    }

    /// A population of integer ps (TPOT, an f64 ms kept to 1 ps).
    pub fn ps() -> Self {
        Self::with_unit(1e9)
    }

    fn with_unit(per_ms: f64) -> Self {
        Self {
            hist: Histogram::new(SIGNIFICANT_FIGURES).expect("3 significant figures are valid"),
            n: 0,
            sum: 0,
            min: u64::MAX,
            max: 0,
            per_ms,
        }
    }

    /// Records one value (in the population's unit).
    pub fn record(&mut self, v: u64) {
        // The histogram resizes itself; a value past its range (never: u64 fits) is kept
        // in the exact count, sum, min and max all the same.
        let _ = self.hist.record(v);
        self.n += 1;
        self.sum += u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Records an f64 ms value at the population's resolution (rounded).
    pub fn record_ms(&mut self, ms: f64) {
        if ms.is_finite() && ms >= 0.0 {
            self.record((ms * self.per_ms).round() as u64);
        }
    }

    /// Values recorded.
    pub fn count(&self) -> u64 {
        self.n
    }

    /// The value of 0-based rank `k` (ascending): the middle of its bucket, clamped to the
    /// exact min and max.
    fn at_rank(&self, k: u64) -> u64 {
        let mut seen = 0u64;
        for v in self.hist.iter_recorded() {
            seen += v.count_at_value();
            if seen > k {
                let mid = self.hist.median_equivalent(v.value_iterated_to());
                return mid.clamp(self.min, self.max);
            }
        }
        self.max
    }

    /// The summary (ms) with its bound; `None` for no value.
    pub fn summary(&self) -> Option<Summary> {
        if self.n == 0 {
            return None;
        }
        let n = usize::try_from(self.n).unwrap_or(usize::MAX);
        let to_ms = |v: u64| v as f64 / self.per_ms;
        let p = |q: f64| percentile_of(n, |i| to_ms(self.at_rank(i as u64)), q);
        Some(Summary {
            count: self.n,
            mean: self.sum as f64 / self.per_ms / self.n as f64,
            min: to_ms(self.min),
            max: to_ms(self.max),
            p50: p(0.50),
            p90: p(0.90),
            p95: p(0.95),
            p99: p(0.99),
            bound: Some(bound()),
        })
    }

    /// Bytes the histogram holds (its counts array).
    pub fn heap_bytes(&self) -> usize {
        self.hist.distinct_values() * std::mem::size_of::<u64>()
    }
}

/// A job's (or a load point's) statistics, streamed: the exact [`Tally`] and one
/// histogram per latency population. Nothing grows with the requests.
#[derive(Debug, Clone)]
pub struct StreamingStats {
    tally: Tally,
    ttft: StreamedPopulation,
    itl: StreamedPopulation,
    tpot: StreamedPopulation,
    e2e: StreamedPopulation,
    e2e_sched: StreamedPopulation,
    lag: StreamedPopulation,
    /// TTFT from the scheduled send (a load point's curve), ns.
    ttft_sched: StreamedPopulation,
    miss_threshold_ms: f64,
}

impl Default for StreamingStats {
    fn default() -> Self {
        Self::new(crate::stats::DEFAULT_SCHEDULE_MISS_THRESHOLD_MS)
    }
}

impl StreamingStats {
    /// Empty statistics with the schedule-miss threshold of [`AggregateParams`].
    pub fn new(miss_threshold_ms: f64) -> Self {
        Self {
            tally: Tally::default(),
            ttft: StreamedPopulation::ns(),
            itl: StreamedPopulation::ns(),
            tpot: StreamedPopulation::ps(),
            e2e: StreamedPopulation::ns(),
            e2e_sched: StreamedPopulation::ns(),
            lag: StreamedPopulation::ns(),
            ttft_sched: StreamedPopulation::ns(),
            miss_threshold_ms,
        }
    }

    /// Adds one request (its compact figures and gaps).
    pub fn add(&mut self, c: &CompactFigures, gaps: Gaps<'_>) {
        self.tally.add(c, self.miss_threshold_ms);
        let lag = c.schedule_lag_ns();
        if let Some(l) = lag {
            self.lag.record(l);
        }
        if !c.ok() {
            return;
        }
        if let Some(t) = c.ttft_ns() {
            self.ttft.record(t);
            if let Some(l) = lag {
                self.ttft_sched.record(t.saturating_add(l));
            }
        }
        for g in gaps.ns() {
            self.itl.record(g);
        }
        if c.output_tokens().is_none_or(|n| n > 1)
            && let Some(t) = c.tpot_ms()
        {
            self.tpot.record_ms(t);
        }
        if let Some(e) = c.e2e_ns() {
            self.e2e.record(e);
            if let Some(l) = lag {
                self.e2e_sched.record(e.saturating_add(l));
            }
        }
    }

    /// Requests added.
    pub fn requests(&self) -> u64 {
        self.tally.requests()
    }

    /// The statistics over `params.window_ns`; every summary carries its bound.
    pub fn stats(&self, params: AggregateParams) -> JobStats {
        self.tally.finish(
            Populations {
                ttft: self.ttft.summary(),
                itl: self.itl.summary(),
                tpot: self.tpot.summary(),
                e2e: self.e2e.summary(),
                e2e_from_schedule: self.e2e_sched.summary(),
                schedule_lag: self.lag.summary(),
            },
            params,
        )
    }

    /// TTFT from the scheduled send, with its bound.
    pub fn ttft_from_schedule(&self) -> Option<Summary> {
        self.ttft_sched.summary()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::ns_to_ms;

    fn within(streamed: f64, exact: f64) -> bool {
        (streamed - exact).abs() <= exact.abs() * RELATIVE_ERROR + 1e-9
    }

    proptest::proptest! {
        /// Every streamed figure lies within its stated bound of the exact figure
        /// of the same samples (small and large values, gaps past the u32 range).
        #[test]
        fn streamed_percentiles_lie_within_their_bound_of_the_exact_ones(
            ns in proptest::collection::vec(
                proptest::prop_oneof![0u64..5_000, 0u64..50_000_000, 1_000_000_000u64..9_000_000_000],
                1..400,
            ),
        ) {
            let mut p = StreamedPopulation::ns();
            for &v in &ns {
                p.record(v);
            }
            let ms: Vec<f64> = ns.iter().map(|&v| ns_to_ms(v)).collect();
            let exact = Summary::from_samples(&ms).unwrap();
            let s = p.summary().unwrap();
            proptest::prop_assert_eq!(s.count, exact.count);
            proptest::prop_assert_eq!((s.min, s.max), (exact.min, exact.max));
            for (a, b) in [
                (s.mean, exact.mean),
                (s.p50, exact.p50),
                (s.p90, exact.p90),
                (s.p95, exact.p95),
                (s.p99, exact.p99),
            ] {
                proptest::prop_assert!(within(a, b), "streamed {a} vs exact {b}");
            }
            proptest::prop_assert_eq!(s.bound, Some(bound()));
            proptest::prop_assert!(exact.bound.is_none(), "exact summaries carry no bound");
        }
    }

    /// The whole job's streamed statistics: exact counts, bounded percentiles.
    #[test]
    fn streamed_job_stats_match_the_exact_counts() {
        use crate::compact::{CompactFigureSet, FiguresNs};
        let mut set = CompactFigureSet::new();
        for i in 0..500u64 {
            let gaps: Vec<u64> = (0..10).map(|k| 1_000_000 + i * 997 + k * 13).collect();
            set.push(&FiguresNs {
                ok: i % 10 != 0,
                ttft_ns: Some(20_000_000 + i * 12_345),
                e2e_ns: Some(90_000_000 + i * 54_321),
                schedule_lag_ns: Some(i * 10_000),
                itl_ns: &gaps,
                tpot_ms: Some(1.0 + i as f64 / 1000.0),
                output_tokens: Some(crate::TokenCount::of(11, i % 7 == 0)),
                prompt_tokens: Some(100),
                cached_tokens: Some(i % 50),
                ..Default::default()
            });
        }
        let params = AggregateParams::new(2_000_000_000);
        let exact = set.stats(|_| true, params);
        let mut st = StreamingStats::default();
        for (c, g) in set.iter() {
            st.add(c, g);
        }
        let s = st.stats(params);
        assert_eq!(
            (s.requests, s.succeeded, s.failed, s.error_rate),
            (
                exact.requests,
                exact.succeeded,
                exact.failed,
                exact.error_rate
            )
        );
        assert_eq!(s.output_tokens, exact.output_tokens);
        assert_eq!(s.cache_hit_rate, exact.cache_hit_rate);
        assert_eq!(s.schedule_misses, exact.schedule_misses);
        let pairs = [
            (s.ttft_ms.unwrap(), exact.ttft_ms.unwrap()),
            (s.itl_ms.unwrap(), exact.itl_ms.unwrap()),
            (s.e2e_ms.unwrap(), exact.e2e_ms.unwrap()),
            (s.tpot_ms.value.unwrap(), exact.tpot_ms.value.unwrap()),
            (
                s.e2e_from_schedule_ms.unwrap(),
                exact.e2e_from_schedule_ms.unwrap(),
            ),
        ];
        for (a, b) in pairs {
            assert_eq!(a.count, b.count);
            for (x, y) in [(a.p50, b.p50), (a.p99, b.p99), (a.mean, b.mean)] {
                assert!(within(x, y), "{x} vs {y}");
            }
            assert!(a.bound.is_some());
        }
    }
}
