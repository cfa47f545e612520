//! What report assembly reads of one job, as plain data: the driver turns each job it ran
//! (its suite's settings, what its drivers recorded, its grading) into a [`JobInput`].

use std::collections::BTreeMap;
use std::ops::Range;

use crate::baseline::compare::{JobComparison, compare_job};
use crate::baseline::summary::JobSummary;
use crate::curve::StreamedUnits;
use crate::gate::spec::GateSpec;
use crate::model::compact::CompactFigureSet;
use crate::model::load::{LoadReport, PointFacts, SweepReport};
use crate::model::{FailureCode, GradingCheck, HarnessReport, JobKind, SetupError};
use crate::records::TrajectoryRecord;

/// One job as executed and graded: everything [`super::job_report`] reads of it.
pub struct JobInput<'a> {
    /// `suite::job`.
    pub id: &'a str,
    /// The job's kind.
    pub kind: JobKind,
    /// An SWE harness job: the harness talks to the endpoint itself, so its requests are
    /// not observed by the runner.
    pub swe: bool,
    /// Whether the job declares grading checks.
    pub has_checks: bool,
    /// The job's effective gates.
    pub gates: &'a GateSpec,
    /// Secrets a report must never show (the suite's API key).
    pub secrets: Vec<&'a str>,
    /// Trajectories, in order (a load job's: the units it keeps whole).
    pub trajectories: &'a [TrajectoryRecord],
    /// Check results per trajectory (outer index = trajectory), each check's name as the
    /// suite describes it (no `#i` prefix).
    pub checks: Vec<Vec<GradingCheck>>,
    /// Job start, ns.
    pub start_ns: u64,
    /// Job end, ns.
    pub end_ns: u64,
    /// The SWE harness's outcome, when one ran.
    pub harness: Option<HarnessReport>,
    /// Notes shown with the job.
    pub notes: &'a [String],
    /// Why the job could not start (no request was made).
    pub setup_error: Option<&'a SetupError>,
    /// The run was cancelled before this job started: it is `not_run`.
    pub cancelled_before_start: bool,
    /// Set when Ctrl-C / SIGTERM cut the job short: the note that says how much of it ran.
    pub interruption: Option<String>,
    /// The executed load points, for a job that ran under load.
    pub load: Option<LoadFacts>,
    /// A load job's units, compact (their records went to `requests.jsonl` as each ended).
    pub units: Option<UnitsFacts<'a>>,
}

impl JobInput<'_> {
    /// Whether the job started (neither `not_run` nor `setup_error`).
    pub fn status_ran(&self) -> bool {
        !self.cancelled_before_start && self.setup_error.is_none()
    }

    /// Fraction of trajectories (a load job's units) whose checks all passed (`None`
    /// without checks).
    pub fn grade_pass_rate(&self) -> Option<f64> {
        if !self.has_checks {
            return None;
        }
        if let Some(u) = &self.units {
            let (n, ok) = u.graded;
            return (n > 0).then(|| ok as f64 / n as f64);
        }
        if self.checks.is_empty() {
            return None;
        }
        let passed = self
            .checks
            .iter()
            .filter(|c| c.iter().all(|r| r.passed))
            .count();
        Some(passed as f64 / self.checks.len() as f64)
    }

    /// Whether grading passed (true without checks).
    pub fn grading_passed(&self) -> bool {
        if let Some(u) = &self.units {
            return u.graded.0 == u.graded.1;
        }
        self.checks.iter().all(|c| c.iter().all(|r| r.passed))
    }

    /// Whether trajectory `i` passed its checks (`None` without checks).
    pub(super) fn graded_pass(&self, i: usize) -> Option<bool> {
        self.checks
            .get(i)
            .filter(|c| !c.is_empty())
            .map(|c| c.iter().all(|r| r.passed))
    }
}

/// What a load job ran: its points, and the parts of its report that its settings decide.
#[derive(Debug, Clone)]
pub struct LoadFacts {
    /// The points that ran, in order.
    pub points: Vec<LoadPointFacts>,
    /// `jobs[].load`, its warm-up request ids left empty (report assembly fills them in).
    pub report: LoadReport,
    /// `jobs[].sweep`, its points left empty (report assembly fills them in).
    pub sweep: SweepReport,
    /// A schedule that could not place its count: each note fails the job.
    pub schedule_notes: Vec<String>,
    /// Connections dropped inside a point's window.
    pub connect_notes: Vec<String>,
}

/// One executed load point.
#[derive(Debug, Clone)]
pub struct LoadPointFacts {
    /// The point's curve facts; `window_ns` is its measured window (from its first
    /// measured request's send).
    pub facts: PointFacts,
    /// The point's range of the job's trajectories.
    pub trajectories: Range<usize>,
    /// Point start, ns.
    pub start_ns: u64,
    /// Point end, ns.
    pub end_ns: u64,
    /// The trajectories the point declared in flight (for the step-attribution join).
    pub declared_concurrency: u32,
    /// The point's warm-up requests (left out of every statistic).
    pub warmup: u64,
}

/// What a load job keeps of all its units, borrowed from the driver's accumulator.
#[derive(Debug, Clone, Copy)]
pub struct UnitsFacts<'a> {
    /// Every request's compact figures, point by point.
    pub figures: &'a CompactFigureSet,
    /// Each point's range of `figures`.
    pub point_requests: &'a [Range<usize>],
    /// `warm[i]`: request `i` of `figures` is a warm-up request.
    pub warm: &'a [bool],
    /// The warm-up requests' ids, point by point.
    pub warmup_ids: &'a [String],
    /// Units that ended.
    pub units: u64,
    /// Units that did not finish, by stop reason: count and the first one's id.
    pub unfinished: &'a BTreeMap<&'static str, (u64, String)>,
    /// Failed requests by failure code.
    pub failure_codes: &'a BTreeMap<FailureCode, u64>,
    /// Of those, the warm-up requests'.
    pub warmup_failures: &'a BTreeMap<FailureCode, u64>,
    /// Units graded, and those whose checks all passed.
    pub graded: (u64, u64),
    /// With `aggregation = "streaming"`: the histograms.
    pub streamed: Option<&'a StreamedUnits>,
}

/// The baseline a run compares with (`--baseline NAME`): its name, the run it was saved
/// from and its per-job summaries.
#[derive(Debug, Clone, Copy)]
pub struct BaselineRef<'a> {
    /// The baseline's name.
    pub name: &'a str,
    /// The run it was saved from.
    pub run_id: &'a str,
    /// Per-job summaries.
    pub jobs: &'a [JobSummary],
}

impl BaselineRef<'_> {
    /// Compares job `cur` with the baseline's summary of the same job (`None` when the
    /// baseline lacks it).
    pub fn compare(&self, cur: &JobSummary, noise_pct: f64) -> Option<JobComparison> {
        self.jobs
            .iter()
            .find(|j| j.id == cur.id)
            .map(|b| compare_job(b, cur, self.name, self.run_id, noise_pct))
    }
}
