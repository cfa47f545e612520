// Property test: over random sample grids and step layouts (overlaps, out-of-run,
// reversed, duplicate ids, zero-length steps, steps between samples, windows on samples),
// the attribution agrees with a brute-force re-derivation of docs/measurement.md, and
// Σ steps + unattributed == whole-run integral holds exactly, per device and in total.

use std::collections::{BTreeMap, HashMap};

use inferscope_bench::attribution::{
    AttributionInput, Concurrency, CounterName, CounterPoint, CounterSeries, DropReason,
    EnergyCounterSample, EnergyCounterSeries, MAX_POWER_MW, PowerBasis, PowerSample, PowerSeries,
    RunWindow, StepKind, StepMarker, StepMetrics, TrajectoryOutcome, attribute,
};
use proptest::prelude::*;

const A: u64 = 1_000_000_000_000_000_000;
const TICK: u64 = 50_000_000; // 50 ms grid
const DOUBLED_PER_MJ: u128 = 2_000_000_000;

fn time() -> impl Strategy<Value = u64> {
    // On the grid, or between grid points.
    (0u64..80, prop::bool::ANY, 1u64..TICK)
        .prop_map(|(k, jitter, off)| k * TICK + if jitter { off } else { 0 })
}

fn power_series(device: &'static str) -> impl Strategy<Value = PowerSeries> {
    (
        prop::collection::vec(
            (
                time(),
                prop_oneof![8 => 0u64..800_000, 1 => Just(MAX_POWER_MW)],
            ),
            0..40,
        ),
        prop_oneof![
            Just(PowerBasis::Instant),
            Just(PowerBasis::Averaged1s),
            Just(PowerBasis::Simulated)
        ],
    )
        .prop_map(move |(mut pts, basis)| {
            pts.sort_by_key(|p| p.0);
            PowerSeries {
                device: device.into(),
                basis,
                samples: pts
                    .into_iter()
                    .map(|(t, p)| PowerSample {
                        elapsed_ns: t,
                        power_mw: p,
                    })
                    .collect(),
            }
        })
}

fn counter_series() -> impl Strategy<Value = CounterSeries> {
    prop::collection::vec((time(), 0u64..100, 0u8..10), 0..30).prop_map(|mut pts| {
        pts.sort_by_key(|p| p.0);
        let mut v = 0u64;
        let samples = pts
            .into_iter()
            .map(|(t, inc, r)| {
                let reset = r == 0;
                v = if reset { inc / 2 } else { v + inc };
                CounterPoint {
                    elapsed_ns: t,
                    value: v,
                    reset,
                }
            })
            .collect();
        CounterSeries {
            name: CounterName::GenerationTokens,
            samples,
        }
    })
}

fn energy_series() -> impl Strategy<Value = EnergyCounterSeries> {
    prop::collection::vec((time(), 0u64..50_000, 0u8..8), 0..30).prop_map(|mut pts| {
        pts.sort_by_key(|p| p.0);
        let mut v = 1_000_000u64;
        let samples = pts
            .into_iter()
            .map(|(t, inc, r)| {
                v = if r == 0 { inc } else { v + inc }; // r == 0: driver reload (decrease)
                EnergyCounterSample {
                    elapsed_ns: t,
                    energy_mj: v,
                }
            })
            .collect();
        EnergyCounterSeries {
            device: "gpu0".into(),
            samples,
        }
    })
}

fn steps() -> impl Strategy<Value = Vec<StepMarker>> {
    prop::collection::vec(
        (
            time(),
            0u64..30,
            prop::bool::ANY,
            0u64..TICK,
            prop::bool::ANY,
            0u8..12,
        ),
        0..14,
    )
    .prop_map(|raw| {
        let mut out: Vec<StepMarker> = Vec::new();
        for (i, (start, d, jitter, off, is_llm, mode)) in raw.into_iter().enumerate() {
            let end = start + d * TICK / 4 + if jitter { off } else { 0 };
            let (mut s, mut e) = (A + start, A + end);
            match mode {
                0 => std::mem::swap(&mut s, &mut e), // reversed (ends before start when d > 0)
                1 => s = A - 1 - start,              // starts before the anchor
                _ => {}
            }
            let step_id = if mode == 2 && i > 0 {
                out[i - 1].step_id
            } else {
                i as u64
            };
            out.push(StepMarker {
                step_id,
                kind: if is_llm {
                    StepKind::LlmCall
                } else {
                    StepKind::Tool
                },
                t_start_unix_ns: s,
                t_end_unix_ns: e,
                trajectory: None,
                name: None,
            });
        }
        out
    })
}

fn inputs() -> impl Strategy<Value = AttributionInput> {
    (
        0u64..20,
        0u64..80,
        power_series("gpu0"),
        prop::option::of(power_series("gpu1")),
        prop::option::of(counter_series()),
        prop::option::of(energy_series()),
        1u32..3,
    )
        .prop_map(|(rs, rl, p0, p1, c, e, conc)| AttributionInput {
            reference_instant_unix_ns: Some(A),
            run_window: RunWindow {
                start_elapsed_ns: rs * TICK,
                end_elapsed_ns: (rs + rl) * TICK,
            },
            power: std::iter::once(p0).chain(p1).collect(),
            energy_counters: e.into_iter().collect(),
            counters: c.into_iter().collect(),
            concurrency: Concurrency {
                max_trajectories_in_flight: conc,
            },
        })
}

/// Σ doubled mW·ns over segments fully inside [s, e] and the covered ns (brute force).
fn brute_window(p: &PowerSeries, s: u64, e: u64) -> (u128, u64) {
    let mut doubled = 0u128;
    let mut first = None;
    let mut last = None;
    for w in p.samples.windows(2) {
        if w[0].elapsed_ns >= s && w[1].elapsed_ns <= e {
            doubled += u128::from(w[0].power_mw + w[1].power_mw)
                * u128::from(w[1].elapsed_ns - w[0].elapsed_ns);
            first.get_or_insert(w[0].elapsed_ns);
            last = Some(w[1].elapsed_ns);
        }
    }
    (doubled, first.zip(last).map_or(0, |(a, b)| b - a))
}

/// The step-attribution counter (docs/measurement.md) delta by a literal linear scan.
fn brute_delta(c: &CounterSeries, s: u64, e: u64) -> Option<u64> {
    let at_or_before = c.samples.iter().rposition(|x| x.elapsed_ns <= s);
    let base = match at_or_before {
        Some(i) => i,
        None => c
            .samples
            .iter()
            .position(|x| x.elapsed_ns >= s && x.elapsed_ns <= e)?,
    };
    let end = c.samples.iter().rposition(|x| x.elapsed_ns <= e)?;
    if end <= base {
        return None;
    }
    let mut d = 0u64;
    for i in base + 1..=end {
        let (p, q) = (c.samples[i - 1], c.samples[i]);
        d += if q.reset { q.value } else { q.value - p.value };
    }
    Some(d)
}

/// The regression rule of `CounterIndex`: a counter flagged as reset on at least two of its
/// intervals and on more than half of them is no counter, and the trajectory is withheld.
fn mostly_resets(c: &CounterSeries) -> bool {
    let intervals = c.samples.len().saturating_sub(1);
    let resets = c.samples.windows(2).filter(|w| w[1].reset).count();
    resets >= 2 && resets * 2 > intervals
}

fn overlaps(a: (u64, u64), b: (u64, u64)) -> bool {
    b.0 < a.1 && a.0 < b.1
}

fn finite(v: Option<f64>) -> bool {
    v.is_none_or(f64::is_finite)
}

fn check(input: &AttributionInput, markers: &[StepMarker]) -> Result<(), TestCaseError> {
    let run = (
        input.run_window.start_elapsed_ns,
        input.run_window.end_elapsed_ns,
    );
    let outcome = attribute(input, Some(markers), &BTreeMap::new());
    let json = serde_json::to_string(&outcome).unwrap();
    prop_assert!(!json.contains("NaN"));

    // Brute-force drop rules.
    let mut ids: HashMap<u64, usize> = HashMap::new();
    for m in markers {
        *ids.entry(m.step_id).or_default() += 1;
    }
    let mut expected: Vec<Option<DropReason>> = Vec::new();
    let mut windows = Vec::new();
    for m in markers {
        let w = (
            m.t_start_unix_ns.wrapping_sub(A),
            m.t_end_unix_ns.wrapping_sub(A),
        );
        windows.push(w);
        expected.push(if m.t_end_unix_ns < m.t_start_unix_ns {
            Some(DropReason::EndsBeforeStart)
        } else if ids[&m.step_id] > 1 {
            Some(DropReason::DuplicateStepId)
        } else if m.t_start_unix_ns < A || w.0 < run.0 || w.1 > run.1 {
            Some(DropReason::OutsideRun)
        } else {
            None
        });
    }
    let survivors: Vec<usize> = (0..markers.len())
        .filter(|&i| expected[i].is_none())
        .collect();
    for &i in &survivors {
        if survivors
            .iter()
            .any(|&j| j != i && overlaps(windows[i], windows[j]))
        {
            expected[i] = Some(DropReason::OverlapsNeighbour);
        }
    }
    let kept_idx: Vec<usize> = (0..markers.len())
        .filter(|&i| expected[i].is_none())
        .collect();

    let t = match &outcome {
        TrajectoryOutcome::Withheld(w) => {
            prop_assert!(
                kept_idx.is_empty() || input.counters.iter().any(mostly_resets),
                "withheld with keepable steps: {:?}",
                w.reasons
            );
            return Ok(());
        }
        TrajectoryOutcome::Attributed(t) => t,
    };
    let got_dropped: Vec<DropReason> = t.dropped_steps.iter().map(|d| d.reason).collect();
    let want_dropped: Vec<DropReason> = expected.iter().flatten().copied().collect();
    prop_assert_eq!(got_dropped, want_dropped);
    let kept_ids: Vec<u64> = t.steps.iter().map(|s| s.step_id).collect();
    let want_ids: Vec<u64> = kept_idx.iter().map(|&i| markers[i].step_id).collect();
    prop_assert_eq!(kept_ids, want_ids, "file order kept");
    for (a, s) in t.steps.iter().enumerate() {
        prop_assert!(s.start_elapsed_ns >= run.0 && s.end_elapsed_ns <= run.1);
        for b in &t.steps[a + 1..] {
            prop_assert!(!overlaps(
                (s.start_elapsed_ns, s.end_elapsed_ns),
                (b.start_elapsed_ns, b.end_elapsed_ns)
            ));
        }
    }

    // Energy: per device, brute force per step and whole run; exact reconciliation.
    let mut whole_total = None::<u64>;
    let mut steps_total = 0u64;
    for (di, p) in input.power.iter().enumerate() {
        let (whole_doubled, whole_cov) = brute_window(p, run.0, run.1);
        let whole_mj = (whole_cov > 0).then_some((whole_doubled / DOUBLED_PER_MJ) as u64);
        let dev = &t.devices[di];
        prop_assert_eq!(&dev.device, &p.device);
        prop_assert_eq!(dev.whole_run_energy_mj, whole_mj);
        let mut owned = vec![false; p.samples.len().saturating_sub(1)];
        let mut steps_doubled = 0u128;
        let mut floored_sum = 0u64;
        for s in &t.steps {
            let (d, cov) = brute_window(p, s.start_elapsed_ns, s.end_elapsed_ns);
            let want = (cov > 0).then_some((d / DOUBLED_PER_MJ) as u64);
            prop_assert_eq!(s.devices[di].energy_mj, want, "step {}", s.step_id);
            prop_assert_eq!(s.devices[di].covered_ns, Some(cov));
            steps_doubled += d;
            floored_sum += want.unwrap_or(0);
            for (k, w) in p.samples.windows(2).enumerate() {
                if w[0].elapsed_ns >= s.start_elapsed_ns && w[1].elapsed_ns <= s.end_elapsed_ns {
                    prop_assert!(
                        !owned[k] || w[0].elapsed_ns == w[1].elapsed_ns,
                        "segment {} owned twice",
                        k
                    );
                    owned[k] = true;
                }
            }
        }
        // Straddling segments (positive length, crossing a kept boundary) are never owned.
        let mut straddling = 0u128;
        for (k, w) in p.samples.windows(2).enumerate() {
            let (a, b) = (w[0].elapsed_ns, w[1].elapsed_ns);
            let crosses = t.steps.iter().any(|s| {
                (a < s.start_elapsed_ns && s.start_elapsed_ns < b)
                    || (a < s.end_elapsed_ns && s.end_elapsed_ns < b)
            });
            if crosses {
                prop_assert!(!owned[k], "straddling segment {} attributed", k);
                if a >= run.0 && b <= run.1 {
                    straddling += u128::from(w[0].power_mw + w[1].power_mw) * u128::from(b - a);
                }
            }
        }
        if let Some(w) = whole_mj {
            prop_assert!(steps_doubled + straddling <= whole_doubled);
            prop_assert_eq!(dev.steps_energy_mj, Some(floored_sum));
            prop_assert_eq!(dev.unattributed_energy_mj, Some(w - floored_sum));
            prop_assert_eq!(w, floored_sum + dev.unattributed_energy_mj.unwrap());
            // Unattributed holds at least the straddling/gap energy and at most one mJ of
            // flooring remainder per step on top of the exact remainder.
            let exact_rest = (whole_doubled - steps_doubled) / DOUBLED_PER_MJ;
            let u = u128::from(dev.unattributed_energy_mj.unwrap());
            prop_assert!(u >= exact_rest && u <= exact_rest + t.steps.len() as u128);
            prop_assert!(u >= straddling / DOUBLED_PER_MJ);
            whole_total = Some(whole_total.unwrap_or(0) + w);
            steps_total += floored_sum;
        } else {
            prop_assert_eq!(floored_sum, 0);
            prop_assert_eq!(dev.unattributed_energy_mj, None);
        }
    }
    prop_assert_eq!(t.whole_run_energy_mj, whole_total);
    if let Some(w) = t.whole_run_energy_mj {
        prop_assert_eq!(
            w,
            t.total_energy_mj.unwrap_or(0) + t.unattributed_energy_mj.unwrap()
        );
        prop_assert_eq!(t.total_energy_mj.unwrap_or(0), steps_total);
    }
    let sum: u64 = t
        .steps
        .iter()
        .flat_map(|s| s.devices.iter().filter_map(|d| d.energy_mj))
        .sum();
    prop_assert_eq!(t.total_energy_mj.unwrap_or(0), sum);
    // A step's own figure is the sum over devices only when every device with a power
    // series has one (never a partial sum).
    for s in &t.steps {
        let with_power: Vec<_> = s
            .devices
            .iter()
            .filter(|d| d.samples_in_window.is_some())
            .collect();
        let all = with_power.iter().all(|d| d.energy_mj.is_some());
        let dev_sum: Option<u64> = with_power
            .iter()
            .filter_map(|d| d.energy_mj)
            .reduce(|a, b| a + b);
        prop_assert_eq!(s.energy_mj, dev_sum.filter(|_| all));
    }

    // Counters and derived floats.
    for s in &t.steps {
        check_step(input, s)?;
    }
    prop_assert!(finite(t.trajectory_tokens_per_joule));
    Ok(())
}

fn check_step(input: &AttributionInput, s: &StepMetrics) -> Result<(), TestCaseError> {
    let want = input
        .counters
        .first()
        .and_then(|c| brute_delta(c, s.start_elapsed_ns, s.end_elapsed_ns));
    prop_assert_eq!(s.generation_tokens_delta, want);
    prop_assert_eq!(s.prompt_tokens_delta, None, "never scraped");
    if s.kind == StepKind::Tool {
        prop_assert_eq!(s.tokens_per_joule, None);
    }
    prop_assert!(finite(s.tokens_per_joule) && finite(s.coverage) && finite(s.cache_hit_rate));
    if let Some(c) = s.coverage {
        prop_assert!((0.0..=1.0).contains(&c));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn reconciliation_and_drop_rules_match_brute_force(input in inputs(), markers in steps()) {
        check(&input, &markers)?;
    }
}
