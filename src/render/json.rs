//! `--message-format json` (issue 6 item 5): one JSON object per line — one per job, then
//! one summary object. Missing values are `null`, never omitted.
//!
//! Job object keys, in order: `type` (`"job"`), `id`, `suite`, `kind`, `status`
//! (`"pass"`/`"fail"`/`"not_run"` — the last for a job the run was cancelled before
//! starting), `duration_s` (float seconds), `duration_ns` (integer), `verdicts`
//! (every [`crate::gate::Verdict`]), `grading` (`[{check, passed, detail}]`),
//! `failure_codes` (`[{code, count}]`), `stats` ([`crate::stats::JobStats`] or `null`),
//! `notes`.
//!
//! Summary object keys: `type` (`"summary"`), `status` (`"pass"` only when jobs ran, none
//! failed and none was left not run), `jobs` (jobs run: `passed + failed`), `passed`,
//! `failed`, `not_run` (jobs not started because the run was cancelled), `duration_s`,
//! `duration_ns`, `endpoint`, `simulated`, `exit_code`.

use super::view::{EndpointLabel, JobReportView, RunTotals};
use serde_json::{Value, json};

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The job object as a JSON value (see the module docs for its keys).
pub fn job_value(job: &JobReportView) -> Value {
    json!({
        "type": "job",
        "id": job.id,
        "suite": job.suite(),
        "kind": job.kind,
        "status": job.status(),
        "duration_s": seconds(job.duration_ns),
        "duration_ns": job.duration_ns,
        "verdicts": job.verdicts,
        "grading": job.grading.iter().map(|(check, passed, detail)| json!({
            "check": check, "passed": passed, "detail": detail,
        })).collect::<Vec<_>>(),
        "failure_codes": job.failure_codes.iter().map(|(code, count)| json!({
            "code": code, "count": count,
        })).collect::<Vec<_>>(),
        "stats": job.stats,
        "notes": job.notes,
    })
}

/// One line (no newline) holding the job object.
pub fn job_message(job: &JobReportView) -> String {
    job_value(job).to_string()
}

/// One line (no newline) holding the summary object; `exit_code` is
/// [`RunTotals::exit_status`].
pub fn summary_message(totals: &RunTotals, endpoint: &EndpointLabel) -> String {
    json!({
        "type": "summary",
        "status": if totals.failed == 0 && totals.not_run == 0 && totals.jobs > 0 { "pass" } else { "fail" },
        "jobs": totals.jobs,
        "passed": totals.passed,
        "failed": totals.failed,
        "not_run": totals.not_run,
        "duration_s": seconds(totals.duration_ns),
        "duration_ns": totals.duration_ns,
        "endpoint": endpoint.display(),
        "simulated": endpoint.is_simulated(),
        "exit_code": totals.exit_status(),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::fixtures::{failing_job, passing_job};

    #[test]
    fn job_lines_are_single_line_valid_json() {
        for job in [passing_job(), failing_job()] {
            let line = job_message(&job);
            assert!(!line.contains('\n'));
            let v: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(v["type"], "job");
            assert_eq!(v["id"], job.id.as_str());
            assert_eq!(v["status"], if job.passed { "pass" } else { "fail" });
            assert!(v["verdicts"].is_array());
            assert_eq!(v["verdicts"].as_array().unwrap().len(), job.verdicts.len());
        }
        let v: Value = serde_json::from_str(&job_message(&failing_job())).unwrap();
        assert_eq!(v["duration_s"], 0.512);
        assert_eq!(v["duration_ns"], 512_000_000u64);
        assert_eq!(v["verdicts"][1]["outcome"], "fail");
        assert_eq!(v["verdicts"][2]["value"], Value::Null);
        assert_eq!(v["verdicts"][2]["outcome"], "unavailable");
        assert_eq!(v["grading"][1]["detail"], "final answer lacks \"Oslo\"");
        assert_eq!(v["grading"][0]["detail"], Value::Null);
        assert_eq!(v["failure_codes"][0]["code"], "idle_timeout");
        assert_eq!(
            v["stats"]["tpot_ms"],
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
                "verdicts",
                "grading",
                "failure_codes",
                "stats",
                "notes"
            ]
        );
    }

    #[test]
    fn summary_object() {
        let t = RunTotals::from_jobs(&[passing_job(), failing_job()], 1_746_000_000);
        let line = summary_message(&t, &EndpointLabel::Simulated);
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v,
            json!({
                "type": "summary", "status": "fail", "jobs": 2, "passed": 1, "failed": 1,
                "not_run": 0, "duration_s": 1.746, "duration_ns": 1_746_000_000u64,
                "endpoint": "simulated (built-in)", "simulated": true, "exit_code": 100,
            })
        );
    }

    #[test]
    fn a_job_not_run_is_reported_not_run() {
        let mut skipped = failing_job();
        skipped.not_run = true;
        let v: Value = serde_json::from_str(&job_message(&skipped)).unwrap();
        assert_eq!(v["status"], "not_run");
        let t = RunTotals::from_jobs(&[passing_job(), skipped], 5);
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
