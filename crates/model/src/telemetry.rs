//! What the samplers did, as summarised in `report.json` → `telemetry` (the samples
//! themselves are in `samples/`): per source its status, period and counts; per power
//! device its whole-run energy; for the engine's `/metrics` the whole-run increase of each
//! canonical counter (resets handled) and each gauge per engine (max and mean, never
//! summed across data-parallel engines).
//!
//! [`SourceStatus`], [`PowerDeviceKind`], [`EnergyMethod`], [`CounterIncrease`] and the
//! Prometheus source's provenance ([`PrometheusInfo`], [`SeriesInfo`], [`TimestampBasis`])
//! are shared with the samples format (`telemetry` re-exports them).

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
    /// reset or jumped implausibly.
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
    /// The same counters and gauges read from a Prometheus server after the run
    /// (`[telemetry] prometheus`), with how they were read (`prometheus`); `null` when not
    /// configured. The step-attribution join (docs/measurement.md) reads its counters when present.
    pub prometheus: Option<MetricsSummary>,
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
    /// Why the device enters no energy figure (a GPU in MIG mode: whole-GPU power only,
    /// naming the parent GPU and its instances); `null` when it does.
    pub not_attributable: Option<String>,
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
    /// Successful scrapes sent a second time on a new connection: the pooled connection
    /// the first try went out on had been closed by the engine, with no answer. Each is
    /// one sample; its `sent_ns`..`done_ns` window spans both tries.
    #[serde(default)]
    pub scrapes_resent: u64,
    /// Exposition lines that did not parse, summed over scrapes.
    pub parse_errors: u64,
    /// Canonical name → exposed families used.
    pub mapping: BTreeMap<String, String>,
    /// Distinct remarks from mapping (fallbacks, model filter, untyped families).
    pub notes: Vec<String>,
    /// The engine's KV-cache block size in tokens (vLLM: `vllm:cache_config_info`'s
    /// `block_size` label); `null` when the engine does not expose one. A prefix-cache hit
    /// reuses whole blocks only: `cached ≤ floor((prompt − 1) / block) · block`.
    #[serde(default)]
    pub block_size: Option<u64>,
    /// Whole-run increase of each canonical counter (reset-aware; `increase` `null` when
    /// fewer than two scrapes carried it, e.g. a family declared with `# TYPE` but no
    /// series). Per-step deltas are in each step's `attribution`.
    pub counters: BTreeMap<String, CounterIncrease>,
    /// Each canonical gauge per engine (data-parallel engines are kept apart, never
    /// summed), with the max and mean over engines.
    pub gauges: BTreeMap<String, GaugeSummary>,
    /// Set when the samples came from a Prometheus server rather than a direct scrape:
    /// the selector, the queries, the source timestamps and staleness per series.
    pub prometheus: Option<PrometheusInfo>,
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

/// What the timestamps of a Prometheus timeline are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampBasis {
    /// Each sample at the timestamp Prometheus stored with it (`timestamp()`): its scrape.
    Source,
    /// Query evaluation times (a saved `query_range` response): each value is the latest
    /// stored sample at or before its time.
    Evaluation,
}

/// One series read from the server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeriesInfo {
    /// The stored metric name (e.g. `vllm:prompt_tokens_total`).
    pub name: String,
    /// Its labels, `__name__` excluded.
    pub labels: BTreeMap<String, String>,
    /// Distinct stored samples kept.
    pub points: u64,
    /// First kept sample, ns from the reference instant (`null` when none).
    pub first_elapsed_ns: Option<u64>,
    /// Last kept sample, ns.
    pub last_elapsed_ns: Option<u64>,
    /// Median interval between its samples, ns (`null` with fewer than two).
    pub scrape_interval_ns: Option<u64>,
    /// Query steps where its newest sample was stale.
    pub stale_steps: u64,
    /// Query steps inside its span where it had no value.
    pub absent_steps: u64,
}

/// How a Prometheus timeline was obtained (`sources.json` → `prometheus.prometheus`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PrometheusInfo {
    /// The label matchers used.
    pub selector: String,
    /// Query step, ns.
    pub step_ns: u64,
    /// What the sample timestamps are.
    pub timestamps: TimestampBasis,
    /// Unix ms of the first and last evaluation asked for (`null` offline).
    pub query_start_unix_ms: Option<u64>,
    /// See `query_start_unix_ms`.
    pub query_end_unix_ms: Option<u64>,
    /// How long the runner waited after the run for a scrape past its end, ms.
    pub waited_ms: Option<u64>,
    /// The PromQL expressions sent (or, offline, the files read).
    pub queries: Vec<String>,
    /// Every series read.
    pub series: Vec<SeriesInfo>,
    /// Stale steps over all series.
    pub stale_steps: u64,
    /// Absent steps over all series.
    pub absent_steps: u64,
}

impl PrometheusInfo {
    /// Nothing read yet: the selector, the step and what the timestamps will be.
    pub fn new(selector: &str, step_ns: u64, timestamps: TimestampBasis) -> Self {
        PrometheusInfo {
            selector: selector.to_string(),
            step_ns,
            timestamps,
            query_start_unix_ms: None,
            query_end_unix_ms: None,
            waited_ms: None,
            queries: Vec::new(),
            series: Vec::new(),
            stale_steps: 0,
            absent_steps: 0,
        }
    }
}
