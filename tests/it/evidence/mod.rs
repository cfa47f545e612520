//! Evidence from other tools as input: a real Prometheus server as a metrics
//! source, the inferscope report as offline join input, GPU selection and MIG, and the
//! documented samples format written by hand.
mod gpu;
mod inferscope;
mod prometheus;
mod samples_doc;
mod suite_keys;

use std::path::{Path, PathBuf};
use std::process::Output;

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_inferscope-bench")
}

/// Runs the binary; returns its output.
pub fn run(args: &[&str]) -> Output {
    std::process::Command::new(bin())
        .args(args)
        .output()
        .expect("run inferscope-bench")
}

pub fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `trajectory SOURCE… --steps STEPS --out OUT` → the output JSON (panics unless exit 0).
pub fn offline_join(source: &[&str], steps: &Path, dir: &Path) -> (serde_json::Value, String) {
    let out = dir.join("join.json");
    let mut args = vec!["trajectory"];
    args.extend_from_slice(source);
    let steps_s = steps.to_str().unwrap().to_string();
    let out_s = out.to_str().unwrap().to_string();
    args.extend_from_slice(&["--steps", &steps_s, "--out", &out_s]);
    let o = run(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    (v, String::from_utf8_lossy(&o.stdout).into_owned())
}

/// The steps of the first trajectory of a join's JSON.
pub fn steps_of(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v["trajectories"][0]["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no attributed steps: {v:#}"))
        .clone()
}

/// Writes an step-attribution step (docs/measurement.md) file: `(step_id, kind, t_start_unix_ns, t_end_unix_ns)` per line.
pub fn write_steps(path: &Path, steps: &[(u64, &str, u64, u64)]) {
    let text: String = steps
        .iter()
        .map(|(id, kind, start, end)| {
            format!(
                "{{\"step_id\":{id},\"kind\":\"{kind}\",\"t_start_unix_ns\":{start},\"t_end_unix_ns\":{end}}}\n"
            )
        })
        .collect();
    std::fs::write(path, text).unwrap();
}
