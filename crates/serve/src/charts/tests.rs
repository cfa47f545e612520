//! The charts against the report's figures: every mark's value is the figure's, every
//! position is its axis's mapping, a null figure is drawn as missing with its reason (never
//! as 0), charts the report has nothing for are notes, and report text is escaped.

use super::scale::exact;
use super::*;
use crate::model::baseline::{ChangeVerdict, FigureChange, FigureSummary, JobComparison};
use crate::model::load::{
    Goodput, GoodputCriteria, LoadReport, PointFacts, PointSummary, Stop, SweepReport,
};
use crate::model::stats::{AggregateParams, JobStats, RequestFigures};

/// `fixtures/runs/complete`: one agentic trajectory of 9 steps on the simulator, tool
/// steps without an energy figure (shorter than the sampling grid).
fn complete() -> RunReport {
    RunReport::from_json_body(include_bytes!(
        "../../../../fixtures/runs/complete/report.json"
    ))
    .unwrap()
}

fn stats(ttft: &[f64]) -> JobStats {
    let reqs: Vec<RequestFigures> = ttft
        .iter()
        .map(|t| {
            let mut r = RequestFigures::from_token_arrivals(
                &[*t, t + 4.0, t + 9.0],
                Some(3),
                Some(t + 20.0),
            );
            r.ok = true;
            r
        })
        .collect();
    JobStats::aggregate(&reqs, AggregateParams::new(2_000_000_000))
}

fn failed_stats() -> JobStats {
    JobStats::aggregate(
        &[RequestFigures::default(), RequestFigures::default()],
        AggregateParams::new(2_000_000_000),
    )
}

fn point(index: usize, c: u32, stats: JobStats, goodput: Option<Goodput>) -> PointSummary {
    PointSummary {
        facts: PointFacts {
            index,
            value: Some(f64::from(c)),
            label: format!("concurrency {c}"),
            concurrency: Some(c),
            rate: None,
            achieved_concurrency: c,
            max_requests_in_flight: c,
            units: 4,
            units_not_started: 0,
            window_ns: 2_000_000_000,
            trajectories: Vec::new(),
            connections: None,
        },
        warmup_requests: 0,
        stats,
        ttft_from_schedule_ms: None,
        goodput,
        energy: None,
    }
}

fn goodput(rps: f64) -> Option<Goodput> {
    Some(Goodput {
        good_requests: 3,
        fraction: Some(0.75),
        rps: Some(rps),
        criteria: GoodputCriteria {
            ttft_ms: Some(2000.0),
            e2e_ms: Some(5000.0),
            ..GoodputCriteria::default()
        },
    })
}

/// The complete fixture with its one job turned into a concurrency sweep of `points`.
fn swept(points: Vec<PointSummary>) -> RunReport {
    let mut r = complete();
    let j = &mut r.jobs[0];
    j.load = Some(LoadReport {
        settings: "closed loop".into(),
        unit: "trajectory".into(),
        concurrency: None,
        rate: None,
        arrival: None,
        stop: Stop::Count(4),
        warmup: 0,
        client_max_connections: 16,
        points_planned: points.len() as u64,
        points_run: points.len() as u64,
        warmup_requests: Vec::new(),
    });
    j.sweep = Some(SweepReport {
        variable: Some("concurrency".into()),
        values: points.iter().filter_map(|p| p.facts.value).collect(),
        points,
    });
    r
}

fn marks<'a>(svg: &'a Node, series: &str) -> Vec<&'a Node> {
    svg.walk()
        .into_iter()
        .filter(|n| {
            n.get("class").is_some_and(|c| c.starts_with("chart-mark"))
                && n.get("data-series") == Some(series)
        })
        .collect()
}

fn axis<'a>(panel: &'a Node, key: &str) -> &'a Node {
    panel
        .walk()
        .into_iter()
        .find(|n| n.get("class") == Some("chart-axis") && n.get("data-axis") == Some(key))
        .unwrap()
}

fn panel<'a>(svg: &'a Node, key: &str) -> &'a Node {
    svg.walk()
        .into_iter()
        .find(|n| n.get("data-panel") == Some(key))
        .unwrap()
}

fn f(n: &Node, a: &str) -> f64 {
    n.get(a)
        .unwrap_or_else(|| panic!("{a} of {n:?}"))
        .parse()
        .unwrap()
}

/// The position of `v` on `axis` (from its data attributes).
fn px(axis: &Node, v: f64) -> f64 {
    let (lo, hi) = (f(axis, "data-min"), f(axis, "data-max"));
    let (p0, p1) = (f(axis, "data-px-min"), f(axis, "data-px-max"));
    p0 + (v - lo) / (hi - lo) * (p1 - p0)
}

#[test]
fn sweep_marks_are_the_reports_figures_at_their_axes_positions() {
    let r = swept(vec![
        point(0, 1, stats(&[10.0, 12.0, 14.0]), goodput(1.5)),
        point(1, 4, stats(&[20.0, 30.0, 60.0]), goodput(4.0)),
        point(2, 16, stats(&[80.0, 120.0, 400.0]), goodput(2.5)),
    ]);
    let c = run_charts(&r);
    assert_eq!(c.charts.len(), 1, "{:?}", c.notes);
    let svg = &c.charts[0].svg;
    assert_eq!(svg.get("data-chart-kind"), Some("sweep"));
    let sweep = r.jobs[0].sweep.as_ref().unwrap();
    for (series, pick) in [
        (
            "ttft_p50",
            (|s: &JobStats| s.ttft_ms.as_ref().unwrap().p50) as fn(&JobStats) -> f64,
        ),
        ("ttft_p99", |s| s.ttft_ms.as_ref().unwrap().p99),
        ("itl_p50", |s| s.itl_ms.as_ref().unwrap().p50),
        ("e2e_p99", |s| s.e2e_ms.as_ref().unwrap().p99),
        ("output_tokens_per_s", |s| {
            s.output_tokens_per_s.value.unwrap()
        }),
    ] {
        let ms = marks(svg, series);
        assert_eq!(ms.len(), 3, "{series}");
        for (m, p) in ms.iter().zip(&sweep.points) {
            assert_eq!(
                m.get("data-value"),
                Some(exact(pick(&p.stats)).as_str()),
                "{series}"
            );
            assert_eq!(
                m.get("data-x"),
                Some(exact(p.facts.value.unwrap()).as_str())
            );
            assert!(
                m.get("data-basis").is_some(),
                "{series}: every mark says its basis"
            );
            let title = m.children.iter().find(|c| c.tag == "title").unwrap();
            assert!(
                title.text.as_deref().unwrap().contains(&p.facts.label),
                "{title:?}"
            );
        }
    }
    // Latencies are client timing; tokens/s says whose token counts.
    assert_eq!(
        marks(svg, "ttft_p99")[0].get("data-basis"),
        Some("client_timing")
    );
    let tps = marks(svg, "output_tokens_per_s")[0];
    assert_eq!(tps.get("data-basis"), Some("server_reported"));
    assert_eq!(tps.get("data-tokens"), Some("server"));
    // Positions: x is the swept concurrency, y the value, on the panel's axes.
    let ttft = panel(svg, "ttft");
    let (x, y) = (axis(ttft, "x"), axis(ttft, "y"));
    assert_eq!(
        (x.get("data-min"), x.get("data-max")),
        (Some("0"), Some("20"))
    );
    assert_eq!(
        x.get("data-label"),
        Some("concurrency (trajectories in flight)")
    );
    for m in marks(svg, "ttft_p50") {
        assert!((f(m, "cx") - px(x, f(m, "data-x"))).abs() < 0.01);
        assert!((f(m, "cy") - px(y, f(m, "data-value"))).abs() < 0.01);
        assert!(f(m, "data-value") <= f(y, "data-max"));
    }
    // p99 points are squares: their centre is the position.
    for m in marks(svg, "ttft_p99") {
        assert!((f(m, "y") + 4.0 - px(y, f(m, "data-value"))).abs() < 0.01);
    }
    // Goodput is on the right axis.
    let tp = panel(svg, "throughput");
    let y2 = axis(tp, "y2");
    for (m, want) in marks(svg, "goodput_rps").iter().zip([1.5, 4.0, 2.5]) {
        assert_eq!(f(m, "data-value"), want);
        assert_eq!(m.get("data-axis"), Some("y2"));
        assert!((f(m, "cy") - px(y2, want)).abs() < 0.01);
    }
    assert_eq!(f(y2, "data-max"), 4.0);
    // The tick labels read as their values, from the range's low end to its high end.
    let ticks: Vec<String> = x
        .walk()
        .into_iter()
        .filter(|n| n.get("class") == Some("chart-tick"))
        .map(|t| t.children[1].text.clone().unwrap())
        .collect();
    assert_eq!(ticks, ["0", "5", "10", "15", "20"]);
}

#[test]
fn a_null_figure_is_drawn_missing_with_its_reason_never_as_zero() {
    let r = swept(vec![
        point(0, 1, stats(&[10.0]), None),
        point(1, 4, failed_stats(), None),
        point(2, 16, stats(&[30.0]), None),
    ]);
    let svg = &run_charts(&r).charts[0].svg;
    let ms = marks(svg, "ttft_p50");
    assert_eq!(ms.len(), 3);
    let gone = ms[1];
    assert_eq!(gone.get("data-absent"), Some("true"));
    assert_eq!(gone.get("data-value"), None, "no value, so no 0");
    assert_eq!(
        gone.get("data-reason"),
        Some("no successful request with a first token")
    );
    assert_eq!(gone.get("data-basis"), Some("client_timing"));
    let text = gone.to_svg();
    assert!(
        text.contains(">n/a<") && text.contains("no successful request"),
        "{text}"
    );
    // Drawn in the strip above the plot, not on the axis: below the y axis's top.
    let y = axis(panel(svg, "ttft"), "y");
    let label_y: f64 = gone.children[0].get("y").unwrap().parse().unwrap();
    assert!(label_y < f(y, "data-px-max"), "{label_y}");
    // The line breaks at the gap: no segment joins the two present points.
    let lines: Vec<&Node> = svg
        .walk()
        .into_iter()
        .filter(|n| n.tag == "g" && n.get("class") == Some("chart-series"))
        .filter(|n| n.get("data-series") == Some("ttft_p50"))
        .flat_map(|g| g.children.iter().filter(|c| c.tag == "polyline"))
        .collect();
    assert!(lines.is_empty(), "{lines:?}");
    // Output tokens/s of the failed point is a null Figure: missing with the figure's reason.
    let tps = marks(svg, "output_tokens_per_s");
    let want = r.jobs[0].sweep.as_ref().unwrap().points[1]
        .stats
        .output_tokens_per_s
        .reason
        .clone()
        .unwrap();
    assert_eq!(tps[1].get("data-reason"), Some(want.as_str()));
    // No latency gate: every goodput mark is missing, none at 0.
    for m in marks(svg, "goodput_rps") {
        assert_eq!(m.get("data-value"), None);
        assert!(m.get("data-reason").unwrap().starts_with("no latency gate"));
    }
    // The goodput axis has no value: a unit axis, never a degenerate one.
    let y2 = axis(panel(svg, "throughput"), "y2");
    assert_eq!((f(y2, "data-min"), f(y2, "data-max")), (0.0, 1.0));
}

#[test]
fn trajectory_bars_are_the_steps_figures() {
    let r = complete();
    let c = run_charts(&r);
    assert_eq!(c.charts.len(), 1);
    assert_eq!(c.charts[0].kind, "trajectory");
    let svg = &c.charts[0].svg;
    let steps = &r.jobs[0].trajectories[0].steps;
    let dur = marks(svg, "duration");
    let energy = marks(svg, "energy");
    let hit = marks(svg, "cache_hit");
    assert_eq!((dur.len(), energy.len(), hit.len()), (9, 9, 9));
    let y = axis(panel(svg, "duration"), "y");
    for (m, s) in dur.iter().zip(steps) {
        assert_eq!(m.get("data-value"), Some(exact(s.duration_ms).as_str()));
        assert_eq!(m.get("data-kind"), Some(s.kind.label()));
        // The bar stands on the axis's 0 and reaches the value.
        assert!((f(m, "y") - px(y, s.duration_ms)).abs() < 0.01);
        assert!((f(m, "y") + f(m, "height") - px(y, 0.0)).abs() < 0.02);
    }
    for (m, s) in energy.iter().zip(steps) {
        assert_eq!(m.get("data-basis"), Some("simulated"));
        match s.energy.value {
            Some(v) => assert_eq!(f(m, "data-value"), v as f64),
            None => {
                assert_eq!(m.get("data-value"), None);
                assert_eq!(m.get("data-reason"), s.energy.reason.as_deref());
                assert_eq!(m.get("class"), Some("chart-mark chart-absent"));
            }
        }
    }
    // Step 1 reported 0 cached of 217: a real 0 (a bar of height 0), not a missing figure.
    assert_eq!(hit[0].get("data-value"), Some("0"));
    assert_eq!(hit[0].get("class"), Some("chart-mark chart-bar"));
    assert_eq!(f(hit[2], "data-value"), 208.0 / 321.0 * 100.0);
    assert_eq!(hit[2].get("data-basis"), Some("server_reported"));
    assert_eq!(
        hit[1].get("data-reason"),
        Some("a tool step sends no prompt")
    );
    // The cache-hit axis is 0–100 %.
    let yh = axis(panel(svg, "cache_hit"), "y");
    assert_eq!((f(yh, "data-min"), f(yh, "data-max")), (0.0, 100.0));
}

#[test]
fn paired_bars_are_the_comparisons_figures() {
    let mut r = complete();
    let fs = |v: f64, lo: Option<f64>, hi: Option<f64>| FigureSummary {
        value: v,
        ci_low: lo,
        ci_high: hi,
        n: 9,
        p25: v - 1.0,
        p75: v + 1.0,
        unit: "ms".into(),
    };
    r.jobs[0].baseline = Some(JobComparison {
        job: r.jobs[0].id.clone(),
        baseline: "main<&>".into(),
        baseline_run_id: "r1".into(),
        noise_pct: 5.0,
        figures: vec![
            FigureChange {
                figure: "ttft_ms.p50".into(),
                baseline: fs(20.0, Some(19.0), Some(21.0)),
                current: fs(30.0, Some(29.0), Some(31.5)),
                change_pct: Some(50.0),
                verdict: ChangeVerdict::Regressed,
            },
            FigureChange {
                figure: "e2e_ms.p99".into(),
                baseline: fs(100.0, None, None),
                current: fs(90.0, Some(85.0), None),
                change_pct: Some(-10.0),
                verdict: ChangeVerdict::WithinNoise,
            },
        ],
        missing: vec!["itl_ms.p50".into()],
    });
    let c = run_charts(&r);
    let kinds: Vec<&str> = c.charts.iter().map(|c| c.kind).collect();
    assert_eq!(kinds, ["trajectory", "baseline"]);
    let svg = &c.charts[1].svg;
    let bars: Vec<(String, String, f64)> = svg
        .walk()
        .into_iter()
        .filter(|n| n.get("class") == Some("chart-mark chart-bar"))
        .map(|n| {
            (
                n.get("data-figure").unwrap().to_string(),
                n.get("data-series").unwrap().to_string(),
                f(n, "data-value"),
            )
        })
        .collect();
    assert_eq!(
        bars,
        [
            ("ttft_ms.p50".into(), "baseline".into(), 20.0),
            ("ttft_ms.p50".into(), "current".into(), 30.0),
            ("e2e_ms.p99".into(), "baseline".into(), 100.0),
            ("e2e_ms.p99".into(), "current".into(), 90.0),
        ]
    );
    let pairs: Vec<&Node> = svg
        .walk()
        .into_iter()
        .filter(|n| n.get("class") == Some("chart-pair"))
        .collect();
    assert_eq!(pairs[0].get("data-verdict"), Some("regressed"));
    assert_eq!(pairs[0].get("data-change-pct"), Some("50"));
    assert!(pairs[0].to_svg().contains("+50 % regressed"));
    // Whiskers only where both ends are bounded.
    let cis = svg
        .walk()
        .into_iter()
        .filter(|n| n.get("class") == Some("chart-ci"))
        .count();
    assert_eq!(cis, 2);
    let gone = marks(svg, "current")
        .into_iter()
        .find(|m| m.get("data-figure") == Some("itl_ms.p50"))
        .unwrap();
    assert_eq!(gone.get("data-absent"), Some("true"));
    let y = axis(svg, "y");
    assert_eq!(f(y, "data-max"), 100.0);
    // The baseline's name is escaped in the markup.
    let html = charts_html(&c);
    assert!(html.contains("main&lt;&amp;&gt;") && !html.contains("main<&>"));
}

#[test]
fn a_chart_the_report_has_nothing_for_is_a_note_not_an_empty_axis() {
    let c = run_charts(&complete());
    let notes: Vec<&str> = c.notes.iter().map(|n| n.kind).collect();
    assert_eq!(notes, ["sweep", "baseline"]);
    let html = charts_html(&c);
    assert_eq!(html.matches("<svg").count(), 1);
    assert!(html.contains("<p class=\"chart-note\" data-omitted=\"sweep\">No load sweep"));
    let mut r = complete();
    r.jobs.clear();
    let c = run_charts(&r);
    assert!(c.charts.is_empty());
    assert_eq!(c.notes.len(), 3);
    assert!(!charts_html(&c).contains("<svg"));
    let missing = charts_of(&ReportState::Missing);
    assert_eq!(missing.notes[0].kind, "report");
}

#[test]
fn report_text_is_escaped_and_bounded() {
    let mut r = complete();
    let hostile = "agentic::<img src=x onerror=alert(1)>&\"q\"'\u{7}";
    r.jobs[0].id = hostile.into();
    r.jobs[0].trajectories[0].steps[1].name = "</svg><script>x</script>".into();
    let c = run_charts(&r);
    assert_eq!(
        c.charts[0].job,
        "agentic::<img src=x onerror=alert(1)>&\"q\"'"
    );
    let html = charts_html(&c);
    assert!(!html.contains("<img") && !html.contains("<script") && !html.contains("</svg><"));
    assert!(html.contains("agentic::&lt;img src=x onerror=alert(1)&gt;&amp;&quot;q&quot;&#39;"));
    assert!(!html.contains('\u{7}'));
    // The markup references nothing outside the file.
    assert!(!html.contains("http://") && !html.contains("https://") && !html.contains("href"));
}
