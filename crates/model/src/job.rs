//! Jobs as reported: outcome, statistics, verdicts, energy, trajectories, requests.

use serde::{Deserialize, Serialize};

use super::attribution::MarkerLineError;
use super::baseline::JobComparison;
use super::figure::Figure;
use super::gate::{Outcome, Verdict};
use super::load::{LoadReport, SweepReport};
use super::request::{FailureCode, RequestRecord};
use super::stats::JobStats;
use super::step::TrajectoryReport;

/// What a job is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobKind {
    /// A model-driven or scripted tool loop.
    Agentic,
    /// TTFT against context length.
    Context,
    /// An external harness.
    Swe,
}

impl JobKind {
    /// `agentic`, `context` or `swe`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Agentic => "agentic",
            JobKind::Context => "context",
            JobKind::Swe => "swe",
        }
    }
}

/// How a job ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Every gate and check passed.
    Pass,
    /// A gate, a check, a request or the trajectory's end failed.
    Fail,
    /// Ctrl-C / SIGTERM stopped it before all its units or sweep points ran: never a pass,
    /// whatever its gates said about what did run.
    Cancelled,
    /// The run was cancelled before it started: no request, no verdict.
    NotRun,
    /// It could not start: its endpoint failed the preflight (nothing listening, `/models`
    /// not found, model not listed, auth refused) or its suite could not be set up. No
    /// request was sent.
    SetupError,
}

impl JobStatus {
    /// `pass`, `fail`, `cancelled`, `not_run` or `setup_error`.
    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Pass => "pass",
            JobStatus::Fail => "fail",
            JobStatus::Cancelled => "cancelled",
            JobStatus::NotRun => "not_run",
            JobStatus::SetupError => "setup_error",
        }
    }

    /// The nextest-style status word: `PASS`, `FAIL`, `CANCELLED`, `NOT RUN`, `SETUP ERROR`.
    pub fn word(self) -> &'static str {
        match self {
            JobStatus::Pass => "PASS",
            JobStatus::Fail => "FAIL",
            JobStatus::Cancelled => "CANCELLED",
            JobStatus::NotRun => "NOT RUN",
            JobStatus::SetupError => "SETUP ERROR",
        }
    }

    /// Whether the job ran (made requests or started its harness): `pass`, `fail`,
    /// `cancelled`.
    pub fn ran(self) -> bool {
        matches!(
            self,
            JobStatus::Pass | JobStatus::Fail | JobStatus::Cancelled
        )
    }
}

/// Why a setup failed (the preflight's taxonomy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SetupCause {
    /// Nothing is listening (connection refused), or the host did not answer.
    Unreachable,
    /// `GET {base}/models` answered 404: the base URL probably lacks `/v1`.
    ModelsNotFound,
    /// The endpoint answered but does not serve the suite's model.
    ModelNotListed,
    /// The endpoint refused the credentials (HTTP 401 or 403).
    AuthRefused,
    /// `/models` answered another error status, or a body that is not a model list.
    BadPreflightResponse,
    /// The suite could not be prepared (simulator, client, tools, API key variable).
    Configuration,
}

impl SetupCause {
    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            SetupCause::Unreachable => "unreachable",
            SetupCause::ModelsNotFound => "models_not_found",
            SetupCause::ModelNotListed => "model_not_listed",
            SetupCause::AuthRefused => "auth_refused",
            SetupCause::BadPreflightResponse => "bad_preflight_response",
            SetupCause::Configuration => "configuration",
        }
    }
}

/// A setup error: the cause, one message naming it, and what the server said (bounded and
/// redacted: no API key, no `Authorization` value; never in the timeline).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetupError {
    /// Why.
    pub cause: SetupCause,
    /// One line for people, naming the cause and what to do.
    pub message: String,
    /// The URL that failed (userinfo removed), when there was one.
    pub url: Option<String>,
    /// The HTTP status, when the server answered.
    pub http_status: Option<u16>,
    /// An excerpt of the server's error body (at most 512 bytes, secrets redacted).
    pub body_excerpt: Option<String>,
    /// The models the endpoint listed (for `model_not_listed`).
    pub listed_models: Vec<String>,
}

/// One grading check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GradingCheck {
    /// The check's description (suite-authored), `#i` prefixed with several trajectories.
    pub check: String,
    /// Passed.
    pub passed: bool,
    /// Why it failed (product text), `null` when passed.
    pub detail: Option<String>,
}

/// Failed requests of one failure code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureCount {
    /// The code.
    pub code: FailureCode,
    /// Requests that failed with it.
    pub count: u64,
}

/// SWE harness result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarnessReport {
    /// Exit code (`null` when killed or not started).
    pub exit_code: Option<i32>,
    /// Killed after the timeout.
    pub timed_out: bool,
    /// Why it could not start.
    pub spawn_error: Option<String>,
    /// What was read from its `INFERSCOPE_STEPS_FILE` (`truncated_tail`, rejected lines,
    /// steps before the anchor); `null` when it wrote none.
    pub steps_file: Option<StepsFileReport>,
}

/// The provenance of an SWE harness's step markers (`INFERSCOPE_STEPS_FILE`), in
/// `report.json` under `jobs[].harness.steps_file`: nothing a harness
/// wrote is lost silently.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepsFileReport {
    /// Valid markers kept (steps of the trajectory).
    pub markers: usize,
    /// The last line was half-written (a harness killed mid-write): left out, every
    /// record before it kept.
    pub truncated_tail: bool,
    /// The line number of that truncated line.
    pub truncated_line: Option<usize>,
    /// Rejected lines with their 1-based line numbers (at most
    /// 20, the marker reader's cap).
    pub rejected: Vec<MarkerLineError>,
    /// Rejected lines in the whole file.
    pub rejected_count: usize,
    /// Run-unique ids of steps whose marker starts before the run's reference instant:
    /// kept with their real times (`start_before_anchor_ns`) and dropped from attribution
    /// only by the `outside_run` rule
    /// (docs/measurement.md "The wall: controlled concurrency only").
    pub before_anchor_steps: Vec<u64>,
    /// Why the file could not be read (`null` when read or absent).
    pub read_error: Option<String>,
}

/// A job's energy figures (one definition for sequential and load jobs; see
/// `docs/figures.md`): device energy over the job's measured windows (its run, or each
/// load point's window), output tokens of its successful requests over that energy, and
/// that energy per trajectory run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobEnergy {
    /// Device energy over the job's windows, J (summed over devices; missing when a device
    /// with power samples could not cover a window).
    pub energy_j: Figure<f64>,
    /// Output tokens of the job's successful requests per joule of `energy_j`.
    pub tokens_per_joule: Figure<f64>,
    /// `energy_j` / trajectories run: the MEAN trajectory's energy (`apportioned` above one
    /// trajectory in flight).
    pub energy_per_trajectory_j: Figure<f64>,
}

/// One job in the report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobReport {
    /// `suite::job`.
    pub id: String,
    /// `agentic`, `context` or `swe`.
    pub kind: JobKind,
    /// How it ended.
    pub status: JobStatus,
    /// Job duration, ns.
    pub duration_ns: u64,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Why it could not start (`status = setup_error`).
    pub setup_error: Option<SetupError>,
    /// Request statistics (`null` when the job made no requests of its own). For a load
    /// job: every non-warm-up request of every point, rates over the sum of the point
    /// windows (per-point figures are under `sweep`).
    pub stats: Option<JobStats>,
    /// Gate verdicts (built-in gates first); empty for a job that did not run.
    pub verdicts: Vec<Verdict>,
    /// Grading checks over all trajectories.
    pub grading: Vec<GradingCheck>,
    /// Fraction of trajectories that passed grading (`null` without checks).
    pub grade_pass_rate: Option<f64>,
    /// Energy figures.
    pub energy: JobEnergy,
    /// Failed requests per failure code, in code order.
    pub failure_codes: Vec<FailureCount>,
    /// Notes (preflight, set-up, energy basis, cancellation).
    pub notes: Vec<String>,
    /// SWE harness outcome.
    pub harness: Option<HarnessReport>,
    /// Load settings and what was achieved (`null` for a sequential job).
    pub load: Option<LoadReport>,
    /// The load curve (`null` for a sequential job).
    pub sweep: Option<SweepReport>,
    /// Comparison with `--baseline NAME` (`null` without one, or when the baseline lacks
    /// this job).
    pub baseline: Option<JobComparison>,
    /// Trajectories. For a load job only the first trajectory of each point (a sample
    /// the step tables, the dashboard and OTLP show; bounded whatever the run's size):
    /// every unit is in [`JobReport::units`] and every request in `requests`, both lines
    /// of `requests.jsonl`.
    pub trajectories: Vec<TrajectoryReport>,
    /// Every unit of a load job (empty for a sequential job, whose trajectories are all in
    /// `trajectories`). Not in `report.json`: unit lines of `requests.jsonl`, filled like
    /// `requests` when a reader asks for the records.
    #[serde(skip)]
    pub units: Vec<super::records::UnitRecord>,
    /// Every request of the job (no content; error text bounded and redacted). Not in
    /// `report.json` (schema v3): the records are lines of the run's `requests.jsonl`,
    /// and a reader fills this from it only when it asks for the records
    /// (`commands::read_report_with_requests`).
    #[serde(skip)]
    pub requests: Vec<RequestRecord>,
}

impl JobReport {
    /// The suite part of `id` (before the first `::`); the whole id when it has none.
    pub fn suite(&self) -> &str {
        self.id.split_once("::").map_or(&self.id, |(s, _)| s)
    }

    /// The job part of `id` (after the first `::`); the whole id when it has none.
    pub fn job_name(&self) -> &str {
        self.id.split_once("::").map_or(&self.id, |(_, j)| j)
    }

    /// Grading passed (every check; an empty list passes).
    pub fn grading_passed(&self) -> bool {
        self.grading.iter().all(|g| g.passed)
    }

    /// The lines explaining a job's status, in this order: every verdict that did not pass
    /// (fail, unavailable, skipped) by its message; every failed grading check
    /// (`grading: CHECK failed[: DETAIL]`); failed requests
    /// (`N of M requests failed[: 2 idle_timeout, 1 stream_error]`); notes (`note: …`).
    /// Shared by the terminal lines, JUnit and Markdown. A job that did not run shows only
    /// its setup error and notes.
    pub fn reason_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if let Some(e) = &self.setup_error {
            lines.push(format!("setup error ({}): {}", e.cause.as_str(), e.message));
        }
        if !self.status.ran() {
            lines.extend(self.notes.iter().map(|n| format!("note: {n}")));
            return lines;
        }
        lines.extend(
            self.verdicts
                .iter()
                .filter(|v| v.outcome != Outcome::Pass)
                .map(|v| v.message.clone()),
        );
        lines.extend(self.failed_grading_lines());
        lines.extend(self.transport_line());
        lines.extend(self.notes.iter().map(|n| format!("note: {n}")));
        lines
    }

    /// The reasons that make the job not pass: failing verdicts, failed grading checks, and
    /// (when nothing else explains it) the setup error, the transport line or the notes.
    pub fn failure_lines(&self) -> Vec<String> {
        let mut lines: Vec<String> = self
            .verdicts
            .iter()
            .filter(|v| !v.outcome.is_passing())
            .map(|v| v.message.clone())
            .collect();
        lines.extend(self.failed_grading_lines());
        if lines.is_empty() && self.status != JobStatus::Pass {
            if let Some(e) = &self.setup_error {
                lines.push(format!("setup error ({}): {}", e.cause.as_str(), e.message));
            }
            lines.extend(self.transport_line());
            lines.extend(self.notes.iter().map(|n| format!("note: {n}")));
            if lines.is_empty() {
                lines.push(format!("job {}", self.status.as_str()));
            }
        }
        lines
    }

    fn failed_grading_lines(&self) -> impl Iterator<Item = String> + '_ {
        self.grading
            .iter()
            .filter(|g| !g.passed)
            .map(|g| match &g.detail {
                Some(d) => format!("grading: {} failed: {d}", g.check),
                None => format!("grading: {} failed", g.check),
            })
    }

    fn transport_line(&self) -> Option<String> {
        let by_code: u64 = self.failure_codes.iter().map(|c| c.count).sum();
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
                .map(|c| format!("{} {}", c.count, c.code.as_str()))
                .collect();
            line.push_str(": ");
            line.push_str(&codes.join(", "));
        }
        Some(line)
    }
}
