//! Glue between the samplers ([`crate::telemetry`]) and the ADR-013 join
//! ([`crate::attribution`]): which sources a run starts, how sampled timelines become
//! attribution input, the per-step figures in `report.json`, the offline `trajectory`
//! command, and the Perfetto export with resource counter tracks.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::time::Duration;

use crate::attribution::{
    self as attr, AttributionInput, Concurrency, CounterName, CounterPoint, CounterSeries,
    EnergyCounterSample, EnergyCounterSeries, PowerSeries, RunAttribution, RunWindow, StepKey,
    StepMarker, StepUsage, TrajectoryOutcome,
};
use crate::clock::RunClock;
use crate::gate::{Figure, basis};
use crate::runner::execute::{Session, SuiteRuntime};
use crate::runner::report::RunReport;
use crate::runner::steps::{StepKind, TrajectoryRecord};
use crate::sim::SimHandle;
use crate::suite::{EngineProfile as SuiteProfile, GpuMode};
use crate::telemetry::{
    self, EngineProfile, GpuConfig, MetricsConfig, PowerBasis, ProbeReading, ProcConfig,
    TelemetryConfig, TelemetryHandle, TelemetryRun,
};
use crate::timeline::{CounterTrack, TraceMeta};

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
/// model (labelled `simulated`), and the endpoint's `/metrics`. Returns the handle and
/// the power label.
pub fn start_telemetry(
    suites: &[SuiteRuntime],
    sim: Option<&SimHandle>,
    clock: &RunClock,
) -> (Option<TelemetryHandle>, Option<String>) {
    let Some(first) = suites.first() else {
        return (None, None);
    };
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
    let mut label = None;
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
            label = Some("simulated".to_string());
        }
    } else if t.gpu == GpuMode::Auto {
        cfg.gpu = Some(GpuConfig {
            selection: telemetry::GpuSelection::from_env(t.gpu_devices.clone()),
        });
        label = Some("nvml".to_string());
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
    (Some(telemetry::start(cfg, clock)), label)
}

/// Converts sampled timelines into the ADR-013 join's input (one trajectory in flight:
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

/// Every attributed step's energy and label, keyed by (trajectory id, step id); steps of
/// trajectories without an id are left out. The label is the join's own
/// ([`attr::EnergyBasis::of`], the one rule for the sequential runner, the load executor and
/// the offline join): `apportioned` when more than one trajectory was declared or observed in
/// flight (ADR-013 "The wall": never a measurement, whatever the power source), else
/// `simulated` on the built-in simulator's power model, else `measured`; `None` without a
/// power source.
pub(crate) fn step_energies(run: &RunAttribution) -> HashMap<(String, u64), StepEnergy> {
    let mut steps = HashMap::new();
    for m in run.trajectories.iter().filter_map(|o| o.metrics()) {
        let Some(id) = &m.trajectory else { continue };
        for s in &m.steps {
            steps.insert(
                (id.clone(), s.step_id),
                StepEnergy {
                    energy_mj: s.energy_mj,
                    basis: s.energy_basis.map(|b| b.label().to_string()),
                },
            );
        }
    }
    steps
}

/// The power source a session's power label names (`simulated`: the built-in simulator's
/// model; any other label, e.g. `nvml`: a device); `None` without a label.
pub(crate) fn energy_source(power_label: Option<&str>) -> Option<attr::EnergySource> {
    power_label.map(|l| {
        if l == basis::SIMULATED {
            attr::EnergySource::Simulator
        } else {
            attr::EnergySource::Device
        }
    })
}

/// One step's energy as shown in `report.json`.
#[derive(Debug, Clone)]
pub struct StepEnergy {
    /// mJ, `None` when unattributed.
    pub energy_mj: Option<u64>,
    /// `measured`, `apportioned` or `simulated`; `None` without a power source.
    pub basis: Option<String>,
}

/// Per-job energy figures for the gates.
#[derive(Debug, Clone)]
pub struct JobEnergy {
    /// Trajectory tokens per joule (generated tokens from usage / trajectory energy).
    pub tokens_per_joule: Figure,
    /// Mean trajectory energy, J.
    pub energy_per_trajectory_j: Figure,
    /// Notes (basis, withheld reasons).
    pub notes: Vec<String>,
}

/// The run's attribution and lookups into it.
pub struct Attribution {
    run: Option<RunAttribution>,
    steps: HashMap<(String, u64), StepEnergy>,
    by_trajectory: HashMap<String, usize>,
    power_label: Option<String>,
    /// `label: reason` of every power device left out of the join (MIG mode).
    not_attributable: Vec<String>,
}

/// `label: reason` of every sampled power device that is not attributable.
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

impl Attribution {
    /// Energy of one step.
    pub fn step(&self, trajectory: &str, step_id: u64) -> Option<&StepEnergy> {
        self.steps.get(&(trajectory.to_string(), step_id))
    }

    fn outcome(&self, trajectory: &str) -> Option<&TrajectoryOutcome> {
        let i = *self.by_trajectory.get(trajectory)?;
        self.run.as_ref()?.trajectories.get(i)
    }

    /// Energy figures of a job's trajectories (`suite::job#k`).
    pub fn job_figures(&self, job_id: &str) -> JobEnergy {
        // The join's basis (the one rule, [`attr::EnergyBasis::of`]); without one (no
        // power series), the basis the figure would have had.
        let basis = self
            .run
            .as_ref()
            .and_then(|r| r.concurrency.energy_basis)
            .or_else(|| attr::EnergyBasis::of(1, energy_source(self.power_label.as_deref())))
            .map_or(basis::MEASURED, attr::EnergyBasis::label)
            .to_string();
        let prefix = format!("{job_id}#");
        let mut tokens = 0u64;
        let mut mj = 0u64;
        let mut n = 0u64;
        let mut notes = self.not_attributable.clone();
        let mut any = false;
        let mut keys: Vec<&String> = self
            .by_trajectory
            .keys()
            .filter(|k| k.starts_with(&prefix))
            .collect();
        keys.sort();
        for k in keys {
            any = true;
            match self.outcome(k) {
                Some(TrajectoryOutcome::Attributed(m)) => {
                    if let Some(e) = m.total_energy_mj {
                        mj += e;
                        n += 1;
                        tokens += m.total_usage_completion_tokens.unwrap_or(0);
                    }
                }
                Some(TrajectoryOutcome::Withheld(w)) => {
                    notes.push(format!("{k}: attribution withheld ({:?})", w.reasons));
                }
                None => {}
            }
        }
        let unavailable = |why: &str| Figure::unavailable(basis.clone(), why.to_string());
        if !any || n == 0 || mj == 0 {
            let why = if self.power_label.is_none() {
                "no power source (no GPU, not simulated)"
            } else if !self.not_attributable.is_empty() {
                "no attributable power device (see the notes)"
            } else {
                "no energy attributed"
            };
            return JobEnergy {
                tokens_per_joule: unavailable(why),
                energy_per_trajectory_j: unavailable(why),
                notes,
            };
        }
        if basis == "simulated" {
            notes.push("energy is simulated (built-in simulator power model), not measured".into());
        }
        JobEnergy {
            tokens_per_joule: Figure::available(
                tokens as f64 / (mj as f64 / 1000.0),
                basis.clone(),
            ),
            energy_per_trajectory_j: Figure::available(mj as f64 / 1000.0 / n as f64, basis),
            notes,
        }
    }

    /// The whole attribution as JSON for `report.json`'s `trajectory` field.
    pub fn run_value(&self) -> Option<serde_json::Value> {
        let mut v = serde_json::to_value(self.run.as_ref()?).ok()?;
        if let (Some(obj), Some(l)) = (v.as_object_mut(), &self.power_label) {
            obj.insert("power_source".into(), serde_json::Value::String(l.clone()));
        }
        Some(v)
    }
}

/// The ADR-013 markers of `trajectories`' steps (unix ns = `anchor` + `elapsed_ns`) and
/// each LLM step's exact usage from its own response, keyed for [`attr::attribute_run`].
pub fn markers_and_usage<'a>(
    trajectories: impl IntoIterator<Item = &'a TrajectoryRecord>,
    anchor: u64,
) -> (Vec<StepMarker>, BTreeMap<StepKey, StepUsage>) {
    let mut markers = Vec::new();
    let mut usage = BTreeMap::new();
    for tr in trajectories {
        for s in &tr.steps {
            markers.push(StepMarker {
                step_id: s.step_id,
                kind: match s.kind {
                    StepKind::LlmCall => attr::StepKind::LlmCall,
                    StepKind::Tool => attr::StepKind::Tool,
                },
                t_start_unix_ns: s.start_unix_ns(anchor),
                t_end_unix_ns: anchor + s.end_ns,
                trajectory: Some(tr.id.clone()),
                name: Some(s.name.clone()),
            });
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

/// Runs the ADR-013 join over `trajectories` (in the order given; every trajectory of the
/// run, or of its sequential jobs) at one trajectory in flight. Without telemetry the
/// attribution is empty.
pub fn attribute<'a>(
    trajectories: impl IntoIterator<Item = &'a TrajectoryRecord>,
    telemetry: Option<&TelemetryRun>,
    session: &Session,
) -> Attribution {
    let empty = Attribution {
        run: None,
        steps: HashMap::new(),
        by_trajectory: HashMap::new(),
        power_label: session.power_label.clone(),
        not_attributable: Vec::new(),
    };
    let Some(t) = telemetry else { return empty };
    let input = attribution_input(t, 1);
    let anchor = t.reference_instant_unix_ns;
    let (markers, usage) = markers_and_usage(trajectories, anchor);
    let run = attr::attribute_run(&input, Some(&markers), &usage);
    let steps = step_energies(&run);
    let by_trajectory = run
        .trajectories
        .iter()
        .enumerate()
        .filter_map(|(i, o)| {
            let id = match o {
                TrajectoryOutcome::Withheld(w) => w.trajectory.as_ref(),
                _ => o.metrics().and_then(|m| m.trajectory.as_ref()),
            };
            id.map(|id| (id.clone(), i))
        })
        .collect();
    Attribution {
        run: Some(run),
        steps,
        by_trajectory,
        power_label: session.power_label.clone(),
        not_attributable: not_attributable_devices(t),
    }
}

/// `inferscope-bench trajectory --samples DIR --steps FILE`: the offline ADR-013 join of
/// an external driver's step markers with a run's sampled timelines (the other sources:
/// [`crate::offline`]). Exit 0 on success, 2 on unreadable input.
pub fn offline_join(samples: &Path, steps: &Path, out: Option<&Path>) -> i32 {
    crate::offline::command(
        &crate::offline::OfflineSource::Samples(samples.to_path_buf()),
        steps,
        out,
    )
}

/// Perfetto/Chrome trace JSON of a run: its captured timeline (when present and valid)
/// plus counter tracks for power and engine counters (never summed across devices).
pub fn perfetto(run_dir: &Path, report: &RunReport) -> Result<String, String> {
    let tl = crate::timeline::read_timeline(run_dir).map_err(|r| r.summary())?;
    let mut counters = Vec::new();
    if let Ok(t) = TelemetryRun::read_samples(run_dir) {
        if let Some(p) = &t.power {
            for d in &p.devices {
                counters.push(CounterTrack {
                    name: format!("{} power", d.label),
                    unit: "mW".into(),
                    points: p
                        .device_samples(d.device)
                        .filter_map(|s| s.power_mw.map(|v| (s.elapsed_ns, v as f64)))
                        .collect(),
                });
            }
        }
        if let Some(m) = &t.metrics {
            counters.push(CounterTrack {
                name: "engine prompt_tokens".into(),
                unit: "tokens".into(),
                points: m
                    .samples
                    .iter()
                    .filter_map(|s| s.counters.prompt_tokens.map(|v| (s.elapsed_ns, v as f64)))
                    .collect(),
            });
        }
    }
    let meta = TraceMeta {
        process_name: format!("inferscope-bench run {}", report.run_id),
        run_id: Some(report.run_id.clone()),
        clock_domain_id: Some(report.clock_domain_id.clone()),
        reference_instant_unix_ns: Some(report.reference_instant_unix_ns),
        quality: Some(tl.manifest.quality),
        dropped_count: Some(tl.manifest.dropped_count),
    };
    let v = crate::timeline::perfetto_trace(&tl.events, &counters, &meta);
    serde_json::to_string(&v).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::attribution::{
        AttributionInput, Concurrency, PowerBasis, PowerSample, PowerSeries, RunWindow, StepKind,
        StepMarker, attribute_run,
    };

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

    /// A GPU in MIG mode is named in every job's notes with the reason, and the job's
    /// energy figures are unavailable for that reason, never measured.
    #[test]
    fn not_attributable_devices_reach_the_job_notes() {
        let mut dev = crate::telemetry::PowerDevice::plain(
            0,
            crate::telemetry::PowerDeviceKind::Nvml,
            "gpu0".into(),
            Some(crate::telemetry::PowerBasis::Instant),
        );
        dev.not_attributable = Some("gpu0 (GPU-x) is in MIG mode: …".into());
        let t = TelemetryRun {
            clock_domain_id: "d".into(),
            reference_instant_unix_ns: A,
            started_elapsed_ns: 0,
            stopped_elapsed_ns: 1000 * MS,
            proc: None,
            power: Some(crate::telemetry::PowerTimeline {
                gpu_status: None,
                period_ns: 100 * MS,
                devices: vec![dev],
                sample_count: 2,
                dropped: 0,
                gpu_notes: vec![],
                samples: [0, 100 * MS]
                    .map(|t| crate::telemetry::PowerSample {
                        elapsed_ns: t,
                        device: 0,
                        power_mw: Some(300_000),
                        power_basis: Some(crate::telemetry::PowerBasis::Instant),
                        energy_mj: None,
                        energy_epoch: None,
                        memory_used_bytes: None,
                        utilization_gpu_pct: None,
                        utilization_memory_pct: None,
                    })
                    .to_vec(),
            }),
            metrics: None,
            prometheus: None,
        };
        let named = not_attributable_devices(&t);
        assert_eq!(
            named,
            vec!["gpu0: not attributable: gpu0 (GPU-x) is in MIG mode: …".to_string()]
        );
        // The join leaves the device out entirely (it has power samples).
        assert!(attribution_input(&t, 1).power.is_empty());
        let mut ok = t.clone();
        ok.power.as_mut().unwrap().devices[0].not_attributable = None;
        assert_eq!(attribution_input(&ok, 1).power.len(), 1);
        let a = Attribution {
            run: None,
            steps: HashMap::new(),
            by_trajectory: [("s::j#0".to_string(), 0)].into_iter().collect(),
            power_label: Some("nvml".into()),
            not_attributable: named.clone(),
        };
        let f = a.job_figures("s::j");
        assert_eq!(f.notes, named);
        assert_eq!(f.energy_per_trajectory_j.value, None);
        assert_eq!(
            f.energy_per_trajectory_j.reason.as_deref(),
            Some("no attributable power device (see the notes)")
        );
    }
}
