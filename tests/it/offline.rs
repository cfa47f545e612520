//! The ready suites load, and the offline step-attribution join (`trajectory --samples --steps`)
//! reproduces the run's own per-step energy attribution exactly from the artifacts.

use crate::support;

use std::process::Command;

use serde_json::Value;
use support::{bin_path, repo};

#[test]
fn every_ready_suite_loads_and_resolves() {
    let dir = repo().join("suites");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        let s = inferscope_bench::suite::load(&p).unwrap_or_else(|e| panic!("{e}"));
        assert!(!s.jobs.is_empty(), "{}", p.display());
        let r = inferscope_bench::suite::resolve(&s, &Default::default());
        assert_eq!(r.jobs.len(), s.jobs.len());
        n += 1;
    }
    assert!(n >= 4, "expected the ready suites, found {n}");
}

fn step_energies(v: &Value) -> Vec<(String, u64, Option<u64>)> {
    let mut out = Vec::new();
    for t in v["trajectories"].as_array().unwrap() {
        let id = t["trajectory"].as_str().unwrap_or("").to_string();
        for s in t["steps"].as_array().into_iter().flatten() {
            out.push((
                id.clone(),
                s["step_id"].as_u64().unwrap(),
                s["energy_mj"].as_u64(),
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn offline_join_reproduces_the_runs_step_energy() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let st = Command::new(bin_path())
        .args([
            "run",
            "suites/agentic.toml",
            "--filter",
            "repo_tour",
            "--out",
        ])
        .arg(&run)
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(
        st.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&st.stdout)
    );
    let report = support::report(&run);
    // The run's steps carry their energy figure inside each trajectory.
    let mut online: Vec<(String, u64, Option<u64>)> = report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| j["trajectories"].as_array().unwrap())
        .flat_map(|t| {
            let id = t["id"].as_str().unwrap().to_string();
            t["steps"].as_array().unwrap().iter().map(move |s| {
                (
                    id.clone(),
                    s["step_id"].as_u64().unwrap(),
                    s["energy"]["value"].as_u64(),
                )
            })
        })
        .collect();
    online.sort();
    assert!(
        online.iter().any(|(_, _, e)| e.is_some()),
        "the simulated power source attributes energy to some step"
    );

    let out = tmp.path().join("offline.json");
    let st = Command::new(bin_path())
        .arg("trajectory")
        .arg("--samples")
        .arg(run.join("samples"))
        .arg("--steps")
        .arg(run.join("steps.jsonl"))
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        st.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let offline: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(step_energies(&offline), online);
    // The offline join covers the whole saved window: its whole-run energy is the run's
    // (report.json `attribution.whole_run_energy_mj`), and each trajectory's unattributed
    // energy is that minus its steps. The job's own join, made when the job ended, covers
    // the run up to that instant and reconciles its steps with that window.
    let whole = &report["attribution"]["whole_run_energy_mj"];
    assert!(whole.is_u64(), "{}", report["attribution"]);
    for (a, b) in offline["trajectories"]
        .as_array()
        .unwrap()
        .iter()
        .zip(report["jobs"][0]["trajectories"].as_array().unwrap())
    {
        let b = &b["attribution"];
        assert_eq!(&a["whole_run_energy_mj"], whole);
        assert_eq!(a["total_energy_mj"], b["total_energy_mj"]);
        assert_eq!(
            a["unattributed_energy_mj"].as_u64().unwrap(),
            whole.as_u64().unwrap() - b["total_energy_mj"].as_u64().unwrap()
        );
        assert_eq!(
            b["whole_run_energy_mj"].as_u64().unwrap(),
            b["total_energy_mj"].as_u64().unwrap() + b["unattributed_energy_mj"].as_u64().unwrap()
        );
        assert!(b["whole_run_energy_mj"].as_u64() <= whole.as_u64());
    }
}

#[test]
fn offline_join_rejects_a_float_timestamp_with_its_line() {
    let tmp = tempfile::tempdir().unwrap();
    let steps = tmp.path().join("steps.jsonl");
    std::fs::write(
        &steps,
        "{\"step_id\":1,\"kind\":\"llm_call\",\"t_start_unix_ns\":1.7e18,\"t_end_unix_ns\":1700000000000000001}\n",
    )
    .unwrap();
    let samples = tmp.path().join("samples");
    std::fs::create_dir_all(&samples).unwrap();
    let st = Command::new(bin_path())
        .arg("trajectory")
        .arg("--samples")
        .arg(&samples)
        .arg("--steps")
        .arg(&steps)
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(2));
    let err = String::from_utf8_lossy(&st.stderr);
    assert!(err.contains("line 1"), "{err}");
}
