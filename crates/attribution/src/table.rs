//! Plain-text per-step table of a trajectory (pure; returns a `String`).
//!
//! Token, hit-rate and tokens-per-joule columns show both bases as `usage/counter` (per-response
//! usage, then the counter delta: both shown, neither replaces the other;
//! docs/measurement.md "Per step and per trajectory (energy and engine counters)"). Absent values
//! (`null`) print as `—`.

use std::fmt::Write as _;

use super::metrics::{
    DroppedStep, StepMetrics, TrajectoryMetrics, TrajectoryOutcome, WithheldTrajectory,
    WithholdReason,
};

/// The placeholder printed for an absent (`null`) value.
pub const ABSENT: &str = "—";

/// Lays `rows` out as a column-fit text table, one line per row (no trailing newline).
///
/// Each column is as wide as its widest cell, measured in `char`s (not bytes, so `—`
/// counts as one). A cell is padded with spaces on the right when `left(column)` is true
/// (left-aligned) and on the left otherwise (right-aligned); cells are joined with two
/// spaces, each line starts with `indent`, and trailing whitespace is trimmed. A header
/// row, if any, is just the first row: it takes part in the width measurement.
pub fn align_rows<const N: usize>(
    rows: &[[String; N]],
    left: impl Fn(usize) -> bool,
    indent: &str,
) -> Vec<String> {
    let mut widths = [0usize; N];
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    rows.iter()
        .map(|cells| {
            let mut l = String::from(indent);
            for (i, (c, w)) in cells.iter().zip(widths).enumerate() {
                let pad = " ".repeat(w - c.chars().count());
                if i > 0 {
                    l.push_str("  ");
                }
                if left(i) {
                    l.push_str(c);
                    l.push_str(&pad);
                } else {
                    l.push_str(&pad);
                    l.push_str(c);
                }
            }
            l.trim_end().to_string()
        })
        .collect()
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |v| v.to_string())
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |v| format!("{:.1}%", v * 100.0))
}

fn tpj(v: Option<f64>) -> String {
    v.map_or_else(|| ABSENT.to_string(), |v| format!("{v:.3}"))
}

fn pair(a: String, b: String) -> String {
    format!("{a}/{b}")
}

fn trajectory_label(t: &Option<String>) -> &str {
    t.as_deref().unwrap_or(ABSENT)
}

const HEADERS: [&str; 12] = [
    "step",
    "kind",
    "duration ms",
    "min samples",
    "energy mJ",
    "basis",
    "counter mJ",
    "prompt u/c",
    "cached u/c",
    "generated u/c",
    "hit rate u/c",
    "tok/J u/c",
];

fn row(s: &StepMetrics) -> [String; 12] {
    let mut basis = s.energy_basis.map_or(ABSENT, |b| b.label()).to_string();
    if s.low_confidence {
        basis.push_str(" low_confidence");
    }
    [
        s.step_id.to_string(),
        s.kind.label().to_string(),
        format!("{:.3}", s.duration_ns as f64 / 1e6),
        opt(s.samples_in_window),
        opt(s.energy_mj),
        basis,
        opt(s.counter_energy_mj),
        pair(opt(s.usage.prompt_tokens), opt(s.prompt_tokens_delta)),
        pair(opt(s.usage.cached_tokens), opt(s.cache_hits_delta)),
        pair(
            opt(s.usage.completion_tokens),
            opt(s.generation_tokens_delta),
        ),
        pair(pct(s.usage_cache_hit_rate), pct(s.cache_hit_rate)),
        pair(tpj(s.usage_tokens_per_joule), tpj(s.tokens_per_joule)),
    ]
}

fn dropped_line(d: &DroppedStep) -> String {
    match d.neighbour_step_id {
        Some(n) => format!(
            "step {} ({}): {} with step {n}",
            d.step_id,
            d.kind.label(),
            d.reason.label()
        ),
        None => format!(
            "step {} ({}): {}",
            d.step_id,
            d.kind.label(),
            d.reason.label()
        ),
    }
}

/// Renders the per-step table of an attributed trajectory.
///
/// Line 1 names the trajectory, the power source label (`instant`, `averaged_1s`,
/// `simulated`, `mixed`, or `—` without power), the energy basis (`—` without power) and
/// the trajectories declared and observed in flight; line 2 is the concurrency statement;
/// then a header row and one row per kept step (columns: step, kind, duration ms, min
/// samples — the fewest power samples in the window over devices,
/// `StepMetrics::samples_in_window` —, energy mJ, basis, counter mJ — `null` unless every
/// device with energy in the window has a counter figure —, prompt / cached / generated
/// tokens, cache hit rate, tokens per joule); then the totals with the
/// reconciliation, the dropped steps and the marker flags.
pub fn render_step_table(t: &TrajectoryMetrics) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "trajectory {} · power source: {} · energy basis: {} · concurrency: {}",
        trajectory_label(&t.trajectory),
        t.power_basis.map_or(ABSENT, |p| p.label()),
        t.energy_basis.map_or(ABSENT, |b| b.label()),
        t.concurrency.in_flight(),
    );
    let _ = writeln!(out, "{}", t.concurrency.statement);

    let rows: Vec<[String; 12]> = std::iter::once(HEADERS.map(String::from))
        .chain(t.steps.iter().map(row))
        .collect();
    // Text columns (kind, basis) left-aligned, numbers right-aligned.
    for l in align_rows(&rows, |i| i == 1 || i == 5, "") {
        let _ = writeln!(out, "{l}");
    }

    let _ = writeln!(
        out,
        "energy mJ: steps {} (llm {}, tool {}) + unattributed {} = whole run {}",
        opt(t.total_energy_mj),
        opt(t.llm_energy_mj),
        opt(t.tool_energy_mj),
        opt(t.unattributed_energy_mj),
        opt(t.whole_run_energy_mj),
    );
    let _ = writeln!(
        out,
        "generated tokens u/c: {} · tok/J u/c: {} · counter-basis energy mJ: {}",
        pair(
            opt(t.total_usage_completion_tokens),
            opt(t.total_generation_tokens)
        ),
        pair(
            tpj(t.trajectory_usage_tokens_per_joule),
            tpj(t.trajectory_tokens_per_joule)
        ),
        opt(t.total_counter_energy_mj),
    );
    for d in &t.devices {
        if d.counter_energy_mj.is_some() || d.counter_samples_in_run.is_some() {
            let _ = writeln!(
                out,
                "device {}: counter {} mJ / trapezoid {} mJ = ratio {}",
                d.device,
                opt(d.counter_energy_mj),
                opt(d.whole_run_energy_mj),
                d.counter_to_trapezoid_ratio
                    .map_or_else(|| ABSENT.to_string(), |r| format!("{r:.3}")),
            );
        }
    }
    if !t.dropped_steps.is_empty() {
        let _ = writeln!(out, "dropped steps: {}", t.dropped_steps.len());
        for d in &t.dropped_steps {
            let _ = writeln!(out, "  {}", dropped_line(d));
        }
    }
    for f in &t.marker_flags {
        let _ = writeln!(
            out,
            "flag: step {} goes backwards (starts before step {} ends)",
            f.step_id, f.previous_step_id
        );
    }
    out
}

fn reason_text(r: &WithholdReason) -> String {
    match r {
        WithholdReason::NoAnchor => "no_anchor (report lacks reference_instant_unix_ns)".into(),
        WithholdReason::NoStepFile => "no_step_file".into(),
        WithholdReason::NoSteps => "no_steps".into(),
        WithholdReason::NoValidSteps => "no_valid_steps (every step dropped)".into(),
        WithholdReason::CounterRegression {
            counter,
            at_elapsed_ns,
            previous_value,
            value,
        } => format!(
            "counter_regression ({} {previous_value} → {value} at {at_elapsed_ns} ns, no reset)",
            counter.label()
        ),
        WithholdReason::InvalidRunWindow {
            start_elapsed_ns,
            end_elapsed_ns,
        } => format!("invalid_run_window ({start_elapsed_ns} > {end_elapsed_ns} ns)"),
        WithholdReason::InvalidSeries {
            source_kind,
            source,
            problem,
        } => format!(
            "invalid_series ({} {source}: {})",
            source_kind.label(),
            problem.label()
        ),
    }
}

/// Renders a withheld trajectory: its label, every reason, and any steps that would have
/// been dropped.
pub fn render_withheld(w: &WithheldTrajectory) -> String {
    let mut out = format!(
        "trajectory {} · attribution withheld ({} marker{})\n",
        trajectory_label(&w.trajectory),
        w.markers,
        if w.markers == 1 { "" } else { "s" },
    );
    for r in &w.reasons {
        let _ = writeln!(out, "  reason: {}", reason_text(r));
    }
    for d in &w.dropped_steps {
        let _ = writeln!(out, "  dropped: {}", dropped_line(d));
    }
    out
}

/// Renders either outcome ([`render_step_table`] or [`render_withheld`]).
pub fn render_outcome(o: &TrajectoryOutcome) -> String {
    match o {
        TrajectoryOutcome::Attributed(t) => render_step_table(t),
        TrajectoryOutcome::Withheld(w) => render_withheld(w),
    }
}
