//! Load settings of one job, as validated from the suite (pure data).
//!
//! A job with any load key (`concurrency`, `rate`, `arrival`, `duration_s`, `count`,
//! `warmup`, `sweep`) runs under the load executor (`load::exec`) instead of the
//! sequential drivers. The unit of load is one *trajectory* for agentic jobs and one
//! *request* for context jobs (each context request is then a one-step trajectory, so the
//! step-attribution join (docs/measurement.md) sees every unit in flight).
//!
//! - closed loop: `concurrency = N` units in flight; a unit starts when one ends;
//! - open loop: `rate = R` units per second with `arrival = "poisson" | "constant"`,
//!   or a dataset's recorded timestamps (`dataset.time_scale`, arrival `trace`)
//!   (seeded from the suite seed), optionally capped at `concurrency = N` in flight: an
//!   arrival that finds every slot busy waits in the client and its lag is recorded
//!   (field case C24, coordinated omission);
//! - stop: `count` units per point, or `duration_s` of starting units per point;
//! - `warmup = K`: the first K *requests* of each point (by scheduled, then actual send time)
//!   are recorded and flagged but excluded from every statistic;
//! - `sweep = { concurrency = [..] }` or `sweep = { rate = [..] }`: one point per value.

use serde::{Deserialize, Serialize};

use crate::stats::mix64;

/// How open-loop arrivals are spaced, and when a load point stops starting new units: the
/// report model's.
pub use inferscope_model::load::{Arrival, Stop};

/// The variable a sweep varies, with its values in run order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sweep {
    /// Units in flight (closed loop; the open-loop cap when `rate` is also set).
    Concurrency(Vec<u32>),
    /// Arrival rate, units per second (open loop).
    Rate(Vec<f64>),
}

impl Sweep {
    /// `concurrency` or `rate`.
    pub fn variable(&self) -> &'static str {
        match self {
            Sweep::Concurrency(_) => "concurrency",
            Sweep::Rate(_) => "rate",
        }
    }

    /// The swept values in run order, as numbers: concurrency converted exactly to `f64`,
    /// rates (units/s) as given.
    pub fn values(&self) -> Vec<f64> {
        match self {
            Sweep::Concurrency(v) => v.iter().map(|&c| f64::from(c)).collect(),
            Sweep::Rate(v) => v.clone(),
        }
    }

    /// Number of points.
    pub fn len(&self) -> usize {
        match self {
            Sweep::Concurrency(v) => v.len(),
            Sweep::Rate(v) => v.len(),
        }
    }

    /// True without values (rejected by validation).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How a load job's statistics are aggregated: `exact` (the default) keeps
/// every request's compact figures and computes every percentile exactly; `streaming`
/// keeps one HDR histogram per population (memory flat in the request count) and states
/// each percentile's error bound beside it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Aggregation {
    /// Every percentile exact (the default).
    #[default]
    Exact,
    /// HDR histograms; every percentile within its stated bound.
    Streaming,
}

impl Aggregation {
    /// `exact` or `streaming` (the suite's spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            Aggregation::Exact => "exact",
            Aggregation::Streaming => "streaming",
        }
    }
}

/// A job's validated load settings (see the module docs for the semantics).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    /// `concurrency`: units in flight (closed loop) or the open-loop cap; `None` = 1 in a
    /// closed loop, uncapped in an open loop.
    pub concurrency: Option<u32>,
    /// `rate`: open-loop arrivals per second; `None` = closed loop.
    pub rate: Option<f64>,
    /// `arrival` (default `poisson`; only meaningful with a rate).
    pub arrival: Arrival,
    /// `count` or `duration_s` (default: `count` = the job's `repeat` trajectories for
    /// agentic jobs, `len(sizes) × repeat` requests for context jobs).
    pub stop: Stop,
    /// `warmup`: requests per point excluded from statistics (default 0).
    pub warmup: u64,
    /// `sweep`, when given.
    pub sweep: Option<Sweep>,
    /// `aggregation` (default `exact`; `run --aggregation` overrides it).
    #[serde(default)]
    pub aggregation: Aggregation,
}

/// Open or closed loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopMode {
    /// A new unit starts when one ends; `concurrency` units in flight.
    Closed,
    /// Units arrive at a rate regardless of completions (optionally capped in flight).
    Open,
}

/// One point of a load run: the settings one execution of the job uses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadPoint {
    /// 0-based position in the sweep (0 without a sweep).
    pub index: usize,
    /// Units in flight at most; `None` = uncapped (open loop without `concurrency`).
    pub concurrency: Option<u32>,
    /// Arrivals per second; `None` = closed loop.
    pub rate: Option<f64>,
    /// Arrival process (open loop).
    pub arrival: Arrival,
    /// Stop rule.
    pub stop: Stop,
    /// Warm-up requests excluded from statistics.
    pub warmup: u64,
}

impl LoadPoint {
    /// Open when a rate is set or arrivals replay a trace, else closed.
    pub fn mode(&self) -> LoopMode {
        if self.rate.is_some() || self.arrival == Arrival::Trace {
            LoopMode::Open
        } else {
            LoopMode::Closed
        }
    }

    /// Short label: `concurrency 4`, `rate 2.5/s`, `rate 2.5/s, concurrency ≤ 4`,
    /// `trace arrivals`.
    pub fn label(&self) -> String {
        match (self.rate, self.concurrency) {
            (None, None) if self.arrival == Arrival::Trace => "trace arrivals".into(),
            (None, Some(c)) if self.arrival == Arrival::Trace => {
                format!("trace arrivals, concurrency <= {c}")
            }
            (None, c) => format!("concurrency {}", c.unwrap_or(1)),
            (Some(r), None) => format!("rate {}/s {}", rate_text(r), self.arrival.as_str()),
            (Some(r), Some(c)) => format!(
                "rate {}/s {}, concurrency <= {c}",
                rate_text(r),
                self.arrival.as_str()
            ),
        }
    }
}

impl LoadSpec {
    /// True for an open loop: a `rate` is set or the sweep varies the rate; false for a
    /// closed loop.
    pub fn is_open(&self) -> bool {
        self.rate.is_some()
            || matches!(self.sweep, Some(Sweep::Rate(_)))
            || self.arrival == Arrival::Trace
    }

    /// The points to run, in order: one per sweep value, or a single point.
    ///
    /// A concurrency sweep replaces `concurrency` at each point; a rate sweep replaces
    /// `rate` (keeping `concurrency` as the cap). A closed loop without `concurrency` runs
    /// one unit at a time.
    pub fn points(&self) -> Vec<LoadPoint> {
        let base = |index: usize, concurrency: Option<u32>, rate: Option<f64>| {
            let concurrency = match (concurrency, rate) {
                (None, None) => Some(1),
                (c, _) => c,
            };
            LoadPoint {
                index,
                concurrency,
                rate,
                arrival: self.arrival,
                stop: self.stop,
                warmup: self.warmup,
            }
        };
        match &self.sweep {
            None => vec![base(0, self.concurrency, self.rate)],
            Some(Sweep::Concurrency(v)) => v
                .iter()
                .enumerate()
                .map(|(i, &c)| base(i, Some(c), self.rate))
                .collect(),
            Some(Sweep::Rate(v)) => v
                .iter()
                .enumerate()
                .map(|(i, &r)| base(i, self.concurrency, Some(r)))
                .collect(),
        }
    }

    /// The largest number of units that can be in flight at once (the connection pool is
    /// sized to at least this); `None` when some point is an uncapped open loop.
    pub fn max_concurrency(&self) -> Option<u32> {
        self.points()
            .iter()
            .map(|p| p.concurrency)
            .try_fold(1u32, |m, c| c.map(|c| m.max(c)))
    }

    /// One line for `--dry-run` and reports, e.g.
    /// `closed loop, sweep concurrency [1, 4, 16], count 8, warm-up 2 requests`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        parts.push(if self.is_open() {
            format!("open loop ({} arrivals)", self.arrival.as_str())
        } else {
            "closed loop".to_string()
        });
        if let Some(c) = self.concurrency {
            parts.push(format!("concurrency {c}"));
        }
        if let Some(r) = self.rate {
            parts.push(format!("rate {}/s", rate_text(r)));
        }
        match &self.sweep {
            Some(Sweep::Concurrency(v)) => parts.push(format!("sweep concurrency {v:?}")),
            Some(Sweep::Rate(v)) => parts.push(format!("sweep rate {v:?}")),
            None => {}
        }
        parts.push(self.stop.describe());
        parts.push(format!("warm-up {} requests", self.warmup));
        if self.aggregation == Aggregation::Streaming {
            parts.push("streaming aggregation".into());
        }
        parts.join(", ")
    }
}

/// An arrival rate as labels print it: plain decimal from 0.001 to 10^9 (`2.5`), else in
/// scientific notation (`1e-300`), never a line of 300 digits.
pub fn rate_text(r: f64) -> String {
    if r == 0.0 || (1e-3..1e9).contains(&r.abs()) {
        format!("{r}")
    } else {
        format!("{r:e}")
    }
}

/// A 64-bit seed for one load point, mixed (splitmix64) from the suite seed, the job's
/// position in its suite and the point index, so arrivals repeat run to run and differ
/// between jobs and points.
pub fn point_seed(suite_seed: u64, job_index: usize, point_index: usize) -> u64 {
    let z = suite_seed
        ^ (job_index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (point_index as u64).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    mix64(z.wrapping_add(0x9E37_79B9_7F4A_7C15))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> LoadSpec {
        LoadSpec {
            concurrency: None,
            rate: None,
            arrival: Arrival::Poisson,
            stop: Stop::Count(8),
            warmup: 2,
            sweep: None,
            aggregation: Aggregation::Exact,
        }
    }

    #[test]
    fn closed_loop_defaults_to_one_in_flight() {
        let p = spec().points();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].concurrency, Some(1));
        assert_eq!(p[0].mode(), LoopMode::Closed);
        assert_eq!(spec().max_concurrency(), Some(1));
    }

    #[test]
    fn concurrency_sweep_gives_one_point_per_value() {
        let s = LoadSpec {
            sweep: Some(Sweep::Concurrency(vec![1, 4, 16])),
            ..spec()
        };
        let p = s.points();
        assert_eq!(
            p.iter().map(|p| p.concurrency).collect::<Vec<_>>(),
            vec![Some(1), Some(4), Some(16)]
        );
        assert_eq!(p.iter().map(|p| p.index).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(s.max_concurrency(), Some(16));
        assert!(s.describe().contains("sweep concurrency [1, 4, 16]"));
    }

    #[test]
    fn rate_sweep_keeps_the_cap_and_uncapped_has_no_max() {
        let s = LoadSpec {
            concurrency: Some(3),
            sweep: Some(Sweep::Rate(vec![1.0, 2.0])),
            ..spec()
        };
        let p = s.points();
        assert_eq!(p[1].rate, Some(2.0));
        assert_eq!(p[1].concurrency, Some(3));
        assert_eq!(p[1].mode(), LoopMode::Open);
        assert_eq!(p[1].label(), "rate 2/s poisson, concurrency <= 3");
        assert_eq!(rate_text(2.5), "2.5");
        assert_eq!(rate_text(1e-300), "1e-300");
        assert_eq!(rate_text(1.5e12), "1.5e12");
        let open = LoadSpec {
            rate: Some(5.0),
            ..spec()
        };
        assert_eq!(open.points()[0].concurrency, None);
        assert_eq!(open.max_concurrency(), None);
    }

    #[test]
    fn point_seeds_differ_by_job_and_point() {
        let a = point_seed(7, 0, 0);
        assert_eq!(a, point_seed(7, 0, 0));
        assert_ne!(a, point_seed(7, 1, 0));
        assert_ne!(a, point_seed(7, 0, 1));
        assert_ne!(a, point_seed(8, 0, 0));
        assert_eq!(a, 7_191_089_600_892_374_487);
    }
}
