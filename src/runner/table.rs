//! The per-step console table of each trajectory: latency (TTFT, duration), exact usage
//! (prompt, cached, generated tokens from each response's own `usage`), the prefix-cache
//! hit rate, and the ADR-013 energy columns (samples in window — the fewest over devices —,
//! energy mJ with its basis, tokens per joule). Pure: renders from a [`RunReport`].
//!
//! Absent values print as `—` (never 0). A generated-token count the client estimated
//! because the server sent no usage (`token_source = client_estimate`, DESIGN §5), and the
//! tokens per joule derived from it, print with a leading `~`. The header of each table
//! names the power source (`simulated` for the built-in simulator), the energy basis (`—`
//! without a power source) and the trajectories declared and observed in flight; the
//! ADR-013 concurrency statement is printed once per run.

use std::collections::HashMap;
use std::fmt::Write;

use serde_json::Value;

use crate::attribution::{ABSENT, in_flight_phrase};
use crate::runner::report::{RunReport, StepReport, TrajectoryReport};

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |x| x.to_string())
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |x| format!("{x:.1}"))
}

/// Per-step attribution facts looked up from `report.trajectory`.
#[derive(Default, Clone)]
struct StepFacts {
    samples: Option<u64>,
    energy_mj: Option<u64>,
    basis: Option<String>,
}

struct TrajectoryFacts {
    steps: HashMap<u64, StepFacts>,
    header: String,
    energy_line: Option<String>,
}

fn facts(report: &RunReport) -> (HashMap<String, TrajectoryFacts>, Option<String>) {
    let mut out = HashMap::new();
    let Some(run) = &report.trajectory else {
        return (out, None);
    };
    let power = run
        .get("power_source")
        .and_then(Value::as_str)
        .unwrap_or("none");
    let statement = run
        .pointer("/concurrency/statement")
        .and_then(Value::as_str)
        .map(str::to_string);
    // Declared and observed trajectories in flight, as the condition states them (reports
    // before these fields: the applied figure as declared, the run's observed figure).
    let u32_at = |p: &str| {
        run.pointer(p)
            .and_then(Value::as_u64)
            .map(|v| u32::try_from(v).unwrap_or(u32::MAX))
    };
    let declared = u32_at("/concurrency/declared_max_trajectories_in_flight")
        .or_else(|| u32_at("/concurrency/max_trajectories_in_flight"))
        .unwrap_or(1);
    let observed = if run
        .pointer("/concurrency/declared_max_trajectories_in_flight")
        .is_some()
    {
        u32_at("/concurrency/observed_max_trajectories_in_flight")
    } else {
        u32_at("/observed_max_trajectories_in_flight")
    };
    let in_flight = in_flight_phrase(declared, observed);
    for t in run
        .get("trajectories")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(id) = t.get("trajectory").and_then(Value::as_str) else {
            continue;
        };
        let basis = t
            .get("energy_basis")
            .and_then(Value::as_str)
            .unwrap_or(ABSENT);
        let mut steps = HashMap::new();
        for s in t
            .get("steps")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(step_id) = s.get("step_id").and_then(Value::as_u64) else {
                continue;
            };
            steps.insert(
                step_id,
                StepFacts {
                    samples: s.get("samples_in_window").and_then(Value::as_u64),
                    energy_mj: s.get("energy_mj").and_then(Value::as_u64),
                    basis: s
                        .get("energy_basis")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                },
            );
        }
        let withheld = t.get("status").and_then(Value::as_str) == Some("withheld");
        let header = if withheld {
            let reasons: Vec<String> = t
                .get("reasons")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| r.get("reason").and_then(Value::as_str).map(str::to_string))
                .collect();
            format!(
                "power {power} · attribution withheld ({})",
                reasons.join(", ")
            )
        } else {
            format!("power {power} · energy basis {basis} · {in_flight}")
        };
        let energy_line = match (
            t.get("total_energy_mj").and_then(Value::as_u64),
            t.get("unattributed_energy_mj").and_then(Value::as_u64),
            t.get("whole_run_energy_mj").and_then(Value::as_u64),
        ) {
            (Some(s), Some(u), Some(w)) => Some(format!(
                "energy: steps {s} mJ + unattributed {u} mJ = whole run {w} mJ ({power})"
            )),
            _ => None,
        };
        out.insert(
            id.to_string(),
            TrajectoryFacts {
                steps,
                header,
                energy_line,
            },
        );
    }
    (out, statement)
}

fn hit_rate(s: &StepReport) -> Option<f64> {
    match (s.cached_tokens, s.prompt_tokens) {
        (Some(c), Some(p)) if p > 0 => Some(c as f64 / p as f64 * 100.0),
        _ => None,
    }
}

fn table(t: &TrajectoryReport, f: Option<&TrajectoryFacts>, out: &mut String) {
    let _ = writeln!(
        out,
        "trajectory {} · stop {} · {}",
        t.id,
        t.stop_reason,
        f.map_or("power none · no samples", |f| f.header.as_str())
    );
    let _ = writeln!(
        out,
        "{:>5}  {:<8}  {:<14} {:>9}  {:<9}  {:>7}  {:>7}  {:>6}  {:>5}  {:>8}  {:>7}  {:>9}  {:<9}  {:>7}",
        "step",
        "kind",
        "name",
        "dur ms",
        "status",
        "prompt",
        "cached",
        "hit %",
        "gen",
        "TTFT ms",
        "samples",
        "energy mJ",
        "basis",
        "tok/J"
    );
    for s in &t.steps {
        let sf = f
            .and_then(|f| f.steps.get(&s.step_id))
            .cloned()
            .unwrap_or_default();
        let energy = sf.energy_mj.or(s.energy_mj);
        let est = if s.token_source == Some(crate::client::TokenSource::ClientEstimate) {
            "~"
        } else {
            ""
        };
        let tpj = match (s.completion_tokens, energy) {
            (Some(g), Some(e)) if e > 0 && s.kind == "llm_call" => {
                Some(format!("{est}{:.3}", g as f64 / (e as f64 / 1000.0)))
            }
            _ => None,
        };
        let gen_tokens = s
            .completion_tokens
            .map_or_else(|| ABSENT.to_string(), |g| format!("{est}{g}"));
        let mut name = s.name.clone();
        if name.chars().count() > 14 {
            name = name.chars().take(13).collect::<String>() + "…";
        }
        let _ = writeln!(
            out,
            "{:>5}  {:<8}  {:<14} {:>9.1}  {:<9}  {:>7}  {:>7}  {:>6}  {:>5}  {:>8}  {:>7}  {:>9}  {:<9}  {:>7}",
            s.step_id,
            s.kind,
            name,
            s.duration_ms,
            s.status,
            opt(s.prompt_tokens),
            opt(s.cached_tokens),
            hit_rate(s).map_or_else(|| ABSENT.to_string(), |h| format!("{h:.1}")),
            gen_tokens,
            ms(s.ttft_ms),
            opt(sf.samples),
            opt(energy),
            s.energy_basis
                .clone()
                .or(sf.basis)
                .unwrap_or_else(|| ABSENT.into()),
            tpj.unwrap_or_else(|| ABSENT.into()),
        );
    }
    if let Some(l) = f.and_then(|f| f.energy_line.as_ref()) {
        let _ = writeln!(out, "{l}");
    }
}

/// One table per trajectory of every job, then the concurrency statement (once).
pub fn step_tables(report: &RunReport) -> Vec<String> {
    let (facts, statement) = facts(report);
    let mut out = Vec::new();
    for j in &report.jobs {
        for t in &j.trajectories {
            if t.steps.is_empty() {
                continue;
            }
            let mut s = String::new();
            table(t, facts.get(&t.id), &mut s);
            out.push(s.trim_end().to_string());
        }
    }
    if let Some(st) = statement
        && !out.is_empty()
    {
        out.push(st);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> RunReport {
        serde_json::from_str(include_str!("../../fixtures/runs/complete/report.json")).unwrap()
    }

    fn first_llm_row(r: &RunReport) -> String {
        let tables = step_tables(r);
        tables[0]
            .lines()
            .find(|l| l.contains("llm_call"))
            .unwrap()
            .to_string()
    }

    #[test]
    fn estimated_generated_tokens_are_marked() {
        let mut r = fixture();
        let row = first_llm_row(&r);
        assert!(!row.contains('~'), "{row}");
        let st = &mut r.jobs[0].trajectories[0].steps[0];
        assert_eq!(st.completion_tokens, Some(4));
        st.token_source = Some(crate::client::TokenSource::ClientEstimate);
        let row = first_llm_row(&r);
        assert!(row.contains(" ~4 "), "{row}");
        assert!(
            row.contains("~0.77"),
            "tok/J from an estimate is marked too: {row}"
        );
    }
}
