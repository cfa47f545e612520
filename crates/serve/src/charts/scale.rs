//! Linear axes with "nice" ticks, and the number texts the charts print (pure).
//!
//! An axis's range is its first and last tick: every value drawn lies inside it, and the
//! tick labels read exactly as the range's ends (the browser tests compare them).

/// A linear axis: `min..=max` in the data's unit, ticks every `step` from `min` to `max`.
#[derive(Clone, Debug, PartialEq)]
pub struct Axis {
    /// First tick (the range's low end).
    pub min: f64,
    /// Last tick (the range's high end).
    pub max: f64,
    /// Distance between ticks: 1, 2 or 5 times a power of ten.
    pub step: f64,
    /// Tick values, `min` first and `max` last.
    pub ticks: Vec<f64>,
    /// Decimals a tick label needs at this step.
    pub decimals: usize,
}

/// Ticks aimed at by [`Axis::nice`] when a panel does not say otherwise.
pub const TARGET_TICKS: usize = 5;

impl Axis {
    /// An axis over `lo..=hi` with about `target` intervals, its ends rounded out to whole
    /// steps. Non-finite ends are read as 0; an empty or inverted range (`hi <= lo`, e.g.
    /// every value 0) becomes `lo..=lo + 1` so that the axis is never degenerate.
    pub fn nice(lo: f64, hi: f64, target: usize) -> Axis {
        let lo = if lo.is_finite() { lo } else { 0.0 };
        let mut hi = if hi.is_finite() { hi } else { 0.0 };
        if hi <= lo {
            hi = lo + 1.0;
        }
        let raw = (hi - lo) / target.max(1) as f64;
        let mag = 10f64.powf(raw.log10().floor());
        let norm = raw / mag;
        let mult = if norm <= 1.0 {
            1.0
        } else if norm <= 2.0 {
            2.0
        } else if norm <= 5.0 {
            5.0
        } else {
            10.0
        };
        let step = mult * mag;
        let decimals = (-step.log10().floor()).max(0.0) as usize;
        let round = |v: f64| -> f64 {
            let t = format!("{v:.decimals$}");
            let r: f64 = t.parse().unwrap_or(v);
            if r == 0.0 { 0.0 } else { r }
        };
        // A whole number of steps covers the range; the ratio is rounded first so that
        // float noise (0.3 / 0.1 = 2.9999…) does not add or drop a step.
        let first = round((lo / step + 1e-9).floor() * step);
        let n = ((hi - first) / step - 1e-9).ceil().max(1.0) as usize;
        let ticks: Vec<f64> = (0..=n).map(|i| round(first + i as f64 * step)).collect();
        Axis {
            min: ticks[0],
            max: ticks[n],
            step,
            ticks,
            decimals,
        }
    }

    /// [`Axis::nice`] from 0 to the largest finite value of `values` (0 when none):
    /// the axis of bars and of the latency and throughput curves, which start at 0.
    pub fn from_zero(values: impl IntoIterator<Item = f64>, target: usize) -> Axis {
        let hi = values
            .into_iter()
            .filter(|v| v.is_finite())
            .fold(0.0, f64::max);
        Axis::nice(0.0, hi, target)
    }

    /// Where `v` lies between `r0` (at `min`) and `r1` (at `max`).
    pub fn px(&self, v: f64, r0: f64, r1: f64) -> f64 {
        r0 + (v - self.min) / (self.max - self.min) * (r1 - r0)
    }

    /// A tick's label: its value with [`Axis::decimals`] decimals, trailing zeros trimmed.
    pub fn label(&self, v: f64) -> String {
        trim_zeros(format!("{v:.prec$}", prec = self.decimals))
    }
}

fn trim_zeros(t: String) -> String {
    let t = if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    };
    if t == "-0" { "0".to_string() } else { t }
}

/// A figure for people (the page's rule): at most three decimals, trailing zeros trimmed
/// (812.4, 500, 16.667); scientific notation below 0.0005 or from 1e15 on.
pub fn num(v: f64) -> String {
    if !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    if (a != 0.0 && a < 0.0005) || a >= 1e15 {
        return format!("{v:.3e}");
    }
    trim_zeros(format!("{v:.3}"))
}

/// A coordinate in the SVG: two decimals, trailing zeros trimmed.
pub fn coord(v: f64) -> String {
    trim_zeros(format!("{v:.2}"))
}

/// A value as a `data-*` attribute carries it: Rust's shortest text that reads back as the
/// same `f64` (JavaScript's `Number()` reads it back the same).
pub fn exact(v: f64) -> String {
    format!("{v}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ticks_are_one_two_or_five_steps_covering_the_values() {
        let a = Axis::from_zero([1.0, 4.0, 16.0], TARGET_TICKS);
        assert_eq!(a.ticks, [0.0, 5.0, 10.0, 15.0, 20.0]);
        assert_eq!((a.min, a.max, a.step), (0.0, 20.0, 5.0));
        let b = Axis::from_zero([0.0734], TARGET_TICKS);
        assert_eq!(b.ticks, [0.0, 0.02, 0.04, 0.06, 0.08]);
        assert_eq!(b.decimals, 2);
        assert_eq!(b.label(0.06), "0.06");
        assert_eq!(b.label(0.0), "0");
        let c = Axis::from_zero([100.0], TARGET_TICKS);
        assert_eq!(c.ticks, [0.0, 20.0, 40.0, 60.0, 80.0, 100.0]);
        let d = Axis::from_zero([1234.5], 4);
        assert_eq!(d.ticks, [0.0, 500.0, 1000.0, 1500.0]);
        // Float noise never adds a step or leaves one short: 0.3 = 3 × 0.1.
        let e = Axis::nice(0.0, 0.3, 3);
        assert_eq!(e.ticks, [0.0, 0.1, 0.2, 0.3]);
        // A range not starting at 0 rounds out on both ends.
        let f = Axis::nice(3.2, 17.9, 5);
        assert_eq!(f.ticks, [0.0, 5.0, 10.0, 15.0, 20.0]);
        let g = Axis::nice(12.0, 17.9, 5);
        assert_eq!(g.ticks, [12.0, 14.0, 16.0, 18.0]);
    }

    #[test]
    fn every_value_lies_inside_the_range_and_maps_linearly() {
        for hi in [0.001, 0.37, 1.0, 7.3, 99.99, 100.0, 640.5, 12345.0, 3.3e7] {
            let a = Axis::from_zero([hi], TARGET_TICKS);
            assert!(a.min <= 0.0 && a.max >= hi, "{hi}: {a:?}");
            assert!(
                a.ticks.len() >= 2 && a.ticks.len() <= 2 * TARGET_TICKS + 1,
                "{a:?}"
            );
            for w in a.ticks.windows(2) {
                assert!(((w[1] - w[0]) - a.step).abs() < a.step * 1e-9, "{a:?}");
            }
            // Labels read back as the tick values.
            for t in &a.ticks {
                assert_eq!(a.label(*t).parse::<f64>().unwrap(), *t, "{a:?}");
            }
        }
        let a = Axis::from_zero([16.0], TARGET_TICKS);
        assert_eq!(a.px(0.0, 40.0, 440.0), 40.0);
        assert_eq!(a.px(20.0, 40.0, 440.0), 440.0);
        assert_eq!(a.px(5.0, 300.0, 100.0), 250.0);
    }

    #[test]
    fn an_empty_or_flat_range_is_never_degenerate() {
        // No value at all (every figure missing): a unit axis, not a zero-width one.
        let a = Axis::from_zero(std::iter::empty(), TARGET_TICKS);
        assert_eq!((a.min, a.max), (0.0, 1.0));
        let b = Axis::from_zero([0.0, 0.0], TARGET_TICKS);
        assert_eq!((b.min, b.max), (0.0, 1.0));
        let c = Axis::from_zero([f64::NAN, f64::INFINITY, 2.0], TARGET_TICKS);
        assert_eq!((c.min, c.max), (0.0, 2.0));
        let d = Axis::nice(5.0, 5.0, TARGET_TICKS);
        assert!(d.min <= 5.0 && d.max >= 6.0, "{d:?}");
    }

    #[test]
    fn numbers_are_rounded_for_people_and_exact_for_attributes() {
        assert_eq!(num(812.4), "812.4");
        assert_eq!(num(500.0), "500");
        assert_eq!(num(16.66666), "16.667");
        assert_eq!(num(0.0001), "1.000e-4");
        assert_eq!(num(-0.0), "0");
        assert_eq!(coord(12.345), "12.35");
        assert_eq!(coord(40.0), "40");
        let v = 0.1 + 0.2;
        assert_eq!(exact(v).parse::<f64>().unwrap(), v);
    }
}
