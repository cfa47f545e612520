//! One step through the step join, for the property tests that compare its figure with
//! another window's (this crate's `window_energy`, and telemetry's `whole_run_energy`,
//! which includes this file by path).

use std::collections::BTreeMap;

use inferscope_attribution::{
    AttributionInput, Concurrency, EnergyCounterSample, EnergyCounterSeries, PowerBasis,
    PowerSample, PowerSeries, RunWindow, StepKind, StepMarker, attribute_run,
};

/// The reference instant the samples are on.
pub const ANCHOR_UNIX_NS: u64 = 1_700_000_000_000_000_000;

/// The step join's device figures for one tool step over `[start, end]` on one device
/// (`gpu0`) in a run window `[0, run_end_ns]`: `(counter_energy_mj, energy_mj)`, the
/// counter figure and the trapezoid; `None` when the join gives no step.
pub fn step_device_energy(
    power: &[PowerSample],
    energy: &[EnergyCounterSample],
    start: u64,
    end: u64,
    run_end_ns: u64,
) -> Option<(Option<u64>, Option<u64>)> {
    let input = AttributionInput {
        reference_instant_unix_ns: Some(ANCHOR_UNIX_NS),
        run_window: RunWindow {
            start_elapsed_ns: 0,
            end_elapsed_ns: run_end_ns,
        },
        power: vec![PowerSeries {
            device: "gpu0".into(),
            basis: PowerBasis::Instant,
            samples: power.to_vec(),
        }],
        energy_counters: vec![EnergyCounterSeries {
            device: "gpu0".into(),
            samples: energy.to_vec(),
        }],
        counters: Vec::new(),
        concurrency: Concurrency {
            max_trajectories_in_flight: 1,
        },
    };
    let marker = StepMarker::at(
        "t",
        0,
        StepKind::Tool,
        ANCHOR_UNIX_NS + start,
        ANCHOR_UNIX_NS + end,
        "tool",
    );
    let run = attribute_run(&input, Some(&[marker]), &BTreeMap::new());
    let metrics = run.trajectories.first()?.metrics()?;
    let device = metrics.steps.first()?.devices.first()?;
    Some((device.counter_energy_mj, device.energy_mj))
}
