// Baselines: `baseline save`, `compare`, `run --baseline` and the
// `[gates] regression_pct` gate, with the binary against in-process simulators
// (`sim::spawn` on 127.0.0.1:0): an unchanged rerun on a fresh simulator is within noise,
// a simulator with a larger TTFT is flagged regressed and fails the gate (exit 100).

use crate::support;

use std::path::Path;
use std::process::Output;

use inferscope_bench::sim::{SimConfig, SimHandle, spawn};
use serde_json::Value;
use support::{report, run_async};

const SUITE: &str = r#"name = "cmp"
seed = 3
model = "inferscope-sim"

[gates]
max_error_rate = 0.0
regression_pct = 50.0

[[jobs]]
name = "ctx"
kind = "context"
sizes = [32]
repeat = 24
max_tokens = 6
"#;

/// A fresh simulator whose latencies dwarf a loaded machine's timer slack (ITL 20 ms).
async fn sim(ttft_ms: u64) -> SimHandle {
    spawn(
        SimConfig {
            ttft_base_ms: ttft_ms,
            itl_ms: 20,
            itl_jitter_ms: 2,
            ..SimConfig::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `run suite.toml` in `cwd` (baselines live under the current directory) against `sim`.
async fn run_against(cwd: &Path, sim: &SimHandle, out: &str, baseline: Option<&str>) -> Output {
    let url = sim.base_url();
    let mut args = vec!["run", "suite.toml", "--endpoint", &url, "--out", out];
    if let Some(b) = baseline {
        args.extend(["--baseline", b]);
    }
    run_async(cwd, &args).await
}

/// The verdict word of figure `name` in a comparison table.
fn verdict_of<'a>(table: &'a str, job: &str, name: &str) -> &'a str {
    let block = table
        .split("baseline main")
        .find(|b| b.contains(job))
        .unwrap_or_else(|| panic!("no table for {job}:\n{table}"));
    let line = block
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no row {name}:\n{block}"));
    if line.ends_with("within noise") {
        "within noise"
    } else {
        line.split_whitespace().last().unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_flags_a_slowed_simulator_and_the_regression_gate_fails_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    std::fs::write(cwd.join("suite.toml"), SUITE).unwrap();

    // 1. The run a baseline is saved from: the regression gate has nothing to compare with
    //    and is skipped, not passed.
    let a = sim(40).await;
    let o = run_against(cwd, &a, "r1", None).await;
    a.shutdown().await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = &report(&cwd.join("r1"))["jobs"][0]["verdicts"];
    let reg = v
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["gate"] == "regression_pct")
        .unwrap();
    assert_eq!(reg["outcome"], "skipped", "{reg}");
    let o = run_async(cwd, &["baseline", "save", "r1", "--name", "main"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(cwd.join(".inferscope/baselines/main.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(saved["schema"], "inferscope-bench.baseline/v1");
    let f = &saved["jobs"][0]["figures"]["ttft_ms.p50"];
    assert_eq!(f["n"], 24);
    assert!(f["ci_low"].as_f64().unwrap() <= f["value"].as_f64().unwrap());
    assert!(f["value"].as_f64().unwrap() <= f["ci_high"].as_f64().unwrap());

    // 2. An unchanged rerun on a fresh simulator: within noise, the gate passes.
    let a2 = sim(40).await;
    let o = run_against(cwd, &a2, "r2", Some("main")).await;
    a2.shutdown().await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run_async(cwd, &["compare", "r2", "--baseline", "main"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout).to_string();
    for fig in ["ttft_ms.p50", "e2e_ms.p50", "tpot_ms.p50"] {
        assert_eq!(
            verdict_of(&table, "cmp::ctx", fig),
            "within noise",
            "{table}"
        );
    }
    assert!(
        table.contains("summary: 0 regressed"),
        "an unchanged rerun regresses nothing:\n{table}"
    );

    // 3. The simulator's TTFT flag raised: regressed, and the gate fails the run.
    let slow = sim(200).await;
    let o = run_against(cwd, &slow, "r3", Some("main")).await;
    slow.shutdown().await;
    assert_eq!(o.status.code(), Some(100), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(out.contains("FAIL"), "{out}");
    assert!(out.contains("regression_pct = "), "{out}");
    let j = &report(&cwd.join("r3"))["jobs"][0];
    let reg = j["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["gate"] == "regression_pct")
        .unwrap();
    assert_eq!(reg["outcome"], "fail", "{reg}");
    assert!(reg["value"].as_f64().unwrap() > 50.0);
    assert_eq!(j["baseline"]["baseline"], "main");
    let o = run_async(cwd, &["compare", "r3", "--baseline", "main"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let table = String::from_utf8_lossy(&o.stdout).to_string();
    assert_eq!(
        verdict_of(&table, "cmp::ctx", "ttft_ms.p50"),
        "regressed",
        "{table}"
    );
    assert_eq!(
        verdict_of(&table, "cmp::ctx", "e2e_ms.p50"),
        "regressed",
        "{table}"
    );
    let o = run_async(
        cwd,
        &[
            "compare",
            "r3",
            "--baseline",
            "main",
            "--regression-pct",
            "50",
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(100), "{}", text(&o));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn baseline_names_and_missing_baselines_are_bad_input() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    std::fs::write(cwd.join("suite.toml"), SUITE).unwrap();
    let o = run_async(cwd, &["compare", ".", "--baseline", "nope"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = run_async(cwd, &["run", "suite.toml", "--baseline", "nope"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no baseline named `nope`"),
        "{}",
        text(&o)
    );
    let o = run_async(cwd, &["baseline", "save", ".", "--name", "../x"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("invalid baseline name"), "{}", text(&o));
}

/// Two jobs, few samples (a p99 interval end too few samples can bound is `null`).
const TWO_JOBS: &str = r#"name = "cmp"
seed = 3
model = "inferscope-sim"

[[jobs]]
name = "ctx"
kind = "context"
sizes = [16]
repeat = 3
max_tokens = 3

[[jobs]]
name = "ctx2"
kind = "context"
sizes = [16]
repeat = 3
max_tokens = 3
"#;

/// Writes baseline `to` as a copy of baseline `from` with `edit` applied to its JSON.
fn edit_baseline(cwd: &Path, from: &str, to: &str, edit: impl FnOnce(&mut Value)) {
    let dir = cwd.join(".inferscope/baselines");
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(format!("{from}.json"))).unwrap())
            .unwrap();
    v["name"] = Value::String(to.into());
    edit(&mut v);
    std::fs::write(
        dir.join(format!("{to}.json")),
        serde_json::to_vec_pretty(&v).unwrap(),
    )
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resaving_renamed_jobs_and_unbounded_intervals_are_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    std::fs::write(cwd.join("suite.toml"), TWO_JOBS).unwrap();
    let a = sim(5).await;
    let o = run_against(cwd, &a, "r1", None).await;
    a.shutdown().await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let run_id = report(&cwd.join("r1"))["run_id"]
        .as_str()
        .unwrap()
        .to_string();

    // Saving a name twice replaces it, and says so on stderr.
    let o = run_async(cwd, &["baseline", "save", "r1", "--name", "good"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("replaced"),
        "{}",
        text(&o)
    );
    let o = run_async(cwd, &["baseline", "save", "r1", "--name", "good"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains(&format!(
            "replaced baseline `good` (was saved from run {run_id})"
        )),
        "{}",
        text(&o)
    );

    // An unbounded interval end prints as `—`, never `inf`.
    let o = run_async(cwd, &["compare", "r1", "--baseline", "good"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(out.contains("ttft_ms.p99"), "{out}");
    assert!(!out.contains("inf") && !out.contains("NaN"), "{out}");
    assert!(out.contains(", —]"), "{out}");
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("note:"),
        "{}",
        text(&o)
    );

    // A baseline holding one of the run's two jobs: a note lists the other, exit as before.
    edit_baseline(cwd, "good", "half", |v| {
        v["jobs"].as_array_mut().unwrap().truncate(1);
    });
    let o = run_async(cwd, &["compare", "r1", "--baseline", "half"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains("note: 1 of run") && err.contains("not in baseline `half`"),
        "{}",
        text(&o)
    );
    assert!(err.trim_end().ends_with("cmp::ctx2"), "{}", text(&o));

    // A baseline sharing no job (the suite was renamed): exit 2 naming both.
    edit_baseline(cwd, "good", "renamed", |v| {
        for j in v["jobs"].as_array_mut().unwrap() {
            let id = j["id"].as_str().unwrap().replace("cmp::", "old::");
            j["id"] = Value::String(id);
        }
    });
    let o = run_async(cwd, &["compare", "r1", "--baseline", "renamed"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr).to_string();
    assert!(
        err.contains(&format!(
            "baseline `renamed` (saved from run {run_id}) shares no job with run {run_id}"
        )),
        "{}",
        text(&o)
    );
    assert!(
        err.contains("old::ctx") && err.contains("cmp::ctx"),
        "{err}"
    );
    assert!(o.stdout.is_empty(), "no comparison printed: {}", text(&o));

    // `run --baseline` with that baseline: refused before any request, as `compare` is.
    let o = run_async(
        cwd,
        &["run", "suite.toml", "--baseline", "renamed", "--out", "r2"],
    )
    .await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--baseline renamed: the baseline"),
        "{}",
        text(&o)
    );
    assert!(!cwd.join("r2").exists(), "nothing was run");
}

/// A run whose every request failed has no figure: `baseline save` refuses it (exit 2,
/// nothing written) instead of saving an empty baseline, and `compare` of such a run with
/// a good baseline says the jobs are shared but hold no figure — not "shares no job".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_without_figures_is_neither_saved_nor_compared_as_unshared() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    std::fs::write(cwd.join("suite.toml"), SUITE).unwrap();
    let good = sim(5).await;
    let o = run_against(cwd, &good, "ok", None).await;
    good.shutdown().await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = run_async(cwd, &["baseline", "save", "ok", "--name", "good"]).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let mut cfg = SimConfig::default();
    cfg.faults.disconnect_every = 1;
    let bad = spawn(cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let o = run_against(cwd, &bad, "failed", None).await;
    bad.shutdown().await;
    assert_eq!(o.status.code(), Some(100), "{}", text(&o));

    let o = run_async(cwd, &["baseline", "save", "failed", "--name", "empty"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("has no figure to keep"), "{err}");
    assert!(err.contains("cmp::ctx fail"), "{err}");
    assert!(!cwd.join(".inferscope/baselines/empty.json").exists());

    let o = run_async(cwd, &["compare", "failed", "--baseline", "good"]).await;
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("share 1 jobs ([cmp::ctx])"), "{err}");
    assert!(!err.contains("shares no job"), "{err}");
}
