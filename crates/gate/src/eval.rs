//! [`evaluate`]: a job's [`FigureSet`] against its merged [`GateSpec`] (docs/measurement.md),
//! and [`validate_spec`] for `check` / bad-input detection.

use super::figures::{Figure, FigureSet, LatencyFigures};
use super::spec::{GateSpec, OverheadSpec, PercentileBounds, WhenUnavailable};
use super::verdict::{Comparison, Verdict, judge};
use inferscope_model::Basis;

/// The built-in gate's key: a job with zero successful requests always fails.
pub const SUCCESSFUL_REQUESTS_GATE: &str = "successful_requests";
/// The built-in gate of an SWE job: its harness must exit 0 (basis `harness`).
pub const HARNESS_EXIT_GATE: &str = "harness_exit";

/// One non-percentile gate: its key, figure name, unit, direction, bound and figure.
struct ScalarGate<'a> {
    gate: &'static str,
    figure: &'static str,
    unit: &'static str,
    cmp: Comparison,
    bound: Option<f64>,
    value: &'a Figure,
}

/// Evaluates every bound `spec` declares against `figures`.
///
/// Order: the built-in verdicts first (never skippable): `successful_requests >= 1` for a
/// job that sends its own requests; `max_error_rate <= 0` when the job made requests and
/// the gates declare no `max_error_rate` (a failed request fails its job unless the suite
/// tolerates an error rate); `harness_exit == 0` for an SWE job (its harness talks to the
/// endpoint itself: its exit status is its own verdict, basis `harness`). Then TTFT, ITL,
/// TPOT, E2E (p50, p90, p95, p99, mean each), error rate, grade pass rate, tokens per
/// joule, cache hit rate, energy per trajectory, regression. An absent bound gives no
/// verdict. Gate keys and figure names:
///
/// | gate key | figure | comparison | unit |
/// |---|---|---|---|
/// | `successful_requests` | `successful_requests` | `>=` 1 | |
/// | `harness_exit` | `harness_exit_code` | `==` 0 | |
/// | `ttft_ms.p99` (…) | `ttft_ms.p99` | `<=` | ms |
/// | `max_error_rate` | `error_rate` | `<=` | fraction |
/// | `min_grade_pass_rate` | `grade_pass_rate` | `>=` | fraction |
/// | `min_tokens_per_joule` | `tokens_per_joule` | `>=` | tokens/J |
/// | `min_cache_hit_rate` | `cache_hit_rate` | `>=` | fraction |
/// | `max_energy_per_trajectory_j` | `energy_per_trajectory_j` | `<=` | J |
/// | `regression_pct` | `regression_pct` | `<=` | % |
/// | `max_short_output_rate` | `short_output_rate` | `<=` | fraction |
pub fn evaluate(spec: &GateSpec, figures: &FigureSet) -> Vec<Verdict> {
    let when = spec.when_unavailable.unwrap_or_default();
    let mut out = built_in_verdicts(spec, figures);
    out.extend(latency_verdicts(spec, figures, when));
    out.extend(scalar_verdicts(spec, figures, when));
    out
}

/// The gates every job has without declaring them: at least one successful request (when
/// counted), no failed request unless `max_error_rate` is declared, and a harness exit
/// status of 0 (when a harness ran).
fn built_in_verdicts(spec: &GateSpec, figures: &FigureSet) -> Vec<Verdict> {
    let mut out = Vec::new();
    if let Some(n) = figures.successful_requests {
        out.push(judge(
            SUCCESSFUL_REQUESTS_GATE,
            SUCCESSFUL_REQUESTS_GATE,
            "",
            Comparison::AtLeast,
            1.0,
            &Figure::of(n as f64, Basis::RequestOutcomes),
            WhenUnavailable::Fail,
            true,
        ));
    }
    if spec.max_error_rate.is_none() && figures.requests > 0 {
        // A failed request fails its job unless the gates tolerate an error rate.
        let mut v = judge(
            "max_error_rate",
            "error_rate",
            "",
            Comparison::AtMost,
            0.0,
            &figures.error_rate,
            WhenUnavailable::Fail,
            true,
        );
        if !v.outcome.is_passing() {
            v.message.push_str(
                " [built-in: a failed request fails the job; declare `max_error_rate` in \
                 [gates] to tolerate some]",
            );
        }
        out.push(v);
    }
    if let Some(exit) = &figures.harness_exit_code {
        out.push(judge(
            HARNESS_EXIT_GATE,
            "harness_exit_code",
            "",
            Comparison::Equal,
            0.0,
            exit,
            WhenUnavailable::Fail,
            true,
        ));
    }
    out
}

/// The declared percentile bounds of the latency figures (`ttft_ms.p99 = 50` …), each
/// verdict carrying the figure's error bound when it was streamed.
fn latency_verdicts(spec: &GateSpec, figures: &FigureSet, when: WhenUnavailable) -> Vec<Verdict> {
    let mut out = Vec::new();
    let latency: [(&str, &Option<PercentileBounds>, &LatencyFigures); 4] = [
        ("ttft_ms", &spec.ttft_ms, &figures.ttft_ms),
        ("itl_ms", &spec.itl_ms, &figures.itl_ms),
        ("tpot_ms", &spec.tpot_ms, &figures.tpot_ms),
        ("e2e_ms", &spec.e2e_ms, &figures.e2e_ms),
    ];
    for (name, bounds, figs) in latency {
        let Some(b) = bounds else { continue };
        let stats = [
            ("p50", b.p50, &figs.p50),
            ("p90", b.p90, &figs.p90),
            ("p95", b.p95, &figs.p95),
            ("p99", b.p99, &figs.p99),
            ("mean", b.mean, &figs.mean),
        ];
        for (stat, bound, fig) in stats {
            if let Some(bound) = bound {
                let key = format!("{name}.{stat}");
                let mut v = judge(
                    &key,
                    &key,
                    "ms",
                    Comparison::AtMost,
                    bound,
                    fig,
                    when,
                    false,
                );
                if let Some(b) = &figs.bound {
                    with_error_bound(&mut v, b);
                }
                out.push(v);
            }
        }
    }
    out
}

/// The declared bounds of the scalar figures (`max_error_rate`, `min_cache_hit_rate`, …);
/// a cache-hit-rate verdict says how many requests reported cached tokens.
fn scalar_verdicts(spec: &GateSpec, figures: &FigureSet, when: WhenUnavailable) -> Vec<Verdict> {
    let mut out = Vec::new();
    let scalar = [
        ScalarGate {
            gate: "max_error_rate",
            figure: "error_rate",
            unit: "",
            cmp: Comparison::AtMost,
            bound: spec.max_error_rate,
            value: &figures.error_rate,
        },
        ScalarGate {
            gate: "min_grade_pass_rate",
            figure: "grade_pass_rate",
            unit: "",
            cmp: Comparison::AtLeast,
            bound: spec.min_grade_pass_rate,
            value: &figures.grade_pass_rate,
        },
        ScalarGate {
            gate: "min_tokens_per_joule",
            figure: "tokens_per_joule",
            unit: "tokens/J",
            cmp: Comparison::AtLeast,
            bound: spec.min_tokens_per_joule,
            value: &figures.tokens_per_joule,
        },
        ScalarGate {
            gate: "min_cache_hit_rate",
            figure: "cache_hit_rate",
            unit: "",
            cmp: Comparison::AtLeast,
            bound: spec.min_cache_hit_rate,
            value: &figures.cache_hit_rate,
        },
        ScalarGate {
            gate: "max_energy_per_trajectory_j",
            figure: "energy_per_trajectory_j",
            unit: "J",
            cmp: Comparison::AtMost,
            bound: spec.max_energy_per_trajectory_j,
            value: &figures.energy_per_trajectory_j,
        },
        ScalarGate {
            gate: "regression_pct",
            figure: "regression_pct",
            unit: "%",
            cmp: Comparison::AtMost,
            bound: spec.regression_pct,
            value: &figures.regression_pct,
        },
        ScalarGate {
            gate: "max_short_output_rate",
            figure: "short_output_rate",
            unit: "",
            cmp: Comparison::AtMost,
            bound: spec.max_short_output_rate,
            value: &figures.short_output_rate,
        },
    ];
    for g in scalar {
        if let Some(bound) = g.bound {
            let mut v = judge(g.gate, g.figure, g.unit, g.cmp, bound, g.value, when, false);
            if g.gate == "min_cache_hit_rate"
                && let Some((reporting, ok)) = figures.cache_coverage
            {
                v.message.push_str(&format!(
                    " [{reporting}/{ok} requests reported cached tokens]"
                ));
            }
            out.push(v);
        }
    }
    out
}

/// Marks a verdict on a streamed figure: its error bound beside it, and in its message
/// right after the value (`ttft_ms.p99 = 41.2 ms ±0.05 % (streaming) <= bound 50 ms`).
fn with_error_bound(v: &mut Verdict, b: &inferscope_model::SummaryBound) {
    if v.value.is_some()
        && let Some(i) = v.message.find(" bound ")
        && let Some(j) = v.message[..i].rfind(' ')
    {
        v.message.insert_str(j, &b.suffix());
    }
    v.error_bound = Some(b.clone());
}

/// One invalid bound in a [`GateSpec`]: the gate key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecProblem {
    /// Gate key, e.g. `ttft_ms.p99` or `max_error_rate`.
    pub gate: String,
    /// What is wrong, e.g. `must be a finite number >= 0`.
    pub problem: String,
}

impl std::fmt::Display for SpecProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "gate `{}`: {}", self.gate, self.problem)
    }
}

/// Checks every bound's range: latencies, tokens/J, energy and regression finite and
/// `>= 0`; rates finite and within `0..=1`; a latency table (`ttft_ms = { ... }`) sets at
/// least one of `p50`, `p90`, `p95`, `p99`, `mean` (an empty one would gate nothing).
/// Errors are bad input (exit 2), found before a run starts: the suite loader reports them
/// located at the offending value of the table as written (suite `[gates]` or a job's
/// gates). Returns every problem, in evaluation order; [`SpecProblem::gate`] is the dotted
/// key inside the table (`ttft_ms.p99`, `ttft_ms` for an empty latency table).
pub fn validate_spec(spec: &GateSpec) -> Result<(), Vec<SpecProblem>> {
    let mut problems = Vec::new();
    let check = |problems: &mut Vec<SpecProblem>, gate: String, v: Option<f64>, rate: bool| {
        let Some(v) = v else { return };
        let ok = v.is_finite() && v >= 0.0 && (!rate || v <= 1.0);
        if !ok {
            problems.push(SpecProblem {
                gate,
                problem: if rate {
                    format!("{v} must be a fraction between 0 and 1")
                } else {
                    format!("{v} must be a finite number >= 0")
                },
            });
        }
    };
    for (name, b) in [
        ("ttft_ms", &spec.ttft_ms),
        ("itl_ms", &spec.itl_ms),
        ("tpot_ms", &spec.tpot_ms),
        ("e2e_ms", &spec.e2e_ms),
    ] {
        if let Some(b) = b {
            if *b == PercentileBounds::default() {
                problems.push(SpecProblem {
                    gate: name.to_string(),
                    problem: "sets no threshold: give at least one of `p50`, `p90`, `p95`, \
                              `p99`, `mean`"
                        .into(),
                });
                continue;
            }
            for (stat, v) in [
                ("p50", b.p50),
                ("p90", b.p90),
                ("p95", b.p95),
                ("p99", b.p99),
                ("mean", b.mean),
            ] {
                check(&mut problems, format!("{name}.{stat}"), v, false);
            }
        }
    }
    check(
        &mut problems,
        "max_error_rate".into(),
        spec.max_error_rate,
        true,
    );
    check(
        &mut problems,
        "min_grade_pass_rate".into(),
        spec.min_grade_pass_rate,
        true,
    );
    check(
        &mut problems,
        "min_tokens_per_joule".into(),
        spec.min_tokens_per_joule,
        false,
    );
    check(
        &mut problems,
        "min_cache_hit_rate".into(),
        spec.min_cache_hit_rate,
        true,
    );
    check(
        &mut problems,
        "max_energy_per_trajectory_j".into(),
        spec.max_energy_per_trajectory_j,
        false,
    );
    check(
        &mut problems,
        "regression_pct".into(),
        spec.regression_pct,
        false,
    );
    check(
        &mut problems,
        "max_short_output_rate".into(),
        spec.max_short_output_rate,
        true,
    );
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

/// Checks the `[overhead]` budgets: `pairs >= 1`; `max_workload_effect_pct` and
/// `max_runner_cpu_pct` finite and `>= 0` (the byte and MiB budgets are unsigned integers,
/// so serde already refuses negatives). Errors are bad input (exit 2): the suite loader
/// reports them located at the value in `[overhead]`. Returns every problem, in field
/// order; [`SpecProblem::gate`] is the key inside `[overhead]`.
pub fn validate_overhead(spec: &OverheadSpec) -> Result<(), Vec<SpecProblem>> {
    let mut problems = Vec::new();
    for (gate, v) in [
        ("max_workload_effect_pct", spec.max_workload_effect_pct),
        ("max_runner_cpu_pct", spec.max_runner_cpu_pct),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            problems.push(SpecProblem {
                gate: gate.into(),
                problem: format!("{v} must be a finite percentage >= 0"),
            });
        }
    }
    if spec.pairs == 0 {
        problems.push(SpecProblem {
            gate: "pairs".into(),
            problem: "0 must be at least 1".into(),
        });
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verdict::{JobOutcome, Outcome};
    use inferscope_model::stats::{AggregateParams, JobStats, RequestFigures};

    fn spec(toml_src: &str) -> GateSpec {
        toml::from_str(toml_src).unwrap()
    }

    /// The verdict of gate `key`.
    fn by<'a>(v: &'a [Verdict], key: &str) -> &'a Verdict {
        v.iter()
            .find(|v| v.gate == key)
            .unwrap_or_else(|| panic!("no verdict {key} in {v:?}"))
    }

    fn stats_with_ttft(ttfts: &[f64]) -> JobStats {
        let reqs: Vec<RequestFigures> = ttfts
            .iter()
            .map(|&t| RequestFigures {
                ok: true,
                ttft_ms: Some(t),
                ..Default::default()
            })
            .collect();
        JobStats::aggregate(&reqs, AggregateParams::new(1_000_000_000))
    }

    #[test]
    fn failing_latency_gate_names_figure_value_bound_basis() {
        let mut figs = FigureSet {
            successful_requests: Some(5),
            ..FigureSet::default()
        };
        figs.ttft_ms.p99 = Figure::finite(812.4, Basis::ClientTiming);
        let v = evaluate(&spec("ttft_ms = { p99 = 500.0 }"), &figs);
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].gate, "successful_requests");
        assert_eq!(v[0].outcome, Outcome::Pass);
        assert_eq!(
            v[0].message,
            "successful_requests = 5 >= bound 1 (request outcomes)"
        );
        let t = &v[1];
        assert_eq!(t.gate, "ttft_ms.p99");
        assert_eq!(t.outcome, Outcome::Fail);
        assert_eq!(
            t.message,
            "ttft_ms.p99 = 812.4 ms > bound 500 ms (client timing)"
        );
        assert_eq!(
            (t.value, t.bound, t.comparison),
            (Some(812.4), 500.0, Comparison::AtMost)
        );
        assert_eq!(JobOutcome::from_verdicts(&v, true), JobOutcome::Fail);
    }

    /// A gate on a streamed percentile says so in its verdict line and carries
    /// the bound in its JSON; an exact one does neither.
    #[test]
    fn a_gate_on_a_streamed_percentile_carries_its_bound() {
        let mut stats = stats_with_ttft(&[100.0, 200.0, 300.0]);
        let exact = evaluate(
            &spec("ttft_ms = { p99 = 500.0 }"),
            &FigureSet::from_job_stats(&stats),
        );
        let v = by(&exact, "ttft_ms.p99");
        assert_eq!(v.error_bound, None);
        assert!(!v.message.contains("streaming"), "{}", v.message);
        stats.ttft_ms.as_mut().unwrap().bound = Some(inferscope_model::streaming::bound());
        let streamed = evaluate(
            &spec("ttft_ms = { p99 = 500.0 }"),
            &FigureSet::from_job_stats(&stats),
        );
        let v = by(&streamed, "ttft_ms.p99");
        assert_eq!(
            v.message,
            "ttft_ms.p99 = 298 ms ±0.05 % (streaming) <= bound 500 ms (client timing)"
        );
        assert_eq!(v.outcome, Outcome::Pass);
        let j = serde_json::to_value(v).unwrap();
        assert_eq!(j["error_bound"]["aggregation"], "streaming");
        assert_eq!(j["error_bound"]["relative_error"], 1.0 / 2048.0);
    }

    #[test]
    fn passing_gates_from_job_stats() {
        let figs = FigureSet::from_job_stats(&stats_with_ttft(&[100.0, 200.0, 300.0]));
        let v = evaluate(
            &spec("max_error_rate = 0.0\nttft_ms = { p50 = 200.0, mean = 250.0 }"),
            &figs,
        );
        let msgs: Vec<&str> = v.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(
            msgs,
            [
                "successful_requests = 3 >= bound 1 (request outcomes)",
                "ttft_ms.p50 = 200 ms <= bound 200 ms (client timing)",
                "ttft_ms.mean = 200 ms <= bound 250 ms (client timing)",
                "error_rate = 0 <= bound 0 (request outcomes)",
            ]
        );
        assert!(v.iter().all(|v| v.outcome == Outcome::Pass));
        assert_eq!(JobOutcome::from_verdicts(&v, true), JobOutcome::Pass);
        assert_eq!(
            JobOutcome::from_verdicts(&v, false),
            JobOutcome::Fail,
            "grading failed"
        );
    }

    #[test]
    fn unavailable_figure_fails_unless_skip() {
        let mut figs = FigureSet::from_job_stats(&stats_with_ttft(&[100.0]));
        figs.tokens_per_joule = Figure::missing(Basis::Measured, "no GPU: NVML library not found");
        let v = evaluate(&spec("min_tokens_per_joule = 2.0"), &figs);
        let t = by(&v, "min_tokens_per_joule");
        assert_eq!(t.outcome, Outcome::Unavailable);
        assert_eq!(t.value, None);
        assert_eq!(
            t.message,
            "tokens_per_joule = unavailable (no GPU: NVML library not found), bound >= 2 tokens/J (measured)"
        );
        assert_eq!(JobOutcome::from_verdicts(&v, true), JobOutcome::Fail);

        let v = evaluate(
            &spec("min_tokens_per_joule = 2.0\nwhen_unavailable = \"skip\""),
            &figs,
        );
        let t = by(&v, "min_tokens_per_joule");
        assert_eq!(t.outcome, Outcome::Skipped);
        assert!(
            t.message
                .ends_with("; skipped (when_unavailable = \"skip\")"),
            "{}",
            t.message
        );
        assert_eq!(JobOutcome::from_verdicts(&v, true), JobOutcome::Pass);
    }

    #[test]
    fn energy_basis_is_carried_into_verdict() {
        let mut figs = FigureSet::from_job_stats(&stats_with_ttft(&[100.0]));
        figs.tokens_per_joule = Figure::finite(1.5, Basis::Apportioned);
        figs.energy_per_trajectory_j = Figure::finite(12.25, Basis::Simulated);
        let v = evaluate(
            &spec("min_tokens_per_joule = 2.0\nmax_energy_per_trajectory_j = 20.0"),
            &figs,
        );
        let t = by(&v, "min_tokens_per_joule");
        assert_eq!(t.basis, Basis::Apportioned);
        assert_eq!(
            t.message,
            "tokens_per_joule = 1.5 tokens/J < bound 2 tokens/J (apportioned)"
        );
        assert_eq!(t.outcome, Outcome::Fail);
        let e = by(&v, "max_energy_per_trajectory_j");
        assert_eq!(
            e.message,
            "energy_per_trajectory_j = 12.25 J <= bound 20 J (simulated)"
        );
        assert_eq!(e.outcome, Outcome::Pass);
    }

    #[test]
    fn zero_successful_requests_always_fails_even_without_gates_and_with_skip() {
        let reqs = vec![RequestFigures::default(); 3]; // ok = false
        let stats = JobStats::aggregate(&reqs, AggregateParams::new(1));
        let figs = FigureSet::from_job_stats(&stats);
        let v = evaluate(&spec("when_unavailable = \"skip\""), &figs);
        assert_eq!(
            v.len(),
            2,
            "successful_requests and the built-in error rate"
        );
        assert_eq!(v[0].outcome, Outcome::Fail);
        assert_eq!(v[1].outcome, Outcome::Fail, "3 of 3 failed");
        assert_eq!(
            v[0].message,
            "successful_requests = 0 < bound 1 (request outcomes)"
        );
        assert_eq!(JobOutcome::from_verdicts(&v, true), JobOutcome::Fail);
        // latency gates on a job with no successes are unavailable with the reason
        let v = evaluate(&spec("ttft_ms = { p99 = 1.0 }"), &figs);
        let t = by(&v, "ttft_ms.p99");
        assert_eq!(t.outcome, Outcome::Unavailable);
        assert!(
            t.message.contains("(no successful requests)"),
            "{}",
            t.message
        );
        assert_eq!(
            evaluate(&GateSpec::default(), &FigureSet::default())[0].outcome,
            Outcome::Fail
        );
    }

    #[test]
    fn cache_gate_uses_reporting_requests_and_names_coverage() {
        let r = |c: Option<u64>| RequestFigures {
            ok: true,
            prompt_tokens: Some(100),
            cached_tokens: c,
            ..Default::default()
        };
        let stats = JobStats::aggregate(
            &[r(Some(80)), r(Some(60)), r(None)],
            AggregateParams::new(1),
        );
        let v = evaluate(
            &spec("min_cache_hit_rate = 0.8"),
            &FigureSet::from_job_stats(&stats),
        );
        assert_eq!(
            by(&v, "min_cache_hit_rate").message,
            "cache_hit_rate = 0.7 < bound 0.8 (server-reported) [2/3 requests reported cached tokens]"
        );
        let stats = JobStats::aggregate(&[r(None)], AggregateParams::new(1));
        let v = evaluate(
            &spec("min_cache_hit_rate = 0.8"),
            &FigureSet::from_job_stats(&stats),
        );
        let c = by(&v, "min_cache_hit_rate");
        assert_eq!(c.outcome, Outcome::Unavailable);
        assert!(c.message.contains("no request reported cached tokens"));
    }

    #[test]
    fn every_gate_kind_and_order() {
        let mut figs = FigureSet::from_job_stats(&stats_with_ttft(&[1.0]));
        figs.grade_pass_rate = Figure::finite(0.5, Basis::Grading);
        figs.regression_pct = Figure::finite(12.5, Basis::Baseline);
        let s = spec(
            "regression_pct = 10.0\nmin_grade_pass_rate = 1.0\n\
             e2e_ms = { p90 = 1.0 }\nitl_ms = { p95 = 1.0 }\ntpot_ms = { p50 = 1.0 }",
        );
        let v = evaluate(&s, &figs);
        let gates: Vec<&str> = v.iter().map(|v| v.gate.as_str()).collect();
        assert_eq!(
            gates,
            [
                "successful_requests",
                "max_error_rate",
                "itl_ms.p95",
                "tpot_ms.p50",
                "e2e_ms.p90",
                "min_grade_pass_rate",
                "regression_pct"
            ]
        );
        assert!(
            v[1].built_in,
            "no declared max_error_rate: the built-in bound 0"
        );
        assert_eq!(v[5].message, "grade_pass_rate = 0.5 < bound 1 (grading)");
        assert_eq!(
            v[6].message,
            "regression_pct = 12.5% > bound 10% (baseline comparison)"
        );
        assert!(v[2].message.contains("no token gaps"));
    }

    #[test]
    fn non_finite_figure_is_unavailable_and_bad_bound_fails() {
        let f = Figure::finite(f64::NAN, Basis::Measured);
        assert_eq!(f.value, None);
        assert_eq!(f.reason.as_deref(), Some("non-finite value"));
        let mut figs = FigureSet::from_job_stats(&stats_with_ttft(&[1.0]));
        figs.tokens_per_joule = Figure::finite(5.0, Basis::Measured);
        let s = GateSpec {
            min_tokens_per_joule: Some(f64::NAN),
            ..GateSpec::default()
        };
        assert_eq!(
            by(&evaluate(&s, &figs), "min_tokens_per_joule").outcome,
            Outcome::Fail
        );
        let errs = validate_spec(&s).unwrap_err();
        assert_eq!(errs[0].gate, "min_tokens_per_joule");
    }

    /// A failed request fails its job unless the gates declare a tolerated
    /// error rate (today half the requests answered 429/503 and every job passed).
    #[test]
    fn a_failed_request_fails_the_job_unless_an_error_rate_is_tolerated() {
        let mut reqs =
            vec![RequestFigures::from_token_arrivals(&[1.0, 2.0], Some(2), Some(3.0)); 2];
        reqs.extend(vec![RequestFigures::default(); 2]); // 429 / 503: failed
        let figs = FigureSet::from_job_stats(&JobStats::aggregate(&reqs, AggregateParams::new(1)));
        let v = evaluate(&GateSpec::default(), &figs);
        let e = by(&v, "max_error_rate");
        assert!(e.built_in);
        assert_eq!(e.outcome, Outcome::Fail);
        assert!(
            e.message
                .starts_with("error_rate = 0.5 > bound 0 (request outcomes)"),
            "{}",
            e.message
        );
        assert!(
            e.message.contains("declare `max_error_rate`"),
            "{}",
            e.message
        );
        assert_eq!(JobOutcome::from_verdicts(&v, true), JobOutcome::Fail);
        let tolerated = evaluate(&spec("max_error_rate = 0.5"), &figs);
        let e = by(&tolerated, "max_error_rate");
        assert!(!e.built_in);
        assert_eq!(e.outcome, Outcome::Pass);
        assert_eq!(
            JobOutcome::from_verdicts(&tolerated, true),
            JobOutcome::Pass
        );
    }

    /// An SWE job's harness exit is its own verdict (basis `harness`),
    /// never a stand-in `successful_requests = 1`.
    #[test]
    fn an_swe_harness_exit_is_its_own_verdict() {
        let figs = FigureSet {
            successful_requests: None,
            harness_exit_code: Some(Figure::of(0.0, Basis::Harness)),
            ..FigureSet::default()
        };
        let v = evaluate(&GateSpec::default(), &figs);
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].gate, "harness_exit");
        assert_eq!(v[0].basis, Basis::Harness);
        assert_eq!(v[0].message, "harness_exit_code = 0 == bound 0 (harness)");
        assert_eq!(v[0].outcome, Outcome::Pass);
        let failed = FigureSet {
            harness_exit_code: Some(Figure::of(1.0, Basis::Harness)),
            ..figs
        };
        let v = evaluate(&GateSpec::default(), &failed);
        assert_eq!(v[0].outcome, Outcome::Fail);
        assert_eq!(v[0].message, "harness_exit_code = 1 != bound 0 (harness)");
    }

    /// A gate on a figure from client-estimated tokens says so.
    #[test]
    fn a_gate_on_an_estimated_figure_says_so() {
        let mut r = RequestFigures::from_token_arrivals(&[10.0, 20.0, 30.0], Some(5), Some(31.0));
        r.output_tokens_estimated = true;
        let figs = FigureSet::from_job_stats(&JobStats::aggregate(&[r], AggregateParams::new(1)));
        let v = evaluate(&spec("tpot_ms = { p50 = 1.0 }"), &figs);
        let t = by(&v, "tpot_ms.p50");
        assert_eq!(
            t.tokens,
            Some(inferscope_model::TokenSource::ClientEstimate)
        );
        assert_eq!(
            t.message,
            "tpot_ms.p50 = 5 ms > bound 1 ms (client timing; tokens client-estimated)"
        );
    }

    #[test]
    fn validate_spec_ranges() {
        assert!(validate_spec(&spec("max_error_rate = 0.0\nttft_ms = { p99 = 500.0 }")).is_ok());
        let errs = validate_spec(&spec(
            "max_error_rate = 1.5\nmin_cache_hit_rate = -0.1\nttft_ms = { p50 = -1.0 }",
        ))
        .unwrap_err();
        let gates: Vec<&str> = errs.iter().map(|e| e.gate.as_str()).collect();
        assert_eq!(
            gates,
            ["ttft_ms.p50", "max_error_rate", "min_cache_hit_rate"]
        );
        assert_eq!(
            errs[1].to_string(),
            "gate `max_error_rate`: 1.5 must be a fraction between 0 and 1"
        );
    }

    #[test]
    fn validate_spec_rejects_a_latency_table_without_thresholds() {
        let errs = validate_spec(&spec("ttft_ms = {}\ne2e_ms = { p99 = 1.0 }")).unwrap_err();
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].gate, "ttft_ms");
        assert!(errs[0].problem.contains("no threshold"), "{}", errs[0]);
        assert!(validate_spec(&spec("ttft_ms = { mean = 0.0 }")).is_ok());
    }

    #[test]
    fn validate_spec_rejects_non_finite_and_negative_bounds() {
        let errs = validate_spec(&spec(
            "ttft_ms = { p99 = nan }\nitl_ms = { p90 = inf }\nregression_pct = -3.0",
        ))
        .unwrap_err();
        let gates: Vec<&str> = errs.iter().map(|e| e.gate.as_str()).collect();
        assert_eq!(gates, ["ttft_ms.p99", "itl_ms.p90", "regression_pct"]);
    }

    #[test]
    fn validate_overhead_ranges() {
        assert!(validate_overhead(&OverheadSpec::default()).is_ok());
        let bad: OverheadSpec =
            toml::from_str("pairs = 0\nmax_workload_effect_pct = -1.0\nmax_runner_cpu_pct = nan")
                .unwrap();
        let errs = validate_overhead(&bad).unwrap_err();
        let gates: Vec<&str> = errs.iter().map(|e| e.gate.as_str()).collect();
        assert_eq!(
            gates,
            ["max_workload_effect_pct", "max_runner_cpu_pct", "pairs"]
        );
        assert_eq!(
            errs[0].to_string(),
            "gate `max_workload_effect_pct`: -1 must be a finite percentage >= 0"
        );
        let inf: OverheadSpec = toml::from_str("max_workload_effect_pct = inf").unwrap();
        assert!(validate_overhead(&inf).is_err());
    }

    #[test]
    fn number_formatting() {
        use crate::format_number as f;
        assert_eq!(f(812.4), "812.4");
        assert_eq!(f(500.0), "500");
        assert_eq!(f(200.0 / 12.0), "16.667");
        assert_eq!(f(0.0), "0");
        assert_eq!(f(-0.0001), "-1.000e-4");
        assert_eq!(f(0.00012), "1.200e-4");
        assert_eq!(f(-2.5), "-2.5");
    }

    #[test]
    fn verdict_serializes_with_null_value_and_symbols() {
        let figs = FigureSet::default();
        let v = evaluate(&spec("min_tokens_per_joule = 2.0"), &figs);
        let j = serde_json::to_value(&v[1]).unwrap();
        assert!(j["value"].is_null());
        assert_eq!(j["comparison"], ">=");
        assert_eq!(j["outcome"], "unavailable");
    }
}
