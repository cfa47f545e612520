//! Compact per-request figures: what exact statistics keep in memory per request,
//! instead of a [`RequestFigures`] with an `f64` ITL vector or a whole
//! [`RequestRecord`].
//!
//! Resolution (documented for users in `docs/figures.md`): every latency is kept as
//! integer ns on the run clock, exactly as the client recorded it — TTFT, TTFO, E2E and
//! the schedule lag as `u64` ns from the send instant, every ITL gap as a `u32` ns
//! (gaps of 2³² − 1 ns ≈ 4.29 s or more are escaped to a `u64` side list, so no gap is
//! ever clipped), TPOT as the `f64` ms the record computes. The conversion to the printed
//! ms ([`ns_to_ms`]) happens when a figure is read, and a summary sums its samples in the
//! same ascending order as [`Summary::from_samples`]: the statistics of a
//! [`CompactFigureSet`] equal those of the same records' [`RequestFigures`] to the bit
//! (`tests::compact_stats_equal_the_f64_path`).
//!
//! Size: [`CompactFigures`] is 80 bytes, plus 4 bytes a gap; a request of 64 tokens
//! (63 gaps) holds 332 bytes (`tests::a_request_holds_at_most_its_fixed_part_and_4_bytes_a_gap`).

use super::basis::TokenCount;
use super::request::RequestRecord;
use super::stats::{AggregateParams, FigureRow, JobStats, RequestFigures, Summary, ns_to_ms};

const OK: u16 = 1;
const ESTIMATED: u16 = 1 << 1;
const HAS_TTFT: u16 = 1 << 2;
const HAS_E2E: u16 = 1 << 3;
const HAS_LAG: u16 = 1 << 4;
const HAS_OUT: u16 = 1 << 5;
const HAS_PROMPT: u16 = 1 << 6;
const HAS_CACHED: u16 = 1 << 7;
const HAS_TTFO: u16 = 1 << 8;
const FIXED_OUT: u16 = 1 << 9;
const SHORT_OUT: u16 = 1 << 10;
const HAS_PROMPT_DIFF: u16 = 1 << 11;

/// A gap of this value in [`CompactFigureSet`]'s gap list means "the next entry of the wide
/// list" (a gap ≥ 2³² − 1 ns).
const WIDE: u32 = u32::MAX;

/// One request's figures in integer ns (see the module docs). Missing values are flags,
/// never a sentinel value: a hostile `usage` of `u64::MAX` stays `u64::MAX`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactFigures {
    ttft_ns: u64,
    ttfo_ns: u64,
    e2e_ns: u64,
    schedule_lag_ns: u64,
    /// `NaN` when missing.
    tpot_ms: f64,
    output_tokens: u64,
    prompt_tokens: u64,
    cached_tokens: u64,
    /// Gaps of this request in the set's gap list (in order, after the previous request's).
    gaps: u32,
    flags: u16,
    /// Reported − asked prompt tokens, saturated to `i32`.
    prompt_diff: i32,
}

impl CompactFigures {
    fn has(&self, f: u16) -> bool {
        self.flags & f != 0
    }
    fn opt(&self, f: u16, v: u64) -> Option<u64> {
        self.has(f).then_some(v)
    }
    /// TTFO, ms from send.
    pub fn ttfo_ms(&self) -> Option<f64> {
        self.opt(HAS_TTFO, self.ttfo_ns).map(ns_to_ms)
    }
    /// TTFT, integer ns from send.
    pub fn ttft_ns(&self) -> Option<u64> {
        self.opt(HAS_TTFT, self.ttft_ns)
    }
    /// E2E, integer ns from send.
    pub fn e2e_ns(&self) -> Option<u64> {
        self.opt(HAS_E2E, self.e2e_ns)
    }
    /// Schedule lag, integer ns.
    pub fn schedule_lag_ns(&self) -> Option<u64> {
        self.opt(HAS_LAG, self.schedule_lag_ns)
    }
    /// TPOT, ms, when its token count is the server's (the baseline's population).
    pub fn server_tpot_ms(&self) -> Option<f64> {
        self.tpot_ms().filter(|_| !self.output_tokens_estimated())
    }
    /// Number of ITL gaps.
    pub fn gap_count(&self) -> usize {
        self.gaps as usize
    }
}

impl FigureRow for CompactFigures {
    fn ok(&self) -> bool {
        self.has(OK)
    }
    fn ttft_ms(&self) -> Option<f64> {
        self.ttft_ns().map(ns_to_ms)
    }
    fn tpot_ms(&self) -> Option<f64> {
        (!self.tpot_ms.is_nan()).then_some(self.tpot_ms)
    }
    fn e2e_ms(&self) -> Option<f64> {
        self.e2e_ns().map(ns_to_ms)
    }
    fn output_tokens(&self) -> Option<u64> {
        self.opt(HAS_OUT, self.output_tokens)
    }
    fn output_tokens_estimated(&self) -> bool {
        self.has(ESTIMATED)
    }
    fn prompt_tokens(&self) -> Option<u64> {
        self.opt(HAS_PROMPT, self.prompt_tokens)
    }
    fn cached_tokens(&self) -> Option<u64> {
        self.opt(HAS_CACHED, self.cached_tokens)
    }
    fn schedule_lag_ms(&self) -> Option<f64> {
        self.opt(HAS_LAG, self.schedule_lag_ns).map(ns_to_ms)
    }
    fn short_output(&self) -> Option<bool> {
        self.has(FIXED_OUT).then(|| self.has(SHORT_OUT))
    }
    fn prompt_tokens_diff(&self) -> Option<i64> {
        self.has(HAS_PROMPT_DIFF)
            .then_some(i64::from(self.prompt_diff))
    }
}

/// The compact figures of many requests, in the order they were pushed, with their ITL
/// gaps in one flat `u32` list (see the module docs).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CompactFigureSet {
    requests: Vec<CompactFigures>,
    gaps: Vec<u32>,
    wide: Vec<u64>,
}

/// The fields of one request for [`CompactFigureSet::push`], integer ns from its send.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FiguresNs<'a> {
    /// The request completed.
    pub ok: bool,
    /// TTFT, ns from send.
    pub ttft_ns: Option<u64>,
    /// TTFO, ns from send.
    pub ttfo_ns: Option<u64>,
    /// E2E, ns from send.
    pub e2e_ns: Option<u64>,
    /// Schedule lag, ns.
    pub schedule_lag_ns: Option<u64>,
    /// ITL gaps, ns.
    pub itl_ns: &'a [u64],
    /// TPOT, ms.
    pub tpot_ms: Option<f64>,
    /// Output tokens and their source.
    pub output_tokens: Option<TokenCount>,
    /// Prompt tokens.
    pub prompt_tokens: Option<u64>,
    /// Cached prompt tokens.
    pub cached_tokens: Option<u64>,
    /// A fixed output length was asked: whether it came back short.
    pub short_output: Option<bool>,
    /// Reported − asked prompt tokens.
    pub prompt_tokens_diff: Option<i64>,
}

impl<'a> FiguresNs<'a> {
    /// The figures of a record, as the report's statistics read it (the same fields as
    /// the runner's `figures(record)`: output tokens the server's, else the estimate).
    pub fn of_record(r: &'a RequestRecord) -> Self {
        let since_send = |t: Option<u64>| t.map(|t| t.saturating_sub(r.send_ns));
        FiguresNs {
            ok: r.is_success(),
            ttft_ns: since_send(r.ttft_ns),
            ttfo_ns: since_send(r.ttfo_ns),
            e2e_ns: since_send(r.end_ns),
            schedule_lag_ns: Some(r.schedule_lag_ns()),
            itl_ns: &r.itl_ns,
            tpot_ms: r.tpot().map(|t| t.0),
            output_tokens: r.output_token_count(),
            prompt_tokens: r.prompt_tokens,
            cached_tokens: r.cached_tokens,
            short_output: r.short_output(),
            prompt_tokens_diff: r.prompt_tokens_diff(),
        }
    }
}

impl CompactFigureSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends one request.
    pub fn push(&mut self, f: &FiguresNs<'_>) {
        let mut flags = 0u16;
        let mut put = |v: Option<u64>, bit: u16| {
            v.map_or(0, |v| {
                flags |= bit;
                v
            })
        };
        let ttft_ns = put(f.ttft_ns, HAS_TTFT);
        let ttfo_ns = put(f.ttfo_ns, HAS_TTFO);
        let e2e_ns = put(f.e2e_ns, HAS_E2E);
        let schedule_lag_ns = put(f.schedule_lag_ns, HAS_LAG);
        let output_tokens = put(f.output_tokens.map(|t| t.tokens), HAS_OUT);
        let prompt_tokens = put(f.prompt_tokens, HAS_PROMPT);
        let cached_tokens = put(f.cached_tokens, HAS_CACHED);
        if f.ok {
            flags |= OK;
        }
        if f.output_tokens.is_some_and(TokenCount::is_estimate) {
            flags |= ESTIMATED;
        }
        if let Some(short) = f.short_output {
            flags |= FIXED_OUT | if short { SHORT_OUT } else { 0 };
        }
        let prompt_diff = f.prompt_tokens_diff.map_or(0, |d| {
            flags |= HAS_PROMPT_DIFF;
            d.clamp(i32::MIN.into(), i32::MAX.into()) as i32
        });
        for &g in f.itl_ns {
            match u32::try_from(g) {
                Ok(g) if g != WIDE => self.gaps.push(g),
                _ => {
                    self.gaps.push(WIDE);
                    self.wide.push(g);
                }
            }
        }
        self.requests.push(CompactFigures {
            ttft_ns,
            ttfo_ns,
            e2e_ns,
            schedule_lag_ns,
            tpot_ms: f.tpot_ms.unwrap_or(f64::NAN),
            output_tokens,
            prompt_tokens,
            cached_tokens,
            gaps: u32::try_from(f.itl_ns.len()).unwrap_or(u32::MAX),
            flags,
            prompt_diff,
        });
    }

    /// Appends a record's figures.
    pub fn push_record(&mut self, r: &RequestRecord) {
        self.push(&FiguresNs::of_record(r));
    }

    /// Requests held.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether no request is held.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Empties the set, keeping its capacity (a scratch set reused per request).
    pub fn clear(&mut self) {
        self.requests.clear();
        self.gaps.clear();
        self.wide.clear();
    }

    /// Releases spare capacity (once every request is pushed).
    pub fn shrink_to_fit(&mut self) {
        self.requests.shrink_to_fit();
        self.gaps.shrink_to_fit();
        self.wide.shrink_to_fit();
    }

    /// Bytes this set holds on the heap (its capacity).
    pub fn heap_bytes(&self) -> usize {
        self.requests.capacity() * std::mem::size_of::<CompactFigures>()
            + self.gaps.capacity() * 4
            + self.wide.capacity() * 8
    }

    /// The output tokens of the successful requests and their source: `None` when one has
    /// no count (a partial sum is not a total); `Some((0, server))` without any.
    pub fn output_token_count(&self) -> Option<TokenCount> {
        TokenCount::total(
            self.requests
                .iter()
                .filter(|r| r.ok())
                .map(|r| r.output_token_count()),
        )
    }

    /// Every request with its ITL gaps (ns), in push order.
    pub fn iter(&self) -> impl Iterator<Item = (&CompactFigures, Gaps<'_>)> + '_ {
        let mut at = 0usize;
        let mut wide_at = 0usize;
        self.requests.iter().map(move |r| {
            let gaps = &self.gaps[at..at + r.gaps as usize];
            at += gaps.len();
            let n_wide = gaps.iter().filter(|&&g| g == WIDE).count();
            let wide = &self.wide[wide_at..wide_at + n_wide];
            wide_at += n_wide;
            (r, Gaps { gaps, wide })
        })
    }

    /// The statistics of the requests whose index `include` accepts, over
    /// `params.window_ns`: the same figures as [`JobStats::aggregate`] of their
    /// [`RequestFigures`].
    pub fn stats(&self, include: impl Fn(usize) -> bool, params: AggregateParams) -> JobStats {
        let mut rows = Vec::new();
        let mut pooled: Vec<u32> = Vec::new();
        let mut pooled_wide: Vec<u64> = Vec::new();
        for (i, (r, gaps)) in self.iter().enumerate() {
            if !include(i) {
                continue;
            }
            rows.push(r);
            if r.ok() {
                pooled.extend(gaps.gaps.iter().copied().filter(|&g| g != WIDE));
                pooled_wide.extend_from_slice(gaps.wide);
            }
        }
        let itl = pooled_summary(pooled, pooled_wide);
        JobStats::aggregate_rows(&rows, itl, params)
    }
}

/// The pooled ITL summary of `narrow` and `wide` gaps (ns): both sorted, read in one
/// ascending merge and converted to ms as they are read.
fn pooled_summary(mut narrow: Vec<u32>, mut wide: Vec<u64>) -> Option<Summary> {
    narrow.sort_unstable();
    wide.sort_unstable();
    // Every wide gap is ≥ every narrow one (narrow < 2³² − 1 ≤ wide).
    let n = narrow.len();
    Summary::of_sorted(n + wide.len(), |i| {
        ns_to_ms(if i < n {
            u64::from(narrow[i])
        } else {
            wide[i - n]
        })
    })
}

/// One request's ITL gaps in a [`CompactFigureSet`].
#[derive(Debug, Clone, Copy)]
pub struct Gaps<'a> {
    gaps: &'a [u32],
    wide: &'a [u64],
}

impl Gaps<'_> {
    /// The gaps, ns, in order.
    pub fn ns(&self) -> impl Iterator<Item = u64> + '_ {
        let mut wide = self.wide.iter();
        self.gaps.iter().map(move |&g| {
            if g == WIDE {
                wide.next().copied().unwrap_or(u64::from(WIDE))
            } else {
                u64::from(g)
            }
        })
    }

    /// Number of gaps.
    pub fn len(&self) -> usize {
        self.gaps.len()
    }

    /// Whether there is no gap.
    pub fn is_empty(&self) -> bool {
        self.gaps.is_empty()
    }

    /// The request's mean gap, ms (gaps summed in order, as the f64 path sums them).
    pub fn mean_ms(&self) -> Option<f64> {
        (!self.is_empty()).then(|| self.ns().map(ns_to_ms).sum::<f64>() / self.len() as f64)
    }
}

impl RequestFigures {
    /// These figures in the compact form's integer ns (ms × 10⁶, rounded): for tests and
    /// callers that only hold ms. Exact for every ms value that is a whole number of ns.
    pub fn to_ns_set(figs: &[RequestFigures]) -> CompactFigureSet {
        let ns = |ms: f64| (ms * 1e6).round() as u64;
        let mut set = CompactFigureSet::new();
        for f in figs {
            let itl: Vec<u64> = f.itl_ms.iter().map(|&g| ns(g)).collect();
            set.push(&FiguresNs {
                ok: f.ok,
                ttft_ns: f.ttft_ms.map(ns),
                ttfo_ns: None,
                e2e_ns: f.e2e_ms.map(ns),
                schedule_lag_ns: f.schedule_lag_ms.map(ns),
                itl_ns: &itl,
                tpot_ms: f.tpot_ms,
                output_tokens: f
                    .output_tokens
                    .map(|t| TokenCount::of(t, f.output_tokens_estimated)),
                prompt_tokens: f.prompt_tokens,
                cached_tokens: f.cached_tokens,
                short_output: f.short_output,
                prompt_tokens_diff: f.prompt_tokens_diff,
            });
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::RequestStatus;

    fn record(i: u64, gaps: Vec<u64>, ok: bool) -> RequestRecord {
        let send = 1_000_000_000 + i * 7_777_777;
        let mut r = RequestRecord::new(&format!("s::j#{i}"), send - i % 3 * 1_234_567, send, true);
        r.status = if ok {
            RequestStatus::Success
        } else {
            RequestStatus::Failed
        };
        let ttft = send + 12_345_678 + i * 1_001;
        r.ttft_ns = Some(ttft);
        r.ttfo_ns = Some(ttft);
        let last = ttft + gaps.iter().sum::<u64>();
        r.last_token_ns = Some(last);
        r.end_ns = Some(last + 333);
        r.completion_tokens = Some(gaps.len() as u64 + 1);
        r.prompt_tokens = Some(100 + i);
        r.cached_tokens = i.is_multiple_of(2).then_some(i);
        r.itl_ns = gaps;
        r
    }

    proptest::proptest! {
        /// Every exact figure of the compact path equals today's f64 path on the
        /// same records (to the bit), including gaps past the u32 range.
        #[test]
        fn compact_stats_equal_the_f64_path(
            gaps in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::prop_oneof![0u64..50_000_000, 4_294_967_290u64..9_000_000_000],
                    0..20,
                ),
                0..40,
            ),
            failed in proptest::collection::vec(proptest::bool::weighted(0.2), 40),
            skip in 0usize..5,
        ) {
            let records: Vec<RequestRecord> = gaps
                .into_iter()
                .enumerate()
                .map(|(i, g)| record(i as u64, g, !failed[i]))
                .collect();
            let mut set = CompactFigureSet::new();
            for r in &records {
                set.push_record(r);
            }
            let include = |i: usize| skip == 0 || !i.is_multiple_of(skip + 1);
            let old: Vec<RequestFigures> = records
                .iter()
                .enumerate()
                .filter(|(i, _)| include(*i))
                .map(|(_, r)| RequestFigures::of(r))
                .collect();
            let params = AggregateParams::new(3_000_000_000);
            proptest::prop_assert_eq!(set.stats(include, params), JobStats::aggregate(&old, params));
            for ((c, g), r) in set.iter().zip(&records) {
                proptest::prop_assert_eq!(g.ns().collect::<Vec<_>>(), r.itl_ns.clone());
                proptest::prop_assert_eq!(c.ttfo_ms(), r.ttfo_ms());
            }
        }
    }

    /// The per-request state exact statistics retain is compact: a fixed
    /// 80-byte part and 4 bytes a gap, however long the run.
    #[test]
    fn a_request_holds_at_most_its_fixed_part_and_4_bytes_a_gap() {
        assert_eq!(std::mem::size_of::<CompactFigures>(), 80);
        let mut set = CompactFigureSet::new();
        let r = record(1, vec![1_000_000; 63], true);
        for _ in 0..1000 {
            set.push_record(&r);
        }
        set.shrink_to_fit();
        assert_eq!(set.heap_bytes(), 1000 * (80 + 63 * 4));
    }
}
