//! JUnit XML (`--junit FILE`, issue 6 item 5) written with quick-junit 0.8, as nextest does
//! (docs/architecture.md).
//!
//! Layout: one `<testsuite>` per suite (in first-appearance order), one `<testcase>` per job
//! (`name` = job name, `classname` = suite, `time` = job duration). Each test case carries
//! its verdicts as properties (`verdict.<gate>` = `<outcome>: <message>`, plus `kind`) and a
//! readable `<system-out>` (verdicts, grading, request figures, notes). A failed job gets a
//! `<failure>` whose `message` is the first failure reason, `type` names the failing parts
//! (`gate`, `grading`), and whose text holds every failure reason, one per line. A job
//! Ctrl-C / SIGTERM stopped part-way is an `<error type="cancelled">` (it ran, but not to
//! its end: never a success, not a failed measurement either); a job whose endpoint failed
//! the preflight is an `<error type="setup_error">` naming the cause; a job the run never
//! started is `<skipped>`.

use crate::gate::format_number;
use crate::model::{JobReport, JobStatus, Summary};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

/// The JUnit report of a run named `report_name` (e.g. `inferscope-bench`) lasting
/// `duration_ns`.
pub fn junit_report(report_name: &str, jobs: &[JobReport], duration_ns: u64) -> Report {
    let mut suites: Vec<TestSuite> = Vec::new();
    for job in jobs {
        let idx = match suites.iter().position(|s| s.name.as_str() == job.suite()) {
            Some(i) => i,
            None => {
                let mut s = TestSuite::new(job.suite());
                s.set_time(Duration::ZERO);
                suites.push(s);
                suites.len() - 1
            }
        };
        let suite = &mut suites[idx];
        let t = suite.time.unwrap_or_default() + Duration::from_nanos(job.duration_ns);
        suite.set_time(t);
        suite.add_test_case(test_case(job));
    }
    let mut report = Report::new(report_name);
    report.set_time(Duration::from_nanos(duration_ns));
    report.add_test_suites(suites);
    report
}

/// [`junit_report`] serialized as an XML document.
///
/// # Errors
/// quick-junit's serialization error (an I/O error on the in-memory buffer; not expected).
pub fn junit_xml(
    report_name: &str,
    jobs: &[JobReport],
    duration_ns: u64,
) -> Result<String, quick_junit::SerializeError> {
    junit_report(report_name, jobs, duration_ns).to_string()
}

fn test_case(job: &JobReport) -> TestCase {
    let status = if job.status == JobStatus::NotRun {
        // Cancelled before it started: skipped, never a failure.
        let mut s = TestCaseStatus::skipped();
        s.set_message("not run: cancelled");
        s
    } else if job.status == JobStatus::Pass {
        TestCaseStatus::success()
    } else if matches!(job.status, JobStatus::Cancelled | JobStatus::SetupError) {
        let reasons = job.reason_lines();
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
        s.set_message(match job.status {
            JobStatus::Cancelled => {
                "cancelled (Ctrl-C / SIGTERM) before all its work ran".to_string()
            }
            _ => reasons
                .first()
                .cloned()
                .unwrap_or_else(|| "setup error".into()),
        });
        s.set_type(job.status.as_str());
        s.set_description(reasons.join("\n"));
        s
    } else {
        let reasons = job.failure_lines();
        let gate_failed = job.verdicts.iter().any(|v| !v.outcome.is_passing());
        let grading_failed = !job.grading_passed();
        let ty = match (gate_failed, grading_failed) {
            (true, true) => "gate and grading failure",
            (true, false) => "gate failure",
            (false, true) => "grading failure",
            (false, false) => "job failure",
        };
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
        s.set_message(reasons[0].as_str());
        s.set_type(ty);
        s.set_description(reasons.join("\n"));
        s
    };
    let mut tc = TestCase::new(job.job_name(), status);
    tc.set_classname(job.suite());
    tc.set_time(Duration::from_nanos(job.duration_ns));
    tc.add_property(Property::new("kind", job.kind.as_str()));
    tc.add_property(Property::new("status", job.status.as_str()));
    for v in &job.verdicts {
        tc.add_property(Property::new(
            format!("verdict.{}", v.gate),
            format!("{}: {}", v.outcome.as_str(), v.message),
        ));
    }
    tc.set_system_out(system_out(job));
    tc
}

fn summary_line(name: &str, s: &Option<Summary>) -> String {
    match s {
        Some(s) => format!(
            "{name}: n={} mean={} p50={} p90={} p95={} p99={}",
            s.count,
            format_number(s.mean),
            format_number(s.p50),
            format_number(s.p90),
            format_number(s.p95),
            format_number(s.p99)
        ),
        None => format!("{name}: null"),
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "null".to_string(), format_number)
}

fn system_out(job: &JobReport) -> String {
    let mut out = vec![
        format!("job: {} ({})", job.id, job.kind.as_str()),
        format!("status: {}", job.status.as_str()),
        "verdicts:".to_string(),
    ];
    for v in &job.verdicts {
        out.push(format!("  {} {}", v.outcome.as_str(), v.message));
    }
    if !job.grading.is_empty() {
        out.push("grading:".to_string());
        for g in &job.grading {
            let mut l = format!("  {} {}", if g.passed { "pass" } else { "fail" }, g.check);
            if let Some(d) = &g.detail {
                l.push_str(": ");
                l.push_str(d);
            }
            out.push(l);
        }
    }
    if let Some(s) = &job.stats {
        out.push(format!(
            "requests: {} ({} succeeded, {} failed)",
            s.requests, s.succeeded, s.failed
        ));
        out.push(summary_line("ttft_ms", &s.ttft_ms));
        out.push(summary_line("itl_ms", &s.itl_ms));
        out.push(format!(
            "{} ({})",
            summary_line("tpot_ms", &s.tpot_ms.value),
            s.tpot_ms.basis_text()
        ));
        out.push(summary_line("e2e_ms", &s.e2e_ms));
        out.push(format!(
            "throughput_rps: {}  output_tokens_per_s: {} ({})  cache_hit_rate: {} (coverage {})",
            opt(s.throughput_rps),
            opt(s.output_tokens_per_s.value),
            s.output_tokens_per_s.basis_text(),
            opt(s.cache_hit_rate),
            opt(s.cache_hit_coverage)
        ));
    }
    for f in &job.failure_codes {
        out.push(format!("failed requests: {} {}", f.count, f.code.as_str()));
    }
    for (name, f) in [
        ("energy_j", &job.energy.energy_j),
        ("tokens_per_joule", &job.energy.tokens_per_joule),
        (
            "energy_per_trajectory_j",
            &job.energy.energy_per_trajectory_j,
        ),
    ] {
        out.push(match (f.value, &f.reason) {
            (Some(v), _) => format!("{name}: {} ({})", format_number(v), f.basis_text()),
            (None, r) => format!(
                "{name}: null ({}; {})",
                r.as_deref().unwrap_or("unavailable"),
                f.basis_text()
            ),
        });
    }
    for n in &job.notes {
        out.push(format!("note: {n}"));
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::fixtures::{failing_job, passing_job};

    fn jobs() -> Vec<JobReport> {
        let mut second = passing_job();
        second.id = "agentic::search".into();
        vec![passing_job(), failing_job(), second]
    }

    #[test]
    fn round_trips_with_expected_counts() {
        let xml = junit_xml("inferscope-bench", &jobs(), 3_000_000_000).unwrap();
        assert!(xml.starts_with("<?xml"));
        let r = Report::deserialize_from_str(&xml).unwrap();
        assert_eq!(r.name.as_ref().unwrap().as_str(), "inferscope-bench");
        assert_eq!((r.tests, r.failures, r.errors), (3, 1, 0));
        let names: Vec<&str> = r.test_suites.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["agentic", "context"]);
        let agentic = &r.test_suites[0];
        assert_eq!((agentic.tests, agentic.failures), (2, 0));
        assert_eq!(agentic.time, Some(Duration::from_nanos(2_468_000_000)));
        let cases: Vec<&str> = agentic.test_cases.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(cases, ["lookup", "search"]);
        assert_eq!(
            agentic.test_cases[0].classname.as_ref().unwrap().as_str(),
            "agentic"
        );

        let ctx = &r.test_suites[1];
        assert_eq!((ctx.tests, ctx.failures), (1, 1));
        let case = &ctx.test_cases[0];
        assert_eq!(case.name.as_str(), "long<prompt>", "escaped and restored");
        match &case.status {
            TestCaseStatus::NonSuccess {
                kind,
                message,
                ty,
                description,
                ..
            } => {
                assert_eq!(*kind, NonSuccessKind::Failure);
                assert_eq!(
                    message.as_ref().unwrap().as_str(),
                    "ttft_ms.p99 = 812.4 ms > bound 500 ms (client timing)"
                );
                assert_eq!(ty.as_ref().unwrap().as_str(), "gate and grading failure");
                let d = description.as_ref().unwrap().as_str();
                assert!(d.contains("tokens_per_joule = unavailable (no GPU)"), "{d}");
                assert!(d.contains("grading: contains(\"Oslo\") failed"), "{d}");
            }
            other => panic!("expected failure, got {other:?}"),
        }
        let props: Vec<(&str, &str)> = case
            .properties
            .iter()
            .map(|p| (p.name.as_str(), p.value.as_str()))
            .collect();
        assert!(props.contains(&("kind", "context")));
        assert!(props.contains(&(
            "verdict.ttft_ms.p99",
            "fail: ttft_ms.p99 = 812.4 ms > bound 500 ms (client timing)"
        )));
        assert!(props.contains(&(
            "verdict.successful_requests",
            "pass: successful_requests = 1 >= bound 1 (request outcomes)"
        )));
        let out = case.system_out.as_ref().unwrap().as_str();
        assert!(out.contains("requests: 2 (1 succeeded, 1 failed)"), "{out}");
        assert!(out.contains("tpot_ms: null"), "{out}");
    }

    #[test]
    fn raw_xml_counts() {
        let xml = junit_xml("inferscope-bench", &jobs(), 0).unwrap();
        assert!(xml.contains(r#"<testsuites name="inferscope-bench" tests="3" skipped="0" failures="1" errors="0""#), "{xml}");
        assert_eq!(xml.matches("<testcase ").count(), 3);
        assert_eq!(xml.matches("<failure ").count(), 1);
        assert!(xml.contains("long&lt;prompt&gt;"));
    }

    #[test]
    fn a_job_not_run_is_skipped_not_failed() {
        let mut skipped = failing_job();
        skipped.id = "agentic::repo_tour".into();
        skipped.status = JobStatus::NotRun;
        let xml = junit_xml("inferscope-bench", &[passing_job(), skipped], 0).unwrap();
        assert!(
            xml.contains(r#"tests="2" skipped="1" failures="0""#),
            "{xml}"
        );
        assert_eq!(xml.matches("<failure ").count(), 0);
        assert!(xml.contains("status: not_run"), "{xml}");
    }

    /// Issue 13 item 4: a job stopped part-way is a JUnit `<error type="cancelled">`, never
    /// a success; a setup error is `<error type="setup_error">`.
    #[test]
    fn a_cancelled_job_is_an_error_not_a_success() {
        let mut cut = passing_job();
        cut.status = JobStatus::Cancelled;
        cut.notes = vec!["cancelled (Ctrl-C / SIGTERM): 1 of 3 sweep points ran".into()];
        let xml = junit_xml("inferscope-bench", &[cut], 0).unwrap();
        assert!(xml.contains(r#"errors="1""#), "{xml}");
        assert!(xml.contains(r#"type="cancelled""#), "{xml}");
        assert!(xml.contains("1 of 3 sweep points ran"), "{xml}");
        let r = Report::deserialize_from_str(&xml).unwrap();
        assert_eq!((r.tests, r.failures, r.errors), (1, 0, 1));
    }
}
