//! Unit tests of the overhead estimator and decision rule (fixtures, no I/O).

use super::*;

/// A run with throughput `thr` (requests/s) and three requests whose E2E is
/// `e2e · [1, 2, 4]` ms.
fn run(pair: u32, capture: bool, thr: f64, e2e: f64) -> RunMeasure {
    RunMeasure {
        pair,
        capture,
        requests_ok: 3,
        requests_failed: 0,
        workload_ns: 1_000_000_000,
        throughput_rps: Some(thr),
        e2e_p50_ms: Some(2.0 * e2e),
        request_e2e_ms: vec![
            ("j.t0.llm0".into(), e2e),
            ("j.t0.llm1".into(), 2.0 * e2e),
            ("j.t0.llm2".into(), 4.0 * e2e),
        ],
        wall_ns: 1_000_000_000,
        cpu_ns: Some(200_000_000),
        peak_rss_bytes: Some(64 << 20),
        rss_reset: true,
        window_write_bytes: Some(0),
        gpu: GpuReading::Measured { bytes: 0 },
        jobs_passed: 1,
        jobs: 1,
        capture_events: capture.then_some(40),
        capture_quality: capture.then(|| "complete".into()),
    }
}

/// Pairs from `(thr_off, thr_on)`, latencies equal.
fn pairs(v: &[(f64, f64)]) -> Vec<(RunMeasure, RunMeasure)> {
    v.iter()
        .enumerate()
        .map(|(i, &(off, on))| {
            let p = i as u32 + 1;
            (run(p, false, off, 40.0), run(p, true, on, 40.0))
        })
        .collect()
}

fn gate<'a>(e: &'a Evaluation, figure: &str) -> &'a GateResult {
    e.gates.iter().find(|g| g.figure == figure).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn pair_effects_have_the_right_sign() {
    // Throughput 100 → 90: a 10 % drop.
    let d = throughput_effect(&run(1, false, 100.0, 40.0), &run(1, true, 90.0, 40.0)).unwrap();
    assert!(close(d, 10.0));
    // Every matched request 10 % slower: a 10 % rise.
    let r = latency_effect(&run(1, false, 100.0, 40.0), &run(1, true, 100.0, 44.0)).unwrap();
    assert!(close(r, 10.0));
    let mut missing = run(1, true, 100.0, 40.0);
    missing.throughput_rps = None;
    assert_eq!(throughput_effect(&run(1, false, 1.0, 1.0), &missing), None);
}

#[test]
fn latency_effect_matches_requests_by_id() {
    let a = run(1, false, 100.0, 10.0); // 10, 20, 40 ms
    let mut b = run(1, true, 100.0, 10.0);
    // The capture-on run made its requests in another order and one more request: the
    // ratios still pair the same requests (all 0 %), the extra one is ignored.
    b.request_e2e_ms.reverse();
    b.request_e2e_ms.push(("j.t1.llm0".into(), 1000.0));
    assert!(close(latency_effect(&a, &b).unwrap(), 0.0));
    // Only one request 50 % slower: the median of [0, 0, 50] is 0.
    b.request_e2e_ms[0].1 = 60.0; // j.t0.llm2 was 40
    assert!(close(latency_effect(&a, &b).unwrap(), 0.0));
    // No common id: no figure.
    b.request_e2e_ms = vec![("other".into(), 1.0)];
    assert_eq!(latency_effect(&a, &b), None);
}

#[test]
fn median_half_range_and_null_floor() {
    // Off runs 100, 100, 98 (A/A effects 0 % and 2 %), on runs 99, 97, 98 (B/B effects
    // 2.02 % and −1.03 %); pair effects 1, 3, 0 %.
    let p = vec![
        (run(1, false, 100.0, 40.0), run(1, true, 99.0, 40.0)),
        (run(2, false, 100.0, 40.0), run(2, true, 97.0, 40.0)),
        (run(3, false, 98.0, 40.0), run(3, true, 98.0, 40.0)),
    ];
    let e = estimate(&p, throughput_effect);
    assert!(close(e.median_pct.unwrap(), 1.0));
    assert!(close(e.pair_half_range_pct.unwrap(), 1.5));
    assert_eq!(e.null_effects_pct.len(), 4);
    let floor = (1.0 - 97.0 / 99.0) * 100.0;
    assert!(close(e.null_floor_pct.unwrap(), floor));
    assert!(close(e.noise_pct.unwrap(), floor));
    assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
    assert_eq!(median(&[]), None);
}

#[test]
fn null_floor_keeps_two_agreeing_pairs_from_a_false_fail() {
    // Two pairs that agree by chance (1.5 % and 1.5 %: pair spread 0), but the two
    // capture-off runs (and the two capture-on runs) differ by 4 %: the noise is 4 %, the
    // verdict inconclusive.
    let p = vec![
        (run(1, false, 100.0, 40.0), run(1, true, 98.5, 40.0)),
        (run(2, false, 104.0, 40.0), run(2, true, 102.44, 40.0)),
    ];
    let e = estimate(&p, throughput_effect);
    assert!(e.pair_half_range_pct.unwrap() < 1e-9);
    assert!(e.null_floor_pct.unwrap() >= 4.0 - 1e-9);
    let (o, why) = judge_effect(&e, 1.0);
    assert_eq!(o, OverheadOutcome::Inconclusive, "{why}");
}

#[test]
fn decision_rule_branches() {
    let est = |m: f64, n: f64, pairs: usize| EffectEstimate {
        pair_effects_pct: vec![Some(m); pairs],
        null_effects_pct: vec![Some(0.0); 2 * pairs.saturating_sub(1)],
        median_pct: Some(m),
        pair_half_range_pct: Some(n),
        null_floor_pct: Some(0.0),
        noise_pct: Some(n),
    };
    // Clear pass: 0.2 ± 0.3 within 1.
    assert_eq!(
        judge_effect(&est(0.2, 0.3, 5), 1.0).0,
        OverheadOutcome::Pass
    );
    // Clear fail: 9 ± 3 → 6 > 1.
    assert_eq!(
        judge_effect(&est(9.0, 3.0, 5), 1.0).0,
        OverheadOutcome::Fail
    );
    // Noise wider than the budget: inconclusive even with a favourable median.
    let (o, why) = judge_effect(&est(-3.0, 2.0, 5), 1.0);
    assert_eq!(o, OverheadOutcome::Inconclusive);
    assert!(why.contains("wider than the budget"), "{why}");
    // Straddles: 0.8 ± 0.5.
    let (o, why) = judge_effect(&est(0.8, 0.5, 5), 1.0);
    assert_eq!(o, OverheadOutcome::Inconclusive);
    assert!(why.contains("straddles"), "{why}");
    // One pair: no spread, never a pass nor a fail.
    for m in [0.0, 50.0] {
        let (o, why) = judge_effect(&est(m, 0.0, 1), 1.0);
        assert_eq!(o, OverheadOutcome::Inconclusive);
        assert!(why.contains("at least 2"), "{why}");
    }
    // Missing figure.
    let missing = EffectEstimate {
        pair_effects_pct: vec![None, Some(0.0)],
        null_effects_pct: vec![None, Some(0.0)],
        median_pct: None,
        pair_half_range_pct: None,
        null_floor_pct: None,
        noise_pct: None,
    };
    assert_eq!(judge_effect(&missing, 1.0).0, OverheadOutcome::Inconclusive);
}

#[test]
fn quiet_real_sink_passes_every_gate() {
    let p = pairs(&[(100.0, 100.0), (100.1, 99.9), (100.0, 100.1)]);
    let e = evaluate(&p, &OverheadSpec::default(), false);
    assert_eq!(e.outcome, OverheadOutcome::Pass, "{:#?}", e.gates);
    assert_eq!(e.exit_status(), 0);
}

#[test]
fn blocking_like_slowdown_fails_the_workload_gate() {
    // ~10 % slower in every pair, null floor 2.2 %.
    let p = pairs(&[(100.0, 91.0), (101.0, 89.0), (100.0, 90.0)]);
    let e = evaluate(&p, &OverheadSpec::default(), false);
    assert_eq!(
        gate(&e, "throughput_drop_pct").outcome,
        OverheadOutcome::Fail
    );
    assert_eq!(e.outcome, OverheadOutcome::Fail);
    assert_eq!(e.exit_status(), 100);
}

#[test]
fn latency_rise_fails_the_latency_gate() {
    let p: Vec<_> = (1..=3)
        .map(|i| (run(i, false, 100.0, 40.0), run(i, true, 100.0, 48.0)))
        .collect();
    let e = evaluate(&p, &OverheadSpec::default(), false);
    let g = gate(&e, "e2e_rise_pct");
    assert_eq!(g.outcome, OverheadOutcome::Fail);
    assert!(close(g.value.unwrap(), 20.0));
}

#[test]
fn disk_bytes_are_the_pair_difference() {
    let mut p = pairs(&[(100.0, 100.0), (100.0, 100.0)]);
    // The workload writes 4096 B itself in both runs of pair 1: no capture bytes.
    p[0].0.window_write_bytes = Some(4096);
    p[0].1.window_write_bytes = Some(4096);
    let e = evaluate(&p, &OverheadSpec::default(), false);
    assert_eq!(gate(&e, "capture_window_write_bytes").value, Some(0.0));
    assert_eq!(
        gate(&e, "capture_window_write_bytes").outcome,
        OverheadOutcome::Pass
    );
    // A capture-on run writes 12 KiB more than its pair's off run: fail.
    p[1].1.window_write_bytes = Some(12288);
    let e = evaluate(&p, &OverheadSpec::default(), false);
    let g = gate(&e, "capture_window_write_bytes");
    assert_eq!(g.value, Some(12288.0));
    assert_eq!(g.outcome, OverheadOutcome::Fail);
    assert!(g.reason.contains("12288 bytes > 0 bytes"), "{}", g.reason);
    assert_eq!(e.exit_status(), 100);
    // Unreadable counters: unavailable, never a pass.
    p[1].0.window_write_bytes = None;
    let e = evaluate(&p, &OverheadSpec::default(), false);
    assert_eq!(
        gate(&e, "capture_window_write_bytes").outcome,
        OverheadOutcome::Unavailable
    );
}

#[test]
fn unavailable_gpu_is_never_a_pass() {
    let mut p = pairs(&[(100.0, 100.0), (100.0, 100.0)]);
    for (_, on) in &mut p {
        on.gpu = GpuReading::Unavailable {
            reason: "NVML init failed".into(),
        };
    }
    let e = evaluate(&p, &OverheadSpec::default(), false);
    let g = gate(&e, "runner_gpu_bytes");
    assert_eq!(g.value, None);
    assert_eq!(g.outcome, OverheadOutcome::Unavailable);
    assert!(g.reason.contains("NVML init failed"));
    assert_eq!(e.outcome, OverheadOutcome::Inconclusive);
    assert_eq!(e.exit_status(), 3);
    // A measured GPU allocation fails.
    p[1].1.gpu = GpuReading::Measured { bytes: 1 << 20 };
    p[0].1.gpu = GpuReading::Measured { bytes: 0 };
    let e = evaluate(&p, &OverheadSpec::default(), false);
    assert_eq!(gate(&e, "runner_gpu_bytes").outcome, OverheadOutcome::Fail);
}

#[test]
fn cpu_and_rss_limits() {
    let mut p = pairs(&[(100.0, 100.0), (100.0, 100.0)]);
    p[1].1.cpu_ns = Some(800_000_000); // 80 % of a core over 1 s
    p[0].1.peak_rss_bytes = Some(600 << 20);
    let e = evaluate(&p, &OverheadSpec::default(), false);
    let cpu = gate(&e, "runner_cpu_pct");
    assert_eq!(cpu.outcome, OverheadOutcome::Fail);
    assert!(close(cpu.value.unwrap(), 80.0));
    let rss = gate(&e, "runner_peak_rss_mib");
    assert_eq!(rss.outcome, OverheadOutcome::Fail);
    assert_eq!(rss.value, Some(600.0));
}

#[test]
fn failed_requests_or_cancel_make_the_workload_gates_inconclusive() {
    let mut p = pairs(&[(100.0, 100.0), (100.0, 100.0), (100.0, 100.0)]);
    p[2].1.requests_failed = 1;
    let e = evaluate(&p, &OverheadSpec::default(), false);
    assert_eq!(
        gate(&e, "throughput_drop_pct").outcome,
        OverheadOutcome::Inconclusive
    );
    assert!(e.warnings.iter().any(|w| w.contains("1 request(s) failed")));
    let p = pairs(&[(100.0, 100.0), (100.0, 100.0)]);
    let e = evaluate(&p, &OverheadSpec::default(), true);
    assert_eq!(e.outcome, OverheadOutcome::Inconclusive);
    let e = evaluate(&[], &OverheadSpec::default(), true);
    assert_eq!(e.exit_status(), 3);
}
