//! The step-attribution join (docs/measurement.md): step windows from the anchor, drop rules, per-step slicing of every
//! series, reconciliation and withholding.

use std::collections::{BTreeMap, HashMap};

use super::index::{CounterIndex, Prepared, doubled_to_mj};
use super::input::{
    AVERAGED_POWER_WINDOW_NS, AttributionInput, CounterName, PowerBasis, StepUsage,
};
use super::markers::{StepKind, StepMarker};
use super::metrics::{
    ConcurrencyCondition, DeviceRunEnergy, DropReason, DroppedStep, EnergyBasis, MarkerFlag,
    MarkerIssue, PowerBasisLabel, PowerSource, RunAttribution, SourceKind, SourceSamples,
    StepAttribution, StepDeviceEnergy, StepMetrics, TrajectoryAttribution, TrajectoryMetrics,
    TrajectoryOutcome, WithheldTrajectory, WithholdReason, in_flight_phrase,
};
use inferscope_model::stats::{cache_hit_rate, total_if_complete};

/// The statement printed next to measured figures
/// (docs/measurement.md "The wall: controlled concurrency only").
pub const CONTROLLED_CONCURRENCY_STATEMENT: &str = "Controlled concurrency: one trajectory in \
flight. Per-step energy is a measurement only under this condition (docs/measurement.md): \
no co-tenant load on the device, tool steps that do not overlap LLM calls, and driver and \
profiler clocks that agree (same host). Steps plus unattributed energy reconcile exactly to \
the whole-run power integral on the same basis.";

/// The statement printed next to apportioned figures; `{in_flight}` is the declared and
/// observed trajectories in flight ([`in_flight_phrase`], capitalised; see
/// [`concurrency_condition`]).
pub const APPORTIONED_STATEMENT: &str = "{in_flight}: a step window may mix concurrent work \
on the same device, so per-step energy is apportioned, not measured (docs/measurement.md). \
Each trajectory still reconciles its steps plus unattributed energy to the whole-run \
integral, but windows of different trajectories may overlap: never sum trajectories.";

/// The concurrency condition (docs/measurement.md) for `declared` trajectories in flight and the
/// `observed` overlap of the markers (`None` when not observed): the condition applied is
/// the larger of the two, `apportioned` above one whatever the `source`, else `simulated`
/// on the simulator's power model or `measured` ([`EnergyBasis::of`]; `null` without a
/// power source). The statement names both figures as they are, never a declared upper
/// bound as if observed.
pub fn concurrency_condition(
    declared: u32,
    observed: Option<u32>,
    source: Option<PowerSource>,
) -> ConcurrencyCondition {
    let max = declared.max(observed.unwrap_or(0));
    let statement = if max > 1 {
        let phrase = in_flight_phrase(declared, observed);
        let mut c = phrase.chars();
        let capitalised = c
            .next()
            .map(|f| f.to_uppercase().chain(c).collect::<String>())
            .unwrap_or_default();
        APPORTIONED_STATEMENT.replace("{in_flight}", &capitalised)
    } else {
        CONTROLLED_CONCURRENCY_STATEMENT.to_string()
    };
    ConcurrencyCondition {
        max_trajectories_in_flight: max,
        declared_max_trajectories_in_flight: declared,
        observed_max_trajectories_in_flight: observed,
        energy_basis: EnergyBasis::of(max, source),
        statement,
    }
}

/// Identifies one step of one trajectory, for [`attribute_run`]'s usage map.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepKey {
    /// Marker `trajectory` (`None` for external files without it).
    pub trajectory: Option<String>,
    /// Marker `step_id`.
    pub step_id: u64,
}

/// A run's series, validated and indexed once (O(samples)), then applied to any number of
/// trajectories (O(steps · log samples) each).
pub struct Attributor<'a> {
    input: &'a AttributionInput,
    prepared: Prepared<'a>,
    source: Option<PowerSource>,
    condition: ConcurrencyCondition,
    /// Whole-run doubled mW·ns per device slot (`None` without power).
    whole: Vec<Option<(u64, u64, u128)>>,
}

impl<'a> Attributor<'a> {
    /// Validates and indexes `input` (sortedness, duplicate series, power range, run window,
    /// counter regressions). Problems found make every trajectory [`TrajectoryOutcome::Withheld`].
    pub fn new(input: &'a AttributionInput) -> Self {
        let prepared = Prepared::new(input);
        let w = input.run_window;
        let whole = if prepared.problems.is_empty() {
            prepared
                .devices
                .iter()
                .map(|d| {
                    d.power.map(|p| {
                        let pw =
                            prepared.power[p].window(w.start_elapsed_ns, w.end_elapsed_ns, &mut 0);
                        (pw.samples_in_window, pw.covered_ns, pw.doubled)
                    })
                })
                .collect()
        } else {
            Vec::new()
        };
        let source = PowerSource::of_bases(input.power.iter().map(|p| p.basis));
        Attributor {
            input,
            prepared,
            source,
            condition: concurrency_condition(
                input.concurrency.max_trajectories_in_flight,
                None,
                source,
            ),
            whole,
        }
    }

    /// Sets the trajectories observed in flight (e.g. from the markers,
    /// [`observed_max_trajectories_in_flight`]); the condition becomes the larger of the
    /// declared and the observed figure, and its statement names both.
    pub fn with_observed_trajectories_in_flight(mut self, observed: u32) -> Self {
        self.condition = concurrency_condition(
            self.input.concurrency.max_trajectories_in_flight,
            Some(observed),
            self.source,
        );
        self
    }

    /// Input problems that withhold every trajectory (empty when the series are usable).
    pub fn problems(&self) -> &[WithholdReason] {
        &self.prepared.problems
    }

    /// The concurrency condition applied.
    pub fn concurrency(&self) -> &ConcurrencyCondition {
        &self.condition
    }

    /// Attributes one trajectory.
    ///
    /// `steps`: `None` when no step file was supplied; all markers are treated as one
    /// trajectory. `usage`: exact per-response usage by `step_id`.
    pub fn trajectory(
        &self,
        steps: Option<&[StepMarker]>,
        usage: &BTreeMap<u64, StepUsage>,
    ) -> TrajectoryOutcome {
        match steps {
            None => self.trajectory_refs(None, usage),
            Some(s) => {
                let refs: Vec<&StepMarker> = s.iter().collect();
                self.trajectory_refs(Some(&refs), usage)
            }
        }
    }

    fn withheld(
        &self,
        trajectory: Option<String>,
        reasons: Vec<WithholdReason>,
        markers: usize,
        dropped_steps: Vec<DroppedStep>,
    ) -> TrajectoryOutcome {
        TrajectoryOutcome::Withheld(WithheldTrajectory {
            trajectory,
            reasons,
            markers: markers as u64,
            dropped_steps,
            concurrency: self.condition.clone(),
        })
    }

    fn trajectory_refs(
        &self,
        steps: Option<&[&StepMarker]>,
        usage: &BTreeMap<u64, StepUsage>,
    ) -> TrajectoryOutcome {
        let label = steps.and_then(common_trajectory);
        let n_markers = steps.map_or(0, <[_]>::len);
        let mut reasons = Vec::new();
        let anchor = self.input.reference_instant_unix_ns;
        if anchor.is_none() {
            reasons.push(WithholdReason::NoAnchor);
        }
        match steps {
            None => reasons.push(WithholdReason::NoStepFile),
            Some([]) => reasons.push(WithholdReason::NoSteps),
            Some(_) => {}
        }
        reasons.extend(self.prepared.problems.iter().cloned());

        let run = self.input.run_window;
        let classified = match (anchor, steps) {
            (Some(a), Some(s)) if run.start_elapsed_ns <= run.end_elapsed_ns => {
                Some(classify(s, a, run.start_elapsed_ns, run.end_elapsed_ns))
            }
            _ => None,
        };
        let Some((anchor, classified)) = anchor.zip(classified) else {
            return self.withheld(label, reasons, n_markers, Vec::new());
        };
        if classified.kept.is_empty() && n_markers > 0 {
            reasons.push(WithholdReason::NoValidSteps);
        }
        if !reasons.is_empty() {
            return self.withheld(label, reasons, n_markers, classified.dropped);
        }
        TrajectoryOutcome::Attributed(Box::new(self.compute(label, anchor, classified, usage)))
    }

    fn compute(
        &self,
        label: Option<String>,
        anchor: u64,
        classified: Classified<'_>,
        usage: &BTreeMap<u64, StepUsage>,
    ) -> TrajectoryMetrics {
        let p = &self.prepared;
        let basis = self.condition.energy_basis;
        let power_label = power_source_label(p.power.iter().map(|x| x.basis));
        let series = StepSeries {
            counters: [
                p.counter(CounterName::PromptTokens),
                p.counter(CounterName::GenerationTokens),
                p.counter(CounterName::PrefixCacheQueries),
                p.counter(CounterName::PrefixCacheHits),
            ],
            power_label,
            any_averaged: p.power.iter().any(|x| x.basis == PowerBasis::Averaged1s),
        };
        let mut cursors = Cursors {
            power: vec![0; p.power.len()],
            energy: vec![0; p.energy.len()],
            counter: [0; 4],
        };
        let mut sums = DeviceSums {
            steps_mj: vec![0; p.devices.len()],
            llm_mj: vec![None; p.devices.len()],
            tool_mj: vec![None; p.devices.len()],
        };
        let steps: Vec<StepMetrics> = classified
            .kept
            .iter()
            .map(|k| self.step_metrics(k, usage, &series, &mut cursors, &mut sums))
            .collect();
        let run = self.input.run_window;
        let devices = self.run_devices(&sums);

        // Totals from the per-device step figures: a step whose own sum is withheld (one
        // device lacked a segment) still counts the devices that had one, so steps plus
        // unattributed reconcile to the whole run exactly, per device and in total.
        let llm_energy_mj = sum_some(sums.llm_mj.iter().copied());
        let tool_energy_mj = sum_some(sums.tool_mj.iter().copied());
        let total_energy_mj = sum_some([llm_energy_mj, tool_energy_mj].into_iter());
        let whole_run_energy_mj = sum_some(devices.iter().map(|d| d.whole_run_energy_mj));
        let unattributed_energy_mj = sum_some(devices.iter().map(|d| d.unattributed_energy_mj));
        // Every kept step or nothing: a sum over the steps that have a counter figure
        // would pass a partial total off as the trajectory's.
        let total_counter_energy_mj = total_if_complete(steps.iter().map(|s| s.counter_energy_mj))
            .filter(|_| !steps.is_empty());
        let all_llm = |f: &dyn Fn(&StepMetrics) -> Option<u64>| {
            let llm = || steps.iter().filter(|s| s.kind == StepKind::LlmCall);
            total_if_complete(llm().map(f)).filter(|_| llm().next().is_some())
        };
        let total_generation_tokens = all_llm(&|s| s.generation_tokens_delta);
        let total_usage_completion_tokens = all_llm(&|s| s.usage.completion_tokens);
        let low_confidence = steps
            .iter()
            .any(|s| s.low_confidence && s.energy_mj.is_some());
        let mut counters_scraped: Vec<CounterName> = p.counters.iter().map(|c| c.name).collect();
        counters_scraped.sort();

        let total_generation_tokens_per_joule = per_joule(total_generation_tokens, total_energy_mj);
        TrajectoryMetrics {
            trajectory: label,
            steps,
            totals: TrajectoryAttribution {
                reference_instant_unix_ns: anchor,
                run_window: run,
                dropped_steps: classified.dropped,
                marker_flags: classified.flags,
                total_energy_mj,
                llm_energy_mj,
                tool_energy_mj,
                unattributed_energy_mj,
                whole_run_energy_mj,
                total_counter_energy_mj,
                total_generation_tokens,
                total_usage_completion_tokens,
                trajectory_tokens_per_joule: total_generation_tokens_per_joule,
                trajectory_usage_tokens_per_joule: per_joule(
                    total_usage_completion_tokens,
                    total_energy_mj,
                ),
                energy_basis: basis,
                power_basis: power_label,
                low_confidence,
                concurrency: self.condition.clone(),
                counters_scraped,
                devices,
            },
        }
    }

    /// One kept step's figures: its window of every power, energy-counter and engine
    /// counter series, its usage, and what they make (energy, tokens per joule, hit rates).
    /// Adds the step's per-device energy to `sums`.
    fn step_metrics(
        &self,
        k: &KeptStep<'_>,
        usage: &BTreeMap<u64, StepUsage>,
        series: &StepSeries<'_, 'a>,
        cursors: &mut Cursors,
        sums: &mut DeviceSums,
    ) -> StepMetrics {
        let (s, e) = (k.start, k.end);
        let duration_ns = e - s;
        let llm = k.marker.kind == StepKind::LlmCall;
        let StepDevices {
            devices,
            mut samples_by_source,
            energy,
            min_samples,
            min_covered,
        } = self.step_devices(s, e, llm, cursors, sums);
        // The counter sum covers every device or none: a device with energy in this
        // window on either basis (or a counter series) but no counter figure makes the
        // sum partial, so it is withheld (never a partial sum shown as whole).
        let counted: Vec<Option<u64>> = devices
            .iter()
            .filter(|d| d.energy_mj.is_some() || d.counter_samples_in_window.is_some())
            .map(|d| d.counter_energy_mj)
            .collect();
        let counter_energy =
            total_if_complete(counted.iter().copied()).filter(|_| !counted.is_empty());
        let mut delta = |c: Option<&CounterIndex<'_>>, hint: &mut usize| {
            c.and_then(|c| {
                let (n, d) = c.window(s, e, hint);
                samples_by_source.push(SourceSamples {
                    source_kind: SourceKind::Counter,
                    source: c.name.label().to_string(),
                    samples_in_window: n,
                });
                d
            })
        };
        let [c_prompt, c_gen, c_q, c_h] = series.counters;
        let [h_prompt, h_gen, h_q, h_h] = &mut cursors.counter;
        let prompt_tokens_delta = delta(c_prompt, h_prompt);
        let generation_tokens_delta = delta(c_gen, h_gen);
        let cache_queries_delta = delta(c_q, h_q);
        let cache_hits_delta = delta(c_h, h_h);
        let u = usage.get(&k.marker.step_id).copied().unwrap_or_default();
        StepMetrics {
            step_id: k.marker.step_id,
            kind: k.marker.kind,
            name: k.marker.name.clone(),
            start_elapsed_ns: s,
            end_elapsed_ns: e,
            duration_ns,
            energy_mj: energy,
            energy_basis: self.condition.energy_basis,
            attribution: StepAttribution {
                samples_in_window: min_samples,
                samples_by_source,
                coverage: min_covered
                    .filter(|_| duration_ns > 0)
                    .map(|c| c as f64 / duration_ns as f64),
                power_basis: series.power_label,
                low_confidence: series.any_averaged && duration_ns < AVERAGED_POWER_WINDOW_NS,
                counter_energy_mj: counter_energy,
                devices,
                prompt_tokens_delta,
                generation_tokens_delta,
                cache_hits_delta,
                cache_queries_delta,
                usage: u,
                tokens_per_joule: if llm {
                    per_joule(generation_tokens_delta, energy)
                } else {
                    None
                },
                usage_tokens_per_joule: if llm {
                    per_joule(u.completion_tokens, energy)
                } else {
                    None
                },
                cache_hit_rate: cache_hit_rate(cache_hits_delta, cache_queries_delta),
                usage_cache_hit_rate: cache_hit_rate(u.cached_tokens, u.prompt_tokens),
                counters_low_confidence: None,
            },
        }
    }

    /// The window `s..e` of every device's power and energy-counter series: each device's
    /// figures, the samples per source, and the step's energy summed over the devices
    /// (withheld when a device with a power series has no segment inside the window: a sum
    /// over the others would be partial; each device's own figure stays in `devices`).
    /// Adds each device's energy to `sums`, under the LLM or the tool steps.
    fn step_devices(
        &self,
        s: u64,
        e: u64,
        llm_step: bool,
        cursors: &mut Cursors,
        sums: &mut DeviceSums,
    ) -> StepDevices {
        let p = &self.prepared;
        let mut out = StepDevices {
            devices: Vec::with_capacity(p.devices.len()),
            samples_by_source: Vec::with_capacity(p.devices.len() * 2 + p.counters.len()),
            energy: None,
            min_samples: None,
            min_covered: None,
        };
        let mut partial = false;
        for (di, slot) in p.devices.iter().enumerate() {
            let pw = slot
                .power
                .map(|i| (&p.power[i], p.power[i].window(s, e, &mut cursors.power[i])));
            let ce = slot
                .energy
                .map(|i| p.energy[i].window(s, e, &mut cursors.energy[i]));
            let dev_energy = pw
                .filter(|(_, w)| w.covered_ns > 0)
                .map(|(_, w)| doubled_to_mj(w.doubled));
            if let Some(mj) = dev_energy {
                sums.steps_mj[di] += mj;
                let by_kind = if llm_step {
                    &mut sums.llm_mj[di]
                } else {
                    &mut sums.tool_mj[di]
                };
                *by_kind = Some(by_kind.unwrap_or(0) + mj);
                out.energy = Some(out.energy.unwrap_or(0) + mj);
            } else if pw.is_some() {
                partial = true;
            }
            if let Some((_, w)) = pw {
                out.min_samples = Some(
                    out.min_samples
                        .map_or(w.samples_in_window, |m| m.min(w.samples_in_window)),
                );
                out.min_covered = Some(
                    out.min_covered
                        .map_or(w.covered_ns, |m| m.min(w.covered_ns)),
                );
                out.samples_by_source.push(SourceSamples {
                    source_kind: SourceKind::Power,
                    source: slot.device.to_string(),
                    samples_in_window: w.samples_in_window,
                });
            }
            if let Some(c) = ce {
                out.samples_by_source.push(SourceSamples {
                    source_kind: SourceKind::EnergyCounter,
                    source: slot.device.to_string(),
                    samples_in_window: c.samples_in_window,
                });
            }
            out.devices.push(StepDeviceEnergy {
                device: slot.device.to_string(),
                power_basis: pw.map(|(x, _)| x.basis),
                samples_in_window: pw.map(|(_, w)| w.samples_in_window),
                covered_ns: pw.map(|(_, w)| w.covered_ns),
                energy_mj: dev_energy,
                counter_samples_in_window: ce.map(|c| c.samples_in_window),
                counter_energy_mj: ce.and_then(|c| c.energy_mj),
                counter_epoch_resets: ce.and_then(|c| c.energy_mj.map(|_| c.resets)),
            });
        }
        if partial {
            out.energy = None;
        }
        out
    }

    /// The run level, per device: the whole run's energy, the steps' share of it (`sums`)
    /// and the rest, unattributed (whole − Σ steps, exactly), beside the energy counter's
    /// figure over the run.
    fn run_devices(&self, sums: &DeviceSums) -> Vec<DeviceRunEnergy> {
        let p = &self.prepared;
        let run = self.input.run_window;
        let mut devices = Vec::with_capacity(p.devices.len());
        for (di, slot) in p.devices.iter().enumerate() {
            let whole = self.whole.get(di).copied().flatten();
            let whole_mj = whole.filter(|w| w.1 > 0).map(|w| doubled_to_mj(w.2));
            let steps_mj = whole_mj.map(|_| sums.steps_mj[di]);
            let ce = slot
                .energy
                .map(|i| p.energy[i].window(run.start_elapsed_ns, run.end_elapsed_ns, &mut 0));
            let counter_mj = ce.and_then(|c| c.energy_mj);
            devices.push(DeviceRunEnergy {
                device: slot.device.to_string(),
                power_basis: slot.power.map(|i| p.power[i].basis),
                samples_in_run: whole.map(|w| w.0),
                whole_run_energy_mj: whole_mj,
                steps_energy_mj: steps_mj,
                unattributed_energy_mj: whole_mj.zip(steps_mj).map(|(w, s)| w - s),
                counter_samples_in_run: ce.map(|c| c.samples_in_window),
                counter_energy_mj: counter_mj,
                counter_epoch_resets: ce.and_then(|c| c.energy_mj.map(|_| c.resets)),
                counter_to_trapezoid_ratio: ratio(counter_mj, whole_mj),
            });
        }
        devices
    }
}

/// What every step of a trajectory reads besides its own window: the engine counters
/// (prompt tokens, generation tokens, prefix-cache queries, prefix-cache hits, in that
/// order) and the power basis of the series.
struct StepSeries<'p, 'a> {
    counters: [Option<&'p CounterIndex<'a>>; 4],
    power_label: Option<PowerBasisLabel>,
    any_averaged: bool,
}

/// Search cursors, one per series: kept steps are usually in time order, so each window's
/// search starts where the previous one's did (a merge sweep).
struct Cursors {
    power: Vec<usize>,
    energy: Vec<usize>,
    counter: [usize; 4],
}

/// Each device's energy summed over the kept steps: all of them, the LLM steps' and the
/// tool steps' (`None` while no step of that kind had a segment on the device).
struct DeviceSums {
    steps_mj: Vec<u64>,
    llm_mj: Vec<Option<u64>>,
    tool_mj: Vec<Option<u64>>,
}

/// One step's slices of the device series ([`Attributor::step_devices`]).
struct StepDevices {
    devices: Vec<StepDeviceEnergy>,
    samples_by_source: Vec<SourceSamples>,
    /// The step's energy over every device; `None` without any, or when partial.
    energy: Option<u64>,
    /// The fewest power samples any device had inside the window.
    min_samples: Option<u64>,
    /// The least time any device's power segments covered inside the window, ns.
    min_covered: Option<u64>,
}

/// Sum of the present values; `None` when none is present (saturating: only the
/// counter-basis sums, which are not reconciled, could ever approach `u64::MAX`).
fn sum_some(it: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    it.flatten().fold(None, |acc: Option<u64>, v| {
        Some(acc.unwrap_or(0).saturating_add(v))
    })
}

/// Tokens per joule: `tokens / (mj / 1000)`; `None` unless both are present and non-zero.
fn per_joule(tokens: Option<u64>, mj: Option<u64>) -> Option<f64> {
    inferscope_model::tokens_per_joule(tokens, mj)
}

/// `num / den`; `None` unless both are present and `den > 0`.
fn ratio(num: Option<u64>, den: Option<u64>) -> Option<f64> {
    match (num, den) {
        (Some(n), Some(d)) if d > 0 => Some(n as f64 / d as f64),
        _ => None,
    }
}

fn power_source_label(bases: impl Iterator<Item = PowerBasis>) -> Option<PowerBasisLabel> {
    PowerBasisLabel::of(bases)
}

fn common_trajectory(steps: &[&StepMarker]) -> Option<String> {
    let first = steps.first()?.trajectory.as_ref()?;
    steps
        .iter()
        .all(|m| m.trajectory.as_ref() == Some(first))
        .then(|| first.clone())
}

struct KeptStep<'m> {
    marker: &'m StepMarker,
    start: u64,
    end: u64,
}

struct Classified<'m> {
    kept: Vec<KeptStep<'m>>,
    dropped: Vec<DroppedStep>,
    flags: Vec<MarkerFlag>,
}

/// Applies the drop rules in order — `ends_before_start`, `duplicate_step_id`,
/// `outside_run`, then `overlaps_neighbour` among the rest (both members of an overlapping
/// pair; windows `[a, b]` and `[c, d]` overlap when `c < b && a < d`, so touching windows do
/// not) — and flags kept markers that go backwards in file order. Nothing is reordered.
fn classify<'m>(
    markers: &[&'m StepMarker],
    anchor: u64,
    run_start: u64,
    run_end: u64,
) -> Classified<'m> {
    let n = markers.len();
    let mut ids: HashMap<u64, u32> = HashMap::with_capacity(n);
    for m in markers {
        *ids.entry(m.step_id).or_default() += 1;
    }
    let mut verdict: Vec<Option<(DropReason, Option<u64>)>> = vec![None; n];
    let mut window = vec![(0u64, 0u64); n];
    let mut alive = Vec::with_capacity(n);
    for (i, m) in markers.iter().enumerate() {
        if m.t_end_unix_ns < m.t_start_unix_ns {
            verdict[i] = Some((DropReason::EndsBeforeStart, None));
        } else if ids[&m.step_id] > 1 {
            verdict[i] = Some((DropReason::DuplicateStepId, None));
        } else {
            match (
                m.t_start_unix_ns.checked_sub(anchor),
                m.t_end_unix_ns.checked_sub(anchor),
            ) {
                (Some(s), Some(e)) if s >= run_start && e <= run_end => {
                    window[i] = (s, e);
                    alive.push(i);
                }
                _ => verdict[i] = Some((DropReason::OutsideRun, None)),
            }
        }
    }

    // Overlap sweep over a start-sorted copy of the survivors' positions. Sorted by
    // (start, end), position q overlaps an earlier one iff the running max end exceeds its
    // start, and a later one iff the next start is below its end.
    let mut order = alive.clone();
    order.sort_by_key(|&i| (window[i].0, window[i].1, i));
    let mut max_end: Option<(u64, usize)> = None;
    let mut overlap: Vec<Option<u64>> = vec![None; n];
    for (q, &i) in order.iter().enumerate() {
        let (s, e) = window[i];
        if let Some((me, j)) = max_end
            && me > s
        {
            overlap[i] = Some(markers[j].step_id);
        } else if let Some(&next) = order.get(q + 1)
            && window[next].0 < e
        {
            overlap[i] = Some(markers[next].step_id);
        }
        if max_end.is_none_or(|(me, _)| e > me) {
            max_end = Some((e, i));
        }
    }

    let mut kept = Vec::with_capacity(alive.len());
    let mut flags = Vec::new();
    let mut dropped = Vec::new();
    for (i, m) in markers.iter().enumerate() {
        if let Some(with) = overlap[i] {
            verdict[i] = Some((DropReason::OverlapsNeighbour, Some(with)));
        }
        match verdict[i] {
            Some((reason, neighbour_step_id)) => dropped.push(DroppedStep {
                step_id: m.step_id,
                kind: m.kind,
                t_start_unix_ns: m.t_start_unix_ns,
                t_end_unix_ns: m.t_end_unix_ns,
                reason,
                neighbour_step_id,
            }),
            None => {
                let (start, end) = window[i];
                if let Some(prev) = kept.last() {
                    let prev: &KeptStep<'_> = prev;
                    if start < prev.end {
                        flags.push(MarkerFlag {
                            step_id: m.step_id,
                            previous_step_id: prev.marker.step_id,
                            issue: MarkerIssue::GoesBackwards,
                        });
                    }
                }
                kept.push(KeptStep {
                    marker: m,
                    start,
                    end,
                });
            }
        }
    }
    Classified {
        kept,
        dropped,
        flags,
    }
}

/// Attributes the given markers as one trajectory (docs/measurement.md).
///
/// `steps`: `None` when no step file was supplied. `usage`: exact per-response usage by
/// `step_id`. Returns [`TrajectoryOutcome::Withheld`] with every reason when the anchor is
/// missing, no step file or no markers were supplied, every marker was dropped, a counter
/// regressed without a reset, or an input series is unusable; otherwise
/// [`TrajectoryOutcome::Attributed`].
pub fn attribute(
    input: &AttributionInput,
    steps: Option<&[StepMarker]>,
    usage: &BTreeMap<u64, StepUsage>,
) -> TrajectoryOutcome {
    Attributor::new(input).trajectory(steps, usage)
}

/// The most trajectories in flight at once according to the markers: each trajectory's
/// span runs from its earliest start to its latest end (markers with `t_end < t_start`
/// ignored); spans that only touch do not overlap. 0 for no markers.
pub fn observed_max_trajectories_in_flight(markers: &[StepMarker]) -> u32 {
    let mut spans: HashMap<Option<&str>, (u64, u64)> = HashMap::new();
    for m in markers
        .iter()
        .filter(|m| m.t_end_unix_ns >= m.t_start_unix_ns)
    {
        let e = spans
            .entry(m.trajectory.as_deref())
            .or_insert((m.t_start_unix_ns, m.t_end_unix_ns));
        e.0 = e.0.min(m.t_start_unix_ns);
        e.1 = e.1.max(m.t_end_unix_ns);
    }
    // Ends sort before starts at the same instant (touching spans do not overlap).
    let mut events: Vec<(u64, i8)> = spans
        .values()
        .flat_map(|&(s, e)| [(s, 1i8), (e, -1i8)])
        .collect();
    events.sort();
    let (mut cur, mut max) = (0i64, 0i64);
    for (_, d) in events {
        cur += i64::from(d);
        max = max.max(cur);
    }
    u32::try_from(max).unwrap_or(u32::MAX)
}

/// Attributes every trajectory of a run: markers are grouped by their `trajectory` field
/// (in order of first appearance; markers without one form one group), and the
/// concurrency condition is the larger of the declared
/// `input.concurrency.max_trajectories_in_flight` and the value observed from the markers
/// ([`observed_max_trajectories_in_flight`]). `usage` is keyed by trajectory and step id.
/// `steps = None` (no step file) yields one withheld outcome.
pub fn attribute_run(
    input: &AttributionInput,
    steps: Option<&[StepMarker]>,
    usage: &BTreeMap<StepKey, StepUsage>,
) -> RunAttribution {
    attribute_run_observed(input, steps, usage, 0)
}

/// [`attribute_run`] when the caller observed the trajectories in flight itself: the
/// observed value is the larger of `observed_elsewhere` and what the markers show. A load
/// point joins only the trajectories it kept, while its executor counted every unit in
/// flight; the markers of the kept ones alone would understate the overlap.
pub fn attribute_run_observed(
    input: &AttributionInput,
    steps: Option<&[StepMarker]>,
    usage: &BTreeMap<StepKey, StepUsage>,
    observed_elsewhere: u32,
) -> RunAttribution {
    let declared = input.concurrency.max_trajectories_in_flight;
    let observed = steps
        .map_or(0, observed_max_trajectories_in_flight)
        .max(observed_elsewhere);
    let attributor = Attributor::new(input).with_observed_trajectories_in_flight(observed);
    let trajectories = match steps {
        None => vec![attributor.trajectory_refs(None, &BTreeMap::new())],
        Some([]) => vec![attributor.trajectory_refs(Some(&[]), &BTreeMap::new())],
        Some(markers) => {
            let mut position: HashMap<Option<&str>, usize> = HashMap::new();
            let mut groups: Vec<Vec<&StepMarker>> = Vec::new();
            for m in markers {
                let g = *position.entry(m.trajectory.as_deref()).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
                groups[g].push(m);
            }
            let mut usages: Vec<BTreeMap<u64, StepUsage>> = vec![BTreeMap::new(); groups.len()];
            for (k, u) in usage {
                if let Some(&g) = position.get(&k.trajectory.as_deref()) {
                    usages[g].insert(k.step_id, *u);
                }
            }
            groups
                .iter()
                .zip(&usages)
                .map(|(group, own)| attributor.trajectory_refs(Some(group), own))
                .collect()
        }
    };
    RunAttribution {
        declared_max_trajectories_in_flight: declared,
        observed_max_trajectories_in_flight: observed,
        concurrency: attributor.concurrency().clone(),
        trajectories,
    }
}
