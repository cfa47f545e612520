//! The per-step console table of each trajectory: latency (TTFT, duration), exact usage
//! (prompt, cached, generated tokens from each response's own `usage`), the prefix-cache
//! hit rate, and the step-attribution energy columns (docs/measurement.md): samples in
//! window (the fewest over devices), energy mJ with its basis, tokens per joule. Pure: renders from the typed
//! [`RunReport`].
//!
//! Steps are numbered 1..n within their trajectory (the run-unique step id is in
//! `report.json` and `steps.jsonl`). Absent values print as `—` (never 0). A
//! generated-token count the client estimated because the server sent no usage
//! (`completion_tokens_estimate`, docs/measurement.md), and the tokens per joule derived from it,
//! print with a leading `~`. The header of each table names the power source from what was
//! sampled (`power nvml`, `power simulated`, `power unavailable`), the energy basis (`—`
//! without a power source) and the trajectories declared and observed in flight; under it
//! the trajectory's own step total (`energy: steps N mJ (basis)`).
//!
//! After the tables, once per run: the run's energy line — `all steps + unattributed =
//! whole run` when at most one trajectory was in flight (step windows never overlap, so
//! their sum is meaningful), else the whole run with the reason the steps are not summed —
//! and one concurrency statement (docs/measurement.md): the controlled-concurrency statement, the
//! apportioned one when more than one trajectory was in flight, or, without a power source,
//! one short line. A load point's table is its first trajectory's (every trajectory is in
//! `report.json`).

use std::fmt::Write;

use crate::attribution::ABSENT;
use crate::model::{
    AttributionOutcome, Figure, RunReport, StepKind, StepReport, TokenSource, TrajectoryReport,
};

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |x| x.to_string())
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |x| format!("{x:.1}"))
}

/// A step's cache hit rate, in percent.
fn hit_rate(s: &StepReport) -> Option<f64> {
    crate::stats::cache_hit_rate(s.cached_tokens, s.prompt_tokens).map(|r| r * 100.0)
}

fn estimated(f: &Figure<f64>) -> String {
    match f.value {
        None => ABSENT.into(),
        Some(v) if f.tokens == Some(TokenSource::ClientEstimate) => format!("~{v:.3}"),
        Some(v) => format!("{v:.3}"),
    }
}

/// `power nvml · energy basis measured · 1 trajectory in flight`, or the withholding. Without
/// a power source, `power unavailable` (the reason is printed once, after the tables).
fn header(report: &RunReport, t: &TrajectoryReport) -> String {
    let power = match report.power.source {
        Some(s) => format!("power {}", s.label()),
        None => "power unavailable".to_string(),
    };
    match &t.attribution {
        None => format!("{power} · no samples"),
        Some(AttributionOutcome::Withheld(w)) => {
            let reasons: Vec<&str> = w.reasons.iter().map(|r| r.label()).collect();
            format!("{power} · attribution withheld ({})", reasons.join(", "))
        }
        Some(AttributionOutcome::Attributed(m)) => format!(
            "{power} · energy basis {} · {}",
            m.energy_basis.map_or(ABSENT, |b| b.label()),
            m.concurrency.in_flight()
        ),
    }
}

fn table(report: &RunReport, t: &TrajectoryReport, out: &mut String) {
    let _ = writeln!(
        out,
        "trajectory {} · stop {} · {}",
        t.id,
        t.stop_reason.as_str(),
        header(report, t)
    );
    let _ = writeln!(
        out,
        "{:>5}  {:<8}  {:<14} {:>9}  {:<9}  {:>7}  {:>7}  {:>6}  {:>5}  {:>8}  {:>7}  {:>9}  {:<11}  {:>7}",
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
    for (number, s) in t.steps.iter().enumerate() {
        let gen_tokens = match s.output_token_count() {
            None => ABSENT.to_string(),
            Some(c) if c.is_estimate() => format!("~{}", c.tokens),
            Some(c) => c.tokens.to_string(),
        };
        let mut name = s.name.clone();
        if name.chars().count() > 14 {
            name = name.chars().take(13).collect::<String>() + "…";
        }
        let basis = match s.energy.basis {
            crate::model::Basis::Unavailable => ABSENT,
            b if s.energy.is_present() || s.attribution.is_some() => b.name(),
            _ => ABSENT,
        };
        let _ = writeln!(
            out,
            "{:>5}  {:<8}  {:<14} {:>9.1}  {:<9}  {:>7}  {:>7}  {:>6}  {:>5}  {:>8}  {:>7}  {:>9}  {:<11}  {:>7}",
            number + 1,
            s.kind.label(),
            name,
            s.duration_ms,
            s.status.map_or(ABSENT, |x| x.as_str()),
            opt(s.prompt_tokens),
            opt(s.cached_tokens),
            hit_rate(s).map_or_else(|| ABSENT.to_string(), |h| format!("{h:.1}")),
            gen_tokens,
            ms(s.ttft_ms),
            opt(s.attribution.as_ref().and_then(|a| a.samples_in_window)),
            opt(s.energy.value),
            basis,
            if s.kind == StepKind::LlmCall {
                estimated(&s.tokens_per_joule)
            } else {
                ABSENT.to_string()
            },
        );
    }
    if let Some(AttributionOutcome::Attributed(m)) = &t.attribution
        && let Some(st) = m.total_energy_mj
    {
        let _ = writeln!(
            out,
            "energy: steps {st} mJ ({})",
            m.energy_basis.map_or(ABSENT, |b| b.label())
        );
    }
}

fn rendered(report: &RunReport, t: &TrajectoryReport) -> String {
    let mut s = String::new();
    table(report, t, &mut s);
    s.trim_end().to_string()
}

/// The run's energy line (see the module docs), from its attributed trajectories; `None`
/// without an attributed trajectory with a whole-run figure.
fn run_energy_line(report: &RunReport) -> Option<String> {
    let attributed: Vec<_> = report
        .jobs
        .iter()
        .flat_map(|j| &j.trajectories)
        .filter_map(|t| match &t.attribution {
            Some(AttributionOutcome::Attributed(m)) => Some(m),
            _ => None,
        })
        .collect();
    let whole = match report
        .attribution
        .as_ref()
        .and_then(|a| a.whole_run_energy_mj)
    {
        Some(w) if !attributed.is_empty() => w,
        // A report from before the run-level figure: every trajectory then shared one run
        // window, so one whole-run integral (else there is no run line).
        _ => {
            let w = attributed.first()?.whole_run_energy_mj?;
            if attributed.iter().any(|m| m.whole_run_energy_mj != Some(w)) {
                return None;
            }
            w
        }
    };
    let source = report.power.source.map_or(ABSENT, |s| s.label());
    let in_flight = report
        .attribution
        .as_ref()
        .map_or(1, |a| a.concurrency.max_trajectories_in_flight);
    let totals: Vec<u64> = attributed
        .iter()
        .filter_map(|m| m.total_energy_mj)
        .collect();
    if in_flight <= 1 && totals.is_empty() {
        // Missing is never 0: no step has a figure of its own (each shorter than the
        // sampling grid, or withheld), so all of the run's energy is unattributed.
        return Some(format!(
            "energy (run): steps — (no step has an energy figure of its own) + unattributed \
             {whole} mJ = whole run {whole} mJ ({source})"
        ));
    }
    let steps: u64 = totals.iter().sum();
    if in_flight <= 1 && steps <= whole {
        Some(format!(
            "energy (run): all steps {steps} mJ + unattributed {} mJ = whole run {whole} mJ \
             ({source})",
            whole - steps
        ))
    } else {
        Some(format!(
            "energy (run): whole run {whole} mJ ({source}); steps of trajectories in flight \
             together overlap, so they are not summed (each trajectory's steps are above)"
        ))
    }
}

/// The run's one concurrency statement (see the module docs).
fn concurrency_statement(report: &RunReport) -> Option<String> {
    let a = report.attribution.as_ref()?;
    if report.power.source.is_none() {
        return Some(format!(
            "{}: no energy figure to attribute ({}).",
            report.power.describe(),
            a.concurrency.in_flight()
        ));
    }
    let controlled = a
        .groups
        .iter()
        .find(|g| g.concurrency.max_trajectories_in_flight <= 1)
        .map(|g| g.concurrency.statement.clone());
    let apportioned =
        (a.concurrency.max_trajectories_in_flight > 1).then(|| a.concurrency.statement.clone());
    match (controlled, apportioned) {
        // Both conditions in one run (a load sweep from one trajectory in flight up): each
        // statement on its own line, naming the groups it covers.
        (Some(c), Some(p)) => {
            let covered = |one: bool| {
                a.groups
                    .iter()
                    .filter(|g| (g.concurrency.max_trajectories_in_flight <= 1) == one)
                    .map(|g| g.group.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            };
            Some(format!("[{}] {c}\n[{}] {p}", covered(true), covered(false)))
        }
        (c, p) => c.or(p),
    }
}

fn trajectory<'a>(report: &'a RunReport, id: &str) -> Option<&'a TrajectoryReport> {
    report
        .jobs
        .iter()
        .flat_map(|j| j.trajectories.iter())
        .find(|t| t.id == id)
}

/// The tables of the run: one per trajectory of every sequential job; for each load
/// point, its first trajectory's table with a count of the others; then, once, the run's
/// energy line and its concurrency statement.
pub fn step_tables(report: &RunReport) -> Vec<String> {
    let mut out = Vec::new();
    for j in report.jobs.iter().filter(|j| j.load.is_none()) {
        for t in j.trajectories.iter().filter(|t| !t.steps.is_empty()) {
            out.push(rendered(report, t));
        }
    }
    let groups = report
        .attribution
        .as_ref()
        .map_or(&[][..], |a| &a.groups[..]);
    for g in groups.iter().filter(|g| g.group != "sequential jobs") {
        let Some(first) = g.trajectories.first().and_then(|id| trajectory(report, id)) else {
            continue;
        };
        let joined = g.trajectories_joined.max(g.trajectories.len() as u64);
        let mut t = format!(
            "{} (first trajectory of {joined})\n{}",
            g.group,
            rendered(report, first),
        );
        if joined > 1 {
            t.push_str(&format!(
                "\n… {} more trajectories of this point in requests.jsonl",
                joined - 1
            ));
        }
        out.push(t);
    }
    if out.is_empty() {
        return out;
    }
    out.extend(run_energy_line(report));
    out.extend(concurrency_statement(report));
    out
}
