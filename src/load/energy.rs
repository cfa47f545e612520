//! Energy of a run with load jobs: the ADR-013 join per load point at that point's
//! declared concurrency, the sequential jobs' join unchanged, and window energy per point.
//!
//! - Sequential jobs (no load keys) go through [`crate::runner::energy::attribute`]
//!   exactly as in a run without load jobs (one trajectory in flight).
//! - Each load point is joined on its own, declaring the point's concurrency (its
//!   configured cap, or the measured maximum of an uncapped open loop); the join takes the
//!   larger of that and the overlap it observes in the markers. Above one trajectory in
//!   flight every step of the point is labelled `apportioned` — also on the simulator —
//!   never `measured` (ADR-013's wall), and the trajectory tables say so.
//! - Window energy (curve, job figures) comes from the power timeline
//!   ([`super::curve::window_energy_mj`]), summed over devices.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::curve::{EnergyPoint, window_energy_mj};
use super::record::LoadRun;
use crate::attribution::{self as attr, RunAttribution};
use crate::gate::{Figure, basis};
use crate::runner::energy::{self, Attribution, JobEnergy, StepEnergy};
use crate::runner::execute::{GradedJob, Session};
use crate::runner::steps::TrajectoryRecord;
use crate::stats::{saturating_total, total_if_complete};
use crate::telemetry::TelemetryRun;

/// Step energies by `(trajectory id, step id)`.
type StepEnergies = HashMap<(String, u64), StepEnergy>;

/// One load point's join.
struct PointJoin {
    /// `suite::job · concurrency 4`.
    label: String,
    run: RunAttribution,
    steps: StepEnergies,
}

/// The run's energy: see the module docs.
pub struct RunEnergy {
    seq: Option<Attribution>,
    any_load: bool,
    points: Vec<PointJoin>,
    power_label: Option<String>,
    devices: Vec<Vec<EnergyPoint>>,
}

/// The ADR-013 join of one point's trajectories at `declared` trajectories in flight, and
/// each step's energy with its label ([`crate::runner::energy::step_energies`]).
fn join_point(
    t: &TelemetryRun,
    trajectories: &[TrajectoryRecord],
    declared: u32,
) -> Option<(RunAttribution, StepEnergies)> {
    let (markers, usage) =
        crate::runner::energy::markers_and_usage(trajectories, t.reference_instant_unix_ns);
    if markers.is_empty() {
        return None;
    }
    let input = energy::attribution_input(t, declared);
    let run = attr::attribute_run(&input, Some(&markers), &usage);
    let steps = crate::runner::energy::step_energies(&run);
    Some((run, steps))
}

impl RunEnergy {
    /// Joins every trajectory of the run (see the module docs). Without load jobs this is
    /// exactly [`energy::attribute`] over all jobs.
    pub fn attribute(
        graded: &[GradedJob],
        telemetry: Option<&TelemetryRun>,
        session: &Session,
    ) -> RunEnergy {
        let any_load = graded.iter().any(|g| g.executed.load.is_some());
        let mut out = RunEnergy {
            seq: None,
            any_load,
            points: Vec::new(),
            power_label: session.power_label.clone(),
            devices: Vec::new(),
        };
        if !any_load {
            let all = graded.iter().flat_map(|g| g.executed.trajectories.iter());
            out.seq = Some(energy::attribute(all, telemetry, session));
            return out;
        }
        // Window energy is read only for load points.
        out.devices = telemetry
            .and_then(|t| t.power.as_ref())
            .map(|p| {
                p.devices
                    .iter()
                    .map(|d| {
                        p.device_samples(d.device)
                            .map(|s| EnergyPoint {
                                elapsed_ns: s.elapsed_ns,
                                power_mw: s.power_mw,
                                energy_mj: s.energy_mj,
                                epoch: s.energy_epoch,
                            })
                            .collect()
                    })
                    .collect()
            })
            .unwrap_or_default();
        let seq: Vec<&GradedJob> = graded
            .iter()
            .filter(|g| g.executed.load.is_none())
            .collect();
        if !seq.is_empty() {
            let trajectories = seq.iter().flat_map(|g| g.executed.trajectories.iter());
            out.seq = Some(energy::attribute(trajectories, telemetry, session));
        }
        let Some(t) = telemetry else { return out };
        for g in graded {
            let Some(l) = &g.executed.load else { continue };
            for p in &l.points {
                let trajs = &g.executed.trajectories[p.trajectories.clone()];
                if let Some((run, steps)) = join_point(t, trajs, p.declared_concurrency()) {
                    out.points.push(PointJoin {
                        label: format!("{} · {}", g.executed.job.job.id, p.point.label()),
                        run,
                        steps,
                    });
                }
            }
        }
        out
    }

    /// Energy of one step (`None` when unattributed or unmeasured).
    pub fn step(&self, trajectory: &str, step_id: u64) -> Option<&StepEnergy> {
        let key = (trajectory.to_string(), step_id);
        self.points
            .iter()
            .find_map(|p| p.steps.get(&key))
            .or_else(|| self.seq.as_ref()?.step(trajectory, step_id))
    }

    /// Where the power came from: the simulator's model, a device, or `None` without a
    /// power source (no label, or no device sampled).
    fn source(&self) -> Option<attr::EnergySource> {
        if self.devices.is_empty() {
            return None;
        }
        energy::energy_source(self.power_label.as_deref())
    }

    /// `simulated` or `measured` for window figures; `None` without a power source.
    fn window_basis(&self) -> Option<&'static str> {
        attr::EnergyBasis::of(1, energy::energy_source(self.power_label.as_deref()))
            .map(attr::EnergyBasis::label)
    }

    /// Device energy over `[start_ns, end_ns]`: (mJ summed over devices, basis, method).
    /// `None` in a run without load jobs (the device samples are kept only for load
    /// windows).
    pub fn window(&self, start_ns: u64, end_ns: u64) -> Option<(u64, String, String)> {
        let basis = self.window_basis()?;
        let parts: Vec<(u64, &str)> = self
            .devices
            .iter()
            .filter_map(|d| window_energy_mj(d, start_ns, end_ns))
            .collect();
        if parts.is_empty() {
            return None;
        }
        let method = if parts.iter().all(|p| p.1 == parts[0].1) {
            parts[0].1
        } else {
            "mixed"
        };
        Some((
            saturating_total(parts.iter().map(|p| p.0)),
            basis.to_string(),
            method.to_string(),
        ))
    }

    /// Job figures of a sequential job (as without load).
    pub fn job_figures(&self, job_id: &str) -> Option<JobEnergy> {
        self.seq.as_ref().map(|a| a.job_figures(job_id))
    }

    /// Job figures of a load job from window energy: tokens per joule = output tokens of
    /// every successful request / Σ point window energy (basis `simulated` / `measured`);
    /// energy per trajectory = Σ window energy / units, `apportioned` when any point
    /// declared more than one unit in flight ([`crate::attribution::EnergyBasis::of`]).
    /// `windows[i]` is point i's [`RunEnergy::window`] (one per point of `run`, computed
    /// once by the caller, which also shows it in the curve).
    pub fn load_job_figures(
        &self,
        run: &LoadRun,
        windows: &[Option<(u64, String, String)>],
        trajectories: &[TrajectoryRecord],
    ) -> JobEnergy {
        let Some(b) = self.window_basis() else {
            let why = "no power source (no GPU, not simulated)";
            return JobEnergy {
                tokens_per_joule: Figure::unavailable(basis::MEASURED, why),
                energy_per_trajectory_j: Figure::unavailable(basis::MEASURED, why),
                notes: Vec::new(),
            };
        };
        debug_assert_eq!(windows.len(), run.points.len());
        let mj = total_if_complete(windows.iter().map(|w| w.as_ref().map(|w| w.0)));
        let tokens = total_if_complete(
            trajectories
                .iter()
                .flat_map(|t| t.steps.iter().filter_map(|s| s.request.as_ref()))
                .filter(|r| r.is_success())
                .map(|r| r.completion_tokens),
        );
        let units: u64 = run.points.iter().map(|p| p.units_started).sum();
        let declared = run
            .points
            .iter()
            .map(|p| p.declared_concurrency())
            .max()
            .unwrap_or(1);
        // The one rule (ADR-013 wall first): apportioned above one declared in flight.
        let per_traj_basis =
            attr::EnergyBasis::of(declared, energy::energy_source(self.power_label.as_deref()))
                .map_or(b, attr::EnergyBasis::label);
        let apportioned = per_traj_basis == basis::APPORTIONED;
        let mut notes = Vec::new();
        if b == basis::SIMULATED {
            notes.push("energy is simulated (built-in simulator power model), not measured".into());
        }
        if apportioned {
            // The declared figure only: the achieved one is per point in the curve (and
            // varies run to run under open-loop arrivals).
            notes.push(format!(
                "{} (achieved per point in the curve): per-step energy is apportioned, not \
                 measured, at every point with more than one in flight (ADR-013 wall); \
                 J/out tok in the curve is window energy",
                attr::in_flight_phrase(declared, None)
            ));
        }
        let tokens_per_joule = match (mj, tokens) {
            (Some(e), Some(t)) if e > 0 => Figure::available(t as f64 / (e as f64 / 1000.0), b),
            (Some(_), Some(_)) => Figure::unavailable(b, "no energy in the load windows"),
            (None, _) => Figure::unavailable(b, "no energy over the load windows"),
            (_, None) => Figure::unavailable(b, "a request did not report output tokens"),
        };
        let energy_per_trajectory_j = match mj {
            Some(e) if units > 0 => {
                Figure::available(e as f64 / 1000.0 / units as f64, per_traj_basis)
            }
            _ => Figure::unavailable(per_traj_basis, "no energy over the load windows"),
        };
        JobEnergy {
            tokens_per_joule,
            energy_per_trajectory_j,
            notes,
        }
    }

    /// The load points' trajectory tables: each point's first trajectory (with a count of
    /// the others, which are in report.json); empty without load jobs. The sequential
    /// jobs' tables are rendered from the report
    /// ([`crate::runner::report::trajectory_tables`]).
    pub fn tables(&self) -> Vec<String> {
        let mut out = Vec::new();
        for p in &self.points {
            let Some(first) = p.run.trajectories.first() else {
                continue;
            };
            let mut t = format!(
                "{} (first trajectory of {})\n{}",
                p.label,
                p.run.trajectories.len(),
                attr::render_outcome(first).trim_end()
            );
            if p.run.trajectories.len() > 1 {
                t.push_str(&format!(
                    "\n… {} more trajectories of this point in report.json `trajectory`",
                    p.run.trajectories.len() - 1
                ));
            }
            out.push(t);
        }
        out
    }

    /// The `trajectory` value of report.json. Without load jobs, exactly the sequential
    /// join's; with them, the same shape over every trajectory (the top-level condition is
    /// the largest concurrency of any group) plus `groups`: each join's declared and
    /// observed concurrency and energy basis.
    pub fn run_value(&self) -> Option<Value> {
        if !self.any_load {
            return self.seq.as_ref()?.run_value();
        }
        let seq = self.seq.as_ref().and_then(Attribution::run_value);
        if seq.is_none() && self.points.is_empty() {
            return None;
        }
        let mut trajectories: Vec<Value> = Vec::new();
        let mut groups: Vec<Value> = Vec::new();
        let (mut declared, mut observed) = (0u32, 0u32);
        if let Some(v) = &seq {
            let d = v["declared_max_trajectories_in_flight"]
                .as_u64()
                .unwrap_or(1) as u32;
            let o = v["observed_max_trajectories_in_flight"]
                .as_u64()
                .unwrap_or(0) as u32;
            declared = declared.max(d);
            observed = observed.max(o);
            if let Some(a) = v["trajectories"].as_array() {
                trajectories.extend(a.iter().cloned());
            }
            groups.push(json!({
                "group": "sequential jobs",
                "declared_max_trajectories_in_flight": d,
                "observed_max_trajectories_in_flight": o,
                "energy_basis": v["concurrency"]["energy_basis"],
                "trajectories": v["trajectories"].as_array().map_or(0, Vec::len),
            }));
        }
        for p in &self.points {
            declared = declared.max(p.run.declared_max_trajectories_in_flight);
            observed = observed.max(p.run.observed_max_trajectories_in_flight);
            for o in &p.run.trajectories {
                trajectories.push(serde_json::to_value(o).unwrap_or(Value::Null));
            }
            groups.push(json!({
                "group": p.label,
                "declared_max_trajectories_in_flight": p.run.declared_max_trajectories_in_flight,
                "observed_max_trajectories_in_flight": p.run.observed_max_trajectories_in_flight,
                "energy_basis": p.run.concurrency.energy_basis,
                "trajectories": p.run.trajectories.len(),
            }));
        }
        let mut v = json!({
            "declared_max_trajectories_in_flight": declared,
            "observed_max_trajectories_in_flight": observed,
            "concurrency": attr::concurrency_condition(declared, Some(observed), self.source()),
            "trajectories": trajectories,
            "groups": groups,
        });
        if let (Some(obj), Some(l)) = (v.as_object_mut(), &self.power_label) {
            obj.insert("power_source".into(), Value::String(l.clone()));
        }
        Some(v)
    }
}
