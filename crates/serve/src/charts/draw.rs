//! The pieces every chart is drawn from (pure): the root element, panel titles, legends,
//! linear and banded axes, point and bar marks, and the mark of a missing figure.
//!
//! Marks carry what they show as attributes the browser tests read back: `data-series`,
//! `data-value` (exact), `data-unit`, `data-basis` (and `data-tokens` for a token-derived
//! figure), and a `<title>` (the tooltip) with the value in words and its basis. A missing
//! figure is never a mark at 0: it is an `n/a` mark in the strip above the plot (or in its
//! bar's slot), `data-absent="true"` with `data-reason`, and no `data-value`.

use crate::model::{Basis, TokenSource};

use super::scale::{Axis, coord, exact, num};
use super::svg::Node;

/// Width of every chart (its `viewBox`); the page scales it to the column.
pub const WIDTH: f64 = 960.0;
/// Colour-blind-safe series colours (Okabe–Ito), with shape and dash telling series apart
/// too (never colour alone).
pub const BLUE: &str = "#0072B2";
/// Second series colour.
pub const VERMILLION: &str = "#D55E00";
/// Third series colour.
pub const GREEN: &str = "#009E73";
/// Fourth series colour.
pub const PURPLE: &str = "#CC79A7";
/// Fifth series colour.
pub const ORANGE: &str = "#E69F00";
/// A baseline's bars.
pub const GREY: &str = "#8C8C8C";
const INK: &str = "#1f2328";
const MUTED: &str = "#57606a";
const GRID: &str = "#e3e6ea";

/// The plot area of one panel, in chart coordinates: `x0..x1` left to right, `y0` the
/// bottom (an axis's low end), `y1` the top.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    /// Left edge.
    pub x0: f64,
    /// Right edge.
    pub x1: f64,
    /// Bottom edge.
    pub y0: f64,
    /// Top edge.
    pub y1: f64,
}

/// Which side a value axis is drawn on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The left axis (`data-axis="y"`).
    Left,
    /// The right axis (`data-axis="y2"`).
    Right,
}

impl Side {
    /// `y` or `y2`.
    pub fn key(self) -> &'static str {
        match self {
            Side::Left => "y",
            Side::Right => "y2",
        }
    }
}

/// The root `<svg>` of a chart: kind and job as attributes, an accessible name.
pub fn root(kind: &'static str, job: &str, height: f64, label: &str) -> Node {
    Node::new("svg")
        .attr("class", "chart")
        .attr("data-chart-kind", kind)
        .attr("data-job", job)
        .attr("viewBox", format!("0 0 {} {}", coord(WIDTH), coord(height)))
        .attr("role", "img")
        .attr("aria-label", label)
        .attr("font-family", "sans-serif")
        .attr("font-size", "11")
}

/// A text element.
pub fn text(x: f64, y: f64, s: impl Into<String>, anchor: &'static str) -> Node {
    Node::new("text")
        .attr("x", coord(x))
        .attr("y", coord(y))
        .attr("text-anchor", anchor)
        .attr("fill", INK)
        .text(s)
}

/// The chart's title and its subtitle line.
pub fn heading(title: &str, subtitle: &str) -> Vec<Node> {
    vec![
        text(8.0, 20.0, title, "start")
            .attr("class", "chart-title")
            .attr("font-size", "14")
            .attr("font-weight", "bold"),
        text(8.0, 37.0, subtitle, "start")
            .attr("class", "chart-subtitle")
            .attr("fill", MUTED),
    ]
}

/// A panel's title above its plot.
pub fn panel_title(x: f64, y: f64, s: &str) -> Node {
    text(x, y, s, "start")
        .attr("class", "chart-panel-title")
        .attr("font-weight", "bold")
}

/// How a series looks: colour, line dash, point shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Style {
    /// Stroke and fill colour.
    pub color: &'static str,
    /// `stroke-dasharray` of its line (`None`: solid).
    pub dash: Option<&'static str>,
    /// Its point shape.
    pub shape: Shape,
}

/// A point's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A filled circle.
    Dot,
    /// A filled square.
    Square,
    /// A hollow circle.
    Ring,
}

/// One legend entry: a short line with the series' point, and its text; returns the entry
/// and its width.
pub fn legend_entry(x: f64, y: f64, style: Style, label: &str) -> (Node, f64) {
    let mut line = Node::new("line")
        .attr("x1", coord(x))
        .attr("y1", coord(y - 4.0))
        .attr("x2", coord(x + 18.0))
        .attr("y2", coord(y - 4.0))
        .attr("stroke", style.color)
        .attr("stroke-width", "2");
    if let Some(d) = style.dash {
        line = line.attr("stroke-dasharray", d);
    }
    let g = Node::new("g")
        .attr("class", "chart-legend-entry")
        .child(line)
        .child(shape(style, x + 9.0, y - 4.0))
        .child(text(x + 22.0, y, label, "start").attr("fill", MUTED));
    (g, 30.0 + label.chars().count() as f64 * 5.8)
}

/// A legend entry for bars: a swatch and its text; returns the entry and its width.
pub fn legend_swatch(x: f64, y: f64, color: &str, label: &str) -> (Node, f64) {
    let g = Node::new("g")
        .attr("class", "chart-legend-entry")
        .child(
            Node::new("rect")
                .attr("x", coord(x))
                .attr("y", coord(y - 9.0))
                .attr("width", "10")
                .attr("height", "10")
                .attr("fill", color),
        )
        .child(text(x + 14.0, y, label, "start").attr("fill", MUTED));
    (g, 24.0 + label.chars().count() as f64 * 5.8)
}

/// One entry of a legend.
pub enum Key {
    /// A series of points and lines.
    Line(Style, String),
    /// A bar colour.
    Swatch(&'static str, String),
}

/// A legend: its entries one after another on one line from `x`.
pub fn legend(x: f64, y: f64, keys: Vec<Key>) -> Node {
    let mut g = Node::new("g").attr("class", "chart-legend");
    let mut at = x;
    for k in keys {
        let (n, w) = match k {
            Key::Line(style, label) => legend_entry(at, y, style, &label),
            Key::Swatch(color, label) => legend_swatch(at, y, color, &label),
        };
        g = g.child(n);
        at += w;
    }
    g
}

fn shape(style: Style, cx: f64, cy: f64) -> Node {
    match style.shape {
        Shape::Dot => Node::new("circle")
            .attr("cx", coord(cx))
            .attr("cy", coord(cy))
            .attr("r", "4")
            .attr("fill", style.color),
        Shape::Ring => Node::new("circle")
            .attr("cx", coord(cx))
            .attr("cy", coord(cy))
            .attr("r", "4")
            .attr("fill", "none")
            .attr("stroke", style.color)
            .attr("stroke-width", "2"),
        Shape::Square => Node::new("rect")
            .attr("x", coord(cx - 4.0))
            .attr("y", coord(cy - 4.0))
            .attr("width", "8")
            .attr("height", "8")
            .attr("fill", style.color),
    }
}

/// A linear x axis along the bottom of `f`: line, ticks with labels, and its label.
pub fn x_axis(axis: &Axis, f: &Frame, label: &str) -> Node {
    let mut g = Node::new("g")
        .attr("class", "chart-axis")
        .attr("data-axis", "x")
        .attr("data-min", exact(axis.min))
        .attr("data-max", exact(axis.max))
        .attr("data-px-min", coord(f.x0))
        .attr("data-px-max", coord(f.x1))
        .attr("data-label", label)
        .child(hline(f.x0, f.x1, f.y0, INK));
    for t in &axis.ticks {
        let x = axis.px(*t, f.x0, f.x1);
        g = g.child(
            Node::new("g")
                .attr("class", "chart-tick")
                .attr("data-value", exact(*t))
                .child(vline(x, f.y0, f.y0 + 4.0, INK))
                .child(text(x, f.y0 + 16.0, axis.label(*t), "middle")),
        );
    }
    g.child(text((f.x0 + f.x1) / 2.0, f.y0 + 31.0, label, "middle").attr("fill", MUTED))
}

/// A value axis on `side` of `f` (low end at the bottom), with light grid lines for the
/// left one.
pub fn y_axis(axis: &Axis, f: &Frame, side: Side, unit: &str) -> Node {
    let x = match side {
        Side::Left => f.x0,
        Side::Right => f.x1,
    };
    let mut g = Node::new("g")
        .attr("class", "chart-axis")
        .attr("data-axis", side.key())
        .attr("data-min", exact(axis.min))
        .attr("data-max", exact(axis.max))
        .attr("data-px-min", coord(f.y0))
        .attr("data-px-max", coord(f.y1))
        .attr("data-unit", unit);
    for t in &axis.ticks {
        let y = axis.px(*t, f.y0, f.y1);
        let mut tick = Node::new("g")
            .attr("class", "chart-tick")
            .attr("data-value", exact(*t));
        tick = match side {
            Side::Left => tick
                .child(hline(f.x0, f.x1, y, GRID))
                .child(hline(x - 4.0, x, y, INK))
                .child(text(x - 6.0, y + 4.0, axis.label(*t), "end")),
            Side::Right => tick.child(hline(x, x + 4.0, y, INK)).child(text(
                x + 6.0,
                y + 4.0,
                axis.label(*t),
                "start",
            )),
        };
        g = g.child(tick);
    }
    g.child(vline(x, f.y0, f.y1, INK))
}

fn hline(x0: f64, x1: f64, y: f64, color: &str) -> Node {
    Node::new("line")
        .attr("x1", coord(x0))
        .attr("y1", coord(y))
        .attr("x2", coord(x1))
        .attr("y2", coord(y))
        .attr("stroke", color)
}

fn vline(x: f64, y0: f64, y1: f64, color: &str) -> Node {
    Node::new("line")
        .attr("x1", coord(x))
        .attr("y1", coord(y0))
        .attr("x2", coord(x))
        .attr("y2", coord(y1))
        .attr("stroke", color)
}

/// A banded x axis (one band per category): labels under the band centres, thinned to at
/// most `max_labels`.
pub fn band_axis(f: &Frame, labels: &[String], label: &str, max_labels: usize) -> Node {
    let n = labels.len().max(1);
    let band = (f.x1 - f.x0) / n as f64;
    let every = n.div_ceil(max_labels.max(1));
    let mut g = Node::new("g")
        .attr("class", "chart-axis")
        .attr("data-axis", "x")
        .attr("data-bands", n.to_string())
        .attr("data-px-min", coord(f.x0))
        .attr("data-px-max", coord(f.x1))
        .attr("data-label", label)
        .child(hline(f.x0, f.x1, f.y0, INK));
    for (i, l) in labels.iter().enumerate() {
        if i % every != 0 {
            continue;
        }
        let x = f.x0 + band * (i as f64 + 0.5);
        g = g.child(
            Node::new("g")
                .attr("class", "chart-tick")
                .attr("data-band", i.to_string())
                .child(vline(x, f.y0, f.y0 + 4.0, INK))
                .child(text(x, f.y0 + 16.0, l.clone(), "middle")),
        );
    }
    g.child(text((f.x0 + f.x1) / 2.0, f.y0 + 31.0, label, "middle").attr("fill", MUTED))
}

/// A basis in words, with `; tokens client-estimated` for a figure on estimated counts.
pub fn basis_words(basis: Basis, tokens: Option<TokenSource>) -> String {
    crate::model::basis_text(basis, tokens)
}

/// The attributes that say what a mark rests on.
pub fn basis_attrs(mut n: Node, basis: Basis, tokens: Option<TokenSource>) -> Node {
    n = n.attr("data-basis", basis.name());
    if let Some(t) = tokens {
        n = n.attr(
            "data-tokens",
            match t {
                TokenSource::Server => "server",
                TokenSource::ClientEstimate => "client_estimate",
            },
        );
    }
    n
}

/// A present point of a curve at `(cx, cy)`.
pub fn point(style: Style, cx: f64, cy: f64) -> Node {
    shape(style, cx, cy).attr("class", "chart-mark chart-point")
}

/// A line through `pts` (already in x order) in the series' style.
pub fn polyline(style: Style, pts: &[(f64, f64)]) -> Node {
    let mut n = Node::new("polyline")
        .attr("class", "chart-line")
        .attr("fill", "none")
        .attr("stroke", style.color)
        .attr("stroke-width", "2")
        .attr(
            "points",
            pts.iter()
                .map(|(x, y)| format!("{},{}", coord(*x), coord(*y)))
                .collect::<Vec<_>>()
                .join(" "),
        );
    if let Some(d) = style.dash {
        n = n.attr("stroke-dasharray", d);
    }
    n
}

/// A bar from `y_base` up to `y_top`, `x` its left edge.
pub fn bar(x: f64, w: f64, y_base: f64, y_top: f64, color: &str) -> Node {
    let (top, h) = if y_top <= y_base {
        (y_top, y_base - y_top)
    } else {
        (y_base, y_top - y_base)
    };
    Node::new("rect")
        .attr("class", "chart-mark chart-bar")
        .attr("x", coord(x))
        .attr("y", coord(top))
        .attr("width", coord(w))
        .attr("height", coord(h))
        .attr("fill", color)
}

/// The mark of a missing figure at `(x, y)`: `n/a` in the series' colour, its reason as
/// an attribute and in its tooltip; no value, nothing drawn at 0.
pub fn absent(x: f64, y: f64, color: &str, reason: &str, tooltip: String) -> Node {
    Node::new("g")
        .attr("class", "chart-mark chart-absent")
        .attr("data-absent", "true")
        .attr("data-reason", reason)
        .child(
            text(x, y, "n/a", "middle")
                .attr("fill", color)
                .attr("font-size", "9"),
        )
        .title(tooltip)
}

/// A value with its unit for a tooltip: `12.346 ms`.
pub fn with_unit(v: f64, unit: &str) -> String {
    if unit.is_empty() {
        num(v)
    } else {
        format!("{} {unit}", num(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_carry_their_range_and_tick_labels() {
        let f = Frame {
            x0: 50.0,
            x1: 450.0,
            y0: 200.0,
            y1: 40.0,
        };
        let a = Axis::from_zero([16.0], 5);
        let x = x_axis(&a, &f, "concurrency");
        assert_eq!(x.get("data-min"), Some("0"));
        assert_eq!(x.get("data-max"), Some("20"));
        let labels: Vec<&str> = x
            .walk()
            .into_iter()
            .filter(|n| n.tag == "text")
            .filter_map(|n| n.text.as_deref())
            .collect();
        assert_eq!(labels, ["0", "5", "10", "15", "20", "concurrency"]);
        let y = y_axis(&a, &f, Side::Right, "ms");
        assert_eq!(y.get("data-axis"), Some("y2"));
        assert_eq!(y.get("data-px-min"), Some("200"));
    }

    #[test]
    fn an_absent_mark_has_a_reason_and_no_value() {
        let m = absent(
            10.0,
            20.0,
            BLUE,
            "no successful request",
            "TTFT p50: n/a".into(),
        );
        assert_eq!(m.get("data-absent"), Some("true"));
        assert_eq!(m.get("data-reason"), Some("no successful request"));
        assert_eq!(m.get("data-value"), None);
        assert!(m.to_svg().contains("<title>TTFT p50: n/a</title>"));
    }

    #[test]
    fn bars_grow_up_from_their_base() {
        let b = bar(10.0, 8.0, 200.0, 150.0, BLUE);
        assert_eq!((b.get("y"), b.get("height")), (Some("150"), Some("50")));
        let z = bar(10.0, 8.0, 200.0, 200.0, BLUE);
        assert_eq!(z.get("height"), Some("0"));
    }
}
