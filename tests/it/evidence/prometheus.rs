//! A real Prometheus server (Debian's `prometheus`) on loopback scrapes the simulator every
//! 100 ms while the product runs a scripted trajectory against it with `[telemetry]
//! prometheus = {…}` and its own direct `/metrics` scrape. The run's Prometheus timeline
//! must agree with the direct scrape of the same run within one sample, and so must the
//! per-step counter deltas.
//!
//! The Prometheus binary: `$INFERSCOPE_PROMETHEUS`, else `prometheus` on `PATH`. Without it
//! the test fails when `INFERSCOPE_REQUIRE_PROMETHEUS=1` (set by `.ci/run`) or `CI=true`,
//! and prints a notice and passes otherwise.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use inferscope_bench::attribution::{StepMarker, TrajectoryMetrics};
use inferscope_bench::run_dir::read_step_markers;
use inferscope_bench::telemetry::{CounterId, MetricsSample, TelemetryRun};

use super::{bin, repo, text};

/// Kills (by its own handle) and reaps a child on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn prometheus_bin() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("INFERSCOPE_PROMETHEUS") {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("prometheus"))
        .find(|p| p.is_file())
}

/// The binary, or `None` after a notice (a failure when Prometheus is required).
fn prometheus_or_skip(test: &str) -> Option<PathBuf> {
    match prometheus_bin() {
        Some(p) => Some(p),
        None if std::env::var("INFERSCOPE_REQUIRE_PROMETHEUS").is_ok_and(|v| v == "1")
            || std::env::var("CI").is_ok_and(|v| v == "true") =>
        {
            panic!(
                "{test}: Prometheus not found (install Debian's `prometheus`; .ci/run does) \
                 and INFERSCOPE_REQUIRE_PROMETHEUS=1 or CI=true"
            )
        }
        None => {
            eprintln!(
                "NOTICE: {test} skipped: no `prometheus` on PATH and INFERSCOPE_PROMETHEUS unset \
                 (apt-get install prometheus); set INFERSCOPE_REQUIRE_PROMETHEUS=1 to fail instead"
            );
            None
        }
    }
}

/// A plain HTTP/1.0 GET on loopback: the body on 200, else `None`.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    let (head, body) = resp.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.1 200")
        .then(|| body.to_string())
        .or_else(|| head.starts_with("HTTP/1.0 200").then(|| body.to_string()))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the simulator on a kernel-chosen port; returns it and its port.
fn start_sim() -> (Proc, u16) {
    let mut child = Command::new(bin())
        .args([
            "sim",
            "--port",
            "0",
            "--seed",
            "1",
            "--ttft-ms",
            "120",
            "--itl-ms",
            "8",
            "--itl-jitter-ms",
            "0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the simulator");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .split("http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in the simulator's first line {line:?}"));
    (Proc(child), port)
}

/// Starts Prometheus scraping `target_port` every 100 ms, storage in `dir`; waits until it
/// holds a sample of the simulator's counters.
fn start_prometheus(prom: &Path, dir: &Path, target_port: u16) -> (Proc, u16) {
    let cfg = dir.join("prometheus.yml");
    std::fs::write(
        &cfg,
        format!(
            "global:\n  scrape_interval: 100ms\n  scrape_timeout: 90ms\nscrape_configs:\n  - job_name: sim\n    static_configs:\n      - targets: ['127.0.0.1:{target_port}']\n"
        ),
    )
    .unwrap();
    for _attempt in 0..3 {
        let port = free_port();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new(prom)
            .arg(format!("--config.file={}", cfg.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let mut p = Proc(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = p.0.try_wait() {
                break; // exited (port taken?): try another port
            }
            if let Some(body) = http_get(port, "/api/v1/query?query=vllm:prompt_tokens_total")
                && body.contains("\"value\"")
            {
                return (p, port);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = p.0.kill();
    }
    panic!(
        "Prometheus did not start scraping; log:\n{}",
        std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
    );
}

const COUNTERS: [CounterId; 4] = CounterId::ALL;

fn value(s: &MetricsSample, c: CounterId) -> Option<u64> {
    s.counters.get(c)
}

/// The per-step counter deltas of a join, by step id.
fn deltas(m: &TrajectoryMetrics) -> Vec<(u64, [Option<u64>; 4])> {
    m.steps
        .iter()
        .map(|s| {
            (
                s.step_id,
                [
                    s.prompt_tokens_delta,
                    s.generation_tokens_delta,
                    s.cache_queries_delta,
                    s.cache_hits_delta,
                ],
            )
        })
        .collect()
}

/// What the direct scrape bounds a counter to at instant `t` (ns): at least the last
/// direct sample whose response was complete 5 ms or more before `t`, at most the first one
/// whose request was sent 5 ms or more after `t`. Prometheus stamps a scrape when it starts
/// it, in whole milliseconds of the wall clock, mapped onto the run clock through the
/// reference instant: the same 5 ms margin covers that mapping on both sides.
fn direct_bounds(direct: &[MetricsSample], c: CounterId, t: u64) -> (Option<u64>, Option<u64>) {
    const MARGIN_NS: u64 = 5_000_000;
    let lo = direct
        .iter()
        .rev()
        .find(|d| d.elapsed_ns + MARGIN_NS <= t)
        .and_then(|d| value(d, c));
    let hi = direct
        .iter()
        .find(|d| d.request_sent_ns >= t + MARGIN_NS)
        .and_then(|d| value(d, c));
    (lo, hi)
}

#[test]
fn prometheus_source_matches_the_direct_scrape_within_one_sample() {
    let Some(prom_bin) = prometheus_or_skip("prometheus_source_matches_the_direct_scrape") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (_sim, sim_port) = start_sim();
    let (_prom, prom_port) = start_prometheus(&prom_bin, dir.path(), sim_port);

    let suite = dir.path().join("prom.toml");
    std::fs::write(
        &suite,
        format!(
            r#"name = "prom"
endpoint = "http://127.0.0.1:{sim_port}/v1"
model = "inferscope-sim"
engine = "sim"
seed = 3
fixtures_dir = "{fixtures}"

[telemetry]
metrics_period_ms = 100
gpu = "off"
prometheus = {{ url = "http://127.0.0.1:{prom_port}", selector = '{{job="sim"}}', wait_s = 10 }}

[[tools]]
name = "search"
description = "Search the repository"
parameters = {{ type = "object", properties = {{ q = {{ type = "string" }} }}, required = ["q"] }}
response_file = "tools/search_results.json"
latency_ms = 250

[[jobs]]
name = "traj"
kind = "agentic"
mode = "scripted"
system = "You are a careful assistant."
task = "Find what the repository says about caching."
tools = ["search"]
max_tokens = 30
[[jobs.script]]
tool = "search"
arguments = {{ q = "cache" }}
[[jobs.script]]
tool = "search"
arguments = {{ q = "prefix" }}
[[jobs.script]]
tool = "search"
arguments = {{ q = "ttft" }}
"#,
            fixtures = repo().join("fixtures").display()
        ),
    )
    .unwrap();
    let out = dir.path().join("run");
    let o = Command::new(bin())
        .args([
            "run",
            suite.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    let t = TelemetryRun::read_samples(&out).unwrap();
    let direct_tl = t.metrics.clone().expect("direct scrape configured");
    let prom_tl = t.prometheus.clone().expect("prometheus configured");
    assert!(
        matches!(
            prom_tl.status,
            inferscope_bench::telemetry::SourceStatus::Ok
        ),
        "{:?} {:?}",
        prom_tl.status,
        prom_tl.notes
    );
    let info = prom_tl.prometheus.as_ref().unwrap();
    assert_eq!(
        info.timestamps,
        inferscope_bench::telemetry::prometheus::TimestampBasis::Source
    );
    assert!(
        info.series
            .iter()
            .any(|s| s.name == "vllm:prompt_tokens_total")
    );
    assert!(info.queries.iter().any(|q| q.starts_with("timestamp(")));
    // Prometheus scraped every 100 ms: about one stored sample per 100 ms of run.
    let run_ms = (t.stopped_elapsed_ns - t.started_elapsed_ns) / 1_000_000;
    assert!(
        prom_tl.samples.len() as u64 >= run_ms / 200,
        "{} Prometheus samples over {run_ms} ms",
        prom_tl.samples.len()
    );
    // The report carries the Prometheus timeline beside the direct one.
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    assert_eq!(report["telemetry"]["prometheus"]["status"]["state"], "ok");

    // 1. Every Prometheus sample agrees with the direct scrape of the same run within one
    //    direct sample on either side of its own source timestamp.
    let direct = &direct_tl.samples;
    let mut checked = 0;
    for p in &prom_tl.samples {
        for c in COUNTERS {
            let Some(v) = value(p, c) else { continue };
            let (lo, hi) = direct_bounds(direct, c, p.elapsed_ns);
            if let Some(lo) = lo {
                assert!(
                    v >= lo,
                    "{c:?} at {} ns: Prometheus {v} < direct {lo}",
                    p.elapsed_ns
                );
                checked += 1;
            }
            if let Some(hi) = hi {
                assert!(
                    v <= hi,
                    "{c:?} at {} ns: Prometheus {v} > direct {hi}",
                    p.elapsed_ns
                );
            }
        }
    }
    assert!(
        checked >= 8,
        "only {checked} Prometheus values could be compared"
    );

    // 2. Per step: the run's join (Prometheus counters) against the direct scrape's join
    //    of the same steps, with the bound derived from the samples each join used.
    let markers: Vec<StepMarker> = read_step_markers(&out.join("steps.jsonl")).unwrap().markers;
    let anchor = Some(t.reference_instant_unix_ns);
    let prom_join = inferscope_bench::offline::join(&t, anchor, &markers);
    let mut direct_only = t.clone();
    direct_only.prometheus = None;
    let direct_join = inferscope_bench::offline::join(&direct_only, anchor, &markers);
    let pm = prom_join.trajectories[0].metrics().expect("attributed");
    let dm = direct_join.trajectories[0].metrics().expect("attributed");
    let (pd, dd) = (deltas(pm), deltas(dm));
    assert_eq!(pd.len(), markers.len());
    // The report's own attribution (each step's `attribution`) is the Prometheus one.
    let rep_steps = report["jobs"][0]["trajectories"][0]["steps"]
        .as_array()
        .unwrap();
    assert_eq!(rep_steps.len(), pd.len());
    for (s, (id, d)) in rep_steps.iter().zip(&pd) {
        assert_eq!(s["step_id"].as_u64(), Some(*id));
        assert_eq!(
            s["attribution"]["prompt_tokens_delta"].as_u64(),
            d[0],
            "step {id}"
        );
    }
    let ps = &prom_tl.samples;
    let at_or_before = |t: u64| ps.iter().rev().find(|s| s.elapsed_ns <= t);
    let mut table =
        vec!["step kind      counter               prometheus  direct  bound".to_string()];
    let mut moved = 0;
    for (k, m) in markers.iter().enumerate() {
        let s = m.t_start_unix_ns - t.reference_instant_unix_ns;
        let e = m.t_end_unix_ns - t.reference_instant_unix_ns;
        let (Some(base), Some(end)) = (at_or_before(s), at_or_before(e)) else {
            continue;
        };
        for (ci, c) in [
            CounterId::PromptTokens,
            CounterId::GenerationTokens,
            CounterId::PrefixCacheQueries,
            CounterId::PrefixCacheHits,
        ]
        .into_iter()
        .enumerate()
        {
            let got = pd[k].1[ci];
            // The join's own rule on the Prometheus samples.
            let expect = (end.elapsed_ns > base.elapsed_ns)
                .then(|| value(end, c).zip(value(base, c)).map(|(a, b)| a - b))
                .flatten();
            assert_eq!(got, expect, "step {} {c:?}: join vs its samples", m.step_id);
            let Some(got) = got else { continue };
            moved += u64::from(got > 0);
            // Within one direct sample at each end.
            let (end_lo, end_hi) = direct_bounds(direct, c, end.elapsed_ns);
            let (base_lo, base_hi) = direct_bounds(direct, c, base.elapsed_ns);
            let lo = end_lo
                .zip(base_hi)
                .map(|(a, b)| a.saturating_sub(b))
                .unwrap_or(0);
            let hi = end_hi.zip(base_lo).map(|(a, b)| a - b);
            table.push(format!(
                "{:>4} {:<9} {:<20} {:>10}  {:>6}  [{lo}, {}]",
                m.step_id,
                m.kind.label(),
                c.name(),
                got,
                dd[k].1[ci].map_or("null".into(), |v| v.to_string()),
                hi.map_or("∞".into(), |v| v.to_string())
            ));
            assert!(
                got >= lo && hi.is_none_or(|h| got <= h),
                "step {} {c:?}: Prometheus delta {got} outside [{lo}, {hi:?}] from the direct \
                 scrape\n{}",
                m.step_id,
                table.join("\n")
            );
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(
        moved >= 4,
        "too few moving step deltas to compare:\n{}",
        table.join("\n")
    );

    // 3. A saved query_range answer of the same run as offline input: every evaluation's
    //    value is the live timeline's newest stored sample at or before it (exactly).
    // (The evaluations must cover the last step's end: up to 300 ms past the run.)
    let (start_ms, end_ms) = (
        (t.reference_instant_unix_ns + t.started_elapsed_ns) / 1_000_000,
        (t.reference_instant_unix_ns + t.stopped_elapsed_ns) / 1_000_000 + 300,
    );
    let q = r#"{__name__=~"vllm:(prompt_tokens|generation_tokens|prefix_cache_queries|prefix_cache_hits)_total",job="sim"}"#;
    let body = http_get(
        prom_port,
        &format!(
            "/api/v1/query_range?query={}&start={}.{:03}&end={}.{:03}&step=0.1",
            percent(q),
            start_ms / 1000,
            start_ms % 1000,
            end_ms / 1000,
            end_ms % 1000
        ),
    )
    .expect("query_range answer");
    let saved = dir.path().join("range.json");
    std::fs::write(&saved, &body).unwrap();
    let (src, anchor_off, notes) = inferscope_bench::offline::load(
        &inferscope_bench::offline::OfflineSource::PrometheusRange {
            files: vec![saved.clone()],
            profile: inferscope_bench::telemetry::EngineProfile::Auto,
            model: Some("inferscope-sim".into()),
        },
    )
    .unwrap();
    assert!(
        notes.iter().any(|n| n.contains("evaluation times")),
        "{notes:?}"
    );
    let off = src.prometheus.as_ref().unwrap();
    assert!(
        off.samples.len() >= 5,
        "{} saved samples",
        off.samples.len()
    );
    let anchor_off = anchor_off.unwrap();
    // Prometheus answers an evaluation with the newest scrape at or before it (its lookback
    // reaches minutes back), while the live source stored only the scrapes from one step
    // before the run's start: an evaluation before the first live sample may carry an older
    // scrape that the live timeline does not hold, so it is not comparable. Every later
    // evaluation must match exactly (an evaluation is skipped only when it precedes every
    // live sample).
    let mut compared = 0usize;
    for s in &off.samples {
        let unix = anchor_off + s.elapsed_ns;
        let Some(live) = ps
            .iter()
            .rev()
            .find(|p| t.reference_instant_unix_ns + p.elapsed_ns <= unix)
        else {
            continue;
        };
        assert_eq!(s.counters, live.counters, "evaluation at {unix} unix ns");
        compared += 1;
    }
    assert!(
        compared >= 5,
        "{compared} of {} saved evaluations had a live sample at or before them",
        off.samples.len()
    );
    // …and the CLI joins it with the run's step markers.
    let (v, stdout) = super::offline_join(
        &[
            "--prometheus-range",
            saved.to_str().unwrap(),
            "--engine",
            "sim",
            "--model",
            "inferscope-sim",
        ],
        &out.join("steps.jsonl"),
        dir.path(),
    );
    assert!(stdout.contains("evaluation times"), "{stdout}");
    assert_eq!(super::steps_of(&v).len(), markers.len(), "{v:#}");
}

/// Percent-encodes a query value.
fn percent(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A saved `query_range` answer (hand-made, in Prometheus' shape: two instances of vLLM,
/// evaluated every 200 ms) joined offline: per step, the sums over instances, by hand.
#[test]
fn saved_query_range_answer_joins_with_hand_computed_deltas() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = 1_760_000_000u64; // s
    // Evaluations at t0 + 0, .2, .4, .6, .8, 1.0 s.
    let series = |inst: &str, name: &str, vals: [u64; 6]| {
        let values: Vec<String> = vals
            .iter()
            .enumerate()
            .map(|(k, v)| format!("[{}.{}, \"{v}\"]", t0, k * 2))
            .collect();
        let values = values
            .join(",")
            .replace(&format!("{t0}.10"), &format!("{}.0", t0 + 1));
        format!(
            r#"{{"metric":{{"__name__":"{name}","instance":"{inst}","job":"vllm","model_name":"m"}},"values":[{values}]}}"#
        )
    };
    let answer = format!(
        r#"{{"status":"success","data":{{"resultType":"matrix","result":[{},{},{},{},{}]}}}}"#,
        series(
            "a",
            "vllm:prompt_tokens_total",
            [0, 100, 100, 300, 300, 300]
        ),
        series("b", "vllm:prompt_tokens_total", [50, 50, 80, 80, 80, 200]),
        series(
            "a",
            "vllm:prefix_cache_hits_total",
            [0, 0, 0, 150, 150, 150]
        ),
        series(
            "a",
            "vllm:prefix_cache_queries_total",
            [0, 100, 100, 300, 300, 300]
        ),
        series("a", "vllm:some_other_counter_total", [1, 2, 3, 4, 5, 6]),
    );
    let saved = dir.path().join("range.json");
    std::fs::write(&saved, answer).unwrap();
    let a = t0 * 1_000_000_000;
    let ms = 1_000_000u64;
    let steps = dir.path().join("steps.jsonl");
    // 1 llm [100, 500] ms: baseline eval 0 (150) → end eval 400 (180): prompt 30… with b;
    //   queries 0 → 100, hits 0 → 0.
    // 2 tool [500, 550]: baseline 400 → end 400: null.
    // 3 llm [550, 1000]: baseline 400 (180) → end 1000 (500): prompt 320; hits 150;
    //   queries 200. Generation tokens were never in the answer: null.
    super::write_steps(
        &steps,
        &[
            (1, "llm_call", a + 100 * ms, a + 500 * ms),
            (2, "tool", a + 500 * ms, a + 550 * ms),
            (3, "llm_call", a + 550 * ms, a + 1000 * ms),
        ],
    );
    let (v, stdout) = super::offline_join(
        &[
            "--prometheus-range",
            saved.to_str().unwrap(),
            "--model",
            "m",
        ],
        &steps,
        dir.path(),
    );
    let got: Vec<[serde_json::Value; 4]> = super::steps_of(&v)
        .iter()
        .map(|s| {
            [
                s["prompt_tokens_delta"].clone(),
                s["cache_queries_delta"].clone(),
                s["cache_hits_delta"].clone(),
                s["generation_tokens_delta"].clone(),
            ]
        })
        .collect();
    let n = serde_json::Value::Null;
    assert_eq!(
        got,
        vec![
            [130.into(), 100.into(), 0.into(), n.clone()],
            [n.clone(), n.clone(), n.clone(), n.clone()],
            [320.into(), 200.into(), 150.into(), n.clone()],
        ],
        "{v:#}"
    );
    assert!(stdout.contains("profile vllm"), "{stdout}");
    assert!(stdout.contains("vllm:some_other_counter_total"), "{stdout}");

    // A series without __name__ (a function's answer) is refused, naming the file.
    std::fs::write(
        &saved,
        r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"job":"v"},"values":[[1,"1"]]}]}}"#,
    )
    .unwrap();
    let o = super::run(&[
        "trajectory",
        "--prometheus-range",
        saved.to_str().unwrap(),
        "--steps",
        steps.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("range.json") && err.contains("__name__"),
        "{err}"
    );
}
