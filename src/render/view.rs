//! Plain input structs for the renderers; the runner maps its real results into them.

use crate::gate::{Outcome, Verdict};
use crate::stats::JobStats;

/// One grading check: `(check description, passed, detail)`, e.g.
/// `("contains(\"Oslo\")", false, Some("final answer lacks \"Oslo\""))`.
pub type GradingCheck = (String, bool, Option<String>);

/// One job's result as every renderer sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct JobReportView {
    /// `suite::job`, e.g. `agentic::lookup` (report.json's job id).
    pub id: String,
    /// Job kind: `agentic`, `context` or `swe`.
    pub kind: String,
    /// The job's outcome ([`crate::gate::JobOutcome::from_verdicts`]).
    pub passed: bool,
    /// The run was cancelled before this job started (`passed` is then false): it is
    /// shown as not run, never as a failure, and counted in [`RunTotals::not_run`].
    pub not_run: bool,
    /// Wall duration of the job on the run's monotonic clock, ns.
    pub duration_ns: u64,
    /// Gate verdicts from [`crate::gate::evaluate`] (built-in verdict included).
    pub verdicts: Vec<Verdict>,
    /// Grading checks, in declaration order.
    pub grading: Vec<GradingCheck>,
    /// Request statistics; `None` when the job made no measured requests (e.g. SWE).
    pub stats: Option<JobStats>,
    /// Failed requests per failure code, e.g. `("idle_timeout", 2)`, in display order.
    pub failure_codes: Vec<(String, u64)>,
    /// Free-form notes shown with the job (warnings, `apportioned` energy, …).
    pub notes: Vec<String>,
}

impl JobReportView {
    /// `not_run`, `pass` or `fail`: the job's status word in machine-read output (JSON
    /// messages, JUnit system-out), as in `report.json`.
    pub fn status(&self) -> &'static str {
        if self.not_run {
            "not_run"
        } else if self.passed {
            "pass"
        } else {
            "fail"
        }
    }

    /// The suite part of `id` (before the first `::`); the whole id when it has none.
    pub fn suite(&self) -> &str {
        self.id.split_once("::").map_or(&self.id, |(s, _)| s)
    }

    /// The job part of `id` (after the first `::`); the whole id when it has none.
    pub fn job_name(&self) -> &str {
        self.id.split_once("::").map_or(&self.id, |(_, j)| j)
    }

    /// Grading is passed when every check passed (an empty list passes).
    pub fn grading_passed(&self) -> bool {
        self.grading.iter().all(|g| g.1)
    }

    /// The lines explaining a job's status, in this order: every verdict that did not pass
    /// (fail, unavailable, skipped) by its message; every failed grading check
    /// (`grading: CHECK failed[: DETAIL]`); failed requests
    /// (`N of M requests failed[: 2 idle_timeout, 1 error_event]`); notes (`note: …`).
    /// Shared by the terminal lines, JUnit and Markdown.
    ///
    /// A job that was not run shows only its notes (why it did not run).
    pub fn reason_lines(&self) -> Vec<String> {
        if self.not_run {
            return self.notes.iter().map(|n| format!("note: {n}")).collect();
        }
        let mut lines: Vec<String> = self
            .verdicts
            .iter()
            .filter(|v| v.outcome != Outcome::Pass)
            .map(|v| v.message.clone())
            .collect();
        lines.extend(self.failed_grading_lines());
        if let Some(l) = self.transport_line() {
            lines.push(l);
        }
        lines.extend(self.notes.iter().map(|n| format!("note: {n}")));
        lines
    }

    /// The reasons that make the job fail: failing verdicts, failed grading checks, and
    /// (when nothing else explains a failed job) the transport line or notes.
    pub fn failure_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .verdicts
            .iter()
            .filter(|v| !v.outcome.is_passing())
            .map(|v| v.message.clone())
            .collect();
        lines.extend(self.failed_grading_lines());
        if lines.is_empty() && !self.passed {
            lines.extend(self.transport_line());
            lines.extend(self.notes.iter().map(|n| format!("note: {n}")));
            if lines.is_empty() {
                lines.push("job failed".to_string());
            }
        }
        lines
    }

    fn failed_grading_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.grading
            .iter()
            .filter(|g| !g.1)
            .map(|(name, _, detail)| match detail {
                Some(d) => format!("grading: {name} failed: {d}"),
                None => format!("grading: {name} failed"),
            })
    }

    fn transport_line(&self) -> Option<String> {
        let by_code: u64 = self.failure_codes.iter().map(|c| c.1).sum();
        let (failed, total) = match &self.stats {
            Some(s) => (s.failed, Some(s.requests)),
            None => (by_code, None),
        };
        if failed == 0 {
            return None;
        }
        let mut line = match total {
            Some(t) => format!("{failed} of {t} requests failed"),
            None => format!("{failed} requests failed"),
        };
        if !self.failure_codes.is_empty() {
            let codes: Vec<String> = self
                .failure_codes
                .iter()
                .map(|(c, n)| format!("{n} {c}"))
                .collect();
            line.push_str(": ");
            line.push_str(&codes.join(", "));
        }
        Some(line)
    }
}

/// Where the requests went: the built-in simulator or a URL (every output says which).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointLabel {
    /// The in-process simulator (no endpoint in the suite).
    Simulated,
    /// A real endpoint's base URL.
    Url(String),
}

impl EndpointLabel {
    /// `simulated (built-in)` or the URL with any `user:password@` replaced by `***@`.
    pub fn display(&self) -> String {
        match self {
            EndpointLabel::Simulated => "simulated (built-in)".to_string(),
            EndpointLabel::Url(u) => redact_userinfo(u),
        }
    }

    /// Whether the endpoint was the simulator.
    pub fn is_simulated(&self) -> bool {
        matches!(self, EndpointLabel::Simulated)
    }
}

fn redact_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let auth_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..auth_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// Totals of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunTotals {
    /// Jobs run (`passed + failed`; jobs not run are not counted).
    pub jobs: usize,
    /// Jobs passed.
    pub passed: usize,
    /// Jobs failed.
    pub failed: usize,
    /// Jobs not run because the run was cancelled before they started.
    pub not_run: usize,
    /// Wall duration of the run on the monotonic clock, ns.
    pub duration_ns: u64,
}

impl RunTotals {
    /// Counts `jobs` by `not_run` and `passed`; `duration_ns` is the run's measured
    /// duration.
    pub fn from_jobs(jobs: &[JobReportView], duration_ns: u64) -> RunTotals {
        let not_run = jobs.iter().filter(|j| j.not_run).count();
        let passed = jobs.iter().filter(|j| j.passed && !j.not_run).count();
        let run = jobs.len() - not_run;
        RunTotals {
            jobs: run,
            passed,
            failed: run - passed,
            not_run,
            duration_ns,
        }
    }

    /// The run's exit status: [`crate::gate::EXIT_FAILED`] (100) when a job failed or a
    /// job was not run (a cancelled run never exits 0), else [`crate::gate::EXIT_BAD_INPUT`]
    /// (2) when no job was selected, else [`crate::gate::EXIT_OK`].
    pub fn exit_status(&self) -> i32 {
        if self.failed > 0 || self.not_run > 0 {
            crate::gate::EXIT_FAILED
        } else if self.jobs == 0 {
            crate::gate::EXIT_BAD_INPUT
        } else {
            crate::gate::EXIT_OK
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::fixtures::{failing_job, passing_job};

    #[test]
    fn id_parts() {
        let j = passing_job();
        assert_eq!((j.suite(), j.job_name()), ("agentic", "lookup"));
        let mut j = j;
        j.id = "bare".into();
        assert_eq!((j.suite(), j.job_name()), ("bare", "bare"));
    }

    #[test]
    fn reason_lines_order_and_content() {
        assert!(passing_job().reason_lines().is_empty());
        assert_eq!(
            failing_job().reason_lines(),
            [
                "ttft_ms.p99 = 812.4 ms > bound 500 ms (client timing)",
                "tokens_per_joule = unavailable (no GPU), bound >= 2 tokens/J (measured)",
                "grading: contains(\"Oslo\") failed: final answer lacks \"Oslo\"",
                "1 of 2 requests failed: 1 idle_timeout",
                "note: endpoint was simulated",
            ]
        );
        assert_eq!(failing_job().failure_lines().len(), 3);
    }

    #[test]
    fn failed_job_without_failing_verdict_still_explains() {
        let mut j = passing_job();
        j.passed = false;
        j.notes = vec!["harness timed out".into()];
        assert_eq!(j.failure_lines(), ["note: harness timed out"]);
        j.notes.clear();
        assert_eq!(j.failure_lines(), ["job failed"]);
    }

    #[test]
    fn endpoint_label_redacts_credentials() {
        assert_eq!(EndpointLabel::Simulated.display(), "simulated (built-in)");
        assert_eq!(
            EndpointLabel::Url("http://u:secret@host:8000/v1?a=b@c".into()).display(),
            "http://***@host:8000/v1?a=b@c"
        );
        assert_eq!(
            EndpointLabel::Url("http://127.0.0.1:8000/v1".into()).display(),
            "http://127.0.0.1:8000/v1"
        );
    }

    #[test]
    fn totals_and_exit() {
        let t = RunTotals::from_jobs(&[passing_job(), failing_job()], 5);
        assert_eq!((t.jobs, t.passed, t.failed), (2, 1, 1));
        assert_eq!(t.exit_status(), 100);
        assert_eq!(RunTotals::from_jobs(&[passing_job()], 5).exit_status(), 0);
        assert_eq!(RunTotals::from_jobs(&[], 5).exit_status(), 2);
    }

    #[test]
    fn a_job_not_run_is_neither_run_nor_failed_and_never_exits_0() {
        let mut skipped = failing_job();
        skipped.not_run = true;
        skipped.notes = vec!["not run: cancelled before start".into()];
        let t = RunTotals::from_jobs(&[passing_job(), skipped.clone()], 5);
        assert_eq!((t.jobs, t.passed, t.failed, t.not_run), (1, 1, 0, 1));
        assert_eq!(t.exit_status(), 100, "a cancelled run never exits 0");
        let t = RunTotals::from_jobs(std::slice::from_ref(&skipped), 5);
        assert_eq!((t.jobs, t.failed, t.not_run), (0, 0, 1));
        assert_eq!(t.exit_status(), 100);
        assert_eq!(
            skipped.reason_lines(),
            ["note: not run: cancelled before start"]
        );
    }
}
