//! Open-loop arrival schedules (pure): offsets in ns from a load point's start.
//!
//! - `constant`: arrival `i` at `i · 10⁹ / rate` ns;
//! - `poisson`: the first arrival at 0, then exponential gaps of mean `1 / rate` s drawn
//!   from a ChaCha8 generator seeded with [`super::spec::point_seed`] (inverse-transform
//!   sampling, `−ln(1 − U) / rate`), so the same suite seed gives the same schedule.
//!
//! Every request later records its scheduled send time from this schedule, beside its
//! actual send time (C24): the schedule never moves because the client fell behind.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::spec::{Arrival, Stop};

/// Upper bound on the arrivals of one point (a `duration_s` at a huge rate would otherwise
/// allocate without limit); the schedule is truncated there.
pub const MAX_ARRIVALS: usize = 1_000_000;

/// The arrival offsets (ns from the point start, non-decreasing, starting at 0) of an
/// open loop at `rate_per_s` (> 0, finite) until `stop`: `Count(n)` gives exactly `n`
/// offsets, `Duration(d)` every offset `< d`; at most [`MAX_ARRIVALS`]. An invalid rate
/// (≤ 0, NaN, infinite) or `Arrival::Trace` gives no arrivals.
pub fn arrival_offsets_ns(arrival: Arrival, rate_per_s: f64, seed: u64, stop: Stop) -> Vec<u64> {
    // A trace's arrivals are its timestamps ([`trace_offsets_ns`]), never a rate's.
    if !(rate_per_s.is_finite() && rate_per_s > 0.0) || arrival == Arrival::Trace {
        return Vec::new();
    }
    let limit = match stop {
        Stop::Count(n) => usize::try_from(n).unwrap_or(MAX_ARRIVALS).min(MAX_ARRIVALS),
        Stop::Duration(_) => MAX_ARRIVALS,
    };
    let end = match stop {
        Stop::Duration(d) => Some(d),
        Stop::Count(_) => None,
    };
    let mean_gap_ns = 1e9 / rate_per_s;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut t = 0.0f64;
    for i in 0..limit {
        if i > 0 {
            t = match arrival {
                Arrival::Constant | Arrival::Trace => i as f64 * mean_gap_ns,
                Arrival::Poisson => {
                    let u: f64 = rng.random::<f64>();
                    t + -(1.0 - u).ln() * mean_gap_ns
                }
            };
        }
        if !t.is_finite() || t >= u64::MAX as f64 {
            break;
        }
        let ns = t.round() as u64;
        if end.is_some_and(|d| ns >= d) {
            break;
        }
        out.push(ns);
    }
    out
}

/// The arrival offsets of a recorded trace: unit `k` replays entry `k mod n` of
/// pass `k div n` at `(timestamp − first timestamp + pass × span) × time_scale` ms, `span`
/// the trace's first-to-last gap (so a repeat starts where the last one ended), until
/// `stop` as [`arrival_offsets_ns`]. `timestamps_ms` are non-decreasing (checked at load).
pub fn trace_offsets_ns(timestamps_ms: &[u64], time_scale: f64, stop: Stop) -> Vec<u64> {
    let (Some(&first), Some(&last)) = (timestamps_ms.first(), timestamps_ms.last()) else {
        return Vec::new();
    };
    let n = timestamps_ms.len();
    let limit = match stop {
        Stop::Count(c) => usize::try_from(c).unwrap_or(MAX_ARRIVALS).min(MAX_ARRIVALS),
        Stop::Duration(_) => MAX_ARRIVALS,
    };
    let mut out = Vec::new();
    for k in 0..limit {
        let ms = (timestamps_ms[k % n] - first) + (k / n) as u64 * (last - first);
        let at = (ms as f64 * time_scale * 1e6).round() as u64;
        if matches!(stop, Stop::Duration(d) if at >= d) {
            break;
        }
        out.push(at);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_offsets_are_the_scaled_timestamps_repeating_after_the_span() {
        let o = trace_offsets_ns(&[100, 100, 300, 600], 0.5, Stop::Count(6));
        assert_eq!(
            o,
            [0, 0, 100_000_000, 250_000_000, 250_000_000, 250_000_000]
        );
        let d = trace_offsets_ns(&[0, 1000], 1.0, Stop::Duration(2_500_000_000));
        assert_eq!(
            d,
            [
                0,
                1_000_000_000,
                1_000_000_000,
                2_000_000_000,
                2_000_000_000
            ]
        );
        assert!(trace_offsets_ns(&[], 1.0, Stop::Count(3)).is_empty());
    }

    #[test]
    fn constant_is_evenly_spaced() {
        let o = arrival_offsets_ns(Arrival::Constant, 10.0, 0, Stop::Count(5));
        assert_eq!(
            o,
            vec![0, 100_000_000, 200_000_000, 300_000_000, 400_000_000]
        );
        let d = arrival_offsets_ns(Arrival::Constant, 4.0, 0, Stop::Duration(1_000_000_000));
        assert_eq!(d, vec![0, 250_000_000, 500_000_000, 750_000_000]);
    }

    #[test]
    fn poisson_is_seeded_sorted_and_has_the_right_mean_gap() {
        let a = arrival_offsets_ns(Arrival::Poisson, 50.0, 42, Stop::Count(4000));
        let b = arrival_offsets_ns(Arrival::Poisson, 50.0, 42, Stop::Count(4000));
        assert_eq!(a, b, "same seed, same schedule");
        assert_ne!(
            a,
            arrival_offsets_ns(Arrival::Poisson, 50.0, 43, Stop::Count(4000))
        );
        assert_eq!(a[0], 0);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        let mean_gap_ms = a[a.len() - 1] as f64 / (a.len() - 1) as f64 / 1e6;
        assert!(
            (mean_gap_ms - 20.0).abs() < 1.5,
            "mean gap {mean_gap_ms} ms"
        );
        // Exponential gaps: the coefficient of variation is about 1 (constant would be 0).
        let gaps: Vec<f64> = a.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
        let sd = (gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>() / gaps.len() as f64).sqrt();
        assert!((sd / m - 1.0).abs() < 0.1, "cv {}", sd / m);
    }

    #[test]
    fn duration_bounds_poisson_and_invalid_rates_give_nothing() {
        let d = arrival_offsets_ns(Arrival::Poisson, 100.0, 1, Stop::Duration(500_000_000));
        assert!(d.iter().all(|&t| t < 500_000_000));
        assert!(d.len() > 20 && d.len() < 100, "{}", d.len());
        for r in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(arrival_offsets_ns(Arrival::Constant, r, 0, Stop::Count(3)).is_empty());
        }
    }
}
