//! ADR-013 step markers: the JSONL format, an integer-exact reader and a writer.
//!
//! One object per line:
//! `{"step_id": 3, "kind": "llm_call", "t_start_unix_ns": …, "t_end_unix_ns": …}` with
//! `kind` one of `llm_call | tool` and times in UTC unix-epoch nanoseconds read from the
//! driver's wall clock (ADR-013 "Driver-side step markers"). The runner adds `trajectory`
//! and `name`; external files may omit them. Unknown extra fields are ignored so that any
//! framework that writes the four fields interoperates.
//!
//! Nanosecond fields are parsed as JSON integers straight into `u64`, never through `f64`:
//! a float (`1.7e18`, `1726000000000000000.0`), a negative number or a value above
//! `u64::MAX` is an error naming its line. The reader never reorders markers; markers that
//! go backwards or fall outside the run are flagged by the attribution (field case C22).

use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// Kind of a step (ADR-013 marker field `kind`): the report model's.
pub use crate::model::StepKind;

/// One ADR-013 step marker as written in `steps.jsonl`.
///
/// Times are unix-epoch ns from the driver's wall clock; the join maps them onto the run's
/// timeline as `t − reference_instant_unix_ns`. Serialized with every field present
/// (`null` for an absent `trajectory` / `name`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct StepMarker {
    /// Step id, unique within its trajectory.
    pub step_id: u64,
    /// `llm_call` or `tool`.
    pub kind: StepKind,
    /// Step start, unix-epoch ns.
    pub t_start_unix_ns: u64,
    /// Step end, unix-epoch ns.
    pub t_end_unix_ns: u64,
    /// Trajectory the step belongs to (runner-written; `null` / absent in external files,
    /// which then describe one trajectory).
    #[serde(default)]
    pub trajectory: Option<String>,
    /// Step name (`chat`, or the tool name); never a prompt or a tool payload.
    #[serde(default)]
    pub name: Option<String>,
}

impl StepMarker {
    /// The runner's marker of one step: its window mapped to unix ns through `anchor`
    /// (`elapsed_ns + anchor`), labelled with its trajectory and name.
    pub fn at(
        anchor: u64,
        trajectory: &str,
        step_id: u64,
        kind: StepKind,
        start_ns: u64,
        end_ns: u64,
        name: &str,
    ) -> StepMarker {
        StepMarker {
            step_id,
            kind,
            t_start_unix_ns: anchor + start_ns,
            t_end_unix_ns: anchor + end_ns,
            trajectory: Some(trajectory.to_string()),
            name: Some(name.to_string()),
        }
    }
}

/// One line of a marker file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MarkerLineError {
    /// 1-based line number in the file.
    pub line: usize,
    /// What was wrong (serde_json's message, e.g. `invalid type: floating point
    /// \`1.7e18\`, expected u64 at line 1 column 33`).
    pub message: String,
}

/// Most line errors one [`MarkerFileError`] lists; further bad lines are counted only.
pub const MAX_MARKER_ERRORS: usize = 20;

/// A marker file that failed to parse: every bad line up to [`MAX_MARKER_ERRORS`], and the
/// total count of bad lines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{}", format_errors(.errors, *.bad_lines))]
pub struct MarkerFileError {
    /// The first bad lines, in file order.
    pub errors: Vec<MarkerLineError>,
    /// Number of bad lines in the whole file (≥ `errors.len()`).
    pub bad_lines: usize,
}

fn format_errors(errors: &[MarkerLineError], bad_lines: usize) -> String {
    let mut out = format!("{bad_lines} invalid step-marker line(s)");
    for e in errors {
        out.push_str(&format!("\n  line {}: {}", e.line, e.message));
    }
    if bad_lines > errors.len() {
        out.push_str(&format!("\n  … {} more", bad_lines - errors.len()));
    }
    out
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
    /// The file is not valid ADR-013 JSONL.
    #[error("step markers {path}: {source}")]
    Parse {
        /// The path given.
        path: String,
        /// The line errors.
        source: MarkerFileError,
    },
}

/// Parses ADR-013 marker JSONL text (pure).
///
/// Blank lines are skipped; a UTF-8 BOM and CRLF line ends are accepted. Each other line
/// must be one JSON object with the four required fields; `step_id` and both times must be
/// JSON integers in `0..=u64::MAX` (floats, exponents, negatives and larger values are
/// rejected, never rounded). Markers come back in file order, unvalidated against each other
/// (ordering and overlap are the attribution's job).
///
/// Errors: [`MarkerFileError`] listing every bad line (1-based) up to
/// [`MAX_MARKER_ERRORS`].
pub fn parse_step_markers(text: &str) -> Result<Vec<StepMarker>, MarkerFileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut markers = Vec::new();
    let mut errors = Vec::new();
    let mut bad_lines = 0usize;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<StepMarker>(line) {
            Ok(m) => markers.push(m),
            Err(e) => {
                bad_lines += 1;
                if errors.len() < MAX_MARKER_ERRORS {
                    errors.push(MarkerLineError {
                        line: i + 1,
                        message: e.to_string(),
                    });
                }
            }
        }
    }
    if bad_lines == 0 {
        Ok(markers)
    } else {
        Err(MarkerFileError { errors, bad_lines })
    }
}

/// Reads and parses a marker file (the module's only I/O; e.g. the file an SWE harness
/// wrote to `INFERSCOPE_STEPS_FILE`).
///
/// Errors: [`MarkerReadError::Io`] when the file cannot be read (or is not UTF-8),
/// [`MarkerReadError::Parse`] with the line errors of [`parse_step_markers`].
pub fn read_step_markers(path: &Path) -> Result<Vec<StepMarker>, MarkerReadError> {
    let text = std::fs::read_to_string(path).map_err(|source| MarkerReadError::Io {
        path: path.display().to_string(),
        source,
    })?;
    parse_step_markers(&text).map_err(|source| MarkerReadError::Parse {
        path: path.display().to_string(),
        source,
    })
}

/// Renders markers as JSONL, one object per line, each ending in `\n`, in the given order,
/// with every field present (`null` for absent options). Pure.
pub fn step_markers_to_jsonl(markers: &[StepMarker]) -> String {
    let mut out = String::with_capacity(markers.len() * 128);
    for m in markers {
        // Serializing a struct of integers, an enum and optional strings cannot fail.
        if let Ok(line) = serde_json::to_string(m) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// Writes markers as JSONL (see [`step_markers_to_jsonl`]) to `w`.
///
/// Errors: the writer's I/O error.
pub fn write_step_markers<W: Write>(mut w: W, markers: &[StepMarker]) -> std::io::Result<()> {
    w.write_all(step_markers_to_jsonl(markers).as_bytes())?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_four_field_external_marker() {
        let m = parse_step_markers(
            r#"{"step_id":7,"kind":"llm_call","t_start_unix_ns":1726000010000000000,"t_end_unix_ns":1726000010200000000}"#,
        )
        .unwrap();
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].t_end_unix_ns - m[0].t_start_unix_ns, 200_000_000);
        assert_eq!(m[0].trajectory, None);
    }

    #[test]
    fn max_u64_is_exact() {
        let m = parse_step_markers(
            r#"{"step_id":1,"kind":"tool","t_start_unix_ns":18446744073709551614,"t_end_unix_ns":18446744073709551615}"#,
        )
        .unwrap();
        assert_eq!(m[0].t_end_unix_ns, u64::MAX);
        assert_eq!(m[0].t_start_unix_ns, u64::MAX - 1);
    }
}
