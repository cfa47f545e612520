//! Resource telemetry: samplers on their own threads, into bounded memory, stamped with
//! `elapsed_ns` from the run's shared [`RunClock`](inferscope_clock::RunClock) (docs/samples.md; docs/architecture.md).
//!
//! Sources:
//! - **proc** — `/proc/<pid>` of the engine, optionally with its descendants: RSS bytes,
//!   threads, utime/stime jiffies (raw; convert with [`proc::clk_tck`] at the report edge).
//!   A vanished pid ends the source (`ended`, with the time), it never panics.
//! - **power** — NVIDIA GPUs through NVML (`gpu`; no library/driver/device → `unavailable` with
//!   the reason, never zeros) and any number of [`PowerProbe`]s (e.g. the simulator's
//!   `simulated` power), all sampled on one thread.
//! - **metrics** — an engine's Prometheus/OpenMetrics endpoint mapped to the canonical counters
//!   `prompt_tokens`, `generation_tokens`, `prefix_cache_queries`, `prefix_cache_hits` and the
//!   gauges `requests_running`, `requests_waiting`, `kv_cache_usage` ([`profile`]).
//! - **prometheus** — the same counters and gauges read from a Prometheus server after the run
//!   ([`prometheus`]: range queries over the run window, each series at its own source
//!   timestamps, staleness flagged); the join reads its counters when it is configured.
//!
//! GPUs are selected by `gpu_devices` / `CUDA_VISIBLE_DEVICES`, and a GPU in MIG mode is kept
//! as a lane but marked not attributable ([`gpu`]).
//!
//! Lifecycle: [`start`] spawns one thread per configured source and returns once every source
//! has taken its first sample (or failed to start), so the first samples precede the measured
//! window; [`TelemetryHandle::stop`] signals the threads, each takes one final sample, and the
//! joined result is a [`TelemetryRun`]. Periods default to 50 ms (proc, power; docs/samples.md) and
//! 200 ms (metrics). Each source keeps at most `max_samples_per_source` samples (power: per
//! device); later samples are dropped and counted (`dropped`), never blocking.
//!
//! # Artifact formats (`<run dir>/samples/`, written by [`TelemetryRun::write_samples`],
//! read back by [`TelemetryRun::read_samples`])
//!
//! The user-facing description of every file and field, for tools that write samples the
//! offline join reads, is `docs/samples.md`; keep the two in step.
//!
//! All files are strict JSON: non-finite floats are never written (they become `null` and the
//! name is listed in a `non_finite` array, C17); `Option` values are written as `null`, never
//! omitted. Times are integer ns from the reference instant (`elapsed_ns`); the anchor
//! `reference_instant_unix_ns` and `clock_domain_id` are in `sources.json`.
//!
//! - `proc.jsonl` — one [`ProcSample`] per line:
//!   `{"elapsed_ns":u64,"rss_bytes":u64|null,"threads":u64|null,"utime_jiffies":u64|null,"stime_jiffies":u64|null,"process_count":u32}`.
//! - `gpu.jsonl` — one [`PowerSample`] per line, one line per sample per device (GPUs and
//!   probes; the device is described in `sources.json` → `power.devices[device]`):
//!   `{"elapsed_ns":u64,"device":u32,"power_mw":u64|null,"power_basis":"instant"|"averaged_1s"|"simulated"|null,"energy_mj":u64|null,"energy_epoch":u32|null,"memory_used_bytes":u64|null,"utilization_gpu_pct":u32|null,"utilization_memory_pct":u32|null}`.
//! - `metrics.jsonl` — one [`MetricsSample`] per successful scrape:
//!   `{"elapsed_ns":u64,"request_sent_ns":u64,"counters":{"prompt_tokens":u64|null,"generation_tokens":…,"prefix_cache_queries":…,"prefix_cache_hits":…},"resets":{"prompt_tokens":bool,…},"gauges":{"requests_running":f64|null,…},"non_finite":[name,…]}`.
//!   Failed scrapes are not lines: they are counted gaps in `sources.json`.
//! - `prometheus.jsonl` — the Prometheus source's samples, in the `metrics.jsonl` line format
//!   (`elapsed_ns` = newest source timestamp, `request_sent_ns` = oldest).
//! - `sources.json` — `{"schema":"inferscope.samples.v1","clock_domain_id":str,"reference_instant_unix_ns":u64,"started_elapsed_ns":u64,"stopped_elapsed_ns":u64,"proc":ProcTimeline|null,"power":PowerTimeline|null,"metrics":MetricsTimeline|null,"prometheus":MetricsTimeline|null}`,
//!   each timeline without its samples but with `sample_count`, `dropped`, its `period_ns`, its
//!   `status` (`{"state":"ok"}`, `{"state":"unavailable","reason":str}`,
//!   `{"state":"ended","at_elapsed_ns":u64|null,"reason":str}`, `{"state":"failed","reason":str}`)
//!   and reasons; power devices carry per-field `unsupported` reasons, error counts and the
//!   whole-run `energy` summary ([`energy::EnergySummary`]); metrics carry scrape counts, gaps,
//!   `counter_resets`, the profile used and the name mapping.
//!
//! A source that was not configured is `null` in `sources.json` and its JSONL file is empty.

pub mod counters;
pub mod energy;
pub mod gpu;
pub mod metrics;
pub mod power;
pub mod proc;
pub mod profile;
pub mod prom;
pub mod prometheus;
mod prometheus_config;
mod sampler;
mod store;
pub mod summary;

pub use counters::{CounterIncrease, CounterTracker, counter_increase};
pub use energy::{EnergyMethod, EnergyPoint, EnergySummary, whole_run_energy};
pub use gpu::{GpuSelection, GpuSelector, select_gpus};
pub use metrics::{CounterValues, MetricsSample, MetricsTracker, ResetFlags};
pub use power::{
    FnProbe, GpuDevice, GpuIdentity, GpuSampler, MigState, PowerBasis, PowerDevice,
    PowerDeviceKind, PowerProbe, PowerSample, ProbeReading, ProbeSampler, QueryError, probe_fn,
};
pub use proc::{ProcSample, clk_tck};
pub use profile::{CanonicalSnapshot, CounterId, EngineProfile, map_exposition};
pub use prom::{
    BucketQuantile, Exposition, ExpositionFormat, Histogram, format_from_content_type,
    parse_exposition,
};
pub use prometheus::PrometheusInfo;
pub use prometheus_config::PrometheusConfig;
pub use sampler::{TelemetryHandle, TelemetrySnapshot, start};
pub use store::{SCHEMA as SAMPLES_SCHEMA, SamplesError, SamplesSources};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::Duration;

/// Default sampling period of proc and power sources: 50 ms (docs/samples.md).
pub const DEFAULT_PERIOD: Duration = Duration::from_millis(50);
/// Default metrics scrape period: 200 ms.
pub const DEFAULT_METRICS_PERIOD: Duration = Duration::from_millis(200);
/// Default metrics scrape timeout: 1 s.
pub const DEFAULT_METRICS_TIMEOUT: Duration = Duration::from_secs(1);
/// Default cap on samples kept per source (power: per device).
pub const DEFAULT_MAX_SAMPLES: usize = 200_000;

/// The state of one source (or power device) at the end of the run: the report model's.
pub use inferscope_model::telemetry::SourceStatus;

/// `/proc` source settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcConfig {
    /// The engine pid (`engine_pid`).
    pub pid: u32,
    /// Also sum the descendants (walked through `/proc/*/stat` ppid links every sample).
    pub include_descendants: bool,
}

/// GPU (NVML) source settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuConfig {
    /// Which devices to sample and attribute ([`gpu`]); the default selects every device.
    pub selection: GpuSelection,
}

/// Opens the GPUs a run may sample (NVML by default; tests pass doubles of [`GpuDevice`]).
/// `Err` carries the reason the GPU source is unavailable.
pub type GpuOpener = Box<dyn FnOnce() -> Result<Vec<Box<dyn GpuDevice>>, String> + Send>;

/// Metrics source settings.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricsConfig {
    /// Full URL of the metrics endpoint, e.g. `http://127.0.0.1:8000/metrics`.
    pub url: String,
    /// Engine profile (or `Auto`).
    pub profile: EngineProfile,
    /// The served model name used to select series by `model_name`/`model` label.
    pub served_model: Option<String>,
    /// Scrape period (default 200 ms).
    pub period: Duration,
    /// Per-scrape timeout (default 1 s).
    pub timeout: Duration,
}

impl MetricsConfig {
    /// A config with default period and timeout.
    pub fn new(
        url: impl Into<String>,
        profile: EngineProfile,
        served_model: Option<String>,
    ) -> Self {
        Self {
            url: url.into(),
            profile,
            served_model,
            period: DEFAULT_METRICS_PERIOD,
            timeout: DEFAULT_METRICS_TIMEOUT,
        }
    }
}

/// What to sample. `Default` samples nothing, with default periods and caps.
pub struct TelemetryConfig {
    /// Period of proc and power sampling (default 50 ms).
    pub period: Duration,
    /// `/proc` source.
    pub proc: Option<ProcConfig>,
    /// NVML source.
    pub gpu: Option<GpuConfig>,
    /// Power probes (sampled on the power thread with the GPUs).
    pub probes: Vec<Box<dyn PowerProbe>>,
    /// Metrics source.
    pub metrics: Option<MetricsConfig>,
    /// Prometheus server queried after the run ([`prometheus`]).
    pub prometheus: Option<PrometheusConfig>,
    /// Opens the GPUs instead of NVML (test doubles); `None` = NVML.
    pub gpu_opener: Option<GpuOpener>,
    /// Cap on kept samples per source (power: per device); default 200,000.
    pub max_samples_per_source: usize,
}

impl Default for TelemetryConfig {
    fn default() -> Self {
        Self {
            period: DEFAULT_PERIOD,
            proc: None,
            gpu: None,
            probes: Vec::new(),
            metrics: None,
            prometheus: None,
            gpu_opener: None,
            max_samples_per_source: DEFAULT_MAX_SAMPLES,
        }
    }
}

impl std::fmt::Debug for TelemetryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TelemetryConfig")
            .field("period", &self.period)
            .field("proc", &self.proc)
            .field("gpu", &self.gpu)
            .field(
                "probes",
                &self
                    .probes
                    .iter()
                    .map(|p| p.label().to_string())
                    .collect::<Vec<_>>(),
            )
            .field("metrics", &self.metrics)
            .field("prometheus", &self.prometheus)
            .field("gpu_opener", &self.gpu_opener.as_ref().map(|_| "custom"))
            .field("max_samples_per_source", &self.max_samples_per_source)
            .finish()
    }
}

/// The proc source's timeline and status.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProcTimeline {
    /// Final status.
    pub status: SourceStatus,
    /// Root pid.
    pub pid: u32,
    /// Whether descendants were summed.
    pub include_descendants: bool,
    /// Sampling period, ns.
    pub period_ns: u64,
    /// `sysconf(_SC_CLK_TCK)` on the sampling host (jiffies per second), for conversion.
    pub clk_tck: Option<u64>,
    /// Samples kept.
    pub sample_count: u64,
    /// Samples dropped at the cap.
    pub dropped: u64,
    /// Transient read failures.
    pub read_errors: u64,
    /// Last transient read failure.
    pub last_error: Option<String>,
    /// The samples (in `proc.jsonl`, not in `sources.json`).
    #[serde(skip)]
    pub samples: Vec<ProcSample>,
}

/// The power source's timeline: NVML GPUs and probes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PowerTimeline {
    /// Status of NVML (`None` when GPUs were not requested).
    pub gpu_status: Option<SourceStatus>,
    /// Sampling period, ns.
    pub period_ns: u64,
    /// Devices (GPUs first, then probes), indexed by [`PowerSample::device`].
    pub devices: Vec<PowerDevice>,
    /// Samples kept (all devices).
    pub sample_count: u64,
    /// Samples dropped at the cap (all devices).
    pub dropped: u64,
    /// How the GPUs were selected and anything to know about it ([`gpu`]).
    #[serde(default)]
    pub gpu_notes: Vec<String>,
    /// The samples (in `gpu.jsonl`, not in `sources.json`).
    #[serde(skip)]
    pub samples: Vec<PowerSample>,
}

impl PowerTimeline {
    /// The samples of one device, in time order.
    pub fn device_samples(&self, device: u32) -> impl Iterator<Item = &PowerSample> {
        self.samples.iter().filter(move |s| s.device == device)
    }

    /// Recomputes every device's whole-run energy from the samples (pure).
    pub fn compute_energy(&mut self) {
        for d in &mut self.devices {
            let pts: Vec<EnergyPoint> = self
                .samples
                .iter()
                .filter(|s| s.device == d.device)
                .map(|s| EnergyPoint {
                    elapsed_ns: s.elapsed_ns,
                    power_mw: s.power_mw,
                    energy_mj: s.energy_mj,
                })
                .collect();
            d.energy = Some(whole_run_energy(&pts));
        }
    }
}

/// A failed scrape.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScrapeGap {
    /// When the failure was seen, ns.
    pub elapsed_ns: u64,
    /// Why.
    pub reason: String,
}

/// An exposition line that did not parse, located.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParseErrorAt {
    /// The scrape, counting successful scrapes from 1 (a Prometheus timeline: the sample).
    pub scrape: u64,
    /// When the scrape's body was read, ns.
    pub elapsed_ns: u64,
    /// 1-based line of the exposition body.
    pub line: usize,
    /// What was wrong (the parser's message, at most 200 bytes).
    pub message: String,
}

/// The most located parse errors a metrics timeline keeps (`parse_errors` counts all).
pub const MAX_PARSE_ERROR_LINES: usize = 100;

/// Counts the parse errors of one scrape's body into `t` and locates them: the first
/// [`MAX_PARSE_ERROR_LINES`] go to `parse_error_lines`, and each distinct line number gets
/// one note (`metrics: exposition line L did not parse (first in scrape K: …)`), within
/// `max_notes`.
pub fn record_parse_errors(
    t: &mut MetricsTimeline,
    scrape: u64,
    elapsed_ns: u64,
    errors: &[prom::LineError],
    max_notes: usize,
) {
    t.parse_errors += errors.len() as u64;
    for e in errors {
        let mut message = e.message.clone();
        if message.len() > 200 {
            let mut cut = 200;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
        }
        let lead = format!("metrics: exposition line {} did not parse", e.line);
        if t.notes.len() < max_notes && !t.notes.iter().any(|n| n.starts_with(&lead)) {
            t.notes
                .push(format!("{lead} (first in scrape {scrape}: {message})"));
        }
        if t.parse_error_lines.len() < MAX_PARSE_ERROR_LINES {
            t.parse_error_lines.push(ParseErrorAt {
                scrape,
                elapsed_ns,
                line: e.line,
                message,
            });
        }
    }
}

/// The metrics source's timeline and status.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsTimeline {
    /// Final status (`unavailable` when no scrape succeeded).
    pub status: SourceStatus,
    /// Scraped URL.
    pub url: String,
    /// Profile asked for.
    pub profile_requested: EngineProfile,
    /// Profile applied (after `auto` detection); `None` when nothing was detected.
    pub profile: Option<EngineProfile>,
    /// Served model used for series selection.
    pub served_model: Option<String>,
    /// Scrape period, ns.
    pub period_ns: u64,
    /// Scrape timeout, ns.
    pub timeout_ns: u64,
    /// Successful scrapes.
    pub scrapes_ok: u64,
    /// Failed scrapes (gaps).
    pub scrapes_failed: u64,
    /// Successful scrapes sent a second time on a new connection: the pooled connection
    /// the first try went out on had been closed by the engine, with no answer. Each is
    /// one sample; its `sent_ns`..`done_ns` window spans both tries.
    #[serde(default)]
    pub scrapes_resent: u64,
    /// The first failed scrapes (at most 1,000 kept).
    pub gaps: Vec<ScrapeGap>,
    /// Exposition lines that did not parse, summed over scrapes.
    pub parse_errors: u64,
    /// The first of them, located: scrape, line, message ([`MAX_PARSE_ERROR_LINES`]).
    #[serde(default)]
    pub parse_error_lines: Vec<ParseErrorAt>,
    /// Counter resets per canonical counter (C15).
    pub counter_resets: BTreeMap<String, u32>,
    /// Canonical name → exposed families used.
    pub mapping: BTreeMap<String, String>,
    /// Distinct remarks from mapping (fallbacks, model filter, untyped families).
    pub notes: Vec<String>,
    /// The engine's KV-cache block size in tokens, as last exposed (vLLM:
    /// `vllm:cache_config_info{block_size}`); `null` when not exposed. A prefix-cache hit
    /// reuses whole blocks: at most `floor((prompt − 1) / block) · block` tokens.
    #[serde(default)]
    pub block_size: Option<u64>,
    /// Samples kept.
    pub sample_count: u64,
    /// Samples dropped at the cap.
    pub dropped: u64,
    /// Set when the samples came from a Prometheus server rather than a direct scrape:
    /// the queries, the source timestamps and staleness per series ([`prometheus`]).
    #[serde(default)]
    pub prometheus: Option<PrometheusInfo>,
    /// The samples (in `metrics.jsonl`, not in `sources.json`).
    #[serde(skip)]
    pub samples: Vec<MetricsSample>,
}

impl MetricsTimeline {
    /// Reset-aware increase of one canonical counter over all samples (C15).
    pub fn increase(&self, id: CounterId) -> CounterIncrease {
        counter_increase(
            self.samples
                .iter()
                .map(|s| (s.counters.get(id), s.resets.get(id))),
        )
    }
}

/// Everything sampled during one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TelemetryRun {
    /// The run's clock domain.
    pub clock_domain_id: String,
    /// Unix ns of the reference instant.
    pub reference_instant_unix_ns: u64,
    /// When sampling started, ns.
    pub started_elapsed_ns: u64,
    /// When sampling stopped, ns.
    pub stopped_elapsed_ns: u64,
    /// `/proc` source, if configured.
    pub proc: Option<ProcTimeline>,
    /// Power source (GPUs and probes), if configured.
    pub power: Option<PowerTimeline>,
    /// Metrics source, if configured.
    pub metrics: Option<MetricsTimeline>,
    /// The engine counters as read from a Prometheus server after the run
    /// (`[telemetry] prometheus`), if configured (`samples/prometheus.jsonl`).
    #[serde(default)]
    pub prometheus: Option<MetricsTimeline>,
}

impl TelemetryRun {
    /// The timeline the step-attribution join (docs/measurement.md) reads engine counters from: the Prometheus one when
    /// the run configured a Prometheus source, else the direct `/metrics` scrape.
    pub fn counter_timeline(&self) -> Option<&MetricsTimeline> {
        self.prometheus.as_ref().or(self.metrics.as_ref())
    }
}

#[cfg(test)]
mod parse_error_tests {
    use super::*;

    fn timeline() -> MetricsTimeline {
        MetricsTimeline {
            status: SourceStatus::Ok,
            url: "http://127.0.0.1:1/metrics".into(),
            profile_requested: EngineProfile::Vllm,
            profile: None,
            served_model: None,
            period_ns: 1,
            timeout_ns: 1,
            scrapes_ok: 0,
            scrapes_failed: 0,
            scrapes_resent: 0,
            gaps: Vec::new(),
            parse_errors: 0,
            parse_error_lines: Vec::new(),
            block_size: None,
            counter_resets: BTreeMap::new(),
            mapping: BTreeMap::new(),
            notes: Vec::new(),
            sample_count: 0,
            dropped: 0,
            prometheus: None,
            samples: Vec::new(),
        }
    }

    /// Exposition lines that do not parse are counted and located —
    /// their scrape and line in the timeline (sources.json) and one note per line.
    #[test]
    fn parse_errors_name_their_scrape_and_line() {
        let body = "# TYPE vllm:num_requests_running gauge\n\
                    vllm:num_requests_running{model_name=\"m\"} 1\n\
                    vllm:bad{model_name=\"m\" 2\n\
                    vllm:num_requests_waiting 0 12 extra\n";
        let expo = parse_exposition(body, ExpositionFormat::PrometheusText);
        assert_eq!(expo.errors.len(), 2, "{:?}", expo.errors);
        let mut t = timeline();
        record_parse_errors(&mut t, 1, 10, &expo.errors, 100);
        record_parse_errors(&mut t, 2, 20, &expo.errors, 100);
        assert_eq!(t.parse_errors, 4);
        let at: Vec<(u64, usize)> = t
            .parse_error_lines
            .iter()
            .map(|e| (e.scrape, e.line))
            .collect();
        assert_eq!(at, vec![(1, 3), (1, 4), (2, 3), (2, 4)]);
        assert_eq!(t.parse_error_lines[0].elapsed_ns, 10);
        assert_eq!(t.notes.len(), 2, "{:?}", t.notes);
        assert!(
            t.notes[0].starts_with("metrics: exposition line 3 did not parse (first in scrape 1: "),
            "{:?}",
            t.notes
        );
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["parse_error_lines"][1]["line"], 4);
        // A long run keeps the first located ones only, and counts every one.
        for k in 3..200 {
            record_parse_errors(&mut t, k, k, &expo.errors, 100);
        }
        assert_eq!(t.parse_errors, 398);
        assert_eq!(t.parse_error_lines.len(), MAX_PARSE_ERROR_LINES);
        assert_eq!(t.notes.len(), 2);
    }
}
