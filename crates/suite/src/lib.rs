//! Suite files: TOML schema, validation with located errors, resolution of run settings.
//!
//! The contract is docs/suite.md. Loading is strict:
//! every table rejects unknown keys with file:line:col and a did-you-mean hint, keys of
//! another job kind are errors, wrong types and the schema's semantic rules (duplicate
//! names, unknown tools, missing operands, invalid regexes and JSON paths, missing
//! fixture files, a literal `api_key`) are errors — all found before any I/O other than
//! reading the suite and checking that referenced fixture files exist (field case C31:
//! a typo is never silently run with defaults).
//!
//! Errors carry dotted field paths from the document root with 0-based array indices:
//! `jobs[1].max_steps`, `tools[0].responses[2].when`, `telemetry.gpu`; a top-level key
//! is its bare name. See [`SuiteError`].
//!
//! Pipeline: `toml::de::DeTable` (spans) → secret scan and unknown-key walk
//! (`keys`) → serde structs with `deny_unknown_fields` (`raw`) → semantic validation and
//! defaults (`validate`) → [`Suite`]; [`resolve`] then applies CLI flags.

pub mod dataset;
pub mod diagnose;
// The JSON helpers (leaf) and the checks' grading live with the schema that parses them
// (`[[jobs.checks]]`, tool `arguments_schema`); see docs/architecture.md.
mod ctx;
mod doc;
mod dry_run;
mod error;
mod fields;
pub mod grade;
pub mod json;
mod keys;
mod load;
pub mod load_spec;
mod model;
mod raw;
pub mod replay;
mod resolve;
mod validate;

use std::path::Path;

// The workspace crates the schema reads, under the names its modules use.
use inferscope_fsio as fsio;
use inferscope_gate as gate;
use inferscope_model::stats;
use inferscope_redact as redact;
use inferscope_telemetry as telemetry;
use inferscope_timeline as timeline;

pub use dry_run::ResolvedSetting;
pub use error::{Location, SuiteError, SuiteErrorKind};
pub use model::*;
pub use resolve::{
    EndpointSetting, ResolvedJob, ResolvedSuite, RunOverrides, Setting, SettingSource,
    filter_matches, list_text, metrics_url_for, resolve,
};
pub use validate::normalize_endpoint;

/// Reads and validates the suite file at `path`.
///
/// Errors: [`SuiteErrorKind::Io`] when the file cannot be read (no location), otherwise
/// any error of [`parse`].
/// The file is read through the bounded reader ([`crate::fsio`]: no symlink, no FIFO or
/// device, at most [`crate::fsio::limits::SUITE_BYTES`]); a file that is not UTF-8 is an
/// error at the line:col of its first invalid byte.
pub fn load(path: &Path) -> Result<Suite, SuiteError> {
    parse(&read(path)?, path)
}

/// The suite file's text, through the bounded reader.
fn read(path: &Path) -> Result<String, SuiteError> {
    let bytes = crate::fsio::read(path, crate::fsio::limits::SUITE_BYTES).map_err(|e| {
        SuiteError::plain(
            path.to_path_buf(),
            SuiteErrorKind::Io,
            format!("cannot read the suite: {e}"),
        )
    })?;
    crate::fsio::utf8(bytes).map_err(|(line, col)| {
        SuiteError::at_position(
            path.to_path_buf(),
            SuiteErrorKind::Syntax,
            line,
            col,
            "invalid UTF-8: a suite file must be UTF-8 text".into(),
        )
    })
}

/// Validates `text` as the suite file `origin` (used for error messages, the default
/// suite name — the file stem — and the fixtures root, which is resolved from `origin`'s
/// directory; referenced fixture files are checked to exist).
///
/// Errors: the first problem in file order, located ([`SuiteError::location`]) and with
/// its dotted path.
pub fn parse(text: &str, origin: &Path) -> Result<Suite, SuiteError> {
    load::parse(text, origin).map_err(|mut all| all.swap_remove(0))
}

/// Validates `text` as [`parse`] does, but returns every problem found in one pass
/// (never an empty list), in file order: what `check` prints.
pub fn parse_all(text: &str, origin: &Path) -> Result<Suite, Vec<SuiteError>> {
    load::parse(text, origin).map_err(in_file_order)
}

/// Reads and validates the suite file at `path` as [`load`] does, returning every
/// problem found in one pass (never an empty list), in file order.
pub fn load_all(path: &Path) -> Result<Suite, Vec<SuiteError>> {
    let text = read(path).map_err(|e| vec![e])?;
    parse_all(&text, path)
}

/// Errors sorted by position (unlocated ones first: they concern the whole file).
fn in_file_order(mut all: Vec<SuiteError>) -> Vec<SuiteError> {
    all.sort_by_key(|e| e.location().map(|l| l.offset));
    all
}

/// Checks that the suites of one run (or `check`/`list` call) give every job a distinct id.
/// Job ids are `suite::job` and a file already refuses two jobs with one name, so two ids
/// collide only when two files share a suite name (the same file given twice, or two files
/// with the same `name`, or the same stem without one); the report, the steps file and the
/// step-attribution join (docs/measurement.md) key trajectories by job id, so a collision would merge two jobs' runs.
///
/// Errors: [`SuiteErrorKind::Duplicate`] on the later file, naming the earlier one and the
/// shared suite name (no position: the name may come from the file stem).
pub fn check_distinct_job_ids(suites: &[Suite]) -> Result<(), SuiteError> {
    for (i, s) in suites.iter().enumerate() {
        let Some(first) = suites[..i].iter().find(|f| f.name == s.name) else {
            continue;
        };
        let Some(job) = s
            .jobs
            .iter()
            .find(|j| first.jobs.iter().any(|f| f.id == j.id))
        else {
            continue;
        };
        let message = if first.file == s.file {
            format!(
                "the suite file is given twice: job `{}` would run twice under one id",
                job.id
            )
        } else {
            format!(
                "suite name `{}` is also the name of {}: job id `{}` would name two jobs; \
                 give one suite a different `name`",
                s.name,
                first.file.display(),
                job.id
            )
        };
        return Err(SuiteError::plain(
            s.file.clone(),
            SuiteErrorKind::Duplicate,
            message,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests;
