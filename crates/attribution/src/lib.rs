//! Trajectory-level energy and prefix-cache attribution (docs/measurement.md).
//! Pure logic, no I/O (a marker file is read from disk
//! by the main crate's `run_dir::read_step_markers`). Its output types are the report model's
//! ([`inferscope_model::attribution`]).
//!
//! # The join
//! A driver writes step markers (unix-epoch ns, [`StepMarker`]; docs/artifacts.md); each window maps
//! onto the run's timeline as `t − reference_instant_unix_ns` (`elapsed_ns`, docs/samples.md). Every
//! series is then sliced by binary search over prefix sums built once per run
//! ([`Attributor`]):
//!
//! - **Energy** is the integer trapezoid of power over the inter-sample segments *fully
//!   inside* a step window: Σ (p_k + p_{k+1})·(t_{k+1} − t_k) in doubled mW·ns accumulated
//!   as `u128`, floored to mJ once per step and device. A segment straddling a boundary
//!   belongs to no step and lands in `unattributed_energy_mj`.
//! - **Reconciliation** (exact, asserted in tests): per device and in total,
//!   `whole_run_energy_mj == Σ step energy_mj + unattributed_energy_mj`, where the whole run
//!   is the same trapezoid over the run window, floored once, and `unattributed` is
//!   *defined* as whole − Σ floored steps (it carries the < 1 mJ flooring remainder of each
//!   step besides the energy outside every kept window).
//! - **Counter deltas** use the corrected baseline: the last sample at or before the window
//!   start (the first sample inside the window only when the window opens before any
//!   sample), up to the last sample at or before the window end; `null` when the counter was
//!   never scraped or the window resolves no interval, `Some(0)` when scraped and unmoved.
//!   A flagged reset counts the value since restart; an unflagged decrease withholds.
//! - **Exact usage** from each response sits beside the counter deltas; neither replaces
//!   the other.
//! - **Counter-basis energy** (NVML energy counter, when sampled) is given per step and per
//!   run beside the trapezoid, never mixed into the reconciliation; its run-level ratio to
//!   the trapezoid is a quality check (field cases C19, C20).
//! - **Several devices**: a step's energy is the sum over devices only when every device
//!   with a power series has a segment inside the window; otherwise it is withheld
//!   (`null`; each device's own figure stays in `devices[]`), as the counter sum is. The
//!   trajectory totals sum the per-device step figures, so the reconciliation holds.
//! - **Basis labels** (one rule, [`EnergyBasis::of`]): `apportioned` when more than one
//!   trajectory was declared or observed in flight (whatever the power source), else
//!   `simulated` on the simulator's power model, else `measured`; `null` without a power
//!   source. The statement carried in the output names the declared and the observed
//!   figure; `low_confidence` when 1 s averaged power covers a shorter step (C20).
//! - **Drops and flags**: steps outside the run, overlapping a neighbour, ending before they
//!   start, or sharing a step id are dropped and named; markers that go backwards in file
//!   order are flagged, never reordered (C22).
//! - **Withholding** is typed ([`TrajectoryOutcome::Withheld`] with [`WithholdReason`]s):
//!   no anchor, no step file, no steps, no valid step, a counter regression without a
//!   reset, or unusable input series.

mod attribute;
mod index;
mod input;
mod markers;
mod metrics;
mod table;
mod window;

pub use attribute::{
    APPORTIONED_STATEMENT, Attributor, CONTROLLED_CONCURRENCY_STATEMENT, StepKey, attribute,
    attribute_run, attribute_run_observed, concurrency_condition,
    observed_max_trajectories_in_flight,
};
pub use index::implausible_counter_increase;
pub use input::{
    AVERAGED_POWER_WINDOW_NS, AttributionInput, Concurrency, CounterName, CounterPoint,
    CounterSeries, EnergyCounterSample, EnergyCounterSeries, MAX_PLAUSIBLE_POWER_MW, MAX_POWER_MW,
    PowerBasis, PowerSample, PowerSeries, RunWindow, StepUsage,
};
pub use markers::{
    MAX_MARKER_ERRORS, MarkerFile, MarkerFileError, MarkerLineError, StepKind, StepMarker,
    parse_marker_file, parse_step_markers, step_markers_to_jsonl, write_step_markers,
};
pub use metrics::{
    AttributionOutcome, ConcurrencyCondition, DeviceRunEnergy, DropReason, DroppedStep,
    EnergyBasis, MarkerFlag, MarkerIssue, PowerBasisLabel, PowerSource, RunAttribution,
    SeriesProblem, SourceKind, SourceSamples, StepAttribution, StepDeviceEnergy, StepMetrics,
    TrajectoryAttribution, TrajectoryMetrics, TrajectoryOutcome, WithheldTrajectory,
    WithholdReason, in_flight_phrase,
};
pub use table::{ABSENT, align_rows, render_outcome, render_step_table, render_withheld};
pub use window::{WindowEnergy, device_window_energy, window_energy};
