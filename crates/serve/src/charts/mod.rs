//! The charts of a run (docs/charts.md), pure: a report in, SVG out.
//!
//! - a load sweep's latency–throughput curves ([`sweep`]): TTFT, ITL and E2E p50/p99
//!   against concurrency or arrival rate, output tokens/s and goodput on a second axis;
//! - a trajectory's steps as bars of time and energy, with the prefix-cache hit per step
//!   ([`trajectory`]);
//! - a comparison against a baseline as paired bars ([`baseline`]).
//!
//! Each chart is an SVG element tree ([`svg::Node`]): `report --format html` writes it into
//! the file as markup ([`charts_html`]), the dashboard's page builds the same elements from
//! `GET /v1/charts?run_id=` (JSON). Nothing is fetched, no script library is used. Every
//! mark carries its value, unit and basis as attributes and in its tooltip; a figure that
//! is null is drawn as missing with its reason, never as 0. A chart the report has nothing
//! for is left out with a one-line note, never drawn as an empty axis.

pub mod baseline;
pub mod draw;
pub mod scale;
pub mod svg;
pub mod sweep;
pub mod trajectory;

use serde::Serialize;

use crate::model::RunReport;

use super::runs::ReportState;
use svg::{Node, bounded, escape};

/// Schema id of [`ChartsPage`].
pub const CHARTS_SCHEMA: &str = "inferscope-bench.serve.charts/v1";
/// Trajectory charts a run draws at most (one per job: its first trajectory with steps).
pub const MAX_TRAJECTORY_CHARTS: usize = 8;
/// Charts of any kind a run draws at most.
pub const MAX_CHARTS: usize = 48;

/// One chart.
#[derive(Clone, Debug, Serialize)]
pub struct Chart {
    /// `sweep`, `trajectory` or `baseline`.
    pub kind: &'static str,
    /// The job it draws (`suite::job`, control characters removed, at most 128 characters).
    pub job: String,
    /// The chart.
    pub svg: Node,
}

/// A chart left out, in one line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChartNote {
    /// `sweep`, `trajectory`, `baseline` (nothing of that kind in the run), `report` (no
    /// readable report) or `limit` (charts past a bound).
    pub kind: &'static str,
    /// What a person reads.
    pub text: String,
}

/// The charts of a run and the notes on those left out.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Charts {
    /// Charts in job order (per job: sweep, trajectory, baseline).
    pub charts: Vec<Chart>,
    /// One line per kind of chart left out.
    pub notes: Vec<ChartNote>,
}

/// `GET /v1/charts?run_id=`: a run's [`Charts`].
#[derive(Clone, Debug, Serialize)]
pub struct ChartsPage {
    /// [`CHARTS_SCHEMA`].
    pub schema: &'static str,
    /// The run id.
    pub run_id: String,
    /// The charts and notes.
    #[serde(flatten)]
    pub charts: Charts,
}

fn note(kind: &'static str, text: impl Into<String>) -> ChartNote {
    ChartNote {
        kind,
        text: text.into(),
    }
}

/// The charts of a report (pure).
pub fn run_charts(r: &RunReport) -> Charts {
    let simulated = r.endpoint.as_ref().is_some_and(|e| e.simulated);
    let mut out = Charts::default();
    let (mut sweeps, mut trajectories, mut baselines) = (0usize, 0usize, 0usize);
    let (mut trajectories_left, mut over) = (0usize, 0usize);
    for j in &r.jobs {
        let mut push = |out: &mut Charts, c: Chart| {
            if out.charts.len() < MAX_CHARTS {
                out.charts.push(c);
            } else {
                over += 1;
            }
        };
        if let Some(s) = j.sweep.as_ref().filter(|s| !s.points.is_empty()) {
            sweeps += 1;
            push(
                &mut out,
                Chart {
                    kind: "sweep",
                    job: bounded(&j.id, 128),
                    svg: sweep::chart(j, s, simulated),
                },
            );
        } else if let Some(t) = j
            .trajectories
            .iter()
            .find(|t| t.steps.iter().any(|s| !s.warmup))
        {
            if trajectories < MAX_TRAJECTORY_CHARTS {
                trajectories += 1;
                push(
                    &mut out,
                    Chart {
                        kind: "trajectory",
                        job: bounded(&j.id, 128),
                        svg: trajectory::chart(&j.id, t, j.trajectories.len(), simulated),
                    },
                );
            } else {
                trajectories_left += 1;
            }
        }
        if let Some(c) = j
            .baseline
            .as_ref()
            .filter(|c| !c.figures.is_empty() || !c.missing.is_empty())
        {
            baselines += 1;
            push(
                &mut out,
                Chart {
                    kind: "baseline",
                    job: bounded(&j.id, 128),
                    svg: baseline::chart(&j.id, c, simulated),
                },
            );
        }
    }
    if sweeps == 0 {
        out.notes.push(note(
            "sweep",
            "No load sweep in this run: no latency-throughput curves.",
        ));
    }
    if trajectories == 0 {
        out.notes.push(note(
            "trajectory",
            "No trajectory with steps outside load jobs: no step bars.",
        ));
    }
    if baselines == 0 {
        out.notes.push(note(
            "baseline",
            "No comparison with a baseline (run with --baseline NAME): no paired bars.",
        ));
    }
    if trajectories_left > 0 {
        out.notes.push(note(
            "limit",
            format!(
                "{trajectories_left} more job(s) with trajectories not drawn (at most \
                 {MAX_TRAJECTORY_CHARTS} trajectory charts); their steps are in the tables."
            ),
        ));
    }
    if over > 0 {
        out.notes.push(note(
            "limit",
            format!("{over} more chart(s) not drawn (at most {MAX_CHARTS} per run)."),
        ));
    }
    out
}

/// The charts of a run directory's report state (pure): none, with a note, when the
/// report is missing or unreadable.
pub fn charts_of(report: &ReportState) -> Charts {
    match report {
        ReportState::Ok(r) => run_charts(r),
        ReportState::Missing => Charts {
            charts: Vec::new(),
            notes: vec![note(
                "report",
                "No report.json (an incomplete run): no charts.",
            )],
        },
        ReportState::Fault(f) => Charts {
            charts: Vec::new(),
            notes: vec![note(
                "report",
                format!("report.json unreadable ({}): no charts.", f.code()),
            )],
        },
    }
}

/// `GET /v1/charts?run_id=` (pure): the run's charts that fit `budget` bytes of JSON, in
/// order; those past it are counted in a `limit` note (the static report draws them all).
pub fn charts_page(run_id: &str, mut charts: Charts, budget: usize) -> ChartsPage {
    let mut used = json_len(&charts.notes) + 512;
    let mut kept = 0;
    for c in &charts.charts {
        let n = json_len(c) + 1;
        if used + n > budget {
            break;
        }
        used += n;
        kept += 1;
    }
    let left = charts.charts.len() - kept;
    if left > 0 {
        charts.charts.truncate(kept);
        charts.notes.push(note(
            "limit",
            format!(
                "{left} more chart(s) not sent (over {} KiB); `report --format html` draws every \
                 chart.",
                budget / 1024
            ),
        ));
    }
    ChartsPage {
        schema: CHARTS_SCHEMA,
        run_id: run_id.to_string(),
        charts,
    }
}

fn json_len<T: Serialize>(v: &T) -> usize {
    serde_json::to_vec(v).map_or(usize::MAX / 2, |b| b.len())
}

/// The charts as HTML (pure): each chart's `<svg>`, then one `<p class="chart-note">` per
/// note; the same elements the page builds from [`ChartsPage`].
pub fn charts_html(c: &Charts) -> String {
    let mut out = String::new();
    for ch in &c.charts {
        out.push_str(&ch.svg.to_svg());
        out.push('\n');
    }
    for n in &c.notes {
        out.push_str(&format!(
            "<p class=\"chart-note\" data-omitted=\"{}\">{}</p>\n",
            escape(n.kind),
            escape(&n.text)
        ));
    }
    out
}

#[cfg(test)]
mod tests;
