//! JUnit XML (`--junit FILE`, `report --format junit`) written
//! with quick-junit 0.8, as nextest does (docs/architecture.md), and valid
//! against the Jenkins `junit-10.xsd` (pytest's copy; `tests/junit_schema.rs` validates
//! with `xmlschema`).
//!
//! Layout: one `<testsuite>` per suite (in first-appearance order) with `timestamp` (its
//! first job's start, UTC), `hostname` (the runner host of the run's clock domain, when it
//! names one) and `<properties>` — the run's (`run_id`, `tool`, `clock_domain_id`,
//! `endpoint`, `power`, `capture`) and each job's (`JOB.kind`, `JOB.status`,
//! `JOB.verdict.GATE` = `outcome: message`): the schema allows properties on a test suite,
//! not on a test case. When the timeline capture dropped events, every test suite's
//! `<system-err>` is `capture partial: K events dropped` (the console's line). One `<testcase>` per job (`name` = job name, `classname` = suite,
//! `time` = job duration) with a readable `<system-out>` (verdicts, grading, request
//! figures with their bases, notes).
//!
//! Outcomes: a job whose gates or grading failed is a `<failure>` (`message` the first
//! reason, `type` the failing parts: `gate failure`, `grading failure`, …, text every
//! reason). A job that could not be measured is an `<error>`: its endpoint failed the
//! preflight (`type="setup_error"`, naming the cause), it never reached the endpoint
//! (`type="endpoint_unreachable"`: every request failed before a response head, none
//! succeeded), its harness could not start (`type="harness_failed"`), or Ctrl-C / SIGTERM
//! stopped it part-way (`type="cancelled"`: it ran, but not to its end — never a success,
//! not a failed measurement either). A job the run never started is `<skipped>`. The
//! `<testsuites>` element carries `tests`, `failures`, `errors` and `time` only (the
//! schema has no `skipped` there; quick-junit's is removed).

use inferscope_gate::format_number;
use inferscope_model::{FailureCode, JobReport, JobStatus, RunReport, Summary};
use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};
use std::time::Duration;

fn utc(unix_ns: u64) -> chrono::DateTime<chrono::FixedOffset> {
    let secs = i64::try_from(unix_ns / 1_000_000_000).unwrap_or(i64::MAX);
    let nanos = (unix_ns % 1_000_000_000) as u32;
    chrono::DateTime::from_timestamp(secs, nanos)
        .unwrap_or_default()
        .fixed_offset()
}

/// The run-level properties every test suite carries.
fn run_properties(report: &RunReport) -> Vec<Property> {
    let endpoint = match &report.endpoint {
        Some(e) if e.simulated => format!("simulated (built-in) · model {}", e.model),
        Some(e) => format!(
            "{} · model {}",
            inferscope_redact::urls(&e.base_url),
            e.model
        ),
        None => "none".to_string(),
    };
    vec![
        Property::new("run_id", report.run_id.as_str()),
        Property::new("tool", report.tool.as_str()),
        Property::new("clock_domain_id", report.clock_domain_id.as_str()),
        Property::new("endpoint", endpoint),
        Property::new("power", report.power.describe()),
        Property::new(
            "capture",
            match (report.capture.enabled, report.capture.quality) {
                (false, _) => "off".to_string(),
                (true, Some(q)) => q.as_str().to_string(),
                (true, None) => "unavailable".to_string(),
            },
        ),
    ]
}

/// The JUnit report of a run (see the module docs).
pub fn junit_report(report: &RunReport) -> Report {
    let counts: Vec<RequestCounts> = report.jobs.iter().map(RequestCounts::of_job).collect();
    junit_report_with(report, &counts)
}

/// What JUnit reads of a job's per-request records: how many there were and how many
/// failed to connect (an endpoint never reached). Counted while the records are streamed
/// ([`RequestCounts::add`]), so a run of any size renders without holding its records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestCounts {
    /// Requests.
    pub requests: u64,
    /// Requests that failed with `connect`.
    pub connect_failures: u64,
}

impl RequestCounts {
    /// Counts one record.
    pub fn add(&mut self, r: &inferscope_model::RequestRecord) {
        self.requests += 1;
        if r.failure_code == Some(FailureCode::Connect) {
            self.connect_failures += 1;
        }
    }

    /// The counts of a job's records held in memory (`job.requests`).
    pub fn of_job(job: &JobReport) -> Self {
        let mut c = Self::default();
        for r in &job.requests {
            c.add(r);
        }
        c
    }
}

/// [`junit_report`] with each job's record counts given (`counts[i]` for job i; a job
/// without an entry counts none).
pub fn junit_report_with(report: &RunReport, counts: &[RequestCounts]) -> Report {
    let host = inferscope_clock::domain_host(&report.clock_domain_id);
    let mut suites: Vec<TestSuite> = Vec::new();
    for (i, job) in report.jobs.iter().enumerate() {
        let count = counts.get(i).copied().unwrap_or_default();
        let idx = match suites.iter().position(|s| s.name.as_str() == job.suite()) {
            Some(i) => i,
            None => {
                let mut s = TestSuite::new(job.suite());
                s.set_time(Duration::ZERO);
                s.set_timestamp(utc(report.reference_instant_unix_ns + job.start_ns));
                if let Some(h) = host {
                    s.extra.insert("hostname".into(), h.into());
                }
                s.add_properties(run_properties(report));
                // A capture that dropped events says so in words, as the console does;
                // the `capture` property stays the quality.
                if let Some(line) = report.capture.partial_line() {
                    s.set_system_err(line);
                }
                suites.push(s);
                suites.len() - 1
            }
        };
        let suite = &mut suites[idx];
        let t = suite.time.unwrap_or_default() + Duration::from_nanos(job.duration_ns);
        suite.set_time(t);
        let name = job.job_name();
        suite.add_property(Property::new(format!("{name}.kind"), job.kind.as_str()));
        suite.add_property(Property::new(format!("{name}.status"), job.status.as_str()));
        for v in &job.verdicts {
            suite.add_property(Property::new(
                format!("{name}.verdict.{}", v.gate),
                format!("{}: {}", v.outcome.as_str(), v.message),
            ));
        }
        suite.add_test_case(test_case(job, count));
    }
    let mut r = Report::new("inferscope-bench");
    r.set_time(Duration::from_nanos(report.summary.duration_ns));
    r.add_test_suites(suites);
    r
}

/// [`junit_report`] serialized as an XML document valid against `junit-10.xsd`.
///
/// # Errors
/// quick-junit's serialization error (an I/O error on the in-memory buffer; not expected).
pub fn junit_xml(report: &RunReport) -> Result<String, quick_junit::SerializeError> {
    let xml = junit_report(report).to_string()?;
    Ok(without_testsuites_skipped(&xml))
}

/// [`junit_xml`] with each job's record counts given ([`junit_report_with`]).
///
/// # Errors
/// As [`junit_xml`].
pub fn junit_xml_with(
    report: &RunReport,
    counts: &[RequestCounts],
) -> Result<String, quick_junit::SerializeError> {
    let xml = junit_report_with(report, counts).to_string()?;
    Ok(without_testsuites_skipped(&xml))
}

/// `xml` without the `skipped` attribute of its `<testsuites>` start tag (quick-junit
/// always writes it; `junit-10.xsd` does not allow it there — the skipped count stays on
/// each `<testsuite>`).
fn without_testsuites_skipped(xml: &str) -> String {
    let Some(at) = xml.find("<testsuites") else {
        return xml.to_string();
    };
    let end = xml[at..].find('>').map_or(xml.len(), |e| at + e);
    let tag = &xml[at..end];
    let Some(k) = tag.find(" skipped=\"") else {
        return xml.to_string();
    };
    let value_end = tag[k + 10..]
        .find('"')
        .map_or(tag.len(), |e| k + 10 + e + 1);
    format!("{}{}{}", &xml[..at + k], &tag[value_end..], &xml[end..])
}

/// Why a job that did not pass could not be measured (an `<error>`, not a `<failure>`):
/// `(type, message)`; `None` for a job whose gates or grading judged it.
fn error_of(job: &JobReport, count: RequestCounts) -> Option<(&'static str, String)> {
    match job.status {
        JobStatus::SetupError => {
            let reasons = job.reason_lines();
            Some((
                "setup_error",
                reasons
                    .first()
                    .cloned()
                    .unwrap_or_else(|| "setup error".into()),
            ))
        }
        JobStatus::Cancelled => Some((
            "cancelled",
            "cancelled (Ctrl-C / SIGTERM) before all its work ran".to_string(),
        )),
        JobStatus::Fail => {
            let unreachable = count.requests > 0 && count.connect_failures == count.requests;
            if unreachable {
                return Some((
                    "endpoint_unreachable",
                    format!(
                        "endpoint unreachable: all {} requests failed before a response \
                         head (connect)",
                        count.requests
                    ),
                ));
            }
            let spawn = job.harness.as_ref().and_then(|h| h.spawn_error.as_ref());
            spawn.map(|e| ("harness_failed", format!("harness could not start: {e}")))
        }
        JobStatus::Pass | JobStatus::NotRun => None,
    }
}

fn test_case(job: &JobReport, count: RequestCounts) -> TestCase {
    let status = if job.status == JobStatus::NotRun {
        // Cancelled before it started: skipped, never a failure.
        let mut s = TestCaseStatus::skipped();
        s.set_message("not run: cancelled");
        s
    } else if job.status == JobStatus::Pass {
        TestCaseStatus::success()
    } else if let Some((ty, message)) = error_of(job, count) {
        let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
        s.set_message(message);
        s.set_type(ty);
        s.set_description(job.reason_lines().join("\n"));
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
    tc.set_system_out(system_out(job));
    tc
}

fn summary_line(name: &str, s: &Option<Summary>) -> String {
    match s {
        // A streamed summary states its bound after its figures.
        Some(s) => format!(
            "{name}: n={} mean={} p50={} p90={} p95={} p99={}{}",
            s.count,
            format_number(s.mean),
            format_number(s.p50),
            format_number(s.p90),
            format_number(s.p95),
            format_number(s.p99),
            s.bound_suffix()
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
    use crate::fixtures::{failing_job, passing_job};
    use inferscope_model::RequestRecord;

    fn jobs() -> Vec<JobReport> {
        let mut second = passing_job();
        second.id = "agentic::search".into();
        vec![passing_job(), failing_job(), second]
    }

    /// A run report around `jobs` (anchor 2026-12-01T16:00:00Z, host `ci-7`).
    fn run(jobs: Vec<JobReport>, duration_ns: u64) -> RunReport {
        crate::fixtures::run_report(jobs, duration_ns, false)
    }

    fn render(jobs: Vec<JobReport>) -> String {
        junit_xml(&run(jobs, 3_000_000_000)).unwrap()
    }

    #[test]
    fn round_trips_with_expected_counts() {
        let xml = render(jobs());
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
        // Properties sit on the test suite (the schema has none on a test case).
        assert!(case.properties.is_empty());
        let props: Vec<(&str, &str)> = ctx
            .properties
            .iter()
            .map(|p| (p.name.as_str(), p.value.as_str()))
            .collect();
        assert!(props.contains(&("long<prompt>.kind", "context")));
        assert!(props.contains(&("run_id", "20261201T160000Z-abc123")));
        assert!(props.contains(&("power", "power unavailable (no GPU)")));
        assert!(props.contains(&(
            "long<prompt>.verdict.ttft_ms.p99",
            "fail: ttft_ms.p99 = 812.4 ms > bound 500 ms (client timing)"
        )));
        assert!(props.contains(&(
            "long<prompt>.verdict.successful_requests",
            "pass: successful_requests = 1 >= bound 1 (request outcomes)"
        )));
        let out = case.system_out.as_ref().unwrap().as_str();
        assert!(out.contains("requests: 2 (1 succeeded, 1 failed)"), "{out}");
        assert!(out.contains("tpot_ms: null"), "{out}");
    }

    /// `junit-10.xsd`: `<testsuites>` has no `skipped`; each `<testsuite>` has its
    /// `timestamp` and `hostname`.
    #[test]
    fn raw_xml_has_the_schema_s_attributes() {
        let xml = render(jobs());
        assert!(
            xml.contains(
                r#"<testsuites name="inferscope-bench" tests="3" failures="1" errors="0""#
            ),
            "{xml}"
        );
        let head = &xml[xml.find("<testsuites").unwrap()..];
        let head = &head[..head.find('>').unwrap()];
        assert!(!head.contains("skipped"), "{head}");
        assert!(
            xml.contains(r#"timestamp="2026-12-01T16:00:00.000+00:00""#),
            "{xml}"
        );
        assert!(xml.contains(r#"hostname="ci-7""#), "{xml}");
        assert_eq!(xml.matches("<testcase ").count(), 3);
        assert_eq!(xml.matches("<failure ").count(), 1);
        assert!(xml.contains("long&lt;prompt&gt;"));
        assert_eq!(
            without_testsuites_skipped(
                r#"<a/><testsuites tests="1" skipped="0" errors="0"><x skipped="2"/>"#
            ),
            r#"<a/><testsuites tests="1" errors="0"><x skipped="2"/>"#
        );
        assert_eq!(
            inferscope_clock::domain_host("mono:gpu-7.corp:1:2"),
            Some("gpu-7.corp")
        );
        assert_eq!(inferscope_clock::domain_host("merged:abc"), None);
    }

    #[test]
    fn a_job_not_run_is_skipped_not_failed() {
        let mut skipped = failing_job();
        skipped.id = "agentic::repo_tour".into();
        skipped.status = JobStatus::NotRun;
        let xml = render(vec![passing_job(), skipped]);
        assert!(
            xml.contains(r#"tests="2" skipped="1" errors="0" failures="0""#),
            "{xml}"
        );
        assert_eq!(xml.matches("<failure ").count(), 0);
        assert!(xml.contains("<skipped "), "{xml}");
        assert!(xml.contains("status: not_run"), "{xml}");
    }

    /// A job stopped part-way is a JUnit `<error type="cancelled">`, never
    /// a success; a setup error is `<error type="setup_error">`.
    #[test]
    fn a_cancelled_job_is_an_error_not_a_success() {
        let mut cut = passing_job();
        cut.status = JobStatus::Cancelled;
        cut.notes = vec!["cancelled (Ctrl-C / SIGTERM): 1 of 3 sweep points ran".into()];
        let xml = render(vec![cut]);
        assert!(xml.contains(r#"errors="1""#), "{xml}");
        assert!(xml.contains(r#"type="cancelled""#), "{xml}");
        assert!(xml.contains("1 of 3 sweep points ran"), "{xml}");
        let r = Report::deserialize_from_str(&xml).unwrap();
        assert_eq!((r.tests, r.failures, r.errors), (1, 0, 1));
    }

    /// An endpoint that never answered is an `<error>` (the job could not be
    /// measured), not a `<failure>` of its gates; a server that answered with errors is.
    #[test]
    fn an_unreachable_endpoint_is_an_error_and_a_failing_server_a_failure() {
        let connect = |id: &str, code: FailureCode| {
            let mut r = RequestRecord::new(id, 0, 0, true);
            r.failure_code = Some(code);
            r
        };
        let mut down = failing_job();
        down.requests = vec![
            connect("a", FailureCode::Connect),
            connect("b", FailureCode::Connect),
        ];
        let xml = render(vec![down.clone()]);
        assert!(xml.contains(r#"type="endpoint_unreachable""#), "{xml}");
        assert!(xml.contains("<error "), "{xml}");
        assert!(!xml.contains("<failure "), "{xml}");
        let mut failing = down;
        failing.requests[1].failure_code = Some(FailureCode::HttpStatus);
        let xml = render(vec![failing]);
        assert!(xml.contains("<failure "), "{xml}");
        assert!(!xml.contains("<error "), "{xml}");
    }
}
