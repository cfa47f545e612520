//! The nextest harness (`crates/harness`, `benchmarks/suites.rs`) and the snapshot files
//! (issue 6 items 3–4): a deliberately tightened gate fails with a message naming figure,
//! value and bound; suites that need a real engine are listed as ignored; the CLI's
//! `snapshot` writes the same redacted report as the harness, in insta's `.snap.new`
//! format; a changed snapshot fails under `CI=true` and writes nothing.
//!
//! Everything runs against the built-in simulator on loopback.

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;

use inferscope_bench::harness::{self, HarnessConfig};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// A one-job context suite (no fixture files) with the given `[gates]` body.
fn write_suite(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let p = dir.join(format!("{name}.toml"));
    std::fs::write(
        &p,
        format!(
            "name = \"{name}\"\nseed = 3\n{extra}\n\n[[jobs]]\nname = \"probe\"\nkind = \"context\"\nsizes = [64]\nmax_tokens = 4\n"
        ),
    )
    .unwrap();
    p
}

fn cfg(suites: &Path) -> HarnessConfig {
    HarnessConfig {
        suites_dir: suites.to_path_buf(),
        endpoint: None,
        model: None,
        snapshot_dir: None,
        snapshot_real_endpoints: false,
        out_dir: None,
    }
}

#[test]
fn tightened_ttft_gate_fails_naming_figure_value_and_bound() {
    let dir = tmp();
    let file = write_suite(dir.path(), "tight", "[gates]\nttft_ms = { p50 = 0.001 }");
    let c = cfg(dir.path());
    let run = harness::run_job(&c, &file, "tight::probe").unwrap();
    let msg = harness::failure_message(&run.report, "tight::probe").expect("the job fails");
    assert!(msg.starts_with("tight::probe failed:"), "{msg}");
    let line = msg
        .lines()
        .find(|l| l.contains("ttft_ms.p50"))
        .unwrap_or_else(|| panic!("no ttft line in {msg}"));
    // `ttft_ms.p50 = 12.345 ms > bound 0.001 ms (client timing)`
    assert!(line.contains("ttft_ms.p50 = "), "{line}");
    assert!(line.contains(" ms > bound 0.001 ms"), "{line}");
    assert!(line.contains("(client timing)"), "{line}");
    let value: f64 = line
        .split("ttft_ms.p50 = ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no value in {line}"));
    assert!(value > 0.001, "{line}");

    // Through libtest-mimic as nextest runs it: the trial fails, the loose one passes.
    write_suite(dir.path(), "loose", "[gates]\nttft_ms = { p50 = 60000.0 }");
    let trials = harness::trials(&c);
    let names: Vec<&str> = trials.iter().map(|t| t.name()).collect();
    assert_eq!(names, ["loose::probe", "tight::probe"]);
    let args = libtest_mimic::Arguments {
        test_threads: Some(1),
        quiet: true,
        ..Default::default()
    };
    let conclusion = libtest_mimic::run(&args, trials);
    assert_eq!(conclusion.num_passed, 1);
    assert_eq!(conclusion.num_failed, 1);
}

#[test]
fn real_engine_suites_are_ignored_without_an_endpoint() {
    let dir = tmp();
    let file = write_suite(
        dir.path(),
        "real",
        "engine = \"llamacpp\"\nmodel = \"tiny\"",
    );
    let c = cfg(dir.path());
    let trials = harness::trials(&c);
    assert_eq!(trials.len(), 1);
    assert!(trials[0].has_ignored_flag());
    assert!(trials.iter().all(|t| t.is_test()), "never Trial::bench");
    let err = harness::run_job(&c, &file, "real::probe").err().unwrap();
    assert!(err.contains("INFERSCOPE_ENDPOINT"), "{err}");
    // The repository's own llama-cpp suite is listed, ignored.
    let repo = harness::trials(&cfg(&Path::new(ROOT).join("suites")));
    let llama: Vec<_> = repo
        .iter()
        .filter(|t| t.name().starts_with("llama-cpp::"))
        .collect();
    assert!(!llama.is_empty());
    assert!(llama.iter().all(|t| t.has_ignored_flag()));
    assert!(
        repo.iter()
            .filter(|t| t.name().starts_with("agentic::"))
            .all(|t| !t.has_ignored_flag())
    );
}

#[test]
fn a_suite_that_does_not_load_is_a_failing_trial() {
    let dir = tmp();
    std::fs::write(dir.path().join("broken.toml"), "name = \"b\"\nsede = 1\n").unwrap();
    let trials = harness::trials(&cfg(dir.path()));
    assert_eq!(trials.len(), 1);
    assert_eq!(trials[0].name(), "broken::load");
    let conclusion = libtest_mimic::run(
        &libtest_mimic::Arguments {
            test_threads: Some(1),
            quiet: true,
            ..Default::default()
        },
        trials,
    );
    assert_eq!(conclusion.num_failed, 1);
}

fn run_repo_tour(out: &Path) {
    let status = StdCommand::new(env!("CARGO_BIN_EXE_inferscope-bench"))
        .current_dir(ROOT)
        .args([
            "run",
            "suites/agentic.toml",
            "--filter",
            "agentic::repo_tour",
            "--out",
        ])
        .arg(out)
        .env_remove("CI")
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
}

fn snapshot_cmd(run_dir: &Path, into: &Path) -> (i32, String) {
    let o = StdCommand::new(env!("CARGO_BIN_EXE_inferscope-bench"))
        .args(["snapshot"])
        .arg(run_dir)
        .arg("--into")
        .arg(into)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn cli_snapshot_matches_the_harness_snapshot_and_writes_insta_pending_files() {
    let dir = tmp();
    let run = dir.path().join("run");
    run_repo_tour(&run);
    let accepted = Path::new(ROOT).join("snapshots/agentic__repo_tour.snap");

    // 1. Against the committed snapshot (written by the harness): unchanged, exit 0.
    // This is also a determinism check: a separate run of the simulator with the same
    // seed gives the same token counts, stop reasons and verdicts.
    let same = dir.path().join("same");
    std::fs::create_dir_all(&same).unwrap();
    std::fs::copy(&accepted, same.join("agentic__repo_tour.snap")).unwrap();
    let (code, out) = snapshot_cmd(&run, &same);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("unchanged"), "{out}");
    assert!(!same.join("agentic__repo_tour.snap.new").exists());

    // 2. No accepted snapshot: a pending `.snap.new` insta can read, exit 100.
    let fresh = dir.path().join("fresh");
    let (code, out) = snapshot_cmd(&run, &fresh);
    assert_eq!(code, 100, "{out}");
    assert!(out.contains("cargo insta review"), "{out}");
    let pending = fresh.join("agentic__repo_tour.snap.new");
    let snap = insta::Snapshot::from_file(&pending).expect("insta reads the pending file");
    assert_eq!(snap.metadata().expression(), Some("body"));
    assert_eq!(snap.metadata().source(), Some("crates/harness/src/lib.rs"));
    // Stable header: the pending file is the harness's accepted file byte for byte (no
    // run id), so accepting it changes nothing.
    assert_eq!(
        std::fs::read_to_string(&pending).unwrap(),
        std::fs::read_to_string(&accepted).unwrap()
    );
    let committed = insta::Snapshot::from_file(&accepted).unwrap();
    assert_eq!(
        snap.contents().as_text().unwrap().to_string(),
        committed.contents().as_text().unwrap().to_string(),
        "the CLI and the harness write the same body"
    );
    let body = snap.contents().as_text().unwrap().to_string();
    assert!(body.contains("\"prompt_tokens\": "));
    assert!(!body.contains("_ns\""), "no raw times: {body}");
    assert!(!body.contains("127.0.0.1"), "no loopback ports: {body}");

    // 3. A changed accepted snapshot (as after a fixture change): `changed`, exit 100.
    let changed = dir.path().join("changed");
    std::fs::create_dir_all(&changed).unwrap();
    let text = std::fs::read_to_string(&accepted).unwrap().replacen(
        "\"stop_reason\": \"final_answer\"",
        "\"stop_reason\": \"max_steps\"",
        1,
    );
    std::fs::write(changed.join("agentic__repo_tour.snap"), text).unwrap();
    let (code, out) = snapshot_cmd(&run, &changed);
    assert_eq!(code, 100, "{out}");
    assert!(out.contains("changed"), "{out}");
    assert!(changed.join("agentic__repo_tour.snap.new").exists());
}

/// `snapshot RUN_DIR` after the Quickstart's two-job run finds every job
/// unchanged against the harness's snapshots: each job started with an empty prefix cache
/// on the simulator, as it does alone (before, the second job's cached tokens differed).
#[test]
fn a_multi_job_run_snapshots_like_the_harness() {
    let dir = tmp();
    let run = dir.path().join("run");
    let status = StdCommand::new(env!("CARGO_BIN_EXE_inferscope-bench"))
        .current_dir(ROOT)
        .args(["run", "suites/agentic.toml", "--out"])
        .arg(&run)
        .env_remove("CI")
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0));
    let into = dir.path().join("snaps");
    std::fs::create_dir_all(&into).unwrap();
    for name in ["agentic__lookup", "agentic__repo_tour"] {
        std::fs::copy(
            Path::new(ROOT).join(format!("snapshots/{name}.snap")),
            into.join(format!("{name}.snap")),
        )
        .unwrap();
    }
    let (code, out) = snapshot_cmd(&run, &into);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("unchanged").count(), 2, "{out}");
}

/// Child half of `changed_snapshot_fails_under_ci`: asserts the body in
/// `INFERSCOPE_TEST_SNAP_BODY` as `agentic::repo_tour` into `INFERSCOPE_TEST_SNAP_DIR`.
/// Does nothing when run on its own.
#[test]
fn child_asserts_snapshot() {
    let (Ok(dir), Ok(body)) = (
        std::env::var("INFERSCOPE_TEST_SNAP_DIR"),
        std::env::var("INFERSCOPE_TEST_SNAP_BODY"),
    ) else {
        return;
    };
    harness::assert_snapshot(Path::new(&dir), "agentic::repo_tour", &body);
}

fn child(dir: &Path, body: &str, ci: bool) -> bool {
    let mut cmd = StdCommand::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        "harness::child_asserts_snapshot",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("INFERSCOPE_TEST_SNAP_DIR", dir)
    .env("INFERSCOPE_TEST_SNAP_BODY", body)
    .env_remove("INSTA_UPDATE")
    .env_remove("INSTA_FORCE_PASS")
    .env_remove("CI");
    if ci {
        cmd.env("CI", "true");
    } else {
        cmd.env("INSTA_UPDATE", "new");
    }
    cmd.output().unwrap().status.success()
}

#[test]
fn changed_snapshot_fails_under_ci_and_writes_nothing() {
    let dir = tmp();
    let snap = dir.path().join("agentic__repo_tour.snap");
    std::fs::write(
        &snap,
        harness::snap_file_text("test", "redacted", "body", "{\n  \"a\": 1\n}"),
    )
    .unwrap();
    let pending = dir.path().join("agentic__repo_tour.snap.new");
    // Same body: passes under CI.
    assert!(child(dir.path(), "{\n  \"a\": 1\n}", true));
    // Changed body under CI=true: fails, and insta writes no pending file.
    assert!(!child(dir.path(), "{\n  \"a\": 2\n}", true));
    assert!(!pending.exists());
    assert!(std::fs::read_to_string(&snap).unwrap().contains("\"a\": 1"));
    // Outside CI (INSTA_UPDATE=new): fails too, leaving a `.snap.new` for review.
    assert!(!child(dir.path(), "{\n  \"a\": 2\n}", false));
    assert!(pending.exists());
}
