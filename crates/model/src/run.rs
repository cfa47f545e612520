//! The run as reported: `report.json`, schema [`REPORT_SCHEMA`].

use serde::{Deserialize, Serialize};

use super::exit::ExitCode;

use super::attribution::RunAttributionSummary;
pub use super::capture::{CaptureReport, PowerReport, Quality};
use super::job::{JobReport, JobStatus, SetupError};
use super::shard::{MergeReport, ShardIdentity};
use super::telemetry::TelemetrySummary;

/// Schema id of `report.json`. v2 is the typed model: every figure with its
/// basis, statuses as closed enums, the step attribution (docs/measurement.md) inside each trajectory and
/// step. v1 files are not read: readers refuse them with [`ReportError::UnsupportedSchema`].
pub const REPORT_SCHEMA: &str = "inferscope-bench.report/v3";

/// The schemas of reports this version cannot read (named in the error).
pub const UNSUPPORTED_SCHEMAS: [&str; 2] =
    ["inferscope-bench.report/v1", "inferscope-bench.report/v2"];

/// The endpoint a suite ran against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointReport {
    /// Suite name.
    pub suite: String,
    /// Base URL used (the simulator's loopback URL when simulated).
    pub base_url: String,
    /// True when the built-in simulator served the suite (never a real-engine figure).
    pub simulated: bool,
    /// Model name sent.
    pub model: String,
    /// Metrics profile (`auto`, `vllm`, `sglang`, `llamacpp`, `sim`).
    pub engine_profile: String,
    /// Why the suite's jobs could not start (preflight or set-up), `null` when they could.
    pub setup_error: Option<SetupError>,
}

/// Run totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryReport {
    /// Jobs run (`passed + failed + cancelled`; jobs not run or not set up are not counted).
    pub jobs: usize,
    /// Jobs passed.
    pub passed: usize,
    /// Jobs failed.
    pub failed: usize,
    /// Jobs Ctrl-C / SIGTERM stopped before all their work ran.
    pub cancelled: usize,
    /// Jobs not run: the run was cancelled before they started.
    pub not_run: usize,
    /// Jobs that could not start (setup errors).
    pub setup_errors: usize,
    /// Run duration, ns.
    pub duration_ns: u64,
    /// 0 all passed; 100 any failed or the run was cancelled (never 0); 96 a setup error
    /// (preflight); 2 no job selected or artifacts not written.
    pub exit_status: i32,
}

impl SummaryReport {
    /// Counts `jobs` by status; the exit status by [`exit_status`].
    pub fn of(jobs: &[JobReport], duration_ns: u64, cancelled: bool) -> SummaryReport {
        let count = |s: JobStatus| jobs.iter().filter(|j| j.status == s).count();
        let (passed, failed, c, not_run, setup_errors) = (
            count(JobStatus::Pass),
            count(JobStatus::Fail),
            count(JobStatus::Cancelled),
            count(JobStatus::NotRun),
            count(JobStatus::SetupError),
        );
        let mut s = SummaryReport {
            jobs: passed + failed + c,
            passed,
            failed,
            cancelled: c,
            not_run,
            setup_errors,
            duration_ns,
            exit_status: 0,
        };
        s.exit_status = exit_status(&s, jobs.is_empty(), cancelled);
        s
    }

    /// Whether everything passed (jobs ran, none failed, was cancelled, not run or not set
    /// up).
    pub fn all_passed(&self) -> bool {
        self.jobs > 0
            && self.failed == 0
            && self.cancelled == 0
            && self.not_run == 0
            && self.setup_errors == 0
    }
}

/// Exit status: a cancelled run is 100 (never 0); else a setup error is 96 (nextest's
/// `SETUP_ERROR`); else any failed job is 100; a run that selected no job is 2; else 0.
pub fn exit_status(s: &SummaryReport, no_jobs: bool, cancelled: bool) -> i32 {
    if cancelled || s.cancelled > 0 || s.not_run > 0 {
        ExitCode::FAILED
    } else if s.setup_errors > 0 {
        ExitCode::SETUP_ERROR
    } else if no_jobs {
        ExitCode::BAD_INPUT
    } else if s.failed > 0 || s.jobs == 0 {
        ExitCode::FAILED
    } else {
        ExitCode::OK
    }
}

/// `report.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReport {
    /// [`REPORT_SCHEMA`].
    pub schema: String,
    /// Run id.
    pub run_id: String,
    /// `inferscope-bench <version>`.
    pub tool: String,
    /// Run start, RFC 3339 UTC (display only).
    pub started_utc: String,
    /// step-attribution anchor (docs/measurement.md): unix ns of the reference instant.
    pub reference_instant_unix_ns: u64,
    /// Clock domain of every `*_ns` value.
    pub clock_domain_id: String,
    /// Percentile method of every percentile.
    pub percentile_method: String,
    /// True when Ctrl-C / SIGTERM ended the run early.
    pub cancelled: bool,
    /// The first suite's endpoint (see `endpoints` for all).
    pub endpoint: Option<EndpointReport>,
    /// Every suite's endpoint.
    pub endpoints: Vec<EndpointReport>,
    /// Timeline capture.
    pub capture: CaptureReport,
    /// What supplied power (from what was sampled).
    pub power: PowerReport,
    /// What the samplers did; `null` when no sampler ran (e.g. a setup error).
    pub telemetry: Option<TelemetrySummary>,
    /// The run's step-attribution condition (docs/measurement.md) and joins; `null` without telemetry.
    pub attribution: Option<RunAttributionSummary>,
    /// Jobs.
    pub jobs: Vec<JobReport>,
    /// Totals.
    pub summary: SummaryReport,
    /// This run's identity as one shard of several (`run --partition` / `--shard`);
    /// `null` for an unsharded run.
    pub shard: Option<ShardIdentity>,
    /// For a run built by `merge`: how, and one section per shard; `null` otherwise.
    pub merge: Option<MergeReport>,
    /// The per-request records' companion file (`requests.jsonl`, written before
    /// `report.json`): its name, length, record count and SHA-256; `null` when the report
    /// was never written to a run directory.
    pub requests_file: Option<RequestsFile>,
}

/// `report.json`'s `requests_file`: what a reader must find in `requests.jsonl`.
/// A file of another length, hash or record count is refused, naming the difference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestsFile {
    /// `requests.jsonl` (readers open only that name, whatever this says).
    pub path: String,
    /// The file's schema ([`super::records::REQUESTS_SCHEMA`]).
    pub schema: String,
    /// Its length, bytes.
    pub bytes: u64,
    /// Request records (lines after the header line).
    pub records: u64,
    /// Unit lines of load jobs (schema v2; absent, i.e. 0, in a v1 file or a run without
    /// a load job).
    #[serde(default, skip_serializing_if = "is_zero_u64")]
    pub units: u64,
    /// SHA-256 of the whole file, lower-case hex.
    pub sha256: String,
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

impl RunReport {
    /// The endpoint job `job_id` ran against: the entry of `endpoints` whose suite is the
    /// job id's part before `::`, else the first suite's `endpoint`.
    pub fn endpoint_of(&self, job_id: &str) -> Option<&EndpointReport> {
        let suite = job_id.split_once("::").map_or(job_id, |(s, _)| s);
        self.endpoints
            .iter()
            .find(|e| e.suite == suite)
            .or(self.endpoint.as_ref())
    }

    /// Reads a report: the schema first (a v1 file is refused by name, any other schema as
    /// unknown), then the typed body.
    pub fn from_json(bytes: &[u8]) -> Result<RunReport, ReportError> {
        #[derive(Deserialize)]
        struct Head {
            schema: Option<String>,
        }
        let head: Head =
            serde_json::from_slice(bytes).map_err(|e| ReportError::Malformed(e.to_string()))?;
        match head.schema.as_deref() {
            Some(REPORT_SCHEMA) => {}
            Some(s) if UNSUPPORTED_SCHEMAS.contains(&s) => {
                return Err(ReportError::UnsupportedSchema(s.to_string()));
            }
            Some(s) => return Err(ReportError::UnknownSchema(s.to_string())),
            None => return Err(ReportError::UnknownSchema(String::new())),
        }
        Self::from_json_body(bytes).map_err(|e| ReportError::Malformed(e.to_string()))
    }

    /// The typed body of a report, its schema not checked: `serde_json::from_slice` for
    /// this type, compiled once, here, rather than in every crate that reads a report
    /// (docs/architecture.md "Build cost").
    pub fn from_json_body(bytes: &[u8]) -> serde_json::Result<RunReport> {
        serde_json::from_slice(bytes)
    }

    /// The report as `report.json` writes it (pretty JSON, 2-space indent, no trailing
    /// newline); reading it back with [`RunReport::from_json`] and writing again gives the
    /// same bytes.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).expect("the report model always serializes")
    }

    /// [`RunReport::to_json`] written to `w` as it is serialized (the same bytes, without
    /// the whole document in memory). Errors are `w`'s.
    pub fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        serde_json::to_writer_pretty(w, self).map_err(std::io::Error::other)
    }
}

/// Why a `report.json` could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReportError {
    /// A schema this version no longer reads (v1): re-run, or use the version that wrote it.
    UnsupportedSchema(String),
    /// A schema this version does not know.
    UnknownSchema(String),
    /// Not JSON, or not the model's shape.
    Malformed(String),
}

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReportError::UnsupportedSchema(s) => write!(
                f,
                "unsupported schema {s:?}: this version reads {REPORT_SCHEMA:?} only (re-run \
                 the suite, or read it with the version that wrote it)"
            ),
            ReportError::UnknownSchema(s) if s.is_empty() => {
                write!(f, "no schema: not an inferscope-bench report")
            }
            ReportError::UnknownSchema(s) => {
                write!(
                    f,
                    "unknown schema {s:?} (this version reads {REPORT_SCHEMA:?})"
                )
            }
            ReportError::Malformed(e) => write!(f, "not a {REPORT_SCHEMA} report: {e}"),
        }
    }
}

impl std::error::Error for ReportError {}

#[cfg(test)]
mod tests {
    use super::*;

    /// The console and JUnit line of a capture that dropped events, and nothing
    /// when none was dropped or capture was off.
    #[test]
    fn the_partial_line_names_how_many_events_were_dropped() {
        let mut c = CaptureReport::default();
        assert_eq!(c.partial_line(), None, "capture off");
        c.dropped = Some(0);
        assert_eq!(c.partial_line(), None);
        c.dropped = Some(1);
        assert_eq!(
            c.partial_line().as_deref(),
            Some("capture partial: 1 events dropped")
        );
        c.dropped = Some(4233);
        assert!(c.partial_line().unwrap().ends_with("4233 events dropped"));
    }

    /// Streaming `report.json` to a writer gives the bytes `to_json` gives.
    #[test]
    fn write_json_is_to_json() {
        let r: RunReport = RunReport {
            schema: REPORT_SCHEMA.into(),
            run_id: "r".into(),
            tool: "t".into(),
            started_utc: "s".into(),
            reference_instant_unix_ns: 1,
            clock_domain_id: "c".into(),
            percentile_method: "p".into(),
            cancelled: false,
            endpoint: None,
            endpoints: vec![],
            capture: CaptureReport::default(),
            power: PowerReport {
                source: None,
                reason: Some("none".into()),
                devices: 0,
                not_attributable: vec![],
            },
            telemetry: None,
            attribution: None,
            jobs: vec![],
            summary: SummaryReport::of(&[], 0, false),
            shard: None,
            merge: None,
            requests_file: None,
        };
        let mut out = Vec::new();
        r.write_json(&mut out).unwrap();
        assert_eq!(out, r.to_json());
    }
}
