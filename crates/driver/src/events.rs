//! What the driver tells reporters while a run goes on, as nextest does: typed events
//! ([`RunEvent`]) delivered in order to every [`Reporter`] of an [`EventSink`]. The human
//! console, `--message-format json` and JUnit are reporters
//! ([`crate::render::reporter`]); none of them reads the run any other way.
//!
//! The driver prints nothing itself: what it used to say on stderr (a capture that could not
//! start, an interrupt, artifacts that could not be written) and the progress of its jobs
//! are events too, which the reporters turn into lines and a progress bar.
//!
//! Order: `CaptureDisabled` (if the capture sink could not be made) before `RunStarted`;
//! then per job `JobStarted`, its `StepFinished` events (one per step, in step order, when
//! the job's execution ends) and its `JobFinished`, delivered before the next job's
//! `JobStarted`; `RunCancelling` once, when the first job after a signal is reached;
//! `JobsEnded` when every job has ended; then `InterruptCutNothing` (a signal that came
//! after every job had ended), `SamplesNotWritten` and `ArtifactsNotWritten` where they
//! apply; `RunFinished`
//! last, after the artifacts are written. `Interrupted` comes from the signal handler
//! ([`crate::install_signal_handler`]) at the moment of the first signal, wherever the run
//! is.
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
    /// Timeline capture was asked for, but its sink could not be made: the run goes on
    /// without capture.
    CaptureDisabled {
        /// Why the sink could not be made.
        reason: String,
    },
    /// The first Ctrl-C / SIGTERM arrived: in-flight work finishes and what exists is
    /// finalized; a second signal aborts ([`crate::Interrupts::aborted`]).
    Interrupted,
    /// Every selected job has ended (run, cut short or not run): execution is over and the
    /// run's finalization begins.
    JobsEnded,
    /// A signal arrived after every job had ended: it cut nothing short, and the run's
    /// outcome stands as its jobs decided it.
    InterruptCutNothing,
    /// The telemetry samples (`samples/`) could not be written to the run directory: the
    /// run's figures and its other artifacts stand, without the raw samples.
    SamplesNotWritten {
        /// The write error.
        error: String,
    },
    /// The artifacts could not be written to the run directory: the run's figures are only
    /// in the events, and the run exits with bad input.
    ArtifactsNotWritten {
        /// The run directory.
        run_dir: PathBuf,
        /// The write error.
        error: String,
    },
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

impl RunEvent {
    /// The diagnostic line this event stands for, if it is one (a capture that could not
    /// start, an interrupt, artifacts that could not be written): the text only, without
    /// a line end. Reporters decide where it goes; the driver never prints it.
    pub fn diagnostic(&self) -> Option<String> {
        Some(match self {
            RunEvent::CaptureDisabled { reason } => {
                format!("warning: timeline capture disabled: {reason}")
            }
            RunEvent::Interrupted => {
                "interrupt: finishing in-flight work and finalizing (again to abort)".into()
            }
            RunEvent::InterruptCutNothing => {
                "interrupt: every job had already ended; the run's outcome stands".into()
            }
            RunEvent::SamplesNotWritten { error } => {
                format!("warning: samples not written: {error}")
            }
            RunEvent::ArtifactsNotWritten { run_dir, error } => {
                format!("error: writing artifacts to {}: {error}", run_dir.display())
            }
            _ => return None,
        })
    }
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// Every `.rs` file under `dir`.
    fn sources(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                sources(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }

    /// Whether `text` prints: a print macro or a progress bar.
    fn prints(text: &str) -> Vec<&'static str> {
        [
            "println!",
            "eprintln!",
            "print!",
            "eprint!",
            "indicatif",
            "dbg!",
        ]
        .into_iter()
        .filter(|m| {
            text.match_indices(m).any(|(i, _)| {
                // `eprintln!` contains `println!`: a match must start a word.
                !text[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_')
            })
        })
        .collect()
    }

    #[test]
    fn the_check_finds_a_print() {
        assert_eq!(prints("eprintln!(\"x\")"), ["eprintln!"]);
        assert_eq!(
            prints("let bar = indicatif::ProgressBar::new(3);"),
            ["indicatif"]
        );
        assert!(prints("events.emit(RunEvent::Interrupted)").is_empty());
    }

    /// The driver prints nothing and draws no progress bar: the reporters do, from its
    /// events. Every source is read but this test module's own (which names the macros).
    #[test]
    fn the_driver_prints_nothing() {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut files = Vec::new();
        sources(&src, &mut files);
        let mut found = Vec::new();
        for f in files {
            let rel = f.strip_prefix(&src).unwrap().to_string_lossy().into_owned();
            let mut text = std::fs::read_to_string(&f).unwrap();
            if rel == "events.rs" {
                // The code above this module: the macro names below are the check's own.
                text.truncate(text.find("#[cfg(test)]\nmod tests {").unwrap());
            }
            for m in prints(&text) {
                found.push(format!("{rel}: {m}"));
            }
        }
        assert!(found.is_empty(), "{found:#?}");
    }
}
