//! Outcomes never lie, second pass, on the built binary against the built-in
//! simulator: the five timeline phases of a real run (item 3), warm-up marked in
//! `requests.jsonl` and the docs' Python snippet reproducing the report's TTFT p50 (item
//! 4), `merge` refusing tampered shard directories (item 9), and a schedule that cannot
//! place its count (item 10).

use crate::support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use support::{describe, job, report, run};

/// A load job with warm-up (closed loop) and a sequential context job.
const SUITE: &str = "name = \"o\"\nseed = 3\n\
    [telemetry]\nsample_period_ms = 20\nmetrics_period_ms = 50\n\
    [[jobs]]\nname = \"load\"\nkind = \"context\"\nsizes = [16, 64]\nmax_tokens = 6\n\
    concurrency = 2\ncount = 12\nwarmup = 3\n\
    [[jobs]]\nname = \"ask\"\nkind = \"context\"\nsizes = [16]\nmax_tokens = 4\n";

fn run_ok(cwd: &Path, args: &[&str]) {
    let o = run(cwd, args);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

/// Item 3: a real run's timeline holds all five phases; each job's grading is a
/// `grading` phase span nested in request execution, named by the job; the capture
/// verifies.
#[test]
fn a_real_runs_timeline_holds_all_five_phases() {
    let cwd = tempfile::tempdir().unwrap();
    support::write(cwd.path(), "o.toml", SUITE);
    let out = cwd.path().join("run");
    let o = out.to_str().unwrap();
    run_ok(
        cwd.path(),
        &["run", "o.toml", "--capture-timeline", "--out", o],
    );
    let ev = support::events(&out);
    let phases: BTreeSet<&str> = ev
        .iter()
        .filter(|e| e["kind"] == "phase_start")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    let all = [
        "preparation",
        "preflight",
        "request_execution",
        "grading",
        "finalization",
    ];
    assert_eq!(phases, all.into_iter().collect(), "{ev:?}");
    let exec = ev
        .iter()
        .find(|e| e["kind"] == "phase_start" && e["name"] == "request_execution")
        .unwrap()["span_id"]
        .clone();
    let grading: Vec<&Value> = ev
        .iter()
        .filter(|e| e["kind"] == "phase_start" && e["name"] == "grading")
        .collect();
    let cases: Vec<&str> = grading
        .iter()
        .map(|e| e["case_id"].as_str().unwrap())
        .collect();
    assert_eq!(cases, ["o::load", "o::ask"]);
    assert!(grading.iter().all(|e| e["parent_span_id"] == exec));
    let ends = ev
        .iter()
        .filter(|e| e["kind"] == "phase_end" && e["name"] == "grading")
        .count();
    assert_eq!(ends, 2);
    run_ok(cwd.path(), &["timeline", "verify", o]);
}

/// The Python block that follows "Loading the file elsewhere" in docs/artifacts.md.
fn docs_snippet() -> String {
    let doc = std::fs::read_to_string(support::repo().join("docs/artifacts.md")).unwrap();
    let from = doc
        .find("Loading the file elsewhere")
        .expect("the snippet's lead-in");
    let block = &doc[from..];
    let start = block.find("```python\n").unwrap() + "```python\n".len();
    let len = block[start..].find("```").unwrap();
    block[start..start + len].to_string()
}

/// Item 4 and "Done when": warm-up requests are marked (`"wu":true`) in requests.jsonl,
/// and docs/artifacts.md's Python snippet, run with python3 in the run directory,
/// prints report.json's TTFT p50 (on main it counted the warm-up requests too).
#[test]
fn the_docs_snippet_reproduces_the_reports_ttft_p50_without_warm_up() {
    let cwd = tempfile::tempdir().unwrap();
    support::write(cwd.path(), "o.toml", SUITE);
    let out = cwd.path().join("run");
    run_ok(
        cwd.path(),
        &[
            "run",
            "o.toml",
            "--filter",
            "o::load",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let r = report(&out);
    let j = job(&r, "o::load");
    let want = j["stats"]["ttft_ms"]["p50"].as_f64().unwrap();
    let text = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let warm: Vec<Value> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("u").is_none() && v["wu"] == true)
        .collect();
    assert_eq!(warm.len(), 3, "the point's 3 warm-up requests are marked");
    let listed: BTreeSet<String> = j["load"]["warmup_requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let marked: BTreeSet<String> = j["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["warmup"] == true)
        .map(|q| q["request_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        marked, listed,
        "the line's mark and report.json's list agree"
    );
    let python = which_python();
    let o = std::process::Command::new(python)
        .arg("-c")
        .arg(docs_snippet())
        .current_dir(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got: f64 = String::from_utf8_lossy(&o.stdout).trim().parse().unwrap();
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1.0),
        "snippet {got} vs report {want}"
    );
}

fn which_python() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("python3"))
                .find(|p| p.is_file())
        })
        .expect("python3 on PATH (the docs' snippet is Python)")
}

/// Item 10: `rate = 1e-12` with `count = 3` places one arrival (the next lies past the
/// run clock's range): the job says so and fails (on main it ran 1 unit and passed).
#[test]
fn a_schedule_that_cannot_place_its_count_fails_and_says_so() {
    let cwd = tempfile::tempdir().unwrap();
    support::write(
        cwd.path(),
        "r.toml",
        "name = \"r\"\n[[jobs]]\nname = \"slow\"\nkind = \"context\"\nsizes = [16]\n\
         max_tokens = 4\nrate = 1e-12\narrival = \"constant\"\ncount = 3\n",
    );
    let out = cwd.path().join("run");
    let junit = cwd.path().join("r.xml");
    let o = run(
        cwd.path(),
        &[
            "run",
            "r.toml",
            "--out",
            out.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(100), "{}", describe(&o));
    let r = report(&out);
    let j = job(&r, "r::slow");
    assert_eq!(j["status"], "fail", "{j}");
    let notes: Vec<&str> = j["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    // What failed the job leads its notes, and so JUnit's failure message.
    assert!(
        notes[0].starts_with("schedule: ") && notes[0].contains("places 1 of its count of 3"),
        "{notes:?}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("<failure message=\"note: schedule: "), "{xml}");
    assert!(
        support::text(&o).0.contains("places 1 of its count of 3"),
        "{}",
        describe(&o)
    );
}

/// Two `--shard` runs of one load job on the simulator, in `dir/s1` and `dir/s2`.
fn two_shards(dir: &Path) -> (PathBuf, PathBuf) {
    support::write(dir, "o.toml", SUITE);
    let dirs = (dir.join("s1"), dir.join("s2"));
    for (k, d) in [(1, &dirs.0), (2, &dirs.1)] {
        run_ok(
            dir,
            &[
                "run",
                "o.toml",
                "--filter",
                "o::load",
                "--shard",
                &format!("{k}/2"),
                "--out",
                d.to_str().unwrap(),
            ],
        );
    }
    dirs
}

/// Edits `dir/report.json` with `f`.
fn edit_report(dir: &Path, f: impl FnOnce(&mut Value)) {
    let p = dir.join("report.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// Item 9: `merge` refuses tampered shard directories with exit 2 and an error naming
/// the shard and the field — shard 1 copied as shard 2 with only its index edited (and
/// also with its clock domain edited: its request ids are shard 1's), reference instants
/// of 0 and u64::MAX, an anchor shifted one hour from its clock-domain id — and an
/// `--out` inside a shard directory; the untampered pair merges (exit 0).
#[test]
fn merge_refuses_tampered_shard_directories() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let (s1, s2) = two_shards(cwd);
    let merge = |dirs: &[&Path], out: &Path| {
        let mut args = vec!["merge".to_string()];
        args.extend(dirs.iter().map(|d| d.display().to_string()));
        args.extend(["--out".into(), out.display().to_string()]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        run(cwd, &refs)
    };
    let tamper = |name: &str, from: &Path, f: &dyn Fn(&mut Value)| {
        let d = cwd.join(name);
        support::copy_dir(from, &d);
        edit_report(&d, f);
        d
    };
    let copy = tamper("copy", &s1, &|v| v["shard"]["k"] = Value::from(2));
    let copy_domain = tamper("copy-domain", &s1, &|v| {
        v["shard"]["k"] = Value::from(2);
        let d = v["clock_domain_id"].as_str().unwrap().to_string();
        let parts: Vec<&str> = d.split(':').collect();
        v["clock_domain_id"] = Value::from(format!("mono:{}:999999:{}", parts[1], parts[3]));
    });
    let zero = tamper("zero", &s2, &|v| {
        v["reference_instant_unix_ns"] = Value::from(0u64)
    });
    let max = tamper("max", &s2, &|v| {
        v["reference_instant_unix_ns"] = Value::from(u64::MAX)
    });
    let hour = tamper("hour", &s2, &|v| {
        let a = v["reference_instant_unix_ns"].as_u64().unwrap();
        v["reference_instant_unix_ns"] = Value::from(a + 3_600_000_000_000);
    });
    let cases: [(&Path, &str); 5] = [
        (&copy, "field `clock_domain_id`"),
        (&copy_domain, "field `request_id`"),
        (
            &zero,
            "field `reference_instant_unix_ns`: 0 is not a unix instant",
        ),
        (
            &max,
            "field `reference_instant_unix_ns`: 18446744073709551615 is not",
        ),
        (&hour, "differs by 3600.000 s from the anchor"),
    ];
    for (i, (bad, want)) in cases.into_iter().enumerate() {
        let out = cwd.join(format!("bad{i}"));
        let o = merge(&[&s1, bad], &out);
        let all = describe(&o);
        assert_eq!(o.status.code(), Some(2), "{want}: {all}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{want}: {all}");
        assert!(
            err.contains(&format!("shard 2 ({})", bad.display())),
            "{all}"
        );
        assert!(!out.join("report.json").exists(), "{all}");
    }
    // --out inside a shard directory: refused before anything is copied.
    let inside = s1.join("merged");
    let o = merge(&[&s1, &s2], &inside);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("lies inside the shard directory"),
        "{}",
        describe(&o)
    );
    assert!(!inside.exists());
    let o = merge(&[&s1, &s2], &cwd.join("merged"));
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}
