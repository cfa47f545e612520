//! Renderers of a run's job results (pure: every function returns a `String`; the caller
//! writes it). Issue 2 item 8, issue 6 item 5, DESIGN §7, `ref/rust-conventions.md` §2.
//!
//! - [`view`]: the plain input structs ([`JobReportView`], [`RunTotals`], [`EndpointLabel`])
//!   the runner maps its results into, and the reason lines shared by every renderer.
//! - [`human`]: nextest-style terminal lines (`Starting`, `PASS`/`FAIL`, `Summary`, and the
//!   plain `N passed, N failed` line CI tooling parses); colour only when asked, never in
//!   non-TTY/CI ([`human::color_enabled`]).
//! - [`junit`]: JUnit XML via quick-junit 0.8 (one testsuite per suite, one testcase per job).
//! - [`json`]: `--message-format json` lines (one object per job, one summary object).
//! - [`markdown`]: a summary table for pull-request comments.

pub mod human;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod view;

pub use human::{
    Style, color_enabled, is_ci, job_block, plain_line, start_line, status_line, summary_line,
};
pub use json::{job_message, summary_message};
pub use junit::{junit_report, junit_xml};
pub use markdown::markdown_summary;
pub use view::{EndpointLabel, GradingCheck, JobReportView, RunTotals};

#[cfg(test)]
pub(crate) mod fixtures {
    //! Shared view fixtures for the renderer tests.
    use super::view::JobReportView;
    use crate::gate::spec::GateSpec;
    use crate::gate::{Figure, FigureSet, basis, evaluate};
    use crate::stats::{AggregateParams, JobStats, RequestFigures};

    /// A passing job with C26's requests and one passing gate.
    pub fn passing_job() -> JobReportView {
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
        let verdicts = evaluate(&spec, &FigureSet::from_job_stats(&stats));
        JobReportView {
            id: "agentic::lookup".into(),
            kind: "agentic".into(),
            passed: true,
            not_run: false,
            duration_ns: 1_234_000_000,
            verdicts,
            grading: vec![("contains(\"Oslo\")".into(), true, None)],
            stats: Some(stats),
            failure_codes: vec![],
            notes: vec![],
        }
    }

    /// A failing job: a TTFT gate over its bound, an unavailable energy gate, a failed
    /// grading check and one failed request.
    pub fn failing_job() -> JobReportView {
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
        figs.tokens_per_joule = Figure::unavailable(basis::MEASURED, "no GPU");
        let spec: GateSpec =
            toml::from_str("ttft_ms = { p99 = 500.0 }\nmin_tokens_per_joule = 2.0").unwrap();
        JobReportView {
            id: "context::long<prompt>".into(),
            kind: "context".into(),
            passed: false,
            not_run: false,
            duration_ns: 512_000_000,
            verdicts: evaluate(&spec, &figs),
            grading: vec![
                ("regex(\"^ok\")".into(), true, None),
                (
                    "contains(\"Oslo\")".into(),
                    false,
                    Some("final answer lacks \"Oslo\"".into()),
                ),
            ],
            stats: Some(stats),
            failure_codes: vec![("idle_timeout".into(), 1)],
            notes: vec!["endpoint was simulated".into()],
        }
    }
}
