//! The curve of a load run (pure): per-point statistics, goodput against the job's latency
//! gates, energy per output token over the point's window, warm-up selection and the
//! console table.
//!
//! Definitions:
//! - latency is reported **from send** (the job statistics' own TTFT/E2E) and **from
//!   schedule** (`+ schedule lag`, so time spent queueing in the client is never hidden,
//!   field case C24);
//! - **goodput**: a request is *good* when it succeeded and meets every latency bound the
//!   job's gates declare, each bound applied per request as its highest declared percentile
//!   (`p99`, else `p95`, `p90`, `p50`, `mean`): TTFT and E2E **from schedule** (what the
//!   user waits), the request's mean ITL, its TPOT. A request without a TTFT or E2E does
//!   not meet a bound on it; a request with no ITL gap or no TPOT (≤ 1 output token, C26)
//!   does not violate one. `goodput_fraction = good / requests`, `goodput_rps = good /
//!   window`. Without latency bounds goodput is `null` (missing, not 0);
//! - **energy per output token**: the device energy over the point's window (the one window
//!   integral of docs/measurement.md "Energy over a window", summed over devices) divided by every output token the
//!   point's requests reported (warm-up included: they ran inside the window). It is a
//!   window measurement at any concurrency — never a per-step attribution — labelled with
//!   the power source's basis (`simulated` for the simulator);
//! - **warm-up**: the first `K` requests of a point ordered by scheduled, then actual send
//!   time.

use std::fmt::Write as _;

use crate::attribution::{ABSENT, align_rows};
use crate::gate::spec::{GateSpec, PercentileBounds};
use crate::model::compact::{CompactFigureSet, CompactFigures};
pub use crate::model::load::{
    Goodput, GoodputCriteria, PointEnergy, PointFacts, PointSummary, WindowEnergy, WindowMethod,
};
use crate::model::stats::Tally;
use crate::model::streaming::StreamingStats;
use crate::model::{TokenCount, TokenSource};
use crate::stats::{AggregateParams, FigureRow, RequestFigures, Summary};
use std::ops::Range;

/// One request of a point as the curve needs it: its figures (from send) plus identity.
#[derive(Debug, Clone, PartialEq)]
pub struct PointRequest {
    /// The client's figures (TTFT/E2E from send, ITL, TPOT, schedule lag, tokens).
    pub figures: RequestFigures,
    /// Excluded from statistics (warm-up).
    pub warmup: bool,
}

fn loosest(b: &Option<PercentileBounds>) -> Option<f64> {
    let b = b.as_ref()?;
    b.p99.or(b.p95).or(b.p90).or(b.p50).or(b.mean)
}

/// The per-request thresholds of `gates` (see the module docs); `None` when the gates
/// declare no latency bound.
pub fn goodput_criteria(gates: &GateSpec) -> Option<GoodputCriteria> {
    let c = GoodputCriteria {
        ttft_ms: loosest(&gates.ttft_ms),
        itl_ms: loosest(&gates.itl_ms),
        tpot_ms: loosest(&gates.tpot_ms),
        e2e_ms: loosest(&gates.e2e_ms),
    };
    (c != GoodputCriteria::default()).then_some(c)
}

/// Whether one request is good against `c`.
pub fn meets(c: &GoodputCriteria, r: &RequestFigures) -> bool {
    let mean_itl =
        (!r.itl_ms.is_empty()).then(|| r.itl_ms.iter().sum::<f64>() / r.itl_ms.len() as f64);
    meets_row(c, r, mean_itl)
}

/// [`meets`] for any form of a request's figures, with its mean ITL gap (ms).
pub fn meets_row(c: &GoodputCriteria, r: &impl FigureRow, mean_itl_ms: Option<f64>) -> bool {
    if !r.ok() {
        return false;
    }
    let lag = r.schedule_lag_ms().unwrap_or(0.0);
    let within = |v: Option<f64>, bound: Option<f64>, missing_ok: bool| match (bound, v) {
        (None, _) => true,
        (Some(_), None) => missing_ok,
        (Some(b), Some(v)) => v <= b,
    };
    within(r.ttft_ms().map(|t| t + lag), c.ttft_ms, false)
        && within(r.e2e_ms().map(|t| t + lag), c.e2e_ms, false)
        && within(mean_itl_ms, c.itl_ms, true)
        && within(r.tpot_ms(), c.tpot_ms, true)
}

/// `ttft_ms <= 2000, e2e_ms <= 5000` (from schedule).
pub fn describe_criteria(c: &GoodputCriteria) -> String {
    let parts: Vec<String> = {
        [
            ("ttft_ms", c.ttft_ms),
            ("itl_ms", c.itl_ms),
            ("tpot_ms", c.tpot_ms),
            ("e2e_ms", c.e2e_ms),
        ]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k} <= {}", crate::gate::format_number(v))))
        .collect()
    };
    parts.join(", ")
}

/// Summarises one point: statistics over its non-warm-up requests, TTFT from schedule,
/// goodput against `criteria`, energy per output token over `energy` (the point window's
/// device energy; see the module docs).
pub fn summarize_point(
    facts: PointFacts,
    requests: &[PointRequest],
    criteria: Option<&GoodputCriteria>,
    energy: Option<WindowEnergy>,
) -> PointSummary {
    let figs: Vec<RequestFigures> = requests.iter().map(|r| r.figures.clone()).collect();
    let set = RequestFigures::to_ns_set(&figs);
    let warm: Vec<bool> = requests.iter().map(|r| r.warmup).collect();
    summarize_point_compact(facts, (&set, 0..set.len()), &warm, criteria, energy)
}

/// [`summarize_point`] over the requests `range` of a job's compact figures (no
/// per-point copy); `warm[i]` flags request `i` of the set as warm-up.
pub fn summarize_point_compact(
    facts: PointFacts,
    (set, range): (&CompactFigureSet, Range<usize>),
    warm: &[bool],
    criteria: Option<&GoodputCriteria>,
    energy: Option<WindowEnergy>,
) -> PointSummary {
    let is_warm = |i: usize| warm.get(i).copied().unwrap_or(false);
    let in_point = |i: usize| range.contains(&i);
    let measured = |i: usize| in_point(i) && !is_warm(i);
    let window_ns = facts.window_ns;
    let stats = set.stats(measured, AggregateParams::new(window_ns));
    let rows = || set.iter().enumerate().skip(range.start).take(range.len());
    let ttft_sched: Vec<f64> = rows()
        .filter(|(i, (r, _))| measured(*i) && r.ok())
        .filter_map(|(_, (r, _))| Some(r.ttft_ms()? + r.schedule_lag_ms()?))
        .collect();
    let n_measured = range.clone().filter(|&i| !is_warm(i)).count();
    let goodput = criteria.map(|c| {
        let good = rows()
            .filter(|(i, (r, g))| measured(*i) && meets_row(c, *r, g.mean_ms()))
            .count() as u64;
        goodput(c, good, n_measured as u64, window_ns)
    });
    let energy = energy.map(|w| {
        let ok: Vec<&CompactFigures> = rows().map(|(_, (r, _))| r).filter(|r| r.ok()).collect();
        let count = (!ok.is_empty())
            .then(|| TokenCount::total(ok.iter().map(|r| r.output_token_count())))
            .flatten();
        point_energy(w, count)
    });
    PointSummary {
        facts,
        warmup_requests: range.clone().filter(|&i| is_warm(i)).count() as u64,
        stats,
        ttft_from_schedule_ms: Summary::from_samples(&ttft_sched),
        goodput,
        energy,
    }
}

/// A point's goodput: `good` of its `n_measured` requests met `c` over `window_ns`.
fn goodput(c: &GoodputCriteria, good: u64, n_measured: u64, window_ns: u64) -> Goodput {
    Goodput {
        good_requests: good,
        fraction: (n_measured > 0).then(|| good as f64 / n_measured as f64),
        rps: (window_ns > 0).then(|| good as f64 / (window_ns as f64 / 1e9)),
        criteria: c.clone(),
    }
}

/// A point's energy over its window, with its successful requests' output tokens (`None`
/// when one has no count) and the joules per output token they give.
fn point_energy(w: WindowEnergy, count: Option<TokenCount>) -> PointEnergy {
    let output_tokens = count.map(|c| c.tokens);
    PointEnergy {
        energy_mj: w.energy_mj,
        output_tokens,
        tokens: count.map(|c| c.source),
        energy_per_output_token_j: output_tokens
            .filter(|&t| t > 0)
            .map(|t| w.energy_mj as f64 / 1000.0 / t as f64),
        basis: w.basis,
        method: w.method,
    }
}

/// [`summarize_point`] of a streaming point ([`StreamedPoint`]): the same
/// figures from its histograms, every percentile with its error bound.
pub fn summarize_point_streamed(
    facts: PointFacts,
    p: &StreamedPoint,
    criteria: Option<&GoodputCriteria>,
    energy: Option<WindowEnergy>,
) -> PointSummary {
    let window_ns = facts.window_ns;
    let stats = p.stats.stats(AggregateParams::new(window_ns));
    let n_measured = p.stats.requests();
    let goodput = criteria.map(|c| goodput(c, p.good, n_measured, window_ns));
    let energy = energy.map(|w| point_energy(w, p.all.output_token_count()));
    PointSummary {
        facts,
        warmup_requests: p.warmup,
        stats,
        ttft_from_schedule_ms: p.stats.ttft_from_schedule(),
        goodput,
        energy,
    }
}

/// A streaming load job's statistics : HDR histograms for the job and for
/// each point, over the requests that are not warm-up; nothing grows with the requests.
#[derive(Debug, Clone, Default)]
pub struct StreamedUnits {
    /// The job's measured (non-warm-up) requests.
    pub job: StreamingStats,
    /// Every request of the job, warm-up included (its output tokens, for the job energy).
    pub all: Tally,
    /// Per point, in the job's point order.
    pub points: Vec<StreamedPoint>,
}

/// One point of a streaming load job.
#[derive(Debug, Clone, Default)]
pub struct StreamedPoint {
    /// The point's measured requests.
    pub stats: StreamingStats,
    /// Every request of the point, warm-up included (the point window's output tokens).
    pub all: Tally,
    /// Warm-up requests (left out of `stats`).
    pub warmup: u64,
    /// Measured requests that met the job's goodput criteria.
    pub good: u64,
}

/// Warm-up flags: `true` for the first `k` requests ordered by `(scheduled_ns, send_ns)`
/// (ties keep input order). `keys[i] = (scheduled_ns, send_ns)` of request `i`.
pub fn warmup_flags(keys: &[(u64, u64)], k: u64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| (keys[i].0, keys[i].1, i));
    let mut flags = vec![false; keys.len()];
    for &i in order.iter().take(usize::try_from(k).unwrap_or(usize::MAX)) {
        flags[i] = true;
    }
    flags
}

/// A tokens-per-second cell: one decimal, `~` in front of a client estimate, `—` missing.
fn tokens_cell(f: &crate::model::Figure<f64>) -> String {
    match f.value {
        None => ABSENT.to_string(),
        Some(v) if f.tokens == Some(TokenSource::ClientEstimate) => format!("~{v:.1}"),
        Some(v) => format!("{v:.1}"),
    }
}

/// The console table of a curve, e.g.
///
/// ```text
/// load agentic::fanout · sweep over concurrency · latency ms from send | from schedule
///   point          achieved  reqs  ttft p50  ttft p99  e2e p50  e2e p99  e2e p99 sched  lag p99  req/s  out tok/s  goodput  J/out tok
///   concurrency 1         1     8      21.2      22.9     98.1    101.0          101.0      0.1   9.82      157.1   100.0%     0.4123
/// ```
///
/// Absent values print as `—`.
pub fn render_curve(job_id: &str, variable: Option<&str>, points: &[PointSummary]) -> String {
    const H: [&str; 13] = [
        "point",
        "achieved",
        "reqs",
        "ttft p50",
        "ttft p99",
        "e2e p50",
        "e2e p99",
        "e2e p99 sched",
        "lag p99",
        "req/s",
        "out tok/s",
        "goodput",
        "J/out tok",
    ];
    let dash = || ABSENT.to_string();
    let f = |v: Option<f64>, p: usize| v.map_or_else(dash, |v| format!("{v:.p$}"));
    let rows: Vec<[String; 13]> = std::iter::once(H.map(String::from))
        .chain(points.iter().map(|p| {
            let s = &p.stats;
            [
                p.label.clone(),
                p.achieved_concurrency.to_string(),
                s.requests.to_string(),
                f(s.ttft_ms.as_ref().map(|x| x.p50), 1),
                f(s.ttft_ms.as_ref().map(|x| x.p99), 1),
                f(s.e2e_ms.as_ref().map(|x| x.p50), 1),
                f(s.e2e_ms.as_ref().map(|x| x.p99), 1),
                f(s.e2e_from_schedule_ms.as_ref().map(|x| x.p99), 1),
                f(s.schedule_lag_ms.as_ref().map(|x| x.p99), 1),
                f(s.throughput_rps, 2),
                tokens_cell(&s.output_tokens_per_s),
                p.goodput
                    .as_ref()
                    .and_then(|g| g.fraction)
                    .map_or_else(dash, |v| format!("{:.1}%", v * 100.0)),
                f(
                    p.energy.as_ref().and_then(|e| e.energy_per_output_token_j),
                    4,
                ),
            ]
        }))
        .collect();
    let mut out = String::new();
    let what = variable.map_or_else(|| "one point".to_string(), |v| format!("sweep over {v}"));
    let _ = writeln!(
        out,
        "load {job_id} · {what} · latency ms from send, `sched` = from the scheduled send (C24)"
    );
    // The point label left-aligned, numbers right-aligned.
    for l in align_rows(&rows, |i| i == 0, "  ") {
        let _ = writeln!(out, "{l}");
    }
    // Streamed percentiles say so under the table, with their bound.
    if let Some(b) = points.iter().find_map(|p| {
        [&p.stats.ttft_ms, &p.stats.e2e_ms, &p.stats.schedule_lag_ms]
            .into_iter()
            .find_map(|s| s.as_ref().and_then(|s| s.bound.clone()))
    }) {
        let _ = writeln!(
            out,
            "  percentiles:{} of the exact ones (HDR histograms; count, min, max exact)",
            b.suffix()
        );
    }
    if let Some(e) = points.iter().find_map(|p| p.energy.as_ref()) {
        let _ = writeln!(
            out,
            "  energy: {} window energy / output tokens per point ({}), not a per-step figure",
            e.basis.label(),
            e.method.label()
        );
    }
    if points
        .iter()
        .any(|p| p.stats.output_tokens_per_s.tokens == Some(TokenSource::ClientEstimate))
    {
        let _ = writeln!(
            out,
            "  ~ out tok/s from client-estimated output tokens (the server sent no usage)"
        );
    }
    if let Some(g) = points.iter().find_map(|p| p.goodput.as_ref()) {
        let _ = writeln!(
            out,
            "  goodput: requests with {} (latency from schedule)",
            describe_criteria(&g.criteria)
        );
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(ttft: f64, e2e: f64, lag: f64, tokens: u64) -> PointRequest {
        PointRequest {
            figures: RequestFigures {
                ok: true,
                ttft_ms: Some(ttft),
                e2e_ms: Some(e2e),
                itl_ms: vec![5.0, 7.0],
                tpot_ms: Some(6.0),
                output_tokens: Some(tokens),
                schedule_lag_ms: Some(lag),
                ..Default::default()
            },
            warmup: false,
        }
    }

    fn facts(window_ns: u64) -> PointFacts {
        PointFacts {
            index: 0,
            value: Some(4.0),
            label: "concurrency 4".into(),
            concurrency: Some(4),
            rate: None,
            achieved_concurrency: 4,
            max_requests_in_flight: 4,
            units: 4,
            units_not_started: 0,
            window_ns,
            trajectories: vec![],
            connections: None,
        }
    }

    fn window(mj: u64, basis: crate::model::Basis) -> Option<WindowEnergy> {
        Some(WindowEnergy {
            energy_mj: mj,
            basis,
            method: WindowMethod::Counter,
        })
    }

    #[test]
    fn goodput_uses_latency_from_schedule_and_the_loosest_bound() {
        let gates: GateSpec =
            toml::from_str("ttft_ms = { p50 = 10.0, p99 = 100.0 }\ne2e_ms = { p99 = 300.0 }")
                .unwrap();
        let c = goodput_criteria(&gates).unwrap();
        assert_eq!(c.ttft_ms, Some(100.0));
        assert_eq!(c.e2e_ms, Some(300.0));
        let reqs = vec![
            req(50.0, 200.0, 0.0, 10),  // good
            req(50.0, 200.0, 60.0, 10), // ttft from schedule 110 > 100
            req(50.0, 250.0, 40.0, 10), // e2e from schedule 290: good
            req(150.0, 200.0, 0.0, 10), // ttft 150
        ];
        let s = summarize_point(facts(2_000_000_000), &reqs, Some(&c), None);
        let g = s.goodput.unwrap();
        assert_eq!(g.good_requests, 2);
        assert_eq!(g.fraction, Some(0.5));
        assert_eq!(g.rps, Some(1.0));
        let sched = s.ttft_from_schedule_ms.unwrap();
        assert_eq!(sched.max, 150.0);
        assert_eq!(sched.min, 50.0);
        assert!(goodput_criteria(&GateSpec::default()).is_none());
    }

    #[test]
    fn failed_and_warmup_requests() {
        let c = GoodputCriteria {
            e2e_ms: Some(1000.0),
            ..Default::default()
        };
        let mut bad = req(1.0, 1.0, 0.0, 3);
        bad.figures.ok = false;
        let mut warm = req(1.0, 1.0, 0.0, 7);
        warm.warmup = true;
        let s = summarize_point(
            facts(1_000_000_000),
            &[req(1.0, 1.0, 0.0, 10), bad, warm],
            Some(&c),
            window(2000, crate::model::Basis::Simulated),
        );
        assert_eq!(s.stats.requests, 2, "warm-up excluded");
        assert_eq!(s.warmup_requests, 1);
        assert_eq!(s.goodput.as_ref().unwrap().good_requests, 1);
        let e = s.energy.unwrap();
        assert_eq!(e.output_tokens, Some(17), "window tokens include warm-up");
        assert!((e.energy_per_output_token_j.unwrap() - 2.0 / 17.0).abs() < 1e-12);
    }

    #[test]
    fn missing_tokens_give_no_energy_per_token() {
        let mut r = req(1.0, 1.0, 0.0, 0);
        r.figures.output_tokens = None;
        let s = summarize_point(
            facts(1),
            &[r],
            None,
            window(5, crate::model::Basis::Measured),
        );
        let e = s.energy.unwrap();
        assert_eq!(e.output_tokens, None);
        assert_eq!(e.energy_per_output_token_j, None);
        assert!(s.goodput.is_none());
    }

    #[test]
    fn warmup_takes_the_first_scheduled() {
        let keys = [(30, 31), (10, 50), (10, 12), (20, 20)];
        assert_eq!(warmup_flags(&keys, 2), vec![false, true, true, false]);
        assert_eq!(warmup_flags(&keys, 0), vec![false; 4]);
        assert_eq!(warmup_flags(&keys, 9), vec![true; 4]);
    }

    #[test]
    fn curve_table_has_a_row_per_point_and_dashes_for_missing() {
        let c = GoodputCriteria {
            e2e_ms: Some(1000.0),
            ..Default::default()
        };
        let a = summarize_point(
            facts(1_000_000_000),
            &[req(1.0, 2.0, 0.0, 4)],
            Some(&c),
            None,
        );
        let mut f = facts(1_000_000_000);
        f.label = "concurrency 16".into();
        let b = summarize_point(f, &[], Some(&c), None);
        let t = render_curve("s::j", Some("concurrency"), &[a, b]);
        assert!(t.starts_with("load s::j · sweep over concurrency"), "{t}");
        assert!(t.contains("concurrency 4"));
        assert!(t.contains("concurrency 16"));
        assert!(t.contains("100.0%"));
        assert!(t.contains('—'));
        assert!(t.contains("goodput: requests with e2e_ms <= 1000"));
    }

    /// Output tokens/s from estimated counts are marked `~` in the curve,
    /// and a point's energy per output token says whose counts it divides by.
    #[test]
    fn estimated_tokens_are_marked_in_the_curve() {
        let mut r = req(1.0, 2.0, 0.0, 4);
        r.figures.output_tokens_estimated = true;
        let p = summarize_point(
            facts(1_000_000_000),
            &[r],
            None,
            window(1000, crate::model::Basis::Simulated),
        );
        assert_eq!(
            p.energy.as_ref().and_then(|e| e.tokens),
            Some(TokenSource::ClientEstimate)
        );
        let t = render_curve("s::j", None, &[p]);
        assert!(t.contains("~4.0"), "{t}");
        assert!(t.contains("client-estimated output tokens"), "{t}");
    }
}
