//! Issue 13 ("Every figure says what it is"): the defects found by a new user on a machine
//! without a GPU and against servers that behave like real ones, each against a loopback
//! server the test starts. The report is read back as JSON, as any consumer would.
//!
//! - a server that sends no `usage`: the client's count is an estimate beside
//!   `completion_tokens` (never in it), and TPOT, tokens/s and tokens/J from it say
//!   `client_estimate` everywhere — report, console, gates, JSON messages, dashboard;
//! - preflight failures are setup errors (exit 96) with one cause: nothing listening,
//!   `/models` 404 (with the `/v1` hint), the model not listed, auth refused; nothing is
//!   measured;
//! - a failed request fails its job unless the suite declares `max_error_rate` (429/503);
//! - an SWE harness's exit status is its own verdict (`harness_exit`, basis `harness`);
//! - `report RUN_DIR --format json` writes `report.json` byte for byte; a v1 report is
//!   refused as an unsupported schema.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::{Hostile, ModelsReply, Received, Reply, describe, job, report, run, text, write};

/// The words the no-usage server streams: 16 token events, 5 ms apart.
const SIXTEEN: &str =
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi";

fn suite(dir: &Path, url: &str, extra: &str, jobs: &str) -> String {
    let s = format!(
        "name = \"h\"\nendpoint = \"{url}\"\nmodel = \"hostile-model\"\n{extra}\n\
         [telemetry]\nmetrics = false\nsample_period_ms = 20\n{jobs}"
    );
    write(dir, "h.toml", &s).display().to_string()
}

const CONTEXT_JOB: &str =
    "[[jobs]]\nname = \"ctx\"\nkind = \"context\"\nsizes = [8, 9]\nmax_tokens = 16\n";

/// With no usage, `completion_tokens` is null and the client's count is
/// `completion_tokens_estimate` with its method; every figure derived from it (TPOT,
/// output tokens/s, tokens per joule) is labelled `client_estimate` — in report.json, in a
/// gate's verdict, in the console table (`~`), in the JSON messages and in the dashboard's
/// step view — and the coverage counts only server-reported requests.
#[test]
fn a_server_without_usage_gives_labelled_estimates_everywhere() {
    let server = Hostile::start("hostile-model", |_: &Received| {
        Reply::NoUsage(SIXTEEN.into())
    });
    let cwd = tempfile::tempdir().unwrap();
    let path = suite(
        cwd.path(),
        &server.base_url(),
        "[gates]\ntpot_ms = { p50 = 10000.0 }\n",
        CONTEXT_JOB,
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            &path,
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = report(&out);
    let j = job(&r, "h::ctx");
    for q in j["requests"].as_array().unwrap() {
        assert_eq!(q["token_event_count"], 16, "{q}");
        assert_eq!(
            q["completion_tokens"],
            Value::Null,
            "an estimate is not usage: {q}"
        );
        let e = &q["completion_tokens_estimate"];
        assert_eq!(e["method"], "utf8_bytes_div_4", "{q}");
        // 16 words and 15 spaces: ceil(bytes / 4) is far from the 16 tokens streamed.
        assert_eq!(e["tokens"], (SIXTEEN.len() as u64).div_ceil(4), "{q}");
    }
    let s = &j["stats"];
    assert_eq!(s["output_tokens"]["basis"], "client_estimate", "{s}");
    assert_eq!(s["output_tokens"]["tokens"], "client_estimate", "{s}");
    assert_eq!(s["output_tokens_per_s"]["basis"], "client_estimate", "{s}");
    assert_eq!(s["tpot_ms"]["basis"], "client_timing", "{s}");
    assert_eq!(s["tpot_ms"]["tokens"], "client_estimate", "{s}");
    assert_eq!(
        s["output_tokens_coverage"], 0.0,
        "no server-reported count: {s}"
    );
    let tpot = j["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["gate"] == "tpot_ms.p50")
        .expect("the declared TPOT gate");
    assert_eq!(tpot["tokens"], "client_estimate", "{tpot}");
    assert!(
        tpot["message"]
            .as_str()
            .unwrap()
            .ends_with("(client timing; tokens client-estimated)"),
        "{tpot}"
    );
    let step = &j["trajectories"][0]["steps"][0];
    assert_eq!(step["completion_tokens"], Value::Null, "{step}");
    assert_eq!(
        step["completion_tokens_estimate"]["method"],
        "utf8_bytes_div_4"
    );
    assert_eq!(
        step["tokens_per_joule"]["tokens"], "client_estimate",
        "{step}"
    );
    assert_eq!(j["energy"]["tokens_per_joule"]["tokens"], "client_estimate");
    // The console table marks the estimate with `~`.
    let (console, _) = text(&o);
    let row = console
        .lines()
        .find(|l| l.trim_start().starts_with("1  llm_call"))
        .unwrap_or_else(|| panic!("no step row:\n{console}"));
    assert!(row.contains(" ~"), "{row}");
    // The timeline carries the estimate as `completion_tokens_estimate`.
    let ends: Vec<Value> = support::events(&out)
        .into_iter()
        .filter(|e| e["kind"] == "request_end")
        .collect();
    assert!(!ends.is_empty());
    for e in ends {
        assert_eq!(e["completion_tokens"], Value::Null, "{e}");
        assert!(e["completion_tokens_estimate"].is_u64(), "{e}");
    }
    // The dashboard's step view keeps the estimate and its method.
    let html = cwd.path().join("run.html");
    support::report_html(&out, &html);
    let page = std::fs::read_to_string(&html).unwrap();
    let start = page.find("id=\"inferscope-data\">").unwrap() + "id=\"inferscope-data\">".len();
    let end = start + page[start..].find("</script>").unwrap();
    let data: Value = serde_json::from_str(&page[start..end]).unwrap();
    let view = &data["detail"]["report"]["jobs"][0]["trajectories"][0]["steps"][0];
    assert_eq!(view["completion_tokens"], Value::Null, "{view}");
    assert_eq!(
        view["completion_tokens_estimate"]["method"], "utf8_bytes_div_4",
        "{view}"
    );
    // The JSON messages say the same.
    let o = run(
        cwd.path(),
        &[
            "run",
            &path,
            "--message-format",
            "json",
            "--out",
            cwd.path().join("j").to_str().unwrap(),
        ],
    );
    let first: Value = serde_json::from_str(text(&o).0.lines().next().unwrap()).unwrap();
    assert_eq!(
        first["stats"]["tpot_ms"]["tokens"], "client_estimate",
        "{first}"
    );
}

/// Starts `inferscope-bench run` against `url` and returns (exit code, stdout, report).
fn run_against(
    url: &str,
    extra: &str,
    env: &[(&str, &str)],
) -> (Option<i32>, String, Value, std::path::PathBuf) {
    let cwd = tempfile::tempdir().unwrap().keep();
    let path = suite(&cwd, url, extra, CONTEXT_JOB);
    let out = cwd.join("run");
    let mut c = support::command(&cwd);
    c.args([
        "run",
        &path,
        "--capture-timeline",
        "--out",
        out.to_str().unwrap(),
    ]);
    for (k, v) in env {
        c.env(k, v);
    }
    let o = c.output().unwrap();
    let all = describe(&o);
    assert!(out.join("report.json").is_file(), "{all}");
    (o.status.code(), all, report(&out), out)
}

/// The checks every setup error shares: exit 96, one `SETUP ERROR` line with its cause and
/// no gate verdicts, no sampler, no measured window, nothing sent but the preflight.
fn assert_setup_error(code: Option<i32>, all: &str, r: &Value, out: &Path, cause: &str) -> Value {
    assert_eq!(code, Some(96), "{all}");
    assert!(
        all.lines()
            .any(|l| l.trim_start().starts_with("SETUP ERROR [") && l.ends_with(" h::ctx")),
        "{all}"
    );
    assert!(all.contains(&format!("setup error ({cause}): ")), "{all}");
    assert!(
        !all.contains("successful_requests"),
        "no wall of gate failures: {all}"
    );
    assert!(
        all.contains("Summary [") && all.contains("0 jobs run: 0 passed, 0 failed, 1 setup error"),
        "{all}"
    );
    let j = job(r, "h::ctx");
    assert_eq!(j["status"], "setup_error", "{j}");
    assert_eq!(j["setup_error"]["cause"], cause, "{j}");
    assert_eq!(j["verdicts"], serde_json::json!([]), "{j}");
    assert_eq!(r["summary"]["setup_errors"], 1);
    assert_eq!(r["summary"]["exit_status"], 96);
    assert_eq!(r["endpoint"]["setup_error"]["cause"], cause);
    // No measured window: no sampler ran, and the timeline has no request_execution phase.
    assert_eq!(r["telemetry"], Value::Null, "{}", r["telemetry"]);
    let phases: Vec<String> = support::events(out)
        .iter()
        .filter(|e| e["kind"] == "phase_start")
        .map(|e| e["name"].as_str().unwrap().to_string())
        .collect();
    assert!(
        !phases.iter().any(|p| p == "request_execution"),
        "{phases:?}"
    );
    j["setup_error"].clone()
}

/// Nothing listening is a setup error naming the address.
#[test]
fn nothing_listening_is_a_setup_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
    let (code, all, r, out) = run_against(&url, "", &[]);
    let e = assert_setup_error(code, &all, &r, &out, "unreachable");
    assert!(e["message"].as_str().unwrap().contains(&url), "{e}");
}

/// `/models` answering 404 is a setup error that suggests the `/v1`
/// suffix, with a bounded excerpt of the server's error body in report.json only.
#[test]
fn models_404_is_a_setup_error_suggesting_v1() {
    let server = Hostile::start_with_models(
        ModelsReply::Status(404, "route /models not found".into()),
        |_: &Received| Reply::Ok("never".into()),
    );
    let root = format!("http://{}", server.addr);
    let (code, all, r, out) = run_against(&root, "", &[]);
    let e = assert_setup_error(code, &all, &r, &out, "models_not_found");
    assert_eq!(e["http_status"], 404);
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains(&format!("try {root}/v1")),
        "{e}"
    );
    assert!(
        e["body_excerpt"]
            .as_str()
            .unwrap()
            .contains("route /models not found"),
        "{e}"
    );
    assert!(
        server.chat_requests().is_empty(),
        "nothing but the preflight was sent"
    );
    let events = std::fs::read_to_string(out.join("timeline/events.jsonl")).unwrap();
    assert!(
        !events.contains("route /models not found"),
        "never in the timeline"
    );
}

/// A model the endpoint does not serve is a setup error listing the
/// names it does serve.
#[test]
fn a_model_not_listed_is_a_setup_error_with_the_listed_names() {
    let server = Hostile::start_with_models(
        ModelsReply::List(vec!["llama-3-8b".into(), "qwen-7b".into()]),
        |_: &Received| Reply::Ok("never".into()),
    );
    let (code, all, r, out) = run_against(&server.base_url(), "", &[]);
    let e = assert_setup_error(code, &all, &r, &out, "model_not_listed");
    assert_eq!(
        e["listed_models"],
        serde_json::json!(["llama-3-8b", "qwen-7b"])
    );
    assert!(all.contains("it lists: llama-3-8b, qwen-7b"), "{all}");
    assert!(server.chat_requests().is_empty());
}

/// Auth refused (401) is a setup error naming the API-key variable; the
/// key the server echoed is redacted from the body excerpt and from every artifact.
#[test]
fn auth_refused_is_a_setup_error_and_the_key_never_appears() {
    const KEY: &str = "sk-test-do-not-print-4711";
    let server = Hostile::start_with_models(
        ModelsReply::Status(
            401,
            format!("invalid API key {KEY} (Authorization: Bearer {KEY})"),
        ),
        |_: &Received| Reply::Ok("never".into()),
    );
    let (code, all, r, out) = run_against(
        &server.base_url(),
        "api_key_env = \"H_TEST_KEY\"",
        &[("H_TEST_KEY", KEY)],
    );
    let e = assert_setup_error(code, &all, &r, &out, "auth_refused");
    assert_eq!(e["http_status"], 401);
    assert!(
        e["message"].as_str().unwrap().contains("`H_TEST_KEY`"),
        "{e}"
    );
    let excerpt = e["body_excerpt"].as_str().unwrap();
    assert!(excerpt.contains("invalid API key [redacted]"), "{excerpt}");
    assert!(!all.contains(KEY), "{all}");
    for (p, bytes) in support::files_under(&out) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key is in {}",
            p.display()
        );
    }
}

/// Half the requests answered 429/503 used to pass every job with exit
/// 0; a failed request now fails its job unless the suite declares `max_error_rate`.
#[test]
fn rate_limited_and_unavailable_requests_fail_the_job_unless_tolerated() {
    let server = Hostile::start("hostile-model", |r: &Received| {
        let id = r.request_id();
        if id.ends_with(".r0") && id.contains(".s8.") {
            Reply::Status(429, "rate limited".into())
        } else if id.contains(".s9.") && id.ends_with(".r1") {
            Reply::Status(503, "overloaded".into())
        } else {
            Reply::Ok("fine answer".into())
        }
    });
    let cwd = tempfile::tempdir().unwrap();
    let jobs = "[[jobs]]\nname = \"ctx\"\nkind = \"context\"\nsizes = [8, 9]\nrepeat = 2\nmax_tokens = 4\n";
    let path = suite(cwd.path(), &server.base_url(), "", jobs);
    let out = cwd.path().join("run");
    let o = run(cwd.path(), &["run", &path, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(100), "{}", describe(&o));
    let (console, _) = text(&o);
    assert!(
        console.contains("error_rate = 0.5 > bound 0 (request outcomes)"),
        "{console}"
    );
    assert!(console.contains("declare `max_error_rate`"), "{console}");
    let r = report(&out);
    let j = job(&r, "h::ctx");
    assert_eq!(j["status"], "fail");
    let codes: Vec<&str> = j["failure_codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["http_status"], "{}", j["failure_codes"]);
    assert_eq!(j["failure_codes"][0]["count"], 2);
    // Declared: tolerated.
    let path = suite(
        cwd.path(),
        &server.base_url(),
        "[gates]\nmax_error_rate = 0.5\n",
        jobs,
    );
    let out = cwd.path().join("run2");
    let o = run(cwd.path(), &["run", &path, "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

/// An SWE harness that exits 0 without the runner seeing any request
/// passes on its own verdict (`harness_exit`, basis `harness`), not on a synthetic
/// `successful_requests = 1`; one that exits 1 fails on it.
#[test]
fn an_swe_harness_exit_is_its_own_verdict() {
    let cwd = tempfile::tempdir().unwrap();
    for (code, status, outcome) in [(0, "pass", "pass"), (3, "fail", "fail")] {
        let s = format!(
            "name = \"w\"\n[telemetry]\nmetrics = false\n\
             [[jobs]]\nname = \"h\"\nkind = \"swe\"\ncommand = [\"sh\", \"-c\", \"exit {code}\"]\n\
             timeout_s = 30.0\n"
        );
        let path = write(cwd.path(), "w.toml", &s);
        let out = cwd.path().join(format!("run{code}"));
        let o = run(
            cwd.path(),
            &[
                "run",
                path.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
        );
        let r = report(&out);
        let j = job(&r, "w::h");
        assert_eq!(j["status"], status, "{}", describe(&o));
        assert_eq!(j["requests"], serde_json::json!([]));
        let v = j["verdicts"].as_array().unwrap();
        assert!(
            v.iter().all(|v| v["gate"] != "successful_requests"),
            "no stand-in count: {v:?}"
        );
        let exit = v
            .iter()
            .find(|v| v["gate"] == "harness_exit")
            .expect("harness_exit");
        assert_eq!(exit["basis"], "harness");
        assert_eq!(exit["value"], f64::from(code));
        assert_eq!(exit["outcome"], outcome);
    }
}

/// Issue 13 "Done when": `report RUN_DIR --format json` writes the run's `report.json`
/// byte for byte (read into the typed model and written again); a v1 report is refused
/// as an unsupported schema, naming it.
#[test]
fn report_json_round_trips_byte_for_byte_and_v1_is_refused() {
    let cwd = tempfile::tempdir().unwrap();
    let out = cwd.path().join("run");
    let o = run(
        &support::repo(),
        &["run", "suites/agentic.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let mut dirs = vec![out.clone()];
    for f in [
        "complete",
        "cancelled",
        "no-telemetry",
        "overflowed",
        "clock-misaligned",
    ] {
        dirs.push(support::repo().join("fixtures/runs").join(f));
    }
    for d in dirs {
        let copy = cwd.path().join("copy.json");
        let o = run(
            cwd.path(),
            &[
                "report",
                d.to_str().unwrap(),
                "--format",
                "json",
                "-o",
                copy.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
        assert!(
            std::fs::read(d.join("report.json")).unwrap() == std::fs::read(&copy).unwrap(),
            "{} does not round-trip byte for byte",
            d.display()
        );
    }
    // A v1 report, and a v2 one (records inside report.json, before issue 19): a clear
    // error, exit 2.
    let old = cwd.path().join("old");
    std::fs::create_dir_all(&old).unwrap();
    for v in ["v1", "v2"] {
        std::fs::write(
            old.join("report.json"),
            format!(r#"{{"schema":"inferscope-bench.report/{v}","run_id":"x","jobs":[]}}"#),
        )
        .unwrap();
        let o = run(
            cwd.path(),
            &["report", old.to_str().unwrap(), "--format", "markdown"],
        );
        assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
        let (_, err) = text(&o);
        assert!(
            err.contains(&format!(
                "unsupported schema \"inferscope-bench.report/{v}\""
            )),
            "{err}"
        );
    }
}

/// Report.json holds the whole-run increase of each engine counter next
/// to the per-step deltas, and each gauge per engine (on the simulator: one engine).
#[test]
fn counters_and_gauges_are_summarised_in_the_report() {
    let cwd = tempfile::tempdir().unwrap();
    let out = cwd.path().join("run");
    let o = run(
        &support::repo(),
        &[
            "run",
            "suites/agentic.toml",
            "--filter",
            "repo_tour",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let r = report(&out);
    let m = &r["telemetry"]["metrics"];
    let prompt = &m["counters"]["prompt_tokens"];
    let steps_prompt: u64 = job(&r, "agentic::repo_tour")["trajectories"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["prompt_tokens"].as_u64())
        .sum();
    assert_eq!(prompt["counter_resets"], 0, "{m}");
    assert_eq!(
        prompt["increase"].as_u64(),
        Some(steps_prompt),
        "the simulator counts every prompt token of the run: {m}"
    );
    // The simulator's series carry `engine="0"`, like vLLM's: kept under that engine, never
    // under "".
    let kv = &m["gauges"]["kv_cache_usage"];
    assert!(
        kv["engines"]["engine=\"0\""]["samples"].as_u64().unwrap() > 0,
        "{kv}"
    );
    assert!(kv["engines"].get("").is_none(), "{kv}");
    assert!(
        kv["max"].as_f64().unwrap() >= kv["mean"].as_f64().unwrap(),
        "{kv}"
    );
}
