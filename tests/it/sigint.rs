//! Ctrl-C and kill during a run ("Done when"). The endpoint is a
//! scripted loopback server whose chat responses start only after a long delay, so the test
//! knows, without any wall-clock guess, that a request is in flight: it signals once the
//! server has READ the second request.
//!
//! - SIGINT / SIGTERM: the process exits non-zero on its own, the timeline is finalized as
//!   `partial` (reason `cancelled`), `timeline verify` accepts it (exit 0), the request that
//!   was in flight ends `cancelled`, and no new request starts.
//! - A job the signal came before is `NOT RUN` (never `FAIL`), not counted in `N jobs
//!   run`, and the summary says `N not run (cancelled)`; the exit status is 100 (a
//!   cancelled run never exits 0). `--message-format json` says the same (`not_run`).
//! - SIGKILL: no manifest is left, and `timeline verify` reports `unavailable` (exit 2).

use crate::support;

use std::path::Path;
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::{Hostile, Received, Reply, command, describe, events, job, report, run};

/// Every chat response waits this long before its body: far longer than the test.
const STALL: Duration = Duration::from_secs(60);
const FIRST_FAST: &str = ".s8.";

fn start_server() -> Hostile {
    Hostile::start("hostile-model", |r: &Received| {
        if r.request_id().contains(FIRST_FAST) {
            Reply::Ok("quick answer".into())
        } else {
            Reply::SlowFirstByte(STALL, "late".into())
        }
    })
}

fn suite(dir: &Path, url: &str) {
    let s = format!(
        "name = \"sig\"\nendpoint = \"{url}\"\nmodel = \"hostile-model\"\n\
         [telemetry]\nmetrics = false\nsample_period_ms = 20\n\
         [[jobs]]\nname = \"ctx\"\nkind = \"context\"\nsizes = [8, 9, 10, 11]\nmax_tokens = 4\n\
         [[jobs]]\nname = \"later\"\nkind = \"context\"\nsizes = [8]\nmax_tokens = 4\n"
    );
    support::write(dir, "sig.toml", &s);
}

fn spawn_run(cwd: &Path, out: &Path) -> Child {
    spawn_run_with(cwd, out, &[])
}

fn spawn_run_with(cwd: &Path, out: &Path, extra: &[&str]) -> Child {
    command(cwd)
        .args([
            "run",
            "sig.toml",
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until the server has read `n` chat requests (the n-th is then in flight).
fn wait_for_requests(server: &Hostile, n: usize, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.chat_requests().len() < n {
        if let Some(s) = child.try_wait().unwrap() {
            panic!("run ended early: {s:?}");
        }
        assert!(Instant::now() < deadline, "request {n} never arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: signalling the child this test spawned, by its own pid.
    let rc = unsafe { libc::kill(child.id() as i32, sig) };
    assert_eq!(rc, 0);
}

fn wait_exit(mut child: Child) -> (ExitStatus, String, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if child.try_wait().unwrap().is_some() {
            let o = child.wait_with_output().unwrap();
            return (
                o.status,
                String::from_utf8_lossy(&o.stdout).into_owned(),
                String::from_utf8_lossy(&o.stderr).into_owned(),
            );
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the run did not exit after the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn interrupted_run(sig: i32) {
    let server = start_server();
    let cwd = tempfile::tempdir().unwrap();
    suite(cwd.path(), &server.base_url());
    let out = cwd.path().join("run");
    let mut child = spawn_run(cwd.path(), &out);
    wait_for_requests(&server, 2, &mut child);
    let in_flight = server.chat_requests()[1].request_id().to_string();
    signal(&child, sig);
    let (status, stdout, stderr) = wait_exit(child);
    let all = format!("status {status:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");

    // Exited on its own (not killed by the signal), non-zero: 100, as a failed run.
    assert_eq!(status.code(), Some(100), "{all}");
    // The job the signal cut short is CANCELLED (never PASS nor FAIL).
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("CANCELLED [") && l.ends_with(" sig::ctx")),
        "{all}"
    );
    // The job that never started is NOT RUN, not FAIL, and not counted as run.
    assert!(
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with("NOT RUN [") && l.ends_with(" sig::later")),
        "{all}"
    );
    assert!(
        !stdout
            .lines()
            .any(|l| l.contains("FAIL [") && l.ends_with(" sig::later")),
        "{all}"
    );
    assert!(
        stdout
            .lines()
            .any(|l| l.trim() == "note: not run: cancelled before start"),
        "{all}"
    );
    assert!(
        stdout.lines().any(|l| l.contains("Summary [")
            && l.ends_with("] 1 job run: 0 passed, 0 failed, 1 cancelled, 1 not run (cancelled)")),
        "{all}"
    );
    assert!(stderr.contains("interrupt"), "{all}");
    assert_eq!(
        stdout.lines().last(),
        Some(format!("run directory: {}", out.display()).as_str()),
        "{all}"
    );
    // No request started after the signal.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(server.chat_requests().len(), 2, "{all}");

    // The manifest: partial, because cancelled.
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("timeline/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(manifest["quality"], "partial", "{manifest}");
    assert!(
        manifest["quality_reasons"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == "cancelled"),
        "{manifest}"
    );
    let v = run(cwd.path(), &["timeline", "verify", out.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
    assert!(support::text(&v).0.contains("partial"));

    // report.json: cancelled; the completed request stays a success; the in-flight step
    // is `cancelled`; the later job never ran.
    let r = report(&out);
    assert_eq!(r["cancelled"], true);
    assert_eq!(r["capture"]["quality"], "partial");
    let j = job(&r, "sig::ctx");
    let steps = j["trajectories"][0]["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 2, "{}", j["trajectories"]);
    assert_eq!(steps[0]["status"], "completed");
    assert_eq!(steps[1]["status"], "cancelled");
    assert_eq!(j["trajectories"][0]["stop_reason"], "cancelled");
    assert_eq!(j["requests"][0]["status"], "success");
    assert!(
        job(&r, "sig::later")["requests"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(job(&r, "sig::later")["status"], "not_run");
    // Never judged: no verdict at all (least of all a failed `successful_requests`).
    assert_eq!(
        job(&r, "sig::later")["verdicts"],
        serde_json::json!([]),
        "{}",
        job(&r, "sig::later")
    );
    // Stopped part-way by the signal: cancelled, never a pass or a plain failure.
    assert_eq!(j["status"], "cancelled");
    assert!(
        j["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n == "cancelled (Ctrl-C / SIGTERM): 0 of 1 trajectories ran to their end"),
        "{}",
        j["notes"]
    );
    assert_eq!(r["summary"]["jobs"], 1, "{}", r["summary"]);
    assert_eq!(r["summary"]["failed"], 0, "{}", r["summary"]);
    assert_eq!(r["summary"]["cancelled"], 1, "{}", r["summary"]);
    assert_eq!(r["summary"]["not_run"], 1, "{}", r["summary"]);
    assert_eq!(r["summary"]["exit_status"], 100, "{}", r["summary"]);

    // Timeline: every span that was open at the signal ends `cancelled`; the completed
    // request ends `completed`.
    let ev = events(&out);
    let start_of = |id: &str| -> u64 {
        ev.iter()
            .find(|e| e["kind"] == "request_start" && e["request_id"] == id)
            .unwrap_or_else(|| panic!("no request_start for {id}"))["span_id"]
            .as_u64()
            .unwrap()
    };
    let end_of = |span: u64| -> &Value {
        ev.iter()
            .find(|e| e["kind"] == "request_end" && e["span_id"] == span)
            .unwrap_or_else(|| panic!("span {span} never ended"))
    };
    let done = end_of(start_of("sig::ctx.t0.s8.r0"));
    assert_eq!(done["status"], "completed");
    let cut = end_of(start_of(&in_flight));
    assert_eq!(
        cut["status"], "cancelled",
        "the in-flight request span must end cancelled: {cut}"
    );
    assert_eq!(cut["failure_code"], "cancelled", "{cut}");
    let exec_end = ev
        .iter()
        .find(|e| e["kind"] == "phase_end" && e["name"] == "request_execution")
        .expect("request_execution phase ended");
    assert_eq!(exec_end["status"], "cancelled");
}

#[test]
fn sigint_mid_run_finalizes_a_partial_timeline_with_cancelled_spans() {
    interrupted_run(libc::SIGINT);
}

#[test]
fn sigterm_mid_run_finalizes_a_partial_timeline_with_cancelled_spans() {
    interrupted_run(libc::SIGTERM);
}

#[test]
fn sigint_json_messages_say_not_run_for_a_job_never_started() {
    let server = start_server();
    let cwd = tempfile::tempdir().unwrap();
    suite(cwd.path(), &server.base_url());
    let out = cwd.path().join("run");
    let mut child = spawn_run_with(cwd.path(), &out, &["--message-format", "json"]);
    wait_for_requests(&server, 2, &mut child);
    signal(&child, libc::SIGINT);
    let (status, stdout, stderr) = wait_exit(child);
    let all = format!("status {status:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    assert_eq!(status.code(), Some(100), "{all}");
    let msgs: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}\n{all}")))
        .collect();
    let job_msg = |id: &str| {
        msgs.iter()
            .find(|m| m["type"] == "job" && m["id"] == id)
            .unwrap_or_else(|| panic!("no job message for {id}\n{all}"))
    };
    assert_eq!(job_msg("sig::ctx")["status"], "cancelled", "{all}");
    assert_eq!(job_msg("sig::later")["status"], "not_run", "{all}");
    let summary = msgs
        .iter()
        .find(|m| m["type"] == "summary")
        .expect("summary message");
    assert_eq!(summary["status"], "fail", "{summary}");
    assert_eq!(summary["jobs"], 1, "{summary}");
    assert_eq!(summary["passed"], 0, "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    assert_eq!(summary["cancelled"], 1, "{summary}");
    assert_eq!(summary["not_run"], 1, "{summary}");
    assert_eq!(summary["exit_code"], 100, "{summary}");
}

#[test]
fn sigkill_mid_run_leaves_no_manifest_and_verify_says_unavailable() {
    let server = start_server();
    let cwd = tempfile::tempdir().unwrap();
    suite(cwd.path(), &server.base_url());
    let out = cwd.path().join("run");
    let mut child = spawn_run(cwd.path(), &out);
    wait_for_requests(&server, 2, &mut child);
    signal(&child, libc::SIGKILL);
    let (status, _, _) = wait_exit(child);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    assert!(!out.join("timeline/manifest.json").exists());
    // The directory may be absent (nothing is written during the measured window) or an
    // empty directory the test created: unavailable either way.
    let v = run(cwd.path(), &["timeline", "verify", out.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(2), "{}", describe(&v));
    assert!(support::text(&v).0.contains("unavailable"));
    std::fs::create_dir_all(&out).unwrap();
    let v = run(cwd.path(), &["timeline", "verify", out.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(2), "{}", describe(&v));
    assert!(support::text(&v).0.contains("unavailable"));
}

/// A load job stopped by Ctrl-C after 1 of its 3 sweep points is
/// `cancelled` everywhere — the console line, report.json, the JSON messages, JUnit (an
/// `<error type="cancelled">`, never a success) and the dashboard — never PASS (it used to
/// pass everywhere, JUnit included); the cancelled run exits 100.
#[test]
fn ctrl_c_during_a_sweep_cancels_the_load_job_everywhere() {
    let server = Hostile::start("hostile-model", |r: &Received| {
        // Point 0's requests answer at once; later points' stall past the signal.
        if r.request_id().contains(".tp0.") {
            Reply::Ok("quick answer".into())
        } else {
            Reply::SlowFirstByte(STALL, "late".into())
        }
    });
    let cwd = tempfile::tempdir().unwrap();
    let s = format!(
        "name = \"sig\"\nendpoint = \"{}\"\nmodel = \"hostile-model\"\n\
         [telemetry]\nmetrics = false\nsample_period_ms = 20\n\
         [[jobs]]\nname = \"sweep\"\nkind = \"context\"\nsizes = [8]\nmax_tokens = 4\n\
         count = 2\nsweep = {{ concurrency = [1, 2, 4] }}\n",
        server.base_url()
    );
    support::write(cwd.path(), "sig.toml", &s);
    for json in [false, true] {
        let out = cwd.path().join(if json { "json" } else { "human" });
        let junit = cwd.path().join("junit.xml");
        let mut args = vec!["--junit", junit.to_str().unwrap()];
        if json {
            args = vec!["--message-format", "json"];
        }
        let before = server.chat_requests().len();
        let mut child = spawn_run_with(cwd.path(), &out, &args);
        // Point 0 (2 requests) done and point 1's first request read: it is in flight.
        let deadline = Instant::now() + Duration::from_secs(60);
        while !server.chat_requests()[before..]
            .iter()
            .any(|r| r.request_id().contains(".tp1."))
        {
            if let Some(s) = child.try_wait().unwrap() {
                panic!("run ended early: {s:?}");
            }
            assert!(Instant::now() < deadline, "point 1 never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        signal(&child, libc::SIGINT);
        let (status, stdout, stderr) = wait_exit(child);
        let all = format!("status {status:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
        assert_eq!(status.code(), Some(100), "{all}");
        let r = report(&out);
        let j = job(&r, "sig::sweep");
        assert_eq!(j["status"], "cancelled", "{all}");
        assert_eq!(j["load"]["points_planned"], 3, "{}", j["load"]);
        assert_eq!(j["load"]["points_run"], 2, "{}", j["load"]);
        // Point 2 never started: the note says so (it used to name only the points that
        // ran, so a cut at point 0 read "3 scheduled units never started" where 35 did).
        assert!(
            j["notes"].as_array().unwrap().iter().any(|n| {
                let n = n.as_str().unwrap();
                n.starts_with("cancelled (Ctrl-C / SIGTERM): 1 of 3 sweep points ran to their end")
                    && n.ends_with("; 1 of 3 sweep points never started")
            }),
            "{}",
            j["notes"]
        );
        assert_eq!(r["summary"]["cancelled"], 1);
        assert_eq!(r["summary"]["passed"], 0);
        if json {
            let msg: Value = stdout
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .find(|m| m["type"] == "job")
                .expect("a job message");
            assert_eq!(msg["status"], "cancelled", "{all}");
        } else {
            assert!(
                stdout.lines().any(
                    |l| l.trim_start().starts_with("CANCELLED [") && l.ends_with(" sig::sweep")
                ),
                "{all}"
            );
            assert!(!stdout.contains("PASS ["), "{all}");
            let xml = std::fs::read_to_string(&junit).unwrap();
            assert!(xml.contains(r#"errors="1""#), "{xml}");
            assert!(xml.contains(r#"type="cancelled""#), "{xml}");
            assert!(!xml.contains("<failure"), "{xml}");
            // The dashboard's page marks it cancelled, not passed.
            let html = cwd.path().join("run.html");
            support::report_html(&out, &html);
            let page = std::fs::read_to_string(&html).unwrap();
            assert!(
                page.contains("\"status\":\"cancelled\""),
                "the detail says cancelled"
            );
            assert!(page.contains("⊘ cancelled"), "the page's status text");
        }
    }
}

/// Ctrl-C during a one-point closed loop (`count = 16`, one in flight)
/// at several instants — while request k (k = 1, 3, 4) is in flight, and shortly after
/// request k of a fast server was read (the signal may then land between two units).
/// The job is never PASS: `cancelled` in report.json and JUnit, "0 of 1 sweep points ran
/// to their end", and every unit of the count is either started or counted in
/// `units_not_started` (on main that count was 0 where 15, 14 or 13 never started).
#[test]
fn ctrl_c_during_a_one_point_load_job_never_passes() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    // (stall from request k on, signal after reading request k, extra delay ms)
    let instants = [
        (true, 1usize, 0u64),
        (true, 3, 0),
        (true, 4, 0),
        (false, 2, 0),
        (false, 3, 3),
        (false, 4, 7),
    ];
    for (stall, k, delay_ms) in instants {
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&seen);
        let server = Hostile::start("hostile-model", move |r: &Received| {
            let n = if r.path.ends_with("/chat/completions") {
                counter.fetch_add(1, Ordering::SeqCst)
            } else {
                0
            };
            if stall && n + 1 >= k {
                Reply::SlowFirstByte(STALL, "late".into())
            } else {
                Reply::Ok("quick answer".into())
            }
        });
        let cwd = tempfile::tempdir().unwrap();
        let s = format!(
            "name = \"sig\"\nendpoint = \"{}\"\nmodel = \"hostile-model\"\n\
             [telemetry]\nmetrics = false\nsample_period_ms = 20\n\
             [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [8]\nmax_tokens = 4\n\
             count = 16\nconcurrency = 1\n",
            server.base_url()
        );
        support::write(cwd.path(), "sig.toml", &s);
        let out = cwd.path().join("run");
        let junit = cwd.path().join("junit.xml");
        let mut child = spawn_run_with(cwd.path(), &out, &["--junit", junit.to_str().unwrap()]);
        wait_for_requests(&server, k, &mut child);
        std::thread::sleep(Duration::from_millis(delay_ms));
        signal(&child, libc::SIGINT);
        let (status, stdout, stderr) = wait_exit(child);
        let all = format!(
            "instant {:?}\nstatus {status:?}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
            (stall, k, delay_ms)
        );
        let r = report(&out);
        let j = job(&r, "sig::one");
        if j["status"] == "pass" {
            // The whole count ran before the signal was seen (a fast server): a true pass.
            assert!(!stall, "{all}");
            assert_eq!(j["sweep"]["points"][0]["units"], 16, "{all}");
            continue;
        }
        assert_eq!(status.code(), Some(100), "{all}");
        assert_eq!(j["status"], "cancelled", "{all}");
        let p = &j["sweep"]["points"][0];
        let units = p["units"].as_u64().unwrap();
        let not_started = p["units_not_started"].as_u64().unwrap();
        assert_eq!(units + not_started, 16, "{p}\n{all}");
        if stall {
            assert_eq!(units as usize, k, "{p}\n{all}");
        }
        assert!(
            j["notes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|n| n.as_str().unwrap().starts_with(
                    "cancelled (Ctrl-C / SIGTERM): 0 of 1 sweep points ran to their end"
                )),
            "{}\n{all}",
            j["notes"]
        );
        assert_eq!(r["summary"]["cancelled"], 1, "{all}");
        assert!(!stdout.contains("PASS ["), "{all}");
        let xml = std::fs::read_to_string(&junit).unwrap();
        assert!(xml.contains(r#"type="cancelled""#), "{xml}\n{all}");
    }
}
