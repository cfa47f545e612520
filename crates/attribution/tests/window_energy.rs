//! A step window and a load window over the same samples give the same energy: both are
//! [`device_window_energy`]'s integral (docs/measurement.md "Energy over a window").

use inferscope_attribution::{EnergyCounterSample, PowerSample, device_window_energy};
use inferscope_model::load::WindowMethod;
use proptest::prelude::*;

#[path = "support/step_join.rs"]
mod step_join;
use step_join::step_device_energy;

const RUN_END_NS: u64 = 10_000;

/// One sampler reading: time step since the previous one, power (maybe missing), counter
/// step (maybe missing; a `reset` starts the counter again from the given value, a `jump`
/// adds an implausible increase: far above 5 kW over any gap here).
#[derive(Debug, Clone)]
struct Reading {
    gap_ns: u64,
    power_mw: Option<u64>,
    counter_step_mj: Option<u64>,
    reset: bool,
    jump: bool,
}

/// An increase no device can make in under a second: 5 kW for 2 s is 10⁷ mJ.
const JUMP_MJ: u64 = 1_000_000_000_000;

fn reading() -> impl Strategy<Value = Reading> {
    (
        0u64..700,
        proptest::option::weighted(0.8, 0u64..1_000_000),
        proptest::option::weighted(0.7, 0u64..5_000),
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(gap_ns, power_mw, counter_step_mj, reset, jump)| Reading {
            gap_ns,
            power_mw,
            counter_step_mj,
            reset,
            jump,
        })
}

fn series(readings: &[Reading]) -> (Vec<PowerSample>, Vec<EnergyCounterSample>) {
    let (mut t, mut counter) = (0u64, 1_000u64);
    let (mut power, mut energy) = (Vec::new(), Vec::new());
    for r in readings {
        t = (t + r.gap_ns).min(RUN_END_NS);
        if let Some(mw) = r.power_mw {
            power.push(PowerSample {
                elapsed_ns: t,
                power_mw: mw,
            });
        }
        if let Some(step) = r.counter_step_mj {
            counter = match (r.reset, r.jump) {
                (true, _) => step,
                (false, true) => counter + JUMP_MJ + step,
                (false, false) => counter + step,
            };
            energy.push(EnergyCounterSample {
                elapsed_ns: t,
                energy_mj: counter,
            });
        }
    }
    (power, energy)
}

/// The step join's figure for one step over `[start, end]` on one device: its counter
/// energy when it has one, else its trapezoid (the order a load window takes them in).
fn step_window(
    power: &[PowerSample],
    energy: &[EnergyCounterSample],
    start: u64,
    end: u64,
) -> Option<Option<(u64, WindowMethod)>> {
    let (counter, trapezoid) = step_device_energy(power, energy, start, end, RUN_END_NS)?;
    Some(
        counter
            .map(|mj| (mj, WindowMethod::Counter))
            .or(trapezoid.map(|mj| (mj, WindowMethod::Trapezoid))),
    )
}

proptest! {
    #[test]
    fn a_step_window_and_a_load_window_give_the_same_energy(
        readings in proptest::collection::vec(reading(), 0..40),
        a in 0u64..=RUN_END_NS,
        b in 0u64..=RUN_END_NS,
    ) {
        let (start, end) = (a.min(b), a.max(b));
        prop_assume!(start < end);
        let (power, energy) = series(&readings);
        prop_assume!(!power.is_empty() || !energy.is_empty());
        let step = step_window(&power, &energy, start, end);
        prop_assume!(step.is_some());
        prop_assert_eq!(
            step.unwrap(),
            device_window_energy(&power, &energy, start, end)
        );
    }
}
