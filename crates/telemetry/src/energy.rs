//! Whole-run energy of one power device from its sampled timeline (pure; field case C19).
//!
//! Per interval between consecutive samples `i − 1 → i`:
//! - both samples carry the energy counter (mJ), it did not decrease and the delta is
//!   plausible → the counter delta (`counter`);
//! - otherwise, both carry power (mW) → the integer trapezoid `(p₀ + p₁) · Δt / 2`
//!   (`power_integration`); this is how a counter decrease (driver reload, C19 device 2) or an
//!   implausible jump (zeus #113) is bridged;
//! - otherwise the interval is missing; after a counter decrease the post-reset counter value
//!   is still a valid lower bound of the interval's energy and is added.
//!
//! The trapezoid part is accumulated in `u128` mW·ns (×2) and floored to mJ once; the counter
//! part is exact integer mJ. A device with neither power nor counter anywhere gets
//! `energy_mj: None` with reason `not_supported` — never 0. Source:
//! docs/telemetry.md "Whole-run energy of a device".

use serde::{Deserialize, Serialize};

/// Power above which a counter delta is implausible, in mW (5 kW per device: above any
/// single GPU board or superchip module). Used with one extra second of slack per interval to
/// tolerate the counter's ~100 ms update granularity.
pub const MAX_PLAUSIBLE_POWER_MW: u64 = 5_000_000;

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
    /// `"too_few_samples"`, `"no_valid_intervals"`. Callers may replace it with the driver's
    /// own reason.
    pub reason: Option<String>,
    /// `true` when some interval could not be measured or bridged, so `energy_mj` is a lower
    /// bound.
    pub lower_bound: bool,
    /// Intervals where the energy counter decreased (new epoch).
    pub counter_resets: u32,
    /// Intervals where the counter delta was implausible (above [`MAX_PLAUSIBLE_POWER_MW`]).
    pub counter_anomalies: u32,
    /// Number of intervals (samples − 1).
    pub intervals: u32,
    /// Intervals measured by the counter.
    pub intervals_counter: u32,
    /// Intervals measured by power integration.
    pub intervals_power: u32,
    /// Intervals with no usable data.
    pub intervals_missing: u32,
    /// Share of the sampled span (first → last sample) whose intervals have power at both ends,
    /// in `[0, 1]`; `None` with fewer than two samples or a zero-length span. C19 device 1: 0.
    pub power_coverage: Option<f64>,
    /// Sum of the counter deltas over the counter intervals alone, mJ (quality check).
    pub counter_mj: Option<u64>,
    /// Trapezoid integral of power over every interval with power at both ends, mJ, whatever
    /// the method used (for the counter/trapezoid ratio quality check).
    pub power_integral_mj: Option<u64>,
    /// One line per kind of fallback that happened (warned once, not per interval).
    pub warnings: Vec<String>,
}

const NS_PER_S: u128 = 1_000_000_000;

/// The counter's increase over one interval `a → b` of `dt` ns, when it can be trusted,
/// and the post-reset value when the counter went down (a new epoch); a reset or an
/// implausible jump is counted on `s`.
fn counter_delta(
    a: EnergyPoint,
    b: EnergyPoint,
    dt: u128,
    s: &mut EnergySummary,
) -> (Option<u64>, Option<u64>) {
    match (a.energy_mj, b.energy_mj) {
        (Some(e0), Some(e1)) if e1 >= e0 => {
            let allowed = MAX_PLAUSIBLE_POWER_MW as u128 * (dt + NS_PER_S) / NS_PER_S;
            if ((e1 - e0) as u128) <= allowed {
                (Some(e1 - e0), None)
            } else {
                s.counter_anomalies += 1;
                (None, None)
            }
        }
        (Some(_), Some(e1)) => {
            s.counter_resets += 1;
            (None, Some(e1))
        }
        _ => (None, None),
    }
}

/// The warnings of a summary, in their fixed order: power only (`power_only`: no counter
/// at all), counter resets, implausible jumps, samples without the counter
/// (`missing_counter`), intervals with neither (a lower bound).
fn push_warnings(s: &mut EnergySummary, power_only: bool, missing_counter: bool) {
    if power_only {
        s.warnings
            .push("energy counter not available: whole-run energy from power integration".into());
    }
    if s.counter_resets > 0 {
        s.warnings.push(format!(
            "energy counter decreased {} time(s): new epoch; those intervals use power integration",
            s.counter_resets
        ));
    }
    if s.counter_anomalies > 0 {
        s.warnings.push(format!(
            "energy counter jumped implausibly {} time(s): those intervals use power integration",
            s.counter_anomalies
        ));
    }
    if missing_counter {
        s.warnings
            .push("energy counter missing in some samples: power integration there".into());
    }
    if s.intervals_missing > 0 && s.energy_mj.is_some() {
        s.warnings.push(format!(
            "{} interval(s) without counter or power: energy is a lower bound",
            s.intervals_missing
        ));
    }
}

/// Computes the whole-run energy of one device from its samples in time order (C19):
/// device 0 (counter NotSupported, power 100/200/200/100 W at 0/100/200/300 ms) → 50 000 mJ by
/// `power_integration`; device 1 (nothing) → `None`, `not_supported`, coverage 0; device 2
/// (counter 5 000 000 → 4 000 mJ, power 150 W twice, 100 ms) → 15 000 mJ by power integration
/// over the reset interval. Pure.
pub fn whole_run_energy(points: &[EnergyPoint]) -> EnergySummary {
    let mut s = EnergySummary {
        energy_mj: None,
        energy_method: None,
        reason: None,
        lower_bound: false,
        counter_resets: 0,
        counter_anomalies: 0,
        intervals: points.len().saturating_sub(1) as u32,
        intervals_counter: 0,
        intervals_power: 0,
        intervals_missing: 0,
        power_coverage: None,
        counter_mj: None,
        power_integral_mj: None,
        warnings: Vec::new(),
    };
    let any_power = points.iter().any(|p| p.power_mw.is_some());
    let any_energy = points.iter().any(|p| p.energy_mj.is_some());
    let span = match (points.first(), points.last()) {
        (Some(a), Some(b)) if points.len() >= 2 => b.elapsed_ns.saturating_sub(a.elapsed_ns),
        _ => 0,
    };
    if !any_power && !any_energy {
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

    let mut counter_total: u64 = 0; // counter deltas
    let mut floors: u64 = 0; // post-reset counter values of unbridged reset intervals
    let mut power_x2: u128 = 0; // mW·ns ×2, intervals measured by power
    let mut all_power_x2: u128 = 0; // mW·ns ×2, every interval with power
    let mut covered_ns: u128 = 0;
    let mut any_all_power = false;
    let mut warned_missing_counter = false;
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        let dt = b.elapsed_ns.saturating_sub(a.elapsed_ns) as u128;
        let trap = match (a.power_mw, b.power_mw) {
            (Some(p0), Some(p1)) => Some((p0 as u128 + p1 as u128) * dt),
            _ => None,
        };
        if let Some(t) = trap {
            all_power_x2 += t;
            covered_ns += dt;
            any_all_power = true;
        }
        let (counter, reset_floor) = counter_delta(a, b, dt, &mut s);
        match (counter, trap) {
            (Some(d), _) => {
                counter_total = counter_total.saturating_add(d);
                s.intervals_counter += 1;
            }
            (None, Some(t)) => {
                power_x2 += t;
                s.intervals_power += 1;
                if any_energy && a.energy_mj.is_none() | b.energy_mj.is_none() {
                    warned_missing_counter = true;
                }
            }
            (None, None) => {
                s.intervals_missing += 1;
                s.lower_bound = true;
                if let Some(f) = reset_floor {
                    floors = floors.saturating_add(f);
                }
            }
        }
    }

    if s.intervals_counter + s.intervals_power == 0 && floors == 0 {
        s.reason = Some("no_valid_intervals".into());
        s.lower_bound = false;
    } else {
        let power_mj = (power_x2 / (2 * NS_PER_S)) as u64;
        s.energy_mj = Some(
            counter_total
                .saturating_add(floors)
                .saturating_add(power_mj),
        );
        s.energy_method = Some(match (s.intervals_counter > 0, s.intervals_power > 0) {
            (true, true) => EnergyMethod::Mixed,
            (false, true) => EnergyMethod::PowerIntegration,
            _ => EnergyMethod::Counter,
        });
    }
    if s.intervals_counter > 0 {
        s.counter_mj = Some(counter_total);
    }
    if any_all_power {
        s.power_integral_mj = Some((all_power_x2 / (2 * NS_PER_S)) as u64);
    }
    if span > 0 {
        s.power_coverage = Some((covered_ns as f64 / span as f64).clamp(0.0, 1.0));
    }
    push_warnings(&mut s, any_power && !any_energy, warned_missing_counter);
    s
}
