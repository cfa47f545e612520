//! A trajectory's steps as bars (pure): duration (ms), energy (mJ, with its basis:
//! measured, apportioned, simulated, or missing with its reason) and the prefix-cache hit
//! of each model call (cached / prompt tokens, server-reported), one band per step.

use crate::model::{Basis, StepKind, StepReport, TrajectoryReport};

use super::draw::{self, BLUE, Frame, Key, ORANGE, Side, WIDTH};
use super::scale::{Axis, TARGET_TICKS, exact, num};
use super::svg::Node;
use super::svg::bounded;

const TOP: f64 = 50.0;
const PANEL_H: f64 = 170.0;
/// Steps a chart draws at most; the rest are counted in its subtitle.
pub const MAX_CHART_STEPS: usize = 100;
/// Bars get a value label above them up to this many steps.
const LABELS_UP_TO: usize = 24;

/// A panel: key, title, unit, the figure of a step, and a fixed axis (else from 0 to the
/// largest value).
type Panel = (
    &'static str,
    &'static str,
    &'static str,
    fn(&StepReport) -> Bar,
    Option<Axis>,
);

/// One bar's figure.
struct Bar {
    v: Option<f64>,
    basis: Basis,
    reason: Option<String>,
    /// The value in words for the tooltip.
    words: String,
}

fn color(kind: StepKind) -> &'static str {
    match kind {
        StepKind::LlmCall => BLUE,
        StepKind::Tool => ORANGE,
    }
}

fn duration(s: &StepReport) -> Bar {
    let basis = if s.harness_step_id.is_some() {
        Basis::Harness
    } else {
        Basis::ClientTiming
    };
    Bar {
        v: Some(s.duration_ms).filter(|v| v.is_finite()),
        basis,
        reason: (!s.duration_ms.is_finite()).then(|| "non-finite duration".to_string()),
        words: format!("{} ms", num(s.duration_ms)),
    }
}

fn energy(s: &StepReport) -> Bar {
    let e = &s.energy;
    Bar {
        v: e.value.map(|v| v as f64),
        basis: e.basis,
        reason: e
            .value
            .is_none()
            .then(|| bounded(e.reason.as_deref().unwrap_or("unavailable"), 240)),
        words: e.value.map(|v| format!("{v} mJ")).unwrap_or_default(),
    }
}

fn cache_hit(s: &StepReport) -> Bar {
    let missing = |r: &str| Bar {
        v: None,
        basis: Basis::ServerReported,
        reason: Some(r.to_string()),
        words: String::new(),
    };
    if s.kind == StepKind::Tool {
        return missing("a tool step sends no prompt");
    }
    match (s.prompt_tokens, s.cached_tokens) {
        (None, _) => missing("prompt tokens not reported by the server"),
        (Some(_), None) => missing("cached tokens not reported by the server"),
        (Some(0), Some(_)) => missing("no prompt tokens"),
        (Some(p), Some(c)) => {
            let pct = c as f64 / p as f64 * 100.0;
            Bar {
                v: Some(pct),
                basis: Basis::ServerReported,
                reason: None,
                words: format!("{} % ({c} of {p} prompt tokens cached)", num(pct)),
            }
        }
    }
}

/// The chart's subtitle: how many steps (and how many drawn), which trajectory of the job,
/// the energy bases, and the simulator's caveat.
fn subtitle(steps: usize, shown: usize, of: usize, bases: &[&str], simulated: bool) -> String {
    format!(
        "{} step(s){}{}. Duration: client timing; energy: {}; cache hit: server-reported. \
         n/a marks a missing figure (hover for its reason).{}",
        steps,
        if steps > shown {
            format!(", the first {shown} drawn")
        } else {
            String::new()
        },
        if of > 1 {
            format!("; trajectory 1 of {of} of the job")
        } else {
            String::new()
        },
        bases.join(", "),
        if simulated {
            " Built-in simulator: not a real engine."
        } else {
            ""
        }
    )
}

/// The chart of trajectory `t` of job `job_id`; `of` is how many trajectories the job
/// has (the subtitle says which one is drawn).
pub fn chart(job_id: &str, t: &TrajectoryReport, of: usize, simulated: bool) -> Node {
    let job_id = bounded(job_id, 128);
    let steps: Vec<&StepReport> = t.steps.iter().filter(|s| !s.warmup).collect();
    let shown = &steps[..steps.len().min(MAX_CHART_STEPS)];
    let traj = bounded(&t.id, 160);
    let title = format!("{traj} · steps: time, energy and prefix-cache hit");
    let mut bases: Vec<&str> = shown.iter().map(|s| s.energy.basis.label()).collect();
    bases.sort_unstable();
    bases.dedup();
    let subtitle = subtitle(steps.len(), shown.len(), of, &bases, simulated);
    let labels: Vec<String> = (1..=shown.len()).map(|i| i.to_string()).collect();
    let panels: [Panel; 3] = [
        ("duration", "Duration (ms)", "ms", duration, None),
        ("energy", "Energy (mJ)", "mJ", energy, None),
        (
            "cache_hit",
            "Prefix-cache hit (% of prompt tokens)",
            "%",
            cache_hit,
            Some(Axis::nice(0.0, 100.0, TARGET_TICKS)),
        ),
    ];
    let height = TOP + 3.0 * PANEL_H;
    let mut root = draw::root("trajectory", &job_id, height, &title)
        .attr("data-trajectory", traj.clone())
        .children(draw::heading(&title, &subtitle));
    for (i, (key, name, unit, of_step, fixed)) in panels.into_iter().enumerate() {
        let by = TOP + i as f64 * PANEL_H;
        let f = Frame {
            x0: 58.0,
            x1: WIDTH - 20.0,
            y0: by + PANEL_H - 40.0,
            y1: by + 40.0,
        };
        let bars: Vec<Bar> = shown.iter().map(|s| of_step(s)).collect();
        let axis =
            fixed.unwrap_or_else(|| Axis::from_zero(bars.iter().filter_map(|b| b.v), TARGET_TICKS));
        let mut g = Node::new("g")
            .attr("class", "chart-panel")
            .attr("data-panel", key)
            .child(draw::panel_title(8.0, by + 16.0, name))
            .child(draw::legend(
                330.0,
                by + 16.0,
                vec![
                    Key::Swatch(BLUE, "model call (llm_call)".into()),
                    Key::Swatch(ORANGE, "tool".into()),
                ],
            ))
            .child(draw::band_axis(&f, &labels, "step", 40))
            .child(draw::y_axis(&axis, &f, Side::Left, unit));
        let band = (f.x1 - f.x0) / shown.len().max(1) as f64;
        let w = (band * 0.7).min(36.0);
        let mut marks = Node::new("g")
            .attr("class", "chart-series")
            .attr("data-series", key);
        for (n, (s, b)) in shown.iter().zip(&bars).enumerate() {
            let cx = f.x0 + band * (n as f64 + 0.5);
            let what = format!(
                "step {} ({} {})",
                n + 1,
                s.kind.label(),
                bounded(&s.name, 64)
            );
            let basis = draw::basis_words(b.basis, None);
            let m = match b.v {
                Some(v) => {
                    let top = axis.px(v, f.y0, f.y1);
                    let m = draw::bar(cx - w / 2.0, w, f.y0, top, color(s.kind))
                        .attr("data-value", exact(v))
                        .title(format!("{name} of {what}: {} ({basis})", b.words));
                    if shown.len() <= LABELS_UP_TO {
                        marks = marks.child(
                            draw::text(cx, top - 3.0, num(v), "middle")
                                .attr("class", "chart-bar-label")
                                .attr("font-size", "9"),
                        );
                    }
                    m
                }
                None => {
                    let reason = b.reason.clone().unwrap_or_else(|| "unavailable".into());
                    draw::absent(
                        cx,
                        f.y0 - 4.0,
                        color(s.kind),
                        &reason,
                        format!("{name} of {what}: n/a, {reason} ({basis})"),
                    )
                }
            };
            let m = m
                .attr("data-series", key)
                .attr("data-step", (n + 1).to_string())
                .attr("data-step-id", s.step_id.to_string())
                .attr("data-kind", s.kind.label())
                .attr("data-unit", unit);
            marks = marks.child(draw::basis_attrs(m, b.basis, None));
        }
        g = g.child(marks);
        root = root.child(g);
    }
    root
}
