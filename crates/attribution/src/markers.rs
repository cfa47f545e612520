//! step markers (docs/artifacts.md): the JSONL format, an integer-exact parser and a writer
//! (to any `Write`). Reading a marker file from disk is the main crate's
//! (`run_dir::read_step_markers`): this crate does no I/O.
//!
//! One object per line:
//! `{"step_id": 3, "kind": "llm_call", "t_start_unix_ns": …, "t_end_unix_ns": …}` with
//! `kind` one of `llm_call | tool` and times in UTC unix-epoch nanoseconds read from the
//! driver's wall clock (docs/artifacts.md "steps.jsonl"). The runner adds `trajectory`
//! and `name`; external files may omit them. Unknown extra fields are ignored so that any
//! framework that writes the four fields interoperates.
//!
//! Nanosecond fields are parsed as JSON integers straight into `u64`, never through `f64`:
//! a float (`1.7e18`, `1726000000000000000.0`), a negative number or a value above
//! `u64::MAX` is an error naming its line. The reader never reorders markers; markers that
//! go backwards or fall outside the run are flagged by the attribution (field case C22).

use std::io::Write;

use serde::{Deserialize, Serialize};

/// Kind of a step (a step marker's `kind` field, docs/artifacts.md): the report model's.
pub use inferscope_model::StepKind;

/// One step marker (docs/artifacts.md) as written in `steps.jsonl`.
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
    /// The runner's marker of one step (unix ns), labelled with its trajectory and name.
    pub fn at(
        trajectory: &str,
        step_id: u64,
        kind: StepKind,
        t_start_unix_ns: u64,
        t_end_unix_ns: u64,
        name: &str,
    ) -> StepMarker {
        StepMarker {
            step_id,
            kind,
            t_start_unix_ns,
            t_end_unix_ns,
            trajectory: Some(trajectory.to_string()),
            name: Some(name.to_string()),
        }
    }
}

/// One line of a marker file that could not be read: the report model's.
pub use inferscope_model::attribution::MarkerLineError;

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

/// A marker file as read: every valid marker (with its line), every rejected line, and
/// whether its last line was cut off (a harness killed mid-write).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct MarkerFile {
    /// Valid markers in file order.
    pub markers: Vec<StepMarker>,
    /// 1-based line of each marker (same order as `markers`).
    pub lines: Vec<usize>,
    /// The 1-based line of a half-written last line (no final newline and not a valid
    /// marker): left out, every record before it kept.
    pub truncated_tail: Option<usize>,
    /// Why that last line did not parse (for the strict reader's message).
    #[serde(skip)]
    pub truncated_tail_error: Option<String>,
    /// Rejected lines (other than a truncated tail), up to [`MAX_MARKER_ERRORS`].
    pub rejected: Vec<MarkerLineError>,
    /// Rejected lines in the whole file (≥ `rejected.len()`).
    pub rejected_count: usize,
}

impl MarkerFile {
    /// The 1-based lines of the markers with `step_id` whose times are those given.
    pub fn lines_of(&self, step_id: u64, t_start: u64, t_end: u64) -> Vec<usize> {
        self.markers
            .iter()
            .zip(&self.lines)
            .filter(|(m, _)| {
                m.step_id == step_id && m.t_start_unix_ns == t_start && m.t_end_unix_ns == t_end
            })
            .map(|(_, &l)| l)
            .collect()
    }

    /// Every problem as `FILE:LINE: …` lines (`file` as given): the rejected lines, the
    /// omitted count and a truncated tail.
    pub fn problems(&self, file: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .rejected
            .iter()
            .map(|e| format!("{file}:{}: rejected step marker: {}", e.line, e.message))
            .collect();
        if self.rejected_count > self.rejected.len() {
            out.push(format!(
                "{file}: … {} more rejected step-marker line(s)",
                self.rejected_count - self.rejected.len()
            ));
        }
        if let Some(l) = self.truncated_tail {
            out.push(format!(
                "{file}:{l}: truncated last line (half-written, no newline): left out; the {} \
                 valid marker(s) before it are kept",
                self.markers.len()
            ));
        }
        out
    }
}

/// One line's message, bounded and never quoting the line.
fn line_message(e: &serde_json::Error) -> String {
    inferscope_redact::excerpt(&e.to_string())
}

/// Reads step-marker JSONL (docs/artifacts.md) bytes leniently (pure): every valid line is kept; a last
/// line without its newline that does not parse is a truncated tail; other bad lines
/// (invalid JSON, fields, UTF-8) are rejected with their line numbers.
///
/// Blank lines are skipped; a UTF-8 BOM and CRLF line ends are accepted. `step_id` and
/// both times must be JSON integers in `0..=u64::MAX` (floats, exponents, negatives and
/// larger values are rejected, never rounded). Markers come back in file order,
/// unvalidated against each other (ordering and overlap are the attribution's job).
pub fn parse_marker_file(bytes: &[u8]) -> MarkerFile {
    let bytes = bytes.strip_prefix("\u{feff}".as_bytes()).unwrap_or(bytes);
    let mut f = MarkerFile::default();
    let ends_with_newline = bytes.last() == Some(&b'\n');
    let lines: Vec<&[u8]> = bytes.split(|&b| b == b'\n').collect();
    let last_nonempty = lines
        .iter()
        .rposition(|l| !l.iter().all(u8::is_ascii_whitespace));
    for (i, raw) in lines.iter().enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let parsed = match std::str::from_utf8(raw) {
            Ok(line) => serde_json::from_str::<StepMarker>(line).map_err(|e| line_message(&e)),
            Err(e) => Err(format!("invalid UTF-8 at column {}", e.valid_up_to() + 1)),
        };
        match parsed {
            Ok(m) => {
                f.markers.push(m);
                f.lines.push(i + 1);
            }
            Err(message) if !ends_with_newline && Some(i) == last_nonempty => {
                f.truncated_tail = Some(i + 1);
                f.truncated_tail_error = Some(message);
            }
            Err(message) => {
                f.rejected_count += 1;
                if f.rejected.len() < MAX_MARKER_ERRORS {
                    f.rejected.push(MarkerLineError {
                        line: i + 1,
                        message,
                    });
                }
            }
        }
    }
    f
}

/// Parses step-marker JSONL (docs/artifacts.md) text strictly (pure): the markers of
/// [`parse_marker_file`] when no line was rejected and none was cut off.
///
/// Errors: [`MarkerFileError`] listing every bad line (1-based) up to
/// [`MAX_MARKER_ERRORS`], a truncated last line included.
pub fn parse_step_markers(text: &str) -> Result<Vec<StepMarker>, MarkerFileError> {
    let f = parse_marker_file(text.as_bytes());
    if f.rejected_count == 0 && f.truncated_tail.is_none() {
        return Ok(f.markers);
    }
    let mut errors = f.rejected;
    let mut bad_lines = f.rejected_count;
    if let Some(l) = f.truncated_tail {
        bad_lines += 1;
        if errors.len() < MAX_MARKER_ERRORS {
            errors.push(MarkerLineError {
                line: l,
                message: format!(
                    "truncated last line (no newline, not a complete marker): {}",
                    f.truncated_tail_error.as_deref().unwrap_or("")
                ),
            });
        }
    }
    Err(MarkerFileError { errors, bad_lines })
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
