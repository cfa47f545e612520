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
//!   decreased (a new epoch) or rose above the plausible power (a jump) is filled with the
//!   power trapezoid over it, and when it cannot be filled there is no counter figure;
//! - the **trapezoid** is the integer trapezoid of power over the segments fully inside the
//!   window, floored to mJ once; none when no segment lies inside.

use inferscope_model::load::WindowMethod;

use super::index::{EnergyCounterIndex, PowerIndex, doubled_to_mj};
use super::input::{EnergyCounterSample, PowerBasis, PowerSample};

/// One device's energy over one window, with how it was obtained and what the counter
/// met on the way (the figure of [`device_window_energy`], and its notes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowEnergy {
    /// The energy, mJ, and its method; `None` when neither the counter nor power resolves
    /// the window.
    pub energy: Option<(u64, WindowMethod)>,
    /// Counter intervals in the bracket where the counter decreased (new epochs).
    pub counter_resets: u64,
    /// Counter intervals in the bracket whose increase was an implausible jump.
    pub counter_jumps: u64,
    /// Counter intervals measured by the counter's own increment (0 for a trapezoid figure).
    pub intervals_counter: u64,
    /// Intervals measured by power: reset and jump intervals filled from power under a
    /// counter figure, or the power segments of a trapezoid figure.
    pub intervals_power: u64,
    /// Ns the figure covers: from the first to the last sample it reads.
    pub covered_ns: u64,
}

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
    window_energy(power, counter, start_ns, end_ns).energy
}

/// [`device_window_energy`] with the counter's resets and jumps over the window and the
/// intervals each method measured: one pass of the same integral.
pub fn window_energy(
    power: &[PowerSample],
    counter: &[EnergyCounterSample],
    start_ns: u64,
    end_ns: u64,
) -> WindowEnergy {
    let sorted_power = power.windows(2).all(|w| w[0].elapsed_ns <= w[1].elapsed_ns);
    let sorted_counter = counter
        .windows(2)
        .all(|w| w[0].elapsed_ns <= w[1].elapsed_ns);
    let mut out = WindowEnergy::default();
    if start_ns > end_ns || !sorted_power || !sorted_counter {
        return out;
    }
    // The basis label plays no part in the integral.
    let power = (!power.is_empty()).then(|| PowerIndex::new("", PowerBasis::Instant, power));
    if !counter.is_empty() {
        let c =
            EnergyCounterIndex::new("", counter, power.as_ref()).window(start_ns, end_ns, &mut 0);
        out.counter_resets = c.resets;
        out.counter_jumps = c.jumps;
        if let Some(mj) = c.energy_mj {
            out.energy = Some((mj, WindowMethod::Counter));
            out.intervals_counter = c.counted;
            out.intervals_power = c.resets + c.jumps;
            out.covered_ns = c.bracket_ns;
            return out;
        }
    }
    if let Some(w) = power.map(|p| p.window(start_ns, end_ns, &mut 0))
        && w.covered_ns > 0
    {
        out.energy = Some((doubled_to_mj(w.doubled), WindowMethod::Trapezoid));
        out.intervals_power = w.samples_in_window.saturating_sub(1);
        out.covered_ns = w.covered_ns;
    }
    out
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
    fn an_implausible_jump_is_filled_from_power_like_a_reset() {
        let power = [p(0, 2000), p(S, 2000), p(2 * S, 2000)];
        // 10¹² mJ in one second: far above 5 kW (allowed: 5 kW over 1 s + 1 s = 10⁷ mJ).
        let counter = [c(0, 0), c(S, 1000), c(2 * S, 1_000_000_000_000)];
        // 1000 mJ by the counter, then the jump's interval by the trapezoid (2000 mJ).
        let w = window_energy(&power, &counter, 0, 2 * S);
        assert_eq!(w.energy, Some((3000, WindowMethod::Counter)));
        assert_eq!((w.counter_jumps, w.counter_resets), (1, 0));
        assert_eq!((w.intervals_counter, w.intervals_power), (1, 1));
        assert_eq!(w.covered_ns, 2 * S);
        // A window that ends before the jump never sees it.
        assert_eq!(
            window_energy(&power, &counter, 0, S),
            WindowEnergy {
                energy: Some((1000, WindowMethod::Counter)),
                intervals_counter: 1,
                covered_ns: S,
                ..WindowEnergy::default()
            }
        );
        // Without power the jump cannot be filled: no counter figure, and no trapezoid.
        assert_eq!(device_window_energy(&[], &counter, 0, 2 * S), None);
        // At the plausible bound (5 kW over 1 s plus 1 s of slack) it is still a delta.
        let edge = [c(0, 0), c(S, 10_000_000)];
        assert_eq!(
            device_window_energy(&[], &edge, 0, S),
            Some((10_000_000, WindowMethod::Counter))
        );
        let over = [c(0, 0), c(S, 10_000_001)];
        assert_eq!(device_window_energy(&[], &over, 0, S), None);
    }

    #[test]
    fn unsorted_series_or_reversed_windows_give_none() {
        let power = [p(S, 1000), p(0, 1000)];
        assert_eq!(device_window_energy(&power, &[], 0, S), None);
        assert_eq!(device_window_energy(&[p(0, 1), p(S, 1)], &[], S, 0), None);
    }
}
