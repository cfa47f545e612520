//! The whole run's energy of a device is the one window integral over the device's first to
//! last sample: the same figure a step window or a load window over that span gives
//! (docs/measurement.md "Energy over a window").

use inferscope_attribution::{EnergyCounterSample, PowerSample, device_window_energy};
use inferscope_telemetry::{EnergyPoint, whole_run_energy};
use proptest::prelude::*;

#[path = "../../attribution/tests/support/step_join.rs"]
mod step_join;
use step_join::step_device_energy;

const RUN_END_NS: u64 = 100_000_000_000;

/// An increase no device can make in the gaps here (at most 2 s): 5 kW over 3 s is
/// 1.5·10⁷ mJ.
const JUMP_MJ: u64 = 1_000_000_000_000;

/// One sample of a device: gap since the previous one (ns), power (maybe missing), counter
/// step (maybe missing), and whether the counter restarts (`reset`) or jumps there.
type Raw = (u64, Option<u64>, Option<u64>, bool, bool);

fn point() -> impl Strategy<Value = Raw> {
    (
        0u64..2_000_000_000,
        proptest::option::weighted(0.8, 0u64..1_000_000),
        proptest::option::weighted(0.7, 0u64..2_000_000),
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.1),
    )
}

fn timeline(raw: &[Raw]) -> Vec<EnergyPoint> {
    let (mut t, mut counter) = (0u64, 1_000u64);
    let mut points = Vec::new();
    for &(gap, power_mw, step, reset, jump) in raw {
        t = (t + gap).min(RUN_END_NS);
        let energy_mj = step.map(|s| {
            counter = match (reset, jump) {
                (true, _) => s,
                (false, true) => counter + JUMP_MJ + s,
                (false, false) => counter + s,
            };
            counter
        });
        points.push(EnergyPoint {
            elapsed_ns: t,
            power_mw,
            energy_mj,
        });
    }
    points
}

fn series(points: &[EnergyPoint]) -> (Vec<PowerSample>, Vec<EnergyCounterSample>) {
    let power = points
        .iter()
        .filter_map(|p| {
            Some(PowerSample {
                elapsed_ns: p.elapsed_ns,
                power_mw: p.power_mw?,
            })
        })
        .collect();
    let counter = points
        .iter()
        .filter_map(|p| {
            Some(EnergyCounterSample {
                elapsed_ns: p.elapsed_ns,
                energy_mj: p.energy_mj?,
            })
        })
        .collect();
    (power, counter)
}

/// The step join's figure for one step over `[start, end]` on one device: its counter
/// energy when it has one, else its trapezoid; `None` when the join gives no step figure.
fn step_figure(
    power: &[PowerSample],
    energy: &[EnergyCounterSample],
    start: u64,
    end: u64,
) -> Option<Option<u64>> {
    let (counter, trapezoid) = step_device_energy(power, energy, start, end, RUN_END_NS)?;
    Some(counter.or(trapezoid))
}

proptest! {
    #[test]
    fn the_whole_run_figure_is_the_window_integral_over_the_sampled_span(
        raw in proptest::collection::vec(point(), 2..40),
    ) {
        let points = timeline(&raw);
        let (power, counter) = series(&points);
        let (first, last) = (points[0].elapsed_ns, points[points.len() - 1].elapsed_ns);
        let whole = whole_run_energy(&points);
        let window = device_window_energy(&power, &counter, first, last).map(|(mj, _)| mj);
        prop_assert_eq!(whole.energy_mj, window);
        // A step (or load) window over the same span reads the same samples.
        if first < last && let Some(step) = step_figure(&power, &counter, first, last) {
            prop_assert_eq!(whole.energy_mj, step);
        }
        // The notes count what the counter met across the span, filled or not.
        let resets = counter.windows(2).filter(|w| w[1].energy_mj < w[0].energy_mj).count();
        prop_assert_eq!(whole.counter_resets as usize, resets);
        let jumps = counter
            .windows(2)
            .filter(|w| w[1].energy_mj >= w[0].energy_mj + JUMP_MJ)
            .count();
        prop_assert_eq!(whole.counter_anomalies as usize, jumps);
    }
}
