// Load: a concurrency sweep against the built-in simulator, and Poisson
// arrivals faster than the server serves (field case C24), each against an in-process
// simulator (`sim::spawn`, started by the runner or by the test) on 127.0.0.1:0.

use crate::support;

use inferscope_bench::runner;
use inferscope_bench::sim::{SimConfig, spawn};
use support::{repo, report, run_suite};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_sweep_prints_the_curve_writes_it_and_says_apportioned() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = run_suite(&repo().join("suites/load.toml"), Some("load::fanout"), &out).await;
    let console = support::console(&o.report);
    assert_eq!(o.exit_status, 0, "{console}");

    // The curve, printed: one row per point.
    assert!(
        console.contains("load load::fanout · sweep over concurrency"),
        "{console}"
    );
    for c in [1, 4, 16] {
        let row = console
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("concurrency {c} ")))
            .unwrap_or_else(|| panic!("no curve row for concurrency {c}:\n{console}"));
        assert!(row.contains('%'), "goodput column: {row}");
    }

    // The curve, in report.json.
    let r = report(&out);
    let job = &r["jobs"][0];
    assert_eq!(job["id"], "load::fanout");
    let sweep = &job["sweep"];
    assert_eq!(sweep["variable"], "concurrency");
    assert_eq!(sweep["values"], serde_json::json!([1.0, 4.0, 16.0]));
    let points = sweep["points"].as_array().unwrap();
    assert_eq!(points.len(), 3);
    for (p, c) in points.iter().zip([1u64, 4, 16]) {
        assert_eq!(p["concurrency"], c);
        assert_eq!(p["achieved_concurrency"], c, "every slot filled: {p}");
        assert_eq!(p["units"], 16);
        // 16 trajectories × 2 LLM calls, 2 warm-up requests excluded.
        assert_eq!(p["warmup_requests"], 2);
        assert_eq!(p["stats"]["requests"], 30);
        for k in [
            "ttft_ms",
            "e2e_ms",
            "e2e_from_schedule_ms",
            "schedule_lag_ms",
        ] {
            assert!(p["stats"][k]["p99"].as_f64().is_some(), "{k}: {p}");
        }
        assert!(p["ttft_from_schedule_ms"]["p50"].as_f64().is_some());
        assert!(p["stats"]["throughput_rps"].as_f64().unwrap() > 0.0);
        let g = p["goodput"]["fraction"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&g), "{p}");
        assert_eq!(p["energy"]["basis"], "simulated");
        assert!(p["energy"]["energy_per_output_token_j"].as_f64().unwrap() > 0.0);
        // A pool at the point's concurrency was warmed before the
        // window, so no request opened a connection inside it.
        let conns = &p["connections"];
        assert_eq!(conns["warm_wanted"], c, "{conns}");
        assert!(conns["warm_opened"].as_u64().unwrap() <= c, "{conns}");
        assert_eq!(conns["warm_failed"], 0, "{conns}");
        assert_eq!(conns["connect_retransmits"], 0, "{conns}");
        assert_eq!(conns["warm_retransmits"], 0, "{conns}");
    }
    // A connection opened inside a window (a pooled one closed, or a request that came
    // before hyper handed its predecessor's connection back) is counted, and a request
    // that waited on it says how long: never more such requests than connections.
    let in_window: u64 = points
        .iter()
        .map(|p| p["connections"]["opened_in_window"].as_u64().unwrap())
        .sum();
    let lines = std::fs::read_to_string(out.join("requests.jsonl")).unwrap();
    let waited = lines.matches("\"cn\":").count() as u64;
    assert!(
        waited <= in_window,
        "{waited} requests waited on {in_window} connects"
    );
    let tput: Vec<f64> = points
        .iter()
        .map(|p| p["stats"]["throughput_rps"].as_f64().unwrap())
        .collect();
    assert!(
        tput[2] > tput[0] * 2.0,
        "16 in flight serve more per second than 1: {tput:?}"
    );
    assert!(job["load"]["client_max_connections"].as_u64().unwrap() >= 16);
    assert_eq!(job["load"]["warmup_requests"].as_array().unwrap().len(), 6);

    // The trajectory report: simulated at one in flight (the simulator's power model is
    // never `measured`), apportioned above.
    let groups = r["attribution"]["groups"].as_array().unwrap();
    let basis_of = |label: &str| {
        groups
            .iter()
            .find(|g| g["group"].as_str().unwrap().ends_with(label))
            .unwrap_or_else(|| panic!("no group {label}: {groups:?}"))["concurrency"]["energy_basis"]
            .clone()
    };
    assert_eq!(basis_of("concurrency 1"), "simulated");
    assert_eq!(basis_of("concurrency 4"), "apportioned");
    assert_eq!(basis_of("concurrency 16"), "apportioned");
    assert_eq!(
        r["attribution"]["concurrency"]["energy_basis"],
        "apportioned"
    );
    for t in job["trajectories"].as_array().unwrap() {
        let id = t["id"].as_str().unwrap();
        let want = if id.contains("#p0.") {
            "simulated"
        } else {
            "apportioned"
        };
        assert_eq!(t["attribution"]["energy_basis"], want, "{id}");
        assert_eq!(t["energy"]["basis"], want, "{id}");
    }
    for t in job["trajectories"].as_array().unwrap() {
        let concurrent = !t["id"].as_str().unwrap().contains("#p0.");
        for s in t["steps"].as_array().unwrap() {
            let b = s["energy"]["basis"].as_str();
            assert_ne!(
                b,
                Some("measured"),
                "the simulator's energy is never measured"
            );
            if concurrent {
                assert_eq!(b, Some("apportioned"), "{}", t["id"]);
            }
        }
    }
    // One definition of the job's energy figures: window energy over the points.
    let e = &job["energy"];
    assert_eq!(e["tokens_per_joule"]["basis"], "simulated", "{e}");
    assert_eq!(e["energy_per_trajectory_j"]["basis"], "apportioned", "{e}");
    let window_j: f64 = points
        .iter()
        .map(|p| p["energy"]["energy_mj"].as_f64().unwrap())
        .sum::<f64>()
        / 1000.0;
    assert!(
        (e["energy_j"]["value"].as_f64().unwrap() - window_j).abs() < 1e-9,
        "job energy is the points' window energy: {e}"
    );
    let tables = runner::report::trajectory_tables(&o.report).join("\n");
    assert!(tables.contains("energy basis apportioned"), "{tables}");
    assert!(
        tables.contains("per-step energy is apportioned, not measured"),
        "{tables}"
    );
    let notes = job["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("apportioned, not measured")),
        "{notes:?}"
    );
}

/// Field case C24 on the wire: Poisson arrivals at 60/s, one request in flight, a server
/// that takes ~45 ms per request (22/s). The client queue grows, so latency from the
/// scheduled send grows request after request while latency from the actual send does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c24_poisson_faster_than_service_latency_from_schedule_grows() {
    let sim = spawn(
        SimConfig {
            ttft_base_ms: 25,
            prefill_us_per_token: 0,
            itl_ms: 5,
            itl_jitter_ms: 0,
            ..SimConfig::default()
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let suite_path = tmp.path().join("c24.toml");
    std::fs::write(
        &suite_path,
        format!(
            "name = \"c24\"\nseed = 24\nendpoint = \"{}\"\nmodel = \"inferscope-sim\"\n\
             [[jobs]]\nname = \"open\"\nkind = \"context\"\nsizes = [16]\nmax_tokens = 4\n\
             rate = 60\narrival = \"poisson\"\nconcurrency = 1\ncount = 30\n",
            sim.base_url()
        ),
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = run_suite(&suite_path, None, &out).await;
    sim.shutdown().await;
    assert_eq!(o.exit_status, 0, "{}", support::console(&o.report));
    let r = report(&out);
    let job = &r["jobs"][0];

    // Per request, in schedule order.
    let mut reqs: Vec<(f64, f64, f64)> = job["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            let sched = q["scheduled_ns"].as_f64().unwrap();
            let send = q["send_ns"].as_f64().unwrap();
            let end = q["end_ns"].as_f64().unwrap();
            (sched, (send - sched) / 1e6, (end - send) / 1e6)
        })
        .collect();
    assert_eq!(reqs.len(), 30);
    reqs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mean = |v: &[(f64, f64, f64)], f: fn(&(f64, f64, f64)) -> f64| {
        v.iter().map(f).sum::<f64>() / v.len() as f64
    };
    let (first, last) = (&reqs[..10], &reqs[20..]);
    let lag_first = mean(first, |x| x.1);
    let lag_last = mean(last, |x| x.1);
    let send_first = mean(first, |x| x.2);
    let send_last = mean(last, |x| x.2);
    let sched_first = lag_first + send_first;
    let sched_last = lag_last + send_last;
    assert!(
        sched_last > sched_first + 200.0,
        "latency from schedule grows: first {sched_first:.1} ms, last {sched_last:.1} ms"
    );
    assert!(
        send_last < send_first * 2.0 + 30.0,
        "latency from send does not: first {send_first:.1} ms, last {send_last:.1} ms"
    );

    // The job statistics say the same: E2E from schedule far above E2E from send, and
    // most requests missed their schedule.
    let st = &job["stats"];
    let e2e = st["e2e_ms"]["p99"].as_f64().unwrap();
    let from_sched = st["e2e_from_schedule_ms"]["p99"].as_f64().unwrap();
    assert!(from_sched > 3.0 * e2e, "{from_sched} vs {e2e}");
    assert!(st["schedule_misses"].as_u64().unwrap() >= 20, "{st}");
    let p = &job["sweep"]["points"][0];
    assert_eq!(p["label"], "rate 60/s poisson, concurrency <= 1");
    assert_eq!(p["achieved_concurrency"], 1);
    assert!(
        p["ttft_from_schedule_ms"]["p99"].as_f64().unwrap()
            > 3.0 * p["stats"]["ttft_ms"]["p99"].as_f64().unwrap()
    );
}

/// Arrivals are seeded: the same suite seed schedules the same offsets run after run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_schedule_is_seeded_from_the_suite_seed() {
    let sim = spawn(SimConfig::zero_delay(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let suite_path = tmp.path().join("seeded.toml");
    std::fs::write(
        &suite_path,
        format!(
            "name = \"seeded\"\nseed = 9\nendpoint = \"{}\"\nmodel = \"inferscope-sim\"\n\
             [[jobs]]\nname = \"open\"\nkind = \"context\"\nsizes = [8]\nmax_tokens = 2\n\
             rate = 100\ncount = 12\n",
            sim.base_url()
        ),
    )
    .unwrap();
    let mut offsets = Vec::new();
    for i in 0..2 {
        let out = tmp.path().join(format!("run{i}"));
        let o = run_suite(&suite_path, None, &out).await;
        assert_eq!(o.exit_status, 0, "{}", support::console(&o.report));
        let r = report(&out);
        let mut sched: Vec<u64> = r["jobs"][0]["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| q["scheduled_ns"].as_u64().unwrap())
            .collect();
        sched.sort_unstable();
        let t0 = sched[0];
        offsets.push(sched.iter().map(|s| s - t0).collect::<Vec<_>>());
    }
    sim.shutdown().await;
    assert_eq!(offsets[0], offsets[1]);
    assert_eq!(offsets[0].len(), 12);
    assert!(
        offsets[0].windows(2).any(|w| w[1] - w[0] != offsets[0][1]),
        "not constant"
    );
}

/// With no source the step join reads (an endpoint of its own, GPU sampling
/// off, no `/metrics`), a load job keeps no unit's spans for the join: only each point's
/// first trajectory is joined, and the point still states the overlap its executor counted
/// (8 in flight), never the single kept trajectory's "1 observed". The built-in simulator
/// would add its power model, which the join reads, so the test serves one itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_load_job_without_join_sources_keeps_no_spans_and_states_the_counted_overlap() {
    let sim = spawn(SimConfig::default(), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let suite = tmp.path().join("bare.toml");
    std::fs::write(
        &suite,
        format!(
            "name = \"bare\"\nendpoint = \"{}\"\nmodel = \"inferscope-sim\"\n\
             [telemetry]\ngpu = \"off\"\nmetrics = false\n\
             [[jobs]]\nname = \"ctx\"\nkind = \"context\"\nsizes = [16]\ncount = 40\n\
             concurrency = 8\nmax_tokens = 4\n",
            sim.base_url()
        ),
    )
    .unwrap();
    let out = tmp.path().join("run");
    let o = run_suite(&suite, None, &out).await;
    sim.shutdown().await;
    let console = support::console(&o.report);
    assert_eq!(o.exit_status, 0, "{console}");
    let r = report(&out);
    let groups = r["attribution"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let g = &groups[0];
    assert_eq!(g["trajectories_joined"], 1, "only the kept trajectory: {g}");
    assert_eq!(g["observed_max_trajectories_in_flight"], 8, "{g}");
    assert!(!console.contains("(1 observed)"), "{console}");
    assert!(console.contains("8 trajectories in flight"), "{console}");
}

/// Rates are over the measured window (found by the side-by-side with `vllm bench serve`,
/// whose throughput left warm-up out): at one unit in flight the warm-up requests run
/// alone, so the point's window starts at its first measured request's send, and output
/// tokens/s is the measured tokens over it.
#[test]
fn a_points_rates_are_over_its_measured_window_not_its_warm_up() {
    let cwd = tempfile::tempdir().unwrap();
    support::write(
        cwd.path(),
        "w.toml",
        "name = \"w\"\n[[jobs]]\nname = \"c1\"\nkind = \"context\"\nsizes = [64]\n\
         count = 6\nwarmup = 2\nconcurrency = 1\nmax_tokens = 16\n",
    );
    let out = cwd.path().join("run");
    let o = support::run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", support::describe(&o));
    let rep = report(&out);
    let job = support::job(&rep, "w::c1");
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(out.join("requests.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &serde_json::Value| v.get("e").is_some())
        .collect();
    assert_eq!(lines.len(), 6);
    let send = |v: &serde_json::Value| v["s"].as_u64().unwrap();
    let end = |v: &serde_json::Value| send(v) + v["e"].as_u64().unwrap();
    let measured: Vec<_> = lines.iter().filter(|v| v.get("wu").is_none()).collect();
    assert_eq!(measured.len(), 4);
    let first_measured = measured.iter().map(|v| send(v)).min().unwrap();
    let first_any = lines.iter().map(send).min().unwrap();
    let last_end = lines.iter().map(end).max().unwrap();
    let window = job["stats"]["window_ns"].as_u64().unwrap();
    // The point ends when its last unit has (a little after its request's end).
    assert!(
        window >= last_end - first_measured,
        "{window} vs {}",
        last_end - first_measured
    );
    assert!(
        window < last_end - first_measured + 5_000_000,
        "{window} vs {}",
        last_end - first_measured
    );
    assert!(
        window < last_end - first_any,
        "the warm-up time is left out"
    );
    let tokens = job["stats"]["output_tokens"]["value"].as_f64().unwrap();
    let per_s = job["stats"]["output_tokens_per_s"]["value"]
        .as_f64()
        .unwrap();
    assert!(
        (per_s - tokens / (window as f64 / 1e9)).abs() < 1e-6,
        "{per_s}"
    );
}

/// A warm-up request that fails is in the job's failure codes, and a note says it is a
/// warm-up one, left out of every statistic and gate: the job passes on its measured
/// requests. The simulator drops every second request mid-stream: of three units, the
/// second (a warm-up) fails.
#[test]
fn a_failed_warm_up_request_is_named_in_the_notes() {
    let cwd = tempfile::tempdir().unwrap();
    let (mut sim, url) = support::spawn_sim(cwd.path(), &["--fault-disconnect-every", "2"]);
    support::write(
        cwd.path(),
        "w.toml",
        &format!(
            "name = \"w\"\nendpoint = \"{url}\"\nmodel = \"inferscope-sim\"\n[[jobs]]\n\
             name = \"c\"\nkind = \"context\"\nsizes = [16]\ncount = 3\nwarmup = 2\n\
             concurrency = 1\nmax_tokens = 8\n"
        ),
    );
    let out = cwd.path().join("run");
    let o = support::run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    sim.kill().unwrap();
    sim.wait().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", support::describe(&o));
    let rep = report(&out);
    let job = support::job(&rep, "w::c");
    assert_eq!(
        job["failure_codes"],
        serde_json::json!([{"code": "disconnect", "count": 1}]),
        "{job:#}"
    );
    let notes = job["notes"].to_string();
    assert!(notes.contains("warm-up: 1 request(s) failed"), "{notes}");
}
