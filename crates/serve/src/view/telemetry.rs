//! The resource lanes: one per host, source, device and quantity, never summed
//! (docs/artifacts.md "The dashboard API"; R011), with their intervals without samples (pure).

use crate::telemetry::{
    CounterId, MetricsSample, MetricsTimeline, PowerBasis, PowerDeviceKind, PowerSample,
    PowerTimeline, ProcSample, ProcTimeline, SourceStatus,
};

use super::super::runs::{ArtifactFault, LaneFiles, SamplesSources, SamplesState};
use super::*;

/// Intervals without samples (pure): before the first sample, between samples, and after
/// the last, wherever the distance exceeds [`GAP_PERIODS`] × `period_ns`; the whole
/// window when there are none. `times` must be ascending; `window` is the sampler's
/// `[started, stopped]`.
pub fn sample_gaps(times: &[u64], period_ns: u64, window: (u64, u64)) -> Vec<SampleGap> {
    let threshold = period_ns.saturating_mul(GAP_PERIODS).max(1);
    let (w0, w1) = window;
    let Some((&first, &last)) = times.first().zip(times.last()) else {
        return if w1 > w0 {
            vec![SampleGap {
                start_ns: w0,
                end_ns: w1,
            }]
        } else {
            Vec::new()
        };
    };
    let mut out = Vec::new();
    if first > w0 && first - w0 > threshold {
        out.push(SampleGap {
            start_ns: w0,
            end_ns: first,
        });
    }
    for w in times.windows(2) {
        if w[1] > w[0] && w[1] - w[0] > threshold {
            out.push(SampleGap {
                start_ns: w[0],
                end_ns: w[1],
            });
        }
    }
    if w1 > last && w1 - last > threshold {
        out.push(SampleGap {
            start_ns: last,
            end_ns: w1,
        });
    }
    out
}

/// Sample times of the lanes, as read from the sample files: for each lane id, the times
/// of the samples where its quantity has a value.
#[derive(Clone, Debug, Default)]
pub struct LaneTimes {
    /// `lane_id` → ascending `elapsed_ns` of its values.
    pub by_lane: std::collections::BTreeMap<String, Vec<u64>>,
    /// A sample file that could not be read (its fault).
    pub fault: Option<ArtifactFault>,
}

impl LaneTimes {
    /// The times of every lane of `quantities` in `samples`.
    pub fn of(quantities: &[LaneQuantity], samples: &LaneSamples) -> Self {
        Self {
            by_lane: quantities
                .iter()
                .map(|q| {
                    (
                        q.lane_id(),
                        lane_points(*q, samples).iter().map(|p| p.0).collect(),
                    )
                })
                .collect(),
            fault: None,
        }
    }

    /// The times of every lane `s` lists in the sample files read for a run
    /// ([`super::super::runs::read_lane_files`]); a file's fault stays on the result.
    pub fn of_files(files: LaneFiles, s: &SamplesSources) -> Self {
        let samples = LaneSamples {
            power: &files.power,
            proc: &files.proc,
            clk_tck: s.proc.as_ref().and_then(|p| p.clk_tck),
            metrics: &files.metrics,
        };
        let quantities = lane_quantities(s.power.as_ref(), s.proc.as_ref(), s.metrics.as_ref());
        let mut t = Self::of(&quantities, &samples);
        t.fault = files.fault;
        t
    }

    fn times(&self, lane_id: &str) -> Vec<u64> {
        self.by_lane.get(lane_id).cloned().unwrap_or_default()
    }
}

/// The samples a run's lanes are drawn from.
#[derive(Clone, Copy, Debug, Default)]
pub struct LaneSamples<'a> {
    /// `samples/gpu.jsonl`.
    pub power: &'a [PowerSample],
    /// `samples/proc.jsonl`.
    pub proc: &'a [ProcSample],
    /// `sysconf(_SC_CLK_TCK)` of the `/proc` sampling host, when recorded.
    pub clk_tck: Option<u64>,
    /// `samples/metrics.jsonl`.
    pub metrics: &'a [MetricsSample],
}

/// One resource quantity: a lane of the dashboard and a counter track of the Perfetto
/// export (one definition for both). Never summed across devices, hosts or sources.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneQuantity {
    /// Board power of one device (`samples/gpu.jsonl` `power_mw`), mW.
    Power(u32),
    /// Resident set size of the engine's processes (`/proc`), bytes.
    Rss,
    /// CPU of the engine's processes: `Δ(utime + stime) / CLK_TCK / Δt`, % of one core,
    /// between consecutive `/proc` samples (at the later one); none across a change in
    /// the process count (a descendant's exit takes its CPU time out of the sum).
    Cpu,
    /// An engine `/metrics` gauge ([`METRICS_GAUGES`]), as sampled.
    Gauge(&'static str, &'static str),
    /// An engine `/metrics` counter ([`METRICS_COUNTERS`]), cumulative since the engine
    /// started; none at a scrape that saw a reset.
    Counter(CounterId, &'static str),
}

impl LaneQuantity {
    /// `power:<device>`, `proc`, `proc:cpu`, `metrics:<name>`.
    pub fn lane_id(self) -> String {
        match self {
            LaneQuantity::Power(d) => format!("power:{d}"),
            LaneQuantity::Rss => "proc".into(),
            LaneQuantity::Cpu => "proc:cpu".into(),
            LaneQuantity::Gauge(g, _) => format!("metrics:{g}"),
            LaneQuantity::Counter(c, _) => format!("metrics:{}", c.name()),
        }
    }

    /// The samples route's `source`: `power`, `proc` or `metrics`.
    pub fn source(self) -> &'static str {
        match self {
            LaneQuantity::Power(_) => "power",
            LaneQuantity::Rss | LaneQuantity::Cpu => "proc",
            LaneQuantity::Gauge(..) | LaneQuantity::Counter(..) => "metrics",
        }
    }

    /// The sample field drawn (or derived): `power_mw`, `rss_bytes`, `cpu_pct`, a gauge
    /// or counter name.
    pub fn quantity(self) -> &'static str {
        match self {
            LaneQuantity::Power(_) => "power_mw",
            LaneQuantity::Rss => "rss_bytes",
            LaneQuantity::Cpu => "cpu_pct",
            LaneQuantity::Gauge(g, _) => g,
            LaneQuantity::Counter(c, _) => c.name(),
        }
    }

    /// Unit of the values.
    pub fn unit(self) -> &'static str {
        match self {
            LaneQuantity::Power(_) => "mW",
            LaneQuantity::Rss => "bytes",
            LaneQuantity::Cpu => "% of one core",
            LaneQuantity::Gauge(_, u) | LaneQuantity::Counter(_, u) => u,
        }
    }

    /// How the values behave: `level` (a reading that holds until the next one: drawn as
    /// steps), `counter` (cumulative, steps), `rate` (derived over the interval before
    /// each sample).
    pub fn series(self) -> &'static str {
        match self {
            LaneQuantity::Power(_) | LaneQuantity::Rss | LaneQuantity::Gauge(..) => "level",
            LaneQuantity::Counter(..) => "counter",
            LaneQuantity::Cpu => "rate",
        }
    }
}

/// Gauges drawn from `/metrics`, with their units.
pub const METRICS_GAUGES: [(&str, &str); 3] = [
    ("requests_running", "requests"),
    ("requests_waiting", "requests"),
    ("kv_cache_usage", "fraction"),
];

/// Counters drawn from `/metrics`, with their units (cumulative).
pub const METRICS_COUNTERS: [(CounterId, &str); 1] = [(CounterId::PrefixCacheHits, "tokens")];

/// The lanes of a run's sources, in display order: power per device, `/proc` RSS and CPU,
/// then the `/metrics` gauges and counters.
pub fn lane_quantities(
    power: Option<&PowerTimeline>,
    proc: Option<&ProcTimeline>,
    metrics: Option<&MetricsTimeline>,
) -> Vec<LaneQuantity> {
    let mut out: Vec<LaneQuantity> = power
        .map(|p| {
            p.devices
                .iter()
                .map(|d| LaneQuantity::Power(d.device))
                .collect()
        })
        .unwrap_or_default();
    if proc.is_some() {
        out.extend([LaneQuantity::Rss, LaneQuantity::Cpu]);
    }
    if metrics.is_some() {
        out.extend(METRICS_GAUGES.map(|(g, u)| LaneQuantity::Gauge(g, u)));
        out.extend(METRICS_COUNTERS.map(|(c, u)| LaneQuantity::Counter(c, u)));
    }
    out
}

/// The label of a lane (sanitized: device names bounded): `GPU 0 · NVIDIA H200`,
/// `probe · simulated`, `engine process RSS (/proc)`, `engine /metrics · kv_cache_usage`.
/// `power` names the devices of power lanes.
pub fn lane_label(q: LaneQuantity, power: Option<&PowerTimeline>) -> String {
    match q {
        LaneQuantity::Power(device) => {
            match power.and_then(|p| p.devices.iter().find(|d| d.device == device)) {
                Some(d) => match d.kind {
                    PowerDeviceKind::Nvml => match (&d.index, &d.name) {
                        (Some(i), Some(n)) => format!("GPU {i} · {}", bounded_text(n, 48)),
                        (Some(i), None) => format!("GPU {i}"),
                        _ => format!("GPU device {}", d.device),
                    },
                    PowerDeviceKind::Probe => format!("probe · {}", bounded_text(&d.label, 48)),
                },
                None => format!("GPU device {device}"),
            }
        }
        LaneQuantity::Rss => "engine process RSS (/proc)".into(),
        LaneQuantity::Cpu => "engine process CPU (/proc)".into(),
        LaneQuantity::Gauge(..) | LaneQuantity::Counter(..) => {
            format!("engine /metrics · {}", q.quantity())
        }
    }
}

/// The `(elapsed_ns, value)` points of one lane (pure; only finite values, in sample
/// order). What the dashboard draws and the Perfetto counter track holds.
pub fn lane_points(q: LaneQuantity, s: &LaneSamples) -> Vec<(u64, f64)> {
    let finite = |v: f64| v.is_finite().then_some(v);
    match q {
        LaneQuantity::Power(d) => s
            .power
            .iter()
            .filter(|p| p.device == d)
            .filter_map(|p| p.power_mw.map(|v| (p.elapsed_ns, v as f64)))
            .collect(),
        LaneQuantity::Rss => s
            .proc
            .iter()
            .filter_map(|p| p.rss_bytes.map(|v| (p.elapsed_ns, v as f64)))
            .collect(),
        LaneQuantity::Cpu => {
            let Some(tck) = s.clk_tck.filter(|&t| t > 0) else {
                return Vec::new();
            };
            let cpu = |p: &ProcSample| Some(p.utime_jiffies? + p.stime_jiffies?);
            s.proc
                .windows(2)
                .filter_map(|w| {
                    let (a, b) = (&w[0], &w[1]);
                    let dt = b.elapsed_ns.checked_sub(a.elapsed_ns).filter(|&d| d > 0)?;
                    if a.process_count != b.process_count {
                        return None;
                    }
                    let dj = cpu(b)?.checked_sub(cpu(a)?)?;
                    finite(dj as f64 / tck as f64 / (dt as f64 / 1e9) * 100.0)
                        .map(|v| (b.elapsed_ns, v))
                })
                .collect()
        }
        LaneQuantity::Gauge(g, _) => s
            .metrics
            .iter()
            .filter_map(|m| {
                m.gauges
                    .get(g)
                    .copied()
                    .flatten()
                    .and_then(finite)
                    .map(|v| (m.elapsed_ns, v))
            })
            .collect(),
        LaneQuantity::Counter(c, _) => s
            .metrics
            .iter()
            .filter(|m| !m.resets.get(c))
            .filter_map(|m| m.counters.get(c).map(|v| (m.elapsed_ns, v as f64)))
            .collect(),
    }
}

fn status_parts(s: &SourceStatus) -> (&'static str, Option<String>) {
    match s {
        SourceStatus::Ok => ("ok", None),
        SourceStatus::Unavailable { reason } => ("unavailable", Some(bounded_text(reason, 200))),
        SourceStatus::Ended { reason, .. } => ("ended", Some(bounded_text(reason, 200))),
        SourceStatus::Failed { reason } => ("failed", Some(bounded_text(reason, 200))),
    }
}

/// A source's sampling period (ns) and window (`[started, stopped]`, ns).
#[derive(Clone, Copy)]
struct Sampling {
    period_ns: u64,
    window: (u64, u64),
}

/// What a lane's caller knows of it besides its quantity and samples: wording, and its
/// source's status and dropped count.
struct LaneSpec<'a> {
    host: &'static str,
    label: String,
    time_uncertainty: String,
    status: &'a SourceStatus,
    dropped: u64,
}

/// The time-uncertainty wording of a source read at each sample's timestamp.
fn at_timestamp(period_ns: u64) -> String {
    format!(
        "each reading is taken at its timestamp; about {} ms between readings",
        period_ns / 1_000_000
    )
}

fn lane(q: LaneQuantity, spec: LaneSpec, sampling: Sampling, times: &mut [u64]) -> ResourceLane {
    let Sampling { period_ns, window } = sampling;
    times.sort_unstable();
    let mut gaps = sample_gaps(times, period_ns, window);
    let omitted = gaps.len().saturating_sub(MAX_LANE_GAPS) as u64;
    gaps.truncate(MAX_LANE_GAPS);
    let (status, reason) = status_parts(spec.status);
    ResourceLane {
        lane_id: q.lane_id(),
        source: q.source(),
        host: spec.host,
        device: None,
        label: spec.label,
        quantity: q.quantity().to_string(),
        unit: q.unit(),
        series: q.series(),
        clk_tck: None,
        basis: None,
        time_uncertainty: spec.time_uncertainty,
        period_ns,
        status,
        reason,
        sample_count: times.len() as u64,
        dropped: spec.dropped,
        first_elapsed_ns: times.first().copied(),
        last_elapsed_ns: times.last().copied(),
        gaps,
        gaps_omitted: omitted,
    }
}

/// The telemetry part of the view (pure). `run_domain` is the run's clock-domain id
/// (report, else timeline manifest).
pub fn telemetry_view(
    state: &SamplesState,
    times: &LaneTimes,
    run_domain: Option<&str>,
) -> TelemetryView {
    let s: &SamplesSources = match state {
        SamplesState::Missing => {
            return TelemetryView {
                state: "unavailable",
                reason: Some(
                    "no samples/ directory: telemetry was not recorded for this run".into(),
                ),
                ..Default::default()
            };
        }
        SamplesState::Fault(f) => {
            return TelemetryView {
                state: "fault",
                reason: Some(f.to_string()),
                ..Default::default()
            };
        }
        SamplesState::Ok(s) => s,
    };
    let window = (s.started_elapsed_ns, s.stopped_elapsed_ns);
    let mut lanes = Vec::new();
    for q in lane_quantities(s.power.as_ref(), s.proc.as_ref(), s.metrics.as_ref()) {
        let mut t = times.times(&q.lane_id());
        let (spec, period_ns) = match q {
            LaneQuantity::Power(device) => {
                let p = s.power.as_ref().expect("a power lane has a power source");
                let Some(d) = p.devices.iter().find(|d| d.device == device) else {
                    continue;
                };
                let label = lane_label(q, s.power.as_ref());
                let time_uncertainty = match d.power_basis {
                    Some(PowerBasis::Averaged1s) => {
                        "each reading averages the second before its timestamp".to_string()
                    }
                    _ => at_timestamp(p.period_ns),
                };
                (
                    LaneSpec {
                        host: "runner host",
                        label,
                        time_uncertainty,
                        status: &d.status,
                        dropped: p.dropped,
                    },
                    p.period_ns,
                )
            }
            LaneQuantity::Rss | LaneQuantity::Cpu => {
                let p = s.proc.as_ref().expect("a proc lane has a proc source");
                (
                    LaneSpec {
                        host: "runner host",
                        label: lane_label(q, None),
                        time_uncertainty: at_timestamp(p.period_ns),
                        status: &p.status,
                        dropped: p.dropped,
                    },
                    p.period_ns,
                )
            }
            LaneQuantity::Gauge(..) | LaneQuantity::Counter(..) => {
                let m = s
                    .metrics
                    .as_ref()
                    .expect("a metrics lane has a metrics source");
                (
                    LaneSpec {
                        host: "engine endpoint",
                        label: lane_label(q, None),
                        time_uncertainty: "the engine's snapshot lies between the scrape's \
                                           send and receive times"
                            .into(),
                        status: &m.status,
                        dropped: m.dropped,
                    },
                    m.period_ns,
                )
            }
        };
        let mut l = lane(q, spec, Sampling { period_ns, window }, &mut t);
        if let LaneQuantity::Power(device) = q {
            l.device = Some(device);
            l.basis = s
                .power
                .as_ref()
                .and_then(|p| p.devices.iter().find(|d| d.device == device))
                .and_then(|d| d.power_basis)
                .map(|b| b.name().to_string());
        }
        if q == LaneQuantity::Cpu {
            l.clk_tck = s.proc.as_ref().and_then(|p| p.clk_tck);
        }
        lanes.push(l);
    }
    let aligned = run_domain.map(|d| d == s.clock_domain_id);
    let (state, reason) = if lanes.is_empty() {
        (
            "unavailable",
            Some("no telemetry source was configured for this run".to_string()),
        )
    } else if let Some(f) = &times.fault {
        ("fault", Some(f.to_string()))
    } else {
        ("ok", None)
    };
    TelemetryView {
        state,
        reason,
        clock_domain: Some(clock_domain_label(&s.clock_domain_id)),
        aligned,
        started_elapsed_ns: Some(s.started_elapsed_ns),
        stopped_elapsed_ns: Some(s.stopped_elapsed_ns),
        lanes,
    }
}
