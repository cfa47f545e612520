//! A load sweep's latency–throughput curves (pure): TTFT, ITL and E2E p50/p99 against the
//! swept concurrency or arrival rate, and output tokens/s (left axis) with goodput
//! (requests/s, right axis), one mark per point and figure with its basis.

use crate::model::load::{PointSummary, SweepReport};
use crate::model::stats::Summary;
use crate::model::{Basis, JobReport, TokenSource};

use super::draw::{
    self, BLUE, Frame, GREEN, Key, ORANGE, PURPLE, Shape, Side, Style, VERMILLION, WIDTH,
};
use super::scale::{Axis, TARGET_TICKS, exact};
use super::svg::Node;
use super::svg::bounded;

const PANEL_W: f64 = WIDTH / 2.0;
const PANEL_H: f64 = 250.0;
const TOP: f64 = 50.0;

/// One figure of one point: its value or why it is missing, and what it rests on.
struct Value {
    v: Option<f64>,
    basis: Basis,
    tokens: Option<TokenSource>,
    reason: Option<String>,
    /// Said after the value in the tooltip (streamed bound, population, criteria).
    more: String,
}

impl Value {
    fn missing(basis: Basis, reason: &str) -> Value {
        Value {
            v: None,
            basis,
            tokens: None,
            reason: Some(reason.to_string()),
            more: String::new(),
        }
    }
}

/// One series of a panel.
struct Series {
    key: &'static str,
    label: &'static str,
    unit: &'static str,
    style: Style,
    side: Side,
    of: fn(&PointSummary) -> Value,
}

fn percentile(s: &Option<Summary>, q: f64, missing: &str) -> Value {
    match s {
        Some(s) => Value {
            v: Some(if q == 0.5 { s.p50 } else { s.p99 }).filter(|v| v.is_finite()),
            basis: Basis::ClientTiming,
            tokens: None,
            reason: None,
            more: format!("{}; {} samples", s.bound_suffix(), s.count),
        },
        None => Value::missing(Basis::ClientTiming, missing),
    }
}

const NO_TTFT: &str = "no successful request with a first token";
const NO_ITL: &str = "no request with two or more token events";
const NO_E2E: &str = "no successful request";

fn ttft_p50(p: &PointSummary) -> Value {
    percentile(&p.stats.ttft_ms, 0.5, NO_TTFT)
}
fn ttft_p99(p: &PointSummary) -> Value {
    let mut v = percentile(&p.stats.ttft_ms, 0.99, NO_TTFT);
    if let Some(s) = &p.ttft_from_schedule_ms {
        v.more.push_str(&format!(
            "; from the scheduled send: p99 {} ms",
            super::scale::num(s.p99)
        ));
    }
    v
}
fn itl_p50(p: &PointSummary) -> Value {
    percentile(&p.stats.itl_ms, 0.5, NO_ITL)
}
fn itl_p99(p: &PointSummary) -> Value {
    percentile(&p.stats.itl_ms, 0.99, NO_ITL)
}
fn e2e_p50(p: &PointSummary) -> Value {
    percentile(&p.stats.e2e_ms, 0.5, NO_E2E)
}
fn e2e_p99(p: &PointSummary) -> Value {
    let mut v = percentile(&p.stats.e2e_ms, 0.99, NO_E2E);
    if let Some(s) = &p.stats.e2e_from_schedule_ms {
        v.more.push_str(&format!(
            "; from the scheduled send: p99 {} ms",
            super::scale::num(s.p99)
        ));
    }
    v
}
fn tokens_per_s(p: &PointSummary) -> Value {
    let f = &p.stats.output_tokens_per_s;
    Value {
        v: f.value.filter(|v| v.is_finite()),
        basis: f.basis,
        tokens: f.tokens,
        reason: f
            .value
            .is_none()
            .then(|| bounded(f.reason.as_deref().unwrap_or("unavailable"), 240)),
        more: String::new(),
    }
}
fn goodput_rps(p: &PointSummary) -> Value {
    let Some(g) = &p.goodput else {
        return Value::missing(
            Basis::ClientTiming,
            "no latency gate: goodput needs a TTFT, ITL, TPOT or E2E bound",
        );
    };
    let c = &g.criteria;
    let bounds: Vec<String> = [
        ("TTFT", c.ttft_ms),
        ("ITL", c.itl_ms),
        ("TPOT", c.tpot_ms),
        ("E2E", c.e2e_ms),
    ]
    .iter()
    .filter_map(|(n, b)| b.map(|b| format!("{n} <= {} ms", super::scale::num(b))))
    .collect();
    let more = format!(
        "; {} good requests{}; bounds: {}",
        g.good_requests,
        g.fraction
            .map(|f| format!(" ({} % of requests)", super::scale::num(f * 100.0)))
            .unwrap_or_default(),
        bounds.join(", ")
    );
    match g.rps {
        Some(v) if v.is_finite() => Value {
            v: Some(v),
            basis: Basis::ClientTiming,
            tokens: None,
            reason: None,
            more,
        },
        _ => Value {
            more,
            ..Value::missing(Basis::ClientTiming, "empty window")
        },
    }
}

const P50: Style = Style {
    color: BLUE,
    dash: None,
    shape: Shape::Dot,
};

fn p50(color: &'static str) -> Style {
    Style { color, ..P50 }
}

fn p99(color: &'static str) -> Style {
    Style {
        color,
        dash: Some("6 4"),
        shape: Shape::Square,
    }
}

/// What the x axis is and each point's x value.
fn x_values(job: &JobReport, sweep: &SweepReport) -> (String, Vec<f64>) {
    let unit = job.load.as_ref().map_or("unit", |l| l.unit.as_str());
    let units = match unit {
        "trajectory" => "trajectories".to_string(),
        u => format!("{u}s"),
    };
    let pts = &sweep.points;
    let rate = |p: &PointSummary| p.facts.rate;
    let conc = |p: &PointSummary| p.facts.concurrency.map(f64::from);
    let (label, xs): (String, Vec<Option<f64>>) = match sweep.variable.as_deref() {
        Some("rate") => (
            format!("arrival rate ({units}/s)"),
            pts.iter().map(|p| p.facts.value.or(rate(p))).collect(),
        ),
        Some("concurrency") => (
            format!("concurrency ({units} in flight)"),
            pts.iter().map(|p| p.facts.value.or(conc(p))).collect(),
        ),
        _ if pts.iter().all(|p| rate(p).is_some()) => (
            format!("arrival rate ({units}/s)"),
            pts.iter().map(rate).collect(),
        ),
        _ => (
            format!("concurrency ({units} in flight)"),
            pts.iter().map(conc).collect(),
        ),
    };
    if xs.iter().all(|x| x.is_some_and(f64::is_finite)) {
        (label, xs.into_iter().flatten().collect())
    } else {
        (
            "sweep point".to_string(),
            (1..=pts.len()).map(|i| i as f64).collect(),
        )
    }
}

/// The chart of `job`'s sweep (`sweep.points` not empty).
pub fn chart(job: &JobReport, sweep: &SweepReport, simulated: bool) -> Node {
    let job_id = bounded(&job.id, 128);
    let (x_label, xs) = x_values(job, sweep);
    // A tenth of headroom: the largest point never sits on the panel's edge.
    let x_axis = Axis::from_zero(xs.iter().map(|x| x * 1.1), TARGET_TICKS);
    let panels: [(&str, &str, Vec<Series>); 4] = [
        (
            "ttft",
            "TTFT (ms)",
            vec![
                Series {
                    key: "ttft_p50",
                    label: "TTFT p50",
                    unit: "ms",
                    style: p50(BLUE),
                    side: Side::Left,
                    of: ttft_p50,
                },
                Series {
                    key: "ttft_p99",
                    label: "TTFT p99",
                    unit: "ms",
                    style: p99(BLUE),
                    side: Side::Left,
                    of: ttft_p99,
                },
            ],
        ),
        (
            "itl",
            "ITL (ms)",
            vec![
                Series {
                    key: "itl_p50",
                    label: "ITL p50",
                    unit: "ms",
                    style: p50(VERMILLION),
                    side: Side::Left,
                    of: itl_p50,
                },
                Series {
                    key: "itl_p99",
                    label: "ITL p99",
                    unit: "ms",
                    style: p99(VERMILLION),
                    side: Side::Left,
                    of: itl_p99,
                },
            ],
        ),
        (
            "e2e",
            "E2E (ms)",
            vec![
                Series {
                    key: "e2e_p50",
                    label: "E2E p50",
                    unit: "ms",
                    style: p50(GREEN),
                    side: Side::Left,
                    of: e2e_p50,
                },
                Series {
                    key: "e2e_p99",
                    label: "E2E p99",
                    unit: "ms",
                    style: p99(GREEN),
                    side: Side::Left,
                    of: e2e_p99,
                },
            ],
        ),
        (
            "throughput",
            "Output tokens/s (left) and goodput, requests/s (right)",
            vec![
                Series {
                    key: "output_tokens_per_s",
                    label: "output tokens/s",
                    unit: "tokens/s",
                    style: p50(PURPLE),
                    side: Side::Left,
                    of: tokens_per_s,
                },
                Series {
                    key: "goodput_rps",
                    label: "goodput",
                    unit: "requests/s",
                    style: Style {
                        color: ORANGE,
                        dash: Some("2 3"),
                        shape: Shape::Ring,
                    },
                    side: Side::Right,
                    of: goodput_rps,
                },
            ],
        ),
    ];
    let height = TOP + 2.0 * PANEL_H;
    let title = format!("{job_id} · load sweep: latency and throughput against {x_label}");
    let subtitle = format!(
        "{} point(s). TTFT, ITL, E2E and goodput: client timing; tokens/s: as each mark says. \
         Hover a mark for its value and basis; n/a marks a missing figure.{}",
        sweep.points.len(),
        if simulated {
            " Built-in simulator: not a real engine."
        } else {
            ""
        }
    );
    let mut root =
        draw::root("sweep", &job_id, height, &title).children(draw::heading(&title, &subtitle));
    for (i, (key, name, series)) in panels.iter().enumerate() {
        let bx = (i % 2) as f64 * PANEL_W;
        let by = TOP + (i / 2) as f64 * PANEL_H;
        root = root.child(panel(
            key, name, series, sweep, &xs, &x_axis, &x_label, bx, by,
        ));
    }
    root
}

#[allow(clippy::too_many_arguments)]
fn panel(
    key: &str,
    name: &str,
    series: &[Series],
    sweep: &SweepReport,
    xs: &[f64],
    x_axis: &Axis,
    x_label: &str,
    bx: f64,
    by: f64,
) -> Node {
    let right = series.iter().any(|s| s.side == Side::Right);
    let f = Frame {
        x0: bx + 58.0,
        x1: bx + PANEL_W - if right { 58.0 } else { 20.0 },
        y0: by + PANEL_H - 42.0,
        y1: by + 66.0,
    };
    let values: Vec<Vec<Value>> = series
        .iter()
        .map(|s| sweep.points.iter().map(|p| (s.of)(p)).collect())
        .collect();
    let axis_of = |side: Side| {
        Axis::from_zero(
            series
                .iter()
                .zip(&values)
                .filter(|(s, _)| s.side == side)
                .flat_map(|(_, vs)| vs.iter().filter_map(|v| v.v)),
            TARGET_TICKS,
        )
    };
    let left = axis_of(Side::Left);
    let right_axis = axis_of(Side::Right);
    let mut g = Node::new("g")
        .attr("class", "chart-panel")
        .attr("data-panel", key)
        .child(draw::panel_title(f.x0 - 50.0, by + 16.0, name))
        .child(draw::legend(
            f.x0 - 50.0,
            by + 33.0,
            series
                .iter()
                .map(|s| Key::Line(s.style, format!("{}{}", s.label, side_word(s.side, right))))
                .collect(),
        ))
        .child(draw::x_axis(x_axis, &f, x_label))
        .child(draw::y_axis(&left, &f, Side::Left, series[0].unit));
    if right {
        let unit = series
            .iter()
            .find(|s| s.side == Side::Right)
            .map_or("", |s| s.unit);
        g = g.child(draw::y_axis(&right_axis, &f, Side::Right, unit));
    }
    for (k, (s, vs)) in series.iter().zip(&values).enumerate() {
        let axis = if s.side == Side::Left {
            &left
        } else {
            &right_axis
        };
        // Points in x order; the line breaks where a figure is missing.
        let mut order: Vec<usize> = (0..vs.len()).collect();
        order.sort_by(|a, b| xs[*a].total_cmp(&xs[*b]));
        let mut lines = Node::new("g")
            .attr("class", "chart-series")
            .attr("data-series", s.key);
        let mut run: Vec<(f64, f64)> = Vec::new();
        let mut marks = Vec::new();
        for &i in &order {
            let p = &sweep.points[i];
            let v = &vs[i];
            let cx = x_axis.px(xs[i], f.x0, f.x1);
            let at = bounded(&p.facts.label, 96);
            let basis = draw::basis_words(v.basis, v.tokens);
            match v.v {
                Some(val) => {
                    let cy = axis.px(val, f.y0, f.y1);
                    run.push((cx, cy));
                    let m = draw::point(s.style, cx, cy)
                        .attr("data-series", s.key)
                        .attr("data-point", p.facts.index.to_string())
                        .attr("data-x", exact(xs[i]))
                        .attr("data-value", exact(val))
                        .attr("data-unit", s.unit)
                        .attr("data-axis", s.side.key());
                    let m = draw::basis_attrs(m, v.basis, v.tokens).title(format!(
                        "{} at {at}: {} ({basis}){}",
                        s.label,
                        draw::with_unit(val, s.unit),
                        v.more
                    ));
                    marks.push(m);
                }
                None => {
                    if run.len() > 1 {
                        lines = lines.child(draw::polyline(s.style, &run));
                    }
                    run.clear();
                    let reason = v.reason.clone().unwrap_or_else(|| "unavailable".into());
                    let m = draw::absent(
                        cx,
                        f.y1 - 24.0 + 11.0 * k as f64,
                        s.style.color,
                        &reason,
                        format!("{} at {at}: n/a, {reason} ({basis}){}", s.label, v.more),
                    )
                    .attr("data-series", s.key)
                    .attr("data-point", p.facts.index.to_string())
                    .attr("data-x", exact(xs[i]))
                    .attr("data-unit", s.unit);
                    marks.push(draw::basis_attrs(m, v.basis, v.tokens));
                }
            }
        }
        if run.len() > 1 {
            lines = lines.child(draw::polyline(s.style, &run));
        }
        g = g.child(lines.children(marks));
    }
    g
}

fn side_word(side: Side, two_axes: bool) -> &'static str {
    match (two_axes, side) {
        (false, _) => "",
        (true, Side::Left) => " (left)",
        (true, Side::Right) => " (right)",
    }
}
