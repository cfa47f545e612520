//! The notes a job's report carries: energy, an SWE harness's outcome and steps file, a
//! baseline not compared, streaming aggregation, units that did not finish, and the
//! workload figures' console notes.

use std::collections::BTreeMap;

use crate::energy::RunEnergy;
use crate::model::{Basis, Figure, HarnessReport};

/// The harness's exit code as the built-in `harness_exit` figure (basis `harness`).
pub(super) fn harness_exit_figure(h: &HarnessReport) -> Figure<f64> {
    match (h.exit_code, h.timed_out, &h.spawn_error) {
        (_, true, _) => Figure::missing(Basis::Harness, "timed out; its process group was killed"),
        (_, _, Some(e)) => Figure::missing(Basis::Harness, format!("could not start: {e}")),
        (Some(c), _, _) => Figure::of(f64::from(c), Basis::Harness),
        (None, _, _) => Figure::missing(Basis::Harness, "ended by a signal, no exit code"),
    }
}

/// A job's energy notes: every device that is not attributable (a GPU in MIG mode, with
/// the reason), whether the energy is simulated, and when per-step energy is apportioned.
pub(super) fn energy_notes(
    run: &RunEnergy,
    job_energy: &crate::model::JobEnergy,
    in_flight: u32,
) -> Vec<String> {
    let mut notes: Vec<String> = run.power().not_attributable.clone();
    match job_energy.energy_per_trajectory_j.basis {
        Basis::Simulated => {
            notes.push("energy is simulated (built-in simulator power model), not measured".into())
        }
        Basis::Apportioned => {
            if job_energy.energy_j.basis == Basis::Simulated {
                notes.push(
                    "energy is simulated (built-in simulator power model), not measured".into(),
                );
            }
            notes.push(format!(
                "{} (achieved per point in the curve): per-step energy is apportioned, \
                 not measured, at every point with more than one in flight \
                 (docs/measurement.md); J/out tok in the curve is window energy",
                crate::attribution::in_flight_phrase(in_flight, None)
            ));
        }
        _ => {}
    }
    notes
}

/// The notes of an SWE harness's outcome, pushed onto `notes`; `true` when the harness
/// succeeded (it ran, was not timed out and exited 0).
pub(super) fn harness_notes(h: &HarnessReport, notes: &mut Vec<String>) -> bool {
    let mut ok = true;
    if h.timed_out {
        notes.push("harness timed out; its process group was killed".into());
        ok = false;
    } else if let Some(err) = &h.spawn_error {
        notes.push(format!("harness: {err}"));
        ok = false;
    } else if h.exit_code != Some(0) {
        ok = false;
    }
    if let Some(f) = &h.steps_file {
        notes.extend(steps_file_notes(f));
    }
    ok
}

/// The console notes of an SWE steps file: a truncated tail, every rejected line (by its
/// line number) and steps that start before the run's anchor.
fn steps_file_notes(f: &crate::model::StepsFileReport) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(e) = &f.read_error {
        notes.push(format!("steps file unreadable: {e}"));
    }
    if let Some(l) = f.truncated_line {
        notes.push(format!(
            "steps file: truncated_tail: line {l} was half-written and left out; the {} \
             marker(s) before it are kept",
            f.markers
        ));
    }
    for r in &f.rejected {
        notes.push(format!(
            "steps file line {}: rejected step marker: {}",
            r.line, r.message
        ));
    }
    if f.rejected_count > f.rejected.len() {
        notes.push(format!(
            "steps file: {} more rejected line(s)",
            f.rejected_count - f.rejected.len()
        ));
    }
    if !f.before_anchor_steps.is_empty() {
        notes.push(format!(
            "steps file: {} step(s) start before the run's reference instant (steps {:?}): \
             kept with their real times, dropped from attribution by the outside_run rule \
             (docs/measurement.md)",
            f.before_anchor_steps.len(),
            f.before_anchor_steps
        ));
    }
    notes
}

/// Why job `id` that ran was not compared with baseline `b`.
pub(super) fn uncompared_note(
    b: &crate::job::input::BaselineRef<'_>,
    streamed: bool,
    id: &str,
) -> String {
    if streamed {
        format!(
            "baseline {}: not compared during the run (streaming aggregation keeps no \
             samples); `compare RUN_DIR --baseline {}` compares its requests.jsonl",
            b.name, b.name
        )
    } else {
        format!("baseline {} has no job {id}", b.name)
    }
}

/// The note of a job aggregated by streaming: the error bound of its percentiles.
pub(super) fn streaming_note(st: &crate::curve::StreamedUnits) -> String {
    let b = crate::model::streaming::bound();
    format!(
        "streaming aggregation: every percentile within{} of the exact one ({}); \
         {} requests, every record in requests.jsonl",
        b.suffix().trim_end_matches(" (streaming)"),
        b.method,
        st.all.requests()
    )
}

/// One note per stop reason of the units that did not finish: `N of M trajectories
/// stopped: REASON (first: ID)`, in reason order.
pub(super) fn unfinished_summary(trajectories: &[crate::records::TrajectoryRecord]) -> Vec<String> {
    let mut by_reason: BTreeMap<&'static str, (u64, String)> = BTreeMap::new();
    for t in trajectories.iter().filter(|t| !t.stop_reason.finished()) {
        by_reason
            .entry(t.stop_reason.as_str())
            .or_insert((0, t.id.clone()))
            .0 += 1;
    }
    unfinished_lines(&by_reason, trajectories.len() as u64)
}

/// [`unfinished_summary`]'s lines from the counts by stop reason of `total` units.
pub(super) fn unfinished_lines(
    by_reason: &BTreeMap<&'static str, (u64, String)>,
    total: u64,
) -> Vec<String> {
    by_reason
        .iter()
        .map(|(reason, (n, first))| {
            format!(
                "{n} of {total} units stopped: {reason} (first: {first}; every unit in requests.jsonl)"
            )
        })
        .collect()
}

/// The console notes of the workload figures.
pub(super) mod workload_notes {
    use crate::stats::JobStats;

    /// `warm-up: N request(s) failed (connect ×2, …)`, when any did: they are in
    /// `failure_codes`, yet no statistic or gate counts them.
    pub(crate) fn warmup_failures(
        failed: &std::collections::BTreeMap<crate::model::FailureCode, u64>,
    ) -> Option<String> {
        let n: u64 = failed.values().sum();
        (n > 0).then(|| {
            let codes: Vec<String> = failed
                .iter()
                .map(|(c, k)| format!("{} ×{k}", c.as_str()))
                .collect();
            format!(
                "warm-up: {n} request(s) failed ({}): they are in failure_codes, and left out \
                 of every statistic and gate like every warm-up request",
                codes.join(", ")
            )
        })
    }

    /// `N of M fixed-length requests came back short`, when any did.
    pub(crate) fn short_outputs(s: &JobStats) -> Option<String> {
        let short = s.short_outputs.filter(|&n| n > 0)?;
        Some(format!(
            "short_output: {short} of the successful requests that asked for a fixed output \
             length came back shorter (rate {:.3}); the engine ignored `ignore_eos` / \
             `min_tokens` or stopped early",
            s.short_output_rate.unwrap_or(f64::NAN)
        ))
    }

    /// How many LLM steps' counter deltas are low confidence (each step's own reason is in
    /// its `attribution.counters_low_confidence`).
    pub(crate) fn counters_low_confidence(
        trajectories: &[crate::model::TrajectoryReport],
    ) -> Option<String> {
        let flagged = trajectories
            .iter()
            .flat_map(|t| &t.steps)
            .filter(|s| {
                s.attribution
                    .as_ref()
                    .is_some_and(|a| a.counters_low_confidence.is_some())
            })
            .count();
        (flagged > 0).then(|| {
            format!(
                "engine counters: {flagged} LLM step(s) low confidence: their prompt and cache \
                 deltas may miss their own counts or hold another request's (each step's \
                 attribution.counters_low_confidence says which); a step's own usage, where \
                 the server sent it, is its figure"
            )
        })
    }

    /// The largest asked-vs-reported prompt-token difference, when it is not 0.
    pub(crate) fn prompt_diff(s: &JobStats) -> Option<String> {
        let d = s.prompt_tokens_diff_max.filter(|&d| d != 0)?;
        Some(format!(
            "prompt tokens: the server reported up to {d:+} tokens against the size asked \
             (prompt_tokens_diff_max; reported − asked)"
        ))
    }
}
