//! The command line as a user meets it (issue 2 "Done when"): the built
//! binary run in a temporary working directory against the built-in simulator or a
//! loopback listener the test starts. Exit codes 0 / 100 / 2 (and 1 for `timeline
//! verify`), the did-you-mean message, "nothing is sent" for bad input and `--dry-run`,
//! `--out DIR`, the nextest-style lines, `check`, `list`, `report`, `--junit`,
//! `--message-format json`, and the ready suites.

use crate::support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Tripwire, describe, files_under, report, run, text, tree, write};

/// A one-request suite on the built-in simulator (fast), with an optional `[gates]` body.
fn quick_suite(dir: &Path, gates: &str) -> String {
    let body = format!(
        "name = \"quick\"\n\
         [gates]\n{gates}\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\nmax_tokens = 4\n"
    );
    write(dir, "quick.toml", &body).display().to_string()
}

fn suite_path(name: &str) -> String {
    support::repo()
        .join("suites")
        .join(name)
        .display()
        .to_string()
}

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or("")
}

/// The suite typo of field case C31 (`max_stpes`), on line 8, column 1.
const TYPO_SUITE: &str = "name = \"typo\"\n\
    \n\
    [[jobs]]\n\
    name = \"a\"\n\
    kind = \"agentic\"\n\
    mode = \"model\"\n\
    task = \"hi\"\n\
    max_stpes = 3\n";

#[test]
fn agentic_suite_on_the_simulator_passes_and_writes_exactly_into_out() {
    let cwd = tempfile::tempdir().unwrap();
    let out = cwd.path().join("out");
    let o = run(
        cwd.path(),
        &[
            "run",
            &suite_path("agentic.toml"),
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let (stdout, _) = text(&o);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    // nextest-style lines: one per job, the summary, the plain line, the run directory.
    assert!(
        stdout
            .lines()
            .next()
            .unwrap()
            .contains("Starting 2 jobs across 1 suite (endpoint: simulated"),
        "{stdout}"
    );
    for id in ["agentic::lookup", "agentic::repo_tour"] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with("PASS [") && l.ends_with(id)),
            "no PASS line for {id}:\n{stdout}"
        );
    }
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("Summary [")
                && l.ends_with("2 jobs run: 2 passed, 0 failed"))
    );
    assert!(
        stdout.lines().any(|l| l == "2 passed, 0 failed"),
        "the plain line is alone on its line:\n{stdout}"
    );
    assert_eq!(
        last_line(&stdout),
        format!("run directory: {}", out.display())
    );

    // Exactly into DIR: nothing else appeared in the working directory.
    let files = tree(cwd.path());
    assert!(
        files.iter().all(|f| f.starts_with("out/")),
        "files outside --out: {files:?}"
    );
    for f in [
        "out/report.json",
        "out/steps.jsonl",
        "out/timeline/events.jsonl",
        "out/timeline/manifest.json",
    ] {
        assert!(files.iter().any(|x| x == f), "missing {f} in {files:?}");
    }

    let r = report(&out);
    assert_eq!(r["schema"], "inferscope-bench.report/v3");
    assert_eq!(r["endpoint"]["simulated"], true);
    assert_eq!(r["summary"]["exit_status"], 0);
    assert_eq!(r["capture"]["quality"], "complete");
    for j in r["jobs"].as_array().unwrap() {
        assert_eq!(j["status"], "pass", "{}", j["id"]);
        assert!(j["stats"]["succeeded"].as_u64().unwrap() > 0);
    }
    // steps.jsonl: the step-marker fields (docs/artifacts.md) on every line, ids unique.
    let steps = std::fs::read_to_string(out.join("steps.jsonl")).unwrap();
    let mut ids = std::collections::BTreeSet::new();
    for l in steps.lines() {
        let v: Value = serde_json::from_str(l).unwrap();
        assert!(ids.insert(v["step_id"].as_u64().unwrap()));
        assert!(matches!(v["kind"].as_str(), Some("llm_call" | "tool")));
        assert!(v["t_end_unix_ns"].as_u64().unwrap() >= v["t_start_unix_ns"].as_u64().unwrap());
    }
    assert!(ids.len() >= 10, "{} steps", ids.len());

    let v = run(cwd.path(), &["timeline", "verify", out.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
}

#[test]
fn default_run_directory_is_under_target_and_named_last() {
    let cwd = tempfile::tempdir().unwrap();
    let suite = quick_suite(cwd.path(), "");
    let o = run(cwd.path(), &["run", &suite]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, _) = text(&o);
    let dir = last_line(&stdout)
        .strip_prefix("run directory: ")
        .unwrap_or_else(|| panic!("last line: {stdout}"));
    assert!(dir.starts_with("target/inferscope/runs/"), "{dir}");
    assert!(cwd.path().join(dir).join("report.json").is_file());
    assert!(cwd.path().join(dir).join("steps.jsonl").is_file());
    // Capture off: no timeline directory, and the reader says unavailable (exit 2).
    assert!(!cwd.path().join(dir).join("timeline").exists());
    let v = run(cwd.path(), &["timeline", "verify", dir]);
    assert_eq!(v.status.code(), Some(2), "{}", describe(&v));
    assert!(text(&v).0.contains("unavailable"));
}

#[test]
fn ready_context_suite_passes() {
    let cwd = tempfile::tempdir().unwrap();
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            &suite_path("context.toml"),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text(&o).0.lines().any(|l| l == "2 passed, 0 failed"));
    let r = report(&out);
    let sweep = support::job(&r, "context::sweep");
    assert_eq!(sweep["status"], "pass");
    // 3 sizes × 2 repeats, every one a success with server usage.
    let reqs = sweep["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 6);
    assert!(reqs.iter().all(|q| q["status"] == "success"));
    assert!(reqs.iter().all(|q| q["prompt_tokens"].is_u64()));
}

#[test]
fn ready_swe_suite_passes() {
    let cwd = tempfile::tempdir().unwrap();
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            &suite_path("swe.toml"),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text(&o).0.lines().any(|l| l == "1 passed, 0 failed"));
    let r = report(&out);
    let j = support::job(&r, "swe::fix_prefix_len");
    assert_eq!(j["harness"]["exit_code"], 0);
    assert!(
        !j["trajectories"][0]["steps"].as_array().unwrap().is_empty(),
        "the harness's step markers were joined"
    );
}

#[test]
fn a_gate_that_cannot_pass_exits_100_naming_figure_value_and_bound() {
    let cwd = tempfile::tempdir().unwrap();
    let suite = quick_suite(cwd.path(), "ttft_ms = { p99 = 0.001 }");
    let out = cwd.path().join("run");
    let junit = cwd.path().join("junit.xml");
    let o = run(
        cwd.path(),
        &[
            "run",
            &suite,
            "--out",
            out.to_str().unwrap(),
            "--junit",
            junit.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(100), "{}", describe(&o));
    let (stdout, _) = text(&o);
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("FAIL [") && l.ends_with("quick::one")),
        "{stdout}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.contains("ttft_ms.p99") && l.contains("0.001")),
        "the reason names figure and bound:\n{stdout}"
    );
    assert!(stdout.lines().any(|l| l == "0 passed, 1 failed"));
    assert_eq!(
        last_line(&stdout),
        format!("run directory: {}", out.display())
    );

    let r = report(&out);
    let j = support::job(&r, "quick::one");
    assert_eq!(j["status"], "fail");
    let v = j["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["figure"] == "ttft_ms.p99")
        .unwrap_or_else(|| panic!("no ttft verdict: {}", j["verdicts"]));
    assert_eq!(v["outcome"], "fail");
    assert!(v["value"].as_f64().unwrap() > 0.001);
    assert_eq!(r["summary"]["exit_status"], 100);

    // --junit FILE: one test case for the job, with a failure.
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.starts_with("<?xml"), "{xml}");
    assert!(xml.contains("<testcase name=\"one\""), "{xml}");
    assert!(xml.contains("<failure"), "{xml}");
}

#[test]
fn typo_in_a_suite_exits_2_with_location_and_did_you_mean() {
    let cwd = tempfile::tempdir().unwrap();
    let bad = write(cwd.path(), "bad.toml", TYPO_SUITE);
    for args in [vec!["check", "bad.toml"], vec!["run", "bad.toml"]] {
        let o = run(cwd.path(), &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", describe(&o));
        let (stdout, stderr) = text(&o);
        assert!(
            stderr.contains("bad.toml:8:1"),
            "{args:?}: file:line:col missing:\n{stderr}"
        );
        assert!(
            stderr.contains("did you mean `max_steps`?"),
            "{args:?}: hint missing:\n{stderr}"
        );
        assert!(!stdout.contains("run directory"), "{stdout}");
    }
    assert!(bad.is_file());
    assert_eq!(tree(cwd.path()), vec!["bad.toml"], "nothing was written");
}

/// A suite with three problems of three kinds (a key the table does not accept, a value
/// of the wrong type, an invalid value): `check` and `run` print all three in one pass,
/// in file order, each once (one `error:` line with file:line:col, the hint kept, one
/// source snippet; no bare diagnostic-code line), then exit 2 before any request.
#[test]
fn check_and_run_print_every_error_of_a_suite_once() {
    let wire = Tripwire::new();
    let cwd = tempfile::tempdir().unwrap();
    let body = format!(
        "name = \"three\"\nendpoint = \"{}\"\nmodel = \"m\"\nrequest_timeout_s = -1.0\n\
         \n[[jobs]]\nname = \"a\"\nkind = \"agentic\"\nmode = \"model\"\ntask = \"hi\"\n\
         max_stpes = 3\n\
         \n[[jobs]]\nname = \"b\"\nkind = \"context\"\nsizes = [16]\nmax_tokens = \"four\"\n",
        wire.base_url()
    );
    write(cwd.path(), "three.toml", &body);
    let want = [
        "error: three.toml:4:21: ",
        "error: three.toml:11:1: unknown field `max_stpes` in `jobs[0]`; did you mean `max_steps`?",
        "error: three.toml:17:14: wrong type for `jobs[1].max_tokens`",
    ];
    for cmd in ["check", "run"] {
        let o = run(cwd.path(), &[cmd, "three.toml"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", describe(&o));
        let (stdout, stderr) = text(&o);
        let errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.starts_with("error: "))
            .collect();
        assert_eq!(
            errors.len(),
            4,
            "{cmd}: three errors and the count:\n{stderr}"
        );
        for (line, want) in errors.iter().zip(want) {
            assert!(
                line.starts_with(want),
                "{cmd}: want `{want}`, got `{line}`:\n{stderr}"
            );
        }
        assert_eq!(
            errors[3], "error: 3 errors in three.toml",
            "{cmd}:\n{stderr}"
        );
        // Each error's text once: the message is not repeated in a box, and no line is a
        // bare `suite::KIND` code.
        assert_eq!(
            stderr.matches("max_stpes` in").count(),
            1,
            "{cmd}:\n{stderr}"
        );
        assert_eq!(
            stderr.matches("did you mean").count(),
            1,
            "{cmd}:\n{stderr}"
        );
        assert!(!stderr.contains("suite::"), "{cmd}:\n{stderr}");
        assert!(!stderr.contains('×'), "{cmd}:\n{stderr}");
        // One snippet per error, each framing its location.
        for at in ["three.toml:4:21]", "three.toml:11:1]", "three.toml:17:14]"] {
            assert_eq!(
                stderr.matches(at).count(),
                1,
                "{cmd}: snippet {at}:\n{stderr}"
            );
        }
        assert!(!stdout.contains("run directory"), "{stdout}");
    }
    assert_eq!(wire.accepted(), 0, "a bad suite reached the endpoint");
}

/// Every kind of bad input is refused with exit 2 before any request: the suite names a
/// loopback listener the test owns, and it never sees a connection.
#[test]
fn bad_input_exits_2_before_any_request_reaches_the_endpoint() {
    let wire = Tripwire::new();
    let cwd = tempfile::tempdir().unwrap();
    let good = format!(
        "name = \"good\"\nendpoint = \"{}\"\nmodel = \"m\"\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\n",
        wire.base_url()
    );
    write(cwd.path(), "good.toml", &good);
    write(cwd.path(), "typo.toml", TYPO_SUITE);
    let key = format!(
        "name = \"key\"\nendpoint = \"{}\"\nmodel = \"m\"\n\
         api_key_env = \"INFERSCOPE_TEST_UNSET_KEY_VAR\"\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\n",
        wire.base_url()
    );
    write(cwd.path(), "key.toml", &key);
    let gate = format!(
        "name = \"gate\"\nendpoint = \"{}\"\nmodel = \"m\"\n[gates]\nmax_error_rate = 2.5\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\n",
        wire.base_url()
    );
    write(cwd.path(), "gate.toml", &gate);
    let wrong_type = format!(
        "name = \"wt\"\nendpoint = \"{}\"\nmodel = \"m\"\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = \"big\"\n",
        wire.base_url()
    );
    write(cwd.path(), "wrong_type.toml", &wrong_type);
    // A prompt size whose filler cannot be allocated (16 GiB): refused at load, never an
    // abort at run time.
    let huge = format!(
        "name = \"huge\"\nendpoint = \"{}\"\nmodel = \"m\"\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16, 4294967295]\n",
        wire.base_url()
    );
    write(cwd.path(), "huge.toml", &huge);

    let cases: Vec<Vec<&str>> = vec![
        // A valid suite followed by an invalid one: nothing of the first is sent either.
        vec!["run", "good.toml", "typo.toml"],
        vec!["run", "key.toml"],
        vec!["run", "gate.toml"],
        vec!["run", "wrong_type.toml"],
        vec!["run", "huge.toml"],
        vec!["run", "good.toml", "--filter", "no-such-job"],
        vec!["run", "good.toml", "missing.toml"],
        vec!["run", "good.toml", "--endpoint", "ftp://127.0.0.1/v1"],
        // One suite file twice: two jobs under one id (their trajectories would merge).
        vec!["run", "good.toml", "good.toml"],
        // Output paths that cannot take the run's artifacts: refused before any request.
        vec!["run", "good.toml", "--out", "good.toml"],
        vec!["run", "good.toml", "--out", "full"],
        vec!["run", "good.toml", "--junit", "no-such-dir/j.xml"],
        vec!["run", "good.toml", "--junit", "full"],
    ];
    // A directory holding a previous run's files.
    write(&cwd.path().join("full"), "report.json", "{}");
    for args in cases {
        let o = support::command(cwd.path())
            .args(&args)
            .env_remove("INFERSCOPE_TEST_UNSET_KEY_VAR")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", describe(&o));
        assert!(!text(&o).1.is_empty(), "{args:?}: no diagnostic");
        assert_eq!(wire.accepted(), 0, "{args:?} reached the endpoint");
    }
    assert!(
        !cwd.path().join("target").exists(),
        "no run directory for bad input"
    );
}

#[test]
fn dry_run_prints_every_setting_and_sends_nothing() {
    let wire = Tripwire::new();
    let cwd = tempfile::tempdir().unwrap();
    let suite = format!(
        "name = \"dry\"\nendpoint = \"{}\"\nmodel = \"m\"\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\n",
        wire.base_url()
    );
    write(cwd.path(), "dry.toml", &suite);
    let o = run(cwd.path(), &["run", "dry.toml", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let stdout = text(&o).0;
    assert!(stdout.contains("capture_timeline: false"), "{stdout}");
    assert!(stdout.contains(&wire.base_url()), "{stdout}");
    assert!(stdout.contains("request_timeout_s:"));
    assert!(stdout.contains("job dry::one (context)"), "{stdout}");

    let o = run(
        cwd.path(),
        &[
            "run",
            "dry.toml",
            "--dry-run",
            "--capture-timeline",
            "--model",
            "other",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let stdout = text(&o).0;
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("capture_timeline: true")),
        "{stdout}"
    );
    assert!(
        stdout.lines().any(|l| l.starts_with("model: other")),
        "{stdout}"
    );
    assert!(stdout.contains("nothing was sent"));

    assert_eq!(wire.accepted(), 0, "a dry run connected to the endpoint");
    assert_eq!(tree(cwd.path()), vec!["dry.toml"], "a dry run wrote files");
}

/// `run --engine-pid` (with its descendants), `--metrics-period-ms` and `--tokenizer`
/// override every suite's telemetry and are named `flag` in the dry run; a pid of 0 and a
/// period under 10 ms are bad input.
#[test]
fn telemetry_flags_override_the_suite_and_say_so() {
    let cwd = tempfile::tempdir().unwrap();
    write(
        cwd.path(),
        "t.toml",
        "name = \"t\"\n[telemetry]\nmetrics_period_ms = 500\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\n",
    );
    let o = run(cwd.path(), &["run", "t.toml", "--dry-run"]);
    let stdout = text(&o).0;
    for line in [
        "telemetry.metrics_period_ms: 500 (suite)",
        "telemetry.engine_pid: none (default)",
        "tokenizer: bytes/4 estimate (default)",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
    let o = run(
        cwd.path(),
        &[
            "run",
            "t.toml",
            "--dry-run",
            "--engine-pid",
            "4242",
            "--metrics-period-ms",
            "50",
            "--tokenizer",
            "endpoint",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let stdout = text(&o).0;
    for line in [
        "telemetry.metrics_period_ms: 50 (flag)",
        "telemetry.engine_pid: 4242 (flag)",
        "telemetry.include_descendants: true (flag)",
        "tokenizer: engine /tokenize (flag)",
    ] {
        assert!(stdout.contains(line), "{line}\n{stdout}");
    }
    for bad in [["--engine-pid", "0"], ["--metrics-period-ms", "5"]] {
        let o = run(cwd.path(), &["run", "t.toml", "--dry-run", bad[0], bad[1]]);
        assert_eq!(o.status.code(), Some(2), "{bad:?}: {}", describe(&o));
        assert!(text(&o).1.contains(bad[0]), "{}", describe(&o));
    }
}

#[test]
fn check_and_list() {
    let cwd = tempfile::tempdir().unwrap();
    let suites: Vec<String> = ["agentic.toml", "context.toml", "swe.toml", "llama-cpp.toml"]
        .iter()
        .map(|s| suite_path(s))
        .collect();
    let mut args = vec!["check"];
    args.extend(suites.iter().map(String::as_str));
    let o = run(cwd.path(), &args);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert_eq!(
        text(&o).0.lines().filter(|l| l.starts_with("ok: ")).count(),
        4
    );

    let o = run(cwd.path(), &["check", "nope.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));

    let o = run(cwd.path(), &["list", &suites[0], &suites[1]]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let lines: Vec<String> = text(&o).0.lines().map(str::to_string).collect();
    assert_eq!(
        lines,
        vec![
            "agentic::lookup  agentic",
            "agentic::repo_tour  agentic",
            "context::sweep  context",
            "context::cold  context",
        ]
    );
    let o = run(cwd.path(), &["list", &suites[0], "--filter", "*tour"]);
    assert_eq!(text(&o).0.trim(), "agentic::repo_tour  agentic");
    let o = run(cwd.path(), &["list", "nope.toml"]);
    assert_eq!(o.status.code(), Some(2));
    // As `run`: a filter that selects nothing is bad input.
    let o = run(cwd.path(), &["list", &suites[0], "--filter", "no-such-job"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o).1.contains("no job selected"), "{}", describe(&o));
    // The same file twice, and two files with one suite name: job ids would collide.
    let o = run(cwd.path(), &["check", &suites[0], &suites[0]]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o).1.contains("given twice"), "{}", describe(&o));
    let twin = tempfile::tempdir().unwrap();
    let body = "name = \"twin\"\n[[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\n";
    let a = write(twin.path(), "a.toml", body);
    let b = write(twin.path(), "b.toml", body);
    let o = run(
        cwd.path(),
        &["list", a.to_str().unwrap(), b.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        text(&o).1.contains("suite name `twin` is also the name of"),
        "{}",
        describe(&o)
    );
    assert!(tree(cwd.path()).is_empty());
}

/// A reader that goes away (`inferscope-bench list S | head -0`) ends a print-only
/// command quietly: never the panic exit 101 of a failed `println!`.
#[test]
fn print_only_command_ends_quietly_when_stdout_closes() {
    let cwd = tempfile::tempdir().unwrap();
    let suites = [suite_path("agentic.toml"), suite_path("context.toml")];
    for args in [vec!["list"], vec!["check"], vec!["run", "--dry-run"]] {
        let mut child = support::command(cwd.path())
            .args(&args)
            .args(&suites)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        assert_ne!(o.status.code(), Some(101), "{args:?}: {}", describe(&o));
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("panicked"),
            "{args:?}: {}",
            describe(&o)
        );
    }
}

#[test]
fn timeline_verify_exit_codes_0_1_2() {
    let cwd = tempfile::tempdir().unwrap();
    let suite = quick_suite(cwd.path(), "");
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            &suite,
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let verify = |dir: &Path| run(cwd.path(), &["timeline", "verify", dir.to_str().unwrap()]);
    let v = verify(&out);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
    assert!(text(&v).0.contains("complete"));

    // The timeline next to another run's report.json: an integrity error (1).
    let report_path = out.join("report.json");
    let original = std::fs::read_to_string(&report_path).unwrap();
    let mut other: Value = serde_json::from_str(&original).unwrap();
    other["run_id"] = Value::from("20260101T000000Z-000000");
    std::fs::write(&report_path, other.to_string()).unwrap();
    let v = verify(&out);
    assert_eq!(v.status.code(), Some(1), "{}", describe(&v));
    assert!(text(&v).0.contains("run_id differs"), "{}", describe(&v));
    std::fs::write(&report_path, original).unwrap();
    assert_eq!(verify(&out).status.code(), Some(0));

    // One flipped byte in the events file: hash mismatch, an integrity error (1).
    let ev = out.join("timeline/events.jsonl");
    let mut bytes = std::fs::read(&ev).unwrap();
    let i = bytes.iter().position(|&b| b == b'1').unwrap();
    bytes[i] = b'2';
    std::fs::write(&ev, bytes).unwrap();
    let v = verify(&out);
    assert_eq!(v.status.code(), Some(1), "{}", describe(&v));

    // No manifest, or no directory at all: unavailable (2).
    std::fs::remove_file(out.join("timeline/manifest.json")).unwrap();
    let v = verify(&out);
    assert_eq!(v.status.code(), Some(2), "{}", describe(&v));
    assert!(text(&v).0.contains("unavailable"));
    let v = verify(&cwd.path().join("no-such-run"));
    assert_eq!(v.status.code(), Some(2), "{}", describe(&v));
}

#[test]
fn report_formats_of_a_run_directory() {
    let cwd = tempfile::tempdir().unwrap();
    let suite = quick_suite(cwd.path(), "");
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            &suite,
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let dir = out.to_str().unwrap();

    let md = run(cwd.path(), &["report", dir, "--format", "markdown"]);
    assert_eq!(md.status.code(), Some(0), "{}", describe(&md));
    let md = text(&md).0;
    assert!(md.contains("1 passed, 0 failed"), "{md}");
    assert!(md.contains("quick::one"), "{md}");

    let junit = run(cwd.path(), &["report", dir, "--format", "junit"]);
    assert_eq!(junit.status.code(), Some(0), "{}", describe(&junit));
    let xml = text(&junit).0;
    assert!(
        xml.starts_with("<?xml") && xml.contains("<testcase name=\"one\""),
        "{xml}"
    );
    assert!(!xml.contains("<failure"));

    let trace = cwd.path().join("trace.json");
    let p = run(
        cwd.path(),
        &[
            "report",
            dir,
            "--format",
            "perfetto",
            "-o",
            trace.to_str().unwrap(),
        ],
    );
    assert_eq!(p.status.code(), Some(0), "{}", describe(&p));
    let v: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().expect("traceEvents array");
    assert!(
        events.iter().any(|e| e["name"] == "chat_completion"),
        "a request slice is in the trace"
    );
    assert!(
        events.iter().any(|e| e["ph"] == "M"),
        "process/thread metadata"
    );

    let j = run(cwd.path(), &["report", dir, "--format", "json"]);
    assert_eq!(j.status.code(), Some(0), "{}", describe(&j));
    let v: Value = serde_json::from_str(&text(&j).0).unwrap();
    assert_eq!(v["run_id"], report(&out)["run_id"]);

    // Not a run directory: bad input.
    let bad = run(cwd.path(), &["report", cwd.path().to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2), "{}", describe(&bad));
}

#[test]
fn message_format_json_prints_only_json_lines() {
    let cwd = tempfile::tempdir().unwrap();
    let suite = quick_suite(cwd.path(), "ttft_ms = { p99 = 0.001 }");
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            &suite,
            &suite_path("context.toml"),
            "--filter",
            "*::one",
            "--message-format",
            "json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(100), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    let mut jobs = Vec::new();
    let mut summaries = Vec::new();
    for line in stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap_or_else(|e| {
            panic!("not a JSON line ({e}): {line:?}\n--- stdout ---\n{stdout}")
        });
        match v["type"].as_str() {
            Some("job") => jobs.push(v),
            Some("summary") => summaries.push(v),
            _ => {}
        }
    }
    assert_eq!(jobs.len(), 1, "{stdout}");
    assert_eq!(jobs[0]["id"], "quick::one");
    assert_eq!(jobs[0]["status"], "fail");
    assert_eq!(summaries.len(), 1, "{stdout}");
    assert_eq!(summaries[0]["exit_code"], 100);
    assert_eq!(summaries[0]["failed"], 1);
    // The run directory is still named (in a JSON value, or on stderr).
    let dir = out.display().to_string();
    assert!(
        stdout.contains(&serde_json::to_string(&dir).unwrap()) || stderr.contains(&dir),
        "run directory not named"
    );
}

/// `inferscope-bench sim` serves on the port it announces, a suite runs against it with
/// `--endpoint`, and Ctrl-C stops it with exit 0.
#[test]
fn sim_command_serves_a_run_and_stops_on_ctrl_c() {
    let cwd = tempfile::tempdir().unwrap();
    let (mut sim, url) = support::spawn_sim(cwd.path(), &["--ttft-ms", "5", "--itl-ms", "1"]);
    let suite = quick_suite(cwd.path(), "");
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            &suite,
            "--endpoint",
            &url,
            "--model",
            "inferscope-sim",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    // SAFETY: signalling the child this test spawned, by its own pid.
    unsafe { libc::kill(sim.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = sim.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "sim did not stop on SIGINT");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = report(&out);
    assert_eq!(r["endpoint"]["simulated"], false, "an external endpoint");
    assert_eq!(r["endpoint"]["base_url"], url.as_str());
    assert_eq!(status.code(), Some(0));
    if r["power"]["source"] == "nvml" {
        // A machine with NVML and a GPU: a real measurement, labelled as one.
        assert_eq!(r["power"]["reason"], Value::Null);
    } else {
        no_power_source_anywhere(&r, &text(&o).0);
    }
    // Nothing else was written.
    assert!(
        files_under(cwd.path()).iter().all(|(p, _)| {
            p.starts_with(&out) || p.file_name().is_some_and(|n| n == "quick.toml")
        })
    );
}

/// Bad `[gates]` values (suite-wide or a job's) and bad `[overhead]` budgets are refused
/// by `check`, `run` and `overhead` alike with exit 2, a `file:line:col` at the value and
/// the field's name, before any request reaches the endpoint.
#[test]
fn bad_gate_and_overhead_values_are_located_for_check_run_and_overhead() {
    let wire = Tripwire::new();
    let cwd = tempfile::tempdir().unwrap();
    let head = format!(
        "name = \"b\"\nendpoint = \"{}\"\nmodel = \"m\"\n",
        wire.base_url()
    );
    let job = "[[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [16]\n";
    // (file, body after the header, expected `file:line:col:`, expected field and place)
    let cases = [
        (
            "p99.toml",
            format!("[gates]\nttft_ms = {{ p99 = -1.0 }}\n{job}"),
            "p99.toml:5:19:",
            "`ttft_ms.p99` in the suite's `[gates]`",
        ),
        (
            "rate.toml",
            format!("[gates]\nmax_error_rate = 1.5\n{job}"),
            "rate.toml:5:18:",
            "`max_error_rate` in the suite's `[gates]`",
        ),
        (
            "inf.toml",
            format!("[gates]\nttft_ms = {{ p99 = inf }}\n{job}"),
            "inf.toml:5:19:",
            "`ttft_ms.p99`",
        ),
        (
            "empty.toml",
            format!("[gates]\nttft_ms = {{}}\n{job}"),
            "empty.toml:5:11:",
            "`ttft_ms` in the suite's `[gates]`: sets no threshold",
        ),
        (
            "job.toml",
            format!("{job}[jobs.gates]\nmin_cache_hit_rate = -0.2\n"),
            "job.toml:9:22:",
            "`min_cache_hit_rate` in the gates of job `c`",
        ),
        (
            "pairs.toml",
            format!("[overhead]\npairs = 0\n{job}"),
            "pairs.toml:5:9:",
            "`pairs` in `[overhead]`",
        ),
        (
            "budget.toml",
            format!("[overhead]\nmax_workload_effect_pct = -1.0\n{job}"),
            "budget.toml:5:27:",
            "`max_workload_effect_pct` in `[overhead]`",
        ),
    ];
    for (name, body, at, field) in &cases {
        write(cwd.path(), name, &format!("{head}{body}"));
        for cmd in ["check", "run", "overhead"] {
            let o = run(cwd.path(), &[cmd, name]);
            assert_eq!(o.status.code(), Some(2), "{cmd} {name}: {}", describe(&o));
            let (_, stderr) = text(&o);
            assert!(
                stderr.contains(&format!("error: {at} {field}")),
                "{cmd} {name}: want `{at} {field}`:\n{stderr}"
            );
            assert!(!stderr.contains("job `b::c`"), "{cmd} {name}: {stderr}");
        }
    }
    assert_eq!(wire.accepted(), 0, "a bad suite reached the endpoint");
}

/// A scripted step whose arguments match no `[[tools.responses]]` entry of a tool without
/// a default would fail on every run: `check` and `run` refuse it with exit 2 at the
/// step's arguments, before any request.
#[test]
fn a_script_step_that_no_tool_response_matches_exits_2() {
    let wire = Tripwire::new();
    let cwd = tempfile::tempdir().unwrap();
    let body = format!(
        "name = \"s\"\nendpoint = \"{}\"\nmodel = \"m\"\n\
         [[tools]]\nname = \"lookup\"\n\
         parameters = {{ type = \"object\", properties = {{ key = {{ type = \"string\" }} }} }}\n\
         [[tools.responses]]\nwhen = {{ key = \"k0\" }}\ntext = \"zero\"\n\
         [[jobs]]\nname = \"a\"\nkind = \"agentic\"\nmode = \"scripted\"\ntask = \"t\"\n\
         tools = [\"lookup\"]\n\
         [[jobs.script]]\ntool = \"lookup\"\narguments = {{ key = \"k9\" }}\n",
        wire.base_url()
    );
    write(cwd.path(), "script.toml", &body);
    for cmd in ["check", "run"] {
        let o = run(cwd.path(), &[cmd, "script.toml"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", describe(&o));
        let (_, stderr) = text(&o);
        assert!(
            stderr.contains(
                "error: script.toml:18:13: no `[[tools.responses]]` entry of tool `lookup`"
            ),
            "{cmd}:\n{stderr}"
        );
    }
    assert_eq!(wire.accepted(), 0, "a bad suite reached the endpoint");
}

/// step-attribution concurrency (docs/measurement.md) statement: a context job with `concurrency = 4` and the default
/// `count = 1` can never have had four trajectories in flight; the run says one (declared
/// is capped to the units started), labels the simulator's energy `simulated`, and never
/// claims trajectories in flight that were not. With `count = 8` on the simulator they do
/// overlap: `apportioned`, and the statement names both figures.
#[test]
fn declared_concurrency_is_capped_and_stated_honestly() {
    let cwd = tempfile::tempdir().unwrap();
    let suite = |name: &str, extra: &str| {
        let body = format!(
            "name = \"{name}\"\n[telemetry]\nsample_period_ms = 10\n\
             [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [64]\nmax_tokens = 4\n\
             concurrency = 4\n{extra}"
        );
        write(cwd.path(), &format!("{name}.toml"), &body)
            .display()
            .to_string()
    };
    let one = suite("c4", "");
    let out = cwd.path().join("run");
    let o = run(cwd.path(), &["run", &one, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let console = text(&o).0;
    assert!(!console.contains("4 trajectories"), "{console}");
    assert!(!console.contains("trajectoryies"), "{console}");
    let header = console
        .lines()
        .find(|l| l.starts_with("trajectory c4::one#0"))
        .unwrap_or_else(|| panic!("no trajectory header:\n{console}"));
    assert!(header.contains("energy basis simulated"), "{header}");
    assert!(header.ends_with(" · 1 trajectory in flight"), "{header}");
    let r = report(&out);
    let t = &r["attribution"];
    assert_eq!(t["declared_max_trajectories_in_flight"], 1, "{t}");
    assert_eq!(t["observed_max_trajectories_in_flight"], 1, "{t}");
    assert_eq!(t["concurrency"]["max_trajectories_in_flight"], 1, "{t}");
    assert_eq!(t["concurrency"]["energy_basis"], "simulated", "{t}");
    assert!(
        t["concurrency"]["statement"]
            .as_str()
            .unwrap()
            .starts_with("Controlled concurrency")
    );
    for s in r["jobs"][0]["trajectories"][0]["steps"].as_array().unwrap() {
        assert_eq!(s["energy"]["basis"], "simulated", "{s}");
    }

    // Eight units, four at a time: they overlap on the simulator.
    let eight = suite("c8", "count = 8\n");
    let out = cwd.path().join("run8");
    let o = run(cwd.path(), &["run", &eight, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = report(&out);
    let t = &r["attribution"];
    assert_eq!(t["declared_max_trajectories_in_flight"], 4, "{t}");
    let observed = t["observed_max_trajectories_in_flight"].as_u64().unwrap();
    assert_eq!(t["concurrency"]["energy_basis"], "apportioned", "{t}");
    let statement = t["concurrency"]["statement"].as_str().unwrap();
    let want = if observed == 4 {
        "4 trajectories in flight:".to_string()
    } else {
        format!("Up to 4 trajectories declared in flight ({observed} observed):")
    };
    assert!(statement.starts_with(&want), "{statement}");
}

/// `check` refuses every suite that `run` refuses as bad input: a gate bound that is not a
/// number in range is found by `check` too, with the same exit status 2.
#[test]
fn check_rejects_the_gates_that_run_rejects() {
    let cwd = tempfile::tempdir().unwrap();
    for (name, gate) in [
        ("rate.toml", "max_error_rate = 2.5"),
        ("nan.toml", "ttft_ms = { p99 = nan }"),
        ("neg.toml", "e2e_ms = { p50 = -1.0 }"),
    ] {
        let body = format!(
            "name = \"g\"\n[gates]\n{gate}\n\
             [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\n"
        );
        write(cwd.path(), name, &body);
        let r = run(cwd.path(), &["run", name, "--dry-run"]);
        assert_eq!(r.status.code(), Some(2), "run {name}: {}", describe(&r));
        let c = run(cwd.path(), &["check", name]);
        assert_eq!(
            c.status.code(),
            Some(2),
            "check accepts a suite that run refuses ({gate}): {}",
            describe(&c)
        );
        let (_, stderr) = text(&c);
        assert!(!stderr.contains("gate gate"), "{stderr}");
    }
}

/// A suite or job name too long for the timeline's ids (a 5000-character name used to
/// pass `check`, turn a `--capture-timeline` run's timeline partial and break
/// `snapshot`): `check` and `run` refuse it with exit 2, located at the name, before any
/// request.
#[test]
fn names_too_long_for_timeline_ids_exit_2_at_the_name() {
    let wire = Tripwire::new();
    let cwd = tempfile::tempdir().unwrap();
    let long = "n".repeat(5000);
    let suite_name = format!(
        "name = \"{long}\"\nendpoint = \"{}\"\nmodel = \"m\"\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\n",
        wire.base_url()
    );
    write(cwd.path(), "suite_name.toml", &suite_name);
    let job_name = format!(
        "name = \"s\"\nendpoint = \"{}\"\nmodel = \"m\"\n\
         [[jobs]]\nname = \"{long}\"\nkind = \"context\"\nsizes = [16]\n",
        wire.base_url()
    );
    write(cwd.path(), "job_name.toml", &job_name);
    for (file, at, field) in [
        ("suite_name.toml", "suite_name.toml:1:8", "suite name"),
        ("job_name.toml", "job_name.toml:5:8", "job name"),
    ] {
        for args in [vec!["check", file], vec!["run", file, "--capture-timeline"]] {
            let o = run(cwd.path(), &args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", describe(&o));
            let err = text(&o).1;
            assert!(err.contains(at), "{args:?}: no location {at}:\n{err}");
            assert!(err.contains(field), "{args:?}: no field {field}:\n{err}");
            assert!(err.contains("too long"), "{args:?}:\n{err}");
            assert_eq!(wire.accepted(), 0, "{args:?} reached the endpoint");
        }
    }
}

/// No power source (no GPU sampled, not the built-in simulator): no energy, and no basis
/// either — never `measured` (missing is null, basis `unavailable`, with the reason).
fn no_power_source_anywhere(r: &Value, console: &str) {
    let steps: Vec<&Value> = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| j["trajectories"].as_array().unwrap())
        .flat_map(|t| t["steps"].as_array().unwrap())
        .collect();
    assert!(!steps.is_empty());
    for s in steps {
        assert_eq!(s["energy"]["value"], Value::Null, "{s}");
        assert_eq!(s["energy"]["basis"], "unavailable", "{s}");
        assert!(
            s["energy"]["reason"]
                .as_str()
                .unwrap()
                .starts_with("no power source"),
            "{s}"
        );
    }
    assert_eq!(r["power"]["source"], Value::Null, "{}", r["power"]);
    let t = &r["attribution"];
    assert_eq!(t["concurrency"]["energy_basis"], Value::Null, "{t}");
    for tr in r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| j["trajectories"].as_array().unwrap())
    {
        assert_eq!(tr["attribution"]["energy_basis"], Value::Null, "{tr}");
        assert_eq!(tr["energy"]["basis"], "unavailable", "{tr}");
    }
    assert!(console.contains("energy basis —"), "{console}");
    assert!(!console.contains("energy basis measured"), "{console}");
    // `gpu = "auto"` with no NVML is no power source, and the header
    // says so with the reason, never `power nvml`.
    assert!(!console.contains("power nvml"), "{console}");
    assert!(console.contains("power unavailable ("), "{console}");
    for j in r["jobs"].as_array().unwrap() {
        let tpj = &j["energy"]["tokens_per_joule"];
        assert_eq!(tpj["value"], Value::Null, "{tpj}");
        assert_eq!(tpj["basis"], "unavailable", "{tpj}");
    }
}

/// Validates `xml` against `junit-10.xsd` with `xmlschema`; `Err(reasons)` when invalid.
fn junit_schema_check(python: &Path, xsd: &Path, xml: &Path) -> Result<(), String> {
    const VALIDATE: &str = "import sys, xmlschema\n\
        errors = list(xmlschema.XMLSchema(sys.argv[1]).iter_errors(sys.argv[2]))\n\
        [print(e.reason, e.path) for e in errors]\n\
        sys.exit(1 if errors else 0)\n";
    let (code, out, err) = support::python(python, VALIDATE, &[xsd, xml]);
    match code {
        0 => Ok(()),
        1 => Err(out),
        _ => panic!("xmlschema did not run: {err}"),
    }
}

/// The JUnit XML of every kind of outcome is valid against the Jenkins
/// `junit-10.xsd` (pytest 9.2.0's copy, validated by `xmlschema`, both installed by
/// `.ci/run`), with `timestamp` and `hostname` on each test suite; a gate failure is a
/// `<failure>`, an unreachable endpoint an `<error type="setup_error">`, a cancelled job an
/// `<error type="cancelled">`, a job not run `<skipped>`. The validator is checked too: the
/// `skipped` attribute quick-junit wrote on `<testsuites>` fails it.
#[test]
fn junit_is_valid_against_the_jenkins_schema() {
    let Some((python, xsd)) = support::py_validators("junit schema") else {
        return;
    };
    let cwd = tempfile::tempdir().unwrap();
    // A passing and a gate-failing job.
    let good = quick_suite(cwd.path(), "ttft_ms = { p99 = 10000.0 }");
    let bad = write(
        cwd.path(),
        "slow.toml",
        "name = \"slow\"\n[gates]\nttft_ms = { p99 = 0.001 }\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\nmax_tokens = 4\n",
    );
    let both = cwd.path().join("both.xml");
    let o = run(
        cwd.path(),
        &[
            "run",
            &good,
            bad.to_str().unwrap(),
            "--junit",
            both.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(100), "{}", describe(&o));
    // An endpoint nothing listens on: a setup error.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let down = write(
        cwd.path(),
        "down.toml",
        &format!(
            "name = \"down\"\nendpoint = \"http://127.0.0.1:{port}/v1\"\nmodel = \"m\"\n\
             [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\nmax_tokens = 4\n"
        ),
    );
    let unreachable = cwd.path().join("down.xml");
    let o = run(
        cwd.path(),
        &[
            "run",
            down.to_str().unwrap(),
            "--junit",
            unreachable.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(96), "{}", describe(&o));
    // A cancelled run with jobs it never started.
    let cut = cwd.path().join("cut");
    support::cancelled_with_not_run(&cut, 2);
    let cancelled = cwd.path().join("cut.xml");
    let o = run(
        cwd.path(),
        &[
            "report",
            cut.to_str().unwrap(),
            "--format",
            "junit",
            "-o",
            cancelled.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));

    for (file, wants) in [
        (&both, &[r#"<failure "#, r#"type="gate failure""#][..]),
        (&unreachable, &[r#"<error "#, r#"type="setup_error""#][..]),
        (
            &cancelled,
            &[r#"type="cancelled""#, "<skipped ", r#"skipped="2""#][..],
        ),
    ] {
        let xml = std::fs::read_to_string(file).unwrap();
        if let Err(e) = junit_schema_check(&python, &xsd, file) {
            panic!(
                "{} is not valid against junit-10.xsd:\n{e}\n{xml}",
                file.display()
            );
        }
        for w in wants {
            assert!(xml.contains(w), "{}: no {w}:\n{xml}", file.display());
        }
        assert!(xml.contains(" timestamp=\""), "{xml}");
        assert!(xml.contains(" hostname=\""), "{xml}");
        assert!(xml.contains("<properties>"), "{xml}");
    }
    let both_xml = std::fs::read_to_string(&both).unwrap();
    assert!(!both_xml.contains("<error "), "{both_xml}");
    assert!(
        !std::fs::read_to_string(&unreachable)
            .unwrap()
            .contains("<failure "),
        "an unreachable endpoint is not a failed measurement"
    );

    // Negative control: what quick-junit wrote before (`skipped` on `<testsuites>`, a
    // test case's `<properties>`) is refused by the same validator.
    let old = cwd.path().join("old.xml");
    std::fs::write(
        &old,
        both_xml
            .replacen("<testsuites ", "<testsuites skipped=\"0\" ", 1)
            .replacen(
                "<system-out>",
                "<properties><property name=\"kind\" value=\"context\"/></properties><system-out>",
                1,
            ),
    )
    .unwrap();
    let e = junit_schema_check(&python, &xsd, &old).expect_err("the old output is invalid");
    assert!(e.contains("skipped") && e.contains("properties"), "{e}");
}

/// The step numbers of every console table (`trajectory …` header, column header, rows).
fn table_step_numbers(console: &str) -> Vec<Vec<u64>> {
    let mut tables = Vec::new();
    let mut current: Option<Vec<u64>> = None;
    for line in console.lines() {
        if line.starts_with("trajectory ") {
            tables.extend(current.take());
            current = Some(Vec::new());
        } else if let Some(t) = current.as_mut() {
            let first = line.split_whitespace().next().unwrap_or("");
            if first == "step" {
                continue;
            }
            match first.parse::<u64>() {
                Ok(n) if line.starts_with(' ') => t.push(n),
                _ => tables.extend(current.take()),
            }
        }
    }
    tables.extend(current);
    tables
}

/// The mJ figure after `key` in `line` (`steps 123 mJ` → 123).
fn mj_after(line: &str, key: &str) -> u64 {
    let at = line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len();
    line[at..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// The console numbers steps 1..n within each trajectory (not run-wide), gives
/// each trajectory its own step total, and prints once per run the run's energy line (all
/// steps + unattributed = whole run when one trajectory was in flight at a time) and one
/// concurrency statement — a short line without a power source.
#[test]
fn console_numbers_steps_per_trajectory_and_states_energy_and_concurrency_once() {
    let cwd = tempfile::tempdir().unwrap();
    let o = run(cwd.path(), &["run", &suite_path("agentic.toml")]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let console = text(&o).0;
    let tables = table_step_numbers(&console);
    assert_eq!(tables.len(), 3, "{console}");
    for t in &tables {
        assert_eq!(*t, (1..=t.len() as u64).collect::<Vec<_>>(), "{console}");
    }
    let steps: u64 = console
        .lines()
        .filter(|l| l.starts_with("energy: steps "))
        .map(|l| mj_after(l, "energy: steps "))
        .sum();
    let run_line: Vec<&str> = console
        .lines()
        .filter(|l| l.starts_with("energy (run):"))
        .collect();
    assert_eq!(run_line.len(), 1, "{console}");
    let (all, unattributed, whole) = (
        mj_after(run_line[0], "all steps "),
        mj_after(run_line[0], "unattributed "),
        mj_after(run_line[0], "whole run "),
    );
    assert_eq!(all, steps, "the run's steps are the trajectories' steps");
    assert_eq!(all + unattributed, whole);
    assert!(
        !console
            .lines()
            .any(|l| l.starts_with("energy: ") && l.contains("unattributed")),
        "a trajectory's line never repeats the others' energy: {console}"
    );
    assert_eq!(console.matches("Controlled concurrency").count(), 1);

    // A load run: steps numbered per trajectory, one statement, the overlap said.
    let o = run(cwd.path(), &["run", &suite_path("load.toml")]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let console = text(&o).0;
    for t in table_step_numbers(&console) {
        assert_eq!(t, (1..=t.len() as u64).collect::<Vec<_>>(), "{console}");
    }
    assert_eq!(console.matches("energy (run):").count(), 1, "{console}");
    assert!(console.contains("steps of trajectories in flight together overlap"));
    assert_eq!(
        console.matches("Controlled concurrency").count(),
        1,
        "{console}"
    );
    assert_eq!(
        console
            .matches("a step window may mix concurrent work")
            .count(),
        1,
        "{console}"
    );
    // Each statement on its own line, naming the groups it covers (break-it review: the
    // two ran together and read as one contradicting statement).
    let line_of = |needle: &str| {
        console
            .lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} line:\n{console}"))
            .to_string()
    };
    let controlled = line_of("Controlled concurrency");
    assert!(
        controlled.starts_with("[load::fanout · concurrency 1] Controlled"),
        "{controlled}"
    );
    assert!(!controlled.contains("mix concurrent work"), "{controlled}");
    let apportioned = line_of("a step window may mix concurrent work");
    assert!(
        apportioned.starts_with('[') && apportioned.contains("load::fanout · concurrency 16"),
        "{apportioned}"
    );
    assert!(!apportioned.contains("concurrency 1;"), "{apportioned}");

    // No power source: one short line, not the controlled-concurrency paragraph.
    let server = support::Hostile::start("m", |_: &support::Received| {
        support::Reply::Ok("fine".into())
    });
    let suite = write(
        cwd.path(),
        "nopower.toml",
        &format!(
            "name = \"np\"\nendpoint = \"{}\"\nmodel = \"m\"\n[telemetry]\ngpu = \"off\"\n\
             metrics = false\nsample_period_ms = 10\n\
             [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [16]\nmax_tokens = 4\n",
            server.base_url()
        ),
    );
    let o = run(cwd.path(), &["run", suite.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let console = text(&o).0;
    assert!(!console.contains("Controlled concurrency"), "{console}");
    let short: Vec<&str> = console
        .lines()
        .filter(|l| l.contains("no energy figure to attribute"))
        .collect();
    assert_eq!(short.len(), 1, "{console}");
    assert!(short[0].starts_with("power unavailable"), "{}", short[0]);
    assert!(short[0].split_whitespace().count() < 20, "{}", short[0]);
}

/// Missing is never 0: when no step has an energy figure of its own (every step shorter
/// than the 200 ms sampling grid), the run's energy line says so and puts the whole run
/// in unattributed, instead of "all steps 0 mJ".
#[test]
fn a_run_whose_steps_have_no_energy_figure_prints_no_zero_for_them() {
    let cwd = tempfile::tempdir().unwrap();
    write(
        cwd.path(),
        "e.toml",
        "name = \"e\"\n[telemetry]\nsample_period_ms = 200\n[[jobs]]\nname = \"c\"\n\
         kind = \"context\"\nsizes = [16]\nrepeat = 20\nmax_tokens = 4\n",
    );
    let o = run(cwd.path(), &["run", "e.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let console = text(&o).0;
    let line = console
        .lines()
        .find(|l| l.starts_with("energy (run):"))
        .unwrap_or_else(|| panic!("no run energy line: {console}"));
    assert!(
        line.starts_with("energy (run): steps — (no step has an energy figure of its own)"),
        "{line}"
    );
    assert_eq!(
        mj_after(line, "unattributed "),
        mj_after(line, "whole run ")
    );
}
