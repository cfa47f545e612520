//! What the samplers did, as summarised in `report.json` → `telemetry` (the samples
//! themselves are in `samples/`): per source its status, period and counts; per power
//! device its whole-run energy; for the engine's `/metrics` the whole-run increase of each
//! canonical counter (resets handled) and each gauge per engine (max and mean, never
//! summed across data-parallel engines).
//!
//! [`SourceStatus`], [`PowerDeviceKind`], [`EnergyMethod`] and [`CounterIncrease`] are
//! shared with the samples format (`telemetry` re-exports them).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::basis::PowerBasis;

/// The state of one source (or power device) at the end of the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum SourceStatus {
    /// Sampled until stop.
    Ok,
    /// Never produced data; the reason (e.g. NVML init failure, pid absent, no scrape
    /// succeeded, every power/energy query NotSupported).
    Unavailable {
        /// Human-readable reason.
        reason: String,
    },
    /// Stopped early because the target went away (pid exited or reused, GPU lost).
    Ended {
        /// When it was noticed, ns from the reference instant.
        at_elapsed_ns: Option<u64>,
        /// Human-readable reason.
        reason: String,
    },
    /// The sampler itself failed (thread could not start or panicked).
    Failed {
        /// Human-readable reason.
        reason: String,
    },
}

impl SourceStatus {
    /// The reason of a status other than `ok`.
    pub fn reason(&self) -> Option<&str> {
        match self {
            SourceStatus::Ok => None,
            SourceStatus::Unavailable { reason }
            | SourceStatus::Ended { reason, .. }
            | SourceStatus::Failed { reason } => Some(reason),
        }
    }
}

/// Whether a power device is an NVML GPU or a probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerDeviceKind {
    /// An NVIDIA GPU through NVML.
    Nvml,
    /// A power probe (the built-in simulator's model).
    Probe,
}

/// How a whole-run energy figure was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnergyMethod {
    /// Energy-counter deltas only.
    Counter,
    /// Trapezoid integration of power only.
    PowerIntegration,
    /// Counter deltas, with power integration over the intervals where the counter was
    /// missing, reset or implausible.
    Mixed,
}

/// The increase of a counter over a series of samples, reset-aware (C15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterIncrease {
    /// Sum over consecutive present samples of `v[i] − v[i−1]`, or `v[i]` when sample `i` is
    /// flagged as a reset (the counter restarted from 0 within the interval). `None` when fewer
    /// than two samples carry a value.
    pub increase: Option<u64>,
    /// Number of reset intervals.
    pub counter_resets: u32,
    /// `true` when any reset occurred: increments between the last pre-reset sample and the
    /// reset are unobservable, so `increase` is a lower bound (C15: 10000 → 800 gives ≥ 800).
    pub lower_bound: bool,
    /// Samples with a value that took part.
    pub samples_used: u32,
}

/// `report.json` → `telemetry`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TelemetrySummary {
    /// When sampling started, ns.
    pub started_elapsed_ns: u64,
    /// When sampling stopped, ns.
    pub stopped_elapsed_ns: u64,
    /// The `/proc` source; `null` when not configured.
    pub proc: Option<ProcSummary>,
    /// The power source (GPUs and probes); `null` when not configured.
    pub power: Option<PowerSummary>,
    /// The engine's `/metrics`; `null` when not configured.
    pub metrics: Option<MetricsSummary>,
}

/// The `/proc` source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcSummary {
    /// Final status.
    pub status: SourceStatus,
    /// Root pid.
    pub pid: u32,
    /// Whether descendants were summed.
    pub include_descendants: bool,
    /// Sampling period, ns.
    pub period_ns: u64,
    /// Samples kept.
    pub sample_count: u64,
    /// Samples dropped at the cap.
    pub dropped: u64,
    /// Transient read failures.
    pub read_errors: u64,
}

/// The power source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerSummary {
    /// Status of NVML (`null` when GPUs were not requested).
    pub gpu_status: Option<SourceStatus>,
    /// Sampling period, ns.
    pub period_ns: u64,
    /// Samples kept (all devices).
    pub sample_count: u64,
    /// Samples dropped at the cap (all devices).
    pub dropped: u64,
    /// Devices (GPUs first, then probes).
    pub devices: Vec<PowerDeviceSummary>,
}

/// One power device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerDeviceSummary {
    /// Device id in `samples/gpu.jsonl`.
    pub device: u32,
    /// NVML GPU or probe.
    pub kind: PowerDeviceKind,
    /// `gpu<index>` for GPUs, the probe's label otherwise.
    pub label: String,
    /// Basis of the power readings; `null` when none was read.
    pub power_basis: Option<PowerBasis>,
    /// `ok`, `unavailable` or `ended`, with the reason.
    pub status: SourceStatus,
    /// Whole-run energy between the first and last sample, mJ; `null` when unknown.
    pub energy_mj: Option<u64>,
    /// How it was obtained.
    pub energy_method: Option<EnergyMethod>,
    /// Why `energy_mj` is `null`.
    pub energy_reason: Option<String>,
    /// Share of the sampled span with power at both ends of its intervals.
    pub power_coverage: Option<f64>,
}

/// The engine's `/metrics` source.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsSummary {
    /// Final status (`unavailable` when no scrape succeeded).
    pub status: SourceStatus,
    /// Profile asked for (`auto`, `vllm`, …).
    pub profile_requested: String,
    /// Profile applied after `auto` detection; `null` when nothing was detected.
    pub profile: Option<String>,
    /// Scrape period, ns.
    pub period_ns: u64,
    /// Successful scrapes.
    pub scrapes_ok: u64,
    /// Failed scrapes (gaps).
    pub scrapes_failed: u64,
    /// Exposition lines that did not parse, summed over scrapes.
    pub parse_errors: u64,
    /// Canonical name → exposed families used.
    pub mapping: BTreeMap<String, String>,
    /// Distinct remarks from mapping (fallbacks, model filter, untyped families).
    pub notes: Vec<String>,
    /// Whole-run increase of each canonical counter (reset-aware; `increase` `null` when
    /// fewer than two scrapes carried it, e.g. a family declared with `# TYPE` but no
    /// series). Per-step deltas are in each step's `attribution`.
    pub counters: BTreeMap<String, CounterIncrease>,
    /// Each canonical gauge per engine (data-parallel engines are kept apart, never
    /// summed), with the max and mean over engines.
    pub gauges: BTreeMap<String, GaugeSummary>,
}

/// One gauge over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GaugeSummary {
    /// Per engine (the series' labels other than the model's; `""` for one unlabelled
    /// series): its samples' max, mean and count.
    pub engines: BTreeMap<String, EngineGauge>,
    /// The largest value of any engine; `null` without a value.
    pub max: Option<f64>,
    /// The mean of the engines' means; `null` without a value.
    pub mean: Option<f64>,
}

/// One gauge of one engine over the run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EngineGauge {
    /// Scrapes that carried a finite value.
    pub samples: u64,
    /// Largest value; `null` without one.
    pub max: Option<f64>,
    /// Mean value; `null` without one.
    pub mean: Option<f64>,
}
