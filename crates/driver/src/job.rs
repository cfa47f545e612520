//! What running a job produced, as the report reads it: the suites' runtimes, a job as
//! executed and as graded. Execution (`execute.rs`) fills them in; report assembly
//! (`report.rs`, `energy.rs`) reads them, so neither imports the other's module.

use std::sync::Arc;

use crate::client::Client;
use crate::grade::CheckResult;
use crate::model::SetupError;
use crate::steps::{StepStatus, StopReason, TrajectoryRecord};
use crate::suite::{JobKind, ResolvedJob, ResolvedSuite};
use crate::swe::SweOutcome;
use crate::tools::ToolRegistry;

/// One suite's runtime: endpoint, client, tools.
pub struct SuiteRuntime {
    /// The resolved suite.
    pub resolved: ResolvedSuite,
    /// Base URL actually used (the simulator's when simulated).
    pub base_url: String,
    /// Whether the endpoint is the built-in simulator.
    pub simulated: bool,
    /// Effective model name.
    pub model: String,
    /// API key from the suite's `api_key_env` (never logged).
    pub(crate) api_key: Option<String>,
    pub(crate) client: Option<Client>,
    pub(crate) tools: Option<Arc<ToolRegistry>>,
    /// Why the suite's jobs cannot start: a set-up problem, or the preflight's verdict
    /// (nothing listening, `/models` not found, model not listed, auth refused). Its jobs
    /// are then `setup_error` and send nothing.
    pub setup_error: Option<SetupError>,
    /// The suite's token counter and template overhead, set in the preflight
    /// when its `tokenizer` is not the bytes/4 estimate and it has a context job.
    pub prompt_tokens: Option<Arc<crate::tokens::PromptTokens>>,
}

impl SuiteRuntime {
    /// Secrets a report must never show: the suite's API key.
    pub fn secrets(&self) -> Vec<&str> {
        self.api_key.iter().map(String::as_str).collect()
    }
}

/// A job as executed (before grading).
pub struct ExecutedJob {
    /// Index into the run's suites (`Session::suites`).
    pub suite_index: usize,
    /// The resolved job.
    pub job: ResolvedJob,
    /// Trajectories, in order.
    pub trajectories: Vec<TrajectoryRecord>,
    /// Job start, ns.
    pub start_ns: u64,
    /// Job end, ns.
    pub end_ns: u64,
    /// SWE harness outcome.
    pub harness: Option<SweOutcome>,
    /// Notes shown with the job.
    pub notes: Vec<String>,
    /// Why the job could not start (no request was made): it is `setup_error`.
    pub setup_error: Option<SetupError>,
    /// The run was cancelled (Ctrl-C / SIGTERM) before this job started: it made no
    /// request and is reported `not_run`, neither passed nor failed.
    pub cancelled_before_start: bool,
    /// Ctrl-C / SIGTERM stopped the job before all its units (repeats, trajectories, sweep
    /// points, scheduled arrivals) ran: it is `cancelled`, never a pass.
    pub interrupted: bool,
    /// How many units the job planned (repeats; sweep points for a load job) and how many
    /// ran to their end, for the cancellation note.
    pub units: (u64, u64),
    /// The executed load points when the job ran under load ; `None` for the
    /// sequential drivers.
    pub load: Option<crate::load::LoadRun>,
    /// A load job's units, compact: their records went to `requests.jsonl` as
    /// each ended; `trajectories` then holds only the units the job keeps whole.
    pub load_units: Option<crate::load::units::LoadUnits>,
    /// A load job's check results of its kept units (`trajectories`), index for index.
    pub load_checks: Vec<Vec<CheckResult>>,
}

impl ExecutedJob {
    /// Whether the job started (neither `not_run` nor `setup_error`).
    pub fn status_ran(&self) -> bool {
        !self.cancelled_before_start && self.setup_error.is_none()
    }

    /// `cancelled (Ctrl-C / SIGTERM): 1 of 3 sweep points ran to their end` (or
    /// trajectories, for a sequential job), then the scheduled units that never started
    /// and the sweep points that never started.
    pub fn interruption_note(&self) -> String {
        let (planned, done) = self.units;
        let what = if self.load.is_some() {
            "sweep points"
        } else {
            "trajectories"
        };
        let mut note =
            format!("cancelled (Ctrl-C / SIGTERM): {done} of {planned} {what} ran to their end");
        if let Some(l) = &self.load {
            let not_started: u64 = l.points.iter().map(|p| p.not_started).sum();
            if not_started > 0 {
                note.push_str(&format!("; {not_started} scheduled units never started"));
            }
            // Points the signal came before: their units are in no point's count.
            let never = planned.saturating_sub(l.points.len() as u64);
            if never > 0 {
                note.push_str(&format!(
                    "; {never} of {planned} sweep points never started"
                ));
            }
        }
        note
    }

    /// Decides `interrupted` once the job has ended: the run's cancellation flag is set
    /// and some of the job's work did not run (a trajectory cut short, fewer repeats or
    /// sweep points than planned, scheduled arrivals that never started).
    pub(crate) fn settle_cancellation(&mut self, cancelled: bool) {
        let planned = match &self.load {
            Some(l) => l.spec.sweep.as_ref().map_or(1, |w| w.values().len() as u64),
            None => match &self.job.job.kind {
                JobKind::Context(_) => 1,
                _ => u64::from(self.job.job.repeat.max(1)),
            },
        };
        let cut_short = |t: &TrajectoryRecord| {
            t.stop_reason == StopReason::Cancelled
                || t.steps.iter().any(|s| s.status == StepStatus::Cancelled)
        };
        // Units that ran to their end: whole sweep points (every unit of the plan started,
        // none cut short), or trajectories not cut short.
        let done = match &self.load {
            Some(l) => l
                .points
                .iter()
                .enumerate()
                .filter(|(i, p)| {
                    let cut = match &self.load_units {
                        Some(u) => u.point_cut_short.get(*i).copied().unwrap_or(false),
                        None => self.trajectories[p.trajectories.clone()]
                            .iter()
                            .any(cut_short),
                    };
                    p.ran_to_end() && !cut
                })
                .count() as u64,
            None => self.trajectories.iter().filter(|t| !cut_short(t)).count() as u64,
        };
        self.units = (planned, done);
        self.interrupted = cancelled && self.status_ran() && done < planned;
    }
}

/// A job after grading.
pub struct GradedJob {
    /// The executed job.
    pub executed: ExecutedJob,
    /// Check results per trajectory (outer index = trajectory).
    pub checks: Vec<Vec<CheckResult>>,
}
