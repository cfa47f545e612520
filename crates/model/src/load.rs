//! Load jobs as reported: settings and what was achieved (`jobs[].load`), and the curve
//! (`jobs[].sweep`, one [`PointSummary`] per point).

use serde::{Deserialize, Serialize};

use super::basis::{Basis, TokenSource};
use super::stats::{JobStats, Summary};

/// How open-loop arrivals are spaced: the suite's `arrival` key and `jobs[].load.arrival`,
/// spelled the same in both (`poisson`, `constant`, `trace`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Exponential inter-arrival gaps of mean `1 / rate` (a Poisson process), seeded.
    #[default]
    Poisson,
    /// Evenly spaced: arrival `i` at `i / rate` seconds.
    Constant,
    /// At a dataset's recorded timestamps times its `time_scale` (set by the dataset, no
    /// rate).
    Trace,
}

impl Arrival {
    /// `poisson`, `constant` or `trace` (the suite's and the report's spelling).
    pub fn as_str(self) -> &'static str {
        match self {
            Arrival::Poisson => "poisson",
            Arrival::Constant => "constant",
            Arrival::Trace => "trace",
        }
    }
}

/// When a load point stops starting new units (units in flight always finish).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// Start exactly this many units (trajectories or requests) per point.
    Count(u64),
    /// Start units for this long per point, ns from the point's start (open loop: every
    /// arrival scheduled before the end; closed loop: no unit starts after it).
    Duration(u64),
}

impl Stop {
    /// `count 20` or `duration 5 s`.
    pub fn describe(self) -> String {
        match self {
            Stop::Count(n) => format!("count {n}"),
            Stop::Duration(ns) => format!("duration {} s", ns as f64 / 1e9),
        }
    }
}

/// `jobs[].load`: settings and what was achieved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadReport {
    /// One-line description of the settings.
    pub settings: String,
    /// `trajectory` (agentic jobs) or `request` (context jobs): what `count`,
    /// `concurrency` and `rate` count.
    pub unit: String,
    /// Configured `concurrency` (`null` when not set).
    pub concurrency: Option<u32>,
    /// Configured `rate`, units/s (`null` = closed loop).
    pub rate: Option<f64>,
    /// `poisson`, `constant` or `trace` (`null` for a closed loop).
    pub arrival: Option<Arrival>,
    /// Stop rule per point.
    pub stop: Stop,
    /// Warm-up requests per point.
    pub warmup: u64,
    /// The client's idle-pool size (sized to at least the largest concurrency; the pool
    /// never caps concurrency).
    pub client_max_connections: u64,
    /// Points the job declares (sweep values, or 1).
    pub points_planned: u64,
    /// Points that started (fewer than planned when the run was cancelled).
    pub points_run: u64,
    /// Request ids flagged as warm-up (recorded under `requests`, excluded from statistics).
    pub warmup_requests: Vec<String>,
}

/// Per-request thresholds derived from a job's gates for goodput (ms).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GoodputCriteria {
    /// TTFT from schedule at most, ms.
    pub ttft_ms: Option<f64>,
    /// Mean ITL of the request at most, ms.
    pub itl_ms: Option<f64>,
    /// TPOT of the request at most, ms.
    pub tpot_ms: Option<f64>,
    /// E2E from schedule at most, ms.
    pub e2e_ms: Option<f64>,
}

/// Goodput of one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Goodput {
    /// Requests (warm-up excluded) that met every bound.
    pub good_requests: u64,
    /// `good_requests / requests`; `None` with no request.
    pub fraction: Option<f64>,
    /// `good_requests` per second of the point's window; `None` for an empty window.
    pub rps: Option<f64>,
    /// The per-request thresholds applied.
    pub criteria: GoodputCriteria,
}

/// How device energy over a window was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowMethod {
    /// Energy-counter delta between the samples bracketing the window.
    Counter,
    /// The integer power trapezoid over the segments inside the window.
    Trapezoid,
    /// Devices differ.
    Mixed,
}

impl WindowMethod {
    /// `counter`, `trapezoid` or `mixed`.
    pub fn label(self) -> &'static str {
        match self {
            WindowMethod::Counter => "counter",
            WindowMethod::Trapezoid => "trapezoid",
            WindowMethod::Mixed => "mixed",
        }
    }
}

/// Device energy over one window, summed over every device with power samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct WindowEnergy {
    /// mJ.
    pub energy_mj: u64,
    /// `measured` or `simulated` (a window figure at any concurrency: the device's total,
    /// never a per-step attribution).
    pub basis: Basis,
    /// How it was obtained.
    pub method: WindowMethod,
}

/// Energy of one point's window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointEnergy {
    /// Device energy over the window, mJ (summed over devices).
    pub energy_mj: u64,
    /// Output tokens of every successful request of the point (warm-up included: they
    /// ran inside the window); `null` when one has no count.
    pub output_tokens: Option<u64>,
    /// Whose counts `output_tokens` are (`client_estimate` when any is estimated).
    pub tokens: Option<TokenSource>,
    /// `energy / output_tokens`, J per token; `None` without tokens.
    pub energy_per_output_token_j: Option<f64>,
    /// `simulated` or `measured` (the power source), always a window figure.
    pub basis: Basis,
    /// How the window energy was obtained.
    pub method: WindowMethod,
}

/// The settings and achieved figures of one point (the input of the point's summary and
/// the first fields of [`PointSummary`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointFacts {
    /// 0-based point index.
    pub index: usize,
    /// The swept value at this point (`null` without a sweep).
    pub value: Option<f64>,
    /// `concurrency 4`, `rate 2/s poisson`, …
    pub label: String,
    /// Configured units in flight (cap); `null` = uncapped open loop.
    pub concurrency: Option<u32>,
    /// Configured arrival rate, units/s; `null` = closed loop.
    pub rate: Option<f64>,
    /// Most units (trajectories or requests) in flight at once, measured.
    pub achieved_concurrency: u32,
    /// Most requests in flight at once, measured.
    pub max_requests_in_flight: u32,
    /// Units started.
    pub units: u64,
    /// Units scheduled but never started (the run was cancelled).
    pub units_not_started: u64,
    /// Point window, ns (first start to last end).
    pub window_ns: u64,
    /// The point's trajectory kept in `jobs[].trajectories[]` (its first unit; none when
    /// no unit started). Every unit of the point is a unit line of `requests.jsonl`.
    pub trajectories: Vec<String>,
    /// The point's connections: the warm pool opened before its window
    /// and the connections opened inside it. Absent in reports written before, and for
    /// points merged from shards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<PointConnections>,
}

/// `jobs[].sweep.points[].connections` (docs/artifacts.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PointConnections {
    /// Connections the warm pool asked for before the window: the point's concurrency
    /// cap; `null` when no pool was warmed (an uncapped open loop has no known size).
    pub warm_wanted: Option<u64>,
    /// Connections the warm pool opened (fewer than wanted when some were already open
    /// from an earlier point, or failed).
    pub warm_opened: u64,
    /// Warm-up requests that failed (those connections are opened in the window).
    pub warm_failed: u64,
    /// How long the warm pool took, ns (before the window; not part of any figure).
    pub warm_ns: u64,
    /// Warm-up connects that took 0.9 s or more: the server's listen backlog overflowed
    /// during the warm-up (before the window; not part of any figure). Absent in reports
    /// written before it was recorded: read as 0.
    #[serde(default)]
    pub warm_retransmits: u64,
    /// Connections opened inside the window (a request's wait on one is its
    /// `connect_ns` in `requests.jsonl`, part of its TTFT).
    pub opened_in_window: u64,
    /// Of those, the ones that took 0.9 s or more: a dropped SYN retransmitted after
    /// Linux's 1 s timeout (`connect_retransmit` on the request).
    pub connect_retransmits: u64,
}

/// One point of the curve (`jobs[].sweep.points[]`): its facts (flattened) and figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointSummary {
    /// Settings and what was achieved.
    #[serde(flatten)]
    pub facts: PointFacts,
    /// Warm-up requests excluded from the statistics.
    pub warmup_requests: u64,
    /// Statistics of the point's non-warm-up requests: TTFT/E2E from send, E2E from
    /// schedule, ITL, TPOT, schedule lag and misses, throughput.
    pub stats: JobStats,
    /// TTFT from the scheduled send time (`TTFT + lag`), ms (C24).
    pub ttft_from_schedule_ms: Option<Summary>,
    /// Goodput against the job's latency gates; `null` without latency bounds.
    pub goodput: Option<Goodput>,
    /// Window energy and energy per output token; `null` without a power source.
    pub energy: Option<PointEnergy>,
}

impl std::ops::Deref for PointSummary {
    type Target = PointFacts;
    fn deref(&self) -> &PointFacts {
        &self.facts
    }
}

/// `jobs[].sweep`: the curve (one point without a sweep).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// `concurrency`, `rate`, or `null` for a single point.
    pub variable: Option<String>,
    /// The swept values, in run order (empty without a sweep).
    pub values: Vec<f64>,
    /// One summary per point that ran.
    pub points: Vec<PointSummary>,
}

#[cfg(test)]
mod tests {
    use super::Arrival;

    /// The report and the suite spell an arrival the same way, as `as_str` does.
    #[test]
    fn arrival_spellings() {
        for a in [Arrival::Poisson, Arrival::Constant, Arrival::Trace] {
            let json = serde_json::to_string(&a).unwrap();
            assert_eq!(json, format!("\"{}\"", a.as_str()));
            assert_eq!(serde_json::from_str::<Arrival>(&json).unwrap(), a);
        }
        assert!(serde_json::from_str::<Arrival>("\"Poisson\"").is_err());
    }
}
