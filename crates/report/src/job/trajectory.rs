//! A job's trajectory and step reports: each step's energy and step-attribution figures
//! from its trajectory's join outcome, output tokens and tokens per joule.

use std::collections::HashSet;

use crate::energy::RunEnergy;
use crate::model::attribution::CountedStep;
use crate::model::{
    AttributionOutcome, Basis, Figure, NO_STEP_ENERGY, RequestRecord, StepAttribution, StepKind,
    StepReport, TokenCount, TrajectoryOutcome, TrajectoryReport, tokens_per_joule,
};
use crate::records::{StepRecord, TrajectoryRecord};

/// The output tokens of `requests`' successful ones and their source: `None` when one has
/// no count (a partial sum is not a total); `Some((0, server))` without any.
pub(super) fn output_tokens<'a>(
    requests: impl Iterator<Item = &'a RequestRecord>,
) -> Option<TokenCount> {
    TokenCount::total(
        requests
            .filter(|r| r.is_success())
            .map(RequestRecord::output_token_count),
    )
}

/// Why a step has no energy figure, when its join has none (see [`step_energy`]).
fn missing_energy_reason(a: &StepAttribution) -> String {
    let with_power: Vec<&crate::model::attribution::StepDeviceEnergy> = a
        .devices
        .iter()
        .filter(|d| d.samples_in_window.is_some())
        .collect();
    let without: Vec<&str> = with_power
        .iter()
        .filter(|d| d.energy_mj.is_none())
        .map(|d| d.device.as_str())
        .collect();
    if with_power.len() > 1 && without.len() < with_power.len() {
        format!(
            "withheld: device {} had no power-sample segment inside the window, so a sum \
             over the others would be partial (per-device figures in attribution.devices)",
            without.join(", ")
        )
    } else {
        "no power-sample segment lies fully inside the step window (shorter than the \
         sampling grid; its energy is in the trajectory's unattributed energy)"
            .to_string()
    }
}

/// A step's energy figure and its step-attribution figures (docs/measurement.md) from its
/// trajectory's join outcome. The step-attribution figures (samples, counter deltas, usage)
/// are kept whatever the power source; the energy is `null` with basis `unavailable`
/// without one.
fn step_energy(
    outcome: Option<&TrajectoryOutcome>,
    step_id: u64,
    run: &RunEnergy,
) -> (Figure<u64>, Option<StepAttribution>) {
    let metrics = match outcome {
        Some(AttributionOutcome::Attributed(m)) => Some(m),
        _ => None,
    };
    let step = metrics.and_then(|m| m.steps.iter().find(|s| s.step_id == step_id));
    let attribution = step.map(|s| s.attribution.clone());
    if run.power().source.is_none() {
        let why = format!(
            "no power source: {}",
            run.power()
                .reason
                .as_deref()
                .unwrap_or("nothing supplied power readings")
        );
        return (Figure::missing(Basis::Unavailable, why), attribution);
    }
    let energy = match (outcome, metrics, step) {
        (None, _, _) => Figure::missing(Basis::Unavailable, "no telemetry joined this step"),
        (Some(AttributionOutcome::Withheld(w)), _, _) => {
            let reasons: Vec<&str> = w.reasons.iter().map(|r| r.label()).collect();
            Figure::missing(
                run.basis(w.concurrency.max_trajectories_in_flight),
                format!("attribution withheld ({})", reasons.join(", ")),
            )
        }
        (_, Some(m), None) => {
            let why = m
                .dropped_steps
                .iter()
                .find(|d| d.step_id == step_id)
                .map_or("not in the join", |d| d.reason.label());
            Figure::missing(
                run.basis(m.concurrency.max_trajectories_in_flight),
                format!("step dropped from attribution ({why})"),
            )
        }
        (_, _, Some(sm)) => {
            let basis = sm.energy_basis.map_or(Basis::Unavailable, Basis::from);
            match sm.energy_mj {
                Some(v) => Figure::of(v, basis),
                None => Figure::missing(basis, missing_energy_reason(&sm.attribution)),
            }
        }
        (_, None, None) => Figure::missing(Basis::Unavailable, "no join"),
    };
    (energy, attribution)
}

/// A tokens-per-joule figure from an output-token count and an energy figure (mJ).
pub(super) fn per_joule_figure(
    tokens: Option<TokenCount>,
    energy: &Figure<u64>,
    no_tokens: &str,
) -> Figure<f64> {
    let f = match (tokens, energy.value) {
        (None, _) => Figure::missing(energy.basis, no_tokens),
        (Some(_), None) => Figure::missing(
            energy.basis,
            energy.reason.clone().unwrap_or_else(|| "no energy".into()),
        ),
        (Some(TokenCount { tokens: t, .. }), Some(e)) => Figure::finite_or(
            tokens_per_joule(Some(t), Some(e)),
            energy.basis,
            if t == 0 {
                "no output tokens"
            } else {
                "no energy"
            },
        ),
    };
    f.with_tokens(tokens.map(|t| t.source))
}

fn step_report(
    s: &StepRecord,
    outcome: Option<&TrajectoryOutcome>,
    run: &RunEnergy,
    warmup: bool,
) -> StepReport {
    let r = s.request.as_ref();
    let (energy, mut attribution) = step_energy(outcome, s.step_id, run);
    if let (Some(a), StepKind::LlmCall) = (attribution.as_mut(), s.kind) {
        a.counters_low_confidence = run.counters_low_confidence(CountedStep {
            start_ns: s.start_ns,
            first_token_ns: r.and_then(|r| r.ttft_ns),
            end_ns: s.end_ns,
        });
    }
    let tokens = r.and_then(RequestRecord::output_token_count);
    let tokens_per_joule = if s.kind == StepKind::LlmCall {
        per_joule_figure(tokens, &energy, "no output-token count")
    } else {
        Figure::missing(energy.basis, "not an LLM step")
    };
    StepReport {
        step_id: s.step_id,
        kind: s.kind,
        name: s.name.clone(),
        start_ns: s.start_ns,
        end_ns: s.end_ns,
        duration_ms: s.duration_ms(),
        start_before_anchor_ns: s.start_before_anchor_ns,
        end_before_anchor_ns: s.end_before_anchor_ns,
        harness_step_id: s.harness_step_id,
        status: s.status_known.then_some(s.status),
        failure_code: s.failure_code,
        tool_error: s.tool_error,
        prompt_tokens: r.and_then(|r| r.prompt_tokens),
        cached_tokens: r.and_then(|r| r.cached_tokens),
        completion_tokens: r.and_then(|r| r.completion_tokens),
        completion_tokens_estimate: r.and_then(|r| r.completion_tokens_estimate),
        ttft_ms: r.and_then(|r| r.ttft_ms()),
        max_tokens: s.max_tokens.map(u64::from),
        finish_reason: r.and_then(|r| r.finish_reason.clone()),
        http_status: r.and_then(|r| r.http_status),
        response_model: r.and_then(|r| r.response_model.clone()),
        tool_call_id: s.tool_call_id.clone(),
        energy,
        tokens_per_joule,
        warmup,
        attribution,
    }
}

pub(super) fn trajectory_report(
    t: &TrajectoryRecord,
    graded_pass: Option<bool>,
    run: &RunEnergy,
    warm: &HashSet<&str>,
) -> TrajectoryReport {
    let outcome = run.outcome(&t.id);
    let steps: Vec<StepReport> = t
        .steps
        .iter()
        .map(|s| {
            let warmup = s
                .request
                .as_ref()
                .is_some_and(|r| warm.contains(r.request_id.as_str()));
            step_report(s, outcome, run, warmup)
        })
        .collect();
    // Output tokens over the LLM steps: every one counted, or none (never a sum with 0).
    let llm: Vec<&StepReport> = steps
        .iter()
        .filter(|s| s.kind == StepKind::LlmCall)
        .collect();
    let tokens = if llm.is_empty() {
        Err("no LLM step".to_string())
    } else {
        llm.iter().try_fold(TokenCount::server(0), |sum, s| {
            s.output_token_count()
                .map(|k| sum.plus(k))
                .ok_or_else(|| format!("LLM step {} has no output-token count", s.step_id))
        })
    };
    let completion_tokens = match &tokens {
        Ok(c) => Figure::of(c.tokens, c.basis()).with_tokens(Some(c.source)),
        Err(why) => Figure::missing(Basis::ServerReported, why.clone()),
    };
    let energy = match outcome {
        Some(AttributionOutcome::Attributed(m)) => {
            let basis = m.energy_basis.map_or(Basis::Unavailable, Basis::from);
            Figure::from_option(m.total_energy_mj, basis, NO_STEP_ENERGY)
        }
        _ => steps
            .first()
            .map(|s| Figure::missing(s.energy.basis, s.energy.reason.clone().unwrap_or_default()))
            .unwrap_or_else(|| Figure::missing(Basis::Unavailable, "no step")),
    };
    let tokens_per_joule = per_joule_figure(
        tokens.as_ref().ok().copied(),
        &energy,
        tokens.as_ref().err().map_or("", String::as_str),
    );
    TrajectoryReport {
        id: t.id.clone(),
        index: t.index,
        stop_reason: t.stop_reason,
        start_ns: t.start_ns,
        end_ns: t.end_ns,
        graded_pass,
        completion_tokens,
        energy,
        tokens_per_joule,
        steps,
        attribution: outcome.map(TrajectoryOutcome::without_steps),
        shard: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{PowerReport, StopReason, TokenSource};

    fn llm(step_id: u64, completion: Option<u64>) -> StepRecord {
        let mut r = RequestRecord::new(&format!("r{step_id}"), 0, 0, true);
        r.status = crate::model::RequestStatus::Success;
        r.completion_tokens = completion;
        StepRecord::completed_llm_call(step_id, 0, 1, r)
    }

    /// A trajectory with an LLM step that lacks a token count has no token total and no
    /// tokens per joule — never a sum with 0 for the missing step.
    #[test]
    fn a_step_without_a_token_count_makes_the_trajectory_figures_missing() {
        let t = TrajectoryRecord {
            id: "s::j#0".into(),
            index: 0,
            stop_reason: StopReason::FinalAnswer,
            steps: vec![llm(1, Some(10)), llm(2, None)],
            tools_called: vec![],
            final_answer: None,
            stdout: None,
            start_ns: 0,
            end_ns: 2,
        };
        let run = RunEnergy::new(PowerReport {
            source: None,
            reason: Some("nothing was sampled (no telemetry ran)".into()),
            devices: 0,
            not_attributable: Vec::new(),
        });
        let r = trajectory_report(&t, None, &run, &HashSet::new());
        assert_eq!(r.completion_tokens.value, None);
        assert_eq!(
            r.completion_tokens.reason.as_deref(),
            Some("LLM step 2 has no output-token count")
        );
        assert_eq!(r.tokens_per_joule.value, None);
        // With energy present, a missing token count still gives no ratio.
        let e = Figure::of(5000, Basis::Measured);
        let f = per_joule_figure(None, &e, "LLM step 2 has no output-token count");
        assert_eq!(f.value, None);
        assert_eq!(f.basis, Basis::Measured);
        let f = per_joule_figure(Some(TokenCount::of(10, true)), &e, "");
        assert_eq!(f.value, Some(2.0));
        assert_eq!(f.tokens, Some(TokenSource::ClientEstimate));
        // Every count present: the total, with the weaker source.
        let t = TrajectoryRecord {
            steps: vec![llm(1, Some(10)), llm(2, Some(5))],
            ..t
        };
        let r = trajectory_report(&t, None, &run, &HashSet::new());
        assert_eq!(r.completion_tokens.value, Some(15));
        assert_eq!(r.completion_tokens.basis, Basis::ServerReported);
    }
}
