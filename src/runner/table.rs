//! The per-step console table of each trajectory: latency (TTFT, duration), exact usage
//! (prompt, cached, generated tokens from each response's own `usage`), the prefix-cache
//! hit rate, and the step-attribution energy (docs/measurement.md) columns (samples in window — the fewest over devices —,
//! energy mJ with its basis, tokens per joule). Pure: renders from the typed
//! [`RunReport`].
//!
//! Absent values print as `—` (never 0). A generated-token count the client estimated
//! because the server sent no usage (`completion_tokens_estimate`, docs/measurement.md), and the
//! tokens per joule derived from it, print with a leading `~`. The header of each table
//! names the power source from what was sampled (`power nvml`, `power simulated`, `power
//! unavailable`, its reason printed once after the tables), the energy basis (`—` without
//! a power source) and the
//! trajectories declared and observed in flight; the step-attribution concurrency (docs/measurement.md) statement of
//! each join is printed once, after its tables. A load point's table is its first
//! trajectory's (every trajectory is in `report.json`).

use std::fmt::Write;

use crate::attribution::ABSENT;
use crate::model::{
    AttributionGroup, AttributionOutcome, Figure, RunReport, StepKind, StepReport, TokenSource,
    TrajectoryReport,
};

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |x| x.to_string())
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |x| format!("{x:.1}"))
}

fn hit_rate(s: &StepReport) -> Option<f64> {
    match (s.cached_tokens, s.prompt_tokens) {
        (Some(c), Some(p)) if p > 0 => Some(c as f64 / p as f64 * 100.0),
        _ => None,
    }
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
    for s in &t.steps {
        let gen_tokens = match s.output_tokens() {
            None => ABSENT.to_string(),
            Some((g, TokenSource::ClientEstimate)) => format!("~{g}"),
            Some((g, TokenSource::Server)) => g.to_string(),
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
            s.step_id,
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
        && let (Some(st), Some(u), Some(w)) = (
            m.total_energy_mj,
            m.unattributed_energy_mj,
            m.whole_run_energy_mj,
        )
    {
        let _ = writeln!(
            out,
            "energy: steps {st} mJ + unattributed {u} mJ = whole run {w} mJ ({})",
            report.power.source.map_or(ABSENT, |s| s.label())
        );
    }
}

fn rendered(report: &RunReport, t: &TrajectoryReport) -> String {
    let mut s = String::new();
    table(report, t, &mut s);
    s.trim_end().to_string()
}

fn trajectory<'a>(report: &'a RunReport, id: &str) -> Option<&'a TrajectoryReport> {
    report
        .jobs
        .iter()
        .flat_map(|j| j.trajectories.iter())
        .find(|t| t.id == id)
}

/// The tables of the run: one per trajectory of every sequential job (then that join's
/// concurrency statement, once); for each load point, its first trajectory's table with
/// the point's own statement and a count of the others.
pub fn step_tables(report: &RunReport) -> Vec<String> {
    let mut out = Vec::new();
    let load_group = |g: &AttributionGroup| g.group != "sequential jobs";
    for j in report.jobs.iter().filter(|j| j.load.is_none()) {
        for t in j.trajectories.iter().filter(|t| !t.steps.is_empty()) {
            out.push(rendered(report, t));
        }
    }
    let groups = report
        .attribution
        .as_ref()
        .map_or(&[][..], |a| &a.groups[..]);
    let seq_statement = groups
        .iter()
        .find(|g| !load_group(g))
        .map(|g| g.concurrency.statement.clone());
    if let Some(st) = seq_statement
        && !out.is_empty()
    {
        out.push(st);
    }
    if report.power.source.is_none() && !out.is_empty() {
        out.push(format!(
            "{}: every energy figure is null (basis unavailable)",
            report.power.describe()
        ));
    }
    for g in groups.iter().filter(|g| load_group(g)) {
        let Some(first) = g.trajectories.first().and_then(|id| trajectory(report, id)) else {
            continue;
        };
        let mut t = format!(
            "{} (first trajectory of {})\n{}\n{}",
            g.group,
            g.trajectories.len(),
            rendered(report, first),
            g.concurrency.statement
        );
        if g.trajectories.len() > 1 {
            t.push_str(&format!(
                "\n… {} more trajectories of this point in report.json",
                g.trajectories.len() - 1
            ));
        }
        out.push(t);
    }
    out
}
