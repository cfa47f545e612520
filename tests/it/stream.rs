//! Streamed reporting: each job's status line is written when that job
//! ends, before the next job sends its first request; and the job lines of
//! `--message-format json` are exactly the jobs of `report.json`.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use serde_json::Value;
use support::{Hostile, Received, Reply, command, report, write};

/// How long job 2's first request is held waiting for job 1's line: a liveness bound (the
/// old code printed nothing until the run ended, so the line never came while held), not a
/// timing assertion.
const HOLD_LIMIT: Duration = Duration::from_secs(60);

/// A one-shot latch the test sets when it has read job 1's status line.
#[derive(Default)]
struct Latch {
    set: Mutex<bool>,
    cv: Condvar,
}

impl Latch {
    fn set(&self) {
        *self.set.lock().unwrap() = true;
        self.cv.notify_all();
    }

    /// Waits until set or `limit`; whether it was set.
    fn wait(&self, limit: Duration) -> bool {
        let g = self.set.lock().unwrap();
        let (g, _) = self.cv.wait_timeout_while(g, limit, |s| !*s).unwrap();
        *g
    }
}

fn two_job_suite(dir: &Path, url: &str, telemetry: &str) -> String {
    // Job 2's requests are told apart by their max_tokens (17).
    let s = format!(
        "name = \"s\"\nendpoint = \"{url}\"\nmodel = \"m\"\n\
         [telemetry]\nmetrics = false\ngpu = \"off\"\n{telemetry}\n\
         [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [8]\nmax_tokens = 16\n\
         [[jobs]]\nname = \"two\"\nkind = \"context\"\nsizes = [8]\nmax_tokens = 17\n"
    );
    write(dir, "s.toml", &s).display().to_string()
}

/// Runs `suite` with stdout piped (no TTY), calling `on_line` with each line as the child
/// writes it; the exit code and every line.
fn run_reading_lines(
    cwd: &Path,
    suite: &str,
    out: &Path,
    mut on_line: impl FnMut(&str),
) -> (Option<i32>, Vec<String>) {
    let mut child = command(cwd)
        .args(["run", suite, "--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        on_line(&line);
        lines.push(line);
    }
    (child.wait().unwrap().code(), lines)
}

/// Piped stdout (no TTY): job 1's `PASS` line is on the child's stdout while job 2's first
/// request is held unanswered at the server — the server holds it until the test has read
/// that line, so under the old behaviour (every line after the run) it would wait out
/// [`HOLD_LIMIT`] and record that the line never came.
#[test]
fn a_job_line_is_written_before_the_next_job_reaches_the_server() {
    let line_read = Arc::new(Latch::default());
    let job2_arrivals = Arc::new(AtomicUsize::new(0));
    let line_came_while_held = Arc::new(AtomicBool::new(false));
    let (latch, arrivals, came) = (
        line_read.clone(),
        job2_arrivals.clone(),
        line_came_while_held.clone(),
    );
    let server = Hostile::start("m", move |r: &Received| {
        if r.body.contains("\"max_tokens\":17") && arrivals.fetch_add(1, Ordering::SeqCst) == 0 {
            came.store(latch.wait(HOLD_LIMIT), Ordering::SeqCst);
        }
        Reply::Ok("a short answer".into())
    });
    let cwd = tempfile::tempdir().unwrap();
    let suite = two_job_suite(cwd.path(), &server.base_url(), "");
    let out = cwd.path().join("run");
    let mut arrivals_when_line_read = None;
    let (code, lines) = run_reading_lines(cwd.path(), &suite, &out, |line| {
        if line.contains("PASS") && line.contains("s::one") && arrivals_when_line_read.is_none() {
            // Job 2 may have sent its first request by now (it is then held), never more.
            arrivals_when_line_read = Some(job2_arrivals.load(Ordering::SeqCst));
            line_read.set();
        }
    });
    let console = lines.join("\n");
    assert_eq!(code, Some(0), "{console}");
    assert!(
        arrivals_when_line_read.is_some_and(|n| n <= 1),
        "job 1's line was read: {arrivals_when_line_read:?}\n{console}"
    );
    assert!(
        line_came_while_held.load(Ordering::SeqCst),
        "job 1's PASS line was not on stdout while job 2's first request waited\n{console}"
    );
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} line\n{console}"))
    };
    assert!(at("s::one") < at("s::two"), "{console}");
    assert!(at("s::two") < at("Summary"), "{console}");
    assert_eq!(job2_arrivals.load(Ordering::SeqCst), 1, "{console}");
}

/// The one run that is not streamed: engine counters from a Prometheus server are read
/// only after the measured window, so no job's figures are final when it ends. Job 2's
/// first request is held until the test reads job 1's line (or 3 s pass): a streamed line
/// would release it, so job 1's line must come only after that request was answered.
#[test]
fn with_a_prometheus_counter_source_job_lines_wait_for_the_run_end() {
    let line_read = Arc::new(Latch::default());
    let job2_answered = Arc::new(AtomicBool::new(false));
    let (read, answered) = (line_read.clone(), job2_answered.clone());
    let server = Hostile::start("m", move |r: &Received| {
        if r.body.contains("\"max_tokens\":17") {
            read.wait(Duration::from_secs(3));
            answered.store(true, Ordering::SeqCst);
        }
        Reply::Ok("a short answer".into())
    });
    let cwd = tempfile::tempdir().unwrap();
    let suite = two_job_suite(
        cwd.path(),
        &server.base_url(),
        "prometheus = { url = \"http://127.0.0.1:9\", selector = '{job=\"x\"}', wait_s = 0 }",
    );
    let out = cwd.path().join("run");
    let mut answered_when_line_read = None;
    let (code, lines) = run_reading_lines(cwd.path(), &suite, &out, |line| {
        if line.contains("s::one") && answered_when_line_read.is_none() {
            answered_when_line_read = Some(job2_answered.load(Ordering::SeqCst));
            line_read.set();
        }
    });
    let console = lines.join("\n");
    assert_eq!(code, Some(0), "{console}");
    assert_eq!(
        answered_when_line_read,
        Some(true),
        "job 1's line was printed before job 2 had its answer\n{console}"
    );
    assert_eq!(report(&out)["jobs"][0]["status"], "pass", "{console}");
}

/// The streamed job objects of `--message-format json` are exactly `report.json`'s jobs
/// (same objects, same order), for a suite of several jobs with energy gates on the
/// simulator's power source: nothing a job reports changes after its line.
#[test]
fn json_job_lines_equal_the_jobs_of_report_json() {
    let cwd = tempfile::tempdir().unwrap();
    let suite = write(
        cwd.path(),
        "e.toml",
        "name = \"e\"\nseed = 3\n\
         [telemetry]\nsample_period_ms = 10\nmetrics_period_ms = 50\n\
         [gates]\nmin_tokens_per_joule = 0.0001\nmax_energy_per_trajectory_j = 100000.0\n\
         [[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [64, 256]\nrepeat = 2\nmax_tokens = 8\n\
         [[jobs]]\nname = \"b\"\nkind = \"context\"\nsizes = [128]\nmax_tokens = 16\n\
         [jobs.gates]\nmin_tokens_per_joule = 1000000.0\n\
         [[jobs]]\nname = \"c\"\nkind = \"context\"\nsizes = [32]\nrepeat = 3\nmax_tokens = 4\n",
    );
    let out = cwd.path().join("run");
    let o = support::run(
        cwd.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--message-format",
            "json",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    let (stdout, _) = support::text(&o);
    // Job b's tokens-per-joule gate cannot pass: the run fails, and says so.
    assert_eq!(o.status.code(), Some(100), "{}", support::describe(&o));
    let streamed: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["type"] == "job")
        .collect();
    let r: inferscope_bench::model::RunReport =
        serde_json::from_value(report(&out)).expect("report.json reads back");
    let from_report: Vec<Value> = r
        .jobs
        .iter()
        .map(|j| serde_json::from_str(&inferscope_bench::render::job_message(j)).unwrap())
        .collect();
    assert_eq!(streamed.len(), 3, "{stdout}");
    assert_eq!(streamed, from_report);
    let statuses: Vec<&str> = streamed
        .iter()
        .map(|j| j["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["pass", "fail", "pass"], "{stdout}");
    // The energy gates were judged on the simulator's power source, with its basis.
    for j in &streamed {
        let tpj = j["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["gate"] == "min_tokens_per_joule")
            .unwrap_or_else(|| panic!("no tokens-per-joule verdict: {j}"));
        assert_eq!(tpj["basis"], "simulated", "{tpj}");
        assert_eq!(j["energy"]["energy_j"]["basis"], "simulated", "{j}");
        assert!(j["energy"]["energy_j"]["value"].is_number(), "{j}");
    }
    // The run-level energy figure is the whole window's, not a job's.
    let a = r.attribution.as_ref().expect("a join ran");
    assert!(a.whole_run_energy_mj.is_some(), "{:?}", a);
}
