//! `init ENDPOINT` and the help a newcomer meets: the starter suite it
//! writes for the simulator passes `check` and `run`, the model is picked from `GET
//! /models` (the only one, the first of several, or `--model`), an existing file is kept
//! unless `--force` (and nothing is sent), the API key's variable is named and its value
//! never written or printed, endpoint failures read as the preflight's; every
//! subcommand's `--help` ends with examples, and a mistyped subcommand or flag names the
//! right one. Servers are the simulator (`inferscope-bench sim --port 0`) and loopback
//! listeners the tests start.

use crate::support;

use std::path::Path;

use support::{Hostile, ModelsReply, Reply, Tripwire, describe, run, text};

fn never_chat() -> impl Fn(&support::Received) -> Reply + Send + Sync + 'static {
    |_| Reply::Status(500, "init sends no chat request".into())
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The newcomer's path after the two commands: a simulator, `init` against it, `check`,
/// `run`, `report --format html`, each as a user types it in a fresh directory.
#[test]
fn init_against_the_simulator_writes_a_suite_that_check_accepts_and_run_passes() {
    let cwd = tempfile::tempdir().unwrap();
    let (mut sim, url) = support::spawn_sim(cwd.path(), &[]);
    let o = run(cwd.path(), &["init", &url]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (out, _) = text(&o);
    assert!(
        out.contains("wrote starter.toml") && out.contains("model `inferscope-sim`"),
        "{out}"
    );
    let suite = read(&cwd.path().join("starter.toml"));
    assert!(suite.contains(&format!("endpoint = \"{url}\"")), "{suite}");
    assert!(suite.contains("model = \"inferscope-sim\""), "{suite}");
    assert!(
        suite.contains("# api_key_env = \"OPENAI_API_KEY\""),
        "{suite}"
    );

    let o = run(cwd.path(), &["check", "starter.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text(&o).0.contains("ok: starter.toml (2 jobs, 1 tools)"));

    let o = run(
        cwd.path(),
        &["run", "starter.toml", "--out", "runs/starter"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (out, _) = text(&o);
    assert!(
        out.contains("PASS") && out.contains("starter::context"),
        "{out}"
    );
    assert!(out.contains("starter::trajectory"), "{out}");
    assert!(out.contains("2 passed, 0 failed"), "{out}");
    let report = support::report(&cwd.path().join("runs/starter"));
    let trajectory = support::job(&report, "starter::trajectory");
    // Two scripted tool calls: three LLM steps and two tool steps.
    let steps = trajectory["trajectories"][0]["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps in {trajectory}"));
    assert_eq!(steps.len(), 5, "{trajectory}");

    let o = run(
        cwd.path(),
        &[
            "report",
            "runs/starter",
            "--format",
            "html",
            "-o",
            "starter.html",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(read(&cwd.path().join("starter.html")).contains("starter::trajectory"));
    sim.kill().unwrap();
    sim.wait().unwrap();
}

#[test]
fn init_picks_the_first_of_several_models_names_the_others_and_takes_model() {
    let server = Hostile::start_with_models(
        ModelsReply::List(vec!["alpha".into(), "beta".into(), "gamma".into()]),
        never_chat(),
    );
    let cwd = tempfile::tempdir().unwrap();
    let o = run(cwd.path(), &["init", &server.base_url()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (_, err) = text(&o);
    assert!(
        err.contains("lists 3 models; using the first, `alpha` (the others: beta, gamma)"),
        "{err}"
    );
    assert!(read(&cwd.path().join("starter.toml")).contains("model = \"alpha\""));

    let o = run(
        cwd.path(),
        &[
            "init",
            &server.base_url(),
            "--model",
            "beta",
            "--out",
            "my/suites/b.toml",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    // Parent directories are created.
    let b = read(&cwd.path().join("my/suites/b.toml"));
    assert!(
        b.contains("model = \"beta\"") && b.contains("name = \"b\""),
        "{b}"
    );

    // A model the endpoint does not list: the preflight's message, nothing written.
    let o = run(
        cwd.path(),
        &[
            "init",
            &server.base_url(),
            "--model",
            "delta",
            "--out",
            "d.toml",
        ],
    );
    assert_eq!(o.status.code(), Some(96), "{}", describe(&o));
    assert!(
        text(&o).1.contains("it lists: alpha, beta, gamma"),
        "{}",
        describe(&o)
    );
    assert!(!cwd.path().join("d.toml").exists());
}

#[test]
fn init_keeps_an_existing_file_and_sends_nothing_unless_force() {
    let cwd = tempfile::tempdir().unwrap();
    let existing = support::write(cwd.path(), "starter.toml", "# mine\n");
    let wire = Tripwire::new();
    let o = run(cwd.path(), &["init", &wire.base_url()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        text(&o)
            .1
            .contains("starter.toml exists; pass --force to replace it"),
        "{}",
        describe(&o)
    );
    assert_eq!(read(&existing), "# mine\n");
    assert_eq!(wire.accepted(), 0, "init connected before refusing");

    let server = Hostile::start("m", never_chat());
    let o = run(cwd.path(), &["init", &server.base_url(), "--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(read(&existing).contains("model = \"m\""));
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(cwd.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["starter.toml"]);
}

#[test]
fn init_names_the_key_variable_and_never_writes_or_prints_the_key() {
    const KEY: &str = "sk-init9Secret4Value7Never2Written";
    let server = Hostile::start("m", never_chat());
    let cwd = tempfile::tempdir().unwrap();
    let o = support::command(cwd.path())
        .args(["init", &server.base_url(), "--api-key-env", "INIT_TEST_KEY"])
        .env("INIT_TEST_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (out, err) = text(&o);
    let suite = read(&cwd.path().join("starter.toml"));
    assert!(suite.contains("api_key_env = \"INIT_TEST_KEY\""), "{suite}");
    for (what, s) in [("suite", &suite), ("stdout", &out), ("stderr", &err)] {
        assert!(!s.contains(KEY), "the key is in the {what}");
    }
    // The key was sent to list the models.
    let got = server.received.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(
        got[0].headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {KEY}").as_str())
    );

    // The variable unset, or the key pasted in place of its name: exit 2, nothing sent,
    // the value never echoed.
    let o = run(
        cwd.path(),
        &[
            "init",
            &server.base_url(),
            "--api-key-env",
            "INIT_TEST_UNSET_VARIABLE",
            "--out",
            "x.toml",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        text(&o)
            .1
            .contains("INIT_TEST_UNSET_VARIABLE: the variable is not set")
    );
    let o = run(
        cwd.path(),
        &[
            "init",
            &server.base_url(),
            "--api-key-env",
            KEY,
            "--out",
            "x.toml",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(err.contains("not an environment variable name"), "{err}");
    assert!(!out.contains(KEY) && !err.contains(KEY));
    assert_eq!(server.received.lock().unwrap().len(), 1);
    assert!(!cwd.path().join("x.toml").exists());
}

#[test]
fn init_reports_endpoint_failures_as_the_preflight_does() {
    let cwd = tempfile::tempdir().unwrap();
    // `/models` not found: the base URL probably lacks `/v1`.
    let server = Hostile::start_with_models(
        ModelsReply::Status(404, "no such route".into()),
        never_chat(),
    );
    let base = format!("http://{}", server.addr);
    let o = run(cwd.path(), &["init", &base]);
    assert_eq!(o.status.code(), Some(96), "{}", describe(&o));
    let err = text(&o).1;
    assert!(
        err.contains(&format!("try {base}/v1")) && err.contains("(models_not_found)"),
        "{err}"
    );
    // Nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let o = run(
        cwd.path(),
        &["init", &format!("http://127.0.0.1:{port}/v1")],
    );
    assert_eq!(o.status.code(), Some(96), "{}", describe(&o));
    assert!(text(&o).1.contains("(unreachable)"), "{}", describe(&o));
    // An empty model list.
    let empty = Hostile::start_with_models(ModelsReply::List(vec![]), never_chat());
    let o = run(cwd.path(), &["init", &empty.base_url()]);
    assert_eq!(o.status.code(), Some(96), "{}", describe(&o));
    assert!(text(&o).1.contains("lists no model"), "{}", describe(&o));
    // Not a URL, and credentials in the URL: bad input, nothing sent.
    let o = run(cwd.path(), &["init", "localhost:8000/v1"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(text(&o).1.contains("is not an http:// or https:// URL"));
    let o = run(cwd.path(), &["init", "http://user:pw1234@127.0.0.1:9/v1"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(!text(&o).1.contains("pw1234"), "{}", describe(&o));
    assert!(!cwd.path().join("starter.toml").exists());
}

/// A model id with quotes and backslashes is written as a TOML string `check` reads back.
#[test]
fn init_escapes_the_model_id() {
    let odd = r#"org/we"ird\model"#;
    let server = Hostile::start(odd, never_chat());
    let cwd = tempfile::tempdir().unwrap();
    let o = run(cwd.path(), &["init", &server.base_url()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let o = run(cwd.path(), &["check", "starter.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let o = run(cwd.path(), &["run", "starter.toml", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    assert!(text(&o).0.contains(odd), "{}", describe(&o));
}

#[test]
fn every_subcommand_help_ends_with_examples() {
    let cwd = tempfile::tempdir().unwrap();
    for sub in [
        &["init", "--help"][..],
        &["run", "--help"],
        &["check", "-h"],
        &["report", "--help"],
        &["timeline", "verify", "--help"],
        &["baseline", "save", "--help"],
        &["serve", "--help"],
    ] {
        let o = run(cwd.path(), sub);
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        let (out, _) = text(&o);
        let examples = out
            .split("Examples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("{sub:?}: no examples in\n{out}"));
        let name = sub[..sub.len() - 1].join(" ");
        assert!(
            examples.contains(&format!("  inferscope-bench {name} ")),
            "{sub:?}:\n{out}"
        );
    }
}

#[test]
fn a_mistyped_subcommand_or_flag_suggests_the_right_one() {
    let cwd = tempfile::tempdir().unwrap();
    let o = run(cwd.path(), &["chek", "suites/agentic.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        text(&o)
            .1
            .contains("tip: a similar subcommand exists: 'check'"),
        "{}",
        describe(&o)
    );
    let o = run(cwd.path(), &["run", "suites/agentic.toml", "--dry-rn"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        text(&o)
            .1
            .contains("tip: a similar argument exists: '--dry-run'"),
        "{}",
        describe(&o)
    );
    let o = run(cwd.path(), &["init", "http://127.0.0.1:9/v1", "--forse"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(
        text(&o)
            .1
            .contains("tip: a similar argument exists: '--force'"),
        "{}",
        describe(&o)
    );
}
