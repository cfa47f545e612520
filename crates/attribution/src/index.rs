//! Prepared series: validation and prefix sums built once per run, then every window
//! query is two binary searches over `elapsed_ns`
//! (docs/measurement.md "Per step and per trajectory (energy and engine counters)").
//! Building is O(samples); a query is O(log samples); memory is one prefix array per series
//! (linear in the input).

use super::input::{
    AttributionInput, CounterName, CounterPoint, EnergyCounterSample, MAX_PLAUSIBLE_POWER_MW,
    MAX_POWER_MW, PowerBasis, PowerSample,
};
use super::metrics::{SeriesProblem, SourceKind, WithholdReason};

/// Doubled mW·ns per mJ: 1 mJ = 10⁹ mW·ns, doubled by the trapezoid's missing ½.
pub(crate) const DOUBLED_MW_NS_PER_MJ: u128 = 2_000_000_000;

/// Floors a doubled mW·ns sum to mJ (the one flooring of docs/measurement.md). The power bound
/// [`MAX_POWER_MW`] keeps the result within `u64`.
pub(crate) fn doubled_to_mj(doubled: u128) -> u64 {
    u64::try_from(doubled / DOUBLED_MW_NS_PER_MJ).unwrap_or(u64::MAX)
}

/// Closed-window sample positions in a sorted timeline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slice {
    /// First index with `t ≥ start`.
    first_in: usize,
    /// One past the last index with `t ≤ end`.
    end_in: usize,
    /// Number of samples with `t ≤ start`.
    at_or_before_start: usize,
}

/// `slice.partition_point(pred)` found by galloping from `hint` (`pred` true then false).
///
/// When the answer lies at or after `hint` this costs O(log distance) probes near `hint`,
/// so successive windows in time order sweep the series like a merge instead of paying a
/// cold full-length binary search each; otherwise it falls back to a binary search of the
/// prefix before `hint`. Same result as `partition_point` in every case.
pub(crate) fn partition_from<T>(s: &[T], hint: usize, pred: impl Fn(&T) -> bool) -> usize {
    let hint = hint.min(s.len());
    if hint > 0 && !pred(&s[hint - 1]) {
        return s[..hint - 1].partition_point(pred);
    }
    // Every index < lo satisfies pred.
    let (mut lo, mut step) = (hint, 1usize);
    loop {
        let probe = lo + step - 1;
        if probe >= s.len() {
            return lo + s[lo..].partition_point(pred);
        }
        if !pred(&s[probe]) {
            return lo + s[lo..probe].partition_point(pred);
        }
        lo = probe + 1;
        step = step.saturating_mul(2);
    }
}

impl Slice {
    /// Positions of `[start, end]` (requires `start ≤ end`), searching from `*hint` and
    /// leaving it at this window's first sample for the next window.
    fn of<T>(
        samples: &[T],
        t: impl Fn(&T) -> u64,
        start: u64,
        end: u64,
        hint: &mut usize,
    ) -> Slice {
        let first_in = partition_from(samples, *hint, |x| t(x) < start);
        let at_or_before_start = partition_from(samples, first_in, |x| t(x) <= start);
        let end_in = partition_from(samples, at_or_before_start, |x| t(x) <= end);
        *hint = first_in;
        Slice {
            first_in,
            end_in,
            at_or_before_start,
        }
    }

    /// Samples with `start ≤ t ≤ end`.
    pub(crate) fn in_window(&self) -> u64 {
        self.end_in.saturating_sub(self.first_in) as u64
    }

    /// First and last sample index of the segments fully inside the window, when at
    /// least one segment is.
    fn inner_span(&self) -> Option<(usize, usize)> {
        let last = self.end_in.checked_sub(1)?;
        (last > self.first_in).then_some((self.first_in, last))
    }

    /// The counter bracket (step-attribution baseline (docs/measurement.md) rule): baseline = last sample at or before
    /// the window start, falling back to the first sample inside the window only when the
    /// window opens before any sample; end = last sample at or before the window end.
    /// `None` unless the end comes strictly after the baseline (no interval resolved).
    fn bracket(&self) -> Option<(usize, usize)> {
        let base = if self.at_or_before_start > 0 {
            self.at_or_before_start - 1
        } else if self.first_in < self.end_in {
            self.first_in
        } else {
            return None;
        };
        let end = self.end_in.checked_sub(1)?;
        (end > base).then_some((base, end))
    }
}

/// Trapezoid figures of one window on one power series.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PowerWindow {
    pub samples_in_window: u64,
    /// ns covered by segments fully inside the window.
    pub covered_ns: u64,
    /// Σ (p_k + p_{k+1})·(t_{k+1} − t_k) over those segments, mW·ns (doubled).
    pub doubled: u128,
}

/// A validated power series with prefix sums of doubled segment energy.
pub(crate) struct PowerIndex<'a> {
    pub device: &'a str,
    pub basis: PowerBasis,
    samples: &'a [PowerSample],
    /// `prefix[i]` = Σ over segments `k < i` (segment k joins samples k and k+1).
    prefix: Vec<u128>,
}

impl<'a> PowerIndex<'a> {
    pub(crate) fn new(device: &'a str, basis: PowerBasis, samples: &'a [PowerSample]) -> Self {
        let mut prefix = Vec::with_capacity(samples.len());
        let mut acc: u128 = 0;
        if !samples.is_empty() {
            prefix.push(0);
        }
        for w in samples.windows(2) {
            let p = u128::from(w[0].power_mw + w[1].power_mw);
            let dt = u128::from(w[1].elapsed_ns - w[0].elapsed_ns);
            acc += p * dt;
            prefix.push(acc);
        }
        PowerIndex {
            device,
            basis,
            samples,
            prefix,
        }
    }

    /// The trapezoid over segments fully inside `[start, end]` (`start ≤ end`); `hint` is
    /// a search cursor kept by the caller (0 when none).
    pub(crate) fn window(&self, start: u64, end: u64, hint: &mut usize) -> PowerWindow {
        let s = Slice::of(self.samples, |x| x.elapsed_ns, start, end, hint);
        match s.inner_span() {
            Some((a, b)) => PowerWindow {
                samples_in_window: s.in_window(),
                covered_ns: self.samples[b].elapsed_ns - self.samples[a].elapsed_ns,
                doubled: self.prefix[b] - self.prefix[a],
            },
            None => PowerWindow {
                samples_in_window: s.in_window(),
                covered_ns: 0,
                doubled: 0,
            },
        }
    }
}

/// A validated canonical counter with prefix sums of reset-aware increments.
pub(crate) struct CounterIndex<'a> {
    pub name: CounterName,
    samples: &'a [CounterPoint],
    /// `prefix[i]` = Σ increments of the intervals ending at samples `1..=i`.
    prefix: Vec<u128>,
}

impl<'a> CounterIndex<'a> {
    /// Builds the index; returns the first unexplained regression, if any.
    fn new(name: CounterName, samples: &'a [CounterPoint]) -> (Self, Option<WithholdReason>) {
        let mut prefix = Vec::with_capacity(samples.len());
        let mut acc: u128 = 0;
        let mut regression = None;
        if !samples.is_empty() {
            prefix.push(0);
        }
        let mut resets = 0usize;
        for w in samples.windows(2) {
            let (prev, cur) = (w[0], w[1]);
            let inc = if cur.reset {
                resets += 1;
                cur.value
            } else if cur.value >= prev.value {
                cur.value - prev.value
            } else {
                if regression.is_none() {
                    regression = Some(WithholdReason::CounterRegression {
                        counter: name,
                        at_elapsed_ns: cur.elapsed_ns,
                        previous_value: prev.value,
                        value: cur.value,
                    });
                }
                0
            };
            acc += u128::from(inc);
            prefix.push(acc);
        }
        // A counter that "resets" at most of its intervals is no counter (one
        // that decreases at every sample summed its values into plausible deltas):
        // withheld as a regression at its first reset, never turned into figures.
        let intervals = samples.len().saturating_sub(1);
        if regression.is_none() && resets >= 2 && resets * 2 > intervals {
            regression = samples.windows(2).find(|w| w[1].reset).map(|w| {
                WithholdReason::CounterRegression {
                    counter: name,
                    at_elapsed_ns: w[1].elapsed_ns,
                    previous_value: w[0].value,
                    value: w[1].value,
                }
            });
        }
        (
            CounterIndex {
                name,
                samples,
                prefix,
            },
            regression,
        )
    }

    /// Samples inside `[start, end]` and the bracketed delta (`None` when the window
    /// resolves no interval); `hint` as for [`PowerIndex::window`].
    pub(crate) fn window(&self, start: u64, end: u64, hint: &mut usize) -> (u64, Option<u64>) {
        let s = Slice::of(self.samples, |x| x.elapsed_ns, start, end, hint);
        let delta = s
            .bracket()
            .map(|(b, e)| u64::try_from(self.prefix[e] - self.prefix[b]).unwrap_or(u64::MAX));
        (s.in_window(), delta)
    }
}

/// Counter-basis figures of one window on one energy counter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CounterEnergyWindow {
    pub samples_in_window: u64,
    /// `None` when no interval is bracketed or a reset or jump interval cannot be filled.
    pub energy_mj: Option<u64>,
    /// Epoch resets inside the bracket (when `energy_mj` is `Some`).
    pub resets: u64,
    /// Implausible jumps inside the bracket, counted whether or not they were filled.
    pub jumps: u64,
    /// Intervals inside the bracket whose energy is the counter's increment.
    pub counted: u64,
    /// Ns from the bracket's first counter sample to its last (0 without a bracket).
    pub bracket_ns: u64,
}

/// Whether a counter increase of `delta_mj` over `dt_ns` is an implausible jump: more than
/// [`MAX_PLAUSIBLE_POWER_MW`] sustained over the interval plus one second of slack for the
/// counter's update granularity.
pub fn implausible_counter_increase(delta_mj: u64, dt_ns: u64) -> bool {
    let allowed = u128::from(MAX_PLAUSIBLE_POWER_MW) * (u128::from(dt_ns) + NS_PER_S) / NS_PER_S;
    u128::from(delta_mj) > allowed
}

const NS_PER_S: u128 = 1_000_000_000;

/// A validated energy counter with prefix sums: increments of ordinary intervals, and for
/// epoch-reset intervals (a decrease) and implausible jumps the power-trapezoid fill of that
/// interval (C19).
pub(crate) struct EnergyCounterIndex<'a> {
    pub device: &'a str,
    samples: &'a [EnergyCounterSample],
    inc_prefix: Vec<u128>,
    fill_prefix: Vec<u128>,
    reset_prefix: Vec<u64>,
    jump_prefix: Vec<u64>,
    counted_prefix: Vec<u64>,
    unfillable_prefix: Vec<u64>,
}

impl<'a> EnergyCounterIndex<'a> {
    pub(crate) fn new(
        device: &'a str,
        samples: &'a [EnergyCounterSample],
        power: Option<&PowerIndex<'_>>,
    ) -> Self {
        let n = samples.len();
        let mut index = EnergyCounterIndex {
            device,
            samples,
            inc_prefix: Vec::with_capacity(n),
            fill_prefix: Vec::with_capacity(n),
            reset_prefix: Vec::with_capacity(n),
            jump_prefix: Vec::with_capacity(n),
            counted_prefix: Vec::with_capacity(n),
            unfillable_prefix: Vec::with_capacity(n),
        };
        let (mut inc, mut fill) = (0u128, 0u128);
        let (mut resets, mut jumps, mut counted, mut unfillable) = (0u64, 0u64, 0u64, 0u64);
        let push = |ix: &mut Self, inc, fill, resets, jumps, counted, unfillable| {
            ix.inc_prefix.push(inc);
            ix.fill_prefix.push(fill);
            ix.reset_prefix.push(resets);
            ix.jump_prefix.push(jumps);
            ix.counted_prefix.push(counted);
            ix.unfillable_prefix.push(unfillable);
        };
        if n > 0 {
            push(&mut index, 0, 0, 0, 0, 0, 0);
        }
        for w in samples.windows(2) {
            let (a, b) = (w[0], w[1]);
            let dt = b.elapsed_ns - a.elapsed_ns;
            // A decrease is a new epoch; an increase above the plausible power is a jump.
            // Either interval is measured by the power trapezoid over it instead.
            let bridged = if b.energy_mj < a.energy_mj {
                resets += 1;
                true
            } else if implausible_counter_increase(b.energy_mj - a.energy_mj, dt) {
                jumps += 1;
                true
            } else {
                inc += u128::from(b.energy_mj - a.energy_mj);
                counted += 1;
                false
            };
            if bridged {
                let filled = power.map(|p| p.window(a.elapsed_ns, b.elapsed_ns, &mut 0));
                match filled {
                    Some(pw) if pw.covered_ns > 0 => {
                        fill += u128::from(doubled_to_mj(pw.doubled));
                    }
                    _ => unfillable += 1,
                }
            }
            push(&mut index, inc, fill, resets, jumps, counted, unfillable);
        }
        index
    }

    /// Counter-basis energy over `[start, end]` by the step-attribution bracket (docs/measurement.md); `hint` as for
    /// [`PowerIndex::window`].
    pub(crate) fn window(&self, start: u64, end: u64, hint: &mut usize) -> CounterEnergyWindow {
        let s = Slice::of(self.samples, |x| x.elapsed_ns, start, end, hint);
        let Some((b, e)) = s.bracket() else {
            return CounterEnergyWindow {
                samples_in_window: s.in_window(),
                energy_mj: None,
                resets: 0,
                jumps: 0,
                counted: 0,
                bracket_ns: 0,
            };
        };
        let unfillable = self.unfillable_prefix[e] - self.unfillable_prefix[b];
        let energy =
            (self.inc_prefix[e] - self.inc_prefix[b]) + (self.fill_prefix[e] - self.fill_prefix[b]);
        CounterEnergyWindow {
            samples_in_window: s.in_window(),
            energy_mj: (unfillable == 0).then(|| u64::try_from(energy).unwrap_or(u64::MAX)),
            resets: self.reset_prefix[e] - self.reset_prefix[b],
            jumps: self.jump_prefix[e] - self.jump_prefix[b],
            counted: self.counted_prefix[e] - self.counted_prefix[b],
            bracket_ns: self.samples[e].elapsed_ns - self.samples[b].elapsed_ns,
        }
    }
}

/// One device: its power and/or energy-counter index positions.
pub(crate) struct DeviceSlot<'a> {
    pub device: &'a str,
    pub power: Option<usize>,
    pub energy: Option<usize>,
}

/// Every series of one run, validated and indexed.
pub(crate) struct Prepared<'a> {
    pub power: Vec<PowerIndex<'a>>,
    pub energy: Vec<EnergyCounterIndex<'a>>,
    pub counters: Vec<CounterIndex<'a>>,
    pub devices: Vec<DeviceSlot<'a>>,
    /// Input problems that withhold every trajectory of the run.
    pub problems: Vec<WithholdReason>,
}

fn is_sorted_by_key<T>(s: &[T], t: impl Fn(&T) -> u64) -> bool {
    s.windows(2).all(|w| t(&w[0]) <= t(&w[1]))
}

fn invalid(kind: SourceKind, source: &str, problem: SeriesProblem) -> WithholdReason {
    WithholdReason::InvalidSeries {
        source_kind: kind,
        source: source.to_string(),
        problem,
    }
}

impl<'a> Prepared<'a> {
    /// Validates and indexes every series of `input`. Invalid series are reported in
    /// `problems` and not indexed.
    pub(crate) fn new(input: &'a AttributionInput) -> Self {
        let mut problems = Vec::new();
        let w = input.run_window;
        if w.end_elapsed_ns < w.start_elapsed_ns {
            problems.push(WithholdReason::InvalidRunWindow {
                start_elapsed_ns: w.start_elapsed_ns,
                end_elapsed_ns: w.end_elapsed_ns,
            });
        }

        let mut power: Vec<PowerIndex<'a>> = Vec::with_capacity(input.power.len());
        for (i, series) in input.power.iter().enumerate() {
            let dev = series.device.as_str();
            if input.power[..i].iter().any(|p| p.device == dev) {
                problems.push(invalid(
                    SourceKind::Power,
                    dev,
                    SeriesProblem::DuplicateSeries,
                ));
            } else if !is_sorted_by_key(&series.samples, |s| s.elapsed_ns) {
                problems.push(invalid(SourceKind::Power, dev, SeriesProblem::Unsorted));
            } else if series.samples.iter().any(|s| s.power_mw > MAX_POWER_MW) {
                problems.push(invalid(
                    SourceKind::Power,
                    dev,
                    SeriesProblem::PowerOutOfRange,
                ));
            } else {
                power.push(PowerIndex::new(dev, series.basis, &series.samples));
            }
        }

        let mut energy = Vec::with_capacity(input.energy_counters.len());
        for (i, series) in input.energy_counters.iter().enumerate() {
            let dev = series.device.as_str();
            if input.energy_counters[..i].iter().any(|p| p.device == dev) {
                problems.push(invalid(
                    SourceKind::EnergyCounter,
                    dev,
                    SeriesProblem::DuplicateSeries,
                ));
            } else if !is_sorted_by_key(&series.samples, |s| s.elapsed_ns) {
                problems.push(invalid(
                    SourceKind::EnergyCounter,
                    dev,
                    SeriesProblem::Unsorted,
                ));
            } else {
                let p = power.iter().find(|p| p.device == dev);
                energy.push(EnergyCounterIndex::new(dev, &series.samples, p));
            }
        }

        let mut counters = Vec::with_capacity(input.counters.len());
        for (i, series) in input.counters.iter().enumerate() {
            let name = series.name;
            if input.counters[..i].iter().any(|c| c.name == name) {
                problems.push(invalid(
                    SourceKind::Counter,
                    name.label(),
                    SeriesProblem::DuplicateSeries,
                ));
            } else if !is_sorted_by_key(&series.samples, |s| s.elapsed_ns) {
                problems.push(invalid(
                    SourceKind::Counter,
                    name.label(),
                    SeriesProblem::Unsorted,
                ));
            } else {
                let (idx, regression) = CounterIndex::new(name, &series.samples);
                problems.extend(regression);
                counters.push(idx);
            }
        }

        let mut devices: Vec<DeviceSlot<'a>> = power
            .iter()
            .enumerate()
            .map(|(i, p)| DeviceSlot {
                device: p.device,
                power: Some(i),
                energy: None,
            })
            .collect();
        for (i, e) in energy.iter().enumerate() {
            match devices.iter_mut().find(|d| d.device == e.device) {
                Some(slot) => slot.energy = Some(i),
                None => devices.push(DeviceSlot {
                    device: e.device,
                    power: None,
                    energy: Some(i),
                }),
            }
        }

        Prepared {
            power,
            energy,
            counters,
            devices,
            problems,
        }
    }

    /// The index of a canonical counter, when it was scraped.
    pub(crate) fn counter(&self, name: CounterName) -> Option<&CounterIndex<'a>> {
        self.counters.iter().find(|c| c.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cp(t: u64, v: u64) -> CounterPoint {
        CounterPoint {
            elapsed_ns: t,
            value: v,
            reset: false,
        }
    }

    #[test]
    fn bracket_baseline_is_last_sample_at_or_before_start() {
        // Samples at 0, 100, 200, 300; window [150, 250] opens between samples.
        let s = [cp(0, 0), cp(100, 10), cp(200, 30), cp(300, 60)];
        let (idx, reg) = CounterIndex::new(CounterName::GenerationTokens, &s);
        assert!(reg.is_none());
        // Baseline = sample at 100 (value 10), end = sample at 200 (value 30).
        assert_eq!(idx.window(150, 250, &mut 0), (1, Some(20)));
        // Window before any sample: fallback to the first interior sample.
        let late = [cp(100, 10), cp(200, 30), cp(300, 60)];
        let (idx, _) = CounterIndex::new(CounterName::GenerationTokens, &late);
        assert_eq!(idx.window(50, 250, &mut 0), (2, Some(20)));
        // No sample in the window: absence, not zero.
        assert_eq!(idx.window(210, 290, &mut 0), (0, None));
    }

    /// A counter flagged as reset at every sample (it decreases every
    /// time) is a regression, not a sum of plausible deltas; one real restart is not.
    #[test]
    fn a_counter_that_resets_at_most_samples_is_withheld() {
        let r = |t: u64, v: u64| CounterPoint {
            elapsed_ns: t,
            value: v,
            reset: true,
        };
        let s = [
            cp(0, 600),
            r(100, 500),
            r(200, 400),
            r(300, 300),
            r(400, 200),
        ];
        let (_, reg) = CounterIndex::new(CounterName::PromptTokens, &s);
        assert!(
            matches!(
                reg,
                Some(WithholdReason::CounterRegression {
                    at_elapsed_ns: 100,
                    previous_value: 600,
                    value: 500,
                    ..
                })
            ),
            "{reg:?}"
        );
        let once = [
            cp(0, 100),
            cp(100, 150),
            r(200, 7),
            cp(300, 20),
            cp(400, 30),
        ];
        assert!(
            CounterIndex::new(CounterName::PromptTokens, &once)
                .1
                .is_none()
        );
    }

    #[test]
    fn reset_flag_counts_value_since_restart() {
        let s = [
            cp(0, 100),
            cp(100, 150),
            CounterPoint {
                elapsed_ns: 200,
                value: 7,
                reset: true,
            },
        ];
        let (idx, reg) = CounterIndex::new(CounterName::PromptTokens, &s);
        assert!(reg.is_none());
        assert_eq!(idx.window(0, 200, &mut 0).1, Some(57));
    }

    #[test]
    fn galloping_search_equals_partition_point_from_any_hint() {
        let v: Vec<u64> = vec![1, 3, 3, 3, 7, 9, 9, 12, 20, 20, 20, 31];
        for x in 0..34 {
            for strict in [true, false] {
                let pred = |y: &u64| if strict { *y < x } else { *y <= x };
                let want = v.partition_point(pred);
                for hint in 0..=v.len() + 2 {
                    assert_eq!(partition_from(&v, hint, pred), want, "x={x} hint={hint}");
                }
            }
        }
        let empty: [u64; 0] = [];
        assert_eq!(partition_from(&empty, 3, |y| *y < 5), 0);
    }
}
