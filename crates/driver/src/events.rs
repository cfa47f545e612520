//! What the driver tells reporters while a run goes on, as nextest does: typed events
//! ([`RunEvent`]) delivered in order to every [`Reporter`] of an [`EventSink`]. The human
//! console, `--message-format json` and JUnit are reporters
//! ([`crate::render::reporter`]); none of them reads the run any other way.
//!
//! Order: `RunStarted`; then per job `JobStarted`, its `StepFinished` events (one per
//! step, in step order, when the job's execution ends) and its `JobFinished`, delivered
//! before the next job's `JobStarted`; `RunCancelling` once, when the first job after a
//! signal is reached; `RunFinished` last, after the artifacts are written.
//! `JobFinished` carries the job's final report — `report.json` holds exactly it: the job
//! is graded, joined with the samples taken up to its end and gated as it ends
//! ([`crate::report::finalize_job`]). Only a run whose engine counters come from a
//! Prometheus server (read after the measured window) delivers every `JobFinished` after
//! the artifacts, in job order. What is final when:
//! docs/architecture.md "Order, and what is final when".

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::model::{JobReport, RunReport, StepKind};
use crate::render::EndpointLabel;

/// One event of a run.
#[derive(Debug, Clone)]
pub enum RunEvent {
    /// The run is about to start its jobs.
    RunStarted {
        /// Jobs selected.
        jobs: usize,
        /// Suites given.
        suites: usize,
        /// The endpoint of the first suite.
        endpoint: EndpointLabel,
        /// One line describing this run as a shard of several, if it is one.
        shard: Option<String>,
    },
    /// A job starts (or is reached after cancellation: it will be `NOT RUN`).
    JobStarted {
        /// `suite::job`.
        id: String,
    },
    /// A step of a job's trajectory finished.
    StepFinished {
        /// `suite::job`.
        job: String,
        /// Run-unique step id (the `steps.jsonl` id).
        step_id: u64,
        /// `llm_call` or `tool`.
        kind: StepKind,
        /// `chat` or the tool name.
        name: String,
    },
    /// Ctrl-C / SIGTERM was observed: no new work starts.
    RunCancelling,
    /// A job's final report (the one `report.json` holds), as the job ends.
    JobFinished(Box<JobReport>),
    /// The run ended and its artifacts are written.
    RunFinished {
        /// The whole report (also `report.json`).
        report: Box<RunReport>,
        /// The run directory.
        run_dir: PathBuf,
    },
}

/// Receives a run's events.
pub trait Reporter: Send {
    /// Handles one event (reporters write what they write; they never fail the run).
    fn on_event(&mut self, event: &RunEvent);
}

/// The reporters of one run, shared by the driver's tasks; empty by default (a run that
/// reports nothing, such as the overhead command's inner runs).
#[derive(Clone, Default)]
pub struct EventSink {
    reporters: Arc<Mutex<Vec<Box<dyn Reporter>>>>,
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSink").finish_non_exhaustive()
    }
}

impl EventSink {
    /// A sink delivering to `reporters`, in that order.
    pub fn new(reporters: Vec<Box<dyn Reporter>>) -> Self {
        Self {
            reporters: Arc::new(Mutex::new(reporters)),
        }
    }

    /// Delivers `event` to every reporter.
    pub fn emit(&self, event: RunEvent) {
        let mut r = self
            .reporters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for rep in r.iter_mut() {
            rep.on_event(&event);
        }
    }
}
