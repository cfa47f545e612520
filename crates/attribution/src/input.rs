//! Inputs of the step-attribution join (docs/measurement.md): the run anchor and window, power and energy-counter
//! series per device, canonical engine counter series, per-step usage and the
//! concurrency condition.
//!
//! Every time is `elapsed_ns` (u64 nanoseconds from the run's reference instant, docs/samples.md);
//! every raw value is an integer (mW, mJ, tokens). Series must be sorted by `elapsed_ns`
//! (non-decreasing); an unsorted series withholds the trajectory
//! ([`super::WithholdReason::InvalidSeries`]).

use serde::{Deserialize, Serialize};

pub use inferscope_model::attribution::{CounterName, RunWindow, StepUsage};
pub use inferscope_model::basis::PowerBasis;

/// Largest accepted power reading, mW (1 MW per device).
///
/// The bound keeps every doubled mW·ns accumulator inside `u128` and every mJ figure
/// inside `u64` for any run up to `u64::MAX` ns; a reading above it withholds the
/// trajectory as [`super::SeriesProblem::PowerOutOfRange`].
pub const MAX_POWER_MW: u64 = 1_000_000_000;

/// Power above which an energy counter's increase is an implausible jump, mW (5 kW per
/// device: above any single GPU board or superchip module; zeus #113). The interval is
/// allowed one extra second at this power for the counter's ~100 ms update granularity.
pub const MAX_PLAUSIBLE_POWER_MW: u64 = 5_000_000;

/// Trailing window of an averaged power reading, ns (NVML `power_usage()` on Ampere
/// except GA100 and newer averages over 1 s; docs/measurement.md, field case
/// C20). A step shorter than this window on an `averaged_1s` series is `low_confidence`.
pub const AVERAGED_POWER_WINDOW_NS: u64 = 1_000_000_000;

/// One power reading of one device: `elapsed_ns` from the reference instant and power in
/// mW (integer). A sampler drops 0 mW / `NotSupported` readings as missing before they get
/// here (docs/telemetry.md "Power (NVML and probes)"); attribution takes every sample as
/// given and never deduplicates equal readings (docs/samples.md "`gpu.jsonl`").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PowerSample {
    /// ns from the run's reference instant.
    pub elapsed_ns: u64,
    /// Power, mW; at most [`MAX_POWER_MW`].
    pub power_mw: u64,
}

/// The power timeline of one device (docs/measurement.md / step-attribution integration (docs/measurement.md) basis).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PowerSeries {
    /// Device key (e.g. `gpu0` or a UUID); matches [`EnergyCounterSeries::device`].
    pub device: String,
    /// What each reading means.
    pub basis: PowerBasis,
    /// Readings sorted by `elapsed_ns` (non-decreasing).
    pub samples: Vec<PowerSample>,
}

/// One reading of a device's cumulative energy counter (NVML
/// `nvmlDeviceGetTotalEnergyConsumption`, mJ since the driver was last loaded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnergyCounterSample {
    /// ns from the run's reference instant.
    pub elapsed_ns: u64,
    /// Cumulative energy, mJ. A decrease starts a new epoch (driver reload; field case
    /// C19): that interval's energy is taken from the power integral, never a negative or
    /// wrapped delta.
    pub energy_mj: u64,
}

/// The energy-counter timeline of one device (optional; absent when `NotSupported`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnergyCounterSeries {
    /// Device key; matches [`PowerSeries::device`].
    pub device: String,
    /// Readings sorted by `elapsed_ns` (non-decreasing).
    pub samples: Vec<EnergyCounterSample>,
}

/// One scrape of a canonical counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterPoint {
    /// ns from the run's reference instant.
    pub elapsed_ns: u64,
    /// Counter value (summed over the served model's series by the scraper).
    pub value: u64,
    /// `true` when the scraper saw this point start a new epoch (a decrease, a `_created`
    /// change, an engine restart). The increase over the interval ending here is then
    /// `value` (the counter restarted from 0). A decrease without this flag is a
    /// regression and withholds the trajectory (step-attribution withholding (docs/measurement.md) rule).
    pub reset: bool,
}

/// The timeline of one canonical counter. A counter that was never scraped has no series
/// at all (its deltas are `null`); a series that exists was scraped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSeries {
    /// Which canonical counter.
    pub name: CounterName,
    /// Scrapes sorted by `elapsed_ns` (non-decreasing).
    pub samples: Vec<CounterPoint>,
}

/// The concurrency condition of the run (docs/measurement.md "The wall: controlled concurrency only").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Concurrency {
    /// Most trajectories that can be in flight at once, as declared by the caller (the
    /// job's configured concurrency, capped by the units it started). More than one makes
    /// every energy figure `apportioned`, not `measured`; the statement names it as
    /// declared, beside the overlap observed in the markers.
    pub max_trajectories_in_flight: u32,
}

/// Everything the join needs besides the step markers and per-step usage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributionInput {
    /// Unix-epoch ns of the reference instant (`RunClock::reference_instant_unix_ns`);
    /// `None` (a pre-step-attribution report (docs/measurement.md)) withholds the trajectory.
    pub reference_instant_unix_ns: Option<u64>,
    /// The run's measured window.
    pub run_window: RunWindow,
    /// Power timelines, one per device (empty when no power source was available: energy
    /// figures are then `null`).
    pub power: Vec<PowerSeries>,
    /// Energy-counter timelines, one per device where the counter is supported.
    pub energy_counters: Vec<EnergyCounterSeries>,
    /// Canonical counter timelines; a counter absent here was never scraped.
    pub counters: Vec<CounterSeries>,
    /// Trajectories declared in flight.
    pub concurrency: Concurrency,
}
