//! A job against a saved baseline as paired bars (pure): per figure the baseline's value
//! and this run's, each with its 95 % interval when one is bounded, and the change with its
//! verdict above the pair. A figure of the baseline this run lacks is drawn as missing.

use crate::model::Basis;
use crate::model::baseline::{FigureChange, FigureSummary, JobComparison};

use super::draw::{self, BLUE, Frame, GREY, Key, Side, WIDTH};
use super::scale::{Axis, TARGET_TICKS, coord, exact, num};
use super::svg::Node;
use super::svg::bounded;

const TOP: f64 = 50.0;
const PANEL_H: f64 = 300.0;

fn whisker(x: f64, axis: &Axis, f: &Frame, lo: f64, hi: f64) -> Node {
    let y0 = axis.px(lo, f.y0, f.y1);
    let y1 = axis.px(hi, f.y0, f.y1);
    let line = |x1: f64, y1: f64, x2: f64, y2: f64| {
        Node::new("line")
            .attr("x1", coord(x1))
            .attr("y1", coord(y1))
            .attr("x2", coord(x2))
            .attr("y2", coord(y2))
            .attr("stroke", "#1f2328")
    };
    Node::new("g")
        .attr("class", "chart-ci")
        .attr("data-ci-low", exact(lo))
        .attr("data-ci-high", exact(hi))
        .child(line(x, y0, x, y1))
        .child(line(x - 3.0, y0, x + 3.0, y0))
        .child(line(x - 3.0, y1, x + 3.0, y1))
}

fn ci_words(s: &FigureSummary) -> String {
    let end = |v: Option<f64>| v.map_or_else(|| "unbounded".to_string(), num);
    format!(
        "95 % CI [{}, {}], n = {}",
        end(s.ci_low),
        end(s.ci_high),
        s.n
    )
}

/// The paired bars of one figure at band centre `cx` (bars `w` wide): the baseline `name`'s
/// bar and this run's, each with its interval whisker, and the change with its verdict above.
fn figure_pair(
    fc: &FigureChange,
    fig: &str,
    name: &str,
    cx: f64,
    w: f64,
    axis: &Axis,
    f: &Frame,
) -> Node {
    let change = fc.change_pct.map_or_else(
        || "change n/a".to_string(),
        |p| format!("{}{} %", if p > 0.0 { "+" } else { "" }, num(p)),
    );
    let mut pair = Node::new("g")
        .attr("class", "chart-pair")
        .attr("data-figure", fig.to_string())
        .attr("data-verdict", fc.verdict.label())
        .attr("data-basis", Basis::Baseline.name());
    if let Some(p) = fc.change_pct {
        pair = pair.attr("data-change-pct", exact(p));
    }
    for (series, s, x, color) in [
        ("baseline", &fc.baseline, cx - w - 1.0, GREY),
        ("current", &fc.current, cx + 1.0, BLUE),
    ] {
        let top = axis.px(s.value, f.y0, f.y1);
        let who = if series == "baseline" {
            format!("baseline {name}")
        } else {
            "this run".to_string()
        };
        let b = draw::bar(x, w, f.y0, top, color)
            .attr("data-series", series)
            .attr("data-figure", fig.to_string())
            .attr("data-value", exact(s.value))
            .attr("data-unit", "ms");
        let b = draw::basis_attrs(b, Basis::ClientTiming, None).title(format!(
            "{fig}, {who}: {} ms ({}; client timing)",
            num(s.value),
            ci_words(s)
        ));
        pair = pair.child(b);
        if let (Some(lo), Some(hi)) = (s.ci_low, s.ci_high) {
            pair = pair.child(whisker(x + w / 2.0, axis, f, lo, hi));
        }
    }
    let top = [&fc.baseline, &fc.current]
        .iter()
        .flat_map(|s| [Some(s.value), s.ci_high].into_iter().flatten())
        .fold(0.0, f64::max);
    pair = pair.child(
        draw::text(
            cx,
            axis.px(top, f.y0, f.y1) - 6.0,
            format!("{change} {}", fc.verdict.label()),
            "middle",
        )
        .attr("class", "chart-verdict")
        .attr("font-size", "10"),
    );
    pair
}

/// The chart of `job_id`'s comparison `c` (at least one figure or missing figure).
pub fn chart(job_id: &str, c: &JobComparison, simulated: bool) -> Node {
    let job_id = bounded(job_id, 128);
    let name = bounded(&c.baseline, 64);
    let from = bounded(&c.baseline_run_id, 128);
    let title = format!("{job_id} · against baseline {name}");
    let subtitle = format!(
        "Paired bars: baseline {name} (run {from}) and this run, client timing, ms; whiskers: \
         95 % intervals. Noise threshold {} %.{}",
        num(c.noise_pct),
        if simulated {
            " Built-in simulator: not a real engine."
        } else {
            ""
        }
    );
    let f = Frame {
        x0: 58.0,
        x1: WIDTH - 20.0,
        y0: TOP + PANEL_H - 40.0,
        y1: TOP + 56.0,
    };
    let axis = Axis::from_zero(
        c.figures.iter().flat_map(|fc| {
            [&fc.baseline, &fc.current]
                .into_iter()
                .flat_map(|s| [Some(s.value), s.ci_high].into_iter().flatten())
        }),
        TARGET_TICKS,
    );
    let names: Vec<String> = c
        .figures
        .iter()
        .map(|fc| bounded(&fc.figure, 64))
        .chain(c.missing.iter().map(|m| bounded(m, 64)))
        .collect();
    let band = (f.x1 - f.x0) / names.len().max(1) as f64;
    let w = (band * 0.32).min(40.0);
    let mut g = Node::new("g")
        .attr("class", "chart-panel")
        .attr("data-panel", "baseline")
        .child(draw::panel_title(8.0, TOP + 16.0, "Figures (ms)"))
        .child(draw::legend(
            150.0,
            TOP + 16.0,
            vec![
                Key::Swatch(GREY, format!("baseline {name}")),
                Key::Swatch(BLUE, "this run".into()),
            ],
        ))
        .child(draw::band_axis(&f, &names, "figure", 24))
        .child(draw::y_axis(&axis, &f, Side::Left, "ms"));
    let mut marks = Node::new("g")
        .attr("class", "chart-series")
        .attr("data-series", "pairs");
    for (i, fc) in c.figures.iter().enumerate() {
        let cx = f.x0 + band * (i as f64 + 0.5);
        let fig = &names[i];
        marks = marks.child(figure_pair(fc, fig, &name, cx, w, &axis, &f));
    }
    for (k, m) in c.missing.iter().enumerate() {
        let i = c.figures.len() + k;
        let cx = f.x0 + band * (i as f64 + 0.5);
        let fig = &names[i];
        let reason = "in the baseline, not in this run (no sample of this figure)";
        let a = draw::absent(
            cx,
            f.y0 - 4.0,
            BLUE,
            reason,
            format!("{fig}, this run: n/a, {reason}"),
        )
        .attr("data-series", "current")
        .attr("data-figure", bounded(m, 64))
        .attr("data-unit", "ms");
        marks = marks.child(draw::basis_attrs(a, Basis::ClientTiming, None));
    }
    g = g.child(marks);
    draw::root("baseline", &job_id, TOP + PANEL_H, &title)
        .attr("data-baseline", name)
        .children(draw::heading(&title, &subtitle))
        .child(g)
}
