//! `merge RUN_DIR... --out DIR`: one run directory from the run directories of every
//! shard of one run. See `docs/sharding.md`.
//!
//! What is exact and what is aligned:
//!
//! - the shards must be one run: the same suite fingerprint, seeds, mode and N, each K of
//!   1..=N exactly once (else exit 2 naming what does not match);
//! - every shard keeps its clock domain: its directory is copied verbatim to `shards/K/`
//!   (report, steps, samples, timeline and its manifest), and `merge.shards[]` keeps its
//!   clock domain, anchor, power, attribution and own windows;
//! - the merged report puts every shard's times on one axis: shard K's `*_ns` values are
//!   shifted by `anchor_K − min(anchor)` (an integer, so every duration *within* a shard —
//!   TTFT, ITL, E2E, step and trajectory durations — is unchanged to the nanosecond).
//!   Nothing subtracts the monotonic times of two shards; a difference across shards on the
//!   merged axis is a wall-clock difference, uncertain by `merge.alignment.uncertainty_ns`;
//! - partitions: every job ran in exactly one shard and is kept as that shard reported it;
//! - shares of a load job (`--shard`): percentiles, goodput and confidence intervals come
//!   from the union of the shards' raw request records (never an average of shard
//!   percentiles); rates are over the window in which every shard running the point was
//!   running (the overlap of the shards' windows on the merged axis), counting the requests
//!   that completed inside it; gates are judged again on the merged figures with the job's
//!   own bounds (recorded by each shard); energy stays per shard (each shard's own
//!   devices): the merged job's energy figures are unavailable, with the reason;
//! - the concurrency statement counts trajectories in flight across all shards on the
//!   merged axis.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::report::status::{StatusFacts, job_status};
use sha2::{Digest, Sha256};

use crate::gate::{FigureSet, JobOutcome};
use crate::model::exit::ExitCode;
use crate::model::figure::Figure;
use crate::model::load::{Goodput, GoodputCriteria, LoadReport, PointSummary, SweepReport};
use crate::model::records::UnitRecord;
use crate::model::shard::{
    AlignedWindow, Alignment, JobShare, MergeReport, MergedConcurrency, ShardJobSection, ShardMode,
    ShardSection,
};
use crate::model::{
    Basis, CaptureReport, FailureCount, JobEnergy, JobReport, JobStatus, PowerReport, Quality,
    REPORT_SCHEMA, RequestRecord, RunReport, SummaryReport, TrajectoryReport,
};
use crate::report::baseline::compare::regression_figure;
use crate::report::curve::{PointFacts, PointRequest};
use crate::runner::load::{Arrival, LoadPoint, Stop, goodput_criteria, summarize_point};
use crate::stats::{AggregateParams, JobStats, PERCENTILE_METHOD, RequestFigures};

pub use crate::shard::DEFAULT_HOST_OFFSET_MS;

/// One shard's run, read.
#[derive(Debug, Clone)]
pub struct ShardInput {
    /// Its run directory.
    pub dir: PathBuf,
    /// Its report.
    pub report: RunReport,
}

fn bad<T>(m: String) -> Result<T, String> {
    Err(m)
}

/// The host part of a clock domain id `mono:HOST:PID:ANCHOR` (the whole id otherwise).
fn host_of(domain: &str) -> &str {
    crate::clock::domain_host(domain).unwrap_or(domain)
}

/// Checks that `inputs` are the shards of one run; returns them ordered by K.
fn validate(inputs: &[ShardInput]) -> Result<Vec<&ShardInput>, String> {
    let mut by_k: BTreeMap<u32, &ShardInput> = BTreeMap::new();
    let first = inputs
        .first()
        .ok_or_else(|| "no run directory given".to_string())?;
    let Some(base) = &first.report.shard else {
        return bad(format!(
            "{}: not a shard run (its report.json has no `shard` identity: run it with \
             --partition or --shard)",
            first.dir.display()
        ));
    };
    for i in inputs {
        let d = i.dir.display();
        if i.report.merge.is_some() {
            return bad(format!(
                "{d}: already a merged run; merge the shards' own run directories"
            ));
        }
        let Some(s) = &i.report.shard else {
            return bad(format!(
                "{d}: not a shard run (its report.json has no `shard` identity: run it with \
                 --partition or --shard)"
            ));
        };
        let f = first.dir.display();
        if s.suite_fingerprint != base.suite_fingerprint {
            return bad(format!(
                "{d}: suite fingerprint {} differs from {f}'s {} (not the same suites, flags \
                 or job selection)",
                s.suite_fingerprint, base.suite_fingerprint
            ));
        }
        if s.mode != base.mode || s.partition != base.partition {
            let m = |x: &crate::model::ShardIdentity| match x.partition {
                Some(p) => format!("partition {}", p.as_str()),
                None => x.mode.as_str().to_string(),
            };
            return bad(format!("{d}: ran as {} but {f} as {}", m(s), m(base)));
        }
        if s.n != base.n {
            return bad(format!(
                "{d}: shard {}/{} but {f} is one of {} shards",
                s.k, s.n, base.n
            ));
        }
        let seeds = |x: &crate::model::ShardIdentity| {
            x.seeds
                .iter()
                .map(|v| (v.suite.clone(), v.seed))
                .collect::<Vec<_>>()
        };
        if seeds(s) != seeds(base) {
            return bad(format!(
                "{d}: suite seeds {:?} differ from {f}'s {:?}",
                seeds(s),
                seeds(base)
            ));
        }
        if let Some(prev) = by_k.insert(s.k, i) {
            return bad(format!(
                "shard {}/{} appears twice: {} and {d}",
                s.k,
                s.n,
                prev.dir.display()
            ));
        }
    }
    let missing: Vec<String> = (1..=base.n)
        .filter(|k| !by_k.contains_key(k))
        .map(|k| k.to_string())
        .collect();
    if !missing.is_empty() {
        return bad(format!(
            "shards {} of {} missing (each K of 1..={} exactly once)",
            missing.join(", "),
            base.n,
            base.n
        ));
    }
    Ok(by_k.into_values().collect())
}

/// Earliest and latest reference instant `merge` accepts (years 2000 and 2200, unix ns):
/// an anchor outside is damaged or edited, and shifting by it would overflow.
const ANCHOR_RANGE_UNIX_NS: (u64, u64) = (946_684_800_000_000_000, 7_258_118_400_000_000_000);

/// Largest `shard.anchor_read_ns` `merge` accepts: the bracket of one clock read is
/// nanoseconds to microseconds; a second is already a damaged or edited report (and the
/// merged axis's uncertainty is taken from it).
const MAX_ANCHOR_READ_NS: u64 = 1_000_000_000;

/// `shard K (DIR)`, for messages.
fn shard_name(i: &ShardInput) -> String {
    let k = i.report.shard.as_ref().map_or(0, |s| s.k);
    format!("shard {k} ({})", i.dir.display())
}

/// Checks what makes each shard its own run, on shards that passed
/// [`validate`]: a plausible reference instant that equals the one its clock-domain id
/// (`mono:HOST:PID:ANCHOR`) states, a clock domain no other shard has, and request ids
/// no other shard has (a shard directory copied as another, with only its index edited,
/// has its twin's). Errors name the shard and the field.
fn check_shards_are_distinct(shards: &[&ShardInput]) -> Result<(), String> {
    let mut domains: HashMap<&str, &ShardInput> = HashMap::new();
    let mut ids: HashMap<&str, &ShardInput> = HashMap::new();
    for &i in shards {
        let r = &i.report;
        let a = r.reference_instant_unix_ns;
        if !(ANCHOR_RANGE_UNIX_NS.0..=ANCHOR_RANGE_UNIX_NS.1).contains(&a) {
            return bad(format!(
                "{}: field `reference_instant_unix_ns`: {a} is not a unix instant between \
                 the years 2000 and 2200 (a damaged or edited report)",
                shard_name(i)
            ));
        }
        let read = r.shard.as_ref().map_or(0, |s| s.anchor_read_ns);
        if read > MAX_ANCHOR_READ_NS {
            return bad(format!(
                "{}: field `shard.anchor_read_ns`: {read} ns is not the bracket of one clock \
                 read (at most {MAX_ANCHOR_READ_NS} ns; a damaged or edited report)",
                shard_name(i)
            ));
        }
        let stated = r
            .clock_domain_id
            .strip_prefix("mono:")
            .and_then(|rest| rest.rsplit(':').next())
            .and_then(|t| t.parse::<u64>().ok());
        if let Some(t) = stated.filter(|&t| t != a) {
            return bad(format!(
                "{}: field `reference_instant_unix_ns`: {a} differs by {:.3} s from the \
                 anchor {t} its `clock_domain_id` {} states (a damaged or edited report)",
                shard_name(i),
                (a as f64 - t as f64) / 1e9,
                r.clock_domain_id
            ));
        }
        if let Some(prev) = domains.insert(r.clock_domain_id.as_str(), i) {
            return bad(format!(
                "{}: field `clock_domain_id`: {} is also {}'s: one process's run cannot \
                 be two shards (a copied directory?)",
                shard_name(i),
                r.clock_domain_id,
                shard_name(prev)
            ));
        }
        for q in r.jobs.iter().flat_map(|j| j.requests.iter()) {
            if let Some(prev) = ids.insert(q.request_id.as_str(), i)
                && !std::ptr::eq(prev, i)
            {
                return bad(format!(
                    "{}: field `request_id` (requests.jsonl): {} is also a request of {} \
                     (a copied directory?)",
                    shard_name(i),
                    q.request_id,
                    shard_name(prev)
                ));
            }
        }
    }
    Ok(())
}

/// Whether `path` (which may not exist yet) is `dir` or lies below it, with symbolic
/// links and `..` of their existing parts resolved.
fn lies_inside(path: &Path, dir: &Path) -> bool {
    let Ok(dir) = dir.canonicalize() else {
        return false;
    };
    // The deepest existing ancestor, canonical, and the rest appended as written.
    let mut rest = Vec::new();
    let mut base = path.to_path_buf();
    let resolved = loop {
        if let Ok(c) = base.canonicalize() {
            break c;
        }
        match (base.file_name(), base.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name.to_os_string());
                base = if parent.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    parent.to_path_buf()
                };
            }
            _ => return false,
        }
    };
    let full = rest.iter().rev().fold(resolved, |p, n| p.join(n));
    full.starts_with(&dir)
}

/// Shifts every absolute time of `j` (run clock of its shard) by `off` ns onto the merged
/// axis and tags its trajectories with the shard. Durations are unchanged; the attribution
/// objects inside trajectories stay in the shard's clock domain (docs/sharding.md
/// "Clock domains and the merged axis").
fn shift_job(j: &mut JobReport, off: u64, k: u32) {
    j.start_ns += off;
    j.end_ns += off;
    for t in &mut j.trajectories {
        t.start_ns += off;
        t.end_ns += off;
        t.shard = Some(k);
        for s in &mut t.steps {
            s.start_ns += off;
            s.end_ns += off;
        }
    }
    for u in &mut j.units {
        u.start_ns += off;
        u.end_ns += off;
        u.shard = Some(k);
    }
    for r in &mut j.requests {
        shift_request(r, off);
    }
}

fn shift_request(r: &mut RequestRecord, off: u64) {
    r.scheduled_ns += off;
    r.send_ns += off;
    for t in [
        &mut r.headers_ns,
        &mut r.first_byte_ns,
        &mut r.ttft_ns,
        &mut r.ttfo_ns,
        &mut r.last_token_ns,
        &mut r.end_ns,
    ]
    .into_iter()
    .flatten()
    {
        *t += off;
    }
}

/// The most intervals `[start, end)` open at once.
fn max_overlap(intervals: impl Iterator<Item = (u64, u64)>) -> u32 {
    let mut edges: Vec<(u64, i32)> = Vec::new();
    for (s, e) in intervals {
        edges.push((s, 1));
        edges.push((e.max(s), -1));
    }
    // Ends before starts at the same instant: touching intervals do not overlap.
    edges.sort_by_key(|&(t, d)| (t, d));
    let (mut now, mut max) = (0i32, 0i32);
    for (_, d) in edges {
        now += d;
        max = max.max(now);
    }
    max.max(0) as u32
}

/// The overlap of windows, `None` when they do not overlap or there are none.
fn overlap(ws: impl Iterator<Item = (u64, u64)>) -> Option<AlignedWindow> {
    let mut lo = 0u64;
    let mut hi = u64::MAX;
    let mut any = false;
    for (s, e) in ws {
        any = true;
        lo = lo.max(s);
        hi = hi.min(e);
    }
    (any && hi > lo).then(|| AlignedWindow {
        start_ns: lo,
        end_ns: hi,
        duration_ns: hi - lo,
    })
}

fn aligned(start: u64, end: u64) -> AlignedWindow {
    AlignedWindow {
        start_ns: start,
        end_ns: end.max(start),
        duration_ns: end.saturating_sub(start),
    }
}

/// One shard's part of one shared load job, on the merged axis.
struct Part<'a> {
    k: u32,
    job: JobReport,
    share: &'a JobShare,
}

/// Every trajectory window of `job` with its shard: its units (a load job, from
/// requests.jsonl's unit lines) or else its trajectories (a sequential job, all in
/// report.json).
fn unit_windows(job: &JobReport) -> Vec<(u64, u64, Option<u32>)> {
    if !job.units.is_empty() {
        job.units
            .iter()
            .map(|u| (u.start_ns, u.end_ns, u.shard))
            .collect()
    } else {
        job.trajectories
            .iter()
            .map(|t| (t.start_ns, t.end_ns, t.shard))
            .collect()
    }
}

/// The trajectory of each request: request ids are the trajectory id with `#` written
/// `.t`, then `.` and the step's part (`load::fanout#p1.3` → `load::fanout.tp1.3.llm0`,
/// `load::arrivals#1` → `load::arrivals.t1.s512.r0`); matched on every `.` boundary.
fn request_trajectories(requests: &[RequestRecord], units: &[UnitRecord]) -> Vec<Option<String>> {
    let prefixes: HashMap<String, &str> = units
        .iter()
        .map(|t| (format!("{}.", t.id.replacen('#', ".t", 1)), t.id.as_str()))
        .collect();
    requests
        .iter()
        .map(|r| {
            r.request_id
                .match_indices('.')
                .find_map(|(i, _)| prefixes.get(&r.request_id[..=i]))
                .map(|t| t.to_string())
        })
        .collect()
}

/// Rates over `w` from the requests that completed inside it: successful non-warm-up
/// requests per second, their output tokens per second (missing when one has no count),
/// and good requests per second.
fn window_rates(
    stats: &mut JobStats,
    goodput: Option<&mut Goodput>,
    reqs: &[(&RequestRecord, RequestFigures, bool)],
    w: Option<AlignedWindow>,
) {
    let Some(w) = w.filter(|w| w.duration_ns > 0) else {
        stats.throughput_rps = None;
        stats.output_tokens_per_s = Figure::missing(
            stats.output_tokens_per_s.basis,
            "the shards running this work never all ran at once",
        )
        .with_tokens(stats.output_tokens_per_s.tokens);
        if let Some(g) = goodput {
            g.rps = None;
        }
        return;
    };
    stats.window_ns = w.duration_ns;
    let secs = w.duration_ns as f64 / 1e9;
    let inside: Vec<&(&RequestRecord, RequestFigures, bool)> = reqs
        .iter()
        .filter(|(r, f, warm)| {
            !warm && f.ok && r.end_ns.is_some_and(|e| e >= w.start_ns && e <= w.end_ns)
        })
        .collect();
    stats.throughput_rps = Some(inside.len() as f64 / secs);
    let tokens = crate::stats::total_if_complete(inside.iter().map(|(_, f, _)| f.output_tokens));
    stats.output_tokens_per_s = match tokens {
        Some(t) => Figure::of(t as f64 / secs, stats.output_tokens_per_s.basis),
        None => Figure::missing(
            stats.output_tokens_per_s.basis,
            "a request completed in the window has no output-token count",
        ),
    }
    .with_tokens(stats.output_tokens_per_s.tokens);
    if let Some(g) = goodput {
        let good = inside
            .iter()
            .filter(|(_, f, _)| crate::report::curve::meets(&g.criteria, f))
            .count();
        g.rps = Some(good as f64 / secs);
    }
}

/// The merged job of the shards' parts of one shared load job.
/// What merging one point of a load job reads: the job's union of the shards' units,
/// requests (with their figures and points) and sample trajectories, and its settings.
struct PointMerge<'a, 'p> {
    parts: &'a [Part<'p>],
    units: &'a [UnitRecord],
    figs: &'a [(&'a RequestRecord, RequestFigures, bool)],
    req_point: &'a [Option<usize>],
    trajectories: &'a [TrajectoryReport],
    sample_point: &'a HashMap<String, usize>,
    values: &'a [f64],
    arrival: Arrival,
    stop: Stop,
    warmup: u64,
    criteria: Option<&'a GoodputCriteria>,
}

impl PointMerge<'_, '_> {
    /// Point `pi` (its share `share` on the first shard) from the union of its requests:
    /// its summary, the window every shard running it ran in (its rates are over it), and
    /// a note when there is no such window.
    fn point(
        &self,
        pi: usize,
        share: &crate::model::shard::PointShare,
    ) -> (PointSummary, Option<AlignedWindow>, Option<String>) {
        let configured = LoadPoint {
            index: share.index,
            concurrency: share.configured_concurrency,
            rate: share.configured_rate,
            arrival: self.arrival,
            stop: match (self.stop, share.configured_units) {
                (Stop::Duration(d), _) => Stop::Duration(d),
                (_, Some(u)) => Stop::Count(u),
                (s, None) => s,
            },
            warmup: self.warmup,
        };
        let in_point: Vec<&UnitRecord> = self
            .units
            .iter()
            .filter(|u| u.point == share.index)
            .collect();
        let reqs: Vec<(&RequestRecord, RequestFigures, bool)> = self
            .figs
            .iter()
            .zip(self.req_point)
            .filter(|(_, p)| **p == Some(share.index))
            .map(|((r, f, w), _)| (*r, f.clone(), *w))
            .collect();
        // Each running shard's window of the point: its trajectories' first start to last
        // end, on the merged axis; the point's rates are over their overlap.
        let shard_windows: Vec<(u64, u64)> = self
            .parts
            .iter()
            .filter(|p| p.share.points.get(pi).is_some_and(|s| s.runs))
            .filter_map(|p| {
                let ts = in_point.iter().filter(|t| t.shard == Some(p.k));
                let s = ts.clone().map(|t| t.start_ns).min()?;
                let e = ts.map(|t| t.end_ns).max()?;
                Some((s, e))
            })
            .collect();
        let window = overlap(shard_windows.iter().copied());
        let note = (window.is_none() && !shard_windows.is_empty()).then(|| {
            format!(
                "point {} ({}): the {} shards running it never all ran at once, so it has \
             no rate over a common window (req/s, tokens/s and goodput/s are null)",
                share.index,
                configured.label(),
                shard_windows.len()
            )
        });
        let (units, not_started) = self
            .parts
            .iter()
            .filter_map(|p| {
                p.job
                    .sweep
                    .as_ref()?
                    .points
                    .iter()
                    .find(|q| q.index == share.index)
            })
            .fold((0u64, 0u64), |(u, n), q| {
                (u + q.units, n + q.units_not_started)
            });
        let facts = PointFacts {
            index: share.index,
            value: self.values.get(share.index).copied(),
            label: configured.label(),
            concurrency: share.configured_concurrency,
            rate: share.configured_rate,
            achieved_concurrency: max_overlap(in_point.iter().map(|t| (t.start_ns, t.end_ns))),
            max_requests_in_flight: max_overlap(
                reqs.iter()
                    .map(|(r, _, _)| (r.send_ns, r.end_ns.unwrap_or(r.send_ns))),
            ),
            units,
            units_not_started: not_started,
            window_ns: window.map_or(0, |w| w.duration_ns),
            trajectories: self
                .trajectories
                .iter()
                .filter(|t| self.sample_point.get(&t.id) == Some(&share.index))
                .map(|t| t.id.clone())
                .collect(),
            // Each shard warmed its own pool: the merged point has no one figure.
            connections: None,
        };
        let preqs: Vec<PointRequest> = reqs
            .iter()
            .map(|(_, f, w)| PointRequest {
                figures: f.clone(),
                warmup: *w,
            })
            .collect();
        let mut ps: PointSummary = summarize_point(facts, &preqs, self.criteria, None);
        window_rates(&mut ps.stats, ps.goodput.as_mut(), &reqs, window);
        (ps, window, note)
    }
}

/// A merged load job's statistics: every non-warm-up request of every point, its rates
/// over the points' windows; `None` without such a request.
fn merged_job_stats(
    figs: &[(&RequestRecord, RequestFigures, bool)],
    job_windows: &[AlignedWindow],
) -> Option<JobStats> {
    let measured: Vec<RequestFigures> = figs
        .iter()
        .filter(|(_, _, w)| !w)
        .map(|(_, f, _)| f.clone())
        .collect();
    let window_ns: u64 = job_windows.iter().map(|w| w.duration_ns).sum();
    let mut stats = (!measured.is_empty())
        .then(|| JobStats::aggregate(&measured, AggregateParams::new(window_ns.max(1))));
    if let Some(st) = &mut stats {
        let in_some: Vec<(&RequestRecord, RequestFigures, bool)> = figs
            .iter()
            .filter(|(r, _, _)| {
                r.end_ns
                    .is_some_and(|e| job_windows.iter().any(|w| e >= w.start_ns && e <= w.end_ns))
            })
            .map(|(r, f, w)| (*r, f.clone(), *w))
            .collect();
        let span = (window_ns > 0).then_some(AlignedWindow {
            start_ns: 0,
            end_ns: u64::MAX,
            duration_ns: window_ns,
        });
        window_rates(st, None, &in_some, span);
        st.window_ns = window_ns;
    }
    stats
}

/// Failed requests by code, summed over the shards' parts of one job.
fn failure_code_sum(parts: &[Part<'_>]) -> BTreeMap<crate::model::FailureCode, u64> {
    let mut codes = BTreeMap::new();
    for p in parts {
        for c in &p.job.failure_codes {
            *codes.entry(c.code).or_default() += c.count;
        }
    }
    codes
}

/// A merged load job's `load` section: the first shard's settings, the shards' client
/// connections summed, the most points any shard ran, and every warm-up request.
fn merged_load(l: LoadReport, parts: &[Part<'_>], warm: &HashSet<String>) -> LoadReport {
    LoadReport {
        client_max_connections: parts
            .iter()
            .filter_map(|p| p.job.load.as_ref())
            .map(|l| l.client_max_connections)
            .sum(),
        points_run: parts
            .iter()
            .filter_map(|p| p.job.load.as_ref())
            .map(|l| l.points_run)
            .max()
            .unwrap_or(0),
        warmup_requests: {
            let mut w: Vec<String> = warm.iter().cloned().collect();
            w.sort();
            w
        },
        ..l
    }
}

/// The union of the shards' parts of one load job, each shard's own records kept whole.
struct ShardUnion {
    /// Every request a shard's report calls warm-up.
    warm: HashSet<String>,
    /// Every unit, by point and unit index.
    units: Vec<UnitRecord>,
    /// The point of each sample trajectory report.json keeps.
    sample_point: HashMap<String, usize>,
    /// The sample trajectories, by point and index.
    trajectories: Vec<TrajectoryReport>,
    /// Every request, by scheduled then send time, warm-up marked.
    requests: Vec<RequestRecord>,
}

impl ShardUnion {
    fn of(parts: &[Part<'_>]) -> ShardUnion {
        let warm: HashSet<String> = parts
            .iter()
            .flat_map(|p| {
                p.job
                    .load
                    .iter()
                    .flat_map(|l| l.warmup_requests.iter().cloned())
            })
            .collect();
        // Trajectories and requests: the union, each trajectory in its point, by unit index.
        // Units (requests.jsonl's unit lines) carry their point; report.json keeps each
        // shard's sample trajectory of each point.
        let mut units: Vec<UnitRecord> = parts
            .iter()
            .flat_map(|p| p.job.units.iter().cloned())
            .collect();
        units.sort_by_key(|u| (u.point, u.index));
        let sample_point: HashMap<String, usize> = parts
            .iter()
            .flat_map(|p| p.job.sweep.iter().flat_map(|s| &s.points))
            .flat_map(|p| p.trajectories.iter().map(move |t| (t.clone(), p.index)))
            .collect();
        let mut trajectories: Vec<TrajectoryReport> = parts
            .iter()
            .flat_map(|p| p.job.trajectories.iter().cloned())
            .collect();
        trajectories.sort_by_key(|t| (sample_point.get(&t.id).copied().unwrap_or(0), t.index));
        let mut requests: Vec<RequestRecord> = parts
            .iter()
            .flat_map(|p| p.job.requests.iter().cloned())
            .collect();
        requests.sort_by_key(|r| (r.scheduled_ns, r.send_ns));
        // One warm-up rule for the figures and the merged requests.jsonl: a request is
        // warm-up when its record or its shard's report says so (a shard whose records lost
        // their `wu` marks still has them in the merged file, as the report excludes them).
        for r in &mut requests {
            r.warmup |= warm.contains(&r.request_id);
        }
        ShardUnion {
            warm,
            units,
            sample_point,
            trajectories,
            requests,
        }
    }
}

/// Every shard's grading rows of one job, each check named with its shard.
fn shard_grading(parts: &[Part<'_>]) -> Vec<crate::model::GradingCheck> {
    parts
        .iter()
        .flat_map(|p| {
            p.job
                .grading
                .iter()
                .map(move |g| crate::model::GradingCheck {
                    check: format!("shard {} {}", p.k, g.check),
                    ..g.clone()
                })
        })
        .collect()
}

/// Why a merged job has no energy figure.
const PER_SHARD_ENERGY: &str =
    "energy stays per shard (each shard's own devices): see merge.shards[].jobs[].energy";

/// The figures a merged load job's gates read: its merged statistics, its units' grading,
/// its energy (per shard only); no baseline is compared.
fn merged_figures(
    stats: Option<&JobStats>,
    grade_pass_rate: Option<f64>,
    energy: &JobEnergy,
    id: &str,
) -> FigureSet {
    let mut figures = stats.map(FigureSet::from_job_stats).unwrap_or_default();
    figures.grade_pass_rate = match grade_pass_rate {
        Some(v) => Figure::finite(v, Basis::Grading),
        None => Figure::missing(Basis::Grading, "no checks"),
    };
    figures.tokens_per_joule = energy.tokens_per_joule.clone();
    figures.energy_per_trajectory_j = energy.energy_per_trajectory_j.clone();
    figures.regression_pct = regression_figure(None, None, id);
    figures
}

/// A merged load job's notes: how it was merged, its points' notes, then every shard's
/// own notes, each named with its shard.
fn merged_notes(parts: &[Part<'_>], alignment_ns: u64, point_notes: Vec<String>) -> Vec<String> {
    let mut notes = vec![format!(
        "merged from {} shards: percentiles and goodput from the union of their requests; \
         rates over the window in which every shard running a point was running (on the \
         unix-aligned axis, each end uncertain by {} µs); {PER_SHARD_ENERGY}",
        parts.len(),
        alignment_ns.div_ceil(1000)
    )];
    notes.extend(point_notes);
    for p in parts {
        notes.extend(p.job.notes.iter().map(|n| format!("shard {}: {n}", p.k)));
    }
    notes
}

fn merge_load_job(parts: &[Part<'_>], alignment_ns: u64) -> JobReport {
    let base = &parts[0].job;
    let ShardUnion {
        warm,
        units,
        sample_point,
        trajectories,
        requests,
    } = ShardUnion::of(parts);
    let point_of: HashMap<String, usize> = units.iter().map(|u| (u.id.clone(), u.point)).collect();
    let figs: Vec<(&RequestRecord, RequestFigures, bool)> = requests
        .iter()
        .map(|r| (r, crate::model::stats::RequestFigures::of(r), r.warmup))
        .collect();
    let req_point: Vec<Option<usize>> = request_trajectories(&requests, &units)
        .into_iter()
        .map(|t| t.and_then(|t| point_of.get(&t).copied()))
        .collect();

    // Points: one per configured point, from the union of its requests.
    let gates = &parts[0].share.gates;
    let criteria: Option<GoodputCriteria> = goodput_criteria(gates);
    let base_load = base.load.clone();
    // The shards' arrival process: constant when they ran one, else Poisson.
    let arrival = base_load
        .as_ref()
        .and_then(|l| l.arrival)
        .filter(|a| *a == Arrival::Constant)
        .unwrap_or(Arrival::Poisson);
    let stop = base_load.as_ref().map_or(Stop::Count(0), |l| l.stop);
    let warmup = base_load.as_ref().map_or(0, |l| l.warmup);
    let values = base
        .sweep
        .as_ref()
        .map_or_else(Vec::new, |s| s.values.clone());
    let merge = PointMerge {
        parts,
        units: &units,
        figs: &figs,
        req_point: &req_point,
        trajectories: &trajectories,
        sample_point: &sample_point,
        values: &values,
        arrival,
        stop,
        warmup,
        criteria: criteria.as_ref(),
    };
    let mut points = Vec::new();
    let mut job_windows = Vec::new();
    let mut point_notes = Vec::new();
    for (pi, share) in parts[0].share.points.iter().enumerate() {
        let (point, window, note) = merge.point(pi, share);
        points.push(point);
        job_windows.extend(window);
        point_notes.extend(note);
    }

    let stats = merged_job_stats(&figs, &job_windows);

    // Gates on the merged figures, with the job's own bounds.
    let graded: Vec<bool> = units.iter().filter_map(|u| u.graded_pass).collect();
    let grade_pass_rate = (!graded.is_empty())
        .then(|| graded.iter().filter(|&&g| g).count() as f64 / graded.len() as f64);
    let energy_basis = base.energy.energy_j.basis;
    let energy = JobEnergy {
        energy_j: Figure::missing(energy_basis, PER_SHARD_ENERGY),
        tokens_per_joule: Figure::missing(energy_basis, PER_SHARD_ENERGY),
        energy_per_trajectory_j: Figure::missing(energy_basis, PER_SHARD_ENERGY),
    };
    let figures = merged_figures(stats.as_ref(), grade_pass_rate, &energy, &base.id);
    let verdicts = crate::runner::report::job_verdicts(gates, &figures, false);
    let grading = shard_grading(parts);
    let grading_passed = grading.iter().all(|g| g.passed);
    let unfinished = units.iter().any(|u| !u.stop_reason.finished());
    let statuses: Vec<JobStatus> = parts.iter().map(|p| p.job.status).collect();
    let status = job_status(&StatusFacts::of_shards(
        &statuses,
        JobOutcome::from_verdicts(&verdicts, grading_passed),
        !unfinished,
    ));
    let codes = failure_code_sum(parts);
    let notes = merged_notes(parts, alignment_ns, point_notes);
    let load = base_load.map(|l| merged_load(l, parts, &warm));
    let sweep = base.sweep.as_ref().map(|s| SweepReport {
        variable: s.variable.clone(),
        values: s.values.clone(),
        points,
    });
    let start_ns = parts.iter().map(|p| p.job.start_ns).min().unwrap_or(0);
    let end_ns = parts.iter().map(|p| p.job.end_ns).max().unwrap_or(start_ns);
    JobReport {
        id: base.id.clone(),
        kind: base.kind,
        status,
        // A duration within one shard: the longest shard's (never a difference of two
        // shards' clocks).
        duration_ns: parts.iter().map(|p| p.job.duration_ns).max().unwrap_or(0),
        start_ns,
        end_ns,
        setup_error: parts.iter().find_map(|p| p.job.setup_error.clone()),
        stats,
        verdicts,
        grading,
        grade_pass_rate,
        energy,
        failure_codes: codes
            .into_iter()
            .map(|(code, count)| FailureCount { code, count })
            .collect(),
        notes,
        harness: None,
        load,
        sweep,
        baseline: None,
        trajectories,
        units,
        requests,
    }
}

/// Builds the merged report from the shards' reports (pure). `host_offset_ns` is the
/// assumed wall-clock offset between hosts. Errors (exit 2) name what does not match.
/// How the shards' times are aligned on the merged axis: by their unix anchors, within
/// the anchors' read brackets on one host, or with the assumed offset between hosts.
fn alignment_of(shards: &[&ShardInput], host_offset_ns: u64) -> Alignment {
    let hosts: BTreeSet<&str> = shards
        .iter()
        .map(|s| host_of(&s.report.clock_domain_id))
        .collect();
    let read = shards
        .iter()
        .filter_map(|s| s.report.shard.as_ref())
        .map(|i| i.anchor_read_ns)
        .max()
        .unwrap_or(0);
    let same_host = hosts.len() <= 1;
    if same_host {
        Alignment {
            basis: "same_host".into(),
            uncertainty_ns: read,
            statement: format!(
                "every shard ran on one host and wall clock: shards are aligned by their unix \
                 anchors to within their read brackets (at most {read} ns)"
            ),
        }
    } else {
        Alignment {
            basis: "cross_host".into(),
            uncertainty_ns: read.saturating_add(host_offset_ns),
            statement: format!(
                "shards ran on {} hosts: they are aligned by their unix anchors, each host's \
                 wall clock; the offset between those clocks is assumed at most {:.3} ms (not \
                 measured), so a time on the merged axis is uncertain by {:.3} ms",
                hosts.len(),
                host_offset_ns as f64 / 1e6,
                read.saturating_add(host_offset_ns) as f64 / 1e6
            ),
        }
    }
}

/// A note for each two points of merged job `j` whose units overlapped in time across
/// shards (a shard with no share of one point went on to the next).
fn overlapping_points(j: &JobReport) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(sw) = &j.sweep {
        let win = |p: &PointSummary| {
            let ts: Vec<&UnitRecord> = j.units.iter().filter(|u| u.point == p.index).collect();
            Some((
                ts.iter().map(|t| t.start_ns).min()?,
                ts.iter().map(|t| t.end_ns).max()?,
            ))
        };
        let ws: Vec<(usize, (u64, u64))> = sw
            .points
            .iter()
            .filter_map(|p| Some((p.index, win(p)?)))
            .collect();
        for (a, (s1, e1)) in &ws {
            for (b, (s2, e2)) in &ws {
                if a < b && s1 < e2 && s2 < e1 {
                    notes.push(format!(
                        "{}: points {a} and {b} overlapped in time across shards (a shard \
                         with no share of one point went on to the next): the endpoint \
                         saw both loads at once; use duration_s stops and --start-at to \
                         keep points aligned",
                        j.id
                    ));
                }
            }
        }
    }
    notes
}

/// A shard's section of the merged report: its identity, its own run-level figures and
/// its jobs, on the merged axis (`off` after the merged anchor; `window` its run).
fn shard_section(
    r: &RunReport,
    id: &crate::model::shard::ShardIdentity,
    off: u64,
    window: AlignedWindow,
) -> ShardSection {
    ShardSection {
        k: id.k,
        run_id: r.run_id.clone(),
        dir: format!("shards/{}", id.k),
        clock_domain_id: r.clock_domain_id.clone(),
        reference_instant_unix_ns: r.reference_instant_unix_ns,
        offset_ns: off,
        started_utc: r.started_utc.clone(),
        tool: r.tool.clone(),
        duration_ns: r.summary.duration_ns,
        aligned: window,
        start_at: id.start_at.clone(),
        power: r.power.clone(),
        attribution: r.attribution.clone(),
        capture: r.capture.clone(),
        cancelled: r.cancelled,
        exit_status: r.summary.exit_status,
        jobs: r
            .jobs
            .iter()
            .map(|j| ShardJobSection {
                id: j.id.clone(),
                status: j.status,
                start_ns: j.start_ns,
                end_ns: j.end_ns,
                duration_ns: j.duration_ns,
                aligned: aligned(j.start_ns + off, j.end_ns + off),
                requests: j.requests.len() as u64,
                trajectories: unit_windows(j).len() as u64,
                energy: j.energy.clone(),
            })
            .collect(),
    }
}

/// The merged run's power report: the shards' when they all had the same source (their
/// devices summed), else none, naming the sources.
fn merged_power(shards: &[&ShardInput]) -> PowerReport {
    let sources: BTreeSet<String> = shards.iter().map(|s| s.report.power.describe()).collect();
    if sources.len() == 1 {
        PowerReport {
            devices: shards.iter().map(|s| s.report.power.devices).sum(),
            not_attributable: shards
                .iter()
                .flat_map(|s| s.report.power.not_attributable.iter().cloned())
                .collect(),
            ..shards[0].report.power.clone()
        }
    } else {
        PowerReport {
            source: None,
            reason: Some(format!(
                "the shards differ ({}): see merge.shards[].power",
                sources.into_iter().collect::<Vec<_>>().join(", ")
            )),
            devices: shards.iter().map(|s| s.report.power.devices).sum(),
            not_attributable: shards
                .iter()
                .flat_map(|s| s.report.power.not_attributable.iter().cloned())
                .collect(),
        }
    }
}

/// The merged run's capture report: the worst quality, the shards' counts summed (none
/// when a shard has none).
fn merged_capture(shards: &[&ShardInput]) -> CaptureReport {
    let quality = shards
        .iter()
        .filter_map(|s| s.report.capture.quality)
        .max_by_key(|q| match q {
            Quality::Complete => 0,
            Quality::Partial => 1,
            Quality::Unavailable => 2,
        });
    let sum = |f: fn(&CaptureReport) -> Option<u64>| {
        shards
            .iter()
            .map(|s| f(&s.report.capture))
            .try_fold(0u64, |a, v| Some(a.saturating_add(v?)))
    };
    CaptureReport {
        enabled: shards.iter().any(|s| s.report.capture.enabled),
        quality,
        events: sum(|c| c.events),
        dropped: sum(|c| c.dropped),
        rejected: sum(|c| c.rejected),
        manifest: None,
        window_write_bytes: sum(|c| c.window_write_bytes),
        diagnostic: None,
    }
}

/// Every selected job on the merged axis, in selection order: a load job shared by the
/// shards (`--shard`) merged from their parts, any other job as the one shard that ran it
/// reported it. `Err` when a job is missing, or ran in more than one partition.
fn merged_jobs(
    shards: &[&ShardInput],
    base: &crate::model::shard::ShardIdentity,
    offsets: &[u64],
    u: u64,
) -> Result<Vec<JobReport>, String> {
    let ident = |i: &ShardInput| i.report.shard.clone().expect("validated");
    let shared: HashMap<&str, ()> = shards
        .iter()
        .flat_map(|s| {
            s.report
                .shard
                .as_ref()
                .into_iter()
                .flat_map(|i| i.load.iter())
        })
        .map(|l| (l.job.as_str(), ()))
        .collect();
    let mut jobs = Vec::new();
    for id in &base.selected_jobs {
        let mut parts: Vec<(usize, JobReport)> = Vec::new();
        for (i, s) in shards.iter().enumerate() {
            if let Some(j) = s.report.jobs.iter().find(|j| &j.id == id) {
                let mut j = j.clone();
                shift_job(&mut j, offsets[i], ident(s).k);
                parts.push((i, j));
            }
        }
        let is_shared = base.mode == ShardMode::Shard && shared.contains_key(id.as_str());
        match (parts.len(), is_shared) {
            (0, _) => {
                return bad(format!(
                    "job {id} was selected but no shard reports it (a shard was cut short \
                     before writing it, or ran other suites)"
                ));
            }
            (_, true) => {
                let mut ps = Vec::new();
                for (i, j) in parts {
                    let share = shards[i]
                        .report
                        .shard
                        .as_ref()
                        .and_then(|x| x.load.iter().find(|l| &l.job == id));
                    match share {
                        Some(share) => ps.push(Part {
                            k: ident(shards[i]).k,
                            job: j,
                            share,
                        }),
                        None => {
                            return bad(format!(
                                "{}: job {id} has no load shares although other shards \
                                 shared its load",
                                shards[i].dir.display()
                            ));
                        }
                    }
                }
                jobs.push(merge_load_job(&ps, u));
            }
            (1, false) => jobs.push(parts.remove(0).1),
            (_, false) => {
                let ks: Vec<String> = parts
                    .iter()
                    .map(|(i, _)| ident(shards[*i]).k.to_string())
                    .collect();
                return bad(format!(
                    "job {id} ran in shards {} (a partition runs each job in exactly one)",
                    ks.join(" and ")
                ));
            }
        }
    }
    Ok(jobs)
}

/// How many trajectories of the merged jobs were in flight at once, across the shards
/// and within one.
fn merged_concurrency(jobs: &[JobReport], n: u32, u: u64) -> MergedConcurrency {
    let trajs: Vec<(u64, u64, Option<u32>)> = jobs.iter().flat_map(unit_windows).collect();
    let trajs = trajs.iter();
    let max_all = max_overlap(trajs.clone().map(|t| (t.0, t.1)));
    let max_one = (1..=n)
        .map(|k| max_overlap(trajs.clone().filter(|t| t.2 == Some(k)).map(|t| (t.0, t.1))))
        .max()
        .unwrap_or(0);
    MergedConcurrency {
        max_trajectories_in_flight: max_all,
        max_in_one_shard: max_one,
        statement: format!(
            "up to {max_all} trajectories in flight across {n} shards (counted on the \
             unix-aligned axis, each time uncertain by {} µs), at most {max_one} within one \
             shard; per-step energy is attributed per shard against its own devices (see \
             each shard's attribution)",
            u.div_ceil(1000)
        ),
    }
}

pub fn merge_reports(inputs: &[ShardInput], host_offset_ns: u64) -> Result<RunReport, String> {
    let shards = validate(inputs)?;
    check_shards_are_distinct(&shards)?;
    let ident = |i: &ShardInput| i.report.shard.clone().expect("validated");
    let base = ident(shards[0]);
    let anchor = shards
        .iter()
        .map(|s| s.report.reference_instant_unix_ns)
        .min()
        .unwrap_or(0);
    let alignment = alignment_of(&shards, host_offset_ns);
    let u = alignment.uncertainty_ns;
    let offsets: Vec<u64> = shards
        .iter()
        .map(|s| s.report.reference_instant_unix_ns - anchor)
        .collect();

    let jobs = merged_jobs(&shards, &base, &offsets, u)?;
    let mut notes = Vec::new();
    if base.mode == ShardMode::Shard {
        notes.push(
            "shard mode: each load job's figures come from the union of the shards' \
             requests; sequential jobs ran on shard 1 only"
                .to_string(),
        );
    }

    // Per-shard sections.
    let mut sections = Vec::new();
    let mut all: Vec<(u64, u64)> = Vec::new();
    for (i, s) in shards.iter().enumerate() {
        let r = &s.report;
        let id = ident(s);
        let off = offsets[i];
        let window = aligned(off, off + r.summary.duration_ns);
        all.push((window.start_ns, window.end_ns));
        sections.push(shard_section(r, &id, off, window));
    }
    // Point windows of different points that overlap across shards: the endpoint saw a mix.
    notes.extend(jobs.iter().flat_map(overlapping_points));
    let concurrency = merged_concurrency(&jobs, base.n, u);

    let cancelled = shards.iter().any(|s| s.report.cancelled);
    let duration_ns = shards
        .iter()
        .map(|s| s.report.summary.duration_ns)
        .max()
        .unwrap_or(0);
    let first = &shards[0].report;
    let mut endpoints = first.endpoints.clone();
    for e in &mut endpoints {
        e.setup_error = shards.iter().find_map(|s| {
            s.report
                .endpoints
                .iter()
                .find(|x| x.suite == e.suite)
                .and_then(|x| x.setup_error.clone())
        });
    }
    let power = merged_power(&shards);
    let capture = merged_capture(&shards);
    let mut h = Sha256::new();
    for s in &shards {
        h.update(s.report.run_id.as_bytes());
        h.update(b"\n");
    }
    let digest = hex::encode(h.finalize());
    let stamp = chrono::DateTime::from_timestamp((anchor / 1_000_000_000) as i64, 0)
        .map(|d| d.format("%Y%m%dT%H%M%SZ").to_string())
        .unwrap_or_else(|| "run".into());
    let summary = SummaryReport::of(&jobs, duration_ns, cancelled);
    Ok(RunReport {
        schema: REPORT_SCHEMA.into(),
        run_id: format!("{stamp}-merged-{}", &digest[..6]),
        tool: format!("inferscope-bench {}", env!("CARGO_PKG_VERSION")),
        started_utc: crate::clock::unix_ns_to_rfc3339(anchor),
        reference_instant_unix_ns: anchor,
        clock_domain_id: format!("merged:{}", &digest[..16]),
        percentile_method: PERCENTILE_METHOD.into(),
        cancelled,
        endpoint: endpoints.first().cloned(),
        endpoints,
        capture,
        power,
        telemetry: None,
        attribution: None,
        summary,
        jobs,
        shard: None,
        requests_file: None,
        merge: Some(MergeReport {
            mode: base.mode,
            partition: base.partition,
            n: base.n,
            suite_fingerprint: base.suite_fingerprint.clone(),
            seeds: base.seeds.clone(),
            alignment,
            all_running: overlap(all.into_iter()),
            concurrency,
            notes,
            shards: sections,
        }),
    })
}

/// Copies a run directory (regular files and directories; anything else is refused).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let t = e.file_type()?;
        let dst = to.join(e.file_name());
        if t.is_dir() {
            copy_tree(&e.path(), &dst)?;
        } else if t.is_file() {
            std::fs::copy(e.path(), &dst)?;
        } else {
            return Err(std::io::Error::other(format!(
                "{}: not a regular file or directory (a symlink?); not copied",
                e.path().display()
            )));
        }
    }
    Ok(())
}

/// Whether `run_dir` is a merged run (its report has a `merge` section); the shards' run
/// directories are then `run_dir/shards/K`.
pub fn shard_dirs(run_dir: &Path) -> Option<Vec<(u32, PathBuf)>> {
    let r = crate::run_dir::read_report(run_dir).ok()?;
    let m = r.merge?;
    Some(
        m.shards
            .iter()
            .map(|s| (s.k, run_dir.join("shards").join(s.k.to_string())))
            .collect(),
    )
}

/// The `merge` command: exit 2 when the shards do not belong together or a directory
/// cannot be read or written; otherwise the merged run's exit status (0 every merged job
/// passed, 100 a job or gate failed or a shard was cancelled, 96 a setup error).
pub fn command(dirs: &[PathBuf], out: &Path, host_offset_ms: f64) -> i32 {
    let fail = |m: String| {
        eprintln!("error: {m}");
        ExitCode::BAD_INPUT
    };
    if !(host_offset_ms.is_finite() && host_offset_ms >= 0.0) {
        return fail(format!(
            "--host-clock-offset-ms {host_offset_ms}: must be a non-negative number of ms"
        ));
    }
    if let Err(e) = crate::run_dir::check_new_or_empty_dir(out) {
        return fail(e);
    }
    if let Some(d) = dirs.iter().find(|d| lies_inside(out, d)) {
        return fail(format!(
            "--out {}: lies inside the shard directory {} (the merge copies every shard \
             into --out)",
            out.display(),
            d.display()
        ));
    }
    let mut inputs = Vec::new();
    for d in dirs {
        match crate::run_dir::read_report_with_requests(d) {
            Ok(report) => inputs.push(ShardInput {
                dir: d.clone(),
                report,
            }),
            Err(e) => return fail(e),
        }
    }
    let mut merged = match merge_reports(&inputs, (host_offset_ms * 1e6).round() as u64) {
        Ok(m) => m,
        Err(e) => return fail(e),
    };
    let written = (|| -> Result<(), String> {
        std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
        for i in &inputs {
            let k = i.report.shard.as_ref().map_or(0, |s| s.k);
            let to = out.join("shards").join(k.to_string());
            copy_tree(&i.dir, &to).map_err(|e| format!("copying {}: {e}", i.dir.display()))?;
        }
        let markers = crate::runner::report::step_markers(&merged);
        std::fs::write(
            out.join("steps.jsonl"),
            crate::attribution::step_markers_to_jsonl(&markers),
        )
        .map_err(|e| format!("{}: {e}", out.join("steps.jsonl").display()))?;
        // The records, then report.json last: a merged directory without it is incomplete.
        crate::records::write_report_records(out, &mut merged)
            .map_err(|e| format!("{}: {e}", out.join("requests.jsonl").display()))?;
        std::fs::write(out.join("report.json"), merged.to_json())
            .map_err(|e| format!("{}: {e}", out.join("report.json").display()))
    })();
    if let Err(e) = written {
        return fail(e);
    }
    let _ = crate::reporter::write_report(
        &mut std::io::stdout().lock(),
        &merged,
        crate::render::Style::PLAIN,
    );
    if let Some(m) = &merged.merge {
        println!(
            "merged {} shards ({}) · {}",
            m.n,
            match m.partition {
                Some(p) => format!("partition {}", p.as_str()),
                None => "shares of the load".into(),
            },
            m.alignment.statement
        );
        println!("{}", m.concurrency.statement);
        for n in &m.notes {
            println!("note: {n}");
        }
    }
    println!("run directory: {}", out.display());
    merged.summary.exit_status
}
