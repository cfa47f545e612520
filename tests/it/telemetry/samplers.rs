use inferscope_bench::clock::RunClock;
use inferscope_bench::telemetry::{
    CounterId, EnergyMethod, EngineProfile, GpuConfig, MetricsConfig, PowerBasis, PowerDeviceKind,
    ProbeReading, ProcConfig, SourceStatus, TelemetryConfig, TelemetryRun, clk_tck, probe_fn,
    start,
};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/metrics")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Serves `bodies[min(n, len-1)]` for the n-th request with `content_type`, on 127.0.0.1:0.
/// Returns the URL and the request counter; the server runs on its own thread until the test
/// process exits.
fn serve(bodies: Vec<String>, content_type: &'static str) -> (String, Arc<AtomicUsize>) {
    use crate::support::http::{StatusCode, response};
    let hits = Arc::new(AtomicUsize::new(0));
    let bodies = Arc::new(bodies);
    let (tx, rx) = std::sync::mpsc::channel();
    let h2 = hits.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            crate::support::http::serve(listener, move |req| {
                if req.uri.path() != "/metrics" {
                    return response(StatusCode::NOT_FOUND, "text/plain", "");
                }
                let n = h2.fetch_add(1, Ordering::SeqCst);
                let body = bodies[n.min(bodies.len() - 1)].clone();
                response(StatusCode::OK, content_type, body)
            })
            .await;
        });
    });
    let addr = rx.recv().unwrap();
    (format!("http://{addr}/metrics"), hits)
}

#[test]
fn proc_samples_the_current_process() {
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        period: Duration::from_millis(20),
        proc: Some(ProcConfig {
            pid: std::process::id(),
            include_descendants: false,
        }),
        ..Default::default()
    };
    let h = start(cfg, &clock);
    std::thread::sleep(Duration::from_millis(200));
    let run = h.stop();
    let p = run.proc.expect("proc configured");
    assert_eq!(p.status, SourceStatus::Ok);
    assert!(p.samples.len() > 1, "{} samples", p.samples.len());
    assert_eq!(p.sample_count, p.samples.len() as u64);
    assert!(p.samples.iter().all(|s| s.rss_bytes.unwrap() > 0));
    assert!(p.samples.iter().all(|s| s.threads.unwrap() >= 1));
    assert!(
        p.samples
            .iter()
            .all(|s| s.utime_jiffies.is_some() && s.stime_jiffies.is_some())
    );
    assert!(p.samples.iter().all(|s| s.process_count == 1));
    assert!(
        p.samples
            .windows(2)
            .all(|w| w[0].elapsed_ns < w[1].elapsed_ns)
    );
    assert!(p.samples[0].elapsed_ns >= run.started_elapsed_ns);
    assert!(p.samples.last().unwrap().elapsed_ns <= run.stopped_elapsed_ns);
    assert_eq!(p.clk_tck, clk_tck());
    assert!(clk_tck().unwrap() > 0);
    assert!(run.power.is_none() && run.metrics.is_none());
}

#[test]
fn proc_cap_drops_and_counts() {
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        period: Duration::from_millis(5),
        proc: Some(ProcConfig {
            pid: std::process::id(),
            include_descendants: false,
        }),
        max_samples_per_source: 2,
        ..Default::default()
    };
    let h = start(cfg, &clock);
    std::thread::sleep(Duration::from_millis(100));
    let p = h.stop().proc.unwrap();
    assert_eq!(p.samples.len(), 2);
    assert!(p.dropped >= 1);
}

#[test]
fn proc_vanished_pid_ends_the_source() {
    let mut child = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        period: Duration::from_millis(20),
        proc: Some(ProcConfig {
            pid: child.id(),
            include_descendants: false,
        }),
        ..Default::default()
    };
    let h = start(cfg, &clock);
    std::thread::sleep(Duration::from_millis(60));
    child.kill().unwrap();
    let _ = child.wait(); // reaps it: the pid vanishes
    std::thread::sleep(Duration::from_millis(150));
    let p = h.stop().proc.unwrap();
    match &p.status {
        SourceStatus::Ended {
            at_elapsed_ns,
            reason,
        } => {
            assert!(at_elapsed_ns.is_some());
            assert!(reason.contains(&child.id().to_string()), "{reason}");
        }
        other => panic!("expected ended, got {other:?}"),
    }
    assert!(!p.samples.is_empty());
}

#[test]
fn proc_absent_pid_is_unavailable() {
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        proc: Some(ProcConfig {
            pid: u32::MAX - 7,
            include_descendants: true,
        }),
        ..Default::default()
    };
    let p = start(cfg, &clock).stop().proc.unwrap();
    assert!(
        matches!(p.status, SourceStatus::Unavailable { .. }),
        "{:?}",
        p.status
    );
    assert!(p.samples.is_empty());
}

#[test]
fn proc_descendants_are_summed() {
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    // Its own process group, so the sleeps die with sh below; no inherited stdio, so no
    // orphan holds the test's output open (nextest reports that as a leak).
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg("sleep 2 & sleep 2 & wait")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    // Wait (generously) until sh has forked both children before sampling starts.
    let children = format!("/proc/{0}/task/{0}/children", child.id());
    for _ in 0..100 {
        match std::fs::read_to_string(&children) {
            Ok(t) if t.split_whitespace().count() >= 2 => break,
            Ok(_) => std::thread::sleep(Duration::from_millis(50)),
            Err(_) => {
                std::thread::sleep(Duration::from_millis(500));
                break;
            }
        }
    }
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        period: Duration::from_millis(20),
        proc: Some(ProcConfig {
            pid: child.id(),
            include_descendants: true,
        }),
        ..Default::default()
    };
    let h = start(cfg, &clock);
    std::thread::sleep(Duration::from_millis(100));
    let p = h.stop().proc.unwrap();
    // SAFETY: kill(2) on the child's own process group (pgid = its pid); no memory involved.
    unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
    let _ = child.wait();
    let max = p.samples.iter().map(|s| s.process_count).max().unwrap();
    assert!(max >= 3, "sh + 2 sleeps, saw {max}");
}

/// No NVIDIA library on this machine: `unavailable` with the reason, no zero samples. Where
/// NVML exists, every device is described and either sampled or has per-field reasons.
#[test]
fn gpu_without_nvml_is_unavailable_with_reason() {
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        gpu: Some(GpuConfig::default()),
        ..Default::default()
    };
    let run = start(cfg, &clock).stop();
    let power = run.power.expect("power configured");
    match power.gpu_status.clone().expect("gpu requested") {
        SourceStatus::Unavailable { reason } => {
            assert!(reason.contains("NVML"), "{reason}");
            eprintln!("gpu unavailable: {reason}");
            assert!(power.samples.is_empty());
            assert!(power.devices.is_empty());
        }
        SourceStatus::Ok => {
            assert!(!power.devices.is_empty());
            for d in &power.devices {
                let n = power.device_samples(d.device).count();
                assert!(n >= 1 || !d.unsupported.is_empty());
            }
        }
        other => panic!("unexpected {other:?}"),
    }
}

/// A simulated power probe (closure adapter) sampled on the power thread: basis `simulated`
/// everywhere, counter-based whole-run energy.
#[test]
fn probe_runs_the_energy_path_without_a_gpu() {
    let energy = Arc::new(AtomicU64::new(0));
    let e2 = energy.clone();
    let probe = probe_fn("sim", PowerBasis::Simulated, move || {
        let e = e2.fetch_add(7, Ordering::SeqCst) + 7;
        ProbeReading {
            power_mw: Some(140_000),
            energy_mj: Some(e),
        }
    });
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        period: Duration::from_millis(20),
        gpu: Some(GpuConfig::default()),
        probes: vec![probe],
        ..Default::default()
    };
    let h = start(cfg, &clock);
    std::thread::sleep(Duration::from_millis(150));
    let run = h.stop();
    let power = run.power.unwrap();
    let probe_dev = power
        .devices
        .iter()
        .find(|d| d.kind == PowerDeviceKind::Probe)
        .unwrap();
    assert_eq!(probe_dev.label, "sim");
    assert_eq!(probe_dev.power_basis, Some(PowerBasis::Simulated));
    let samples: Vec<_> = power.device_samples(probe_dev.device).collect();
    assert!(samples.len() >= 2);
    assert!(
        samples
            .iter()
            .all(|s| s.power_basis == Some(PowerBasis::Simulated))
    );
    assert!(samples.iter().all(|s| s.energy_epoch == Some(0)));
    let en = probe_dev.energy.as_ref().unwrap();
    assert_eq!(en.energy_method, Some(EnergyMethod::Counter));
    let first = samples.first().unwrap().energy_mj.unwrap();
    let last = samples.last().unwrap().energy_mj.unwrap();
    assert_eq!(en.energy_mj, Some(last - first));
}

/// Metrics scraped from an in-process server whose counters change between scrapes.
#[test]
fn metrics_scrape_tracks_changing_counters() {
    let (url, hits) = serve(
        vec![fixture("sim_scrape_0.prom"), fixture("sim_scrape_1.prom")],
        "text/plain; version=0.0.4; charset=utf-8",
    );
    let clock = RunClock::start();
    let mut mc = MetricsConfig::new(url.clone(), EngineProfile::Sim, Some("sim-model".into()));
    mc.period = Duration::from_millis(30);
    let cfg = TelemetryConfig {
        metrics: Some(mc),
        ..Default::default()
    };
    let h = start(cfg, &clock);
    // start() returns after the first scrape: the baseline precedes the window.
    assert!(hits.load(Ordering::SeqCst) >= 1);
    std::thread::sleep(Duration::from_millis(250));
    let run = h.stop();
    let m = run.metrics.unwrap();
    assert_eq!(m.status, SourceStatus::Ok);
    assert_eq!(m.profile, Some(EngineProfile::Sim));
    assert!(m.samples.len() >= 2, "{} samples", m.samples.len());
    assert_eq!(m.scrapes_failed, 0);
    let first = &m.samples[0];
    assert_eq!(first.counters.prompt_tokens, Some(100));
    assert_eq!(first.counters.prefix_cache_hits, Some(0));
    assert_eq!(first.gauges["requests_running"], Some(1.0));
    let last = m.samples.last().unwrap();
    assert_eq!(last.counters.prompt_tokens, Some(250));
    assert_eq!(last.counters.generation_tokens, Some(52));
    assert_eq!(last.counters.prefix_cache_queries, Some(250));
    assert_eq!(last.counters.prefix_cache_hits, Some(96));
    assert_eq!(last.gauges["kv_cache_usage"], Some(0.25));
    assert!(m.samples.iter().all(|s| s.request_sent_ns <= s.elapsed_ns));
    let inc = m.increase(CounterId::PrefixCacheHits);
    assert_eq!(inc.increase, Some(96));
    assert_eq!(inc.counter_resets, 0);
    assert_eq!(m.increase(CounterId::PromptTokens).increase, Some(150));
    assert!(m.counter_resets.values().all(|r| *r == 0));
}

/// OpenMetrics negotiated by Content-Type (C13 input B) through the live path, auto profile.
#[test]
fn metrics_openmetrics_content_type_auto_profile() {
    let (url, _) = serve(
        vec![fixture("c13_openmetrics_1_0_0.prom")],
        "application/openmetrics-text; version=1.0.0; charset=utf-8",
    );
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        metrics: Some(MetricsConfig::new(
            url,
            EngineProfile::Auto,
            Some("m".into()),
        )),
        ..Default::default()
    };
    let m = start(cfg, &clock).stop().metrics.unwrap();
    assert_eq!(m.profile, Some(EngineProfile::Vllm));
    assert_eq!(m.parse_errors, 0);
    let s = &m.samples[0];
    assert_eq!(s.counters.prefix_cache_queries, Some(4096));
    assert_eq!(s.counters.prefix_cache_hits, Some(1024));
    assert_eq!(s.counters.prompt_tokens, None);
}

/// Real vLLM 0.32 through the live path: served as
/// `text/plain; version=1.0.0`, read as the classic text format; the block size reaches the
/// timeline and the report's summary; the one engine's gauges keep its `engine="0"` label.
#[test]
fn metrics_vllm_0_32_live_path() {
    use inferscope_bench::telemetry::summary::metrics_summary;
    let (url, _) = serve(
        vec![fixture("vllm_0_32_cpu_b32_during_request.prom")],
        "text/plain; version=1.0.0; charset=utf-8",
    );
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        metrics: Some(MetricsConfig::new(
            url,
            EngineProfile::Auto,
            Some("smollm2".into()),
        )),
        ..Default::default()
    };
    let m = start(cfg, &clock).stop().metrics.unwrap();
    assert_eq!(m.profile, Some(EngineProfile::Vllm));
    assert_eq!(m.parse_errors, 0);
    assert_eq!(m.block_size, Some(32));
    let s = &m.samples[0];
    assert_eq!(s.counters.prompt_tokens, Some(22662));
    assert_eq!(s.counters.prefix_cache_queries, Some(22662));
    assert_eq!(s.counters.prefix_cache_hits, Some(8288));
    let sum = metrics_summary(&m);
    assert_eq!(sum.block_size, Some(32));
    assert_eq!(
        sum.mapping["block_size"],
        "vllm:cache_config_info{block_size}"
    );
    let kv = &sum.gauges["kv_cache_usage"];
    assert_eq!(kv.engines.keys().collect::<Vec<_>>(), vec!["engine=\"0\""]);
}

/// A scrape that fails is a counted gap, not a zero sample.
#[test]
fn metrics_failed_scrapes_are_gaps() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let clock = RunClock::start();
    let mut mc = MetricsConfig::new(
        format!("http://127.0.0.1:{port}/metrics"),
        EngineProfile::Vllm,
        None,
    );
    mc.period = Duration::from_millis(30);
    mc.timeout = Duration::from_millis(300);
    let cfg = TelemetryConfig {
        metrics: Some(mc),
        ..Default::default()
    };
    let h = start(cfg, &clock);
    std::thread::sleep(Duration::from_millis(100));
    let m = h.stop().metrics.unwrap();
    assert!(m.samples.is_empty());
    assert!(m.scrapes_failed >= 1);
    assert_eq!(m.gaps.len() as u64, m.scrapes_failed);
    assert!(
        m.gaps[0].reason.to_lowercase().contains("refused"),
        "{}",
        m.gaps[0].reason
    );
    assert!(matches!(m.status, SourceStatus::Unavailable { .. }));
}

#[test]
fn http_error_status_is_a_gap() {
    use crate::support::http::{StatusCode, response};
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(l.local_addr().unwrap()).unwrap();
            crate::support::http::serve(l, |_| {
                response(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "text/plain; charset=utf-8",
                    "busy",
                )
            })
            .await;
        });
    });
    let addr = rx.recv().unwrap();
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        metrics: Some(MetricsConfig::new(
            format!("http://{addr}/metrics"),
            EngineProfile::Vllm,
            None,
        )),
        ..Default::default()
    };
    let m = start(cfg, &clock).stop().metrics.unwrap();
    assert!(m.samples.is_empty());
    assert!(
        m.gaps.iter().all(|g| g.reason.contains("503")),
        "{:?}",
        m.gaps
    );
}

/// All sources together, written to `samples/` and read back; every file is strict JSON with
/// explicit nulls; non-finite gauges are null plus a flag (C17).
#[test]
fn write_and_read_samples_round_trip() {
    let (url, _) = serve(
        vec![
            fixture("sim_scrape_0.prom"),
            fixture("vllm_nonfinite_gauge.prom"),
        ],
        "text/plain; version=0.0.4",
    );
    let energy = Arc::new(AtomicU64::new(1_000));
    let e2 = energy.clone();
    let clock = RunClock::start();
    let mut mc = MetricsConfig::new(url, EngineProfile::Vllm, None);
    mc.period = Duration::from_millis(30);
    let cfg = TelemetryConfig {
        period: Duration::from_millis(25),
        proc: Some(ProcConfig {
            pid: std::process::id(),
            include_descendants: false,
        }),
        gpu: Some(GpuConfig::default()),
        probes: vec![probe_fn("sim", PowerBasis::Simulated, move || {
            ProbeReading {
                power_mw: Some(50_000),
                energy_mj: Some(e2.fetch_add(3, Ordering::SeqCst)),
            }
        })],
        metrics: Some(mc),
        ..Default::default()
    };
    let h = start(cfg, &clock);
    std::thread::sleep(Duration::from_millis(150));
    let run = h.stop();
    let dir = tempfile::tempdir().unwrap();
    let sdir = run.write_samples(dir.path()).unwrap();
    assert_eq!(sdir, dir.path().join("samples"));

    for f in ["proc.jsonl", "gpu.jsonl", "metrics.jsonl"] {
        let text = std::fs::read_to_string(sdir.join(f)).unwrap();
        assert!(!text.is_empty(), "{f} empty");
        for line in text.lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            assert!(v.get("elapsed_ns").and_then(|x| x.as_u64()).is_some());
        }
        assert!(!text.contains("NaN") && !text.contains("Infinity"));
    }
    let metrics_text = std::fs::read_to_string(sdir.join("metrics.jsonl")).unwrap();
    // Nulls are written, not skipped; the non-finite gauge is null and flagged.
    assert!(metrics_text.contains("\"kv_cache_usage\":null"));
    assert!(metrics_text.contains(
        "\"non_finite\":[\"generation_tokens\",\"requests_running\",\"kv_cache_usage\"]"
    ));
    assert!(metrics_text.contains("\"generation_tokens\":null"));
    let sources: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sdir.join("sources.json")).unwrap()).unwrap();
    assert_eq!(sources["schema"], "inferscope.samples.v1");
    assert_eq!(sources["proc"]["status"]["state"], "ok");
    assert!(sources["metrics"]["counter_resets"].is_object());
    assert!(
        sources["power"]["devices"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["label"] == "sim")
    );
    assert!(sources["power"].get("samples").is_none());

    // Reading back from the run dir or from samples/ itself gives the same run.
    let back = TelemetryRun::read_samples(dir.path()).unwrap();
    let back2 = TelemetryRun::read_samples(&sdir).unwrap();
    assert_eq!(back.proc, run.proc);
    assert_eq!(back.metrics, run.metrics);
    assert_eq!(
        back.power.as_ref().unwrap().samples,
        run.power.as_ref().unwrap().samples
    );
    assert_eq!(back2.proc, run.proc);
    assert_eq!(back.clock_domain_id, clock.clock_domain_id());
    assert_eq!(
        back.reference_instant_unix_ns,
        clock.reference_instant_unix_ns()
    );
    let pb = back.power.unwrap();
    let pr = run.power.unwrap();
    for (a, b) in pb.devices.iter().zip(&pr.devices) {
        assert_eq!(
            a.energy.as_ref().unwrap().energy_mj,
            b.energy.as_ref().unwrap().energy_mj
        );
        assert_eq!(a.status, b.status);
    }
}

#[test]
fn read_samples_reports_bad_lines_with_position() {
    let dir = tempfile::tempdir().unwrap();
    let run = TelemetryRun {
        clock_domain_id: "d".into(),
        reference_instant_unix_ns: 1,
        started_elapsed_ns: 0,
        stopped_elapsed_ns: 5,
        proc: None,
        power: None,
        metrics: None,
        prometheus: None,
    };
    let sdir = run.write_samples(dir.path()).unwrap();
    let back = TelemetryRun::read_samples(&sdir).unwrap();
    assert_eq!(back, run);
    std::fs::write(
        sdir.join("sources.json"),
        std::fs::read_to_string(sdir.join("sources.json"))
            .unwrap()
            .replace("\"proc\": null", "\"proc\": {\"status\":{\"state\":\"ok\"},\"pid\":1,\"include_descendants\":false,\"period_ns\":1,\"clk_tck\":100,\"sample_count\":1,\"dropped\":0,\"read_errors\":0,\"last_error\":null}"),
    )
    .unwrap();
    std::fs::write(sdir.join("proc.jsonl"), "{\"elapsed_ns\":1}\nnot json\n").unwrap();
    let err = TelemetryRun::read_samples(&sdir).unwrap_err().to_string();
    assert!(err.contains("proc.jsonl:1"), "{err}");
}

#[test]
fn power_basis_name_is_the_serde_name() {
    for b in [
        PowerBasis::Instant,
        PowerBasis::Averaged1s,
        PowerBasis::Simulated,
    ] {
        assert_eq!(serde_json::to_value(b).unwrap(), b.name());
    }
}

/// `snapshot` while sampling goes on (issue 14 item 1: a job is finalized when it ends):
/// it waits, bounded, for a sample at or after the instant asked for on every running
/// source; a source still short of it is listed with its newest sample's time (nothing is
/// extended over the gap); the snapshot is a prefix of what `stop` returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_waits_for_a_covering_sample_and_names_a_source_short_of_it() {
    let (url, _) = serve(
        vec![fixture("sim_scrape_0.prom"), fixture("sim_scrape_1.prom")],
        "text/plain; version=0.0.4; charset=utf-8",
    );
    let probe = probe_fn("sim", PowerBasis::Simulated, || ProbeReading {
        power_mw: Some(100_000),
        energy_mj: None,
    });
    let clock = RunClock::start();
    let mut mc = MetricsConfig::new(url, EngineProfile::Sim, Some("sim-model".into()));
    mc.period = Duration::from_millis(30);
    let cfg = TelemetryConfig {
        period: Duration::from_millis(10),
        probes: vec![probe],
        metrics: Some(mc),
        ..Default::default()
    };
    let h = start(cfg, &clock);
    assert!(
        h.streams(),
        "no Prometheus source: jobs can be finalized as they end"
    );
    assert!(h.snapshot_wait() >= Duration::from_millis(30));

    // An instant no sample can have reached yet, without waiting: both sources short of it.
    let far = clock.elapsed_ns() + 3_600_000_000_000;
    let s = h.snapshot(far, Duration::ZERO).await;
    let names: Vec<&str> = s.uncovered.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["sim", "metrics"], "{:?}", s.uncovered);
    let power = s.run.power.as_ref().unwrap();
    let newest = power.samples.iter().map(|p| p.elapsed_ns).max();
    assert_eq!(
        s.uncovered[0].1, newest,
        "the newest sample's time is named"
    );
    assert!(s.run.proc.is_none());

    // The instant now: the snapshot comes once both sources have sampled at or after it
    // (the bound is a liveness limit, not a timing claim).
    let now = clock.elapsed_ns();
    let s = h.snapshot(now, Duration::from_secs(30)).await;
    assert!(s.uncovered.is_empty(), "{:?}", s.uncovered);
    let power = s.run.power.clone().unwrap();
    assert!(power.samples.iter().any(|p| p.elapsed_ns >= now));
    let metrics = s.run.metrics.clone().unwrap();
    assert!(metrics.samples.iter().any(|m| m.elapsed_ns >= now));
    assert_eq!(power.sample_count, power.samples.len() as u64);
    assert!(s.run.stopped_elapsed_ns >= now);
    let sim = power.devices.iter().find(|d| d.label == "sim").unwrap();
    assert!(
        sim.energy.is_some(),
        "energy over the samples so far is computed"
    );

    // Sampling went on: what stop returns begins with what the snapshot held.
    let run = h.stop();
    let fin = run.power.unwrap();
    assert!(fin.samples.len() >= power.samples.len());
    assert_eq!(&fin.samples[..power.samples.len()], &power.samples[..]);
    let fin_m = run.metrics.unwrap();
    assert_eq!(
        &fin_m.samples[..metrics.samples.len()],
        &metrics.samples[..]
    );
}

/// A GPU source that cannot open (no NVML on the host) ends its thread at once; a job
/// finalized later must still read the GPU source's reason from its snapshot, not a
/// missing source ("no power source was configured").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_after_the_gpu_source_failed_to_open_keeps_its_reason() {
    let clock = RunClock::start();
    let cfg = TelemetryConfig {
        period: Duration::from_millis(10),
        gpu: Some(GpuConfig::default()),
        gpu_opener: Some(Box::new(|| Err("libnvidia-ml.so.1: not found".to_string()))),
        ..Default::default()
    };
    let h = start(cfg, &clock);
    // The power thread has nothing to sample and ends; wait until it has.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let s = h.snapshot(clock.elapsed_ns(), Duration::ZERO).await;
    let power = s
        .run
        .power
        .as_ref()
        .expect("the GPU source is in the snapshot");
    match &power.gpu_status {
        Some(SourceStatus::Unavailable { reason }) => {
            assert!(reason.contains("libnvidia-ml.so.1"), "{reason}")
        }
        other => panic!("GPU status {other:?}"),
    }
    let run = h.stop();
    assert_eq!(run.power.unwrap().gpu_status, power.gpu_status);
}
