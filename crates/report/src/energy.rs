//! A run's energy figures from what its samplers and joins produced: device energy over a
//! window (the one integral of docs/measurement.md "Energy over a window", summed over
//! devices), the jobs' energy figures (one definition for sequential and load jobs), the
//! run-level attribution summary and each trajectory's join outcome.

use std::collections::HashMap;

use crate::attribution::{self as attr, EnergyCounterSample, TrajectoryOutcome};
use crate::model::attribution::{CountedStep, ScrapeSpan, counters_low_confidence};
use crate::model::load::{WindowEnergy, WindowMethod};
use crate::model::{
    AttributionGroup, Basis, EnergyBasis, Figure, JobEnergy, PowerReport, RunAttributionSummary,
    TokenCount, tokens_per_joule,
};
use crate::stats::saturating_total;

/// One device's samples for window energy ([`attr::device_window_energy`]).
pub struct DeviceSeries {
    /// The device's label.
    pub label: String,
    /// Its power readings, in time order.
    pub power: Vec<attr::PowerSample>,
    /// Its energy-counter readings, in time order.
    pub counter: Vec<EnergyCounterSample>,
}

/// The run's energy: every join's outcome by trajectory id, its groups, the power report,
/// and each device's samples for window energy.
pub struct RunEnergy {
    /// What supplied power.
    pub power: PowerReport,
    /// Each joined trajectory's outcome, by trajectory id.
    pub outcomes: HashMap<String, TrajectoryOutcome>,
    /// The joins' groups.
    pub groups: Vec<AttributionGroup>,
    /// Each attributable device's samples.
    pub devices: Vec<DeviceSeries>,
    /// Scrapes of the engine counters the join read (empty without), by answer instant.
    pub scrapes: Vec<ScrapeSpan>,
    /// First-token instants of every request of the run, sorted.
    pub first_tokens: Vec<u64>,
}

impl RunEnergy {
    /// A run's energy with nothing joined yet: only what supplied power.
    pub fn new(power: PowerReport) -> RunEnergy {
        RunEnergy {
            power,
            outcomes: HashMap::new(),
            groups: Vec::new(),
            devices: Vec::new(),
            scrapes: Vec::new(),
            first_tokens: Vec::new(),
        }
    }

    /// What supplied power.
    pub fn power(&self) -> &PowerReport {
        &self.power
    }

    /// Why LLM step `step`'s counter deltas may not be its own (`None`: they are, or the
    /// run scraped no engine counters); the rule is [`counters_low_confidence`].
    pub fn counters_low_confidence(&self, step: CountedStep) -> Option<String> {
        if self.scrapes.is_empty() {
            return None;
        }
        counters_low_confidence(step, &self.scrapes, &self.first_tokens)
    }

    /// The join's outcome for trajectory `id` (`None` without telemetry or markers).
    pub fn outcome(&self, id: &str) -> Option<&TrajectoryOutcome> {
        self.outcomes.get(id)
    }

    /// The run-level summary: the largest condition of any group, and the groups; `None`
    /// when nothing was joined.
    pub fn summary(&self) -> Option<RunAttributionSummary> {
        if self.groups.is_empty() {
            return None;
        }
        let declared = self
            .groups
            .iter()
            .map(|g| g.declared_max_trajectories_in_flight)
            .max()
            .unwrap_or(1);
        let observed = self
            .groups
            .iter()
            .map(|g| g.observed_max_trajectories_in_flight)
            .max()
            .unwrap_or(0);
        Some(RunAttributionSummary {
            declared_max_trajectories_in_flight: declared,
            observed_max_trajectories_in_flight: observed,
            concurrency: attr::concurrency_condition(declared, Some(observed), self.power.source),
            groups: self.groups.clone(),
            // Every join of one run shares its run window: the same whole-run integral.
            whole_run_energy_mj: self
                .outcomes
                .values()
                .find_map(|o| o.metrics().and_then(|m| m.whole_run_energy_mj)),
        })
    }

    /// The basis of energy figures taken at most `in_flight` trajectories in flight, or
    /// [`Basis::Unavailable`] without a power source.
    pub fn basis(&self, in_flight: u32) -> Basis {
        EnergyBasis::of(in_flight, self.power.source).map_or(Basis::Unavailable, Basis::from)
    }

    /// Why energy is missing when there is no power source.
    fn no_power(&self) -> String {
        format!(
            "no power source: {}",
            self.power
                .reason
                .as_deref()
                .unwrap_or("nothing supplied power readings")
        )
    }

    /// Device energy over `[start_ns, end_ns]`, summed over every device that has samples:
    /// each device's energy by the one window integral a step's energy takes too
    /// ([`attr::device_window_energy`]: its counter figure, else its power trapezoid). `Err` with the reason when there is no
    /// power source, or when some device cannot cover the window (a sum over the others
    /// would be partial, so none is given).
    pub fn window(&self, start_ns: u64, end_ns: u64) -> Result<WindowEnergy, String> {
        if self.power.source.is_none() || self.devices.is_empty() {
            return Err(self.no_power());
        }
        let mut parts = Vec::with_capacity(self.devices.len());
        for d in &self.devices {
            match attr::device_window_energy(&d.power, &d.counter, start_ns, end_ns) {
                Some(p) => parts.push(p),
                None => {
                    return Err(format!(
                        "device {} has no samples covering the window (a sum over the \
                         other devices would be partial)",
                        d.label
                    ));
                }
            }
        }
        let method = if parts.iter().all(|p| p.1 == parts[0].1) {
            parts[0].1
        } else {
            WindowMethod::Mixed
        };
        Ok(WindowEnergy {
            energy_mj: saturating_total(parts.iter().map(|p| p.0)),
            basis: self.basis(1),
            method,
        })
    }

    /// A job's energy figures — ONE definition for sequential and load jobs: `energy_j` is
    /// the device energy over the job's `windows` (its run, or each load point's window),
    /// summed; `tokens_per_joule` is `tokens` (the output tokens of the job's successful
    /// requests in those windows, with their source) over it, basis `measured` or
    /// `simulated` (a whole-window ratio); `energy_per_trajectory_j` is `energy_j` over the
    /// `trajectories` run — the mean trajectory — `apportioned` when up to `in_flight > 1`
    /// ran together. Every figure is missing with the reason when a window has no energy.
    pub fn job_energy(
        &self,
        windows: &[(u64, u64)],
        tokens: Option<TokenCount>,
        trajectories: u64,
        in_flight: u32,
    ) -> JobEnergy {
        let basis = self.basis(1);
        let per_traj_basis = self.basis(in_flight);
        let energy: Result<u64, String> = if windows.is_empty() {
            Err("the job ran no window".into())
        } else {
            windows
                .iter()
                .map(|&(s, e)| self.window(s, e).map(|w| w.energy_mj))
                .collect::<Result<Vec<u64>, String>>()
                .map(saturating_total)
        };
        let mj = match energy {
            Ok(mj) => mj,
            Err(why) => {
                return JobEnergy {
                    energy_j: Figure::missing(basis, why.clone()),
                    tokens_per_joule: Figure::missing(basis, why.clone())
                        .with_tokens(tokens.map(|t| t.source)),
                    energy_per_trajectory_j: Figure::missing(per_traj_basis, why),
                };
            }
        };
        let j = mj as f64 / 1000.0;
        let tokens_per_joule = match tokens {
            None => Figure::missing(basis, "a successful request has no output-token count"),
            Some(TokenCount {
                tokens: t,
                source: src,
            }) => Figure::finite_or(
                tokens_per_joule(Some(t), Some(mj)),
                basis,
                if t == 0 {
                    "no output tokens"
                } else {
                    "no energy in the job's windows"
                },
            )
            .with_tokens(Some(src)),
        };
        JobEnergy {
            energy_j: Figure::finite(j, basis),
            tokens_per_joule,
            energy_per_trajectory_j: if trajectories == 0 {
                Figure::missing(per_traj_basis, "no trajectory ran")
            } else {
                Figure::finite(j / trajectories as f64, per_traj_basis)
            },
        }
    }
}
