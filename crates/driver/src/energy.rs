//! Glue between the samplers ([`crate::telemetry`]) and the step-attribution join (docs/measurement.md)
//! ([`crate::attribution`]), and every energy figure of a run: which sources a run starts,
//! what actually supplied power ([`power_report`]: from the samples, never from the
//! configuration), the joins (one for the sequential jobs at one trajectory in flight, one
//! per load point at its declared concurrency), device energy over windows, the jobs'
//! energy figures ([`RunEnergy::job_energy`], one definition for sequential and load jobs),
//! and the offline `trajectory` command.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::attribution::{
    self as attr, AttributionInput, Concurrency, CounterName, CounterPoint, CounterSeries,
    EnergyCounterSample, EnergyCounterSeries, PowerSeries, RunWindow, StepKey, StepMarker,
    StepUsage,
};
use crate::clock::RunClock;
use crate::job::{GradedJob, SuiteRuntime};
use crate::model::attribution::ScrapeSpan;
use crate::model::{AttributionGroup, PowerReport, PowerSource};
use crate::sim::SimHandle;
use crate::steps::TrajectoryRecord;
use crate::suite::{EngineProfile as SuiteProfile, GpuMode};
use crate::telemetry::{
    self, EngineProfile, GpuConfig, MetricsConfig, PowerBasis, PowerDeviceKind, ProbeReading,
    ProcConfig, TelemetryConfig, TelemetryHandle, TelemetryRun,
};
pub use inferscope_report::energy::{DeviceSeries, RunEnergy};

fn profile(p: SuiteProfile, simulated: bool) -> EngineProfile {
    match p {
        SuiteProfile::Vllm => EngineProfile::Vllm,
        SuiteProfile::Sglang => EngineProfile::Sglang,
        SuiteProfile::Llamacpp => EngineProfile::Llamacpp,
        SuiteProfile::Sim => EngineProfile::Sim,
        SuiteProfile::Auto if simulated => EngineProfile::Sim,
        SuiteProfile::Auto => EngineProfile::Auto,
    }
}

/// Starts the run's samplers from the first suite's `[telemetry]` table: `/proc` of
/// `engine_pid`, NVML GPUs (`gpu = "auto"`, real endpoints only), the simulator's power
/// model (labelled `simulated`), and the endpoint's `/metrics`. What actually supplied
/// power is decided afterwards from the samples ([`power_report`]).
pub fn start_telemetry(
    suites: &[SuiteRuntime],
    sim: Option<&SimHandle>,
    clock: &RunClock,
) -> Option<TelemetryHandle> {
    let first = suites.iter().find(|s| s.setup_error.is_none())?;
    let t = &first.resolved.suite.telemetry;
    let mut cfg = TelemetryConfig {
        period: Duration::from_millis(t.sample_period_ms.max(1)),
        ..TelemetryConfig::default()
    };
    if let Some(pid) = t.engine_pid {
        cfg.proc = Some(ProcConfig {
            pid,
            include_descendants: t.include_descendants,
        });
    }
    if first.simulated {
        if let Some(s) = sim {
            let state = s.state();
            cfg.probes.push(telemetry::probe_fn(
                "simulated",
                PowerBasis::Simulated,
                move || ProbeReading {
                    power_mw: Some(state.power_mw()),
                    energy_mj: Some(state.energy_mj()),
                },
            ));
        }
    } else if t.gpu == GpuMode::Auto {
        cfg.gpu = Some(GpuConfig {
            selection: telemetry::GpuSelection::from_env(t.gpu_devices.clone()),
        });
    }
    if let Some(p) = &t.prometheus {
        cfg.prometheus = Some(telemetry::PrometheusConfig {
            url: p.url.clone(),
            selector: p.selector.clone(),
            profile: profile(first.resolved.suite.engine, first.simulated),
            served_model: Some(first.model.clone()),
            step: Duration::from_millis(t.metrics_period_ms.max(1)),
            wait: Duration::from_secs_f64(p.wait_s),
            timeout: Duration::from_secs(10),
        });
    }
    if let Some(url) = first.resolved.metrics_url(&first.base_url) {
        let mut m = MetricsConfig::new(
            url,
            profile(first.resolved.suite.engine, first.simulated),
            Some(first.model.clone()),
        );
        m.period = Duration::from_millis(t.metrics_period_ms.max(1));
        cfg.metrics = Some(m);
    }
    Some(telemetry::start(cfg, clock))
}

/// What supplied power readings for the run, from the samples (never from the
/// configuration): `simulated` when the simulator's model was read, `nvml` when an
/// attributable NVML device gave power readings, else no source with the reason (the NVML
/// status, the devices' statuses, GPU sampling off, nothing sampled, every device not
/// attributable). A device that is not attributable (a GPU in MIG mode) is named in
/// `not_attributable` and enters no figure. `gpu_off` says the suite set `gpu = "off"`.
pub fn power_report(t: Option<&TelemetryRun>, gpu_off: bool) -> PowerReport {
    let none = |reason: String, not_attributable: Vec<String>| PowerReport {
        source: None,
        reason: Some(reason),
        devices: 0,
        not_attributable,
    };
    let Some(t) = t else {
        return none("nothing was sampled (no telemetry ran)".into(), Vec::new());
    };
    let Some(p) = &t.power else {
        return none(
            if gpu_off {
                "GPU sampling is off (`[telemetry] gpu = \"off\"`)".into()
            } else {
                "no power source was configured".into()
            },
            Vec::new(),
        );
    };
    let not_attributable = not_attributable_devices(t);
    let read: Vec<&crate::telemetry::PowerDevice> = p
        .devices
        .iter()
        .filter(|d| d.not_attributable.is_none())
        .filter(|d| p.device_samples(d.device).any(|s| s.power_mw.is_some()))
        .collect();
    let bases = read.iter().map(|d| {
        d.power_basis.unwrap_or(match d.kind {
            PowerDeviceKind::Probe => PowerBasis::Simulated,
            PowerDeviceKind::Nvml => PowerBasis::Instant,
        })
    });
    match PowerSource::of_bases(bases) {
        Some(source) => PowerReport {
            source: Some(source),
            reason: None,
            devices: u32::try_from(read.len()).unwrap_or(u32::MAX),
            not_attributable,
        },
        None if !not_attributable.is_empty() => none(
            format!(
                "no attributable power device ({})",
                not_attributable.join("; ")
            ),
            not_attributable,
        ),
        None => {
            let mut reasons: Vec<String> = p
                .gpu_status
                .iter()
                .chain(p.devices.iter().map(|d| &d.status))
                .filter_map(|s| s.reason().map(str::to_string))
                .collect();
            reasons.dedup();
            none(
                if reasons.is_empty() {
                    "no device gave a power reading".into()
                } else {
                    reasons.join("; ")
                },
                Vec::new(),
            )
        }
    }
}

/// `label: not attributable: reason` of every sampled power device that is not
/// attributable (a GPU in MIG mode).
pub fn not_attributable_devices(t: &TelemetryRun) -> Vec<String> {
    t.power
        .iter()
        .flat_map(|p| &p.devices)
        .filter_map(|d| {
            d.not_attributable
                .as_ref()
                .map(|r| format!("{}: not attributable: {r}", d.label))
        })
        .collect()
}

/// Converts sampled timelines into the step-attribution join (docs/measurement.md)'s input (one trajectory in flight:
/// the runner executes trajectories sequentially).
pub fn attribution_input(t: &TelemetryRun, max_in_flight: u32) -> AttributionInput {
    let mut power = Vec::new();
    let mut energy_counters = Vec::new();
    if let Some(p) = &t.power {
        // A device that is not attributable (a GPU in MIG mode) keeps its lane in the
        // samples but never enters the join: its steps get no energy figure.
        for d in p.devices.iter().filter(|d| d.not_attributable.is_none()) {
            let basis = match d.power_basis {
                Some(PowerBasis::Instant) => attr::PowerBasis::Instant,
                Some(PowerBasis::Averaged1s) => attr::PowerBasis::Averaged1s,
                Some(PowerBasis::Simulated) => attr::PowerBasis::Simulated,
                None => continue,
            };
            let samples: Vec<attr::PowerSample> = p
                .device_samples(d.device)
                .filter_map(|s| {
                    s.power_mw.map(|mw| attr::PowerSample {
                        elapsed_ns: s.elapsed_ns,
                        power_mw: mw,
                    })
                })
                .collect();
            if !samples.is_empty() {
                power.push(PowerSeries {
                    device: d.label.clone(),
                    basis,
                    samples,
                });
            }
            let counter: Vec<EnergyCounterSample> = p
                .device_samples(d.device)
                .filter_map(|s| {
                    s.energy_mj.map(|e| EnergyCounterSample {
                        elapsed_ns: s.elapsed_ns,
                        energy_mj: e,
                    })
                })
                .collect();
            if !counter.is_empty() {
                energy_counters.push(EnergyCounterSeries {
                    device: d.label.clone(),
                    samples: counter,
                });
            }
        }
    }
    let mut counters = Vec::new();
    if let Some(m) = t.counter_timeline() {
        for name in [
            CounterName::PromptTokens,
            CounterName::GenerationTokens,
            CounterName::PrefixCacheQueries,
            CounterName::PrefixCacheHits,
        ] {
            let samples: Vec<CounterPoint> = m
                .samples
                .iter()
                .filter_map(|s| {
                    let (v, r) = match name {
                        CounterName::PromptTokens => {
                            (s.counters.prompt_tokens, s.resets.prompt_tokens)
                        }
                        CounterName::GenerationTokens => {
                            (s.counters.generation_tokens, s.resets.generation_tokens)
                        }
                        CounterName::PrefixCacheQueries => (
                            s.counters.prefix_cache_queries,
                            s.resets.prefix_cache_queries,
                        ),
                        CounterName::PrefixCacheHits => {
                            (s.counters.prefix_cache_hits, s.resets.prefix_cache_hits)
                        }
                    };
                    v.map(|value| CounterPoint {
                        elapsed_ns: s.elapsed_ns,
                        value,
                        reset: r,
                    })
                })
                .collect();
            if !samples.is_empty() {
                counters.push(CounterSeries { name, samples });
            }
        }
    }
    AttributionInput {
        reference_instant_unix_ns: Some(t.reference_instant_unix_ns),
        run_window: RunWindow {
            start_elapsed_ns: t.started_elapsed_ns,
            end_elapsed_ns: t.stopped_elapsed_ns,
        },
        power,
        energy_counters,
        counters,
        concurrency: Concurrency {
            max_trajectories_in_flight: max_in_flight,
        },
    }
}

/// The markers (docs/artifacts.md) of `trajectories`' steps (unix ns = `anchor` + `elapsed_ns`) and
/// each LLM step's exact usage from its own response, keyed for [`attr::attribute_run`].
pub fn markers_and_usage<'a>(
    trajectories: impl IntoIterator<Item = &'a TrajectoryRecord>,
    anchor: u64,
) -> (Vec<StepMarker>, BTreeMap<StepKey, StepUsage>) {
    let mut markers = Vec::new();
    let mut usage = BTreeMap::new();
    for tr in trajectories {
        for s in &tr.steps {
            markers.push(StepMarker::at(
                &tr.id,
                s.step_id,
                s.kind,
                s.start_unix_ns(anchor),
                s.end_unix_ns(anchor),
                &s.name,
            ));
            if let Some(r) = &s.request {
                usage.insert(
                    StepKey {
                        trajectory: Some(tr.id.clone()),
                        step_id: s.step_id,
                    },
                    StepUsage {
                        prompt_tokens: r.prompt_tokens,
                        cached_tokens: r.cached_tokens,
                        completion_tokens: r.completion_tokens,
                    },
                );
            }
        }
    }
    (markers, usage)
}

/// The step-attribution join (docs/measurement.md) of `trajectories` at `declared` trajectories in flight.
/// `observed` is what the caller counted in flight itself (a load point's executor; 0 for
/// none): a load point that kept only some of its units still states the overlap of all.
fn join(
    t: &TelemetryRun,
    trajectories: &[&TrajectoryRecord],
    declared: u32,
    observed: u32,
) -> Option<attr::RunAttribution> {
    let (markers, usage) =
        markers_and_usage(trajectories.iter().copied(), t.reference_instant_unix_ns);
    if markers.is_empty() {
        return None;
    }
    let input = attribution_input(t, declared);
    Some(attr::attribute_run_observed(
        &input,
        Some(&markers),
        &usage,
        observed,
    ))
}

/// Joins every trajectory of the run: the sequential jobs' together at one trajectory
/// in flight (the runner runs them one at a time), each load point's on its own at the
/// point's declared concurrency (the join takes the larger of that and the overlap it
/// observes; above one every step is `apportioned`, also on the simulator). Without
/// telemetry nothing is joined.
pub fn attribute_run_energy(
    graded: &[GradedJob],
    telemetry: Option<&TelemetryRun>,
    power: PowerReport,
) -> RunEnergy {
    let mut out = RunEnergy::new(power);
    let Some(t) = telemetry else { return out };
    out.scrapes = t
        .counter_timeline()
        .map(|m| {
            m.samples
                .iter()
                .map(|s| ScrapeSpan {
                    sent_ns: s.request_sent_ns,
                    answered_ns: s.elapsed_ns,
                })
                .collect()
        })
        .unwrap_or_default();
    out.first_tokens = graded
        .iter()
        .flat_map(|g| &g.executed.trajectories)
        .flat_map(|t| &t.steps)
        .filter_map(|s| s.request.as_ref()?.ttft_ns)
        .collect();
    out.first_tokens.sort_unstable();
    out.devices = t
        .power
        .as_ref()
        .map(|p| {
            // A device that is not attributable enters no window either.
            p.devices
                .iter()
                .filter(|d| d.not_attributable.is_none())
                .map(|d| DeviceSeries {
                    label: d.label.clone(),
                    power: p
                        .device_samples(d.device)
                        .filter_map(|s| {
                            Some(attr::PowerSample {
                                elapsed_ns: s.elapsed_ns,
                                power_mw: s.power_mw?,
                            })
                        })
                        .collect(),
                    counter: p
                        .device_samples(d.device)
                        .filter_map(|s| {
                            Some(EnergyCounterSample {
                                elapsed_ns: s.elapsed_ns,
                                energy_mj: s.energy_mj?,
                            })
                        })
                        .collect(),
                })
                .filter(|d| !d.power.is_empty() || !d.counter.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let seq: Vec<&TrajectoryRecord> = graded
        .iter()
        .filter(|g| g.executed.load.is_none())
        .flat_map(|g| g.executed.trajectories.iter())
        .collect();
    let mut joins: Vec<(String, attr::RunAttribution)> = Vec::new();
    if let Some(r) = join(t, &seq, 1, 0) {
        joins.push(("sequential jobs".to_string(), r));
    }
    for g in graded {
        let Some(l) = &g.executed.load else { continue };
        for p in &l.points {
            let trajs: Vec<&TrajectoryRecord> = g.executed.trajectories[p.trajectories.clone()]
                .iter()
                .collect();
            if let Some(r) = join(t, &trajs, p.declared_concurrency(), p.max_units_in_flight) {
                joins.push((
                    format!("{} · {}", g.executed.job.job.id, p.point.label()),
                    r,
                ));
            }
        }
    }
    for (i, (label, r)) in joins.into_iter().enumerate() {
        // A load point's group names its first trajectory only (the one report.json
        // keeps); the sequential jobs' group names every one.
        let keep_all = i == 0 && label == "sequential jobs";
        let mut ids = Vec::new();
        let mut joined = 0u64;
        for o in r.trajectories {
            if let Some(id) = o.trajectory().cloned() {
                joined += 1;
                if keep_all || ids.is_empty() {
                    ids.push(id.clone());
                }
                out.outcomes.insert(id, o);
            }
        }
        out.groups.push(AttributionGroup {
            group: label,
            declared_max_trajectories_in_flight: r.declared_max_trajectories_in_flight,
            observed_max_trajectories_in_flight: r.observed_max_trajectories_in_flight,
            concurrency: r.concurrency,
            trajectories: ids,
            trajectories_joined: joined,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use super::*;
    use crate::attribution::{
        AttributionInput, Concurrency, PowerBasis, PowerSample, PowerSeries, RunAttribution,
        RunWindow, StepKind, StepMarker, attribute_run,
    };
    use crate::model::TokenCount;
    use crate::model::{Basis, TokenSource};

    const A: u64 = 1_700_000_000_000_000_000;
    const MS: u64 = 1_000_000;

    /// Trajectory `t`'s one LLM step over [s, e] ms after the anchor.
    fn step(t: &str, s: u64, e: u64) -> StepMarker {
        StepMarker {
            step_id: 1,
            kind: StepKind::LlmCall,
            t_start_unix_ns: A + s * MS,
            t_end_unix_ns: A + e * MS,
            trajectory: Some(t.into()),
            name: None,
        }
    }

    /// The join over a flat 100 W series for 1 s (`basis`; none when `None`), declared
    /// one trajectory in flight.
    fn run(markers: &[StepMarker], basis: Option<PowerBasis>) -> RunAttribution {
        let input = AttributionInput {
            reference_instant_unix_ns: Some(A),
            run_window: RunWindow {
                start_elapsed_ns: 0,
                end_elapsed_ns: 1000 * MS,
            },
            power: basis
                .map(|basis| PowerSeries {
                    device: "gpu0".into(),
                    basis,
                    samples: (0..=10)
                        .map(|i| PowerSample {
                            elapsed_ns: i * 100 * MS,
                            power_mw: 100_000,
                        })
                        .collect(),
                })
                .into_iter()
                .collect(),
            energy_counters: vec![],
            counters: vec![],
            concurrency: Concurrency {
                max_trajectories_in_flight: 1,
            },
        };
        attribute_run(&input, Some(markers), &BTreeMap::new())
    }

    /// Each step's energy and basis label by (trajectory, step id).
    fn step_energies(r: &RunAttribution) -> HashMap<(String, u64), StepEnergy> {
        let mut out = HashMap::new();
        for m in r.trajectories.iter().filter_map(|o| o.metrics()) {
            for s in &m.steps {
                out.insert(
                    (m.trajectory.clone().unwrap_or_default(), s.step_id),
                    StepEnergy {
                        energy_mj: s.energy_mj,
                        basis: s.energy_basis.map(|b| b.label().to_string()),
                    },
                );
            }
        }
        out
    }

    struct StepEnergy {
        energy_mj: Option<u64>,
        basis: Option<String>,
    }

    fn label(steps: &HashMap<(String, u64), StepEnergy>, t: &str) -> Option<String> {
        steps[&(t.to_string(), 1)].basis.clone()
    }

    /// One label rule for the runner, the load executor and the offline join (the join's
    /// own `EnergyBasis::of`): apportioned (overlapping trajectories) beats simulated,
    /// which beats measured; no power source is no basis, never `measured`.
    #[test]
    fn step_labels_apportioned_beats_simulated_beats_measured() {
        let seq = [step("a", 100, 300), step("b", 400, 600)];
        let sim = Some(PowerBasis::Simulated);
        let device = Some(PowerBasis::Instant);
        assert_eq!(
            label(&step_energies(&run(&seq, sim)), "a").as_deref(),
            Some("simulated")
        );
        assert_eq!(
            label(&step_energies(&run(&seq, device)), "b").as_deref(),
            Some("measured")
        );
        // 100 W over 200 ms = 20 J = 20,000 mJ.
        assert_eq!(
            step_energies(&run(&seq, device))[&("a".into(), 1)].energy_mj,
            Some(20_000)
        );
        let none = step_energies(&run(&seq, None));
        assert_eq!(label(&none, "a"), None);
        assert_eq!(none[&("a".into(), 1)].energy_mj, None);

        let overlapping = [step("a", 100, 300), step("b", 200, 400)];
        for basis in [sim, device] {
            let steps = step_energies(&run(&overlapping, basis));
            assert_eq!(label(&steps, "a").as_deref(), Some("apportioned"));
            assert_eq!(label(&steps, "b").as_deref(), Some("apportioned"));
        }
    }

    fn power_run(
        devices: Vec<(
            crate::telemetry::PowerDevice,
            Vec<crate::telemetry::PowerSample>,
        )>,
    ) -> TelemetryRun {
        let mut samples = Vec::new();
        let mut devs = Vec::new();
        for (d, s) in devices {
            devs.push(d);
            samples.extend(s);
        }
        TelemetryRun {
            clock_domain_id: "mono:test:1:1".into(),
            reference_instant_unix_ns: A,
            started_elapsed_ns: 0,
            stopped_elapsed_ns: 1000 * MS,
            proc: None,
            power: Some(crate::telemetry::PowerTimeline {
                gpu_status: Some(crate::telemetry::SourceStatus::Ok),
                period_ns: 100 * MS,
                devices: devs,
                sample_count: samples.len() as u64,
                dropped: 0,
                gpu_notes: vec![],
                samples,
            }),
            metrics: None,
            prometheus: None,
        }
    }

    fn device(id: u32, label: &str, kind: PowerDeviceKind) -> crate::telemetry::PowerDevice {
        let mut d =
            crate::telemetry::PowerDevice::plain(id, kind, label.into(), Some(PowerBasis::Instant));
        d.index = Some(id);
        d
    }

    fn flat(id: u32, from_ms: u64, to_ms: u64) -> Vec<crate::telemetry::PowerSample> {
        (from_ms / 100..=to_ms / 100)
            .map(|i| crate::telemetry::PowerSample {
                elapsed_ns: i * 100 * MS,
                device: id,
                power_mw: Some(100_000),
                power_basis: Some(PowerBasis::Instant),
                energy_mj: None,
                energy_epoch: None,
                memory_used_bytes: None,
                utilization_gpu_pct: None,
                utilization_memory_pct: None,
            })
            .collect()
    }

    /// The power source comes from what was sampled. NVML configured but
    /// not loadable (`gpu = "auto"` on a machine without it) is no power source, with the
    /// reason — never `nvml`, never a `measured` basis.
    #[test]
    fn power_source_is_what_was_sampled_not_what_was_configured() {
        let mut t = power_run(vec![]);
        t.power.as_mut().unwrap().gpu_status = Some(crate::telemetry::SourceStatus::Unavailable {
            reason: "NVML library not found (libnvidia-ml.so.1)".into(),
        });
        let p = power_report(Some(&t), false);
        assert_eq!(p.source, None);
        assert_eq!(
            p.reason.as_deref(),
            Some("NVML library not found (libnvidia-ml.so.1)")
        );
        assert_eq!(
            p.describe(),
            "power unavailable (NVML library not found (libnvidia-ml.so.1))"
        );
        let run = attribute_run_energy(&[], Some(&t), p);
        assert_eq!(run.basis(1), Basis::Unavailable);
        let e = run.job_energy(&[(0, 500 * MS)], Some(TokenCount::server(10)), 1, 1);
        assert_eq!(e.tokens_per_joule.value, None);
        assert_eq!(e.tokens_per_joule.basis, Basis::Unavailable);
        assert!(
            e.tokens_per_joule
                .reason
                .as_deref()
                .unwrap()
                .contains("NVML library not found"),
            "{e:?}"
        );
        assert_eq!(e.energy_per_trajectory_j.basis, Basis::Unavailable);

        let gpu = power_run(vec![(
            device(0, "gpu0", PowerDeviceKind::Nvml),
            flat(0, 0, 1000),
        )]);
        let p = power_report(Some(&gpu), false);
        assert_eq!(p.source, Some(PowerSource::Nvml));
        assert_eq!(p.describe(), "power nvml");
        let off = power_report(None, true);
        assert_eq!(off.source, None);
        assert!(
            power_report(
                Some(&TelemetryRun {
                    power: None,
                    ..gpu.clone()
                }),
                true
            )
            .reason
            .unwrap()
            .contains("gpu = \"off\"")
        );
    }

    /// A GPU in MIG mode is named with the reason, enters neither the join nor any window,
    /// and alone is no power source: every energy figure is unavailable for that reason,
    /// never measured. Beside an attributable device it is named and left out of the sum.
    #[test]
    fn not_attributable_devices_are_named_and_enter_no_figure() {
        let mut mig = device(0, "gpu0", PowerDeviceKind::Nvml);
        mig.not_attributable = Some("gpu0 (GPU-x) is in MIG mode: …".into());
        let t = power_run(vec![(mig.clone(), flat(0, 0, 1000))]);
        let named = not_attributable_devices(&t);
        assert_eq!(
            named,
            vec!["gpu0: not attributable: gpu0 (GPU-x) is in MIG mode: …".to_string()]
        );
        // The join leaves the device out entirely (it has power samples).
        assert!(attribution_input(&t, 1).power.is_empty());
        let p = power_report(Some(&t), false);
        assert_eq!(p.source, None);
        assert_eq!(p.not_attributable, named);
        assert_eq!(
            p.reason.as_deref(),
            Some(
                "no attributable power device (gpu0: not attributable: gpu0 (GPU-x) is in MIG mode: …)"
            )
        );
        let run = attribute_run_energy(&[], Some(&t), p);
        let e = run.job_energy(&[(0, 500 * MS)], Some(TokenCount::server(10)), 1, 1);
        assert_eq!(e.energy_per_trajectory_j.value, None);
        assert_eq!(e.energy_per_trajectory_j.basis, Basis::Unavailable);
        assert!(
            e.energy_j.reason.as_deref().unwrap().contains("MIG mode"),
            "{e:?}"
        );

        let mixed = power_run(vec![
            (mig, flat(0, 0, 1000)),
            (device(1, "gpu1", PowerDeviceKind::Nvml), flat(1, 0, 1000)),
        ]);
        let p = power_report(Some(&mixed), false);
        assert_eq!((p.source, p.devices), (Some(PowerSource::Nvml), 1));
        assert_eq!(p.not_attributable, named);
        let run = attribute_run_energy(&[], Some(&mixed), p);
        // 100 W over 500 ms on the one attributable device: 50 J, not 100 J.
        let w = run.window(0, 500 * MS).unwrap();
        assert_eq!(w.energy_mj, 50_000);
    }

    /// One definition of a job's energy figures (device energy over its
    /// windows); a device that cannot cover a window withholds the sum, never a partial one.
    #[test]
    fn job_energy_over_windows_and_partial_devices_withheld() {
        let two = power_run(vec![
            (device(0, "gpu0", PowerDeviceKind::Nvml), flat(0, 0, 1000)),
            (device(1, "gpu1", PowerDeviceKind::Nvml), flat(1, 0, 1000)),
        ]);
        let run = attribute_run_energy(&[], Some(&two), power_report(Some(&two), false));
        let e = run.job_energy(&[(0, 500 * MS)], Some(TokenCount::server(100)), 2, 1);
        // 2 devices × 100 W × 0.5 s = 100 J.
        assert_eq!(e.energy_j.value, Some(100.0));
        assert_eq!(e.energy_j.basis, Basis::Measured);
        assert_eq!(e.tokens_per_joule.value, Some(1.0));
        assert_eq!(e.tokens_per_joule.tokens, Some(TokenSource::Server));
        assert_eq!(
            e.energy_per_trajectory_j.value,
            Some(50.0),
            "the mean trajectory"
        );
        let load = run.job_energy(
            &[(0, 500 * MS)],
            Some(TokenCount {
                tokens: 100,
                source: TokenSource::ClientEstimate,
            }),
            2,
            4,
        );
        assert_eq!(load.energy_per_trajectory_j.basis, Basis::Apportioned);
        assert_eq!(
            load.tokens_per_joule.basis,
            Basis::Measured,
            "a whole-window ratio"
        );
        assert_eq!(
            load.tokens_per_joule.tokens,
            Some(TokenSource::ClientEstimate)
        );

        // gpu1 stops sampling at 300 ms: a window to 500 ms has no sum.
        let partial = power_run(vec![
            (device(0, "gpu0", PowerDeviceKind::Nvml), flat(0, 0, 1000)),
            (device(1, "gpu1", PowerDeviceKind::Nvml), flat(1, 0, 300)),
        ]);
        let run = attribute_run_energy(&[], Some(&partial), power_report(Some(&partial), false));
        let e = run.job_energy(&[(400 * MS, 800 * MS)], Some(TokenCount::server(10)), 1, 1);
        assert_eq!(e.energy_j.value, None);
        assert!(
            e.energy_j.reason.as_deref().unwrap().contains("gpu1"),
            "{e:?}"
        );
        assert_eq!(e.tokens_per_joule.value, None);
    }
}
