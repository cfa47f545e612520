//! The run's reporters ([`crate::runner::events::Reporter`]): the human console
//! ([`Human`]), `--message-format json` lines ([`Json`]), the JUnit file ([`Junit`]), the
//! run's diagnostics on stderr ([`Diagnostics`]) and the progress bar ([`Progress`]).
//! Each turns the driver's events into output on its own writer (the driver prints
//! nothing); the renderers they call are in [`crate::render`].

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::model::{JobReport, RunReport};
use crate::render::{self, Style};
use crate::runner::events::{Reporter, RunEvent};

/// nextest-style console lines: `Starting …` when the run starts, a job's status block as
/// its `JobFinished` arrives (with a load job's curve and a `--baseline` comparison), and
/// at the end the per-step trajectory tables, a timeline-capture warning, the `Summary`
/// line, the plain `N passed, N failed` line and the run directory.
pub struct Human<W: Write + Send> {
    out: W,
    style: Style,
}

impl<W: Write + Send> Human<W> {
    /// A console reporter writing to `out` in `style`.
    pub fn new(out: W, style: Style) -> Self {
        Self { out, style }
    }

    /// The writer (tests read what was written).
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// A job's console block: status line, reasons and notes, then a load job's curve and the
/// baseline comparison (pure).
pub fn job_block(j: &JobReport, style: Style) -> String {
    let mut block = render::job_block(j, style)
        .trim_end_matches('\n')
        .to_string();
    if let Some(sw) = &j.sweep {
        block.push('\n');
        block.push_str(&crate::runner::load::render_curve(
            &j.id,
            sw.variable.as_deref(),
            &sw.points,
        ));
    }
    if let Some(c) = &j.baseline {
        block.push('\n');
        block.push_str(&crate::baseline::render_job(c));
    }
    block
}

impl<W: Write + Send> Reporter for Human<W> {
    fn on_event(&mut self, event: &RunEvent) {
        let o = &mut self.out;
        let _ = match event {
            RunEvent::RunStarted {
                jobs,
                suites,
                endpoint,
                shard,
            } => writeln!(
                o,
                "{}",
                render::start_line(*jobs, *suites, endpoint, self.style)
            )
            .and_then(|()| match shard {
                Some(s) => writeln!(o, "{s}"),
                None => Ok(()),
            }),
            RunEvent::JobFinished(j) => writeln!(o, "{}", job_block(j, self.style)),
            RunEvent::RunFinished { report, run_dir } => finish(o, report, self.style)
                .and_then(|()| writeln!(o, "run directory: {}", run_dir.display())),
            RunEvent::JobStarted { .. }
            | RunEvent::StepFinished { .. }
            | RunEvent::RunCancelling
            | RunEvent::CaptureDisabled { .. }
            | RunEvent::Interrupted
            | RunEvent::JobsEnded
            | RunEvent::InterruptCutNothing
            | RunEvent::SamplesNotWritten { .. }
            | RunEvent::ArtifactsNotWritten { .. } => Ok(()),
        };
        let _ = o.flush();
    }
}

/// The end of a console run: tables, capture warning, summary and plain line.
fn finish(o: &mut impl Write, report: &RunReport, style: Style) -> std::io::Result<()> {
    for t in crate::runner::report::trajectory_tables(report) {
        writeln!(o, "{t}")?;
    }
    if let Some(d) = &report.capture.diagnostic {
        writeln!(o, "warning: timeline capture: {d}")?;
    }
    if let Some(line) = report.capture.partial_line() {
        writeln!(o, "{line}")?;
    }
    writeln!(o, "{}", render::summary_line(&report.summary, style))?;
    writeln!(o, "{}", render::plain_line(&report.summary))
}

/// Writes a finished report as the console does for a live run, without the start and
/// run-directory lines (`merge` prints a merged run this way).
pub fn write_report(o: &mut impl Write, report: &RunReport, style: Style) -> std::io::Result<()> {
    for j in &report.jobs {
        writeln!(o, "{}", job_block(j, style))?;
    }
    finish(o, report, style)
}

/// `--message-format json`: one object per job as it finishes, then the summary object
/// and the artifacts object.
pub struct Json<W: Write + Send> {
    out: W,
}

impl<W: Write + Send> Json<W> {
    /// A JSON-lines reporter writing to `out`.
    pub fn new(out: W) -> Self {
        Self { out }
    }

    /// The writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write + Send> Reporter for Json<W> {
    fn on_event(&mut self, event: &RunEvent) {
        let o = &mut self.out;
        let _ = match event {
            RunEvent::JobFinished(j) => writeln!(o, "{}", render::job_message(j)),
            RunEvent::RunFinished { report, run_dir } => writeln!(
                o,
                "{}",
                render::summary_message(
                    &report.summary,
                    &crate::runner::report::endpoint_label(report)
                )
            )
            .and_then(|()| writeln!(o, "{}", render::json::artifacts_message(run_dir))),
            _ => Ok(()),
        };
        let _ = o.flush();
    }
}

/// `--junit FILE`: the JUnit XML of the finished run, written when the run finishes; a
/// write error is kept in [`Junit::error`] (the caller turns it into exit 2).
pub struct Junit {
    path: PathBuf,
    error: Arc<Mutex<Option<String>>>,
}

impl Junit {
    /// A reporter writing `path`; the returned handle holds the write error, if any.
    pub fn new(path: PathBuf) -> (Self, Arc<Mutex<Option<String>>>) {
        let error = Arc::new(Mutex::new(None));
        (
            Self {
                path,
                error: error.clone(),
            },
            error,
        )
    }
}

impl Reporter for Junit {
    fn on_event(&mut self, event: &RunEvent) {
        let RunEvent::RunFinished { report, .. } = event else {
            return;
        };
        let written = render::junit_xml(report)
            .map_err(|e| e.to_string())
            .and_then(|xml| std::fs::write(&self.path, xml).map_err(|e| e.to_string()));
        if let Err(e) = written {
            *self
                .error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(e);
        }
    }
}

/// The run's diagnostics, one line each, on `out` (stderr in the CLI, whatever the message
/// format): a timeline capture that could not start, the first Ctrl-C / SIGTERM, a signal
/// that came after every job had ended, and artifacts that could not be written.
pub struct Diagnostics<W: Write + Send> {
    out: W,
}

impl<W: Write + Send> Diagnostics<W> {
    /// A diagnostics reporter writing to `out`.
    pub fn new(out: W) -> Self {
        Self { out }
    }

    /// The writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write + Send> Reporter for Diagnostics<W> {
    fn on_event(&mut self, event: &RunEvent) {
        let o = &mut self.out;
        if let Some(line) = event.diagnostic() {
            // An interrupt's line starts on a line of its own, after the terminal's `^C`.
            let lead = if matches!(event, RunEvent::Interrupted) {
                "\n"
            } else {
                ""
            };
            let _ = writeln!(o, "{lead}{line}");
        }
        let _ = o.flush();
    }
}

/// The progress bar on stderr (`{spinner} [elapsed] bar done/jobs job-id`), drawn from the
/// first job's start until every job has ended, around the reporters it wraps: a job's
/// block and the interrupt line are printed above the bar, which is redrawn under them.
/// Hidden when stderr is not a terminal or `CI` is `true` or `1`.
pub struct Progress {
    inner: Vec<Box<dyn Reporter>>,
    shown: bool,
    jobs: u64,
    started: u64,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// A progress bar around `inner` (each event goes on to them, in order), shown when
    /// stderr is a terminal and `CI` is not set.
    pub fn new(inner: Vec<Box<dyn Reporter>>) -> Self {
        use std::io::IsTerminal;
        let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
        Self {
            inner,
            shown: !ci && std::io::stderr().is_terminal(),
            jobs: 0,
            started: 0,
            bar: None,
        }
    }
}

/// The bar itself, for `len` jobs.
fn progress_bar(len: u64) -> indicatif::ProgressBar {
    use indicatif::{ProgressBar, ProgressStyle};
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    pb.enable_steady_tick(std::time::Duration::from_millis(120));
    pb
}

impl Reporter for Progress {
    fn on_event(&mut self, event: &RunEvent) {
        match event {
            RunEvent::RunStarted { jobs, .. } => self.jobs = *jobs as u64,
            RunEvent::JobStarted { id } if self.shown => {
                let jobs = self.jobs;
                let bar = self.bar.get_or_insert_with(|| progress_bar(jobs));
                // The jobs before this one have ended.
                bar.set_position(self.started);
                bar.set_message(id.clone());
                self.started += 1;
            }
            _ => {}
        }
        let inner = &mut self.inner;
        let deliver = |inner: &mut Vec<Box<dyn Reporter>>| {
            for r in inner.iter_mut() {
                r.on_event(event);
            }
        };
        match (&self.bar, event) {
            (Some(bar), RunEvent::JobFinished(_) | RunEvent::Interrupted) => {
                bar.suspend(|| deliver(inner));
            }
            _ => deliver(inner),
        }
        if matches!(event, RunEvent::JobsEnded)
            && let Some(bar) = self.bar.take()
        {
            bar.finish_and_clear();
        }
    }
}

// The renderer crate's report fixtures (test code, not part of its library).
#[cfg(test)]
#[path = "../crates/render/src/fixtures.rs"]
mod render_fixtures;

#[cfg(test)]
mod tests {
    //! The human console from synthetic events through an in-memory writer: every status
    //! line variant (PASS, FAIL, CANCELLED, NOT RUN, SETUP ERROR), the start line, a
    //! shard line, and the end of the run. Snapshots under `src/snapshots/`.
    use super::render_fixtures::{failing_job, passing_job};
    use super::*;
    use crate::model::{JobStatus, SetupCause, SetupError};
    use crate::render::EndpointLabel;

    fn jobs() -> Vec<JobReport> {
        let pass = passing_job();
        let fail = failing_job();
        let mut cut = passing_job();
        cut.id = "agentic::cut".into();
        cut.status = JobStatus::Cancelled;
        cut.notes =
            vec!["cancelled (Ctrl-C / SIGTERM): 0 of 1 trajectories ran to their end".into()];
        let mut later = passing_job();
        later.id = "agentic::later".into();
        later.status = JobStatus::NotRun;
        later.duration_ns = 0;
        later.verdicts.clear();
        later.notes = vec!["not run: cancelled before start".into()];
        let mut setup = failing_job();
        setup.id = "context::down".into();
        setup.status = JobStatus::SetupError;
        setup.verdicts.clear();
        setup.notes.clear();
        setup.setup_error = Some(SetupError {
            cause: SetupCause::Unreachable,
            message: "nothing answers at http://127.0.0.1:9/v1".into(),
            url: None,
            http_status: None,
            body_excerpt: None,
            listed_models: vec![],
        });
        // In run order: a setup error is known when its job is reached; after Ctrl-C the
        // running job ends cancelled and every later one is not run.
        vec![pass, fail, setup, cut, later]
    }

    fn report(jobs: Vec<JobReport>) -> RunReport {
        super::render_fixtures::run_report(jobs, 2_500_000_000, true)
    }

    /// Feeds `events` to a human reporter over an in-memory writer.
    fn console(events: &[RunEvent]) -> String {
        let mut h = Human::new(Vec::new(), Style::PLAIN);
        for e in events {
            h.on_event(e);
        }
        String::from_utf8(h.into_inner()).unwrap()
    }

    /// A run's events in the order the driver emits them: per job `JobStarted`, its
    /// `StepFinished` events and its `JobFinished` before the next job starts;
    /// `RunCancelling` when the job after the interrupted one is reached; `RunFinished`
    /// last.
    fn run_events(shard: Option<String>) -> Vec<RunEvent> {
        let jobs = jobs();
        let mut ev = vec![RunEvent::RunStarted {
            jobs: jobs.len(),
            suites: 2,
            endpoint: EndpointLabel::Simulated,
            shard,
        }];
        for j in &jobs {
            if j.status == JobStatus::NotRun {
                ev.push(RunEvent::RunCancelling);
            }
            ev.push(RunEvent::JobStarted { id: j.id.clone() });
            if matches!(
                j.status,
                JobStatus::Pass | JobStatus::Fail | JobStatus::Cancelled
            ) {
                ev.push(RunEvent::StepFinished {
                    job: j.id.clone(),
                    step_id: 1,
                    kind: crate::model::StepKind::LlmCall,
                    name: "chat".into(),
                });
            }
            ev.push(RunEvent::JobFinished(Box::new(j.clone())));
        }
        ev.push(RunEvent::RunFinished {
            report: Box::new(report(jobs)),
            run_dir: "target/inferscope/runs/20261201T000000Z-000000".into(),
        });
        ev
    }

    #[test]
    fn human_console_every_status_line() {
        insta::assert_snapshot!("human_every_status", console(&run_events(None)));
    }

    #[test]
    fn human_console_names_the_shard_under_the_start_line() {
        let out = console(&run_events(Some(
            "shard 2 of 3 (partition hash:2/3)".into(),
        )));
        let mut lines = out.lines();
        assert!(
            lines
                .next()
                .unwrap()
                .contains("Starting 5 jobs across 2 suites"),
            "{out}"
        );
        assert_eq!(
            lines.next(),
            Some("shard 2 of 3 (partition hash:2/3)"),
            "{out}"
        );
    }

    /// Streamed order: after each `JobFinished` the console holds exactly the blocks of
    /// the jobs finished so far — that job's block last, every status variant once — and
    /// nothing of the run's end; the later jobs' events add only their own blocks.
    #[test]
    fn each_job_block_is_written_as_its_job_finishes_in_streamed_order() {
        let mut h = Human::new(Vec::new(), Style::PLAIN);
        let mut finished: Vec<JobReport> = Vec::new();
        for e in run_events(None) {
            let before = h.out.len();
            h.on_event(&e);
            let added = String::from_utf8(h.out[before..].to_vec()).unwrap();
            match &e {
                RunEvent::JobFinished(j) => {
                    assert_eq!(added, format!("{}\n", job_block(j, Style::PLAIN)));
                    finished.push((**j).clone());
                    let so_far = String::from_utf8(h.out.clone()).unwrap();
                    let expected: String = finished
                        .iter()
                        .map(|j| format!("{}\n", job_block(j, Style::PLAIN)))
                        .collect();
                    assert!(so_far.ends_with(&expected), "{so_far}");
                    assert!(!so_far.contains("Summary"), "{so_far}");
                }
                RunEvent::RunStarted { .. } | RunEvent::RunFinished { .. } => {}
                other => assert_eq!(added, "", "{other:?} writes nothing"),
            }
        }
        let labels: Vec<&str> = finished
            .iter()
            .map(|j| match j.status {
                JobStatus::Pass => "PASS",
                JobStatus::Fail => "FAIL",
                JobStatus::Cancelled => "CANCELLED",
                JobStatus::NotRun => "NOT RUN",
                JobStatus::SetupError => "SETUP ERROR",
            })
            .collect();
        assert_eq!(
            labels,
            ["PASS", "FAIL", "SETUP ERROR", "CANCELLED", "NOT RUN"]
        );
        for (j, label) in finished.iter().zip(labels) {
            let line = job_block(j, Style::PLAIN);
            let first = line.lines().next().unwrap();
            assert!(
                first.trim_start().starts_with(label) && first.ends_with(&j.id),
                "{first}"
            );
        }
    }

    /// A job's block is written when its `JobFinished` arrives, before any later event.
    #[test]
    fn a_job_block_is_written_when_the_job_finishes() {
        let mut h = Human::new(Vec::new(), Style::PLAIN);
        h.on_event(&RunEvent::JobFinished(Box::new(passing_job())));
        let out = String::from_utf8(h.into_inner()).unwrap();
        assert!(out.trim_start().starts_with("PASS ["), "{out}");
        assert!(!out.contains("Summary"), "{out}");
    }

    #[test]
    fn json_lines_one_per_job_then_summary_and_artifacts() {
        let mut j = Json::new(Vec::new());
        for e in run_events(None) {
            j.on_event(&e);
        }
        let out = String::from_utf8(j.into_inner()).unwrap();
        let lines: Vec<serde_json::Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 5 + 2, "{out}");
        let statuses: Vec<&str> = lines[..5]
            .iter()
            .map(|l| l["status"].as_str().unwrap())
            .collect();
        assert_eq!(
            statuses,
            ["pass", "fail", "setup_error", "cancelled", "not_run"],
            "{out}"
        );
    }

    #[test]
    fn junit_is_written_when_the_run_finishes_and_a_write_error_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("junit.xml");
        let (mut r, err) = Junit::new(path.clone());
        for e in run_events(None) {
            r.on_event(&e);
        }
        let xml = std::fs::read_to_string(&path).unwrap();
        assert!(xml.contains("<testcase"), "{xml}");
        assert!(err.lock().unwrap().is_none());
        let (mut bad, err) = Junit::new(dir.path().join("missing/junit.xml"));
        for e in run_events(None) {
            bad.on_event(&e);
        }
        assert!(err.lock().unwrap().is_some());
    }

    /// The driver's diagnostics are the reporter's lines, word for word as the CLI prints
    /// them on stderr; the console and JSON reporters write none of them.
    #[test]
    fn diagnostics_are_written_as_lines_of_their_own() {
        let events = [
            RunEvent::CaptureDisabled {
                reason: "no space".into(),
            },
            RunEvent::Interrupted,
            RunEvent::InterruptCutNothing,
            RunEvent::SamplesNotWritten {
                error: "disk full".into(),
            },
            RunEvent::ArtifactsNotWritten {
                run_dir: "runs/r1".into(),
                error: "read-only file system".into(),
            },
        ];
        let mut d = Diagnostics::new(Vec::new());
        let mut h = Human::new(Vec::new(), Style::PLAIN);
        let mut j = Json::new(Vec::new());
        for e in &events {
            d.on_event(e);
            h.on_event(e);
            j.on_event(e);
        }
        assert_eq!(
            String::from_utf8(d.into_inner()).unwrap(),
            "warning: timeline capture disabled: no space\n\
             \ninterrupt: finishing in-flight work and finalizing (again to abort)\n\
             interrupt: every job had already ended; the run's outcome stands\n\
             warning: samples not written: disk full\n\
             error: writing artifacts to runs/r1: read-only file system\n"
        );
        assert!(h.into_inner().is_empty());
        assert!(j.into_inner().is_empty());
        let mut d = Diagnostics::new(Vec::new());
        for e in run_events(None) {
            d.on_event(&e);
        }
        assert!(
            d.into_inner().is_empty(),
            "a run's other events are not diagnostics"
        );
    }

    /// Shared writer for the reporters a [`Progress`] wraps.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// The progress bar hands every event on to the reporters it wraps, in order: what
    /// they write is what they write alone.
    #[test]
    fn the_progress_bar_passes_every_event_on_in_order() {
        let (wrapped, alone) = (Shared::default(), Shared::default());
        let mut p = Progress::new(vec![
            Box::new(Human::new(wrapped.clone(), Style::PLAIN)),
            Box::new(Diagnostics::new(wrapped.clone())),
        ]);
        let mut h = Human::new(alone.clone(), Style::PLAIN);
        let mut d = Diagnostics::new(alone.clone());
        let mut events = run_events(None);
        events.insert(2, RunEvent::Interrupted);
        for e in &events {
            p.on_event(e);
            h.on_event(e);
            d.on_event(e);
        }
        let (w, a) = (wrapped.0.lock().unwrap(), alone.0.lock().unwrap());
        assert!(!w.is_empty());
        assert_eq!(String::from_utf8_lossy(&w), String::from_utf8_lossy(&a));
    }
}
