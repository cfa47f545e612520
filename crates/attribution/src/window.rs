//! Device energy over one window: the one integrator behind every window figure of a run
//! (a step's, a load window's, a job's).
//! Rule: docs/measurement.md "Energy over a window".
//!
//! Both parts are the step join's own indexes ([`PowerIndex`], [`EnergyCounterIndex`]), so
//! a load window and a step window over the same samples give the same energy:
//!
//! - the **counter** figure is the sum of the counter's increments between the last sample
//!   at or before the window start (the first inside it when the window opens before any
//!   sample) and the last sample at or before the window end; an interval where the counter
//!   decreased (a new epoch) is filled with the power trapezoid over it, and when it cannot
//!   be filled there is no counter figure;
//! - the **trapezoid** is the integer trapezoid of power over the segments fully inside the
//!   window, floored to mJ once; none when no segment lies inside.

use inferscope_model::load::WindowMethod;

use super::index::{EnergyCounterIndex, PowerIndex, doubled_to_mj};
use super::input::{EnergyCounterSample, PowerBasis, PowerSample};

/// One device's energy over `[start_ns, end_ns]`, mJ, with the method: the counter figure
/// when the device has an energy counter that resolves the window, else the power
/// trapezoid; `None` when neither does. Both series must be sorted by `elapsed_ns` (an
/// unsorted series gives `None`, as it withholds a step), and `start_ns ≤ end_ns`.
pub fn device_window_energy(
    power: &[PowerSample],
    counter: &[EnergyCounterSample],
    start_ns: u64,
    end_ns: u64,
) -> Option<(u64, WindowMethod)> {
    let sorted_power = power.windows(2).all(|w| w[0].elapsed_ns <= w[1].elapsed_ns);
    let sorted_counter = counter
        .windows(2)
        .all(|w| w[0].elapsed_ns <= w[1].elapsed_ns);
    if start_ns > end_ns || !sorted_power || !sorted_counter {
        return None;
    }
    // The basis label plays no part in the integral.
    let power = (!power.is_empty()).then(|| PowerIndex::new("", PowerBasis::Instant, power));
    if !counter.is_empty() {
        let c = EnergyCounterIndex::new("", counter, power.as_ref());
        if let Some(mj) = c.window(start_ns, end_ns, &mut 0).energy_mj {
            return Some((mj, WindowMethod::Counter));
        }
    }
    let w = power?.window(start_ns, end_ns, &mut 0);
    (w.covered_ns > 0).then(|| (doubled_to_mj(w.doubled), WindowMethod::Trapezoid))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    fn p(t: u64, mw: u64) -> PowerSample {
        PowerSample {
            elapsed_ns: t,
            power_mw: mw,
        }
    }

    fn c(t: u64, mj: u64) -> EnergyCounterSample {
        EnergyCounterSample {
            elapsed_ns: t,
            energy_mj: mj,
        }
    }

    #[test]
    fn counter_then_trapezoid() {
        let power = [p(0, 1000), p(S, 3000), p(2 * S, 3000)];
        let counter = [c(0, 10), c(S, 1010), c(2 * S, 2010)];
        assert_eq!(
            device_window_energy(&power, &counter, 0, 2 * S),
            Some((2000, WindowMethod::Counter))
        );
        // (1000+3000)/2 mW over 1 s = 2000 mJ, then 3000 mJ.
        assert_eq!(
            device_window_energy(&power, &[], 0, 2 * S),
            Some((5000, WindowMethod::Trapezoid))
        );
        assert_eq!(device_window_energy(&power, &[], 10, 20), None);
    }

    #[test]
    fn the_counter_window_ends_at_the_last_sample_at_or_before_its_end() {
        let counter = [c(0, 0), c(S, 1000), c(2 * S, 2000)];
        assert_eq!(
            device_window_energy(&[], &counter, 0, 2 * S - 1),
            Some((1000, WindowMethod::Counter))
        );
        assert_eq!(
            device_window_energy(&[], &counter, S / 2, 2 * S),
            Some((2000, WindowMethod::Counter))
        );
    }

    #[test]
    fn a_counter_reset_is_filled_from_power_or_falls_back_to_the_trapezoid() {
        let power = [p(0, 2000), p(S, 2000), p(2 * S, 2000)];
        let counter = [c(0, 5000), c(S, 7000), c(2 * S, 100)];
        // The decrease is bridged by the power integral over its interval (2000 mJ).
        assert_eq!(
            device_window_energy(&power, &counter, 0, 2 * S),
            Some((4000, WindowMethod::Counter))
        );
        // Without power to bridge it there is no counter figure and no trapezoid.
        assert_eq!(device_window_energy(&[], &counter, 0, 2 * S), None);
    }

    #[test]
    fn unsorted_series_or_reversed_windows_give_none() {
        let power = [p(S, 1000), p(0, 1000)];
        assert_eq!(device_window_energy(&power, &[], 0, S), None);
        assert_eq!(device_window_energy(&[p(0, 1), p(S, 1)], &[], S, 0), None);
    }
}
