//! The run's telemetry as summarised in `report.json` → `telemetry` (pure): per source its
//! status, period and counts; per power device its whole-run energy; for the engine's
//! `/metrics` the whole-run increase of each canonical counter (reset-aware, C15) and each
//! gauge per engine with its max and mean (data-parallel engines are never summed); the
//! same for the Prometheus source, with how it was read.

use std::collections::BTreeMap;

use inferscope_model::telemetry::{
    EngineGauge, GaugeSummary, MetricsSummary, PowerDeviceSummary, PowerSummary, ProcSummary,
    TelemetrySummary,
};

use super::{CounterId, MetricsSample, MetricsTimeline, TelemetryRun};

/// The summary of everything sampled during one run.
pub fn summarize(t: &TelemetryRun) -> TelemetrySummary {
    TelemetrySummary {
        started_elapsed_ns: t.started_elapsed_ns,
        stopped_elapsed_ns: t.stopped_elapsed_ns,
        proc: t.proc.as_ref().map(|p| ProcSummary {
            status: p.status.clone(),
            pid: p.pid,
            include_descendants: p.include_descendants,
            period_ns: p.period_ns,
            sample_count: p.sample_count,
            dropped: p.dropped,
            read_errors: p.read_errors,
        }),
        power: t.power.as_ref().map(|p| PowerSummary {
            gpu_status: p.gpu_status.clone(),
            period_ns: p.period_ns,
            sample_count: p.sample_count,
            dropped: p.dropped,
            devices: p
                .devices
                .iter()
                .map(|d| {
                    let e = d.energy.as_ref();
                    PowerDeviceSummary {
                        device: d.device,
                        kind: d.kind,
                        label: d.label.clone(),
                        power_basis: d.power_basis,
                        status: d.status.clone(),
                        energy_mj: e.and_then(|e| e.energy_mj),
                        energy_method: e.and_then(|e| e.energy_method),
                        energy_reason: e.and_then(|e| e.reason.clone()),
                        power_coverage: e.and_then(|e| e.power_coverage),
                        not_attributable: d.not_attributable.clone(),
                    }
                })
                .collect(),
        }),
        metrics: t.metrics.as_ref().map(metrics_summary),
        prometheus: t.prometheus.as_ref().map(metrics_summary),
    }
}

/// The `/metrics` source's summary: counters' whole-run increases and gauges per engine.
pub fn metrics_summary(m: &MetricsTimeline) -> MetricsSummary {
    MetricsSummary {
        status: m.status.clone(),
        profile_requested: m.profile_requested.name().to_string(),
        profile: m.profile.map(|p| p.name().to_string()),
        period_ns: m.period_ns,
        scrapes_ok: m.scrapes_ok,
        scrapes_failed: m.scrapes_failed,
        scrapes_resent: m.scrapes_resent,
        parse_errors: m.parse_errors,
        mapping: m.mapping.clone(),
        notes: m.notes.clone(),
        block_size: m.block_size,
        counters: CounterId::ALL
            .iter()
            .map(|&id| (id.name().to_string(), m.increase(id)))
            .collect(),
        gauges: gauge_summaries(&m.samples),
        prometheus: m.prometheus.clone(),
    }
}

/// Each gauge's samples per engine (key: the series' labels other than the model's, e.g.
/// `engine="0"`; `""` for one unlabelled series), summarised: per engine max, mean and count; over engines the largest value
/// and the mean of the engines' means. A gauge never read is left out.
pub fn gauge_summaries(samples: &[MetricsSample]) -> BTreeMap<String, GaugeSummary> {
    let mut per: BTreeMap<String, BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for s in samples {
        for (g, v) in &s.gauges {
            let engines = per.entry(g.clone()).or_default();
            match s.gauge_engines.get(g) {
                Some(by_engine) => {
                    for (e, v) in by_engine {
                        let vals = engines.entry(e.clone()).or_default();
                        vals.extend(v.filter(|x| x.is_finite()));
                    }
                }
                None => {
                    let vals = engines.entry(String::new()).or_default();
                    vals.extend(v.filter(|x| x.is_finite()));
                }
            }
        }
    }
    per.into_iter()
        .map(|(g, engines)| {
            let engines: BTreeMap<String, EngineGauge> = engines
                .into_iter()
                .map(|(e, vals)| {
                    let n = vals.len();
                    let gauge = EngineGauge {
                        samples: n as u64,
                        max: vals.iter().copied().reduce(f64::max),
                        mean: (n > 0).then(|| vals.iter().sum::<f64>() / n as f64),
                    };
                    (e, gauge)
                })
                .collect();
            let means: Vec<f64> = engines.values().filter_map(|e| e.mean).collect();
            let summary = GaugeSummary {
                max: engines.values().filter_map(|e| e.max).reduce(f64::max),
                mean: (!means.is_empty()).then(|| means.iter().sum::<f64>() / means.len() as f64),
                engines,
            };
            (g, summary)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CounterValues, ResetFlags};

    fn sample(gauges: &[(&str, Option<f64>)], engines: &[(&str, &[(&str, f64)])]) -> MetricsSample {
        MetricsSample {
            elapsed_ns: 0,
            request_sent_ns: 0,
            counters: CounterValues::default(),
            resets: ResetFlags::default(),
            gauges: gauges.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            gauge_engines: engines
                .iter()
                .map(|(g, es)| {
                    (
                        g.to_string(),
                        es.iter().map(|(e, v)| (e.to_string(), Some(*v))).collect(),
                    )
                })
                .collect(),
            non_finite: vec![],
        }
    }

    /// A gauge over two data-parallel engines is kept per engine with its
    /// max and mean — never summed (0.25 + 0.5 used to read 0.75).
    #[test]
    fn gauges_of_several_engines_are_kept_per_engine_never_summed() {
        let kv = "kv_cache_usage";
        let samples = [
            sample(
                &[(kv, None)],
                &[(kv, &[("engine=\"0\"", 0.25), ("engine=\"1\"", 0.5)])],
            ),
            sample(
                &[(kv, None)],
                &[(kv, &[("engine=\"0\"", 0.75), ("engine=\"1\"", 0.5)])],
            ),
            sample(&[("requests_running", Some(2.0))], &[]),
            sample(&[("requests_running", Some(4.0))], &[]),
        ];
        let g = gauge_summaries(&samples);
        let kv = &g[kv];
        assert_eq!(kv.engines.len(), 2);
        assert_eq!(kv.engines["engine=\"0\""].max, Some(0.75));
        assert_eq!(kv.engines["engine=\"0\""].mean, Some(0.5));
        assert_eq!(kv.engines["engine=\"1\""].mean, Some(0.5));
        assert_eq!(kv.max, Some(0.75), "the largest engine reading, not a sum");
        assert_eq!(kv.mean, Some(0.5));
        let run = &g["requests_running"];
        assert_eq!(run.engines[""].samples, 2);
        assert_eq!(run.max, Some(4.0));
        assert_eq!(run.mean, Some(3.0));
    }
}
