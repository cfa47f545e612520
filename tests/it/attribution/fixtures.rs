use std::collections::BTreeMap;

use inferscope_bench::attribution::{
    AttributionInput, Concurrency, CounterName, CounterPoint, CounterSeries, DropReason,
    EnergyBasis, EnergyCounterSample, EnergyCounterSeries, MAX_POWER_MW, MarkerIssue, PowerBasis,
    PowerBasisLabel, PowerSample, PowerSeries, RunWindow, SeriesProblem, SourceKind, StepKey,
    StepKind, StepMarker, StepUsage, TrajectoryMetrics, TrajectoryOutcome, WithholdReason,
    attribute, attribute_run, attribute_run_observed, observed_max_trajectories_in_flight,
    parse_step_markers, render_outcome, render_step_table,
};
use serde_json::Value;

/// Field case C22's anchor: wall0 = 1726000000.000000000 s.
const A: u64 = 1_726_000_000_000_000_000;
const MS: u64 = 1_000_000;

fn marker(id: u64, kind: StepKind, start_ms: u64, end_ms: u64) -> StepMarker {
    StepMarker {
        step_id: id,
        kind,
        t_start_unix_ns: A + start_ms * MS,
        t_end_unix_ns: A + end_ms * MS,
        trajectory: None,
        name: None,
    }
}

fn llm(id: u64, s: u64, e: u64) -> StepMarker {
    marker(id, StepKind::LlmCall, s, e)
}

fn tool(id: u64, s: u64, e: u64) -> StepMarker {
    marker(id, StepKind::Tool, s, e)
}

fn power(device: &str, basis: PowerBasis, pts: &[(u64, u64)]) -> PowerSeries {
    PowerSeries {
        device: device.into(),
        basis,
        samples: pts
            .iter()
            .map(|&(t_ms, w)| PowerSample {
                elapsed_ns: t_ms * MS,
                power_mw: w * 1000,
            })
            .collect(),
    }
}

fn counter(name: CounterName, pts: &[(u64, u64)]) -> CounterSeries {
    CounterSeries {
        name,
        samples: pts
            .iter()
            .map(|&(t_ms, v)| CounterPoint {
                elapsed_ns: t_ms * MS,
                value: v,
                reset: false,
            })
            .collect(),
    }
}

fn input(end_ms: u64, power: Vec<PowerSeries>) -> AttributionInput {
    AttributionInput {
        reference_instant_unix_ns: Some(A),
        run_window: RunWindow {
            start_elapsed_ns: 0,
            end_elapsed_ns: end_ms * MS,
        },
        power,
        energy_counters: vec![],
        counters: vec![],
        concurrency: Concurrency {
            max_trajectories_in_flight: 1,
        },
    }
}

/// Power in W at 0, 100, …, 1000 ms.
fn ramp() -> PowerSeries {
    let w = [100, 200, 300, 400, 500, 600, 500, 400, 300, 200, 100];
    let pts: Vec<(u64, u64)> = w
        .iter()
        .enumerate()
        .map(|(i, &w)| (i as u64 * 100, w))
        .collect();
    power("gpu0", PowerBasis::Instant, &pts)
}

fn attributed(o: TrajectoryOutcome) -> TrajectoryMetrics {
    match o {
        TrajectoryOutcome::Attributed(m) => *m,
        TrajectoryOutcome::Withheld(w) => panic!("withheld: {:?}", w.reasons),
    }
}

fn reasons(o: &TrajectoryOutcome) -> Vec<WithholdReason> {
    o.withheld().expect("withheld").reasons.clone()
}

fn no_usage() -> BTreeMap<u64, StepUsage> {
    BTreeMap::new()
}

fn assert_reconciles(t: &TrajectoryMetrics) {
    let whole = t.whole_run_energy_mj.expect("whole-run energy");
    assert_eq!(
        whole,
        t.total_energy_mj.unwrap_or(0) + t.unattributed_energy_mj.unwrap(),
        "total reconciliation"
    );
    // The total sums each device's step figures (a step whose own sum is withheld
    // because one device lacked a segment still counts the devices that had one).
    let steps: u64 = t
        .steps
        .iter()
        .flat_map(|s| s.devices.iter().filter_map(|d| d.energy_mj))
        .sum();
    assert_eq!(t.total_energy_mj.unwrap_or(0), steps);
    assert_eq!(
        t.llm_energy_mj.unwrap_or(0) + t.tool_energy_mj.unwrap_or(0),
        t.total_energy_mj.unwrap_or(0)
    );
    for d in &t.devices {
        if let Some(w) = d.whole_run_energy_mj {
            assert_eq!(
                w,
                d.steps_energy_mj.unwrap() + d.unattributed_energy_mj.unwrap()
            );
        }
    }
}

#[test]
fn reconciliation_on_ramp_fixture_is_exact() {
    let steps = [llm(1, 50, 350), tool(2, 350, 420), llm(3, 420, 1000)];
    let t = attributed(attribute(
        &input(1000, vec![ramp()]),
        Some(&steps),
        &no_usage(),
    ));
    // Step 1: segments [100,200] (200→300 W) and [200,300] (300→400 W) = 25 J + 35 J.
    assert_eq!(t.steps[0].energy_mj, Some(60_000));
    assert_eq!(t.steps[0].samples_in_window, Some(3));
    assert_eq!(t.steps[0].devices[0].covered_ns, Some(200 * MS));
    assert_eq!(t.steps[0].coverage, Some(200.0 / 300.0));
    // Step 2 holds one sample (400 ms): no segment inside → energy absent, not 0.
    assert_eq!(t.steps[1].energy_mj, None);
    assert_eq!(t.steps[1].samples_in_window, Some(1));
    assert_eq!(t.steps[1].coverage, Some(0.0));
    // Step 3: segments 500..1000 ms = 55 + 45 + 35 + 25 + 15 J.
    assert_eq!(t.steps[2].energy_mj, Some(175_000));
    // Whole run = 350 J; the straddling/gap segments [0,100], [300,400], [400,500] = 115 J.
    assert_eq!(t.whole_run_energy_mj, Some(350_000));
    assert_eq!(t.unattributed_energy_mj, Some(115_000));
    assert_eq!(t.total_energy_mj, Some(235_000));
    assert_eq!(t.llm_energy_mj, Some(235_000));
    assert_eq!(t.tool_energy_mj, None);
    assert_eq!(t.energy_basis, Some(EnergyBasis::Measured));
    assert_eq!(t.power_basis, Some(PowerBasisLabel::Instant));
    assert_reconciles(&t);
}

#[test]
fn flooring_remainders_land_in_unattributed_exactly() {
    // 1 W constant; two touching steps of 1.5 ms each; whole run 3 ms.
    let p = PowerSeries {
        device: "gpu0".into(),
        basis: PowerBasis::Simulated,
        samples: [0, 1_500_000, 3_000_000]
            .iter()
            .map(|&t| PowerSample {
                elapsed_ns: t,
                power_mw: 1000,
            })
            .collect(),
    };
    let mut inp = input(0, vec![p]);
    inp.run_window.end_elapsed_ns = 3_000_000;
    let steps = [
        StepMarker {
            t_start_unix_ns: A,
            t_end_unix_ns: A + 1_500_000,
            ..tool(1, 0, 0)
        },
        StepMarker {
            t_start_unix_ns: A + 1_500_000,
            t_end_unix_ns: A + 3_000_000,
            ..tool(2, 0, 0)
        },
    ];
    let t = attributed(attribute(&inp, Some(&steps), &no_usage()));
    // Each step is 1.5 mJ, floored once to 1; the whole run is 3 mJ.
    assert_eq!(t.steps[0].energy_mj, Some(1));
    assert_eq!(t.steps[1].energy_mj, Some(1));
    assert_eq!(t.whole_run_energy_mj, Some(3));
    assert_eq!(t.unattributed_energy_mj, Some(1));
    assert_eq!(t.power_basis, Some(PowerBasisLabel::Simulated));
    assert_reconciles(&t);
}

#[test]
fn multi_device_reconciles_per_device_and_in_total() {
    let gpu1 = power(
        "gpu1",
        PowerBasis::Instant,
        &[(0, 50), (250, 70), (500, 90), (750, 70), (1000, 50)],
    );
    let steps = [llm(1, 0, 500), tool(2, 500, 600), llm(3, 600, 1000)];
    let t = attributed(attribute(
        &input(1000, vec![ramp(), gpu1]),
        Some(&steps),
        &no_usage(),
    ));
    assert_eq!(t.devices.len(), 2);
    // gpu1 step 1: (50+70)/2·0.25 + (70+90)/2·0.25 = 15 + 20 J.
    assert_eq!(t.steps[0].devices[1].energy_mj, Some(35_000));
    // gpu0 step 1: 15+25+35+45+55 J.
    assert_eq!(t.steps[0].devices[0].energy_mj, Some(175_000));
    assert_eq!(t.steps[0].energy_mj, Some(210_000));
    // Step 2 (500–600 ms): gpu0 covers it, gpu1 (one sample at 500 ms) does not:
    // samples is the fewest.
    assert_eq!(t.steps[1].samples_in_window, Some(1));
    assert_eq!(t.steps[1].coverage, Some(0.0));
    assert_eq!(t.steps[1].devices[1].energy_mj, None);
    // gpu0 alone has 55 J in the window: a sum over some devices is partial, so the step's
    // own figure is withheld, as its counter sum would be; each device's
    // figure stays in `devices`, and the totals still reconcile.
    assert_eq!(t.steps[1].devices[0].energy_mj, Some(55_000));
    assert_eq!(t.steps[1].energy_mj, None);
    assert_eq!(t.devices[1].whole_run_energy_mj, Some(70_000));
    assert_reconciles(&t);
    let power_sources: Vec<&str> = t.steps[0]
        .samples_by_source
        .iter()
        .filter(|s| s.source_kind == SourceKind::Power)
        .map(|s| s.source.as_str())
        .collect();
    assert_eq!(power_sources, vec!["gpu0", "gpu1"]);
}

#[test]
fn mixed_power_bases_are_labelled_mixed() {
    let mut gpu1 = ramp();
    gpu1.device = "gpu1".into();
    gpu1.basis = PowerBasis::Averaged1s;
    let t = attributed(attribute(
        &input(1000, vec![ramp(), gpu1]),
        Some(&[llm(1, 0, 1000)]),
        &no_usage(),
    ));
    assert_eq!(t.power_basis, Some(PowerBasisLabel::Mixed));
}

#[test]
fn no_power_source_gives_null_energy_not_zero() {
    let t = attributed(attribute(
        &input(1000, vec![]),
        Some(&[llm(1, 0, 500)]),
        &no_usage(),
    ));
    let s = &t.steps[0];
    assert_eq!(s.energy_mj, None);
    assert_eq!(s.samples_in_window, None);
    assert_eq!(s.power_basis, None);
    assert_eq!(t.whole_run_energy_mj, None);
    assert_eq!(t.unattributed_energy_mj, None);
    assert_eq!(t.total_energy_mj, None);
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["whole_run_energy_mj"], Value::Null);
    assert_eq!(json["steps"][0]["energy_mj"], Value::Null);
}

// ---------------------------------------------------------------- counters

fn gen_grid() -> CounterSeries {
    counter(
        CounterName::GenerationTokens,
        &[(0, 0), (100, 10), (200, 30), (300, 60), (400, 60)],
    )
}

#[test]
fn baseline_is_last_sample_at_or_before_window_start() {
    let mut inp = input(1000, vec![]);
    inp.counters = vec![gen_grid()];
    // Window [150, 250] opens between samples: baseline 100 ms (10), end 200 ms (30).
    // The pre-correction rule (first interior sample as baseline) would give 0 here.
    let steps = [llm(1, 150, 250), llm(2, 320, 400), llm(3, 410, 490)];
    let t = attributed(attribute(&inp, Some(&steps), &no_usage()));
    assert_eq!(t.steps[0].generation_tokens_delta, Some(20));
    assert_eq!(t.steps[0].samples_by_source[0].samples_in_window, 1);
    // Scraped and unmoved: Some(0).
    assert_eq!(t.steps[1].generation_tokens_delta, Some(0));
    // No scrape inside the window: absent.
    assert_eq!(t.steps[2].generation_tokens_delta, None);
    assert_eq!(t.steps[2].samples_by_source[0].samples_in_window, 0);
    // Never scraped: absent.
    assert_eq!(t.steps[0].prompt_tokens_delta, None);
    assert_eq!(t.counters_scraped, vec![CounterName::GenerationTokens]);
}

#[test]
fn baseline_falls_back_to_first_interior_sample_only_before_any_sample() {
    let mut inp = input(1000, vec![]);
    inp.counters = vec![counter(
        CounterName::GenerationTokens,
        &[(100, 10), (200, 30), (300, 60)],
    )];
    let t = attributed(attribute(
        &inp,
        Some(&[llm(1, 0, 250), llm(2, 250, 300)]),
        &no_usage(),
    ));
    // Window [0, 250] opens before any sample: baseline = 100 ms sample.
    assert_eq!(t.steps[0].generation_tokens_delta, Some(20));
    // Window [250, 300]: baseline 200 ms (30), end 300 ms (60).
    assert_eq!(t.steps[1].generation_tokens_delta, Some(30));
}

#[test]
fn window_starting_exactly_on_a_sample_uses_it_as_baseline() {
    let mut inp = input(1000, vec![]);
    inp.counters = vec![gen_grid()];
    let t = attributed(attribute(
        &inp,
        Some(&[llm(1, 100, 300), llm(2, 300, 300)]),
        &no_usage(),
    ));
    assert_eq!(t.steps[0].generation_tokens_delta, Some(50));
    // Zero-length step on a sample: one sample, no interval → absent.
    assert_eq!(t.steps[1].generation_tokens_delta, None);
    assert_eq!(t.steps[1].samples_by_source[0].samples_in_window, 1);
    assert_eq!(t.steps[1].duration_ns, 0);
    assert_eq!(t.steps[1].coverage, None);
}

#[test]
fn flagged_reset_counts_value_since_restart() {
    let mut inp = input(1000, vec![]);
    let mut c = gen_grid();
    c.samples[3] = CounterPoint {
        elapsed_ns: 300 * MS,
        value: 4,
        reset: true,
    };
    c.samples[4].value = 9;
    inp.counters = vec![c];
    let t = attributed(attribute(&inp, Some(&[llm(1, 150, 450)]), &no_usage()));
    // 100→200: +20, 200→300 reset: +4, 300→400: +5.
    assert_eq!(t.steps[0].generation_tokens_delta, Some(29));
}

#[test]
fn cache_hit_rate_and_tokens_per_joule_rules() {
    let mut inp = input(1000, vec![ramp()]);
    inp.counters = vec![
        gen_grid(),
        counter(
            CounterName::PrefixCacheQueries,
            &[(0, 0), (300, 40), (600, 40)],
        ),
        counter(
            CounterName::PrefixCacheHits,
            &[(0, 0), (300, 30), (600, 30)],
        ),
        counter(CounterName::PromptTokens, &[(0, 0), (300, 48), (600, 48)]),
    ];
    let mut usage = BTreeMap::new();
    usage.insert(
        1,
        StepUsage {
            prompt_tokens: Some(1200),
            cached_tokens: Some(1024),
            completion_tokens: Some(50),
        },
    );
    usage.insert(
        3,
        StepUsage {
            prompt_tokens: Some(0),
            cached_tokens: Some(0),
            completion_tokens: Some(0),
        },
    );
    let steps = [llm(1, 0, 300), tool(2, 300, 400), llm(3, 400, 600)];
    let t = attributed(attribute(&inp, Some(&steps), &usage));
    let s1 = &t.steps[0];
    // Energy 0..300 ms: 15 + 25 + 35 J = 75 J; generation delta 60 → 0.8 tok/J.
    assert_eq!(s1.energy_mj, Some(75_000));
    assert_eq!(s1.generation_tokens_delta, Some(60));
    assert_eq!(s1.tokens_per_joule, Some(0.8));
    assert_eq!(s1.usage_tokens_per_joule, Some(50.0 / 75.0));
    assert_eq!(s1.cache_hit_rate, Some(0.75));
    assert_eq!(s1.usage_cache_hit_rate, Some(1024.0 / 1200.0));
    // Exact usage beside counter deltas: both kept.
    assert_eq!(s1.usage.prompt_tokens, Some(1200));
    assert_eq!(s1.prompt_tokens_delta, Some(48));
    // Tool step: counters moved (baseline 300 → 400 ms: 60 → 60 = 0) but tok/J is absent.
    let s2 = &t.steps[1];
    assert_eq!(s2.tokens_per_joule, None);
    assert_eq!(s2.usage, StepUsage::default());
    // Step 3: queries delta 0 → hit rate absent; zero tokens → tok/J absent. The
    // generation counter's only sample in [400, 600] is at 400 ms, its own baseline: no
    // interval resolved → absent.
    let s3 = &t.steps[2];
    assert_eq!(s3.cache_queries_delta, Some(0));
    assert_eq!(s3.cache_hit_rate, None);
    assert_eq!(s3.generation_tokens_delta, None);
    assert_eq!(s3.tokens_per_joule, None);
    assert_eq!(s3.usage_tokens_per_joule, None);
    assert_eq!(s3.usage_cache_hit_rate, None);
    // Trajectory totals: step 3 has no generation delta → no counter total; every LLM step
    // has a usage figure.
    assert_eq!(t.total_generation_tokens, None);
    assert_eq!(t.total_usage_completion_tokens, Some(50));
}

#[test]
fn tool_step_tokens_per_joule_is_null_even_with_tokens() {
    let mut inp = input(1000, vec![ramp()]);
    inp.counters = vec![gen_grid()];
    let t = attributed(attribute(&inp, Some(&[tool(1, 0, 300)]), &no_usage()));
    assert_eq!(t.steps[0].generation_tokens_delta, Some(60));
    assert!(t.steps[0].energy_mj.unwrap() > 0);
    assert_eq!(t.steps[0].tokens_per_joule, None);
    assert_eq!(t.total_generation_tokens, None, "no LLM step → no total");
}

#[test]
fn partial_counter_coverage_gives_null_total_not_partial_sum() {
    let mut inp = input(1000, vec![]);
    inp.counters = vec![gen_grid()];
    let t = attributed(attribute(
        &inp,
        Some(&[llm(1, 0, 300), llm(2, 410, 490)]),
        &no_usage(),
    ));
    assert_eq!(t.steps[0].generation_tokens_delta, Some(60));
    assert_eq!(t.steps[1].generation_tokens_delta, None);
    assert_eq!(t.total_generation_tokens, None);
}

#[test]
fn absence_and_zero_are_distinct_in_json() {
    let mut inp = input(1000, vec![ramp()]);
    inp.counters = vec![gen_grid()];
    let t = attributed(attribute(&inp, Some(&[llm(1, 320, 480)]), &no_usage()));
    let json = serde_json::to_value(&t).unwrap();
    let step = &json["steps"][0];
    // Scraped, unmoved: 0.
    assert_eq!(step["generation_tokens_delta"], Value::from(0u64));
    // Never scraped: null, and the key is present (not skipped).
    for key in [
        "prompt_tokens_delta",
        "cache_hits_delta",
        "cache_queries_delta",
        "tokens_per_joule",
        "cache_hit_rate",
        "counter_energy_mj",
    ] {
        assert!(step.as_object().unwrap().contains_key(key), "{key}");
        assert_eq!(step[key], Value::Null, "{key}");
    }
    assert_eq!(step["usage"]["prompt_tokens"], Value::Null);
    assert_eq!(step["kind"], "llm_call");
    assert_eq!(step["energy_basis"], "measured");
    assert_eq!(step["power_basis"], "instant");
    assert_eq!(json["trajectory"], Value::Null);
    // Round trip through text: every float is finite JSON.
    let text = serde_json::to_string(&TrajectoryOutcome::Attributed(Box::new(t))).unwrap();
    assert!(text.starts_with("{\"status\":\"attributed\""));
}

// ---------------------------------------------------------------- withholding

#[test]
fn withheld_without_anchor() {
    let mut inp = input(1000, vec![ramp()]);
    inp.reference_instant_unix_ns = None;
    let o = attribute(&inp, Some(&[llm(1, 0, 100)]), &no_usage());
    assert_eq!(reasons(&o), vec![WithholdReason::NoAnchor]);
    let json = serde_json::to_value(&o).unwrap();
    assert_eq!(json["status"], "withheld");
    assert_eq!(json["reasons"][0]["reason"], "no_anchor");
    assert_eq!(json["markers"], 1);
}

#[test]
fn withheld_without_step_file_or_steps() {
    let inp = input(1000, vec![ramp()]);
    let o = attribute(&inp, None, &no_usage());
    assert_eq!(reasons(&o), vec![WithholdReason::NoStepFile]);
    let o = attribute(&inp, Some(&[]), &no_usage());
    assert_eq!(reasons(&o), vec![WithholdReason::NoSteps]);
}

#[test]
fn withheld_when_every_step_is_dropped() {
    let inp = input(1000, vec![ramp()]);
    let o = attribute(
        &inp,
        Some(&[llm(1, 900, 1100), llm(2, 50, 40)]),
        &no_usage(),
    );
    assert_eq!(reasons(&o), vec![WithholdReason::NoValidSteps]);
    let w = o.withheld().unwrap();
    let dropped: Vec<DropReason> = w.dropped_steps.iter().map(|d| d.reason).collect();
    assert_eq!(
        dropped,
        vec![DropReason::OutsideRun, DropReason::EndsBeforeStart]
    );
}

#[test]
fn withheld_on_counter_regression_without_reset() {
    let mut inp = input(1000, vec![ramp()]);
    let mut c = gen_grid();
    c.samples[3].value = 25; // 30 → 25 at 300 ms, no reset flag
    inp.counters = vec![c];
    // The regression lies outside the step window: it still withholds (docs/measurement.md: any
    // counter regressing within the run).
    let o = attribute(&inp, Some(&[llm(1, 0, 150)]), &no_usage());
    assert_eq!(
        reasons(&o),
        vec![WithholdReason::CounterRegression {
            counter: CounterName::GenerationTokens,
            at_elapsed_ns: 300 * MS,
            previous_value: 30,
            value: 25,
        }]
    );
    let json = serde_json::to_value(&o).unwrap();
    assert_eq!(json["reasons"][0]["reason"], "counter_regression");
    assert_eq!(json["reasons"][0]["counter"], "generation_tokens");
}

#[test]
fn withheld_on_invalid_run_window_and_series() {
    let mut inp = input(1000, vec![ramp()]);
    inp.run_window = RunWindow {
        start_elapsed_ns: 10,
        end_elapsed_ns: 5,
    };
    let o = attribute(&inp, Some(&[llm(1, 0, 0)]), &no_usage());
    assert_eq!(
        reasons(&o),
        vec![WithholdReason::InvalidRunWindow {
            start_elapsed_ns: 10,
            end_elapsed_ns: 5
        }]
    );

    let mut unsorted = ramp();
    unsorted.samples.swap(2, 3);
    let mut too_hot = ramp();
    too_hot.device = "gpu9".into();
    too_hot.samples[1].power_mw = MAX_POWER_MW + 1;
    let mut inp = input(1000, vec![unsorted, ramp(), too_hot]);
    inp.energy_counters = vec![EnergyCounterSeries {
        device: "gpu0".into(),
        samples: vec![
            EnergyCounterSample {
                elapsed_ns: 5,
                energy_mj: 1,
            },
            EnergyCounterSample {
                elapsed_ns: 4,
                energy_mj: 2,
            },
        ],
    }];
    let mut bad_counter = gen_grid();
    bad_counter.samples.swap(0, 1);
    inp.counters = vec![gen_grid(), gen_grid(), bad_counter.clone()];
    inp.counters[2].name = CounterName::PromptTokens;
    let o = attribute(&inp, Some(&[llm(1, 0, 100)]), &no_usage());
    let problems: Vec<(SourceKind, String, SeriesProblem)> = reasons(&o)
        .into_iter()
        .map(|r| match r {
            WithholdReason::InvalidSeries {
                source_kind,
                source,
                problem,
            } => (source_kind, source, problem),
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    assert_eq!(
        problems,
        vec![
            (SourceKind::Power, "gpu0".into(), SeriesProblem::Unsorted),
            (
                SourceKind::Power,
                "gpu0".into(),
                SeriesProblem::DuplicateSeries
            ),
            (
                SourceKind::Power,
                "gpu9".into(),
                SeriesProblem::PowerOutOfRange
            ),
            (
                SourceKind::EnergyCounter,
                "gpu0".into(),
                SeriesProblem::Unsorted
            ),
            (
                SourceKind::Counter,
                "generation_tokens".into(),
                SeriesProblem::DuplicateSeries
            ),
            (
                SourceKind::Counter,
                "prompt_tokens".into(),
                SeriesProblem::Unsorted
            ),
        ]
    );
}

#[test]
fn every_reason_is_reported_together() {
    let mut inp = input(1000, vec![ramp()]);
    inp.reference_instant_unix_ns = None;
    let mut c = gen_grid();
    c.samples[1].value = 0;
    c.samples[0].value = 5;
    inp.counters = vec![c];
    let o = attribute(&inp, None, &no_usage());
    let r = reasons(&o);
    assert_eq!(r[0], WithholdReason::NoAnchor);
    assert_eq!(r[1], WithholdReason::NoStepFile);
    assert!(matches!(r[2], WithholdReason::CounterRegression { .. }));
    assert!(render_outcome(&o).contains("withheld"));
    assert!(render_outcome(&o).contains("no_anchor"));
}

// ---------------------------------------------------------------- dropping

#[test]
fn dropping_branches_are_named() {
    let inp = input(1000, vec![ramp()]);
    let steps = [
        llm(1, 0, 100),
        // Ends before start (a wall clock stepped back).
        tool(2, 200, 150),
        // Outside the run: partly after its end.
        llm(3, 950, 1001),
        // Duplicate step id (both copies dropped).
        tool(4, 300, 320),
        tool(4, 330, 340),
        // Overlapping pair: 6 overlaps 5.
        llm(5, 400, 500),
        tool(6, 450, 460),
        // Touching windows are not overlapping.
        llm(7, 600, 700),
        tool(8, 700, 800),
        // A zero-length step at a boundary is kept; one inside another step overlaps it.
        tool(9, 800, 800),
        llm(10, 820, 900),
        tool(11, 850, 850),
    ];
    let t = attributed(attribute(&inp, Some(&steps), &no_usage()));
    let kept: Vec<u64> = t.steps.iter().map(|s| s.step_id).collect();
    assert_eq!(kept, vec![1, 7, 8, 9]);
    let dropped: Vec<(u64, DropReason, Option<u64>)> = t
        .dropped_steps
        .iter()
        .map(|d| (d.step_id, d.reason, d.neighbour_step_id))
        .collect();
    assert_eq!(
        dropped,
        vec![
            (2, DropReason::EndsBeforeStart, None),
            (3, DropReason::OutsideRun, None),
            (4, DropReason::DuplicateStepId, None),
            (4, DropReason::DuplicateStepId, None),
            (5, DropReason::OverlapsNeighbour, Some(6)),
            (6, DropReason::OverlapsNeighbour, Some(5)),
            (10, DropReason::OverlapsNeighbour, Some(11)),
            (11, DropReason::OverlapsNeighbour, Some(10)),
        ]
    );
    assert_reconciles(&t);
    // Dropped steps' energy is unattributed, never lost.
    assert_eq!(t.whole_run_energy_mj, Some(350_000));
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["dropped_steps"][0]["reason"], "ends_before_start");
    assert_eq!(json["dropped_steps"][4]["reason"], "overlaps_neighbour");
}

#[test]
fn chain_of_overlaps_drops_every_member() {
    let inp = input(1000, vec![ramp()]);
    // 1 overlaps 2, 2 overlaps 3; 3 does not overlap 1; 4 is nested inside 1.
    let steps = [
        llm(1, 0, 300),
        llm(2, 250, 500),
        llm(3, 450, 700),
        tool(4, 100, 200),
        llm(5, 800, 900),
    ];
    let t = attributed(attribute(&inp, Some(&steps), &no_usage()));
    let kept: Vec<u64> = t.steps.iter().map(|s| s.step_id).collect();
    assert_eq!(kept, vec![5]);
    assert!(
        t.dropped_steps
            .iter()
            .all(|d| d.reason == DropReason::OverlapsNeighbour)
    );
    assert_eq!(t.dropped_steps.len(), 4);
}

// ---------------------------------------------------------------- field cases

/// C19: counter NotSupported on device 0 (power integration), nothing on device 1, and a
/// counter decrease on device 2 (reset: that interval from power, never negative).
#[test]
fn c19_counter_not_supported_and_non_monotonic() {
    let gpu0 = power(
        "gpu0",
        PowerBasis::Instant,
        &[(0, 100), (100, 200), (200, 200), (300, 100)],
    );
    let gpu2 = power("gpu2", PowerBasis::Instant, &[(0, 150), (100, 150)]);
    let mut inp = input(300, vec![gpu0, gpu2]);
    inp.energy_counters = vec![EnergyCounterSeries {
        device: "gpu2".into(),
        samples: vec![
            EnergyCounterSample {
                elapsed_ns: 0,
                energy_mj: 5_000_000,
            },
            EnergyCounterSample {
                elapsed_ns: 100 * MS,
                energy_mj: 4_000,
            },
        ],
    }];
    let t = attributed(attribute(&inp, Some(&[llm(1, 0, 300)]), &no_usage()));
    let d0 = &t.devices[0];
    assert_eq!(d0.device, "gpu0");
    // 15 + 20 + 15 J by trapezoid.
    assert_eq!(d0.whole_run_energy_mj, Some(50_000));
    assert_eq!(d0.counter_energy_mj, None);
    assert_eq!(d0.counter_to_trapezoid_ratio, None);
    let d2 = &t.devices[1];
    assert_eq!(d2.device, "gpu2");
    // 150 W × 0.1 s = 15 J from power over the reset interval; never −4,996 J.
    assert_eq!(d2.counter_energy_mj, Some(15_000));
    assert_eq!(d2.counter_epoch_resets, Some(1));
    assert_eq!(d2.whole_run_energy_mj, Some(15_000));
    assert_eq!(d2.counter_to_trapezoid_ratio, Some(1.0));
    assert_eq!(t.steps[0].devices[1].counter_energy_mj, Some(15_000));
    // gpu0 has no counter but 50 J of trapezoid energy in the step: a 15 J sum over gpu2
    // alone beside a two-device 65 J trapezoid would be partial, so the step's counter
    // figure (and the trajectory's) is withheld; the per-device figure above stays.
    assert_eq!(t.steps[0].energy_mj, Some(65_000));
    assert_eq!(t.steps[0].counter_energy_mj, None);
    assert_eq!(t.total_counter_energy_mj, None);
    // Device 1 (everything NotSupported) has no series: no device entry, no zeros.
    assert!(t.devices.iter().all(|d| d.device != "gpu1"));
    assert_reconciles(&t);
}

#[test]
fn c19_reset_without_power_leaves_counter_energy_null() {
    let mut inp = input(300, vec![]);
    inp.energy_counters = vec![EnergyCounterSeries {
        device: "gpu2".into(),
        samples: vec![
            EnergyCounterSample {
                elapsed_ns: 0,
                energy_mj: 5_000_000,
            },
            EnergyCounterSample {
                elapsed_ns: 100 * MS,
                energy_mj: 4_000,
            },
            EnergyCounterSample {
                elapsed_ns: 200 * MS,
                energy_mj: 9_000,
            },
        ],
    }];
    let t = attributed(attribute(
        &inp,
        Some(&[llm(1, 0, 100), tool(2, 100, 200)]),
        &no_usage(),
    ));
    assert_eq!(t.steps[0].counter_energy_mj, None);
    assert_eq!(t.steps[1].counter_energy_mj, Some(5_000));
    assert_eq!(t.steps[1].devices[0].counter_epoch_resets, Some(0));
    assert_eq!(t.devices[0].counter_energy_mj, None);
    assert_eq!(t.devices[0].power_basis, None);
}

fn c20_markers() -> Vec<StepMarker> {
    parse_step_markers(
        r#"{"step_id":7,"kind":"llm_call","t_start_unix_ns":1726000010000000000,"t_end_unix_ns":1726000010200000000}"#,
    )
    .unwrap()
}

fn c20_counter() -> EnergyCounterSeries {
    EnergyCounterSeries {
        device: "gpu0".into(),
        samples: vec![
            EnergyCounterSample {
                elapsed_ns: 10_000 * MS,
                energy_mj: 1_000_000,
            },
            EnergyCounterSample {
                elapsed_ns: 10_200 * MS,
                energy_mj: 1_140_000,
            },
        ],
    }
}

/// C20: a 200 ms step at 700 W (300 W outside). Counter delta 140 J (preferred); instant
/// power gives 140 J too; 1 s averaged power gives 76 J and must be `low_confidence`.
#[test]
fn c20_counter_energy_and_low_confidence_on_averaged_power() {
    let instant = power(
        "gpu0",
        PowerBasis::Instant,
        &[
            (9_900, 300),
            (10_000, 700),
            (10_100, 700),
            (10_200, 700),
            (10_300, 300),
        ],
    );
    let mut inp = input(20_000, vec![instant]);
    inp.energy_counters = vec![c20_counter()];
    let t = attributed(attribute(&inp, Some(&c20_markers()), &no_usage()));
    let s = &t.steps[0];
    assert_eq!(s.step_id, 7);
    assert_eq!(s.start_elapsed_ns, 10_000 * MS);
    assert_eq!(s.duration_ns, 200 * MS);
    assert_eq!(s.counter_energy_mj, Some(140_000));
    assert_eq!(s.energy_mj, Some(140_000));
    assert!(!s.low_confidence);
    assert_eq!(s.power_basis, Some(PowerBasisLabel::Instant));

    // Only the 1 s averaged API: it reads 380 W across the step.
    let averaged = power(
        "gpu0",
        PowerBasis::Averaged1s,
        &[(10_000, 380), (10_200, 380)],
    );
    let mut inp = input(20_000, vec![averaged]);
    inp.energy_counters = vec![c20_counter()];
    let t = attributed(attribute(&inp, Some(&c20_markers()), &no_usage()));
    let s = &t.steps[0];
    assert_eq!(s.energy_mj, Some(76_000));
    assert!(s.low_confidence, "1 s window > 0.2 s step");
    assert!(t.low_confidence);
    assert_eq!(
        s.counter_energy_mj,
        Some(140_000),
        "counter figure kept beside it"
    );
    assert_eq!(s.power_basis, Some(PowerBasisLabel::Averaged1s));
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["power_basis"], "averaged_1s");
    assert_eq!(json["steps"][0]["low_confidence"], true);
    let table = render_step_table(&t);
    assert!(table.contains("power source: averaged_1s"), "{table}");
    assert!(table.contains("low_confidence"), "{table}");

    // A step longer than the averaging window is not flagged.
    let averaged = power(
        "gpu0",
        PowerBasis::Averaged1s,
        &[(10_000, 380), (11_500, 380)],
    );
    let long = [llm(8, 10_000, 11_500)];
    let t = attributed(attribute(
        &input(20_000, vec![averaged]),
        Some(&long),
        &no_usage(),
    ));
    assert!(!t.steps[0].low_confidence);
}

#[test]
fn counter_to_trapezoid_ratio_is_one_when_bases_agree() {
    // 200 W constant sampled every 100 ms; the counter adds 20 J per 100 ms.
    let pts: Vec<(u64, u64)> = (0..=10).map(|i| (i * 100, 200)).collect();
    let mut inp = input(1000, vec![power("gpu0", PowerBasis::Instant, &pts)]);
    inp.energy_counters = vec![EnergyCounterSeries {
        device: "gpu0".into(),
        samples: (0..=10)
            .map(|i| EnergyCounterSample {
                elapsed_ns: i * 100 * MS,
                energy_mj: 7_000_000 + i * 20_000,
            })
            .collect(),
    }];
    let t = attributed(attribute(
        &inp,
        Some(&[llm(1, 100, 400), tool(2, 450, 1000)]),
        &no_usage(),
    ));
    assert_eq!(t.devices[0].whole_run_energy_mj, Some(200_000));
    assert_eq!(t.devices[0].counter_energy_mj, Some(200_000));
    assert_eq!(t.devices[0].counter_to_trapezoid_ratio, Some(1.0));
    assert_eq!(t.steps[0].counter_energy_mj, Some(60_000));
    assert_eq!(t.steps[0].energy_mj, Some(60_000));
    // Step 2 opens at 450 ms between samples: counter baseline is the 400 ms sample
    // (over-attribution by design), trapezoid only counts 500..1000 ms.
    assert_eq!(t.steps[1].counter_energy_mj, Some(120_000));
    assert_eq!(t.steps[1].energy_mj, Some(100_000));
    assert_eq!(t.total_counter_energy_mj, Some(180_000));
    let table = render_step_table(&t);
    assert!(table.contains("ratio 1.000"), "{table}");
}

/// C22: anchor wall0 = 1726000000.000000000 s; the system clock is stepped −2 s during the
/// run. A driver marker written from the stepped wall clock ends before it starts; markers
/// before the anchor or after the run are outside it; a marker out of file order is
/// flagged, not reordered.
#[test]
fn c22_markers_outside_run_or_backwards_are_flagged_not_reordered() {
    let inp = input(1000, vec![ramp()]);
    let steps = [
        // Request at mono 5000.100 → unix 1726000000.100; [DONE] read from the stepped
        // wall clock as 1725999998.850.
        StepMarker {
            t_start_unix_ns: 1_726_000_000_100_000_000,
            t_end_unix_ns: 1_725_999_998_850_000_000,
            ..llm(1, 0, 0)
        },
        // Starts before the anchor.
        StepMarker {
            t_start_unix_ns: A - 500 * MS,
            t_end_unix_ns: A + 50 * MS,
            ..tool(2, 0, 0)
        },
        // After the run's end.
        llm(3, 1_100, 1_200),
        llm(5, 600, 800),
        tool(4, 200, 400),
    ];
    let t = attributed(attribute(&inp, Some(&steps), &no_usage()));
    let kept: Vec<u64> = t.steps.iter().map(|s| s.step_id).collect();
    assert_eq!(kept, vec![5, 4], "file order kept");
    assert_eq!(t.marker_flags.len(), 1);
    assert_eq!(t.marker_flags[0].step_id, 4);
    assert_eq!(t.marker_flags[0].previous_step_id, 5);
    assert_eq!(t.marker_flags[0].issue, MarkerIssue::GoesBackwards);
    let dropped: Vec<(u64, DropReason)> = t
        .dropped_steps
        .iter()
        .map(|d| (d.step_id, d.reason))
        .collect();
    assert_eq!(
        dropped,
        vec![
            (1, DropReason::EndsBeforeStart),
            (2, DropReason::OutsideRun),
            (3, DropReason::OutsideRun),
        ]
    );
    // Windows derive from the anchor: step 4 = [200, 400] ms, never a negative duration.
    assert_eq!(t.steps[1].start_elapsed_ns, 200 * MS);
    assert_eq!(t.steps[1].duration_ns, 200 * MS);
    let json = serde_json::to_value(&t).unwrap();
    assert_eq!(json["marker_flags"][0]["issue"], "goes_backwards");
    assert_eq!(json["reference_instant_unix_ns"], A);
    let table = render_step_table(&t);
    assert!(table.contains("step 4 goes backwards"), "{table}");
    assert!(table.contains("ends_before_start"), "{table}");
    assert_reconciles(&t);
}

// ---------------------------------------------------------------- concurrency

#[test]
fn more_than_one_trajectory_in_flight_is_apportioned() {
    let mut inp = input(1000, vec![ramp()]);
    inp.concurrency.max_trajectories_in_flight = 4;
    let t = attributed(attribute(&inp, Some(&[llm(1, 0, 500)]), &no_usage()));
    assert_eq!(t.energy_basis, Some(EnergyBasis::Apportioned));
    assert_eq!(t.steps[0].energy_basis, Some(EnergyBasis::Apportioned));
    assert_eq!(t.concurrency.max_trajectories_in_flight, 4);
    assert_eq!(t.concurrency.declared_max_trajectories_in_flight, 4);
    // One trajectory attributed on its own: nothing observed, the figure is declared.
    assert_eq!(t.concurrency.observed_max_trajectories_in_flight, None);
    assert!(
        t.concurrency
            .statement
            .starts_with("Up to 4 trajectories declared in flight:"),
        "{}",
        t.concurrency.statement
    );
    assert!(
        t.concurrency
            .statement
            .contains("apportioned, not measured")
    );
    let table = render_step_table(&t);
    assert!(table.contains("energy basis: apportioned"), "{table}");
    assert!(
        table.contains("concurrency: up to 4 trajectories declared in flight"),
        "{table}"
    );

    inp.concurrency.max_trajectories_in_flight = 1;
    let t = attributed(attribute(&inp, Some(&[llm(1, 0, 500)]), &no_usage()));
    assert_eq!(t.energy_basis, Some(EnergyBasis::Measured));
    assert!(t.concurrency.statement.contains("Controlled concurrency"));
}

/// Declared 4 but the markers show one at a time (a job whose trajectories never
/// overlapped): still apportioned (conservative), but the statement and the header say 4
/// declared and 1 observed, never "4 trajectories were in flight".
#[test]
fn declared_above_observed_is_stated_as_declared() {
    let tagged = |m: StepMarker, t: &str| StepMarker {
        trajectory: Some(t.into()),
        ..m
    };
    let mut inp = input(1000, vec![ramp()]);
    inp.concurrency.max_trajectories_in_flight = 4;
    let seq = vec![tagged(llm(1, 0, 200), "a"), tagged(llm(1, 200, 300), "b")];
    let run = attribute_run(&inp, Some(&seq), &BTreeMap::new());
    assert_eq!(run.declared_max_trajectories_in_flight, 4);
    assert_eq!(run.observed_max_trajectories_in_flight, 1);
    let c = &run.concurrency;
    assert_eq!(c.max_trajectories_in_flight, 4);
    assert_eq!(c.declared_max_trajectories_in_flight, 4);
    assert_eq!(c.observed_max_trajectories_in_flight, Some(1));
    assert_eq!(c.energy_basis, Some(EnergyBasis::Apportioned));
    assert!(
        c.statement
            .starts_with("Up to 4 trajectories declared in flight (1 observed):"),
        "{}",
        c.statement
    );
    assert!(!c.statement.contains("were in flight"), "{}", c.statement);
    let a = run.trajectories[0].metrics().unwrap();
    let table = render_step_table(a);
    assert!(
        table
            .lines()
            .next()
            .unwrap()
            .ends_with("concurrency: up to 4 trajectories declared in flight (1 observed)"),
        "{table}"
    );
    // The serialized condition carries both figures.
    let json = serde_json::to_value(c).unwrap();
    assert_eq!(json["declared_max_trajectories_in_flight"], 4);
    assert_eq!(json["observed_max_trajectories_in_flight"], 1);
    assert_eq!(json["max_trajectories_in_flight"], 4);
}

/// A load point joins only the trajectories it kept; its executor counted every unit in
/// flight. The condition states the larger overlap (the executor's 64, not the one kept
/// trajectory's 1), and the markers still win when they show more.
#[test]
fn an_overlap_observed_elsewhere_is_stated() {
    let mut inp = input(1000, vec![ramp()]);
    inp.concurrency.max_trajectories_in_flight = 64;
    let one = [StepMarker {
        trajectory: Some("t0".into()),
        ..llm(1, 0, 500)
    }];
    let run = attribute_run_observed(&inp, Some(&one), &BTreeMap::new(), 64);
    assert_eq!(run.observed_max_trajectories_in_flight, 64);
    let c = &run.trajectories[0].metrics().unwrap().concurrency;
    assert_eq!(c.observed_max_trajectories_in_flight, Some(64));
    assert!(
        c.statement.contains("64 trajectories in flight") || c.statement.contains("(64 observed)"),
        "{}",
        c.statement
    );
    let alone = attribute_run(&inp, Some(&one), &BTreeMap::new());
    assert_eq!(alone.observed_max_trajectories_in_flight, 1);
    let two = [
        StepMarker {
            trajectory: Some("a".into()),
            ..llm(1, 0, 500)
        },
        StepMarker {
            trajectory: Some("b".into()),
            ..llm(1, 100, 600)
        },
    ];
    let run = attribute_run_observed(&inp, Some(&two), &BTreeMap::new(), 1);
    assert_eq!(run.observed_max_trajectories_in_flight, 2);
}

/// The energy basis names the power source too (one rule, `EnergyBasis::of`): the
/// simulator's model is `simulated`, never `measured`; without a power source the basis is
/// `null`, never `measured`; above one in flight `apportioned` beats both.
#[test]
fn energy_basis_follows_the_power_source() {
    let one = [llm(1, 0, 500)];
    // Simulator: simulated at one in flight, on every label.
    let mut sim = ramp();
    sim.basis = PowerBasis::Simulated;
    let run = attribute_run(
        &input(1000, vec![sim.clone()]),
        Some(&one),
        &BTreeMap::new(),
    );
    let t = run.trajectories[0].metrics().unwrap();
    assert_eq!(run.concurrency.energy_basis, Some(EnergyBasis::Simulated));
    assert_eq!(t.energy_basis, Some(EnergyBasis::Simulated));
    assert_eq!(t.concurrency.energy_basis, Some(EnergyBasis::Simulated));
    assert_eq!(t.steps[0].energy_basis, Some(EnergyBasis::Simulated));
    assert!(render_step_table(t).contains("energy basis: simulated"));
    let json = serde_json::to_value(&run).unwrap();
    assert_eq!(json["concurrency"]["energy_basis"], "simulated");
    assert_eq!(
        json["trajectories"][0]["steps"][0]["energy_basis"],
        "simulated"
    );

    // A device and the simulator together: not a measurement either.
    let run = attribute_run(
        &input(
            1000,
            vec![
                sim.clone(),
                PowerSeries {
                    device: "gpu1".into(),
                    ..ramp()
                },
            ],
        ),
        Some(&one),
        &BTreeMap::new(),
    );
    assert_eq!(run.concurrency.energy_basis, Some(EnergyBasis::Simulated));

    // No power source: null basis, null energy, `—` in the table.
    let run = attribute_run(&input(1000, vec![]), Some(&one), &BTreeMap::new());
    let t = run.trajectories[0].metrics().unwrap();
    assert_eq!(run.concurrency.energy_basis, None);
    assert_eq!(t.energy_basis, None);
    assert_eq!(t.steps[0].energy_basis, None);
    assert_eq!(t.steps[0].energy_mj, None);
    let json = serde_json::to_value(&run).unwrap();
    assert_eq!(json["concurrency"]["energy_basis"], Value::Null);
    assert_eq!(json["trajectories"][0]["energy_basis"], Value::Null);
    assert_eq!(
        json["trajectories"][0]["steps"][0]["energy_basis"],
        Value::Null
    );
    let table = render_step_table(t);
    assert!(
        table.contains("power source: — · energy basis: —"),
        "{table}"
    );
    assert!(
        !table.contains("measured ") && !table.contains(" measured"),
        "{table}"
    );

    // Above one in flight: apportioned, whatever the source.
    let mut inp = input(1000, vec![sim]);
    inp.concurrency.max_trajectories_in_flight = 2;
    let run = attribute_run(&inp, Some(&one), &BTreeMap::new());
    assert_eq!(run.concurrency.energy_basis, Some(EnergyBasis::Apportioned));
}

#[test]
fn attribute_run_groups_trajectories_and_observes_concurrency() {
    let tagged = |m: StepMarker, t: &str| StepMarker {
        trajectory: Some(t.into()),
        ..m
    };
    let markers = vec![
        tagged(llm(1, 0, 200), "a"),
        tagged(llm(1, 100, 300), "b"),
        tagged(tool(2, 200, 400), "a"),
        tagged(tool(2, 300, 500), "b"),
    ];
    assert_eq!(observed_max_trajectories_in_flight(&markers), 2);
    let mut usage = BTreeMap::new();
    usage.insert(
        StepKey {
            trajectory: Some("b".into()),
            step_id: 1,
        },
        StepUsage {
            prompt_tokens: Some(10),
            cached_tokens: None,
            completion_tokens: Some(3),
        },
    );
    // Declared 1, but the markers show 2 in flight: apportioned.
    let run = attribute_run(&input(1000, vec![ramp()]), Some(&markers), &usage);
    assert_eq!(run.declared_max_trajectories_in_flight, 1);
    assert_eq!(run.observed_max_trajectories_in_flight, 2);
    assert_eq!(run.concurrency.energy_basis, Some(EnergyBasis::Apportioned));
    assert!(
        run.concurrency
            .statement
            .starts_with("2 trajectories observed in flight (1 declared):"),
        "{}",
        run.concurrency.statement
    );
    assert_eq!(run.trajectories.len(), 2);
    let a = run.trajectories[0].metrics().unwrap();
    let b = run.trajectories[1].metrics().unwrap();
    assert_eq!(a.trajectory.as_deref(), Some("a"));
    assert_eq!(b.trajectory.as_deref(), Some("b"));
    // Steps of different trajectories overlap in time but are not dropped.
    assert_eq!(a.steps.len(), 2);
    assert!(a.dropped_steps.is_empty());
    assert_eq!(a.steps[0].usage, StepUsage::default());
    assert_eq!(b.steps[0].usage.completion_tokens, Some(3));
    assert_eq!(a.steps[0].energy_basis, Some(EnergyBasis::Apportioned));
    assert_reconciles(a);
    assert_reconciles(b);

    // Sequential trajectories (touching spans) are one in flight.
    let seq = vec![tagged(llm(1, 0, 200), "a"), tagged(llm(1, 200, 300), "b")];
    assert_eq!(observed_max_trajectories_in_flight(&seq), 1);
    let run = attribute_run(&input(1000, vec![ramp()]), Some(&seq), &BTreeMap::new());
    assert_eq!(run.concurrency.energy_basis, Some(EnergyBasis::Measured));

    let run = attribute_run(&input(1000, vec![ramp()]), None, &BTreeMap::new());
    assert_eq!(run.trajectories.len(), 1);
    assert_eq!(
        reasons(&run.trajectories[0]),
        vec![WithholdReason::NoStepFile]
    );
}

// ---------------------------------------------------------------- table

#[test]
fn table_names_source_and_condition_and_prints_dash_for_null() {
    let mut sim = ramp();
    sim.basis = PowerBasis::Simulated;
    let mut inp = input(1000, vec![sim]);
    inp.counters = vec![gen_grid()];
    let mut usage = BTreeMap::new();
    usage.insert(
        1,
        StepUsage {
            prompt_tokens: Some(1200),
            cached_tokens: Some(1024),
            completion_tokens: Some(50),
        },
    );
    let steps = [
        StepMarker {
            trajectory: Some("agentic::lookup#0".into()),
            name: Some("chat".into()),
            ..llm(1, 50, 350)
        },
        StepMarker {
            trajectory: Some("agentic::lookup#0".into()),
            ..tool(2, 350, 420)
        },
    ];
    let t = attributed(attribute(&inp, Some(&steps), &usage));
    let table = render_step_table(&t);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].contains("trajectory agentic::lookup#0"), "{table}");
    assert!(lines[0].contains("power source: simulated"), "{table}");
    assert!(lines[0].contains("energy basis: simulated"), "{table}");
    assert!(
        lines[0].contains("concurrency: 1 trajectory declared in flight"),
        "{table}"
    );
    assert!(lines[1].contains("Controlled concurrency"));
    for h in [
        "step",
        "kind",
        "duration ms",
        "min samples",
        "energy mJ",
        "basis",
        "prompt u/c",
        "cached u/c",
        "generated u/c",
        "hit rate u/c",
        "tok/J u/c",
    ] {
        assert!(lines[2].contains(h), "{h}: {}", lines[2]);
    }
    // Step 1: 60 J, 300 ms, usage 1200/1024/50, counter generation delta 60 (baseline
    // 0 ms: 0 → 300 ms: 60).
    assert!(lines[3].contains("llm_call"), "{}", lines[3]);
    assert!(lines[3].contains("300.000"), "{}", lines[3]);
    assert!(lines[3].contains("60000"), "{}", lines[3]);
    assert!(lines[3].contains("1200/—"), "{}", lines[3]);
    assert!(lines[3].contains("50/60"), "{}", lines[3]);
    assert!(lines[3].contains("85.3%/—"), "{}", lines[3]);
    // Step 2 (tool): no energy (one sample), no usage, no tok/J.
    assert!(lines[4].contains("tool"), "{}", lines[4]);
    assert!(lines[4].contains("—/—"), "{}", lines[4]);
    assert!(!lines[4].contains("null"));
    assert!(table.contains("unattributed"), "{table}");
    // Columns line up: the last column is right-aligned, so every row is as wide as the
    // header.
    let width = lines[2].chars().count();
    assert_eq!(lines[3].chars().count(), width, "{table}");
    assert_eq!(lines[4].chars().count(), width, "{table}");
}

/// Two devices, both with energy counters: the step's counter figure is the sum over both
/// (every contributing device is covered).
#[test]
fn counter_energy_sums_only_when_every_device_has_a_counter() {
    let pts: Vec<(u64, u64)> = (0..=4).map(|i| (i * 100, 200)).collect();
    let ctr = |device: &str, per_100ms: u64| EnergyCounterSeries {
        device: device.into(),
        samples: (0..=4)
            .map(|i| EnergyCounterSample {
                elapsed_ns: i * 100 * MS,
                energy_mj: 1_000_000 + i * per_100ms,
            })
            .collect(),
    };
    let mut inp = input(
        400,
        vec![
            power("gpu0", PowerBasis::Instant, &pts),
            power("gpu1", PowerBasis::Instant, &pts),
        ],
    );
    inp.energy_counters = vec![ctr("gpu0", 20_000), ctr("gpu1", 20_000)];
    let steps = [llm(1, 0, 200), tool(2, 200, 400)];
    let t = attributed(attribute(&inp, Some(&steps), &no_usage()));
    assert_eq!(t.steps[0].energy_mj, Some(80_000));
    assert_eq!(t.steps[0].counter_energy_mj, Some(80_000));
    assert_eq!(t.steps[1].counter_energy_mj, Some(80_000));
    assert_eq!(t.total_counter_energy_mj, Some(160_000));

    // Only gpu1 keeps its counter: the steps' and the trajectory's counter sums would
    // cover one device of two, so they are null; per-device figures remain.
    inp.energy_counters = vec![ctr("gpu1", 20_000)];
    let t = attributed(attribute(&inp, Some(&steps), &no_usage()));
    for s in &t.steps {
        assert_eq!(s.energy_mj, Some(80_000));
        assert_eq!(s.counter_energy_mj, None, "partial sum withheld");
        assert_eq!(s.devices[1].counter_energy_mj, Some(40_000));
        assert_eq!(s.devices[0].counter_energy_mj, None);
    }
    assert_eq!(t.total_counter_energy_mj, None);
}

/// Two devices sampled on different grids: the step's `samples_in_window` is the minimum
/// over devices (documented), each device keeps its own count.
#[test]
fn samples_in_window_is_the_minimum_over_devices() {
    // gpu0 every 50 ms, gpu1 every 100 ms; the window [100, 250] ms holds gpu0's samples
    // at 100, 150, 200, 250 (4) and gpu1's at 100, 200 (2).
    let g0: Vec<(u64, u64)> = (0..=8).map(|i| (i * 50, 200)).collect();
    let g1: Vec<(u64, u64)> = (0..=4).map(|i| (i * 100, 200)).collect();
    let inp = input(
        400,
        vec![
            power("gpu0", PowerBasis::Instant, &g0),
            power("gpu1", PowerBasis::Instant, &g1),
        ],
    );
    let t = attributed(attribute(&inp, Some(&[llm(1, 100, 250)]), &no_usage()));
    let s = &t.steps[0];
    assert_eq!(s.devices[0].samples_in_window, Some(4));
    assert_eq!(s.devices[1].samples_in_window, Some(2));
    assert_eq!(s.samples_in_window, Some(2));
    let by_source: Vec<u64> = s
        .samples_by_source
        .iter()
        .map(|x| x.samples_in_window)
        .collect();
    assert_eq!(by_source, vec![4, 2]);
    let table = render_step_table(&t);
    assert!(table.contains("min samples"), "{table}");
}
