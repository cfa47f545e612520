//! The charts in headless Chromium, read back from the DOM after the page
//! ran: a load sweep's latency–throughput curves in `report --format html` of
//! `suites/load.toml` on the built-in simulator, a trajectory's step bars and a baseline's
//! paired bars, each mark's value, basis and position checked against `report.json` and
//! its axis (the tick labels and the range they span), missing figures drawn as missing
//! with their reasons, charts the run has nothing for left out with a note, and the
//! dashboard (`serve`) drawing exactly the same elements as the static file.
//! Screenshots: `target/browser-artifacts/charts-*.png`.

use std::path::Path;

use serde_json::Value;

use super::cdp::{Browser, png_size};
use super::{Served, TOKEN, artifacts, browser_or_skip, open};
use crate::support::{self, copy_dir, report_html};

/// Every chart, panel, axis and mark as the page drew it: attributes, tick labels and the
/// geometry the browser computed (`getBBox`, in the chart's own units).
const CHARTS_OBSERVE: &str = r#"(() => {
  const num = (e, a) => e.hasAttribute(a) ? Number(e.getAttribute(a)) : null;
  const charts = [...document.querySelectorAll('#charts svg.chart')].map(svg => ({
    kind: svg.dataset.chartKind, job: svg.dataset.job, trajectory: svg.dataset.trajectory || null,
    baseline: svg.dataset.baseline || null,
    visible: svg.getBoundingClientRect().width > 0 && svg.getBoundingClientRect().height > 0,
    panels: [...svg.querySelectorAll('.chart-panel')].map(p => ({
      key: p.dataset.panel,
      axes: [...p.querySelectorAll('.chart-axis')].map(a => ({
        axis: a.dataset.axis, min: num(a, 'data-min'), max: num(a, 'data-max'),
        pxMin: num(a, 'data-px-min'), pxMax: num(a, 'data-px-max'), label: a.dataset.label || null,
        bands: num(a, 'data-bands'),
        ticks: [...a.querySelectorAll('.chart-tick')].map(t => {
          const l = t.querySelector('line');
          return { value: num(t, 'data-value'), band: num(t, 'data-band'), label: t.querySelector('text').textContent,
            x: Number(l.getAttribute('x1')), y: Number(l.getAttribute('y1')) };
        })
      })),
      marks: [...p.querySelectorAll('.chart-mark')].map(m => {
        const b = m.getBBox();
        const t = [...m.children].find(c => c.tagName === 'title');
        return { series: m.dataset.series, point: num(m, 'data-point'), step: num(m, 'data-step'),
          figure: m.dataset.figure || null, x: num(m, 'data-x'), value: num(m, 'data-value'),
          absent: m.dataset.absent === 'true', reason: m.dataset.reason || null, basis: m.dataset.basis || null,
          tokens: m.dataset.tokens || null, unit: m.dataset.unit || null, axis: m.dataset.axis || null,
          kind: m.dataset.kind || null, tag: m.tagName,
          cx: b.x + b.width / 2, cy: b.y + b.height / 2, top: b.y, height: b.height,
          title: t ? t.textContent : null };
      })
    }))
  }));
  const notes = [...document.querySelectorAll('#charts .chart-note')].map(p => ({ kind: p.dataset.omitted, text: p.textContent }));
  const stray = [...document.querySelectorAll('#charts *')].filter(e =>
    !['svg', 'g', 'title', 'line', 'polyline', 'rect', 'circle', 'text', 'p'].includes(e.tagName.toLowerCase())).map(e => e.tagName);
  const r = document.getElementById('charts').getBoundingClientRect();
  return JSON.stringify({ charts, notes, stray, source: document.getElementById('charts').dataset.source || null,
    box: [r.left + window.scrollX, r.top + window.scrollY, r.width, r.height] });
})()"#;

fn observe(b: &mut Browser, s: &str) -> Value {
    serde_json::from_str(b.eval(s, CHARTS_OBSERVE).as_str().unwrap()).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Where `v` lies on `axis`, from the range and pixel ends the axis carries.
fn px(axis: &Value, v: f64) -> f64 {
    let (lo, hi) = (f(&axis["min"]), f(&axis["max"]));
    let (p0, p1) = (f(&axis["pxMin"]), f(&axis["pxMax"]));
    p0 + (v - lo) / (hi - lo) * (p1 - p0)
}

fn axis<'a>(panel: &'a Value, key: &str) -> &'a Value {
    panel["axes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["axis"] == key)
        .unwrap_or_else(|| panic!("no {key} axis in {}", panel["key"]))
}

/// A linear axis reads as its ticks: the labels are the tick values, the first tick is the
/// range's low end and the last its high end, each tick where the range puts it.
fn check_linear_axis(a: &Value, horizontal: bool) {
    let ticks = a["ticks"].as_array().unwrap();
    assert!(ticks.len() >= 2, "{a}");
    for t in ticks {
        let label: f64 = t["label"].as_str().unwrap().parse().unwrap();
        assert_eq!(label, f(&t["value"]), "{a}");
        let at = if horizontal { f(&t["x"]) } else { f(&t["y"]) };
        assert!(
            (at - px(a, label)).abs() < 0.02,
            "tick {label} at {at}: {a}"
        );
    }
    assert_eq!(f(&ticks[0]["value"]), f(&a["min"]), "{a}");
    assert_eq!(f(&ticks[ticks.len() - 1]["value"]), f(&a["max"]), "{a}");
}

fn job<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == id)
        .unwrap_or_else(|| panic!("no job {id}"))
}

/// The figure a sweep mark draws, its basis and token source, from report.json's point.
fn sweep_figure(p: &Value, series: &str) -> (Value, String, Value) {
    let s = &p["stats"];
    let client = |v: &Value| (v.clone(), "client_timing".to_string(), Value::Null);
    match series {
        "ttft_p50" => client(&s["ttft_ms"]["p50"]),
        "ttft_p99" => client(&s["ttft_ms"]["p99"]),
        "itl_p50" => client(&s["itl_ms"]["p50"]),
        "itl_p99" => client(&s["itl_ms"]["p99"]),
        "e2e_p50" => client(&s["e2e_ms"]["p50"]),
        "e2e_p99" => client(&s["e2e_ms"]["p99"]),
        "output_tokens_per_s" => {
            let fig = &s["output_tokens_per_s"];
            (
                fig["value"].clone(),
                fig["basis"].as_str().unwrap().to_string(),
                fig["tokens"].clone(),
            )
        }
        "goodput_rps" => client(&p["goodput"]["rps"]),
        other => panic!("unknown series {other}"),
    }
}

/// Every sweep chart's marks are report.json's point figures at their axes' positions,
/// with their basis; a null figure is a missing mark with its reason.
fn check_sweeps(o: &Value, report: &Value) -> usize {
    let mut n = 0;
    for c in o["charts"].as_array().unwrap() {
        if c["kind"] != "sweep" {
            continue;
        }
        n += 1;
        assert_eq!(c["visible"], true);
        let j = job(report, c["job"].as_str().unwrap());
        let points = j["sweep"]["points"].as_array().unwrap();
        let variable = j["sweep"]["variable"].as_str();
        let panels = c["panels"].as_array().unwrap();
        let keys: Vec<&str> = panels.iter().map(|p| p["key"].as_str().unwrap()).collect();
        assert_eq!(keys, ["ttft", "itl", "e2e", "throughput"]);
        for p in panels {
            let x = axis(p, "x");
            check_linear_axis(x, true);
            check_linear_axis(axis(p, "y"), false);
            if p["key"] == "throughput" {
                check_linear_axis(axis(p, "y2"), false);
            }
            let marks = p["marks"].as_array().unwrap();
            assert_eq!(
                marks.len(),
                2 * points.len(),
                "{}: one mark per point and series",
                p["key"]
            );
            for m in marks {
                let i = m["point"].as_u64().unwrap() as usize;
                let pt = &points[i];
                let series = m["series"].as_str().unwrap();
                // x: the swept value (or the point's rate / concurrency without a sweep).
                let want_x = match variable {
                    Some(_) => f(&pt["value"]),
                    None if !pt["rate"].is_null() => f(&pt["rate"]),
                    None => f(&pt["concurrency"]),
                };
                assert_eq!(f(&m["x"]), want_x, "{m}");
                assert!(f(&m["x"]) <= f(&x["max"]) && f(&m["x"]) >= f(&x["min"]));
                assert!((f(&m["cx"]) - px(x, want_x)).abs() < 0.05, "{m}");
                let (want, basis, tokens) = sweep_figure(pt, series);
                assert_eq!(m["basis"], basis.as_str(), "{m}");
                if !tokens.is_null() {
                    assert_eq!(m["tokens"], tokens, "{m}");
                }
                let title = m["title"].as_str().unwrap();
                assert!(title.contains(pt["label"].as_str().unwrap()), "{title}");
                if want.is_null() {
                    assert_eq!(m["absent"], true, "a null figure is drawn missing: {m}");
                    assert!(m["value"].is_null(), "never as 0: {m}");
                    assert!(!m["reason"].as_str().unwrap().is_empty(), "{m}");
                    assert!(title.contains("n/a"), "{title}");
                    continue;
                }
                assert_eq!(m["absent"], false, "{m}");
                assert_eq!(f(&m["value"]), f(&want), "{} at point {i}", series);
                let y = axis(p, m["axis"].as_str().unwrap());
                let v = f(&want);
                assert!(v >= f(&y["min"]) && v <= f(&y["max"]), "{m} outside {y}");
                assert!((f(&m["cy"]) - px(y, v)).abs() < 0.05, "{m} vs {y}");
            }
        }
    }
    n
}

/// Writes a PNG of the charts' container and checks it is one.
fn keep_screenshot(b: &mut Browser, s: &str, o: &Value, name: &str) {
    let bx = o["box"].as_array().unwrap();
    let (x, y, w, h) = (f(&bx[0]), f(&bx[1]), f(&bx[2]), f(&bx[3]));
    assert!(w > 0.0 && h > 0.0, "{}", o["box"]);
    let png = b.screenshot_clip(s, x, y, w, h);
    assert_eq!(png_size(&png).0, w.round() as u32);
    std::fs::write(artifacts().join(name), png).unwrap();
}

/// Issue 32 item 2 "Done when": the HTML report of suites/load.toml (run on the built-in
/// simulator) shows both jobs' latency–throughput curves; every mark is report.json's
/// figure, with its basis, where its axis puts it; the trajectory and baseline charts,
/// which this run has nothing for, are one-line notes. Screenshot:
/// `target/browser-artifacts/charts-load-report.png`.
#[test]
fn the_load_reports_curves_are_its_figures() {
    let Some(mut b) = browser_or_skip("the_load_reports_curves_are_its_figures") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("load");
    let report = support::captured_run("suites/load.toml", &run);
    let file = artifacts().join("charts-load-report.html");
    report_html(&run, &file);
    let html = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        html.matches("<svg class=\"chart\"").count(),
        2,
        "drawn into the file"
    );
    let s = b.new_page();
    b.viewport(&s, 1400, 900);
    open(&mut b, &s, &format!("file://{}", file.display()));
    let o = observe(&mut b, &s);
    assert_eq!(o["source"], "report");
    assert_eq!(o["stray"], serde_json::json!([]));
    let jobs: Vec<&str> = o["charts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["job"].as_str().unwrap())
        .collect();
    assert_eq!(jobs, ["load::fanout", "load::arrivals"]);
    assert_eq!(check_sweeps(&o, &report), 2);
    // fanout sweeps concurrency 1, 4, 16: x runs from 0 past 16.
    let fanout = &o["charts"][0]["panels"][0];
    let x = axis(fanout, "x");
    assert_eq!(x["label"], "concurrency (trajectories in flight)", "{x}");
    assert_eq!(f(&x["min"]), 0.0);
    assert!(f(&x["max"]) >= 16.0);
    // arrivals is one open-loop point at 20 requests/s.
    let arrivals = axis(&o["charts"][1]["panels"][0], "x");
    assert_eq!(arrivals["label"], "arrival rate (requests/s)");
    // The run's gates bound TTFT and E2E: every point has a goodput mark with a value.
    for c in o["charts"].as_array().unwrap() {
        for m in c["panels"][3]["marks"].as_array().unwrap() {
            assert_eq!(m["absent"], false, "{m}");
        }
    }
    let notes: Vec<&str> = o["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(notes, ["trajectory", "baseline"]);
    keep_screenshot(&mut b, &s, &o, "charts-load-report.png");
    // At phone width the charts scale down with the column: no horizontal overflow.
    b.viewport(&s, 420, 900);
    open(&mut b, &s, &format!("file://{}", file.display()));
    let w = b.eval(
        &s,
        "JSON.stringify([document.documentElement.scrollWidth, window.innerWidth])",
    );
    let w: Vec<u64> = serde_json::from_str(w.as_str().unwrap()).unwrap();
    assert!(w[0] <= w[1], "horizontal overflow {w:?}");
    assert!(
        b.exceptions.is_empty(),
        "page exceptions: {:?}",
        b.exceptions
    );
}

/// A job name no chart may parse as markup.
const HOSTILE: &str = "agentic::<img src=x onerror=\"document.title='pwned'\">&'q'";

/// The `complete` fixture with a hostile job name and a saved-baseline comparison
/// (one figure regressed, one within noise with an unbounded interval, one the run lacks).
fn trajectory_and_baseline_run(to: &Path) -> Value {
    copy_dir(&super::repo().join("fixtures/runs/complete"), to);
    let p = to.join("report.json");
    let mut r: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    let fs = |v: f64, lo: Option<f64>, hi: Option<f64>| {
        serde_json::json!({"value": v, "ci_low": lo, "ci_high": hi, "n": 9, "p25": v - 1.0,
            "p75": v + 1.0, "unit": "ms"})
    };
    r["jobs"][0]["id"] = HOSTILE.into();
    r["jobs"][0]["baseline"] = serde_json::json!({
        "job": HOSTILE, "baseline": "main", "baseline_run_id": "r1", "noise_pct": 5.0,
        "figures": [
            {"figure": "ttft_ms.p50", "baseline": fs(20.0, Some(19.0), Some(21.0)),
             "current": fs(30.0, Some(29.0), Some(31.5)), "change_pct": 50.0, "verdict": "regressed"},
            {"figure": "e2e_ms.p99", "baseline": fs(100.0, Some(95.0), None),
             "current": fs(96.0, Some(90.0), None), "change_pct": -4.0, "verdict": "within_noise"}
        ],
        "missing": ["itl_ms.p50"]
    });
    std::fs::write(&p, serde_json::to_vec(&r).unwrap()).unwrap();
    r
}

/// The trajectory's step bars and the baseline's paired bars are report.json's figures:
/// bars stand on their axis's 0 and reach their value; a step without an energy figure
/// (or a tool step's cache hit) is a missing mark with the report's reason, never a bar
/// of 0; the hostile job name is text, never markup.
fn check_trajectory_and_baseline(o: &Value, r: &Value) {
    let charts = o["charts"].as_array().unwrap();
    let kinds: Vec<&str> = charts.iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["trajectory", "baseline"]);
    assert_eq!(
        o["stray"],
        serde_json::json!([]),
        "no element but the drawing ones"
    );
    let t = &charts[0];
    assert_eq!(t["job"], HOSTILE);
    let steps = r["jobs"][0]["trajectories"][0]["steps"].as_array().unwrap();
    assert_eq!(t["trajectory"], r["jobs"][0]["trajectories"][0]["id"]);
    let mut absent = 0;
    for p in t["panels"].as_array().unwrap() {
        let y = axis(p, "y");
        check_linear_axis(y, false);
        let x = axis(p, "x");
        assert_eq!(x["bands"].as_u64(), Some(steps.len() as u64));
        let marks = p["marks"].as_array().unwrap();
        assert_eq!(marks.len(), steps.len(), "{}", p["key"]);
        for (m, st) in marks.iter().zip(steps) {
            assert_eq!(m["kind"], st["kind"]);
            let (want, basis, reason) = match p["key"].as_str().unwrap() {
                "duration" => (
                    st["duration_ms"].clone(),
                    "client_timing".to_string(),
                    Value::Null,
                ),
                "energy" => (
                    st["energy"]["value"].clone(),
                    st["energy"]["basis"].as_str().unwrap().to_string(),
                    st["energy"]["reason"].clone(),
                ),
                "cache_hit" => {
                    let want = match (st["prompt_tokens"].as_u64(), st["cached_tokens"].as_u64()) {
                        (Some(p), Some(c)) if p > 0 => {
                            serde_json::json!(c as f64 / p as f64 * 100.0)
                        }
                        _ => Value::Null,
                    };
                    (want, "server_reported".to_string(), Value::Null)
                }
                k => panic!("unknown panel {k}"),
            };
            assert_eq!(m["basis"], basis.as_str(), "{m}");
            if want.is_null() {
                absent += 1;
                assert_eq!(m["absent"], true, "{m}");
                assert!(m["value"].is_null(), "{m}");
                if !reason.is_null() {
                    assert_eq!(m["reason"], reason, "the report's reason");
                }
                continue;
            }
            assert_eq!(f(&m["value"]), f(&want), "{m}");
            assert_eq!(m["tag"], "rect");
            let v = f(&want);
            assert!((f(&m["top"]) - px(y, v)).abs() < 0.05, "{m}");
            assert!(
                (f(&m["top"]) + f(&m["height"]) - px(y, 0.0)).abs() < 0.05,
                "{m}"
            );
        }
    }
    // Three tool steps without energy, four tool steps without a prompt.
    assert_eq!(absent, 3 + 4);
    let bl = &charts[1];
    assert_eq!(bl["baseline"], "main");
    let p = &bl["panels"][0];
    let y = axis(p, "y");
    check_linear_axis(y, false);
    let cmp = &r["jobs"][0]["baseline"];
    let bars: Vec<&Value> = p["marks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["absent"] == false)
        .collect();
    assert_eq!(bars.len(), 4);
    for (k, fc) in cmp["figures"].as_array().unwrap().iter().enumerate() {
        for (m, side) in bars[2 * k..2 * k + 2].iter().zip(["baseline", "current"]) {
            assert_eq!(m["figure"], fc["figure"]);
            assert_eq!(m["series"], side);
            assert_eq!(f(&m["value"]), f(&fc[side]["value"]), "{m}");
            assert_eq!(m["basis"], "client_timing");
            assert!(
                (f(&m["top"]) - px(y, f(&fc[side]["value"]))).abs() < 0.05,
                "{m}"
            );
        }
    }
    let missing: Vec<&Value> = p["marks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["absent"] == true)
        .collect();
    assert_eq!(missing.len(), 1);
    assert_eq!(missing[0]["figure"], "itl_ms.p50");
    let notes: Vec<&str> = o["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(notes, ["sweep"]);
}

/// The dashboard (`inferscope-bench serve`) draws the same charts as the static report,
/// element for element: the load run's curves, and a run's step and baseline bars (with a
/// hostile job name that stays text). Screenshots:
/// `target/browser-artifacts/charts-dashboard-{load,steps-baseline}.png`.
#[test]
fn the_dashboard_draws_the_same_charts_as_the_report() {
    let Some(mut b) = browser_or_skip("the_dashboard_draws_the_same_charts_as_the_report") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("runs");
    let load = support::captured_run("suites/load.toml", &root.join("load"));
    let tb = trajectory_and_baseline_run(&root.join("steps"));
    let srv = Served::start_at(&root);
    let s = b.new_page();
    b.viewport(&s, 1400, 900);
    for (run, shot) in [("load", "load"), ("steps", "steps-baseline")] {
        let file = artifacts().join(format!("charts-{run}-report.html"));
        report_html(&root.join(run), &file);
        open(&mut b, &s, &format!("file://{}", file.display()));
        let stat = observe(&mut b, &s);
        open(
            &mut b,
            &s,
            &format!("http://{}/#token={TOKEN}&run={run}", srv.addr),
        );
        let served = observe(&mut b, &s);
        assert_eq!(
            served["source"],
            Value::Null,
            "drawn by the page from the API"
        );
        assert_eq!(served["charts"], stat["charts"], "{run}: the same charts");
        assert_eq!(served["notes"], stat["notes"], "{run}: the same notes");
        if run == "load" {
            assert_eq!(check_sweeps(&served, &load), 2);
        } else {
            check_trajectory_and_baseline(&served, &tb);
            check_trajectory_and_baseline(&stat, &tb);
            let title = b.eval(&s, "document.title");
            assert!(!title.as_str().unwrap().contains("pwned"), "{title}");
        }
        keep_screenshot(&mut b, &s, &served, &format!("charts-dashboard-{shot}.png"));
    }
    assert!(
        b.exceptions.is_empty(),
        "page exceptions: {:?}",
        b.exceptions
    );
}
