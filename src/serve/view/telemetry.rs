//! The resource lanes: one per host, source, device and quantity, never summed (docs/artifacts.md
//! R011), with their intervals without samples (pure).

use crate::telemetry::{PowerBasis, PowerDeviceKind, SourceStatus};

use super::super::runs::{ArtifactFault, SamplesSources, SamplesState};
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

/// Sample times of the lanes, as read from the sample files.
#[derive(Clone, Debug, Default)]
pub struct LaneTimes {
    /// `(device, elapsed_ns)` of every power sample with a power reading.
    pub power: Vec<(u32, u64)>,
    /// `elapsed_ns` of every proc sample.
    pub proc: Vec<u64>,
    /// `(gauge, elapsed_ns)` of every metrics sample where the gauge is present.
    pub metrics: Vec<(String, u64)>,
    /// A sample file that could not be read (its fault).
    pub fault: Option<ArtifactFault>,
}

fn status_parts(s: &SourceStatus) -> (&'static str, Option<String>) {
    match s {
        SourceStatus::Ok => ("ok", None),
        SourceStatus::Unavailable { reason } => ("unavailable", Some(bounded_text(reason, 200))),
        SourceStatus::Ended { reason, .. } => ("ended", Some(bounded_text(reason, 200))),
        SourceStatus::Failed { reason } => ("failed", Some(bounded_text(reason, 200))),
    }
}

/// Gauges drawn from `/metrics`, with their units.
pub const METRICS_GAUGES: [(&str, &str); 2] = [
    ("requests_running", "requests"),
    ("kv_cache_usage", "fraction"),
];

/// A source's sampling period (ns) and window (`[started, stopped]`, ns).
#[derive(Clone, Copy)]
struct Sampling {
    period_ns: u64,
    window: (u64, u64),
}

/// What a lane's caller knows of it besides its samples: identity, wording, and its
/// source's status and dropped count.
struct LaneSpec<'a> {
    lane_id: String,
    source: &'static str,
    host: &'static str,
    label: String,
    quantity: &'a str,
    unit: &'static str,
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

fn lane(spec: LaneSpec, sampling: Sampling, times: &mut [u64]) -> ResourceLane {
    let Sampling { period_ns, window } = sampling;
    times.sort_unstable();
    let mut gaps = sample_gaps(times, period_ns, window);
    let omitted = gaps.len().saturating_sub(MAX_LANE_GAPS) as u64;
    gaps.truncate(MAX_LANE_GAPS);
    let (status, reason) = status_parts(spec.status);
    ResourceLane {
        lane_id: spec.lane_id,
        source: spec.source,
        host: spec.host,
        device: None,
        label: spec.label,
        quantity: spec.quantity.to_string(),
        unit: spec.unit,
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
    if let Some(p) = &s.power {
        for d in &p.devices {
            let mut t: Vec<u64> = times
                .power
                .iter()
                .filter(|(dev, _)| *dev == d.device)
                .map(|(_, t)| *t)
                .collect();
            let label = match d.kind {
                PowerDeviceKind::Nvml => match (&d.index, &d.name) {
                    (Some(i), Some(n)) => format!("GPU {i} · {}", bounded_text(n, 48)),
                    (Some(i), None) => format!("GPU {i}"),
                    _ => format!("GPU device {}", d.device),
                },
                PowerDeviceKind::Probe => format!("probe · {}", bounded_text(&d.label, 48)),
            };
            let time_uncertainty = match d.power_basis {
                Some(PowerBasis::Averaged1s) => {
                    "each reading averages the second before its timestamp".to_string()
                }
                _ => at_timestamp(p.period_ns),
            };
            let mut l = lane(
                LaneSpec {
                    lane_id: format!("power:{}", d.device),
                    source: "power",
                    host: "runner host",
                    label,
                    quantity: "power_mw",
                    unit: "mW",
                    time_uncertainty,
                    status: &d.status,
                    dropped: p.dropped,
                },
                Sampling {
                    period_ns: p.period_ns,
                    window,
                },
                &mut t,
            );
            l.device = Some(d.device);
            l.basis = d.power_basis.map(|b| b.name().to_string());
            lanes.push(l);
        }
    }
    if let Some(p) = &s.proc {
        let mut t = times.proc.clone();
        lanes.push(lane(
            LaneSpec {
                lane_id: "proc".into(),
                source: "proc",
                host: "runner host",
                label: "engine process (/proc)".into(),
                quantity: "rss_bytes",
                unit: "bytes",
                time_uncertainty: at_timestamp(p.period_ns),
                status: &p.status,
                dropped: p.dropped,
            },
            Sampling {
                period_ns: p.period_ns,
                window,
            },
            &mut t,
        ));
    }
    if let Some(m) = &s.metrics {
        for (gauge, unit) in METRICS_GAUGES {
            let mut t: Vec<u64> = times
                .metrics
                .iter()
                .filter(|(g, _)| g == gauge)
                .map(|(_, t)| *t)
                .collect();
            lanes.push(lane(
                LaneSpec {
                    lane_id: format!("metrics:{gauge}"),
                    source: "metrics",
                    host: "engine endpoint",
                    label: format!("engine /metrics · {gauge}"),
                    quantity: gauge,
                    unit,
                    time_uncertainty: "the engine's snapshot lies between the scrape's send \
                                       and receive times"
                        .into(),
                    status: &m.status,
                    dropped: m.dropped,
                },
                Sampling {
                    period_ns: m.period_ns,
                    window,
                },
                &mut t,
            ));
        }
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
        clock_domain: Some(clock_domain_fingerprint(&s.clock_domain_id)),
        aligned,
        started_elapsed_ns: Some(s.started_elapsed_ns),
        stopped_elapsed_ns: Some(s.stopped_elapsed_ns),
        lanes,
    }
}
