//! What runs without a GPU: `scripts/check_gpu_run.py` (the figures of BENCHMARKS
//! "Real GPU" from what `scripts/gpu-check.sh` brings back) against the SYNTHETIC run in
//! `fixtures/gpu-check/synthetic-nvml-run` (hand-computed figures; not measured on any GPU)
//! and against a fresh run of `scripts/gpu-check.toml` on the simulator; the self-tests of the
//! server and the report checkers; the script's own argument checks.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::support;

fn synthetic() -> PathBuf {
    support::repo().join("fixtures/gpu-check/synthetic-nvml-run")
}

fn python(args: &[&str]) -> Output {
    Command::new("python3")
        .current_dir(support::repo())
        .args(args)
        .output()
        .expect("python3 runs (the scripts need only its standard library)")
}

/// Runs the checker on `dir` with `extra` arguments; returns (exit code, stdout + stderr,
/// figures.json when written).
fn check(dir: &Path, extra: &[&str]) -> (i32, String, Option<Value>) {
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("figures.json");
    let mut args = vec![
        "scripts/check_gpu_run.py",
        dir.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let o = python(&args);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let fig = std::fs::read_to_string(&json)
        .ok()
        .map(|s| serde_json::from_str(&s).unwrap());
    (o.status.code().unwrap_or(-1), text, fig)
}

fn copy_synthetic() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    support::copy_dir(&synthetic(), &dir);
    (tmp, dir)
}

fn edit_json(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

/// The figures on the synthetic run equal the ones computed by hand in
/// fixtures/gpu-check/make_synthetic.py's docstring: 400 W at 200–500 and 800–950 ms, 100 W
/// otherwise, one sample (610 ms) missing, a counter running 2 % fast.
#[test]
fn synthetic_run_gives_the_hand_computed_figures() {
    let (rc, text, fig) = check(&synthetic(), &["--expect-gpu"]);
    assert_eq!(rc, 0, "{text}");
    let fig = fig.expect("figures.json");
    let dev = &fig["nvml"]["devices"][0];
    assert_eq!(dev["kind"], "nvml");
    assert_eq!(dev["name"], "SYNTHETIC (not a real GPU)");
    assert_eq!(dev["mig"]["enabled"], false);
    assert_eq!(dev["readings"]["power_mw"], 100);
    assert_eq!(dev["readings"]["utilization_gpu_pct"], 0);
    assert_eq!(dev["unsupported"]["utilization"], "NotSupported");
    let p = &fig["period"][0];
    assert_eq!(p["asked_ns"], 10_000_000);
    assert_eq!(p["median_ns"], 10_000_000);
    assert_eq!(p["max_ns"], 20_000_000, "the missing 610 ms sample");
    assert_eq!(p["gaps"], 99);
    // Trapezoid: 180 J at 400 W + 4 × 2.5 J of edges + 510 ms at 100 W = 241 J; the counter
    // 1.02 × that.
    let c = &fig["counter_vs_trapezoid"][0];
    assert_eq!(c["trapezoid_mj"], 241_000);
    assert_eq!(c["counter_mj"], 245_820);
    assert_eq!(c["disagreement_pct"], -1.961);
    assert_eq!(c["basis"], "measured");
    assert_eq!(fig["idle_power"]["mw"], 100_000);
    let k = &fig["llm_vs_tool"]["kinds"];
    assert_eq!(k["llm_call"]["energy_mj"], 180_000);
    assert_eq!(k["llm_call"]["mean_power_w"], 400.0);
    assert_eq!(k["tool"]["energy_mj"], 28_000);
    // The tool step: 290 ms at 100 W would be 29 J; the segments fully inside cover 280 ms.
    assert_eq!(fig["llm_vs_tool"]["tool_steps"][0]["ratio"], 0.9655);
    let r = &fig["reconciliation"];
    assert_eq!(r["exact"], true);
    assert_eq!(r["steps_checked"], 3);
    assert_eq!(r["device_windows_checked"], 1);
    assert_eq!(fig["failures"], Value::Array(vec![]));
}

/// A step energy, an unattributed figure or a whole-run figure that differs by 1 mJ from
/// the samples fails, naming what differs.
#[test]
fn one_millijoule_off_fails_the_reconciliation() {
    let (_tmp, dir) = copy_synthetic();
    let report = dir.join("report.json");
    edit_json(&report, |v| {
        v["jobs"][0]["trajectories"][0]["steps"][1]["energy"]["value"] = 28_001.into();
    });
    let (rc, text, _) = check(&dir, &[]);
    assert_eq!(rc, 1, "{text}");
    assert!(
        text.contains("step 2: energy 28001 mJ in the report, 28000 recomputed"),
        "{text}"
    );

    let (_tmp, dir) = copy_synthetic();
    edit_json(&dir.join("report.json"), |v| {
        let d = &mut v["jobs"][0]["trajectories"][0]["attribution"]["devices"][0];
        d["unattributed_energy_mj"] = 32_999.into();
    });
    let (rc, text, _) = check(&dir, &[]);
    assert_eq!(rc, 1, "{text}");
    assert!(
        text.contains("steps 208000 + unattributed 32999 != whole run 241000"),
        "{text}"
    );

    let (_tmp, dir) = copy_synthetic();
    edit_json(&dir.join("report.json"), |v| {
        let d = &mut v["jobs"][0]["trajectories"][0]["attribution"]["devices"][0];
        d["whole_run_energy_mj"] = 241_001.into();
        d["unattributed_energy_mj"] = 33_001.into();
    });
    let (rc, text, _) = check(&dir, &[]);
    assert_eq!(rc, 1, "{text}");
    assert!(
        text.contains("whole run 241001 mJ in the report, 241000 recomputed"),
        "{text}"
    );
}

/// `--expect-gpu` fails a run without an NVML device (the simulator's probe) and a counter
/// that disagrees with the trapezoid beyond the bound.
#[test]
fn expect_gpu_needs_nvml_readings_and_agreement() {
    let complete = support::repo().join("fixtures/runs/complete");
    let (rc, text, _) = check(&complete, &[]);
    assert_eq!(rc, 0, "{text}");
    let (rc, text, _) = check(&complete, &["--expect-gpu"]);
    assert_eq!(rc, 1, "{text}");
    assert!(
        text.contains("no NVML device with power readings"),
        "{text}"
    );
    let (rc, text, _) = check(
        &synthetic(),
        &["--expect-gpu", "--max-disagreement-pct", "1.5"],
    );
    assert_eq!(rc, 1, "{text}");
    assert!(text.contains("disagree by -1.961 %"), "{text}");
}

/// Bad input is exit 2 with the file, line and field named; a symbolic link is not followed.
#[test]
fn bad_input_is_named_and_links_are_not_followed() {
    let (_tmp, dir) = copy_synthetic();
    let gpu = dir.join("samples/gpu.jsonl");
    let text = std::fs::read_to_string(&gpu).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[2] = lines[2].replace("\"power_mw\":100000", "\"power_mw\":\"x\"");
    std::fs::write(&gpu, lines.join("\n")).unwrap();
    let (rc, out, _) = check(&dir, &[]);
    assert_eq!(rc, 2, "{out}");
    assert!(out.contains("gpu.jsonl:3: field power_mw"), "{out}");

    let (_tmp, dir) = copy_synthetic();
    let report = dir.join("report.json");
    let elsewhere = dir.join("elsewhere.json");
    std::fs::rename(&report, &elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &report).unwrap();
    let (rc, out, _) = check(&dir, &[]);
    assert_eq!(rc, 2, "{out}");
    assert!(out.contains("report.json"), "{out}");
}

/// The product's own output: `scripts/gpu-check.toml`'s scripted job on the simulator (its
/// power model stands in for NVML). Every step's energy and every whole-run figure is
/// recomputed from samples/gpu.jsonl and must equal the report's exactly.
#[test]
fn a_simulated_run_of_the_gpu_check_suite_reconciles_from_its_samples() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = support::run(
        &support::repo(),
        &[
            "run",
            "scripts/gpu-check.toml",
            "--filter",
            "steps",
            "--model",
            "inferscope-sim",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", support::describe(&o));
    let (rc, text, fig) = check(&out, &[]);
    assert_eq!(rc, 0, "{text}");
    let fig = fig.unwrap();
    let r = &fig["reconciliation"];
    assert_eq!(r["exact"], true, "{text}");
    // Two trajectories of 4 LLM calls and 3 tool steps.
    assert_eq!(r["steps_checked"], 14, "{text}");
    assert_eq!(fig["counter_vs_trapezoid"][0]["basis"], "simulated");
    // The simulator's probe is not NVML: under --expect-gpu the run does not pass.
    let (rc, text, _) = check(&out, &["--expect-gpu"]);
    assert_eq!(rc, 1, "{text}");
}

/// The pure parts of the server and the report checkers check themselves (no torch).
#[test]
fn server_and_report_checkers_self_tests_pass() {
    for script in [
        "scripts/gpu_server.py",
        "scripts/check_llama_report.py",
        "scripts/check_smollm2_report.py",
    ] {
        let o = python(&[script, "--self-test"]);
        assert!(
            o.status.success(),
            "{script}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// The script refuses to start without a runnable binary, before it starts anything.
#[test]
fn gpu_check_script_names_a_missing_binary() {
    for args in [vec![], vec!["target/no-such-binary"]] {
        let o = Command::new("bash")
            .current_dir(support::repo())
            .arg("scripts/gpu-check.sh")
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("usage") || err.contains("no-such-binary"),
            "{args:?}: {err}"
        );
    }
}
