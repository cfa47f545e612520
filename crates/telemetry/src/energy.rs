//! Whole-run energy of one power device from its sampled timeline (pure; field case C19).
//!
//! The figure is the one window integral of the run (`inferscope_attribution::window_energy`,
//! docs/measurement.md "Energy over a window") over the device's sampled span, its first
//! sample to its last: the energy counter's increments across that span, with every interval
//! where the counter decreased (driver reload, C19 device 2) or jumped implausibly (zeus
//! #113) filled with the power trapezoid over it; else, when the counter cannot give the
//! figure, the power trapezoid over the span. The resets and jumps are counted as notes.
//!
//! A device with neither power nor counter anywhere gets `energy_mj: None` with reason
//! `not_supported` — never 0. Source: docs/telemetry.md "Whole-run energy of a device".

use inferscope_attribution::{
    EnergyCounterSample, PowerSample, WindowEnergy, implausible_counter_increase, window_energy,
};
use inferscope_model::load::WindowMethod;
use serde::{Deserialize, Serialize};

/// Power above which a counter increase is an implausible jump, mW: the window integral's.
pub use inferscope_attribution::MAX_PLAUSIBLE_POWER_MW;

/// One point of a device timeline as the energy computation needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EnergyPoint {
    /// Sample time, ns from the run's reference instant.
    pub elapsed_ns: u64,
    /// Power reading, mW.
    pub power_mw: Option<u64>,
    /// Cumulative energy counter reading, mJ.
    pub energy_mj: Option<u64>,
}

/// How a whole-run energy figure was obtained: the report model's.
pub use inferscope_model::telemetry::EnergyMethod;

/// Whole-run energy of one device. Serialized into `samples/sources.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EnergySummary {
    /// Energy between the first and last sample, mJ; `None` when it cannot be known.
    pub energy_mj: Option<u64>,
    /// Method; `None` with `energy_mj`.
    pub energy_method: Option<EnergyMethod>,
    /// Why `energy_mj` is `None`: `"not_supported"` (no power and no counter in any sample),
    /// `"too_few_samples"`, `"no_valid_intervals"` (neither the counter, every reset and jump
    /// filled from power, nor two power samples resolve the span). Callers may replace it
    /// with the driver's own reason.
    pub reason: Option<String>,
    /// `true` when the figure covers less than the sampled span (its first counter or power
    /// sample comes after the device's first sample, or its last before the last), so
    /// `energy_mj` is a lower bound.
    pub lower_bound: bool,
    /// Intervals between consecutive counter readings where the energy counter decreased
    /// (new epoch).
    pub counter_resets: u32,
    /// Intervals between consecutive counter readings whose increase was implausible (above
    /// [`MAX_PLAUSIBLE_POWER_MW`]).
    pub counter_anomalies: u32,
    /// Number of intervals (samples − 1).
    pub intervals: u32,
    /// Intervals (between consecutive counter readings) measured by the counter's increment.
    pub intervals_counter: u32,
    /// Intervals measured by power: the counter's reset and jump intervals filled from power,
    /// or every power segment when the figure is the trapezoid.
    pub intervals_power: u32,
    /// Intervals (samples − 1) outside the span the figure covers.
    pub intervals_missing: u32,
    /// Share of the sampled span (first → last sample) whose intervals have power at both ends,
    /// in `[0, 1]`; `None` with fewer than two samples or a zero-length span. C19 device 1: 0.
    pub power_coverage: Option<f64>,
    /// Sum of the counter's plausible increments across the span alone (no power fill), mJ
    /// (quality check).
    pub counter_mj: Option<u64>,
    /// Trapezoid integral of power between consecutive power readings across the span, mJ,
    /// whatever the method used (for the counter/trapezoid ratio quality check).
    pub power_integral_mj: Option<u64>,
    /// One line per kind of fallback that happened (warned once, not per interval).
    pub warnings: Vec<String>,
}

/// The warnings of a summary, in their fixed order: power only (`power_only`: no counter
/// at all), counter resets and implausible jumps (filled from power, or why the counter was
/// given up), samples without the counter that its increment spans, a figure that misses
/// part of the span (a lower bound).
fn push_warnings(s: &mut EnergySummary, power_only: bool, missing_counter: bool, by_counter: bool) {
    if power_only {
        s.warnings
            .push("energy counter not available: whole-run energy from power integration".into());
    }
    let bridged = if by_counter {
        "those intervals use power integration"
    } else {
        "not all could be filled from power, so the counter gives no figure"
    };
    if s.counter_resets > 0 {
        s.warnings.push(format!(
            "energy counter decreased {} time(s): new epoch; {bridged}",
            s.counter_resets
        ));
    }
    if s.counter_anomalies > 0 {
        s.warnings.push(format!(
            "energy counter jumped implausibly {} time(s): {bridged}",
            s.counter_anomalies
        ));
    }
    if missing_counter && by_counter {
        s.warnings
            .push("energy counter missing in some samples: its increment spans them".into());
    }
    if s.intervals_missing > 0 && s.energy_mj.is_some() {
        s.warnings.push(format!(
            "{} interval(s) outside the span the figure covers: energy is a lower bound",
            s.intervals_missing
        ));
    }
}

/// The device's readings as the window integral takes them: its power series and its
/// counter series, each the samples that carry that reading.
fn series(points: &[EnergyPoint]) -> (Vec<PowerSample>, Vec<EnergyCounterSample>) {
    let power = points
        .iter()
        .filter_map(|p| {
            p.power_mw.map(|power_mw| PowerSample {
                elapsed_ns: p.elapsed_ns,
                power_mw,
            })
        })
        .collect();
    let counter = points
        .iter()
        .filter_map(|p| {
            p.energy_mj.map(|energy_mj| EnergyCounterSample {
                elapsed_ns: p.elapsed_ns,
                energy_mj,
            })
        })
        .collect();
    (power, counter)
}

/// Share of the span `first → last sample` whose intervals have power at both ends, in
/// `[0, 1]`; `None` for a zero-length span.
fn power_coverage(points: &[EnergyPoint], span_ns: u64) -> Option<f64> {
    let covered: u128 = points
        .windows(2)
        .filter(|w| w[0].power_mw.is_some() && w[1].power_mw.is_some())
        .map(|w| u128::from(w[1].elapsed_ns.saturating_sub(w[0].elapsed_ns)))
        .sum();
    (span_ns > 0).then(|| (covered as f64 / span_ns as f64).clamp(0.0, 1.0))
}

/// The counter's plausible increments across its series alone, mJ (no power fill); `None`
/// when no interval has one.
fn counter_increments(counter: &[EnergyCounterSample]) -> Option<u64> {
    let deltas = counter.windows(2).filter_map(|w| {
        let d = w[1].energy_mj.checked_sub(w[0].energy_mj)?;
        let dt = w[1].elapsed_ns.saturating_sub(w[0].elapsed_ns);
        (!implausible_counter_increase(d, dt)).then_some(d)
    });
    deltas.fold(None, |acc: Option<u64>, d| {
        Some(acc.unwrap_or(0).saturating_add(d))
    })
}

/// Intervals of the device's timeline outside `[lo, hi]`, the span the figure covers.
fn intervals_outside(points: &[EnergyPoint], lo: u64, hi: u64) -> u32 {
    let n = points
        .windows(2)
        .filter(|w| {
            w[1].elapsed_ns <= lo && w[0].elapsed_ns < lo
                || w[0].elapsed_ns >= hi && w[1].elapsed_ns > hi
        })
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn count(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Computes the whole-run energy of one device from its samples in time order (C19): the
/// window integral over its first to its last sample. Device 0 (counter NotSupported, power
/// 100/200/200/100 W at 0/100/200/300 ms) → 50 000 mJ by `power_integration`; device 1
/// (nothing) → `None`, `not_supported`, coverage 0; device 2 (counter 5 000 000 → 4 000 mJ,
/// power 150 W twice, 100 ms) → 15 000 mJ, the reset interval filled from power. Pure.
pub fn whole_run_energy(points: &[EnergyPoint]) -> EnergySummary {
    let mut s = EnergySummary {
        energy_mj: None,
        energy_method: None,
        reason: None,
        lower_bound: false,
        counter_resets: 0,
        counter_anomalies: 0,
        intervals: count(points.len().saturating_sub(1) as u64),
        intervals_counter: 0,
        intervals_power: 0,
        intervals_missing: 0,
        power_coverage: None,
        counter_mj: None,
        power_integral_mj: None,
        warnings: Vec::new(),
    };
    let (power, counter) = series(points);
    let (first, last) = match (points.first(), points.last()) {
        (Some(a), Some(b)) => (a.elapsed_ns, b.elapsed_ns),
        _ => (0, 0),
    };
    let span = if points.len() >= 2 {
        last.saturating_sub(first)
    } else {
        0
    };
    if power.is_empty() && counter.is_empty() {
        s.reason = Some("not_supported".into());
        if span > 0 {
            s.power_coverage = Some(0.0);
        }
        return s;
    }
    if points.len() < 2 {
        s.reason = Some("too_few_samples".into());
        return s;
    }
    let w: WindowEnergy = window_energy(&power, &counter, first, last);
    s.counter_resets = count(w.counter_resets);
    s.counter_anomalies = count(w.counter_jumps);
    s.intervals_counter = count(w.intervals_counter);
    s.intervals_power = count(w.intervals_power);
    s.counter_mj = counter_increments(&counter);
    s.power_integral_mj = window_energy(&power, &[], first, last)
        .energy
        .map(|(mj, _)| mj);
    s.power_coverage = power_coverage(points, span);
    let by_counter = matches!(w.energy, Some((_, WindowMethod::Counter)));
    match w.energy {
        None => s.reason = Some("no_valid_intervals".into()),
        Some((mj, method)) => {
            s.energy_mj = Some(mj);
            s.energy_method = Some(match method {
                WindowMethod::Counter => match (w.intervals_counter > 0, w.intervals_power > 0) {
                    (true, true) => EnergyMethod::Mixed,
                    (false, true) => EnergyMethod::PowerIntegration,
                    _ => EnergyMethod::Counter,
                },
                // One device's window is never `mixed` (that is a sum over devices).
                WindowMethod::Trapezoid | WindowMethod::Mixed => EnergyMethod::PowerIntegration,
            });
            // The series the figure read covers its first to its last reading.
            let read = if by_counter {
                counter.iter().map(|c| c.elapsed_ns).collect::<Vec<_>>()
            } else {
                power.iter().map(|p| p.elapsed_ns).collect()
            };
            let (lo, hi) = (read[0], read[read.len() - 1]);
            s.intervals_missing = intervals_outside(points, lo, hi);
            s.lower_bound = lo > first || hi < last;
        }
    }
    let missing_counter = !counter.is_empty() && counter.len() < points.len();
    push_warnings(&mut s, counter.is_empty(), missing_counter, by_counter);
    s
}
