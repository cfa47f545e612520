//! Issue 15 ("Hardening: bounded, no-follow reads everywhere; a dashboard that survives
//! hostile clients and run directories; markers that lose nothing"): one regression test
//! per numbered failure, run against the binary or the library on loopback only.
//!
//! Hangs are caught by a deadline on the child process (a reader that blocks on a FIFO
//! never finishes); the deadline is a liveness guard, generous enough for a loaded CI
//! machine, not a speed assertion.

use crate::support;

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use support::{command, describe, repo, text, write};

/// Longest a command may take before it counts as hung.
const HANG: Duration = Duration::from_secs(60);

fn mkfifo(p: &Path) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {p:?}"
    );
}

fn sparse(p: &Path, len: u64) {
    std::fs::File::create(p).unwrap().set_len(len).unwrap();
}

/// The four hostile replacements of one file.
#[derive(Clone, Copy, Debug)]
enum Hostile {
    Fifo,
    DevZero,
    Sparse,
    Outside,
}

const ALL: [Hostile; 4] = [
    Hostile::Fifo,
    Hostile::DevZero,
    Hostile::Sparse,
    Hostile::Outside,
];

/// Replaces `p` by the hostile kind `h`; `outside` is a directory outside the run.
fn plant(p: &Path, h: Hostile, outside: &Path, outside_content: &[u8]) {
    let _ = std::fs::remove_file(p);
    match h {
        Hostile::Fifo => mkfifo(p),
        Hostile::DevZero => std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
        Hostile::Sparse => sparse(p, 1 << 30),
        Hostile::Outside => {
            let target = outside.join(p.file_name().unwrap());
            std::fs::write(&target, outside_content).unwrap();
            std::os::unix::fs::symlink(&target, p).unwrap();
        }
    }
}

/// Runs the binary with a hang deadline; panics when it does not finish.
fn run_bounded(cwd: &Path, args: &[&str]) -> Output {
    let mut child = command(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let o = child.wait_with_output().unwrap();
            panic!("hung: {args:?}\n{}", describe(&o));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn complete_run(dir: &Path) -> PathBuf {
    let run = dir.join("20261129T131500Z-3f9a1c");
    support::copy_dir(&repo().join("fixtures/runs/complete"), &run);
    run
}

// ------------------------------------------------------------------ 1. bounded readers

/// Item 1: every CLI reader of a run directory refuses a FIFO, a symlink to /dev/zero, a
/// sparse 1 GiB file and a symlink outside the run, with exit 2 (or the reader's own
/// integrity exit 1), never hanging or reading it.
#[test]
fn cli_readers_refuse_hostile_artifacts() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // (file in the run, commands reading it)
    let cases: Vec<(&str, Vec<Vec<&str>>)> = vec![
        (
            "report.json",
            vec![
                vec!["report", "RUN", "--format", "json"],
                vec!["report", "RUN", "--format", "markdown"],
                vec!["baseline", "save", "RUN", "--name", "b1"],
                vec!["timeline", "verify", "RUN"],
            ],
        ),
        (
            "timeline/manifest.json",
            vec![vec!["timeline", "verify", "RUN"]],
        ),
        (
            "timeline/events.jsonl",
            vec![vec!["timeline", "verify", "RUN"]],
        ),
        (
            "samples/gpu.jsonl",
            vec![vec![
                "trajectory",
                "--samples",
                "RUN",
                "--steps",
                "RUN/steps.jsonl",
            ]],
        ),
        (
            "samples/sources.json",
            vec![vec![
                "trajectory",
                "--samples",
                "RUN",
                "--steps",
                "RUN/steps.jsonl",
            ]],
        ),
        (
            "steps.jsonl",
            vec![vec![
                "trajectory",
                "--samples",
                "RUN",
                "--steps",
                "RUN/steps.jsonl",
            ]],
        ),
    ];
    let good = std::fs::read(repo().join("fixtures/runs/complete/report.json")).unwrap();
    for (file, commands) in &cases {
        for h in ALL {
            let case = tmp.path().join(format!("{}-{h:?}", file.replace('/', "_")));
            std::fs::create_dir_all(&case).unwrap();
            let run = complete_run(&case);
            plant(&run.join(file), h, &outside, &good);
            for args in commands {
                let run_s = run.to_str().unwrap().to_string();
                let args: Vec<String> = args.iter().map(|a| a.replace("RUN", &run_s)).collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let o = run_bounded(&case, &args);
                let code = o.status.code();
                assert!(
                    matches!(code, Some(1) | Some(2)),
                    "{file} as {h:?}: {args:?} must be refused\n{}",
                    describe(&o)
                );
                let (out, err) = text(&o);
                assert!(
                    out.len() + err.len() < 64 << 10,
                    "{file} {h:?}: output bounded"
                );
            }
        }
    }
}

/// Item 1: a baseline file and `compare` through the bounded reader.
#[test]
fn baseline_file_and_compare_refuse_hostile_files() {
    let tmp = tempfile::tempdir().unwrap();
    let run = complete_run(tmp.path());
    let o = run_bounded(
        tmp.path(),
        &["baseline", "save", run.to_str().unwrap(), "--name", "m"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let path = tmp.path().join(".inferscope/baselines/m.json");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let saved = std::fs::read(&path).unwrap();
    for h in ALL {
        plant(&path, h, &outside, &saved);
        let o = run_bounded(
            tmp.path(),
            &["compare", run.to_str().unwrap(), "--baseline", "m"],
        );
        assert_eq!(o.status.code(), Some(2), "{h:?}: {}", describe(&o));
        // Saving over it never reads it either.
        let o = run_bounded(
            tmp.path(),
            &["baseline", "save", run.to_str().unwrap(), "--name", "m"],
        );
        assert_eq!(o.status.code(), Some(0), "{h:?}: {}", describe(&o));
        let _ = std::fs::remove_file(&path);
    }
}

/// Item 1: suite files and `--token-file` through the bounded reader.
#[test]
fn suite_and_token_file_refuse_hostile_files() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let suite = tmp.path().join("s.toml");
    for h in ALL {
        plant(&suite, h, &outside, b"name = \"x\"\n");
        let o = run_bounded(tmp.path(), &["check", "s.toml"]);
        assert_eq!(o.status.code(), Some(2), "{h:?}: {}", describe(&o));
        let tok = tmp.path().join("tok");
        plant(&tok, h, &outside, b"0123456789abcdef-token\n");
        let o = run_bounded(
            tmp.path(),
            &[
                "serve",
                "--runs",
                ".",
                "--bind",
                "127.0.0.1:0",
                "--token-file",
                "tok",
            ],
        );
        assert_eq!(o.status.code(), Some(2), "{h:?}: {}", describe(&o));
    }
}

/// Item 1: the store and `timeline::verify` with a hostile `report.json` answer at once
/// (a FIFO used to park a blocking thread forever).
#[test]
fn verify_and_store_never_block_on_report_json() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let root = tmp.path().join("runs");
    std::fs::create_dir_all(&root).unwrap();
    let mut other =
        std::fs::read_to_string(repo().join("fixtures/runs/complete/report.json")).unwrap();
    other = other.replacen(
        "\"run_id\"",
        "\"run_id\": \"someone-else\", \"x_run_id\"",
        1,
    );
    for h in ALL {
        let run = complete_run(&root.join(format!("{h:?}")));
        plant(&run.join("report.json"), h, &outside, other.as_bytes());
        let (tx, rx) = std::sync::mpsc::channel();
        let r2 = run.clone();
        std::thread::spawn(move || {
            let v = inferscope_bench::timeline::verify(&r2);
            let dir = inferscope_bench::serve::RunDir::open_local(&r2);
            let rep = dir.report(32 << 20);
            tx.send((v.exit_code(), format!("{rep:?}"))).unwrap();
        });
        let (code, rep) = rx.recv_timeout(HANG).expect("verify or the store hung");
        // Refused: an integrity error (never a silent ok with the outside content).
        assert_eq!(code, 1, "{h:?}");
        assert!(rep.starts_with("Fault("), "{h:?}: {rep}");
    }
}

// ------------------------------------------------------------------ 3. completeness

/// Item 3: a run without `report.json` (killed between timeline and report) is
/// incomplete: `timeline verify` exits 2; `report` says so.
#[test]
fn a_run_without_its_report_is_incomplete() {
    let tmp = tempfile::tempdir().unwrap();
    let run = complete_run(tmp.path());
    std::fs::remove_file(run.join("report.json")).unwrap();
    std::fs::write(run.join(".tmpAbC123"), b"{\"half\":").unwrap();
    let o = run_bounded(tmp.path(), &["timeline", "verify", run.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o).0.contains("incomplete run"), "{}", describe(&o));
    let o = run_bounded(
        tmp.path(),
        &["report", run.to_str().unwrap(), "--format", "json"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o).1.contains("incomplete run"), "{}", describe(&o));
    // With the report in place the same directory verifies (the temp file is ignored).
    std::fs::copy(
        repo().join("fixtures/runs/complete/report.json"),
        run.join("report.json"),
    )
    .unwrap();
    let o = run_bounded(tmp.path(), &["timeline", "verify", run.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

// ------------------------------------------------------------------ 5–6. diagnostics

/// Items 5 and 6: credentials and secrets are never echoed; bad values are excerpted;
/// invalid UTF-8 and the recursion limit are located.
#[test]
fn suite_diagnostics_redact_bound_and_locate() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: Vec<(&str, Vec<u8>, &str, Vec<&str>)> = vec![
        (
            "cred.toml",
            b"name = \"x\"\nendpoint = \"http://user:hunter2pw@127.0.0.1:9/v1\"\nmodel = \"m\"\n\
              [[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [1]\n"
                .to_vec(),
            "cred.toml:2:",
            vec!["hunter2pw", "user:"],
        ),
        (
            "unk.toml",
            b"name = \"x\"\nmodel = \"m\"\nmy_thing = \"sk-SECRETVALUE123\"\n".to_vec(),
            "unk.toml:3:1",
            vec!["sk-SECRETVALUE123"],
        ),
        (
            "utf8.toml",
            b"name = \"x\"\nmodel = \"m\xff\"\n".to_vec(),
            "utf8.toml:2:11",
            vec![],
        ),
        (
            "deep.toml",
            format!("name = \"x\"\n{} = 1\n", vec!["a"; 300].join(".")).into_bytes(),
            "deep.toml:2:1",
            vec![],
        ),
    ];
    for (name, body, at, never) in cases {
        std::fs::write(tmp.path().join(name), &body).unwrap();
        let o = run_bounded(tmp.path(), &["check", name]);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
        let (out, err) = text(&o);
        let all = format!("{out}{err}");
        assert!(all.contains(at), "{name}: no {at}\n{all}");
        for s in never {
            assert!(!all.contains(s), "{name}: echoed {s}\n{all}");
        }
    }
    // A 3 MB bad value: stderr stays small and names the position.
    let big = format!(
        "name = \"x\"\nmodel = \"m\"\nengine = \"{}\"\n",
        "A".repeat(3_000_000)
    );
    write(tmp.path(), "big.toml", &big);
    let o = run_bounded(tmp.path(), &["check", "big.toml"]);
    assert_eq!(o.status.code(), Some(2));
    let (out, err) = text(&o);
    assert!(
        out.len() + err.len() < 8 << 10,
        "{} bytes",
        out.len() + err.len()
    );
    assert!(err.contains("big.toml:3:10"), "{err}");
}

/// Item 5: the `--otlp-endpoint` warning never prints URL userinfo.
#[test]
fn otlp_warning_redacts_userinfo() {
    let tmp = tempfile::tempdir().unwrap();
    let run = complete_run(tmp.path());
    // A closed loopback port: the send fails and is warned about.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://user:PW-s3cret@127.0.0.1:{port}");
    let o = run_bounded(
        tmp.path(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "otlp-json",
            "-o",
            "o.json",
            "--otlp-endpoint",
            &url,
        ],
    );
    let (out, err) = text(&o);
    assert!(err.contains("warning: otlp:"), "{}", describe(&o));
    assert!(
        !out.contains("PW-s3cret") && !err.contains("PW-s3cret"),
        "{}",
        describe(&o)
    );
    assert!(err.contains("http://***@127.0.0.1"), "{err}");
}

// ------------------------------------------------------------------ 8. markers

/// `trajectory --samples RUN --steps FILE`, bounded.
fn trajectory(cwd: &Path, run: &Path, steps: &Path) -> Output {
    run_bounded(
        cwd,
        &[
            "trajectory",
            "--samples",
            run.to_str().unwrap(),
            "--steps",
            steps.to_str().unwrap(),
        ],
    )
}

fn marker(id: u64, kind: &str, s: u64, e: u64) -> String {
    format!(
        "{{\"step_id\":{id},\"kind\":\"{kind}\",\"t_start_unix_ns\":{s},\"t_end_unix_ns\":{e}}}"
    )
}

/// Item 8: `trajectory --steps` keeps the valid records of a file whose last line was cut
/// off (and says so), and names every rejected or dropped marker by file and line.
#[test]
fn trajectory_keeps_records_before_a_truncated_tail_and_locates_drops() {
    let tmp = tempfile::tempdir().unwrap();
    let run = complete_run(tmp.path());
    let steps = std::fs::read_to_string(run.join("steps.jsonl")).unwrap();
    let n = steps.lines().count();
    assert!(n >= 2);
    let mut cut = steps.clone();
    cut.push_str("{\"step_id\":99,\"kind\":\"llm_c");
    let f = write(tmp.path(), "cut.jsonl", &cut);
    let o = trajectory(tmp.path(), &run, &f);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(
        err.contains(&format!("cut.jsonl:{}: truncated last line", n + 1)),
        "{err}"
    );
    assert!(!out.contains("no_valid_steps"), "{out}");

    // A reversed interval is dropped and named by its line.
    let first = steps.lines().next().unwrap();
    let v: serde_json::Value = serde_json::from_str(first).unwrap();
    let s = v["t_start_unix_ns"].as_u64().unwrap();
    let rev = format!("{steps}{}\n", marker(77, "tool", s + 10, s + 5));
    let f = write(tmp.path(), "rev.jsonl", &rev);
    let o = trajectory(tmp.path(), &run, &f);
    let (out, _) = text(&o);
    assert!(
        out.contains(&format!(
            "rev.jsonl:{}: step 77 dropped from attribution (ends_before_start)",
            n + 1
        )),
        "{}",
        describe(&o)
    );

    // A bad line in the middle is bad input, named by its line.
    let mut lines: Vec<&str> = steps.lines().collect();
    lines.insert(1, "{\"step_id\": 1.5}");
    let f = write(tmp.path(), "bad.jsonl", &(lines.join("\n") + "\n"));
    let o = trajectory(tmp.path(), &run, &f);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        text(&o).1.contains("bad.jsonl:2: rejected step marker"),
        "{}",
        describe(&o)
    );
}

/// Item 8: an SWE harness killed mid-write leaves a half line: every record before it is
/// kept as a step, the file is flagged `truncated_tail` (report.json and console), and a
/// marker that starts before the run's anchor keeps its real time and is flagged.
#[test]
fn swe_markers_survive_a_truncated_tail_and_keep_pre_anchor_times() {
    let tmp = tempfile::tempdir().unwrap();
    let script = r#"
import os, time
p = os.environ["INFERSCOPE_STEPS_FILE"]
now = time.time_ns()
with open(p, "w") as f:
    f.write('{"step_id":1,"kind":"tool","t_start_unix_ns":%d,"t_end_unix_ns":%d}\n' % (now - 10_000_000_000, now - 5_000_000))
    f.write('{"step_id":2,"kind":"tool","t_start_unix_ns":%d,"t_end_unix_ns":%d}\n' % (now - 4_000_000, now - 2_000_000))
    f.write('{"step_id":3,"kind":"llm_c')
print("done")
"#;
    write(tmp.path(), "h.py", script);
    write(
        tmp.path(),
        "s.toml",
        "name = \"w\"\n[[jobs]]\nname = \"h\"\nkind = \"swe\"\ncommand = [\"python3\", \"h.py\"]\ntimeout_s = 30.0\n",
    );
    let out = tmp.path().join("run");
    let o = run_bounded(
        tmp.path(),
        &["run", "s.toml", "--out", out.to_str().unwrap()],
    );
    let (stdout, _) = text(&o);
    assert!(stdout.contains("truncated_tail"), "{}", describe(&o));
    let r = support::report(&out);
    let j = support::job(&r, "w::h");
    let sf = &j["harness"]["steps_file"];
    assert_eq!(sf["truncated_tail"], true, "{sf}");
    assert_eq!(sf["truncated_line"], 3, "{sf}");
    assert_eq!(sf["markers"], 2, "{sf}");
    let steps = j["trajectories"][0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{j}");
    // The first marker started ~10 s before the anchor: its real duration is kept.
    let before = steps[0]["start_before_anchor_ns"]
        .as_u64()
        .expect("flagged");
    assert!(before > 5_000_000_000, "{before}");
    assert!(
        steps[0]["duration_ms"].as_f64().unwrap() > 9_000.0,
        "{}",
        steps[0]
    );
    assert_eq!(
        sf["before_anchor_steps"].as_array().unwrap().len(),
        1,
        "{sf}"
    );
    assert!(steps[1]["start_before_anchor_ns"].is_null());
}

/// An SWE step marker wholly before the run's anchor keeps its real end
/// (its duration is its own 212 ns, never "start to anchor", which was 70,401 s in the
/// field), in report.json and steps.jsonl; the harness's step ids (3, 4) are kept beside
/// the run-unique ones.
#[test]
fn swe_marker_wholly_before_the_anchor_keeps_its_duration_and_harness_id() {
    let tmp = tempfile::tempdir().unwrap();
    let script = r#"
import os, time
p = os.environ["INFERSCOPE_STEPS_FILE"]
old = time.time_ns() - 70_401_882_439_300
with open(p, "w") as f:
    f.write('{"step_id":3,"kind":"tool","t_start_unix_ns":%d,"t_end_unix_ns":%d}\n' % (old, old + 212))
    f.write('{"step_id":4,"kind":"tool","t_start_unix_ns":%d,"t_end_unix_ns":%d}\n' % (old + 1000, old + 3000))
print("done")
"#;
    write(tmp.path(), "h.py", script);
    write(
        tmp.path(),
        "s.toml",
        "name = \"w\"\n[[jobs]]\nname = \"h\"\nkind = \"swe\"\ncommand = [\"python3\", \"h.py\"]\ntimeout_s = 30.0\n",
    );
    let out = tmp.path().join("run");
    let o = run_bounded(
        tmp.path(),
        &["run", "s.toml", "--out", out.to_str().unwrap()],
    );
    let (stdout, _) = text(&o);
    assert!(!stdout.contains("70401882"), "{}", describe(&o));
    let r = support::report(&out);
    let anchor = r["reference_instant_unix_ns"].as_u64().unwrap();
    let j = support::job(&r, "w::h");
    let steps = j["trajectories"][0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{j}");
    assert_eq!(
        steps[0]["duration_ms"].as_f64().unwrap(),
        0.000212,
        "{}",
        steps[0]
    );
    assert_eq!(
        steps[1]["duration_ms"].as_f64().unwrap(),
        0.002,
        "{}",
        steps[1]
    );
    let ids: Vec<u64> = steps
        .iter()
        .map(|s| s["harness_step_id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, vec![3, 4]);
    let sb = steps[0]["start_before_anchor_ns"].as_u64().unwrap();
    let eb = steps[0]["end_before_anchor_ns"].as_u64().unwrap();
    assert_eq!(sb - eb, 212);
    // steps.jsonl: the markers keep their real (pre-anchor) start and end.
    let markers = std::fs::read_to_string(out.join("steps.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(markers.lines().next().unwrap()).unwrap();
    let (s, e) = (
        first["t_start_unix_ns"].as_u64().unwrap(),
        first["t_end_unix_ns"].as_u64().unwrap(),
    );
    assert_eq!(e - s, 212, "{first}");
    assert!(e < anchor, "{first}");
}
