//! Shared report fixtures for the renderer tests, and for the root package's reporter
//! tests, which include this file by path (`src/reporter.rs`): test code only, never built
//! into the library.
use inferscope_gate::spec::GateSpec;
use inferscope_gate::{Figure, FigureSet, evaluate};
use inferscope_model::stats::{AggregateParams, JobStats, RequestFigures};
use inferscope_model::{
    Basis, FailureCode, FailureCount, GradingCheck, JobEnergy, JobKind, JobReport, JobStatus,
};

fn energy_unavailable() -> JobEnergy {
    let f = || Figure::missing(Basis::Unavailable, "no power source: no GPU");
    JobEnergy {
        energy_j: f(),
        tokens_per_joule: f(),
        energy_per_trajectory_j: f(),
    }
}

/// A run report around `jobs` (anchor 2026-12-01T16:00:00Z, host `ci-7`), cancelled
/// or not.
pub fn run_report(
    jobs: Vec<JobReport>,
    duration_ns: u64,
    cancelled: bool,
) -> inferscope_model::RunReport {
    let summary = inferscope_model::SummaryReport::of(&jobs, duration_ns, cancelled);
    inferscope_model::RunReport {
        schema: inferscope_model::REPORT_SCHEMA.into(),
        run_id: "20261201T160000Z-abc123".into(),
        tool: "inferscope-bench 0.1.0".into(),
        started_utc: "2026-12-01T16:00:00Z".into(),
        reference_instant_unix_ns: 1_796_140_800_000_000_000,
        clock_domain_id: "mono:ci-7:42:1796140800000000000".into(),
        percentile_method: "nearest_rank".into(),
        cancelled,
        endpoint: None,
        endpoints: vec![],
        capture: inferscope_model::CaptureReport::default(),
        power: inferscope_model::PowerReport {
            source: None,
            reason: Some("no GPU".into()),
            devices: 0,
            not_attributable: vec![],
        },
        telemetry: None,
        attribution: None,
        jobs,
        summary,
        shard: None,
        merge: None,
        requests_file: None,
    }
}

/// A job with no requests, verdicts or notes.
pub fn job(id: &str, kind: JobKind, status: JobStatus, duration_ns: u64) -> JobReport {
    JobReport {
        id: id.into(),
        kind,
        status,
        duration_ns,
        start_ns: 0,
        end_ns: duration_ns,
        setup_error: None,
        stats: None,
        verdicts: vec![],
        grading: vec![],
        grade_pass_rate: None,
        energy: energy_unavailable(),
        failure_codes: vec![],
        notes: vec![],
        harness: None,
        load: None,
        sweep: None,
        baseline: None,
        trajectories: vec![],
        units: vec![],
        requests: vec![],
    }
}

/// A passing job with C26's requests and one passing gate.
pub fn passing_job() -> JobReport {
    let r1: Vec<f64> = (0..11).map(|i| 100.0 + 10.0 * i as f64).collect();
    let mut reqs = vec![
        RequestFigures::from_token_arrivals(&r1, Some(11), Some(210.0)),
        RequestFigures::from_token_arrivals(&[100.0, 150.0, 200.0], Some(3), Some(205.0)),
        RequestFigures::from_token_arrivals(&[80.0], Some(1), Some(90.0)),
    ];
    for r in &mut reqs {
        r.prompt_tokens = Some(100);
        r.cached_tokens = Some(50);
    }
    let stats = JobStats::aggregate(&reqs, AggregateParams::new(2_000_000_000));
    let spec: GateSpec = toml::from_str("ttft_ms = { p99 = 500.0 }").unwrap();
    let mut j = job(
        "agentic::lookup",
        JobKind::Agentic,
        JobStatus::Pass,
        1_234_000_000,
    );
    j.verdicts = evaluate(&spec, &FigureSet::from_job_stats(&stats));
    j.grading = vec![GradingCheck {
        check: "contains(\"Oslo\")".into(),
        passed: true,
        detail: None,
    }];
    j.stats = Some(stats);
    j
}

/// A failing job: a TTFT gate over its bound, an unavailable energy gate, a failed
/// grading check and one failed request (tolerated by `max_error_rate`).
pub fn failing_job() -> JobReport {
    let mut reqs = vec![
        RequestFigures {
            ok: true,
            ttft_ms: Some(812.4),
            e2e_ms: Some(900.0),
            output_tokens: Some(4),
            ..Default::default()
        },
        RequestFigures::default(),
    ];
    reqs[1].ok = false;
    let stats = JobStats::aggregate(&reqs, AggregateParams::new(500_000_000));
    let mut figs = FigureSet::from_job_stats(&stats);
    figs.tokens_per_joule = Figure::missing(Basis::Unavailable, "no GPU");
    let spec: GateSpec = toml::from_str(
        "ttft_ms = { p99 = 500.0 }\nmin_tokens_per_joule = 2.0\nmax_error_rate = 0.5",
    )
    .unwrap();
    let mut j = job(
        "context::long<prompt>",
        JobKind::Context,
        JobStatus::Fail,
        512_000_000,
    );
    j.verdicts = evaluate(&spec, &figs);
    j.grading = vec![
        GradingCheck {
            check: "regex(\"^ok\")".into(),
            passed: true,
            detail: None,
        },
        GradingCheck {
            check: "contains(\"Oslo\")".into(),
            passed: false,
            detail: Some("final answer lacks \"Oslo\"".into()),
        },
    ];
    j.stats = Some(stats);
    j.failure_codes = vec![FailureCount {
        code: FailureCode::IdleTimeout,
        count: 1,
    }];
    j.notes = vec!["endpoint was simulated".into()];
    j
}
