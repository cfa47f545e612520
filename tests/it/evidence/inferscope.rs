//! `trajectory --inferscope-report FILE --steps FILE.jsonl` on a report in the shape the
//! public inferscope project writes (`fixtures/inferscope/report.json`, built for this
//! test: anchor 1,760,000,000 s; a GPU sampled every 100 ms at 100 + 10·k W; prefix-cache
//! and phase counters every 200 ms), reproducing hand-computed per-step figures.

use serde_json::Value;

use super::{offline_join, repo, run, steps_of, text};

fn fixture(name: &str) -> std::path::PathBuf {
    repo().join("fixtures/inferscope").join(name)
}

/// The fixture report changed by `edit`, written as `dir/name`.
fn variant(dir: &std::path::Path, name: &str, edit: impl FnOnce(&mut Value)) -> String {
    let mut r: Value =
        serde_json::from_slice(&std::fs::read(fixture("report.json")).unwrap()).unwrap();
    edit(&mut r);
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(&r).unwrap()).unwrap();
    p.to_str().unwrap().to_string()
}

/// Hand computation (step-attribution corrected (docs/measurement.md) baseline: last sample at or before the window
/// start, up to the last sample at or before its end; counters at 0, 200, …, 1000 ms):
///
/// | step | window ms  | baseline→end | prompt | generated | hits | queries | energy mJ |
/// |------|-----------|--------------|--------|-----------|------|---------|-----------|
/// | 1 llm  | 50–450  | 0 → 400      | 200    | 30        | 90   | 200     | 37,500 (segments 100–400: 11.5+12.5+13.5 J) |
/// | 2 tool | 450–550 | 400 → 400    | null   | null      | null | null    | null (no segment inside) |
/// | 3 llm  | 550–950 | 400 → 800    | 200    | 20        | 160  | 200     | 52,500 (600–900: 16.5+17.5+18.5 J) |
/// | 4 tool | 950–1000| 800 → 1000   | 20     | 10        | 0    | 20      | null |
///
/// Whole run (0–1000 ms): Σ (105 + 10k)·0.1 J over k = 0..9 = 150,000 mJ; unattributed
/// 150,000 − 90,000 = 60,000 mJ.
#[test]
fn inferscope_report_reproduces_hand_computed_step_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let report = fixture("report.json");
    let (v, stdout) = offline_join(
        &["--inferscope-report", report.to_str().unwrap()],
        &fixture("steps.jsonl"),
        dir.path(),
    );
    let steps = steps_of(&v);
    let got: Vec<Vec<Value>> = steps
        .iter()
        .map(|s| {
            [
                "step_id",
                "kind",
                "prompt_tokens_delta",
                "generation_tokens_delta",
                "cache_hits_delta",
                "cache_queries_delta",
                "energy_mj",
            ]
            .iter()
            .map(|k| s[*k].clone())
            .collect()
        })
        .collect();
    let n = Value::Null;
    let want: Vec<Vec<Value>> = vec![
        vec![
            1.into(),
            "llm_call".into(),
            200.into(),
            30.into(),
            90.into(),
            200.into(),
            37_500.into(),
        ],
        vec![
            2.into(),
            "tool".into(),
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
            n.clone(),
        ],
        vec![
            3.into(),
            "llm_call".into(),
            200.into(),
            20.into(),
            160.into(),
            200.into(),
            52_500.into(),
        ],
        vec![
            4.into(),
            "tool".into(),
            20.into(),
            10.into(),
            0.into(),
            20.into(),
            n.clone(),
        ],
    ];
    assert_eq!(got, want, "{v:#}");
    // A tool step with no sample in its window is absent, never 0.
    assert!(steps[1]["prompt_tokens_delta"].is_null());
    let t = &v["trajectories"][0];
    assert_eq!(t["reference_instant_unix_ns"], 1_760_000_000_000_000_000u64);
    assert_eq!(t["whole_run_energy_mj"], 150_000);
    assert_eq!(t["unattributed_energy_mj"], 60_000);
    // inferscope's power is NVML power_usage(): a 1 s average, so short steps are flagged.
    assert_eq!(steps[0]["power_basis"], "averaged_1s");
    assert_eq!(steps[0]["low_confidence"], true);
    assert!(
        stdout.contains("kvcache_timeline (hits, queries), 6 sample(s)"),
        "{stdout}"
    );
}

/// A report written before inferscope's reports carried an anchor has none: withheld, never joined.
#[test]
fn inferscope_report_without_anchor_is_withheld() {
    let dir = tempfile::tempdir().unwrap();
    let p = variant(dir.path(), "old.json", |r| {
        r.as_object_mut()
            .unwrap()
            .remove("reference_instant_unix_ns");
    });
    let (v, stdout) = offline_join(
        &["--inferscope-report", &p],
        &fixture("steps.jsonl"),
        dir.path(),
    );
    assert_eq!(v["trajectories"][0]["status"], "withheld", "{v:#}");
    assert!(
        v["trajectories"][0]["reasons"]
            .to_string()
            .contains("anchor"),
        "{v:#}"
    );
    assert!(stdout.contains("no reference_instant_unix_ns"), "{stdout}");
}

/// Counters carry no restart signal in an inferscope report: a decrease withholds.
#[test]
fn inferscope_counter_regression_withholds() {
    let dir = tempfile::tempdir().unwrap();
    let p = variant(dir.path(), "reset.json", |r| {
        r["kvcache_timeline"]["samples"][3]["hits"] = 10.into();
    });
    let (v, _) = offline_join(
        &["--inferscope-report", &p],
        &fixture("steps.jsonl"),
        dir.path(),
    );
    assert_eq!(v["trajectories"][0]["status"], "withheld", "{v:#}");
}

/// Bad input: exit 2 with the file and the field named.
#[test]
fn inferscope_report_errors_name_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.json");
    let steps = fixture("steps.jsonl");
    for (report, want) in [
        (
            r#"{"reference_instant_unix_ns": 1, "phase_timeline": {"samples": [{"elapsed_ns": 1.5, "prompt_tokens": 1, "generation_tokens": 1}], "sample_period_ns": 1}}"#,
            "phase_timeline.samples[0].elapsed_ns must be a non-negative JSON integer",
        ),
        (r#"{"reference_instant_unix_ns": 1}"#, "no gpu_timeline"),
    ] {
        std::fs::write(&p, report).unwrap();
        let o = run(&[
            "trajectory",
            "--inferscope-report",
            p.to_str().unwrap(),
            "--steps",
            steps.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("bad.json") && err.contains(want), "{err}");
    }
}

/// A report of a TP run on a 4-GPU host whose devices 2 and 3 idled at
/// 50 W. Without a filter every device is summed and a note says so (step 1: 37.5 J +
/// 2 × 15 J); `--gpu-devices 0` keeps the run's own device (37.5 J, whole run 150 J, as
/// the one-device fixture), and a device the report lacks is bad input naming it.
#[test]
fn inferscope_report_gpu_devices_keeps_only_the_runs_devices() {
    let dir = tempfile::tempdir().unwrap();
    let p = variant(dir.path(), "tp.json", |r| {
        let samples = r["gpu_timeline"]["samples"].as_array_mut().unwrap();
        let idle: Vec<Value> = samples
            .iter()
            .flat_map(|s| {
                [2u64, 3].map(|d| {
                    let mut x = s.clone();
                    x["device_index"] = d.into();
                    x["power_draw_milliwatts"] = 50_000.into();
                    x
                })
            })
            .collect();
        samples.extend(idle);
    });
    let steps = fixture("steps.jsonl");
    let (all, out) = offline_join(&["--inferscope-report", &p], &steps, dir.path());
    assert_eq!(steps_of(&all)[0]["energy_mj"], 67_500, "{all:#}");
    assert_eq!(all["trajectories"][0]["whole_run_energy_mj"], 250_000);
    assert!(
        out.contains("power: summed over every device of gpu_timeline (0, 2, 3)"),
        "{out}"
    );
    let (own, out) = offline_join(
        &["--inferscope-report", &p, "--gpu-devices", "0"],
        &steps,
        dir.path(),
    );
    assert_eq!(steps_of(&own)[0]["energy_mj"], 37_500, "{own:#}");
    assert_eq!(own["trajectories"][0]["whole_run_energy_mj"], 150_000);
    assert!(
        out.contains("power: devices 0 kept (--gpu-devices); 2, 3 left out"),
        "{out}"
    );
    let o = run(&[
        "trajectory",
        "--inferscope-report",
        &p,
        "--gpu-devices",
        "0,5",
        "--steps",
        steps.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("--gpu-devices 5: gpu_timeline has no sample of device_index 5"),
        "{}",
        text(&o)
    );
}
