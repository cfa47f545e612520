//! Browser tests of the dashboard page in headless Chromium (issue 7 "Done when"; docs/artifacts.md
//! T004): the five fixture runs (complete, cancelled, overflowed, no telemetry,
//! clock-misaligned) served by the real `inferscope-bench serve`, inspected after the
//! page's script ran — what a person sees: lanes, gap markers, the quality label, table
//! rows, keyboard selection — at 1280 px and 480 px, with screenshots and DOM dumps kept
//! under `target/browser-artifacts/`. The same checks run on the static
//! `report --format html` file.
//!
//! Chromium: `$INFERSCOPE_CHROMIUM`, else `/usr/bin/chromium` (Debian's `chromium`, which
//! `.ci/run` installs). Without it the tests fail when `CI=true` or
//! `INFERSCOPE_REQUIRE_CHROMIUM=1` (set by `.ci/run`), and print a notice and pass
//! otherwise.

mod cdp;
mod charts;
use crate::support;

use std::collections::BTreeSet;
use std::io::BufRead;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use cdp::{Browser, png_size};
use support::{cancelled_with_not_run, report_html};

const TOKEN: &str = "browser-test-token-0123456789";
const FIXTURES: [&str; 5] = [
    "complete",
    "cancelled",
    "overflowed",
    "no-telemetry",
    "clock-misaligned",
];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn chromium() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("INFERSCOPE_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    for c in ["/usr/bin/chromium", "/usr/bin/chromium-browser"] {
        if Path::new(c).is_file() {
            return Some(PathBuf::from(c));
        }
    }
    None
}

/// The browser, or `None` after a notice (fails under `CI=true`).
fn browser_or_skip(test: &str) -> Option<Browser> {
    match chromium() {
        Some(bin) => Some(Browser::launch(&bin)),
        None if std::env::var("CI").is_ok_and(|v| v == "true")
            || std::env::var("INFERSCOPE_REQUIRE_CHROMIUM").is_ok_and(|v| v == "1") =>
        {
            panic!("{test}: Chromium not found (install Debian's `chromium`; .ci/run does)")
        }
        None => {
            eprintln!("NOTICE: {test} skipped: Chromium not found (apt-get install chromium)");
            None
        }
    }
}

fn artifacts() -> PathBuf {
    // <target>/debug/deps/browser-<hash> → <target>/browser-artifacts
    let exe = std::env::current_exe().unwrap();
    let dir = exe
        .ancestors()
        .nth(3)
        .map(|t| t.join("browser-artifacts"))
        .unwrap_or_else(|| repo().join("target/browser-artifacts"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The real binary serving `fixtures/runs` on a free loopback port; killed on drop.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Served {
    fn start() -> Self {
        Self::start_at(Path::new("fixtures/runs"))
    }

    /// The real binary serving the runs root `runs` (relative to the repository, or absolute).
    fn start_at(runs: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_inferscope-bench"))
            .arg("serve")
            .arg("--runs")
            .arg(runs)
            .args(["--bind", "127.0.0.1:0"])
            .env("INFERSCOPE_TOKEN", TOKEN)
            .current_dir(repo())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|r| r.split('/').next())
            .unwrap_or_else(|| panic!("serve printed {line:?}"))
            .parse()
            .unwrap();
        Self { child, addr }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Opens `url` and waits until the page says it is ready.
fn open(b: &mut Browser, s: &str, url: &str) {
    b.call(
        "Page.navigate",
        serde_json::json!({ "url": "about:blank" }),
        Some(s),
    );
    b.call("Page.navigate", serde_json::json!({ "url": url }), Some(s));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let st = b.eval(
            s,
            "(document.getElementById('app') || {dataset: {}}).dataset.state || ''",
        );
        match st.as_str() {
            Some("ready") => return,
            Some("error") => {
                let msg = b.eval(s, "document.getElementById('status').innerText");
                panic!("{url}: page error: {msg}");
            }
            _ if Instant::now() > deadline => panic!("{url}: page never became ready ({st})"),
            _ => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// What a person sees, read from the rendered page (innerText, sizes, visibility).
const OBSERVE: &str = r#"(() => {
  const vis = (e) => { if (!e) return false; const r = e.getBoundingClientRect(); const cs = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none'; };
  const q = (sel) => document.querySelector(sel);
  const t = (sel) => q(sel) ? q(sel).innerText.trim() : null;
  return JSON.stringify({
    run: q('#app').dataset.run,
    quality: t('#quality'), qualityAttr: q('#quality').dataset.quality, qualityVisible: vis(q('#quality')),
    dropped: t('#dropped'), droppedVisible: vis(q('#dropped')),
    runState: t('#run-state'), telemetry: t('#telemetry-state'), telemetryAttr: q('#telemetry-state').dataset.telemetry,
    gaps: [...document.querySelectorAll('#gap-list li')].map(li => ({kind: li.dataset.gap, text: li.innerText.trim(), visible: vis(li)})),
    lanes: [...document.querySelectorAll('#timeline .lane')].map(l => ({
      kind: l.dataset.laneKind, id: l.dataset.lane || l.dataset.trajectory || null, visible: vis(l),
      hidden: l.closest('[hidden]') !== null,
      trackWidth: l.querySelector('.track').getBoundingClientRect().width,
      spans: [...l.querySelectorAll('.span')].map(s => ({id: s.dataset.spanId, family: s.dataset.family, status: s.dataset.status, visible: vis(s), label: s.getAttribute('aria-label')})),
      markers: [...l.querySelectorAll('.gap-marker')].map(m => ({kind: m.dataset.gap, text: m.innerText.trim(), visible: vis(m)})),
      polylines: l.querySelectorAll('polyline').length })),
    rows: [...document.querySelectorAll('#span-table tbody tr')].map(tr => [...tr.cells].map(c => c.innerText.trim())),
    caption: t('#span-caption'),
    scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth
  });
})()"#;

fn observe(b: &mut Browser, s: &str) -> Value {
    let text = b.eval(s, OBSERVE);
    serde_json::from_str(text.as_str().unwrap()).unwrap()
}

/// Spans the page must list for a fixture: one per start event plus one per end whose
/// start is not in the capture.
fn expected_spans(fixture: &str) -> (usize, usize) {
    let text = std::fs::read_to_string(
        repo()
            .join("fixtures/runs")
            .join(fixture)
            .join("timeline/events.jsonl"),
    )
    .unwrap();
    let mut starts = BTreeSet::new();
    let mut orphan = 0;
    let mut traj = 0;
    for l in text.lines() {
        let e: Value = serde_json::from_str(l).unwrap();
        let kind = e["kind"].as_str().unwrap();
        if kind.ends_with("_start") {
            starts.insert(e["span_id"].as_u64().unwrap());
            if !kind.starts_with("phase") {
                traj += 1;
            }
        } else if !starts.contains(&e["span_id"].as_u64().unwrap()) {
            orphan += 1;
        }
    }
    (starts.len() + orphan, traj)
}

fn gap_kinds(o: &Value) -> BTreeSet<String> {
    o["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["kind"].as_str().unwrap().to_string())
        .collect()
}

fn lanes<'a>(o: &'a Value, kind: &str) -> Vec<&'a Value> {
    o["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["kind"] == kind)
        .collect()
}

fn markers(o: &Value, kind: &str) -> Vec<Value> {
    o["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["markers"].as_array().unwrap().iter().cloned())
        .filter(|m| m["kind"] == kind)
        .collect()
}

fn all_spans(o: &Value) -> Vec<Value> {
    o["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|l| l["spans"].as_array().unwrap().iter().cloned())
        .collect()
}

fn manifest(fixture: &str) -> Value {
    serde_json::from_slice(
        &std::fs::read(
            repo()
                .join("fixtures/runs")
                .join(fixture)
                .join("timeline/manifest.json"),
        )
        .unwrap(),
    )
    .unwrap()
}

/// The checks of one fixture state at desktop width.
fn check_state(f: &str, o: &Value) {
    assert_eq!(o["run"], f);
    assert!(
        o["qualityVisible"].as_bool().unwrap() && o["droppedVisible"].as_bool().unwrap(),
        "{f}"
    );
    let (nspans, ntraj) = expected_spans(f);
    let rows = o["rows"].as_array().unwrap();
    assert_eq!(rows.len(), nspans, "{f}: table rows");
    for r in rows {
        assert_eq!(r.as_array().unwrap().len(), 7, "{f}: row {r}");
    }
    let phase = lanes(o, "phase");
    assert_eq!(phase.len(), 1, "{f}");
    assert!(phase[0]["visible"].as_bool().unwrap());
    assert!(
        phase[0]["spans"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["visible"] == true)
    );
    let traj: usize = lanes(o, "trajectory")
        .iter()
        .map(|l| l["spans"].as_array().unwrap().len())
        .sum();
    assert_eq!(traj, ntraj, "{f}: request and fixture spans drawn");
    assert!(
        !lanes(o, "resource").is_empty(),
        "{f}: a resource lane (or its unavailable marker)"
    );
    let gaps = gap_kinds(o);
    let dropped = manifest(f)["dropped_count"].as_u64().unwrap();
    assert_eq!(
        o["dropped"],
        format!(
            "{}Dropped events: {dropped}",
            if dropped > 0 { "▼" } else { "·" }
        ),
        "{f}"
    );
    match f {
        "complete" => {
            assert_eq!(o["qualityAttr"], "complete");
            assert!(o["quality"].as_str().unwrap().contains("Capture: COMPLETE"));
            assert!(o["runState"].as_str().unwrap().contains("finished"));
            assert_eq!(o["telemetryAttr"], "aligned");
            assert!(
                gaps.iter().all(|g| g == "none" || g == "missing_samples"),
                "{f}: {gaps:?}"
            );
            assert!(all_spans(o).iter().all(|s| s["status"] == "completed"));
            assert!(
                lanes(o, "resource")
                    .iter()
                    .all(|l| l["polylines"].as_u64().unwrap() >= 1)
            );
            // Energy with its basis, joined by identity, on every model request row.
            for r in rows
                .iter()
                .filter(|r| r[1].as_str().unwrap().contains("(request)"))
            {
                let e = r[6].as_str().unwrap();
                assert!(
                    e.contains(" mJ (") || e.contains("unavailable"),
                    "{f}: energy cell {e}"
                );
            }
            assert!(
                rows.iter()
                    .any(|r| r[6].as_str().unwrap().contains(" mJ (")),
                "{f}: no energy shown"
            );
        }
        "cancelled" => {
            assert_eq!(o["qualityAttr"], "partial");
            assert!(
                o["quality"]
                    .as_str()
                    .unwrap()
                    .contains("PARTIAL (cancelled)")
            );
            assert!(o["runState"].as_str().unwrap().contains("CANCELLED"));
            assert!(
                gaps.contains("run_cancelled") && gaps.contains("capture_partial"),
                "{gaps:?}"
            );
            assert!(
                all_spans(o)
                    .iter()
                    .any(|s| s["status"] == "cancelled" && s["visible"] == true)
            );
            assert!(
                rows.iter()
                    .any(|r| r[4].as_str().unwrap().starts_with("cancelled"))
            );
        }
        "overflowed" => {
            assert_eq!(o["qualityAttr"], "partial");
            assert!(o["quality"].as_str().unwrap().contains("capacity_exceeded"));
            assert!(dropped > 0);
            assert!(
                gaps.contains("dropped_events") && gaps.contains("unknown_end"),
                "{gaps:?}"
            );
            let d = markers(o, "dropped_events");
            assert!(
                !d.is_empty() && d.iter().all(|m| m["visible"] == true),
                "{f}: dropped marker"
            );
            assert!(!markers(o, "unknown_end").is_empty());
            assert!(all_spans(o).iter().any(|s| s["status"] == "unknown_end"));
            assert!(
                rows.iter()
                    .any(|r| r[4] == "end unknown" && r[3] == "unknown")
            );
        }
        "no-telemetry" => {
            assert_eq!(o["telemetryAttr"], "unavailable");
            assert!(o["telemetry"].as_str().unwrap().contains("UNAVAILABLE"));
            assert!(gaps.contains("telemetry_unavailable"));
            let m = markers(o, "telemetry_unavailable");
            assert!(
                m.len() == 1
                    && m[0]["visible"] == true
                    && m[0]["text"].as_str().unwrap().contains("unavailable")
            );
            assert!(
                o["lanes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|l| l["polylines"] == 0)
            );
        }
        "clock-misaligned" => {
            assert_eq!(o["telemetryAttr"], "misaligned");
            assert!(
                o["telemetry"]
                    .as_str()
                    .unwrap()
                    .contains("CLOCK-DOMAIN MISMATCH")
            );
            assert!(gaps.contains("clock_domain_mismatch"));
            for l in lanes(o, "resource") {
                assert_eq!(
                    l["polylines"], 0,
                    "misaligned samples drawn on the run's axis"
                );
                assert!(
                    l["markers"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|m| m["kind"] == "clock_domain_mismatch" && m["visible"] == true)
                );
            }
        }
        _ => unreachable!(),
    }
}

/// Text-only fingerprint of a state: what remains without colour.
fn signature(o: &Value) -> String {
    format!(
        "{} | {} | {} | {} | {:?}",
        o["quality"],
        o["dropped"],
        o["runState"],
        o["telemetry"].as_str().unwrap().split(" (").next().unwrap(),
        gap_kinds(o)
    )
}

#[test]
fn dashboard_shows_the_five_fixture_states() {
    let Some(mut b) = browser_or_skip("dashboard_shows_the_five_fixture_states") else {
        return;
    };
    let served = Served::start();
    let out = artifacts();
    let s = b.new_page();
    let mut signatures = Vec::new();
    for f in FIXTURES {
        let url = format!("http://{}/#token={TOKEN}&run={f}", served.addr);
        b.viewport(&s, 1280, 900);
        open(&mut b, &s, &url);
        let o = observe(&mut b, &s);
        check_state(f, &o);
        assert!(
            o["scrollWidth"].as_u64() <= o["innerWidth"].as_u64(),
            "{f}: horizontal overflow at 1280"
        );
        signatures.push(signature(&o));
        let g: Value =
            serde_json::from_str(b.eval(&s, &glyph_check("")).as_str().unwrap()).unwrap();
        assert_eq!(
            g["missing"],
            serde_json::json!([]),
            "{f}: glyphs without a font: {g}"
        );
        let dom = b.eval(&s, "document.documentElement.outerHTML");
        std::fs::write(out.join(format!("{f}.dom.html")), dom.as_str().unwrap()).unwrap();
        let png = b.screenshot(&s, true);
        assert_eq!(png_size(&png).0, 1280);
        std::fs::write(out.join(format!("{f}-1280.png")), &png).unwrap();
        if f == "complete"
            && let Ok(p) = std::env::var("INFERSCOPE_DOCS_SCREENSHOT")
        {
            std::fs::write(p, b.screenshot(&s, false)).unwrap();
        }
        // Without colour: the same page for a viewer with no colour vision.
        b.call(
            "Emulation.setEmulatedVisionDeficiency",
            serde_json::json!({ "type": "achromatopsia" }),
            Some(&s),
        );
        std::fs::write(
            out.join(format!("{f}-1280-achromatopsia.png")),
            b.screenshot(&s, false),
        )
        .unwrap();
        b.call(
            "Emulation.setEmulatedVisionDeficiency",
            serde_json::json!({ "type": "none" }),
            Some(&s),
        );

        // Narrow: the same facts, nothing wider than the viewport.
        b.viewport(&s, 480, 900);
        open(&mut b, &s, &url);
        let n = observe(&mut b, &s);
        assert_eq!(n["quality"], o["quality"], "{f}");
        assert_eq!(
            n["rows"].as_array().unwrap().len(),
            o["rows"].as_array().unwrap().len()
        );
        assert!(
            n["scrollWidth"].as_u64() <= n["innerWidth"].as_u64(),
            "{f}: horizontal overflow at 480: {}",
            n["scrollWidth"]
        );
        assert!(n["qualityVisible"].as_bool().unwrap());
        for l in n["lanes"].as_array().unwrap() {
            if l["hidden"] == true {
                continue; // a folded group's lanes, or an open group's overview
            }
            assert!(
                l["visible"] == true && l["trackWidth"].as_f64().unwrap() > 300.0,
                "{f}: narrow lane {l}"
            );
        }
        let png = b.screenshot(&s, true);
        assert_eq!(png_size(&png).0, 480);
        std::fs::write(out.join(format!("{f}-480.png")), &png).unwrap();
    }
    let distinct: BTreeSet<&String> = signatures.iter().collect();
    assert_eq!(
        distinct.len(),
        FIXTURES.len(),
        "states not distinguishable by text: {signatures:#?}"
    );
    assert!(
        b.exceptions.is_empty(),
        "page exceptions: {:?}",
        b.exceptions
    );
}

#[test]
fn spans_are_selectable_by_keyboard() {
    let Some(mut b) = browser_or_skip("spans_are_selectable_by_keyboard") else {
        return;
    };
    let served = Served::start();
    let s = b.new_page();
    b.viewport(&s, 1280, 900);
    open(
        &mut b,
        &s,
        &format!("http://{}/#token={TOKEN}&run=complete", served.addr),
    );
    let ids = b.eval(
        &s,
        "JSON.stringify([...document.querySelectorAll('.lane[data-lane-kind=trajectory] .span')].map(e => e.dataset.spanId))",
    );
    let ids: Vec<String> = serde_json::from_str(ids.as_str().unwrap()).unwrap();
    assert!(ids.len() >= 2);
    // Only one span per lane is in the tab order (roving tabindex).
    let tabbable = b.eval(&s, "document.querySelectorAll('.lane[data-lane-kind=trajectory] .span[tabindex=\"0\"]').length");
    assert_eq!(tabbable, 1);
    b.eval(
        &s,
        "document.querySelector('.lane[data-lane-kind=trajectory] .span[tabindex=\"0\"]').focus()",
    );
    b.key(&s, "ArrowRight", 39);
    b.key(&s, "Enter", 13);
    let state = b.eval(
        &s,
        "JSON.stringify({focus: document.activeElement.dataset.spanId, pressed: document.activeElement.getAttribute('aria-pressed'), \
         detail: document.getElementById('detail').innerText, row: (document.querySelector('#span-table tr[aria-selected=\"true\"]') || {dataset: {}}).dataset.spanId})",
    );
    let v: Value = serde_json::from_str(state.as_str().unwrap()).unwrap();
    assert_eq!(v["focus"], ids[1].as_str());
    assert_eq!(v["pressed"], "true");
    assert_eq!(
        v["row"],
        ids[1].as_str(),
        "the table row of the selected span is marked"
    );
    assert!(
        v["detail"]
            .as_str()
            .unwrap()
            .contains(&format!("id {}", ids[1])),
        "{v}"
    );
    // Up moves to the phases lane.
    b.key(&s, "ArrowUp", 38);
    let fam = b.eval(&s, "document.activeElement.dataset.family");
    assert_eq!(fam, "phase");
    assert!(b.exceptions.is_empty(), "{:?}", b.exceptions);
}

#[test]
fn static_html_report_renders_the_same_view() {
    let Some(mut b) = browser_or_skip("static_html_report_renders_the_same_view") else {
        return;
    };
    let out = artifacts();
    let s = b.new_page();
    b.viewport(&s, 1280, 900);
    for f in ["overflowed", "clock-misaligned"] {
        let file = out.join(format!("{f}-report.html"));
        report_html(&Path::new("fixtures/runs").join(f), &file);
        open(&mut b, &s, &format!("file://{}", file.display()));
        let o = observe(&mut b, &s);
        check_state(f, &o);
        std::fs::write(
            out.join(format!("{f}-report-1280.png")),
            b.screenshot(&s, true),
        )
        .unwrap();
    }
    assert!(
        b.exceptions.is_empty(),
        "page exceptions: {:?}",
        b.exceptions
    );
}

#[test]
fn not_run_jobs_are_shown_as_not_run_without_the_failure_mark() {
    let Some(mut b) = browser_or_skip("not_run_jobs_are_shown_as_not_run_without_the_failure_mark")
    else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("cut");
    cancelled_with_not_run(&run, 4);
    let file = artifacts().join("not-run-report.html");
    report_html(&run, &file);
    let s = b.new_page();
    b.viewport(&s, 1280, 900);
    open(&mut b, &s, &format!("file://{}", file.display()));
    let text = b.eval(
        &s,
        r#"JSON.stringify({
  runState: document.getElementById('run-state').innerText.trim(),
  jobs: [...document.querySelectorAll('#jobs tbody tr')].map(tr => [tr.dataset.jobStatus, tr.cells[2].innerText.trim()])
})"#,
    );
    let o: Value = serde_json::from_str(text.as_str().unwrap()).unwrap();
    let run_state = o["runState"].as_str().unwrap();
    assert!(
        run_state.contains("CANCELLED") && run_state.contains("0 of 5 jobs passed, 4 not run"),
        "{run_state}"
    );
    let jobs = o["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 5, "{o}");
    // The fixture's job was cut short by the signal: cancelled, without the failure mark.
    assert_eq!(jobs[0], serde_json::json!(["cancelled", "⊘ cancelled"]));
    for j in &jobs[1..] {
        assert_eq!(j, &serde_json::json!(["not_run", "○ not run"]));
    }
    // A job that did not run has no duration ("—", never 0.000), and its glyphs
    // render with Debian's fonts.
    let d = b.eval(
        &s,
        "JSON.stringify([...document.querySelectorAll('#jobs tbody tr')].map(tr => tr.cells[3].innerText.trim()))",
    );
    let d: Vec<String> = serde_json::from_str(d.as_str().unwrap()).unwrap();
    assert!(d[1..].iter().all(|x| x == "—"), "{d:?}");
    assert_ne!(d[0], "—");
    let g: Value = serde_json::from_str(b.eval(&s, &glyph_check("")).as_str().unwrap()).unwrap();
    assert_eq!(g["missing"], serde_json::json!([]), "{g}");
    assert!(
        b.exceptions.is_empty(),
        "page exceptions: {:?}",
        b.exceptions
    );
}

/// Whether each character renders with the page's fonts (pure browser script): every
/// non-ASCII character of the page's text (and of `extra`) is drawn on a canvas in the
/// body's font and compared with a code point no font has (U+10FFFD, drawn as the
/// font's missing-glyph box). Returns `{missing: [...], checked: n}`.
fn glyph_check(extra: &str) -> String {
    format!(
        r#"(() => {{
  const font = getComputedStyle(document.body).fontSize + " " + getComputedStyle(document.body).fontFamily;
  const draw = (ch) => {{
    const c = document.createElement("canvas"); c.width = 48; c.height = 48;
    const g = c.getContext("2d"); g.font = font; g.textBaseline = "top"; g.fillText(ch, 4, 4);
    return Array.from(g.getImageData(0, 0, 48, 48).data).join(",");
  }};
  const none = draw(String.fromCodePoint(0x10FFFD));
  const chars = new Set([...(document.body.innerText + {extra:?})].filter(ch => ch.codePointAt(0) > 0x7e && !/\s/.test(ch)));
  const missing = [...chars].filter(ch => draw(ch) === none).map(ch => ch + " U+" + ch.codePointAt(0).toString(16).toUpperCase());
  return JSON.stringify({{missing, checked: chars.size}});
}})()"#
    )
}

/// What the load-run checks read from the page.
const LOAD_OBSERVE: &str = r#"(() => {
  const vis = (e) => { if (!e) return false; const r = e.getBoundingClientRect(); const cs = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && cs.visibility !== 'hidden' && cs.display !== 'none'; };
  const lanes = [...document.querySelectorAll('#timeline .lane')];
  const visible = (kind) => lanes.filter(l => l.dataset.laneKind === kind && vis(l));
  const res = visible('resource');
  const polylines = [...document.querySelectorAll('#timeline .lane[data-lane-kind=resource] polyline')].map(p =>
    p.getAttribute('points').trim().split(/\s+/).map(xy => xy.split(',').map(Number)));
  return JSON.stringify({
    groups: [...document.querySelectorAll('.lane-group')].map(g => ({kind: g.dataset.groupKind, job: g.dataset.job || null,
      point: g.dataset.point || null, expanded: g.querySelector(':scope > .group-toggle').getAttribute('aria-expanded'),
      toggleVisible: vis(g.querySelector(':scope > .group-toggle'))})),
    trajectoryLanes: visible('trajectory').length,
    overviewLanes: visible('overview').map(l => ({marks: l.querySelectorAll('.mark').length, ttft: l.querySelectorAll('.ttft-mark').length})),
    resourceLanes: res.map(l => l.dataset.lane),
    resourceTop: res.length ? res[0].getBoundingClientRect().top + window.scrollY : null,
    seriesOf: Object.fromEntries(res.map(l => [l.dataset.lane, l.dataset.series])),
    polylines,
    visibleSpans: [...document.querySelectorAll('#timeline .lane[data-lane-kind=trajectory] .span')].filter(vis).map(s => ({
      family: s.dataset.family, ttft: s.querySelectorAll('.ttft-mark').length})),
    ticks: [...document.querySelectorAll('#timeline .axis .tick')].map(t => t.innerText.trim()),
    readout: document.getElementById('zoom-readout').innerText,
    jobs: [...document.querySelectorAll('#jobs tbody tr')].map(tr => [...tr.cells].map(c => c.innerText.trim())),
    telemetry: document.getElementById('telemetry-state').innerText,
    tableOpen: document.getElementById('span-details').open,
    docHeight: document.documentElement.scrollHeight,
    scrollWidth: document.documentElement.scrollWidth, innerWidth: window.innerWidth
  });
})()"#;

fn load_observe(b: &mut Browser, s: &str) -> Value {
    serde_json::from_str(b.eval(s, LOAD_OBSERVE).as_str().unwrap()).unwrap()
}

/// The dashboard on a load run (suites/load.toml: 88 trajectories) at 1400 and
/// 420 px. Lanes are grouped by job and sweep point and start collapsed to one overview
/// lane each, the resource lanes sit above them (on the first screen at 1400 px), gauges are
/// drawn as steps (no ramp between samples), requests carry their TTFT mark, the time axis
/// zooms, every glyph renders with Debian's fonts, figures are rounded and the clock
/// domain is the report's. Screenshots: `target/browser-artifacts/load-{1400,420,1400-point-open,1400-zoomed}.png`.
#[test]
fn a_load_run_is_grouped_zoomable_and_fits_the_screen() {
    let Some(mut b) = browser_or_skip("a_load_run_is_grouped_zoomable_and_fits_the_screen") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("load");
    let report = support::captured_run("suites/load.toml", &run);
    let out = artifacts();
    let file = out.join("load-report.html");
    report_html(&run, &file);
    let s = b.new_page();
    for width in [1400u32, 420] {
        b.viewport(&s, width, 900);
        open(&mut b, &s, &format!("file://{}", file.display()));
        let o = load_observe(&mut b, &s);
        // Grouped: two jobs, fanout's three points and arrivals' one, each point folded to
        // its overview lane; no trajectory lane shown until a group is opened.
        let groups = o["groups"].as_array().unwrap();
        let points: Vec<&Value> = groups.iter().filter(|g| g["kind"] == "point").collect();
        assert_eq!(groups.len() - points.len(), 2, "{width}: {groups:?}");
        assert_eq!(points.len(), 4, "{width}: {groups:?}");
        assert!(
            points
                .iter()
                .all(|g| g["expanded"] == "false" && g["toggleVisible"] == true)
        );
        assert_eq!(o["trajectoryLanes"], 0, "{width}");
        let overview = o["overviewLanes"].as_array().unwrap();
        assert_eq!(overview.len(), 4, "{width}: {overview:?}");
        for l in overview {
            assert!(l["marks"].as_u64().unwrap() >= 16, "{width}: {l}");
            assert!(l["ttft"].as_u64().unwrap() >= 16, "{width}: TTFT marks {l}");
        }
        // Resources: every lane of the view, above the trajectories.
        let lanes: Vec<&str> = o["resourceLanes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        for want in [
            "power:0",
            "metrics:requests_running",
            "metrics:kv_cache_usage",
            "metrics:prefix_cache_hits",
        ] {
            assert!(lanes.contains(&want), "{width}: {lanes:?}");
        }
        if width == 1400 {
            assert!(
                o["resourceTop"].as_f64().unwrap() < 900.0,
                "the resource lanes are on the first screen: {}",
                o["resourceTop"]
            );
            assert!(
                o["docHeight"].as_u64().unwrap() < 4000,
                "the page stays short: {}",
                o["docHeight"]
            );
        }
        assert_eq!(
            o["tableOpen"], false,
            "{width}: the long span table starts folded"
        );
        // Steps, never ramps: each polyline moves horizontally or vertically only.
        let polylines = o["polylines"].as_array().unwrap();
        assert!(!polylines.is_empty());
        for p in polylines {
            let pts = p.as_array().unwrap();
            for w in pts.windows(2) {
                let (a, z) = (&w[0], &w[1]);
                let dx = (a[0].as_f64().unwrap() - z[0].as_f64().unwrap()).abs();
                let dy = (a[1].as_f64().unwrap() - z[1].as_f64().unwrap()).abs();
                assert!(dx < 1e-6 || dy < 1e-6, "{width}: a ramp from {a} to {z}");
            }
        }
        assert!(
            o["scrollWidth"].as_u64() <= o["innerWidth"].as_u64(),
            "{width}: horizontal overflow {}",
            o["scrollWidth"]
        );
        // Rounded gate rows; no job without a duration shows 0.
        for row in o["jobs"].as_array().unwrap() {
            let gates = row[4].as_str().unwrap();
            let long = regex_lite_decimals(gates);
            assert!(
                long.is_empty(),
                "{width}: unrounded figures {long:?} in {gates}"
            );
        }
        // One clock-domain id: the report's.
        let domain = report["clock_domain_id"].as_str().unwrap();
        assert!(
            o["telemetry"].as_str().unwrap().contains(domain),
            "{width}: {} vs {domain}",
            o["telemetry"]
        );
        // Every glyph on the page renders with the installed (Debian) fonts; the check
        // itself sees a glyph no installed font has.
        let g: Value =
            serde_json::from_str(b.eval(&s, &glyph_check("⏹")).as_str().unwrap()).unwrap();
        assert_eq!(
            g["missing"],
            serde_json::json!(["⏹ U+23F9"]),
            "{width}: glyphs without a font: {g}"
        );
        std::fs::write(
            out.join(format!("load-{width}.png")),
            b.screenshot(&s, true),
        )
        .unwrap();
    }

    // Open one point: its 16 trajectories, every request with its TTFT mark.
    b.viewport(&s, 1400, 900);
    open(&mut b, &s, &format!("file://{}", file.display()));
    b.eval(
        &s,
        "document.querySelector('.lane-group[data-point=\"concurrency 4\"] > .group-toggle').click()",
    );
    let o = load_observe(&mut b, &s);
    assert_eq!(o["trajectoryLanes"], 16, "{}", o["groups"]);
    let spans = o["visibleSpans"].as_array().unwrap();
    let requests: Vec<&Value> = spans.iter().filter(|s| s["family"] == "request").collect();
    assert_eq!(requests.len(), 32, "two requests per trajectory");
    assert!(requests.iter().all(|s| s["ttft"] == 1), "{requests:?}");
    assert_eq!(
        spans.iter().filter(|s| s["family"] == "fixture").count(),
        16
    );
    std::fs::write(out.join("load-1400-point-open.png"), b.screenshot(&s, true)).unwrap();

    // Zoom in twice, then back to the whole run: the axis and the readout follow.
    let whole = o["ticks"].clone();
    for _ in 0..2 {
        b.eval(&s, "document.querySelector('[data-zoom=in]').click()");
    }
    let z = load_observe(&mut b, &s);
    assert_ne!(z["ticks"], whole);
    assert!(
        z["readout"].as_str().unwrap().contains("zoomed"),
        "{}",
        z["readout"]
    );
    assert_eq!(z["trajectoryLanes"], 16, "the open group stays open");
    std::fs::write(out.join("load-1400-zoomed.png"), b.screenshot(&s, true)).unwrap();
    b.eval(&s, "document.querySelector('[data-zoom=reset]').click()");
    let r = load_observe(&mut b, &s);
    assert_eq!(r["ticks"], whole);
    assert!(
        b.exceptions.is_empty(),
        "page exceptions: {:?}",
        b.exceptions
    );
}

/// Numbers with more than three decimals in `text` (an unrounded float).
fn regex_lite_decimals(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'.' && i > 0 && b[i - 1].is_ascii_digit() {
            let start = i;
            let mut j = i + 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            if j - i - 1 > 3 {
                out.push(text[start..j].to_string());
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}
