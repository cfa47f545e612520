//! Benchmark: step attribution (docs/measurement.md) of 1,000,000 power samples × 10,000 steps,
//! target < 200 ms on 2 cores, memory linear in the input.
//!
//! The fixture is one device sampled every 10 ms (1,000,000 samples = 10,000 s), its energy
//! counter every 100 ms, the four canonical counters scraped every 1 s, and steps of 0.8 s
//! alternating `llm_call` / `tool` with 0.2 s gaps (steps = samples / 100), each with usage.
//! The smaller size (100,000 × 1,000) shows the scaling; `AllocProfiler` reports bytes
//! allocated per call (linear: the prefix arrays are one `u128` per sample).
//!
//! Run: `cargo bench --bench attribution`.

use std::collections::BTreeMap;

use divan::{AllocProfiler, Bencher};
use inferscope_bench::attribution::{
    AttributionInput, Concurrency, CounterName, CounterPoint, CounterSeries, EnergyCounterSample,
    EnergyCounterSeries, PowerBasis, PowerSample, PowerSeries, RunWindow, StepKind, StepMarker,
    StepUsage, TrajectoryOutcome, attribute,
};

#[global_allocator]
static ALLOC: AllocProfiler = AllocProfiler::system();

const ANCHOR: u64 = 1_726_000_000_000_000_000;
const PERIOD_NS: u64 = 10_000_000;

struct Fixture {
    input: AttributionInput,
    steps: Vec<StepMarker>,
    usage: BTreeMap<u64, StepUsage>,
}

fn fixture(samples: usize, steps: usize) -> Fixture {
    let n = samples as u64;
    let end = (n - 1) * PERIOD_NS;
    // Deterministic power: a 250–650 W pattern with a 1 s period.
    let power = (0..n)
        .map(|i| PowerSample {
            elapsed_ns: i * PERIOD_NS,
            power_mw: 250_000 + (i * 7_919 % 100) * 4_000,
        })
        .collect();
    let energy = (0..n / 10)
        .map(|i| EnergyCounterSample {
            elapsed_ns: i * 10 * PERIOD_NS,
            energy_mj: 9_000_000 + i * 45_000,
        })
        .collect();
    let counter = |name, per_s: u64| CounterSeries {
        name,
        samples: (0..n / 100)
            .map(|i| CounterPoint {
                elapsed_ns: i * 100 * PERIOD_NS,
                value: i * per_s,
                reset: false,
            })
            .collect(),
    };
    let step_ns = end / steps as u64;
    let markers = (0..steps as u64)
        .map(|k| StepMarker {
            step_id: k,
            kind: if k % 2 == 0 {
                StepKind::LlmCall
            } else {
                StepKind::Tool
            },
            t_start_unix_ns: ANCHOR + k * step_ns,
            t_end_unix_ns: ANCHOR + k * step_ns + step_ns * 4 / 5,
            trajectory: Some("bench".into()),
            name: None,
        })
        .collect();
    let usage = (0..steps as u64)
        .step_by(2)
        .map(|k| {
            (
                k,
                StepUsage {
                    prompt_tokens: Some(1_000 + k),
                    cached_tokens: Some(k),
                    completion_tokens: Some(64),
                },
            )
        })
        .collect();
    Fixture {
        input: AttributionInput {
            reference_instant_unix_ns: Some(ANCHOR),
            run_window: RunWindow {
                start_elapsed_ns: 0,
                end_elapsed_ns: end,
            },
            power: vec![PowerSeries {
                device: "gpu0".into(),
                basis: PowerBasis::Instant,
                samples: power,
            }],
            energy_counters: vec![EnergyCounterSeries {
                device: "gpu0".into(),
                samples: energy,
            }],
            counters: vec![
                counter(CounterName::PromptTokens, 900),
                counter(CounterName::GenerationTokens, 80),
                counter(CounterName::PrefixCacheQueries, 900),
                counter(CounterName::PrefixCacheHits, 700),
            ],
            concurrency: Concurrency {
                max_trajectories_in_flight: 1,
            },
        },
        steps: markers,
        usage,
    }
}

/// Full `attribute` call: validation, prefix sums, every step, reconciliation.
#[divan::bench(consts = [100_000, 1_000_000], sample_count = 10, sample_size = 1)]
fn attribute_samples_x_steps<const SAMPLES: usize>(bencher: Bencher) {
    let f = fixture(SAMPLES, SAMPLES / 100);
    // Sanity: the fixture is attributed and every step kept (not a degenerate fast path).
    match attribute(&f.input, Some(&f.steps), &f.usage) {
        TrajectoryOutcome::Attributed(t) => {
            assert_eq!(t.steps.len(), SAMPLES / 100);
            assert!(t.dropped_steps.is_empty());
            assert_eq!(
                t.whole_run_energy_mj,
                Some(t.total_energy_mj.unwrap_or(0) + t.unattributed_energy_mj.unwrap())
            );
        }
        TrajectoryOutcome::Withheld(w) => panic!("withheld: {:?}", w.reasons),
    }
    bencher.bench(|| attribute(&f.input, Some(&f.steps), &f.usage));
}

fn main() {
    divan::main();
}
