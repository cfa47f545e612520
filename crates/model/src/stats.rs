//! Request statistics: percentiles, summaries and per-job aggregation (pure, no I/O).
//!
//! Definitions: docs/field-cases.md "Definitions" and field case C26:
//! - percentiles use linear interpolation between closest ranks, `h = (n − 1)·q`
//!   (numpy's default `linear` method); the method is recorded as [`PERCENTILE_METHOD`];
//! - mean ITL is gap-weighted (every gap of every request is one sample, pooled);
//! - mean TPOT is request-weighted; requests with ≤ 1 output token are excluded;
//! - failed requests are excluded from every latency and throughput population (C07);
//! - the prefix-cache hit rate is computed only over requests that reported cached tokens,
//!   next to its coverage fraction (C12);
//! - schedule lag (actual send − scheduled send) is summarised so queueing in the client is
//!   never hidden (C24, coordinated omission).
//!
//! - token-derived figures (TPOT, output tokens, output tokens/s) are [`Figure`]s that say
//!   whose counts they rest on: server `usage`, or the client's estimate (an estimate
//!   anywhere makes the figure `client_estimate`); the coverage counts server-reported
//!   requests only.
//!
//! Units: latencies in milliseconds as `f64` (derived from integer `elapsed_ns` by the
//! client), windows in integer nanoseconds from the run clock, rates per second.
//! Missing is `None` (JSON `null`), never 0.
//!
//! The statistics are part of the report model: `JobStats` is a field of every job's
//! report. The one seed mixer that makes seeded sampling reproducible ([`mix64`]) lives here
//! too: load points' arrival seeds, shard seeds and the simulator's per-prompt generators
//! all derive from it.

use serde::{Deserialize, Serialize};

use super::basis::{Basis, TokenCount, TokenSource};
use super::figure::Figure;

/// The percentile method, recorded in every artifact that carries a percentile (C26):
/// numpy's default `linear` method.
pub const PERCENTILE_METHOD: &str =
    "linear interpolation between closest ranks, h = (n-1)*q (numpy default)";

/// A schedule lag above this many milliseconds counts as a schedule miss (C24: lags
/// `[0, 0, 0, 150, 55]` give 2 misses). One millisecond absorbs timer granularity.
pub const DEFAULT_SCHEDULE_MISS_THRESHOLD_MS: f64 = 1.0;

/// The `q`-quantile (`0.0..=1.0`) of samples already sorted ascending, by linear
/// interpolation between closest ranks: `h = (n−1)·q`, `x[⌊h⌋] + (h − ⌊h⌋)·(x[⌈h⌉] − x[⌊h⌋])`.
///
/// Returns `None` for an empty slice or a `q` outside `0..=1` (or NaN). The caller guarantees
/// the order (see [`percentile`] for unsorted input). Source: C26.
pub fn percentile_sorted(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=1.0).contains(&q) {
        return None;
    }
    Some(percentile_of(sorted.len(), |i| sorted[i], q))
}

/// [`percentile_sorted`] over `n > 0` values in ascending order that `at(i)` gives: the one
/// interpolation every exact percentile uses (f64 samples, or integer ns converted as they
/// are read, [`crate::compact`]). `q` is in `0..=1`.
pub fn percentile_of(n: usize, at: impl Fn(usize) -> f64, q: f64) -> f64 {
    let h = (n - 1) as f64 * q;
    let lo = h.floor() as usize;
    let hi = (h.ceil() as usize).min(n - 1);
    let frac = h - lo as f64;
    at(lo) + frac * (at(hi) - at(lo))
}

/// Integer ns as ms, the conversion every latency figure uses (`ns / 1e6` in `f64`).
pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / 1_000_000.0
}

/// The `q`-quantile of unsorted samples (see [`percentile_sorted`]); non-finite samples are
/// ignored. `None` when no finite sample remains or `q` is outside `0..=1`.
pub fn percentile(samples: &[f64], q: f64) -> Option<f64> {
    let sorted = sorted_finite(samples);
    percentile_sorted(&sorted, q)
}

/// The finite samples, sorted ascending by [`f64::total_cmp`] (NaN and ±∞ dropped).
pub fn sorted_finite(samples: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Sum of counts (tokens, mJ) that saturates at `u64::MAX` instead of overflowing:
/// server-reported counts are untrusted input, and a hostile `usage` of `u64::MAX` must
/// neither panic nor wrap. 0 for no items.
pub fn saturating_total(counts: impl IntoIterator<Item = u64>) -> u64 {
    counts.into_iter().fold(0, u64::saturating_add)
}

/// [`saturating_total`] of counts that must all be known: `None` as soon as one is
/// `None` (a partial total would understate), `Some(0)` for no items. Callers that
/// also want `None` for no items check that themselves.
pub fn total_if_complete(counts: impl IntoIterator<Item = Option<u64>>) -> Option<u64> {
    counts
        .into_iter()
        .try_fold(0u64, |total, c| Some(total.saturating_add(c?)))
}

/// The prefix-cache hit rate: cached prompt tokens over prompt tokens, as a fraction
/// (C12). `None` when either count is unknown or there were no prompt tokens: an
/// unreported count is unknown, never a miss. The one definition behind a job's
/// `cache_hit_rate` (sums over its requests), a step's usage and counter hit rates and the
/// per-step tables.
pub fn cache_hit_rate(cached: Option<u64>, prompt: Option<u64>) -> Option<f64> {
    match (cached, prompt) {
        (Some(c), Some(p)) if p > 0 => Some(c as f64 / p as f64),
        _ => None,
    }
}

/// Distribution summary of one population (units are the samples' units, e.g. ms).
///
/// Percentiles per [`PERCENTILE_METHOD`]. Built by [`Summary::from_samples`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of samples.
    pub count: u64,
    /// Arithmetic mean (sample-weighted).
    pub mean: f64,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// How far these figures may lie from the exact ones of the same samples: absent for
    /// an exact summary (every sample kept), set by the streaming aggregation
    /// ([`crate::streaming`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<SummaryBound>,
}

/// The error bound of a streamed [`Summary`], beside its figures in
/// `report.json` and printed after every percentile it qualifies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryBound {
    /// `streaming`.
    pub aggregation: String,
    /// The largest relative error of every percentile and the mean against the exact
    /// figure of the same samples (0.00049 = ±0.049 %).
    pub relative_error: f64,
    /// How the figures were computed.
    pub method: String,
}

impl SummaryBound {
    /// ` ±0.05 % (streaming)`: what follows a figure it qualifies (the relative error as a
    /// percentage, rounded up to two decimals).
    pub fn suffix(&self) -> String {
        let pct = (self.relative_error * 100.0 * 100.0).ceil() / 100.0;
        format!(" ±{pct} % ({})", self.aggregation)
    }
}

impl Summary {
    /// The bound's [`SummaryBound::suffix`], or `""` for an exact summary.
    pub fn bound_suffix(&self) -> String {
        self.bound
            .as_ref()
            .map_or_else(String::new, SummaryBound::suffix)
    }
}

impl Summary {
    /// Summarises `samples`; non-finite samples are ignored. `None` when no finite sample
    /// is given (an empty population is missing, not zero).
    pub fn from_samples(samples: &[f64]) -> Option<Summary> {
        let v = sorted_finite(samples);
        Summary::of_sorted(v.len(), |i| v[i])
    }

    /// The summary of `n` values in ascending order that `at(i)` gives (`None` for none):
    /// the mean sums them in that order, so f64 samples and the same values kept as
    /// integer ns ([`crate::compact`]) summarise to the same bits.
    pub fn of_sorted(n: usize, at: impl Fn(usize) -> f64) -> Option<Summary> {
        if n == 0 {
            return None;
        }
        let mean = (0..n).map(&at).sum::<f64>() / n as f64;
        let p = |q| percentile_of(n, &at, q);
        Some(Summary {
            count: n as u64,
            mean,
            min: at(0),
            max: at(n - 1),
            p50: p(0.50),
            p90: p(0.90),
            p95: p(0.95),
            p99: p(0.99),
            bound: None,
        })
    }
}

/// One request's figures, as the client measured them: the plain input to [`JobStats`].
///
/// Times in milliseconds from the moment the request's last byte was written
/// (docs/field-cases.md "Definitions"), derived from `elapsed_ns` on the run clock. Any unobserved
/// value is `None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestFigures {
    /// The request completed (finish reason or `[DONE]`, no error event, no transport
    /// failure). Failed requests only count towards `requests`/`failed` (C07).
    pub ok: bool,
    /// Time to first token event (content, reasoning or tool-call delta), ms.
    pub ttft_ms: Option<f64>,
    /// Every gap between consecutive token events, ms (one sample per gap, C26).
    pub itl_ms: Vec<f64>,
    /// `(last_token − ttft) / (output_tokens − 1)`, ms; `None` when `output_tokens ≤ 1`.
    pub tpot_ms: Option<f64>,
    /// Send to `[DONE]` (or clean EOF), ms.
    pub e2e_ms: Option<f64>,
    /// Output tokens (server usage, or the client's estimate when the server gave none:
    /// then `output_tokens_estimated`).
    pub output_tokens: Option<u64>,
    /// `output_tokens` (and the TPOT derived from it) is the client's estimate.
    pub output_tokens_estimated: bool,
    /// Prompt tokens from server usage.
    pub prompt_tokens: Option<u64>,
    /// Cached prompt tokens from server usage (`None` = not reported, `Some(0)` = a miss; C12).
    pub cached_tokens: Option<u64>,
    /// Actual send time − scheduled send time, ms (C24); `None` when unscheduled.
    pub schedule_lag_ms: Option<f64>,
    /// Whether a request that asked for a fixed output length came back short
    /// ([`crate::request::RecordWarning::ShortOutput`]); `None` when it asked for none.
    pub short_output: Option<bool>,
    /// Reported − asked prompt tokens; `None` unless both are known.
    pub prompt_tokens_diff: Option<i64>,
}

impl RequestFigures {
    /// A record's figures for the statistics (output tokens: the server's, else the
    /// estimate, flagged).
    pub fn of(r: &super::request::RequestRecord) -> Self {
        let tokens = r.output_token_count();
        RequestFigures {
            ok: r.is_success(),
            ttft_ms: r.ttft_ms(),
            itl_ms: r.itl_ms(),
            tpot_ms: r.tpot().map(|t| t.0),
            e2e_ms: r.e2e_ms(),
            output_tokens: tokens.map(|t| t.tokens),
            output_tokens_estimated: tokens.is_some_and(TokenCount::is_estimate),
            prompt_tokens: r.prompt_tokens,
            cached_tokens: r.cached_tokens,
            schedule_lag_ms: Some(r.schedule_lag_ns() as f64 / 1e6),
            short_output: r.short_output(),
            prompt_tokens_diff: r.prompt_tokens_diff(),
        }
    }

    /// Figures of a successful request from the arrival times (ms) of its token events, per
    /// docs/field-cases.md "Definitions": TTFT = first arrival, one ITL sample per gap, TPOT =
    /// `(last − first) / (output_tokens − 1)` when `output_tokens > 1`. Without a token
    /// count TPOT is `None` (chunks are not tokens, C11: the event count is never used).
    pub fn from_token_arrivals(
        arrivals_ms: &[f64],
        output_tokens: Option<u64>,
        e2e_ms: Option<f64>,
    ) -> RequestFigures {
        let ttft_ms = arrivals_ms.first().copied();
        let itl_ms = arrivals_ms.windows(2).map(|w| w[1] - w[0]).collect();
        let tpot_ms = match (ttft_ms, arrivals_ms.last(), output_tokens) {
            (Some(first), Some(last), Some(n)) if n > 1 => Some((last - first) / (n - 1) as f64),
            _ => None,
        };
        RequestFigures {
            ok: true,
            ttft_ms,
            itl_ms,
            tpot_ms,
            e2e_ms,
            output_tokens,
            ..RequestFigures::default()
        }
    }
}

/// Parameters of [`JobStats::aggregate`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AggregateParams {
    /// The measured window the requests ran in, ns on the run clock (first send to last
    /// completion). Rates are `None` when it is 0.
    pub window_ns: u64,
    /// Lag above which a request counts as a schedule miss, ms (C24).
    pub schedule_miss_threshold_ms: f64,
}

impl AggregateParams {
    /// A window of `window_ns` with the default miss threshold
    /// ([`DEFAULT_SCHEDULE_MISS_THRESHOLD_MS`]).
    pub fn new(window_ns: u64) -> Self {
        Self {
            window_ns,
            schedule_miss_threshold_ms: DEFAULT_SCHEDULE_MISS_THRESHOLD_MS,
        }
    }
}

/// Statistics of one job's requests (report.json per job).
///
/// Every `Option` is `None` (JSON `null`) when its population is empty or its input was
/// never reported; counts are exact integers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobStats {
    /// All requests, successful or not.
    pub requests: u64,
    /// Requests with `ok = true`.
    pub succeeded: u64,
    /// Requests with `ok = false` (transport or protocol failure, C07).
    pub failed: u64,
    /// `failed / requests`; `None` when there were no requests.
    pub error_rate: Option<f64>,
    /// TTFT over successful requests, ms.
    pub ttft_ms: Option<Summary>,
    /// ITL, gap-weighted: every gap of every successful request pooled, ms (C26).
    pub itl_ms: Option<Summary>,
    /// TPOT, request-weighted over successful requests with > 1 output token, ms (C26);
    /// basis `client_timing`, `tokens` says whose counts it divides by (`client_estimate`
    /// when any request's count was estimated).
    pub tpot_ms: Figure<Summary>,
    /// E2E over successful requests, ms.
    pub e2e_ms: Option<Summary>,
    /// E2E measured from the scheduled send time (`e2e + schedule lag`), ms, over successful
    /// requests that were scheduled (C24: latency from schedule beside latency from send).
    pub e2e_from_schedule_ms: Option<Summary>,
    /// The window the rates are computed over, ns.
    pub window_ns: u64,
    /// Successful requests per second over the window; `None` for an empty window.
    pub throughput_rps: Option<f64>,
    /// Output tokens of successful requests; missing unless every successful request has
    /// a count (a partial sum would undercount). Basis `server_reported`, or
    /// `client_estimate` when any count is the client's estimate.
    pub output_tokens: Figure<u64>,
    /// Fraction of successful requests whose output tokens the SERVER reported (estimates
    /// do not count); `None` with no successful request.
    pub output_tokens_coverage: Option<f64>,
    /// `output_tokens` per second over the window (same basis as `output_tokens`).
    pub output_tokens_per_s: Figure<f64>,
    /// Σ cached / Σ prompt tokens over successful requests that reported both (C12);
    /// `None` when none did or their prompt tokens sum to 0.
    pub cache_hit_rate: Option<f64>,
    /// Successful requests that reported both cached and prompt tokens (C12).
    pub cache_reporting_requests: u64,
    /// `cache_reporting_requests / succeeded`; `None` with no successful request.
    pub cache_hit_coverage: Option<f64>,
    /// Schedule lag over every scheduled request (successful or not), ms (C24).
    pub schedule_lag_ms: Option<Summary>,
    /// Scheduled requests whose lag exceeded the threshold; `None` when none was scheduled.
    pub schedule_misses: Option<u64>,
    /// The threshold used for `schedule_misses`, ms.
    pub schedule_miss_threshold_ms: f64,
    /// [`PERCENTILE_METHOD`].
    pub percentile_method: String,
    /// Successful requests that asked for a fixed output length (`output_tokens`) and
    /// came back shorter; absent when none asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_outputs: Option<u64>,
    /// `short_outputs` over the successful requests that asked for a fixed length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_output_rate: Option<f64>,
    /// The largest difference (by magnitude, signed: reported − asked) between the prompt
    /// tokens a successful request was built to and those the server reported;
    /// absent when no request knew both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_diff_max: Option<i64>,
}

/// What the statistics read of one request, whichever form holds it: [`RequestFigures`]
/// (ms as `f64`) or [`crate::compact::CompactFigures`] (integer ns, converted with
/// [`ns_to_ms`] as they are read). Every figure but the pooled ITL is computed from this
/// view by one code path ([`JobStats::aggregate_rows`]).
pub trait FigureRow {
    /// The request completed.
    fn ok(&self) -> bool;
    /// TTFT, ms.
    fn ttft_ms(&self) -> Option<f64>;
    /// TPOT, ms.
    fn tpot_ms(&self) -> Option<f64>;
    /// E2E, ms.
    fn e2e_ms(&self) -> Option<f64>;
    /// Output tokens.
    fn output_tokens(&self) -> Option<u64>;
    /// The output-token count is the client's estimate.
    fn output_tokens_estimated(&self) -> bool;
    /// Output tokens with their source (the two above together).
    fn output_token_count(&self) -> Option<TokenCount> {
        self.output_tokens()
            .map(|n| TokenCount::of(n, self.output_tokens_estimated()))
    }
    /// Prompt tokens (server usage).
    fn prompt_tokens(&self) -> Option<u64>;
    /// Cached prompt tokens (server usage).
    fn cached_tokens(&self) -> Option<u64>;
    /// Schedule lag, ms.
    fn schedule_lag_ms(&self) -> Option<f64>;
    /// A fixed output length was asked: whether the output came back short.
    fn short_output(&self) -> Option<bool>;
    /// Reported − asked prompt tokens.
    fn prompt_tokens_diff(&self) -> Option<i64>;
}

impl FigureRow for RequestFigures {
    fn ok(&self) -> bool {
        self.ok
    }
    fn ttft_ms(&self) -> Option<f64> {
        self.ttft_ms
    }
    fn tpot_ms(&self) -> Option<f64> {
        self.tpot_ms
    }
    fn e2e_ms(&self) -> Option<f64> {
        self.e2e_ms
    }
    fn output_tokens(&self) -> Option<u64> {
        self.output_tokens
    }
    fn output_tokens_estimated(&self) -> bool {
        self.output_tokens_estimated
    }
    fn prompt_tokens(&self) -> Option<u64> {
        self.prompt_tokens
    }
    fn cached_tokens(&self) -> Option<u64> {
        self.cached_tokens
    }
    fn schedule_lag_ms(&self) -> Option<f64> {
        self.schedule_lag_ms
    }
    fn short_output(&self) -> Option<bool> {
        self.short_output
    }
    fn prompt_tokens_diff(&self) -> Option<i64> {
        self.prompt_tokens_diff
    }
}

impl JobStats {
    /// Aggregates one job's requests over `params.window_ns`.
    pub fn aggregate(requests: &[RequestFigures], params: AggregateParams) -> JobStats {
        let itl: Vec<f64> = requests
            .iter()
            .filter(|r| r.ok)
            .flat_map(|r| r.itl_ms.iter().copied())
            .collect();
        let rows: Vec<&RequestFigures> = requests.iter().collect();
        Self::aggregate_rows(&rows, Summary::from_samples(&itl), params)
    }

    /// Aggregates `requests` (any [`FigureRow`]) over `params.window_ns`, with `itl` the
    /// summary of every gap of the successful ones, pooled (the one population that the
    /// row view does not carry).
    pub fn aggregate_rows<R: FigureRow>(
        requests: &[&R],
        itl: Option<Summary>,
        params: AggregateParams,
    ) -> JobStats {
        let mut tally = Tally::default();
        for r in requests {
            tally.add(*r, params.schedule_miss_threshold_ms);
        }
        let ok: Vec<&R> = requests.iter().copied().filter(|r| r.ok()).collect();
        let ttft: Vec<f64> = ok.iter().filter_map(|r| r.ttft_ms()).collect();
        let tpot: Vec<f64> = ok
            .iter()
            .filter(|r| r.output_tokens().is_none_or(|n| n > 1))
            .filter_map(|r| r.tpot_ms())
            .collect();
        let e2e: Vec<f64> = ok.iter().filter_map(|r| r.e2e_ms()).collect();
        let e2e_sched: Vec<f64> = ok
            .iter()
            .filter_map(|r| Some(r.e2e_ms()? + r.schedule_lag_ms()?))
            .collect();
        let lags: Vec<f64> = requests
            .iter()
            .filter_map(|r| r.schedule_lag_ms())
            .collect();
        tally.finish(
            Populations {
                ttft: Summary::from_samples(&ttft),
                itl,
                tpot: Summary::from_samples(&tpot),
                e2e: Summary::from_samples(&e2e),
                e2e_from_schedule: Summary::from_samples(&e2e_sched),
                schedule_lag: Summary::from_samples(&lags),
            },
            params,
        )
    }
}

/// The summaries of a job's latency populations, however they were computed (exact from
/// every sample, or streamed, [`crate::streaming`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Populations {
    /// TTFT over successful requests, ms.
    pub ttft: Option<Summary>,
    /// Every ITL gap of the successful requests, pooled, ms.
    pub itl: Option<Summary>,
    /// TPOT of successful requests with more than one output token, ms.
    pub tpot: Option<Summary>,
    /// E2E over successful requests, ms.
    pub e2e: Option<Summary>,
    /// E2E from the scheduled send, ms.
    pub e2e_from_schedule: Option<Summary>,
    /// Schedule lag of every scheduled request, ms.
    pub schedule_lag: Option<Summary>,
}

/// The counts and sums of a job's statistics, one request at a time: the one definition
/// behind every [`JobStats`] that is not a distribution (counts, token totals and their
/// source, cache hit rate, schedule misses), for the exact and the streaming aggregation
/// alike.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tally {
    requests: u64,
    ok: u64,
    server_out: u64,
    out_complete: bool,
    /// The sum of the counts seen so far; `None` before the first.
    out: Option<TokenCount>,
    tpot_any: bool,
    tpot_estimated: bool,
    cache_n: u64,
    cached_sum: u64,
    prompt_sum: u64,
    lags: u64,
    misses: u64,
    fixed: u64,
    short: u64,
    prompt_diff: Option<i64>,
}

impl Default for Tally {
    fn default() -> Self {
        Self {
            requests: 0,
            ok: 0,
            server_out: 0,
            out_complete: true,
            out: None,
            tpot_any: false,
            tpot_estimated: false,
            cache_n: 0,
            cached_sum: 0,
            prompt_sum: 0,
            lags: 0,
            misses: 0,
            fixed: 0,
            short: 0,
            prompt_diff: None,
        }
    }
}

impl Tally {
    /// Counts one request (`miss_threshold_ms`: [`AggregateParams::schedule_miss_threshold_ms`]).
    pub fn add(&mut self, r: &impl FigureRow, miss_threshold_ms: f64) {
        self.requests += 1;
        if let Some(lag) = r.schedule_lag_ms() {
            self.lags += 1;
            self.misses += u64::from(lag > miss_threshold_ms);
        }
        if !r.ok() {
            return;
        }
        self.ok += 1;
        let est = r.output_tokens_estimated();
        // Server-reported counts are untrusted input: sums saturate instead of
        // overflowing (a hostile `usage` of u64::MAX must not panic or wrap), and a request
        // never counts more cached tokens than its prompt had (hit rate within 0..=1).
        match r.output_token_count() {
            Some(c) => {
                self.out = Some(self.out.map_or(c, |sum| sum.plus(c)));
                self.server_out += u64::from(!c.is_estimate());
            }
            None => self.out_complete = false,
        }
        if r.output_tokens().is_none_or(|n| n > 1) && r.tpot_ms().is_some() {
            self.tpot_any = true;
            self.tpot_estimated |= est;
        }
        if let (Some(prompt), Some(cached)) = (r.prompt_tokens(), r.cached_tokens()) {
            self.cache_n += 1;
            self.cached_sum = self.cached_sum.saturating_add(cached.min(prompt));
            self.prompt_sum = self.prompt_sum.saturating_add(prompt);
        }
        if let Some(short) = r.short_output() {
            self.fixed += 1;
            self.short += u64::from(short);
        }
        if let Some(d) = r.prompt_tokens_diff()
            && self
                .prompt_diff
                .is_none_or(|m| d.unsigned_abs() > m.unsigned_abs())
        {
            self.prompt_diff = Some(d);
        }
    }

    /// Requests counted.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Successful requests counted.
    pub fn succeeded(&self) -> u64 {
        self.ok
    }

    /// The successful requests' output tokens and whose counts they are: `None` when there
    /// is no successful request or one has no count (a partial sum is not a total).
    pub fn output_token_count(&self) -> Option<TokenCount> {
        (self.ok > 0 && self.out_complete).then(|| self.out.unwrap_or(TokenCount::server(0)))
    }

    /// The job's statistics from these counts and the populations' summaries.
    pub fn finish(&self, pops: Populations, params: AggregateParams) -> JobStats {
        let (n_req, n_ok) = (self.requests, self.ok);
        let n_failed = n_req - n_ok;
        let window_s = params.window_ns as f64 / 1e9;
        let per_s = |count: f64| (params.window_ns > 0).then(|| count / window_s);
        let ratio = |num: u64, den: u64| (den > 0).then(|| num as f64 / den as f64);
        let out_total = self.output_token_count().map(|c| c.tokens);
        let out_source = self.out.map(|c| c.source);
        let out_basis = out_source.map_or(Basis::ServerReported, TokenSource::basis);
        let out_reason = if n_ok == 0 {
            "no successful requests"
        } else {
            "a successful request has no output-token count"
        };
        let output_tokens = Figure::from_option(out_total, out_basis, out_reason)
            .with_tokens(out_source.filter(|_| out_total.is_some()));
        let output_tokens_per_s = Figure::from_option(
            out_total.and_then(|t| per_s(t as f64)),
            out_basis,
            if out_total.is_some() {
                "empty window"
            } else {
                out_reason
            },
        )
        .with_tokens(output_tokens.tokens);
        let tpot_ms = Figure::from_option(
            pops.tpot,
            Basis::ClientTiming,
            if n_ok == 0 {
                "no successful requests"
            } else {
                "no request with more than one output token"
            },
        )
        .with_tokens(
            self.tpot_any
                .then(|| TokenSource::estimated(self.tpot_estimated)),
        );

        JobStats {
            requests: n_req,
            succeeded: n_ok,
            failed: n_failed,
            error_rate: ratio(n_failed, n_req),
            ttft_ms: pops.ttft,
            itl_ms: pops.itl,
            tpot_ms,
            e2e_ms: pops.e2e,
            e2e_from_schedule_ms: pops.e2e_from_schedule,
            window_ns: params.window_ns,
            throughput_rps: per_s(n_ok as f64),
            output_tokens,
            output_tokens_coverage: ratio(self.server_out, n_ok),
            output_tokens_per_s,
            cache_hit_rate: cache_hit_rate(Some(self.cached_sum), Some(self.prompt_sum)),
            cache_reporting_requests: self.cache_n,
            cache_hit_coverage: ratio(self.cache_n, n_ok),
            schedule_lag_ms: pops.schedule_lag,
            schedule_misses: (self.lags > 0).then_some(self.misses),
            schedule_miss_threshold_ms: params.schedule_miss_threshold_ms,
            percentile_method: PERCENTILE_METHOD.to_string(),
            short_outputs: (self.fixed > 0).then_some(self.short),
            short_output_rate: ratio(self.short, self.fixed),
            prompt_tokens_diff_max: self.prompt_diff,
        }
    }
}

/// splitmix64 finalizer: a bijective 64-bit mixer (Steele, Lea & Flood, "Fast splittable
/// pseudorandom number generators", 2014). Stable across runs, hosts and Rust versions, so
/// a seed derived with it names the same stream everywhere.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn totals_saturate_and_need_every_count() {
        assert_eq!(saturating_total([u64::MAX, 5]), u64::MAX);
        assert_eq!(saturating_total([]), 0);
        assert_eq!(total_if_complete([Some(u64::MAX), Some(5)]), Some(u64::MAX));
        assert_eq!(total_if_complete([Some(2), Some(3)]), Some(5));
        assert_eq!(total_if_complete([Some(2), None, Some(3)]), None);
        assert_eq!(total_if_complete([]), Some(0));
    }

    /// C26 input: token-event arrival times (ms); usage counts equal event counts.
    fn c26() -> Vec<RequestFigures> {
        let r1: Vec<f64> = (0..11).map(|i| 100.0 + 10.0 * i as f64).collect();
        vec![
            RequestFigures::from_token_arrivals(&r1, Some(11), None),
            RequestFigures::from_token_arrivals(&[100.0, 150.0, 200.0], Some(3), None),
            RequestFigures::from_token_arrivals(&[80.0], Some(1), None),
        ]
    }

    #[test]
    fn c26_tpot_itl_ttft_exact() {
        let s = JobStats::aggregate(&c26(), AggregateParams::new(1_000_000_000));
        assert_eq!(s.tpot_ms.tokens, Some(TokenSource::Server));
        assert_eq!(s.tpot_ms.basis, Basis::ClientTiming);
        let tpot = s.tpot_ms.value.unwrap();
        assert_eq!(tpot.count, 2, "R3 (1 token) excluded");
        assert!(close(tpot.mean, 30.0), "{}", tpot.mean);
        let itl = s.itl_ms.unwrap();
        assert_eq!(itl.count, 12);
        assert!(close(itl.mean, 200.0 / 12.0), "{}", itl.mean);
        assert_eq!(format!("{:.3}", itl.mean), "16.667");
        assert!(close(itl.p50, 10.0));
        assert!(close(itl.p90, 46.0), "{}", itl.p90);
        assert!(close(itl.p99, 50.0));
        let ttft = s.ttft_ms.unwrap();
        assert_eq!(format!("{:.3}", ttft.mean), "93.333");
        assert_eq!(s.percentile_method, PERCENTILE_METHOD);
    }

    #[test]
    fn c26_single_token_tpot_is_none_not_zero() {
        let r = RequestFigures::from_token_arrivals(&[80.0], Some(1), None);
        assert_eq!(r.tpot_ms, None);
        assert!(r.itl_ms.is_empty());
        let r = RequestFigures::from_token_arrivals(&[80.0, 90.0], None, None);
        assert_eq!(r.tpot_ms, None, "no token count, no TPOT");
    }

    #[test]
    fn tpot_of_single_token_request_excluded_even_if_given() {
        let mut r = RequestFigures::from_token_arrivals(&[80.0], Some(1), None);
        r.tpot_ms = Some(0.0);
        let s = JobStats::aggregate(&[r], AggregateParams::new(1));
        assert_eq!(s.tpot_ms.value, None);
    }

    #[test]
    fn percentile_n1_n2_and_bounds() {
        assert_eq!(percentile(&[7.0], 0.0), Some(7.0));
        assert_eq!(percentile(&[7.0], 0.99), Some(7.0));
        assert_eq!(percentile(&[7.0], 1.0), Some(7.0));
        assert_eq!(percentile(&[20.0, 10.0], 0.5), Some(15.0));
        assert!(close(percentile(&[10.0, 20.0], 0.9).unwrap(), 19.0));
        assert!(close(percentile(&[10.0, 20.0], 0.99).unwrap(), 19.9));
        assert_eq!(percentile(&[10.0, 20.0], 0.0), Some(10.0));
        assert_eq!(percentile(&[10.0, 20.0], 1.0), Some(20.0));
        assert_eq!(percentile(&[], 0.5), None);
        assert_eq!(percentile(&[1.0], 1.5), None);
        assert_eq!(percentile(&[1.0], f64::NAN), None);
        // numpy.percentile([1, 2, 3, 4], 25) == 1.75
        assert!(close(
            percentile(&[4.0, 3.0, 2.0, 1.0], 0.25).unwrap(),
            1.75
        ));
    }

    #[test]
    fn summary_of_empty_is_none_and_ignores_non_finite() {
        assert_eq!(Summary::from_samples(&[]), None);
        assert_eq!(Summary::from_samples(&[f64::NAN]), None);
        let s = Summary::from_samples(&[3.0, f64::INFINITY, 1.0]).unwrap();
        assert_eq!(s.count, 2);
        assert_eq!((s.min, s.max, s.mean, s.p50), (1.0, 3.0, 2.0, 2.0));
    }

    #[test]
    fn c07_failed_requests_excluded_from_latency_and_throughput() {
        let mut reqs = c26();
        reqs.push(RequestFigures {
            ok: false,
            ttft_ms: Some(1.0),
            itl_ms: vec![1.0, 1.0],
            e2e_ms: Some(231.0),
            output_tokens: Some(2),
            ..Default::default()
        });
        let s = JobStats::aggregate(&reqs, AggregateParams::new(2_000_000_000));
        assert_eq!((s.requests, s.succeeded, s.failed), (4, 3, 1));
        assert_eq!(s.error_rate, Some(0.25));
        assert_eq!(s.itl_ms.unwrap().count, 12);
        assert_eq!(s.ttft_ms.unwrap().count, 3);
        assert_eq!(s.e2e_ms, None, "no successful request reported E2E");
        assert_eq!(s.throughput_rps, Some(1.5));
        assert_eq!(
            s.output_tokens.value,
            Some(15),
            "failed request's 2 tokens not added"
        );
        assert_eq!(s.output_tokens_per_s.value, Some(7.5));
        assert_eq!(s.output_tokens.basis, Basis::ServerReported);
    }

    #[test]
    fn c12_cache_hit_rate_over_reporting_requests_with_coverage() {
        let req = |cached: Option<u64>, prompt: u64| RequestFigures {
            ok: true,
            prompt_tokens: Some(prompt),
            cached_tokens: cached,
            ..Default::default()
        };
        let s = JobStats::aggregate(
            &[
                req(None, 1000),
                req(Some(0), 1000),
                req(Some(900), 1000),
                req(Some(600), 1000),
            ],
            AggregateParams::new(0),
        );
        assert_eq!(
            s.cache_hit_rate,
            Some(0.5),
            "1500 / 3000, the unreported one excluded"
        );
        assert_eq!(s.cache_hit_coverage, Some(0.75));
        assert_eq!(s.cache_reporting_requests, 3);
        assert_eq!(s.throughput_rps, None, "empty window gives no rate");

        let s = JobStats::aggregate(&[req(None, 1000)], AggregateParams::new(1));
        assert_eq!(s.cache_hit_rate, None, "unreported is unknown, never 0");
        assert_eq!(s.cache_hit_coverage, Some(0.0));
    }

    #[test]
    fn c24_schedule_lag_and_latency_from_schedule() {
        let lags = [0.0, 0.0, 0.0, 150.0, 55.0];
        let reqs: Vec<RequestFigures> = lags
            .iter()
            .map(|&l| RequestFigures {
                ok: true,
                e2e_ms: Some(200.0),
                schedule_lag_ms: Some(l),
                ..Default::default()
            })
            .collect();
        let s = JobStats::aggregate(&reqs, AggregateParams::new(655_000_000));
        let lag = s.schedule_lag_ms.unwrap();
        assert_eq!(lag.max, 150.0);
        assert_eq!(s.schedule_misses, Some(2));
        let e2e = s.e2e_ms.unwrap();
        assert_eq!(
            (e2e.min, e2e.max),
            (200.0, 200.0),
            "service latency unchanged"
        );
        let sched = s.e2e_from_schedule_ms.unwrap();
        assert!(close(sched.mean, 241.0), "{}", sched.mean);
        assert_eq!(sched.max, 350.0);
    }

    proptest::proptest! {
        #[test]
        fn percentile_is_monotone_and_bounded(
            mut xs in proptest::collection::vec(-1e6f64..1e6, 1..64),
            q1 in 0.0f64..=1.0,
            q2 in 0.0f64..=1.0,
        ) {
            let (lo, hi) = if q1 <= q2 { (q1, q2) } else { (q2, q1) };
            let a = percentile(&xs, lo).unwrap();
            let b = percentile(&xs, hi).unwrap();
            xs.sort_by(f64::total_cmp);
            proptest::prop_assert!(a <= b + 1e-9);
            proptest::prop_assert!(a >= xs[0] - 1e-9 && b <= xs[xs.len() - 1] + 1e-9);
            proptest::prop_assert_eq!(percentile(&xs, 0.0).unwrap(), xs[0]);
            proptest::prop_assert_eq!(percentile(&xs, 1.0).unwrap(), xs[xs.len() - 1]);
        }
    }

    #[test]
    fn missing_values_serialize_as_null() {
        let s = JobStats::aggregate(&[], AggregateParams::new(0));
        assert_eq!(s.error_rate, None);
        assert_eq!(s.schedule_misses, None);
        let j = serde_json::to_value(&s).unwrap();
        for k in ["tpot_ms", "output_tokens", "output_tokens_per_s"] {
            assert!(j[k]["value"].is_null(), "{k} must carry a null value");
            assert!(j[k]["reason"].is_string(), "{k} must say why");
        }
        for k in [
            "error_rate",
            "ttft_ms",
            "itl_ms",
            "e2e_ms",
            "throughput_rps",
            "cache_hit_rate",
            "cache_hit_coverage",
            "schedule_lag_ms",
            "schedule_misses",
        ] {
            assert!(
                j.get(k).is_some_and(|v| v.is_null()),
                "{k} must be present as null"
            );
        }
    }

    #[test]
    fn output_tokens_partial_report_is_none_with_coverage() {
        let r = |t: Option<u64>| RequestFigures {
            ok: true,
            output_tokens: t,
            ..Default::default()
        };
        let s = JobStats::aggregate(&[r(Some(10)), r(None)], AggregateParams::new(1_000_000_000));
        assert_eq!(s.output_tokens.value, None);
        assert_eq!(s.output_tokens_per_s.value, None);
        assert_eq!(s.output_tokens_coverage, Some(0.5));
    }

    /// Without server usage, output tokens, tokens/s and TPOT are the
    /// client's estimate and say so; the coverage counts only server-reported requests.
    #[test]
    fn estimated_counts_label_every_derived_figure() {
        let r = |t: u64, est: bool| {
            let mut f = RequestFigures::from_token_arrivals(&[10.0, 15.0, 20.0], Some(t), None);
            f.output_tokens_estimated = est;
            f
        };
        let s = JobStats::aggregate(
            &[r(3, false), r(5, true)],
            AggregateParams::new(1_000_000_000),
        );
        assert_eq!(s.output_tokens.value, Some(8));
        assert_eq!(s.output_tokens.basis, Basis::ClientEstimate);
        assert_eq!(s.output_tokens.tokens, Some(TokenSource::ClientEstimate));
        assert_eq!(s.output_tokens_per_s.basis, Basis::ClientEstimate);
        assert_eq!(s.tpot_ms.tokens, Some(TokenSource::ClientEstimate));
        assert_eq!(
            s.output_tokens_coverage,
            Some(0.5),
            "the estimate is not coverage"
        );
        let all_server = JobStats::aggregate(&[r(3, false)], AggregateParams::new(1_000_000_000));
        assert_eq!(all_server.output_tokens.basis, Basis::ServerReported);
        assert_eq!(all_server.output_tokens_coverage, Some(1.0));
        let none = JobStats::aggregate(&[r(3, true)], AggregateParams::new(1_000_000_000));
        assert_eq!(none.output_tokens_coverage, Some(0.0));
    }

    #[test]
    fn hostile_usage_saturates_and_hit_rate_stays_a_fraction() {
        let r = |prompt: u64, cached: u64, out: u64| RequestFigures {
            ok: true,
            prompt_tokens: Some(prompt),
            cached_tokens: Some(cached),
            output_tokens: Some(out),
            ..Default::default()
        };
        let s = JobStats::aggregate(
            &[r(u64::MAX, u64::MAX, u64::MAX), r(5, 500, 3)],
            AggregateParams::new(1_000_000_000),
        );
        assert_eq!(s.output_tokens.value, Some(u64::MAX));
        let rate = s.cache_hit_rate.unwrap();
        assert!((0.0..=1.0).contains(&rate), "{rate}");
        let s = JobStats::aggregate(&[r(5, 500, 3)], AggregateParams::new(1_000_000_000));
        assert_eq!(
            s.cache_hit_rate,
            Some(1.0),
            "cached is capped at the prompt"
        );
    }

    /// A hit rate needs both counts and some prompt tokens: unknown is never a miss.
    #[test]
    fn cache_hit_rate_needs_both_counts_and_a_prompt() {
        assert_eq!(cache_hit_rate(Some(3), Some(4)), Some(0.75));
        assert_eq!(cache_hit_rate(Some(0), Some(4)), Some(0.0));
        assert_eq!(cache_hit_rate(Some(0), Some(0)), None);
        assert_eq!(cache_hit_rate(None, Some(4)), None);
        assert_eq!(cache_hit_rate(Some(3), None), None);
    }

    /// splitmix64's published finalizer on fixed inputs: a changed constant or shift would
    /// silently re-seed every saved load schedule and shard assignment.
    #[test]
    fn mix64_is_the_splitmix64_finalizer() {
        assert_eq!(mix64(0), 0);
        // First output of splitmix64 seeded with 0: mix64(0 + golden gamma).
        assert_eq!(mix64(0x9E37_79B9_7F4A_7C15), 0xe220_a839_7b1d_cdaf);
        assert_ne!(mix64(1), mix64(2));
    }
}
