//! The run directory: where a run's artifacts live and how they are read back. One
//! module owns the layout (file names, the default location) and the readers every
//! command shares (`report`, `serve`, `compare`, `baseline save`, `snapshot`, `merge`).
//! Formats: `docs/artifacts.md`.

use std::path::{Path, PathBuf};

use crate::attribution::{MarkerFile, parse_marker_file};
use crate::model::RunReport;

/// `report.json`: the typed report, written last.
pub const REPORT_FILE: &str = "report.json";
/// `steps.jsonl`: one step marker per step.
pub const STEPS_FILE: &str = "steps.jsonl";
/// `samples/`: the sampler timelines.
pub const SAMPLES_DIR: &str = "samples";
/// `timeline/`: the captured timeline (manifest and events).
pub const TIMELINE_DIR: &str = "timeline";

/// The default run directory for `run_id` under the current directory:
/// `target/inferscope/runs/<run_id>`.
pub fn default_run_dir(run_id: &str) -> PathBuf {
    Path::new("target")
        .join("inferscope")
        .join("runs")
        .join(run_id)
}

/// `--out DIR` of `run` and `merge`: a new path or an empty directory (a directory holding
/// files, e.g. a previous run, is refused: its old `timeline/` or `samples/` would sit
/// next to the new `report.json` and be read as this run's). Errors name the flag.
pub fn check_new_or_empty_dir(dir: &Path) -> Result<(), String> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(format!(
                    "--out {}: the directory is not empty (a previous run?); a run \
                     directory must be new or empty, so no earlier artifact is read as \
                     this run's",
                    dir.display()
                ));
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) if dir.exists() && !dir.is_dir() => Err(format!(
            "--out {}: exists and is not a directory",
            dir.display()
        )),
        Err(e) => Err(format!("--out {}: {e}", dir.display())),
    }
}

/// Reads a run's `report.json` through the bounded reader ([`crate::fsio`]: no symlink
/// below `run_dir`, no FIFO or device, at most [`crate::fsio::limits::REPORT_BYTES`]) and
/// the typed model: schema `inferscope-bench.report/v3` only (a v1 or v2 report is refused as
/// an unsupported schema, naming it). A run without it is incomplete (the report is the
/// artifact a run writes last).
pub fn read_report(run_dir: &Path) -> Result<RunReport, String> {
    let p = run_dir.join(REPORT_FILE);
    let bytes = crate::fsio::Root::open(run_dir, true)
        .and_then(|r| r.read(&[REPORT_FILE], crate::fsio::limits::REPORT_BYTES))
        .map_err(|e| match e {
            crate::fsio::ReadError::NotFound => format!(
                "{}: not found: an incomplete run (report.json is written last) or not a \
                 run directory",
                p.display()
            ),
            e => format!("{}: {e}", p.display()),
        })?;
    RunReport::from_json(&bytes).map_err(|e| format!("{}: {e}", p.display()))
}

/// [`read_report`] with every job's `requests` filled from the run's `requests.jsonl`
/// ([`crate::records::read_into`]: bounded, line by line, length, count and SHA-256
/// checked against `report.json`). For the commands that need per-request figures
/// (`baseline save`, `compare`, `snapshot`, `merge`, JUnit and Perfetto renders); the
/// others read summaries only.
pub fn read_report_with_requests(run_dir: &Path) -> Result<RunReport, String> {
    let mut rep = read_report(run_dir)?;
    crate::records::read_into(run_dir, &mut rep)?;
    Ok(rep)
}

/// Error reading a marker file from disk: I/O, or its contents.
#[derive(Debug, thiserror::Error)]
pub enum MarkerReadError {
    /// The file could not be read.
    #[error("cannot read step markers {path}: {source}")]
    Io {
        /// The path given.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Reads a marker file (e.g. the file an SWE harness wrote to
/// `INFERSCOPE_STEPS_FILE`) through the bounded reader ([`crate::fsio`]: no symlink, no
/// FIFO or device, at most [`crate::fsio::limits::STEPS_FILE_BYTES`]), leniently
/// ([`crate::attribution::parse_marker_file`]).
///
/// Errors: [`MarkerReadError::Io`] when the file cannot be read.
pub fn read_step_markers(path: &Path) -> Result<MarkerFile, MarkerReadError> {
    let bytes = crate::fsio::read(path, crate::fsio::limits::STEPS_FILE_BYTES).map_err(|e| {
        MarkerReadError::Io {
            path: path.display().to_string(),
            source: std::io::Error::other(e.to_string()),
        }
    })?;
    Ok(parse_marker_file(&bytes))
}
