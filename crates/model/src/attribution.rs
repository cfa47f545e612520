//! The step attribution (docs/measurement.md) as reported (moved here from `attribution::metrics`, which the
//! join fills in): per-step figures ([`StepAttribution`], inside each
//! [`super::StepReport`]), per-trajectory totals and reconciliation
//! ([`TrajectoryAttribution`]), the typed outcome ([`AttributionOutcome`]: attributed or
//! withheld, never a silent `None`), dropped steps, marker flags and the concurrency
//! condition; and the join's own rows ([`StepMetrics`], [`TrajectoryMetrics`]) for the
//! offline `trajectory` command and the tables.
//!
//! Every `Option` serializes as `null` (never skipped); raw figures are integers (ns, mJ,
//! tokens); ratios are the only floats and are always finite.

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Serialize};

use super::basis::{EnergyBasis, PowerBasis, PowerBasisLabel};
use super::step_kind::StepKind;

/// Canonical engine counters (engine profiles map vLLM / SGLang / llama.cpp
/// families onto these names, docs/measurement.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterName {
    /// Prompt tokens processed (vLLM `vllm:prompt_tokens_total`).
    PromptTokens,
    /// Generated tokens (vLLM `vllm:generation_tokens_total`).
    GenerationTokens,
    /// Prefix-cache queries, tokens (vLLM `vllm:prefix_cache_queries_total`).
    PrefixCacheQueries,
    /// Prefix-cache hits, tokens (vLLM `vllm:prefix_cache_hits_total`).
    PrefixCacheHits,
}

impl CounterName {
    /// The canonical name as written in reports (`prompt_tokens`, …).
    pub fn label(self) -> &'static str {
        match self {
            CounterName::PromptTokens => "prompt_tokens",
            CounterName::GenerationTokens => "generation_tokens",
            CounterName::PrefixCacheQueries => "prefix_cache_queries",
            CounterName::PrefixCacheHits => "prefix_cache_hits",
        }
    }
}

/// Exact token counts from one LLM step's own response `usage` (per-response usage is exact
/// per request; engine counters advance asynchronously; docs/measurement.md
/// "Per step and per trajectory (energy and engine counters)"). Each is `null` when the
/// server did not report it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepUsage {
    /// `usage.prompt_tokens` (includes cached tokens).
    pub prompt_tokens: Option<u64>,
    /// `usage.prompt_tokens_details.cached_tokens` (or llama.cpp `timings.cache_n`).
    pub cached_tokens: Option<u64>,
    /// `usage.completion_tokens`.
    pub completion_tokens: Option<u64>,
}

/// One line of a marker file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkerLineError {
    /// 1-based line number in the file.
    pub line: usize,
    /// What was wrong (serde_json's message, e.g. `invalid type: floating point
    /// \`1.7e18\`, expected u64 at line 1 column 33`).
    pub message: String,
}

/// The measured window of the run, `[start_elapsed_ns, end_elapsed_ns]` (closed), in ns
/// from the reference instant. Steps must lie inside it; the whole-run integral is taken
/// over it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunWindow {
    /// Window start, ns.
    pub start_elapsed_ns: u64,
    /// Window end, ns (≥ start, else the trajectory is withheld).
    pub end_elapsed_ns: u64,
}

/// Kind of a sampled source, for [`SourceSamples`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceKind {
    /// A device power series.
    Power,
    /// A device energy-counter series.
    EnergyCounter,
    /// A canonical engine counter series.
    Counter,
}

impl SourceKind {
    /// `power`, `energy_counter` or `counter`.
    pub fn label(self) -> &'static str {
        match self {
            SourceKind::Power => "power",
            SourceKind::EnergyCounter => "energy_counter",
            SourceKind::Counter => "counter",
        }
    }
}

/// How many samples of one source fall inside a step window `[start, end]` (closed): the
/// grid resolution, declared per step and per source (docs/measurement.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSamples {
    /// Kind of source.
    pub source_kind: SourceKind,
    /// Device key, or canonical counter name.
    pub source: String,
    /// Samples with `start ≤ elapsed_ns ≤ end`.
    pub samples_in_window: u64,
}

/// One device's share of one step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepDeviceEnergy {
    /// Device key.
    pub device: String,
    /// Basis of the device's power series; `null` when only an energy counter exists.
    pub power_basis: Option<PowerBasis>,
    /// Power samples inside the window; `null` without a power series.
    pub samples_in_window: Option<u64>,
    /// ns of the window covered by inter-sample segments fully inside it; `null` without
    /// a power series.
    pub covered_ns: Option<u64>,
    /// Integer trapezoid over segments fully inside the window, floored to mJ once;
    /// `null` without a power series or when no segment of positive length is inside.
    pub energy_mj: Option<u64>,
    /// Energy-counter samples inside the window; `null` without a counter series.
    pub counter_samples_in_window: Option<u64>,
    /// Counter-basis energy, mJ: counter increments between the baseline (last counter
    /// sample at or before the window start) and the last counter sample at or before the
    /// window end; an epoch-reset interval inside that bracket is filled with the power
    /// trapezoid over it (field case C19). `null` without a counter series, without two
    /// distinct bracketing samples, or when a reset interval cannot be filled.
    pub counter_energy_mj: Option<u64>,
    /// Epoch resets inside the counter bracket (filled from power); `null` without a
    /// counter figure.
    pub counter_epoch_resets: Option<u64>,
}

/// The step-attribution figures (docs/measurement.md) of one step, beside its identity (`Option`
/// deltas, per-source samples, exact usage beside the counter deltas, counter-basis energy).
/// The step's trapezoid energy and its basis are the step's [`super::StepReport::energy`]
/// figure (and [`StepMetrics::energy_mj`] in the join's own rows).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepAttribution {
    /// Power samples with `start ≤ elapsed_ns ≤ end` (docs/measurement.md `samples_in_window`, the
    /// grid resolution), count. With several devices it is the **minimum over devices
    /// that have a power series** (the worst-resolved device), not any one device's nor
    /// the sum; each device's own count is in `devices[].samples_in_window` and
    /// `samples_by_source`. `null` without any power series.
    pub samples_in_window: Option<u64>,
    /// Samples inside the window per source.
    pub samples_by_source: Vec<SourceSamples>,
    /// Share of the window covered by segments fully inside it (`covered_ns / duration_ns`,
    /// the fewest over devices, docs/measurement.md); `null` for a
    /// zero-length step or without power.
    pub coverage: Option<f64>,
    /// Power source behind the energy; `null` without power.
    pub power_basis: Option<PowerBasisLabel>,
    /// `true` when an `averaged_1s` series covers a window shorter than its 1 s averaging
    /// window (field case C20).
    pub low_confidence: bool,
    /// Sum over devices of the counter-basis energy, mJ (field case C20's preferred figure). `null`
    /// when no device has a counter figure for this window, and `null` when any device that has
    /// energy in the window on either basis (a power trapezoid) or an energy-counter series lacks a
    /// counter figure: a sum over only the devices with counters is partial and is not shown as the
    /// step's (missing is not zero: docs/architecture.md "Rules the code keeps"; C19 device 0,
    /// counter NotSupported). The per-device figures stay in `devices[].counter_energy_mj`. Never
    /// reconciled with the trapezoid (separate bases).
    pub counter_energy_mj: Option<u64>,
    /// Per-device breakdown (each device's own trapezoid and counter figures).
    pub devices: Vec<StepDeviceEnergy>,
    /// `prompt_tokens` counter delta: `null` when never scraped or when the window holds no
    /// scrape after its baseline; `Some(0)` when scraped and unmoved.
    pub prompt_tokens_delta: Option<u64>,
    /// `generation_tokens` counter delta (same rules).
    pub generation_tokens_delta: Option<u64>,
    /// `prefix_cache_hits` counter delta, tokens (same rules).
    pub cache_hits_delta: Option<u64>,
    /// `prefix_cache_queries` counter delta, tokens (same rules).
    pub cache_queries_delta: Option<u64>,
    /// Exact tokens from this step's own response usage as the join received it (server
    /// usage only; all `null` when none was recorded, e.g. tool steps).
    pub usage: StepUsage,
    /// `generation_tokens_delta / (energy_mj / 1000)`, tokens per J; `null` for tool steps,
    /// zero or absent tokens, zero or absent energy.
    pub tokens_per_joule: Option<f64>,
    /// `usage.completion_tokens / (energy_mj / 1000)`; same `null` rules.
    pub usage_tokens_per_joule: Option<f64>,
    /// `cache_hits_delta / cache_queries_delta`; `null` when the queries delta is 0 or
    /// absent.
    pub cache_hit_rate: Option<f64>,
    /// `usage.cached_tokens / usage.prompt_tokens`; `null` when either is absent or the
    /// prompt is 0 tokens.
    pub usage_cache_hit_rate: Option<f64>,
    /// Why this LLM step's counter deltas may hold another step's counts, or miss its own
    /// (docs/measurement.md, "Counter deltas of short steps"; the rule is
    /// [`counters_low_confidence`]). `null` when the scrapes on each side prove the deltas
    /// the step's own, for tool steps, and in runs that scraped no engine counters.
    #[serde(default)]
    pub counters_low_confidence: Option<String>,
}

/// One scrape of the engine's counters, ns from the reference instant: the request was sent
/// at `sent_ns` and answered at `answered_ns`, so the engine's snapshot lies between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScrapeSpan {
    /// When the scrape request was sent.
    pub sent_ns: u64,
    /// When its response was read (the counter point's `elapsed_ns`).
    pub answered_ns: u64,
}

/// The instants of one LLM step that decide whether its counter deltas are its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountedStep {
    /// Step start, ns.
    pub start_ns: u64,
    /// Its request's first token, ns (`None`: none arrived).
    pub first_token_ns: Option<u64>,
    /// Step end, ns.
    pub end_ns: u64,
}

/// The [`StepAttribution::counters_low_confidence`] reason of LLM step `step`, or `None`
/// when its prompt and cache deltas hold its own counts and no other request's
/// (docs/measurement.md, "Counter deltas of short steps").
///
/// An engine counts a request's prompt and prefix-cache tokens by the time its first token
/// reaches the client; a step's window runs from the last scrape answered at or before its
/// start to the last answered at or before its end. So the deltas are the step's own when
/// (1) a scrape sent at or after its first token was answered by its end (its counts are in
/// the window), (2) the window's baseline scrape was sent at or after every earlier
/// request's first token (no earlier count lands in it), and (3) no other request's first
/// token falls inside the step. `scrapes` are sorted by `answered_ns` (their `sent_ns`
/// too); `first_tokens` are the first-token instants of every request of the run, this
/// step's included, sorted.
pub fn counters_low_confidence(
    step: CountedStep,
    scrapes: &[ScrapeSpan],
    first_tokens: &[u64],
) -> Option<String> {
    let ms = |ns: u64| ns as f64 / 1e6;
    let Some(ft) = step.first_token_ns else {
        return Some(
            "no first token: the engine's counts for this request cannot be placed in a step"
                .into(),
        );
    };
    let own = scrapes.partition_point(|s| s.sent_ns < ft);
    if scrapes.get(own).is_none_or(|s| s.answered_ns > step.end_ns) {
        return Some(format!(
            "no scrape sent after the step's first token was answered by its end ({:.1} ms \
             later): its prompt and cache counts land in a later step's window",
            ms(step.end_ns.saturating_sub(ft))
        ));
    }
    let before = first_tokens.partition_point(|&t| t < step.start_ns);
    let inside = first_tokens.partition_point(|&t| t <= step.end_ns) - before;
    if inside > 1 {
        return Some(format!(
            "{} other request(s) produced a first token inside this step: their counts share \
             its window",
            inside - 1
        ));
    }
    // The run's first request: no earlier count to keep out of its window.
    let &earlier = before.checked_sub(1).and_then(|i| first_tokens.get(i))?;
    let base = scrapes.partition_point(|s| s.answered_ns <= step.start_ns);
    match base.checked_sub(1).map(|i| scrapes[i]) {
        Some(b) if b.sent_ns >= earlier => None,
        _ => Some(format!(
            "an earlier request's counts (first token {:.1} ms before this step began) were not \
             scraped before it began: they land in this step's window",
            ms(step.start_ns.saturating_sub(earlier))
        )),
    }
}

/// One kept step as the join computed it: the marker's identity, the step's trapezoid
/// energy and basis, and its [`StepAttribution`] (flattened into the same JSON object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepMetrics {
    /// Marker `step_id`.
    pub step_id: u64,
    /// `llm_call` or `tool`.
    pub kind: StepKind,
    /// Marker `name` (`chat`, tool name), `null` when the marker had none.
    pub name: Option<String>,
    /// Window start, ns from the reference instant (`t_start_unix_ns − anchor`).
    pub start_elapsed_ns: u64,
    /// Window end, ns from the reference instant.
    pub end_elapsed_ns: u64,
    /// `end − start`, ns.
    pub duration_ns: u64,
    /// Sum over devices of the per-device trapezoid energy (doubled mW·ns in `u128`,
    /// floored to mJ once per device and step). `null` without power, when no device had a
    /// segment of positive length fully inside the window, and — with several devices —
    /// when any device with a power series had none (a sum over some devices is partial,
    /// as the counter sum; each device's figure stays in `devices[]`). A segment straddling
    /// a window boundary is never counted here (it is unattributed).
    pub energy_mj: Option<u64>,
    /// The trajectory's [`EnergyBasis`]: `apportioned` above one trajectory in flight,
    /// `simulated` on the simulator's power model, else `measured`; `null` without power.
    pub energy_basis: Option<EnergyBasis>,
    /// The rest of the step's step-attribution figures (docs/measurement.md).
    #[serde(flatten)]
    pub attribution: StepAttribution,
}

impl Deref for StepMetrics {
    type Target = StepAttribution;
    fn deref(&self) -> &StepAttribution {
        &self.attribution
    }
}

impl DerefMut for StepMetrics {
    fn deref_mut(&mut self) -> &mut StepAttribution {
        &mut self.attribution
    }
}

/// Why a step was left out of attribution (`dropped_steps`;
/// docs/measurement.md "The wall: controlled concurrency only"; field case C22).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// The window is not inside the run window (or starts before the anchor).
    OutsideRun,
    /// The window overlaps another step's window of the same trajectory (would
    /// double-count energy).
    OverlapsNeighbour,
    /// `t_end_unix_ns < t_start_unix_ns` (a wall clock stepped backwards, C22).
    EndsBeforeStart,
    /// Another marker of the same trajectory has the same `step_id`.
    DuplicateStepId,
}

impl DropReason {
    /// The snake_case reason label.
    pub fn label(self) -> &'static str {
        match self {
            DropReason::OutsideRun => "outside_run",
            DropReason::OverlapsNeighbour => "overlaps_neighbour",
            DropReason::EndsBeforeStart => "ends_before_start",
            DropReason::DuplicateStepId => "duplicate_step_id",
        }
    }
}

/// A step named in the `dropped_steps` diagnostic list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DroppedStep {
    /// Marker `step_id`.
    pub step_id: u64,
    /// Marker `kind`.
    pub kind: StepKind,
    /// Marker start, unix ns (as written).
    pub t_start_unix_ns: u64,
    /// Marker end, unix ns (as written).
    pub t_end_unix_ns: u64,
    /// Why it was dropped.
    pub reason: DropReason,
    /// For `overlaps_neighbour`: a step it overlaps; `null` otherwise.
    pub neighbour_step_id: Option<u64>,
}

/// A kept step whose marker goes backwards in file order: it starts before the previous
/// kept marker ends (field case C22). Flagged, never reordered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkerFlag {
    /// The flagged step.
    pub step_id: u64,
    /// The kept step before it in file order.
    pub previous_step_id: u64,
    /// What is wrong.
    pub issue: MarkerIssue,
}

/// Issue of a flagged marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkerIssue {
    /// The marker lies before the previous kept marker in file order (time goes backwards;
    /// field case C22).
    GoesBackwards,
}

/// The concurrency condition, stated next to the numbers (docs/measurement.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConcurrencyCondition {
    /// The condition applied: the larger of the declared and the observed figure.
    pub max_trajectories_in_flight: u32,
    /// The most trajectories the caller declared could be in flight.
    pub declared_max_trajectories_in_flight: u32,
    /// The most trajectories whose marker spans overlap in time; `null` when not observed
    /// (a single trajectory attributed on its own).
    pub observed_max_trajectories_in_flight: Option<u32>,
    /// [`EnergyBasis::of`] the applied figure and the power source: `apportioned` above
    /// one, else `simulated` or `measured`; `null` without a power source.
    pub energy_basis: Option<EnergyBasis>,
    /// The statement printed beside the figures, naming the declared and observed figures.
    pub statement: String,
}

impl ConcurrencyCondition {
    /// The in-flight phrase of headers and statements ([`in_flight_phrase`]).
    pub fn in_flight(&self) -> String {
        in_flight_phrase(
            self.declared_max_trajectories_in_flight,
            self.observed_max_trajectories_in_flight,
        )
    }
}

/// States what is known about trajectories in flight, never an upper bound as if observed:
/// `1 trajectory in flight` (declared and observed agree), `up to 4 trajectories declared
/// in flight (1 observed)`, `2 trajectories observed in flight (1 declared)`, or
/// `… declared in flight` alone when nothing was observed (`observed = None`).
pub fn in_flight_phrase(declared: u32, observed: Option<u32>) -> String {
    let noun = |n: u32| if n == 1 { "trajectory" } else { "trajectories" };
    match observed {
        None if declared <= 1 => format!("{declared} {} declared in flight", noun(declared)),
        None => format!("up to {declared} {} declared in flight", noun(declared)),
        Some(o) if o == declared => format!("{o} {} in flight", noun(o)),
        Some(o) if o > declared => {
            format!("{o} {} observed in flight ({declared} declared)", noun(o))
        }
        Some(o) => format!(
            "up to {declared} {} declared in flight ({o} observed)",
            noun(declared)
        ),
    }
}

/// Run-level energy figures of one device, and the counter/trapezoid quality check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceRunEnergy {
    /// Device key.
    pub device: String,
    /// Basis of its power series; `null` without one.
    pub power_basis: Option<PowerBasis>,
    /// Power samples inside the run window; `null` without a power series.
    pub samples_in_run: Option<u64>,
    /// Whole-run integral: trapezoid over segments fully inside the run window, floored to
    /// mJ once; `null` without power or without a segment of positive length.
    pub whole_run_energy_mj: Option<u64>,
    /// Sum of this device's step figures (kept steps); `null` when `whole_run_energy_mj`
    /// is.
    pub steps_energy_mj: Option<u64>,
    /// `whole_run_energy_mj − steps_energy_mj` exactly.
    pub unattributed_energy_mj: Option<u64>,
    /// Energy-counter samples inside the run window; `null` without a counter series.
    pub counter_samples_in_run: Option<u64>,
    /// Counter-basis energy over the run window (same bracketing and C19 reset filling as
    /// steps); `null` when unavailable.
    pub counter_energy_mj: Option<u64>,
    /// Epoch resets in the run's counter bracket; `null` without a counter figure.
    pub counter_epoch_resets: Option<u64>,
    /// `counter_energy_mj / whole_run_energy_mj`, a data-quality indicator (≈ 1 when the
    /// bases agree; docs/measurement.md, zeus #181); `null` when either is
    /// absent or the trapezoid is 0.
    pub counter_to_trapezoid_ratio: Option<f64>,
}

/// Per-trajectory totals, reconciliation and condition (docs/measurement.md `TrajectoryMetrics` less
/// its steps).
///
/// Reconciliation (asserted in tests): `whole_run_energy_mj ==
/// total_energy_mj.unwrap_or(0) + unattributed_energy_mj` whenever `whole_run_energy_mj`
/// is `Some`, and the same per device. Definition: each step's device figure is floored to mJ once from its exact
/// `u128` doubled-mW·ns sum; `unattributed_energy_mj` is defined as the floored whole-run
/// figure minus the sum of floored step figures. It therefore holds the energy of every
/// segment not fully inside a kept step (gaps, straddling segments, dropped steps) plus
/// the sub-mJ flooring remainder of each step (< 1 mJ per step and device). It is never
/// negative, because the steps' segments are disjoint subsets of the run's segments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryAttribution {
    /// The anchor the windows were computed from, unix ns.
    pub reference_instant_unix_ns: u64,
    /// The run window.
    pub run_window: RunWindow,
    /// Steps left out, with reasons, in marker-file order.
    pub dropped_steps: Vec<DroppedStep>,
    /// Kept markers that go backwards in file order (C22).
    pub marker_flags: Vec<MarkerFlag>,
    /// Energy inside the kept step windows: the sum over devices of each device's step
    /// figures (`llm_energy_mj + tool_energy_mj`; a step whose own figure is withheld
    /// because one device lacked a segment still counts the devices that had one, so the
    /// reconciliation holds); `null` when no step has any.
    pub total_energy_mj: Option<u64>,
    /// Same, over `llm_call` steps; `null` when none has any.
    pub llm_energy_mj: Option<u64>,
    /// Same, over `tool` steps; `null` when none has any.
    pub tool_energy_mj: Option<u64>,
    /// Run energy not inside any kept step window: `whole_run_energy_mj −
    /// total_energy_mj` (see the type's doc); `null` without power.
    pub unattributed_energy_mj: Option<u64>,
    /// Whole-run trapezoid integral on the same basis (sum of devices); `null` without
    /// power.
    pub whole_run_energy_mj: Option<u64>,
    /// Sum of the kept steps' counter-basis energies, mJ; `null` unless every kept step
    /// has one (a sum over some steps would be partial). Not reconciled with the
    /// trapezoid figures (separate basis).
    pub total_counter_energy_mj: Option<u64>,
    /// Sum of `generation_tokens_delta` over `llm_call` steps; `null` unless every LLM
    /// step has a delta (a partial sum is not a total).
    pub total_generation_tokens: Option<u64>,
    /// Sum of server-reported `usage.completion_tokens` over `llm_call` steps; `null`
    /// unless every LLM step reported it (an estimate is not usage).
    pub total_usage_completion_tokens: Option<u64>,
    /// `total_generation_tokens / (total_energy_mj / 1000)`; `null` when either is absent
    /// or zero.
    pub trajectory_tokens_per_joule: Option<f64>,
    /// `total_usage_completion_tokens / (total_energy_mj / 1000)`; same rules.
    pub trajectory_usage_tokens_per_joule: Option<f64>,
    /// `measured`, `apportioned` or `simulated` ([`EnergyBasis::of`]); `null` without
    /// power.
    pub energy_basis: Option<EnergyBasis>,
    /// Power source of the energy figures; `null` without power.
    pub power_basis: Option<PowerBasisLabel>,
    /// `true` when any step is `low_confidence`.
    pub low_confidence: bool,
    /// The concurrency condition and its statement.
    pub concurrency: ConcurrencyCondition,
    /// Canonical counters that were scraped (a counter missing here was never scraped).
    pub counters_scraped: Vec<CounterName>,
    /// Run-level figures per device, with the counter/trapezoid ratio.
    pub devices: Vec<DeviceRunEnergy>,
}

/// One attributed trajectory as the join computed it: its label, its kept steps, and its
/// [`TrajectoryAttribution`] (flattened into the same JSON object).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryMetrics {
    /// Trajectory label of the markers (`null` when the markers carry none).
    pub trajectory: Option<String>,
    /// Kept steps, in marker-file order (never reordered).
    pub steps: Vec<StepMetrics>,
    /// Totals, reconciliation and condition.
    #[serde(flatten)]
    pub totals: TrajectoryAttribution,
}

impl Deref for TrajectoryMetrics {
    type Target = TrajectoryAttribution;
    fn deref(&self) -> &TrajectoryAttribution {
        &self.totals
    }
}

impl DerefMut for TrajectoryMetrics {
    fn deref_mut(&mut self) -> &mut TrajectoryAttribution {
        &mut self.totals
    }
}

/// What a series problem was, for [`WithholdReason::InvalidSeries`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesProblem {
    /// `elapsed_ns` decreases somewhere in the series.
    Unsorted,
    /// Two series for the same device or counter name.
    DuplicateSeries,
    /// A power reading above [`super::input::MAX_POWER_MW`].
    PowerOutOfRange,
}

impl SeriesProblem {
    /// `unsorted`, `duplicate_series` or `power_out_of_range`.
    pub fn label(self) -> &'static str {
        match self {
            SeriesProblem::Unsorted => "unsorted",
            SeriesProblem::DuplicateSeries => "duplicate_series",
            SeriesProblem::PowerOutOfRange => "power_out_of_range",
        }
    }
}

/// Why a trajectory's metrics are withheld (step-attribution withholding (docs/measurement.md) rules, plus input checks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum WithholdReason {
    /// The report has no `reference_instant_unix_ns`: markers cannot be mapped.
    NoAnchor,
    /// No step-marker file was supplied.
    NoStepFile,
    /// The step-marker file holds no markers.
    NoSteps,
    /// Every marker was dropped (see `dropped_steps`).
    NoValidSteps,
    /// A canonical counter decreased without a reset flag.
    CounterRegression {
        /// Which counter.
        counter: CounterName,
        /// Where, ns.
        at_elapsed_ns: u64,
        /// The value before.
        previous_value: u64,
        /// The lower value.
        value: u64,
    },
    /// The run window ends before it starts.
    InvalidRunWindow {
        /// Start, ns.
        start_elapsed_ns: u64,
        /// End, ns.
        end_elapsed_ns: u64,
    },
    /// An input series cannot be used.
    InvalidSeries {
        /// Kind of series.
        source_kind: SourceKind,
        /// Device key or counter name.
        source: String,
        /// What is wrong.
        problem: SeriesProblem,
    },
}

impl WithholdReason {
    /// The snake_case reason (the serialized `reason` tag).
    pub fn label(&self) -> &'static str {
        match self {
            WithholdReason::NoAnchor => "no_anchor",
            WithholdReason::NoStepFile => "no_step_file",
            WithholdReason::NoSteps => "no_steps",
            WithholdReason::NoValidSteps => "no_valid_steps",
            WithholdReason::CounterRegression { .. } => "counter_regression",
            WithholdReason::InvalidRunWindow { .. } => "invalid_run_window",
            WithholdReason::InvalidSeries { .. } => "invalid_series",
        }
    }
}

/// A trajectory whose metrics are withheld, with every reason found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WithheldTrajectory {
    /// Trajectory label of the markers, `null` when none.
    pub trajectory: Option<String>,
    /// Every reason found (at least one).
    pub reasons: Vec<WithholdReason>,
    /// Number of markers supplied for this trajectory.
    pub markers: u64,
    /// Steps that would have been dropped (empty when windows could not be computed).
    pub dropped_steps: Vec<DroppedStep>,
    /// The concurrency condition.
    pub concurrency: ConcurrencyCondition,
}

/// The typed result of attributing one trajectory, serialized with a `status` tag:
/// `attributed` (with `T`: the join's [`TrajectoryMetrics`], or the report's
/// [`TrajectoryAttribution`] whose steps sit in the trajectory's own steps) or `withheld`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum AttributionOutcome<T> {
    /// Figures computed.
    Attributed(Box<T>),
    /// Figures withheld, with the reasons.
    Withheld(WithheldTrajectory),
}

/// The join's outcome for one trajectory (steps inside).
pub type TrajectoryOutcome = AttributionOutcome<TrajectoryMetrics>;

impl<T> AttributionOutcome<T> {
    /// The figures when attributed.
    pub fn metrics(&self) -> Option<&T> {
        match self {
            AttributionOutcome::Attributed(m) => Some(m),
            AttributionOutcome::Withheld(_) => None,
        }
    }

    /// The withholding record when withheld.
    pub fn withheld(&self) -> Option<&WithheldTrajectory> {
        match self {
            AttributionOutcome::Attributed(_) => None,
            AttributionOutcome::Withheld(w) => Some(w),
        }
    }
}

impl AttributionOutcome<TrajectoryAttribution> {
    /// The concurrency condition either way.
    pub fn concurrency(&self) -> &ConcurrencyCondition {
        match self {
            AttributionOutcome::Attributed(m) => &m.concurrency,
            AttributionOutcome::Withheld(w) => &w.concurrency,
        }
    }
}

impl AttributionOutcome<TrajectoryMetrics> {
    /// The trajectory's label either way.
    pub fn trajectory(&self) -> Option<&String> {
        match self {
            AttributionOutcome::Attributed(m) => m.trajectory.as_ref(),
            AttributionOutcome::Withheld(w) => w.trajectory.as_ref(),
        }
    }

    /// The report's form: the totals, without the steps (which go into the trajectory's
    /// own [`super::StepReport`]s).
    pub fn without_steps(&self) -> AttributionOutcome<TrajectoryAttribution> {
        match self {
            AttributionOutcome::Attributed(m) => {
                AttributionOutcome::Attributed(Box::new(m.totals.clone()))
            }
            AttributionOutcome::Withheld(w) => AttributionOutcome::Withheld(w.clone()),
        }
    }
}

/// Attribution of every trajectory of one run (the join's result; the offline
/// `trajectory --out` file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunAttribution {
    /// The concurrency the caller declared.
    pub declared_max_trajectories_in_flight: u32,
    /// The most trajectories whose marker spans overlap in time.
    pub observed_max_trajectories_in_flight: u32,
    /// The condition applied (the larger of the two), with both figures.
    pub concurrency: ConcurrencyCondition,
    /// One outcome per trajectory, in order of first marker.
    pub trajectories: Vec<TrajectoryOutcome>,
}

/// One join of a run: the sequential jobs' (one trajectory in flight), or one load point's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttributionGroup {
    /// `sequential jobs`, or `suite::job · concurrency 4`.
    pub group: String,
    /// Trajectories declared in flight.
    pub declared_max_trajectories_in_flight: u32,
    /// Trajectories observed in flight (marker overlap).
    pub observed_max_trajectories_in_flight: u32,
    /// The group's condition and statement.
    pub concurrency: ConcurrencyCondition,
    /// The trajectories joined that `report.json` keeps, in order (ids of
    /// `jobs[].trajectories[]`): every one for the sequential jobs, the first for a load
    /// point (its other units are unit lines of `requests.jsonl`).
    pub trajectories: Vec<String>,
    /// How many trajectories the join took (absent in reports written before it was
    /// added: `trajectories` then names every one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub trajectories_joined: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `report.json` → `attribution`: the run's condition (the largest of its groups) and each
/// join; the per-trajectory outcomes are in `jobs[].trajectories[].attribution`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunAttributionSummary {
    /// The largest concurrency any group declared.
    pub declared_max_trajectories_in_flight: u32,
    /// The largest overlap any group's markers showed.
    pub observed_max_trajectories_in_flight: u32,
    /// The run's condition (statement printed once under the tables).
    pub concurrency: ConcurrencyCondition,
    /// Each join, in run order.
    pub groups: Vec<AttributionGroup>,
    /// The whole measured window's energy, mJ, by the join's integral (the run's energy
    /// line: all steps + unattributed = whole run). Each job's trajectories are joined
    /// when the job ends, so their own `whole_run_energy_mj` covers the run only up to
    /// that instant; this figure is the run's. `null` without one (and in reports written
    /// before it existed).
    #[serde(default)]
    pub whole_run_energy_mj: Option<u64>,
}

#[cfg(test)]
mod tests {

    /// The three conditions of the counter rule, each failed on its own.
    #[test]
    fn counter_deltas_are_a_steps_own_only_with_a_scrape_on_each_side() {
        let ms = 1_000_000;
        let sc = |sent: u64, answered: u64| ScrapeSpan {
            sent_ns: sent * ms,
            answered_ns: answered * ms,
        };
        // Scrapes every 100 ms, each answered 5 ms after it was sent.
        let scrapes: Vec<ScrapeSpan> = (0..20).map(|k| sc(100 * k, 100 * k + 5)).collect();
        let step = |start: u64, ft: u64, end: u64| CountedStep {
            start_ns: start * ms,
            first_token_ns: Some(ft * ms),
            end_ns: end * ms,
        };
        // An earlier request at 150 ms, scraped at 200 ms; this step 310..420, first
        // token 350, the 400 ms scrape (answered 405) in its tail.
        let fts = [150 * ms, 350 * ms];
        assert_eq!(
            counters_low_confidence(step(310, 350, 420), &scrapes, &fts),
            None
        );
        // (1) a tail that no scrape sent after the first token was answered within.
        let why = counters_low_confidence(step(310, 350, 404), &scrapes, &fts).unwrap();
        assert!(why.contains("54.0 ms later"), "{why}");
        // A tail under one period can still hold a scrape: then the counts are its own.
        assert_eq!(
            counters_low_confidence(step(310, 395, 420), &scrapes, &[150 * ms, 395 * ms]),
            None
        );
        // (2) the baseline (answered 205 ms) was sent before the earlier first token 250.
        let why =
            counters_low_confidence(step(260, 350, 420), &scrapes, &[250 * ms, 350 * ms]).unwrap();
        assert!(why.contains("10.0 ms before this step began"), "{why}");
        // (3) another request's first token inside the step.
        let why = counters_low_confidence(
            step(310, 350, 420),
            &scrapes,
            &[150 * ms, 340 * ms, 350 * ms],
        )
        .unwrap();
        assert!(why.starts_with("1 other request(s)"), "{why}");
        // The run's first request needs no baseline.
        assert_eq!(
            counters_low_confidence(step(10, 50, 120), &scrapes, &[50 * ms]),
            None
        );
        let none = CountedStep {
            first_token_ns: None,
            ..step(10, 50, 120)
        };
        assert!(
            counters_low_confidence(none, &scrapes, &[])
                .unwrap()
                .contains("no first token")
        );
    }
    use super::*;

    #[test]
    fn withhold_labels_are_the_serde_tags() {
        for r in [
            WithholdReason::NoAnchor,
            WithholdReason::NoValidSteps,
            WithholdReason::InvalidRunWindow {
                start_elapsed_ns: 2,
                end_elapsed_ns: 1,
            },
        ] {
            let v = serde_json::to_value(&r).unwrap();
            assert_eq!(v["reason"], r.label());
        }
    }

    #[test]
    fn in_flight_phrase_never_states_a_declared_bound_as_observed() {
        assert_eq!(in_flight_phrase(1, Some(1)), "1 trajectory in flight");
        assert_eq!(in_flight_phrase(4, Some(4)), "4 trajectories in flight");
        assert_eq!(
            in_flight_phrase(4, Some(1)),
            "up to 4 trajectories declared in flight (1 observed)"
        );
        assert_eq!(
            in_flight_phrase(4_000_000_000, Some(1)),
            "up to 4000000000 trajectories declared in flight (1 observed)"
        );
        assert_eq!(
            in_flight_phrase(1, Some(2)),
            "2 trajectories observed in flight (1 declared)"
        );
        assert_eq!(in_flight_phrase(1, None), "1 trajectory declared in flight");
        assert_eq!(
            in_flight_phrase(4, None),
            "up to 4 trajectories declared in flight"
        );
    }
}
