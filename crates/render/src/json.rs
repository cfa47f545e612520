//! `--message-format json`: one JSON object per line — one per job, then
//! one summary object. Missing values are `null`, never omitted. The objects are structs
//! (their key order is their field order, whatever serde_json's features).
//!
//! Job object keys, in order: `type` (`"job"`), `id`, `suite`, `kind`, `status`
//! (`"pass"`/`"fail"`/`"cancelled"`/`"not_run"`/`"setup_error"`), `duration_s` (float
//! seconds), `duration_ns` (integer), `setup_error` (cause, message, URL, HTTP status,
//! redacted body excerpt; `null` when the job could start), `verdicts` (every
//! [`inferscope_model::Verdict`], with its basis), `grading` (`[{check, passed, detail}]`),
//! `failure_codes` (`[{code, count}]`), `stats` ([`inferscope_model::JobStats`] or `null`),
//! `energy` ([`inferscope_model::JobEnergy`]: each figure with its basis), `notes`.
//!
//! Summary object keys: `type` (`"summary"`), `status` (`"pass"` only when jobs ran and
//! every one passed), `jobs` (jobs run: `passed + failed + cancelled`), `passed`, `failed`,
//! `cancelled`, `not_run`, `setup_errors`, `duration_s`, `duration_ns`, `endpoint`,
//! `simulated`, `exit_code`.

use serde::Serialize;

use super::view::EndpointLabel;
use inferscope_model::{
    FailureCount, GradingCheck, JobEnergy, JobKind, JobReport, JobStats, JobStatus, SetupError,
    SummaryReport, Verdict,
};

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The job object (see the module docs for its keys).
#[derive(Debug, Serialize)]
pub struct JobMessage<'a> {
    /// `"job"`.
    #[serde(rename = "type")]
    pub kind_of_message: &'static str,
    /// `suite::job`.
    pub id: &'a str,
    /// The suite part of `id`.
    pub suite: &'a str,
    /// `agentic`, `context` or `swe`.
    pub kind: JobKind,
    /// How the job ended.
    pub status: JobStatus,
    /// Duration, s.
    pub duration_s: f64,
    /// Duration, ns.
    pub duration_ns: u64,
    /// Why it could not start.
    pub setup_error: &'a Option<SetupError>,
    /// Gate verdicts.
    pub verdicts: &'a [Verdict],
    /// Grading checks.
    pub grading: &'a [GradingCheck],
    /// Failed requests per code.
    pub failure_codes: &'a [FailureCount],
    /// Request statistics.
    pub stats: &'a Option<JobStats>,
    /// Energy figures.
    pub energy: &'a JobEnergy,
    /// Notes.
    pub notes: &'a [String],
}

/// The job object of `job`.
pub fn job_value(job: &JobReport) -> JobMessage<'_> {
    JobMessage {
        kind_of_message: "job",
        id: &job.id,
        suite: job.suite(),
        kind: job.kind,
        status: job.status,
        duration_s: seconds(job.duration_ns),
        duration_ns: job.duration_ns,
        setup_error: &job.setup_error,
        verdicts: &job.verdicts,
        grading: &job.grading,
        failure_codes: &job.failure_codes,
        stats: &job.stats,
        energy: &job.energy,
        notes: &job.notes,
    }
}

/// One line (no newline) holding the job object.
pub fn job_message(job: &JobReport) -> String {
    serde_json::to_string(&job_value(job)).expect("job messages always serialize")
}

/// The summary object.
#[derive(Debug, Serialize)]
struct SummaryMessage {
    #[serde(rename = "type")]
    kind_of_message: &'static str,
    status: &'static str,
    jobs: usize,
    passed: usize,
    failed: usize,
    cancelled: usize,
    not_run: usize,
    setup_errors: usize,
    duration_s: f64,
    duration_ns: u64,
    endpoint: String,
    simulated: bool,
    exit_code: i32,
}

/// One line (no newline) holding the summary object; `exit_code` is the run's.
pub fn summary_message(totals: &SummaryReport, endpoint: &EndpointLabel) -> String {
    let m = SummaryMessage {
        kind_of_message: "summary",
        status: if totals.all_passed() { "pass" } else { "fail" },
        jobs: totals.jobs,
        passed: totals.passed,
        failed: totals.failed,
        cancelled: totals.cancelled,
        not_run: totals.not_run,
        setup_errors: totals.setup_errors,
        duration_s: seconds(totals.duration_ns),
        duration_ns: totals.duration_ns,
        endpoint: endpoint.display(),
        simulated: endpoint.is_simulated(),
        exit_code: totals.exit_status,
    };
    serde_json::to_string(&m).expect("summary messages always serialize")
}

/// The closing object naming the run directory.
pub fn artifacts_message(run_dir: &std::path::Path) -> String {
    #[derive(Serialize)]
    struct Artifacts<'a> {
        #[serde(rename = "type")]
        kind_of_message: &'static str,
        run_dir: &'a std::path::Path,
    }
    serde_json::to_string(&Artifacts {
        kind_of_message: "artifacts",
        run_dir,
    })
    .expect("paths serialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{failing_job, passing_job};
    use serde_json::Value;

    #[test]
    fn job_lines_are_single_line_valid_json() {
        for job in [passing_job(), failing_job()] {
            let line = job_message(&job);
            assert!(!line.contains('\n'));
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["type"], "job");
            assert_eq!(v["id"], job.id.as_str());
            assert_eq!(v["status"], job.status.as_str());
            assert!(v["verdicts"].is_array());
            assert_eq!(v["verdicts"].as_array().unwrap().len(), job.verdicts.len());
        }
        let v: Value = serde_json::from_str(&job_message(&failing_job())).unwrap();
        assert_eq!(v["duration_s"], 0.512);
        assert_eq!(v["duration_ns"], 512_000_000u64);
        assert_eq!(v["verdicts"][1]["outcome"], "fail");
        assert_eq!(v["verdicts"][1]["basis"], "client_timing");
        assert_eq!(v["verdicts"][2]["gate"], "max_error_rate");
        assert_eq!(v["verdicts"][3]["value"], Value::Null);
        assert_eq!(v["verdicts"][3]["outcome"], "unavailable");
        assert_eq!(v["verdicts"][3]["basis"], "unavailable");
        assert_eq!(v["grading"][1]["detail"], "final answer lacks \"Oslo\"");
        assert_eq!(v["grading"][0]["detail"], Value::Null);
        assert_eq!(v["failure_codes"][0]["code"], "idle_timeout");
        assert_eq!(
            v["stats"]["tpot_ms"]["value"],
            Value::Null,
            "missing is null, present"
        );
        assert_eq!(v["stats"]["failed"], 1);
    }

    #[test]
    fn keys_in_documented_order() {
        let v: Value = serde_json::from_str(&job_message(&passing_job())).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "type",
                "id",
                "suite",
                "kind",
                "status",
                "duration_s",
                "duration_ns",
                "setup_error",
                "verdicts",
                "grading",
                "failure_codes",
                "stats",
                "energy",
                "notes"
            ]
        );
    }

    #[test]
    fn summary_object() {
        let t = SummaryReport::of(&[passing_job(), failing_job()], 1_746_000_000, false);
        let line = summary_message(&t, &EndpointLabel::Simulated);
        assert_eq!(
            line,
            r#"{"type":"summary","status":"fail","jobs":2,"passed":1,"failed":1,"cancelled":0,"not_run":0,"setup_errors":0,"duration_s":1.746,"duration_ns":1746000000,"endpoint":"simulated (built-in)","simulated":true,"exit_code":100}"#
        );
    }

    #[test]
    fn a_job_not_run_is_reported_not_run() {
        let mut skipped = failing_job();
        skipped.status = JobStatus::NotRun;
        let v: Value = serde_json::from_str(&job_message(&skipped)).unwrap();
        assert_eq!(v["status"], "not_run");
        let mut cut = failing_job();
        cut.status = JobStatus::Cancelled;
        let v: Value = serde_json::from_str(&job_message(&cut)).unwrap();
        assert_eq!(v["status"], "cancelled");
        let t = SummaryReport::of(&[passing_job(), skipped], 5, true);
        let v: Value =
            serde_json::from_str(&summary_message(&t, &EndpointLabel::Simulated)).unwrap();
        assert_eq!(v["status"], "fail");
        assert_eq!(
            (v["jobs"].as_u64(), v["passed"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(
            (v["failed"].as_u64(), v["not_run"].as_u64()),
            (Some(0), Some(1))
        );
        assert_eq!(v["exit_code"], 100);
    }
}
