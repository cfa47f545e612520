// Compact records: a run's per-request records are `requests.jsonl` beside
// `report.json` (which states the file's length, record count and SHA-256 and is written
// last); readers check the file before using it; a capture that dropped events says so on
// the console and in JUnit. Against `inferscope-bench sim` with TTFT = ITL = 0 on loopback.

use crate::support;

use std::path::Path;

use sha2::{Digest, Sha256};
use support::{describe, run, spawn_sim, text, write};

/// A closed loop of `count` context requests of 64 output tokens, 64 in flight.
fn load_suite(dir: &Path, count: u64) -> std::path::PathBuf {
    write(
        dir,
        "big.toml",
        &format!(
            r#"
name = "big"
[telemetry]
gpu = "off"
metrics = false
[[jobs]]
name = "ctx"
kind = "context"
sizes = [16]
count = {count}
concurrency = 64
max_tokens = 64
"#
        ),
    )
}

fn run_load(
    cwd: &Path,
    url: &str,
    count: u64,
    env: &[(&str, &str)],
) -> (std::path::PathBuf, String) {
    let suite = load_suite(cwd, count);
    let out = cwd.join(format!("run-{count}"));
    let mut cmd = support::command(cwd);
    cmd.args(["run", suite.to_str().unwrap(), "--endpoint", url, "--model"])
        .args(["inferscope-sim", "--capture-timeline", "--out"])
        .arg(&out);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    (out, text(&o).0)
}

/// The simulator answering 64 tokens with `itl_ms` between them (no jitter, no prefill).
fn sim_at(cwd: &Path, itl_ms: &str) -> (std::process::Child, String) {
    spawn_sim(
        cwd,
        &[
            "--output-tokens",
            "64",
            "--ttft-ms",
            "0",
            "--itl-ms",
            itl_ms,
            "--itl-jitter-ms",
            "0",
            "--prefill-us-per-token",
            "0",
        ],
    )
}

fn sim(cwd: &Path) -> (std::process::Child, String) {
    sim_at(cwd, "0")
}

#[test]
fn a_thousand_requests_are_compact_records_that_report_serve_and_compare_open() {
    let cwd = tempfile::tempdir().unwrap();
    // 1 ms between tokens: every gap a 7-digit ns figure, as on a real server.
    let (mut child, url) = sim_at(cwd.path(), "1");
    let (out, _) = run_load(cwd.path(), &url, 1000, &[]);
    let _ = child.kill();

    // report.json: summaries, no records, and the companion file's reference.
    let bytes = std::fs::read(out.join("report.json")).unwrap();
    let r: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(r["schema"], "inferscope-bench.report/v3");
    assert!(
        r["jobs"][0].get("requests").is_none(),
        "records stay out of report.json"
    );
    assert_eq!(r["jobs"][0]["stats"]["requests"], 1000);
    let file = std::fs::read(out.join("requests.jsonl")).unwrap();
    let f = &r["requests_file"];
    assert_eq!(f["path"], "requests.jsonl");
    assert_eq!(f["schema"], "inferscope-bench.requests/v2");
    assert_eq!(f["bytes"], file.len() as u64);
    assert_eq!(f["records"], 1000);
    assert_eq!(f["units"], 1000, "one unit line per load unit");
    assert_eq!(f["sha256"], hex::encode(Sha256::digest(&file)));

    // One line per request after the header, each under 1 KB for 64 output tokens.
    let text = String::from_utf8(file).unwrap();
    let mut lines = text.lines();
    let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
    assert_eq!(header["jobs"], serde_json::json!(["big::ctx"]));
    let mut n = 0;
    for l in lines {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        if v.get("u").is_some() {
            assert!(l.len() < 128, "a unit line is small: {l}");
            continue;
        }
        assert_eq!(v["ct"], 64, "{l}");
        assert_eq!(v["itl"].as_array().unwrap().len(), 63, "{l}");
        assert!(l.len() < 1024, "{} bytes: {l}", l.len());
        n += 1;
    }
    assert_eq!(n, 1000);

    // report (summaries) and report --format json (report.json byte for byte).
    let o = run(
        cwd.path(),
        &["report", out.to_str().unwrap(), "--format", "markdown"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text_of(&o).contains("big::ctx"));
    let o = run(
        cwd.path(),
        &["report", out.to_str().unwrap(), "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(o.stdout.strip_suffix(b"\n").unwrap(), &bytes[..]);
    // baseline save and compare read the records (per-request samples for intervals).
    let o = run(
        cwd.path(),
        &["baseline", "save", out.to_str().unwrap(), "--name", "b"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let o = run(
        cwd.path(),
        &["compare", out.to_str().unwrap(), "--baseline", "b"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text_of(&o).contains("ttft_ms.p50"), "{}", describe(&o));
    // serve: the run is listed and its summary opens.
    let html = cwd.path().join("page.html");
    support::report_html(&out, &html);
    assert!(std::fs::read_to_string(&html).unwrap().contains("big::ctx"));
    use inferscope_bench::serve::runs::{ReportState, RunStore};
    let store = RunStore::new(cwd.path().to_path_buf());
    let listed = store.list(None, 100).unwrap();
    assert!(format!("{listed:?}").contains("run-1000"), "{listed:?}");
    let dir = store.resolve("run-1000").unwrap();
    match dir.report(inferscope_bench::fsio::limits::LIST_REPORT_BYTES) {
        ReportState::Ok(rep) => {
            assert_eq!(rep.jobs[0].stats.as_ref().unwrap().requests, 1000);
            assert!(
                rep.jobs[0].requests.is_empty(),
                "the listing reads no records"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// Issue 19 step 1: a load job's report.json holds its summaries, not a trajectory report
/// per unit, so its size does not grow with the units; every unit is a unit line of
/// requests.jsonl, and a 2,000-request run opens in report, compare and serve.
#[test]
fn a_load_reports_size_does_not_grow_with_its_units_and_a_big_run_opens() {
    let cwd = tempfile::tempdir().unwrap();
    let (mut child, url) = sim(cwd.path());
    let (small, _) = run_load(cwd.path(), &url, 200, &[]);
    let (big, _) = run_load(cwd.path(), &url, 2000, &[]);
    let _ = child.kill();
    let size = |d: &Path| std::fs::metadata(d.join("report.json")).unwrap().len();
    let (s, b) = (size(&small), size(&big));
    assert!(
        b * 4 < s * 5,
        "report.json of 2,000 requests ({b} B) is not the same order as of 200 ({s} B)"
    );
    let rep: serde_json::Value =
        serde_json::from_slice(&std::fs::read(big.join("report.json")).unwrap()).unwrap();
    let job = &rep["jobs"][0];
    assert_eq!(job["stats"]["requests"], 2000);
    assert_eq!(
        job["trajectories"].as_array().unwrap().len(),
        1,
        "one per point"
    );
    assert_eq!(job["sweep"]["points"][0]["units"], 2000);
    assert_eq!(rep["requests_file"]["units"], 2000);
    let groups = rep["attribution"]["groups"].as_array().map_or(0, Vec::len);
    assert!(groups <= 1);
    // The records read back: one unit line per unit with its point and stop reason.
    let read = inferscope_bench::run_dir::read_report_with_requests(&big).unwrap();
    let units = &read.jobs[0].units;
    assert_eq!(units.len(), 2000);
    assert_eq!(read.jobs[0].requests.len(), 2000);
    let ids: std::collections::BTreeSet<&str> = units.iter().map(|u| u.id.as_str()).collect();
    assert_eq!(ids.len(), 2000);
    assert!(units.iter().all(|u| u.point == 0 && u.end_ns >= u.start_ns));
    assert!(
        units
            .iter()
            .all(|u| u.stop_reason == inferscope_bench::model::StopReason::Completed)
    );
    let b = big.to_str().unwrap();
    for fmt in ["markdown", "junit", "json"] {
        let o = run(cwd.path(), &["report", b, "--format", fmt]);
        assert_eq!(o.status.code(), Some(0), "{fmt}: {}", describe(&o));
    }
    let o = run(cwd.path(), &["baseline", "save", b, "--name", "big"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let o = run(cwd.path(), &["compare", b, "--baseline", "big"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let html = cwd.path().join("big.html");
    support::report_html(&big, &html);
    assert!(std::fs::read_to_string(&html).unwrap().contains("big::ctx"));
}

fn text_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_truncated_longer_or_corrupt_records_file_is_refused_with_its_location() {
    let cwd = tempfile::tempdir().unwrap();
    let (mut child, url) = sim(cwd.path());
    let (out, _) = run_load(cwd.path(), &url, 20, &[]);
    let _ = child.kill();
    let p = out.join("requests.jsonl");
    let good = std::fs::read(&p).unwrap();
    let save = |cwd: &Path| {
        let o = run(
            cwd,
            &["baseline", "save", out.to_str().unwrap(), "--name", "x"],
        );
        assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
        text(&o).1
    };
    // Truncated (a run killed while writing, or a partial copy).
    std::fs::write(&p, &good[..good.len() - 10]).unwrap();
    let err = save(cwd.path());
    assert!(err.contains("requests.jsonl: truncated:"), "{err}");
    assert!(
        err.contains(&format!("report.json says {} bytes", good.len())),
        "{err}"
    );
    // Longer than report.json says.
    let mut long = good.clone();
    long.extend_from_slice(b"{}\n");
    std::fs::write(&p, &long).unwrap();
    let err = save(cwd.path());
    assert!(
        err.contains("requests.jsonl: longer than recorded"),
        "{err}"
    );
    // Same length, one line broken: its line number and what is wrong.
    let s = String::from_utf8(good.clone()).unwrap();
    let broken = s.replacen("\"ok\":true", "\"ok\":1234", 3);
    let first = s.lines().position(|l| l.contains("\"ok\":true")).unwrap() + 1;
    std::fs::write(&p, broken.as_bytes()).unwrap();
    let err = save(cwd.path());
    assert!(
        err.contains(&format!("requests.jsonl: line {first}:")),
        "{err}"
    );
    // Same length, a changed digit: the hash says so.
    assert!(s.contains("\"ct\":64"));
    let changed = s.replacen("\"ct\":64", "\"ct\":65", 1);
    std::fs::write(&p, changed.as_bytes()).unwrap();
    let err = save(cwd.path());
    assert!(err.contains("SHA-256"), "{err}");
    // Gone.
    std::fs::remove_file(&p).unwrap();
    let err = save(cwd.path());
    assert!(err.contains("requests.jsonl: not found"), "{err}");
    // report.json alone still renders (summaries need no records).
    let o = run(
        cwd.path(),
        &["report", out.to_str().unwrap(), "--format", "markdown"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    // A report whose `requests_file` was removed (edited or damaged) is refused where the
    // records are needed, not read as a run without requests (an empty baseline).
    std::fs::write(&p, &good).unwrap();
    let rp = out.join("report.json");
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&rp).unwrap()).unwrap();
    v["requests_file"] = serde_json::Value::Null;
    std::fs::write(&rp, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let err = save(cwd.path());
    assert!(err.contains("`requests_file` is missing or null"), "{err}");
    let o = run(
        cwd.path(),
        &["report", out.to_str().unwrap(), "--format", "junit"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
}

#[test]
fn a_capture_that_dropped_events_says_capture_partial_on_the_console_and_in_junit() {
    let cwd = tempfile::tempdir().unwrap();
    let (mut child, url) = sim(cwd.path());
    let suite = load_suite(cwd.path(), 50);
    let out = cwd.path().join("run");
    let junit = cwd.path().join("junit.xml");
    let o = support::command(cwd.path())
        .args([
            "run",
            suite.to_str().unwrap(),
            "--endpoint",
            &url,
            "--model",
        ])
        .args(["inferscope-sim", "--capture-timeline", "--junit"])
        .arg(&junit)
        .arg("--out")
        .arg(&out)
        .env("INFERSCOPE_CAPTURE_MAX_EVENTS", "20")
        .output()
        .unwrap();
    let _ = child.kill();
    let (stdout, _) = text(&o);
    let r = support::report(&out);
    let dropped = r["capture"]["dropped"].as_u64().unwrap();
    assert!(dropped > 0, "{}", r["capture"]);
    assert_eq!(r["capture"]["quality"], "partial");
    let line = format!("capture partial: {dropped} events dropped");
    assert!(stdout.contains(&line), "{}", describe(&o));
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains(&line), "{xml}");
    // `report --format junit` says it too.
    let o = run(
        cwd.path(),
        &["report", out.to_str().unwrap(), "--format", "junit"],
    );
    assert!(text(&o).0.contains(&line), "{}", describe(&o));
    // A full capture says nothing of the kind.
    let (mut child, url) = sim(cwd.path());
    let (_, stdout) = run_load(cwd.path(), &url, 10, &[]);
    let _ = child.kill();
    assert!(!stdout.contains("capture partial"), "{stdout}");
}

#[test]
fn a_bad_capture_event_bound_in_the_environment_is_bad_input_before_any_request() {
    // Break-it review: a bad INFERSCOPE_CAPTURE_MAX_EVENTS only warned, the capture went
    // off and the run passed with no reason recorded anywhere.
    let cwd = tempfile::tempdir().unwrap();
    let trip = support::Tripwire::new();
    let suite = load_suite(cwd.path(), 5);
    for bad in ["0", "10001", "abc", "-1"] {
        let o = support::command(cwd.path())
            .args([
                "run",
                suite.to_str().unwrap(),
                "--endpoint",
                &trip.base_url(),
            ])
            .args(["--model", "inferscope-sim", "--capture-timeline"])
            .env("INFERSCOPE_CAPTURE_MAX_EVENTS", bad)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", describe(&o));
        assert!(
            text(&o).1.contains("INFERSCOPE_CAPTURE_MAX_EVENTS"),
            "{}",
            describe(&o)
        );
    }
    assert_eq!(trip.accepted(), 0, "no request before the refusal");
}

/// Issue 19 step 2: a load run with `--aggregation streaming` states the bound of every
/// streamed percentile in report.json (beside the figure), in a gate's verdict (line and
/// JSON), on the console, in JUnit and markdown; it still writes every record, and opens in
/// `report`, `baseline save`, `compare` and the dashboard's page.
#[test]
fn a_streaming_load_run_states_its_bound_everywhere_and_opens() {
    let cwd = tempfile::tempdir().unwrap();
    let (mut child, url) = sim(cwd.path());
    let suite = write(
        cwd.path(),
        "stream.toml",
        r#"
name = "big"
[telemetry]
gpu = "off"
metrics = false
[[jobs]]
name = "ctx"
kind = "context"
sizes = [16]
count = 2000
concurrency = 64
max_tokens = 64
warmup = 10
[jobs.gates]
ttft_ms = { p99 = 60000.0 }
"#,
    );
    let out = cwd.path().join("run-streaming");
    let o = run(
        cwd.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--endpoint",
            &url,
            "--model",
            "inferscope-sim",
            "--aggregation",
            "streaming",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let _ = child.kill();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let console = text(&o).0;
    assert!(
        console.contains("percentiles: ±0.05 % (streaming)"),
        "{console}"
    );
    let rep: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let job = &rep["jobs"][0];
    assert_eq!(job["stats"]["requests"], 1990, "warm-up left out");
    for pop in ["ttft_ms", "itl_ms", "e2e_ms"] {
        let b = &job["stats"][pop]["bound"];
        assert_eq!(
            b["aggregation"], "streaming",
            "{pop}: {}",
            job["stats"][pop]
        );
        assert_eq!(b["relative_error"], 1.0 / 2048.0);
    }
    assert_eq!(
        job["stats"]["tpot_ms"]["value"]["bound"]["aggregation"],
        "streaming"
    );
    let v = job["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["gate"] == "ttft_ms.p99")
        .unwrap();
    assert_eq!(v["error_bound"]["aggregation"], "streaming", "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains(" ms ±0.05 % (streaming) <= bound 60000 ms"),
        "{v}"
    );
    assert_eq!(job["sweep"]["points"][0]["warmup_requests"], 10);
    assert_eq!(
        job["sweep"]["points"][0]["stats"]["ttft_ms"]["bound"]["aggregation"],
        "streaming"
    );
    assert_eq!(
        rep["requests_file"]["records"], 2000,
        "every record is written"
    );
    assert_eq!(rep["requests_file"]["units"], 2000);
    let b = out.to_str().unwrap();
    let o = run(cwd.path(), &["report", b, "--format", "junit"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let junit = text_of(&o);
    assert!(
        junit.contains("ttft_ms.p99 = ") && junit.contains("±0.05 % (streaming) &lt;= bound"),
        "{junit}"
    );
    assert!(
        junit.contains("p99=") && junit.contains("(streaming)"),
        "{junit}"
    );
    let o = run(cwd.path(), &["report", b, "--format", "markdown"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(
        text_of(&o).contains("±0.05 % (streaming)"),
        "{}",
        describe(&o)
    );
    let o = run(cwd.path(), &["baseline", "save", b, "--name", "s"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let o = run(cwd.path(), &["compare", b, "--baseline", "s"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let html = cwd.path().join("s.html");
    support::report_html(&out, &html);
    assert!(
        std::fs::read_to_string(&html)
            .unwrap()
            .contains("(streaming)")
    );
}
