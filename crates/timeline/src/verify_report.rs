//! What the reader reports: the outcome class, itemized integrity errors and gaps, the
//! one-line summary and the `Display` printed by `inferscope-bench timeline verify`
//! (exit status from [`VerifyReport::exit_code`]).

use std::fmt;
use std::path::{Path, PathBuf};

use inferscope_model::exit::ExitCode;

use super::accounting::Quality;
use super::event::{EventFault, TimelineEvent};
use super::manifest::{
    EVENTS_REL_PATH, MANIFEST_FILE, SCHEMA, SCHEMA_V1, TIMELINE_DIR, TimelineManifest,
};

/// At most this many errors and gaps are itemized; the rest are counted.
pub const MAX_ITEMIZED: usize = 100;

/// Why a timeline is unavailable (exit 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unavailable {
    /// `RUN_DIR` is not a directory.
    RunDirMissing,
    /// No `timeline/manifest.json`: capture off, run killed before persistence, or
    /// persistence failed.
    NoManifest,
    /// No `report.json`, the run's last artifact: the run was killed (or its disk filled)
    /// before it finished writing, so nothing in it is a complete run.
    Incomplete,
}

/// One integrity error. `line` is 1-based in `events.jsonl`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IntegrityError {
    /// Line of `events.jsonl`, when the error is about one line.
    pub line: Option<u64>,
    /// `seq` of that line, when known.
    pub seq: Option<u64>,
    /// What is wrong.
    pub kind: ErrorKind,
}

/// What an integrity error is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The manifest or events file is a symlink or not a regular file.
    NotRegularFile(&'static str),
    /// A file could not be read (message of the I/O error).
    Unreadable(&'static str, String),
    /// The manifest exceeds 16 KiB.
    ManifestTooLarge {
        /// The bound (bytes).
        limit: u32,
    },
    /// The manifest is not valid JSON of the closed manifest schema (fault and column;
    /// never quotes the file).
    ManifestMalformed(String),
    /// The manifest names another schema.
    UnknownSchema,
    /// A manifest field breaks its rule (which rule).
    ManifestInvalid(&'static str),
    /// The events file is missing although the manifest exists.
    EventsMissing,
    /// The events file is longer than the manifest's byte budget.
    EventsTooLarge,
    /// Byte length differs from the manifest.
    LengthMismatch {
        /// The manifest's value.
        manifest: u64,
        /// The value found.
        actual: u64,
    },
    /// SHA-256 differs from the manifest.
    HashMismatch,
    /// The last line has no newline.
    MissingFinalNewline,
    /// A line over the per-event bound (bytes, newline excluded).
    LineTooLong {
        /// Bytes.
        bytes: usize,
        /// The bound (bytes).
        limit: u32,
    },
    /// A line that is not a valid event (fault and column; never quotes the file).
    LineMalformed(String),
    /// An event breaking the per-event contract.
    EventInvalid(EventFault),
    /// `seq` equal to the previous line's.
    DuplicateSeq,
    /// `seq` lower than the previous line's.
    SeqOutOfOrder {
        /// The previous `seq`.
        previous: u64,
    },
    /// `seq` skips values in a `complete` capture.
    SeqGap {
        /// The previous `seq`.
        previous: u64,
    },
    /// `elapsed_ns` lower than the previous line's.
    ClockRegression {
        /// Previous `elapsed_ns`.
        previous_ns: u64,
        /// This line's `elapsed_ns`.
        elapsed_ns: u64,
    },
    /// `clock_domain_id` differs from the manifest.
    ClockDomainMismatch,
    /// `wall_time_utc` is not `reference_instant_unix_ns + elapsed_ns` in RFC 3339.
    WallTimeMismatch,
    /// A second start for a span id.
    DuplicateSpanStart {
        /// The span (its `span_id`).
        span_id: u64,
    },
    /// A parent that never started, in a `complete` capture.
    UnknownParent {
        /// The span (its `span_id`).
        span_id: u64,
        /// The parent span id it names.
        parent: u64,
    },
    /// An end without a start, in a `complete` capture.
    UnmatchedEnd {
        /// The span (its `span_id`).
        span_id: u64,
    },
    /// A second end for a span.
    DuplicateEnd {
        /// The span (its `span_id`).
        span_id: u64,
    },
    /// An end whose kind family, name or parent differ from its start.
    EndMismatch {
        /// The span (its `span_id`).
        span_id: u64,
    },
    /// A span without an end in a `complete` capture.
    UnclosedSpanInCompleteCapture {
        /// The span (its `span_id`).
        span_id: u64,
    },
    /// The manifest's `event_count` differs from the lines.
    EventCountMismatch {
        /// The manifest's value.
        manifest: u64,
        /// The value found.
        actual: u64,
    },
    /// The manifest's `unclosed_span_count` differs from the spans found.
    UnclosedCountMismatch {
        /// The manifest's value.
        manifest: u64,
        /// The value found.
        actual: u64,
    },
}

/// A visible gap in a `partial` capture (never an error there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Gap {
    /// Events were dropped at the bounds (count, from the manifest).
    DroppedEvents {
        /// Events (count).
        count: u64,
    },
    /// Events were rejected by validation (count, from the manifest).
    RejectedEvents {
        /// Events (count).
        count: u64,
    },
    /// `seq` jumps from `previous` to `next`: the events between were lost.
    SeqGap {
        /// The previous `seq`.
        previous: u64,
        /// The next `seq` found.
        next: u64,
    },
    /// An end whose start is not in the file (unknown start, unknown duration).
    MissingStart {
        /// The span (its `span_id`).
        span_id: u64,
        /// The `seq` of the line.
        seq: u64,
    },
    /// A start whose parent is not in the file.
    MissingParent {
        /// The span (its `span_id`).
        span_id: u64,
        /// The parent span id it names.
        parent: u64,
    },
}

/// The outcome class of a verification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VerifyStatus {
    /// Intact (exit 0).
    Ok,
    /// At least one integrity error (exit 1).
    IntegrityError,
    /// No timeline or bad input (exit 2).
    Unavailable,
}

/// The result of [`verify`]: summary line, itemized errors and gaps, and the events that
/// parsed (in file order).
#[derive(Clone, Debug)]
pub struct VerifyReport {
    /// The run directory verified.
    pub run_dir: PathBuf,
    /// Set when the timeline is unavailable.
    pub unavailable: Option<Unavailable>,
    /// The manifest, when it parsed.
    pub manifest: Option<TimelineManifest>,
    /// Events that parsed and passed the per-event contract, in file order.
    pub events: Vec<TimelineEvent>,
    /// Itemized integrity errors (at most [`MAX_ITEMIZED`]).
    pub errors: Vec<IntegrityError>,
    /// Errors beyond [`MAX_ITEMIZED`].
    pub errors_omitted: u64,
    /// Itemized gaps (at most [`MAX_ITEMIZED`]).
    pub gaps: Vec<Gap>,
    /// Gaps beyond [`MAX_ITEMIZED`].
    pub gaps_omitted: u64,
    /// Span ids with a start and no end (unknown end), ascending.
    pub unknown_end_spans: Vec<u64>,
}

impl VerifyReport {
    pub(crate) fn new(run_dir: &Path) -> Self {
        Self {
            run_dir: run_dir.to_path_buf(),
            unavailable: None,
            manifest: None,
            events: Vec::new(),
            errors: Vec::new(),
            errors_omitted: 0,
            gaps: Vec::new(),
            gaps_omitted: 0,
            unknown_end_spans: Vec::new(),
        }
    }

    pub(crate) fn error(&mut self, line: Option<u64>, seq: Option<u64>, kind: ErrorKind) {
        if self.errors.len() < MAX_ITEMIZED {
            self.errors.push(IntegrityError { line, seq, kind });
        } else {
            self.errors_omitted += 1;
        }
    }

    pub(crate) fn gap(&mut self, g: Gap) {
        if self.gaps.len() < MAX_ITEMIZED {
            self.gaps.push(g);
        } else {
            self.gaps_omitted += 1;
        }
    }

    /// The outcome class.
    pub fn status(&self) -> VerifyStatus {
        if self.unavailable.is_some() {
            VerifyStatus::Unavailable
        } else if self.errors.is_empty() {
            VerifyStatus::Ok
        } else {
            VerifyStatus::IntegrityError
        }
    }

    /// True when the timeline is available and intact (complete or partial).
    pub fn ok(&self) -> bool {
        self.status() == VerifyStatus::Ok
    }

    /// Exit status of `timeline verify`: 0 ok, 1 integrity error, 2 unavailable/bad input.
    pub fn exit_code(&self) -> i32 {
        match self.status() {
            VerifyStatus::Ok => ExitCode::OK,
            VerifyStatus::IntegrityError => ExitCode::ERROR,
            VerifyStatus::Unavailable => ExitCode::BAD_INPUT,
        }
    }

    /// The quality to show: the manifest's, or `unavailable`.
    pub fn quality(&self) -> Quality {
        match (&self.unavailable, &self.manifest) {
            (None, Some(m)) => m.quality,
            _ => Quality::Unavailable,
        }
    }

    /// Total integrity errors (itemized + omitted).
    pub fn error_count(&self) -> u64 {
        self.errors.len() as u64 + self.errors_omitted
    }

    /// One line: outcome, quality and reasons, counts, run directory.
    pub fn summary(&self) -> String {
        let dir = self.run_dir.display();
        match (&self.unavailable, &self.manifest) {
            (Some(Unavailable::RunDirMissing), _) => {
                format!("timeline unavailable: {dir} is not a run directory")
            }
            (Some(Unavailable::Incomplete), _) => format!(
                "timeline unavailable: {dir} is an incomplete run (no report.json, the \
                 artifact a run writes last: killed or out of disk before it finished)"
            ),
            (Some(Unavailable::NoManifest), _) => format!(
                "timeline unavailable: no {TIMELINE_DIR}/{MANIFEST_FILE} in {dir} \
                 (capture off, run killed before persistence, or persistence failed)"
            ),
            (None, None) => format!(
                "timeline INTEGRITY ERROR: {} error(s), manifest unusable — {dir}",
                self.error_count()
            ),
            (None, Some(m)) => {
                let reasons = if m.quality_reasons.is_empty() {
                    String::new()
                } else {
                    let r: Vec<&str> = m.quality_reasons.iter().map(|r| r.as_str()).collect();
                    format!(" ({})", r.join(", "))
                };
                let head = if self.errors.is_empty() {
                    "timeline ok".to_string()
                } else {
                    format!("timeline INTEGRITY ERROR: {} error(s)", self.error_count())
                };
                format!(
                    "{head}: {}{reasons}, {} events, {} dropped, {} rejected, {} gap(s), \
                     {} span(s) with unknown end — {dir}",
                    m.quality.as_str(),
                    m.event_count,
                    m.dropped_count,
                    m.rejected_count,
                    self.gaps.len() as u64 + self.gaps_omitted,
                    self.unknown_end_spans.len(),
                )
            }
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match self {
            NotRegularFile(what) => write!(f, "{what} is a symlink or not a regular file"),
            Unreadable(what, e) => write!(f, "{what} unreadable: {e}"),
            ManifestTooLarge { limit } => write!(f, "manifest over {limit} bytes"),
            ManifestMalformed(e) => write!(f, "manifest malformed: {e}"),
            UnknownSchema => write!(f, "manifest schema is neither {SCHEMA} nor {SCHEMA_V1}"),
            ManifestInvalid(rule) => write!(f, "manifest invalid: {rule}"),
            EventsMissing => write!(f, "events file missing ({EVENTS_REL_PATH})"),
            EventsTooLarge => write!(f, "events file over the byte budget"),
            LengthMismatch { manifest, actual } => {
                write!(f, "events file is {actual} bytes, manifest says {manifest}")
            }
            HashMismatch => write!(f, "events file SHA-256 differs from the manifest"),
            MissingFinalNewline => write!(f, "last line has no newline"),
            LineTooLong { bytes, limit } => write!(f, "line is {bytes} bytes, over {limit}"),
            LineMalformed(e) => write!(f, "not a valid event: {e}"),
            EventInvalid(fault) => write!(f, "invalid event: {fault}"),
            DuplicateSeq => write!(f, "duplicate seq"),
            SeqOutOfOrder { previous } => write!(f, "seq lower than previous {previous}"),
            SeqGap { previous } => write!(f, "seq skips after {previous} in a complete capture"),
            ClockRegression {
                previous_ns,
                elapsed_ns,
            } => write!(
                f,
                "clock regression: elapsed_ns {elapsed_ns} < previous {previous_ns}"
            ),
            ClockDomainMismatch => write!(f, "clock_domain_id differs from the manifest"),
            WallTimeMismatch => write!(f, "wall_time_utc is not anchor + elapsed_ns"),
            DuplicateSpanStart { span_id } => write!(f, "span {span_id} started twice"),
            UnknownParent { span_id, parent } => write!(
                f,
                "span {span_id}: parent {parent} unknown in a complete capture"
            ),
            UnmatchedEnd { span_id } => {
                write!(
                    f,
                    "end of span {span_id} without a start in a complete capture"
                )
            }
            DuplicateEnd { span_id } => write!(f, "span {span_id} ended twice"),
            EndMismatch { span_id } => {
                write!(
                    f,
                    "end of span {span_id} differs from its start (kind/name/parent)"
                )
            }
            UnclosedSpanInCompleteCapture { span_id } => {
                write!(f, "span {span_id} has no end in a complete capture")
            }
            EventCountMismatch { manifest, actual } => write!(
                f,
                "manifest event_count {manifest}, file has {actual} lines"
            ),
            UnclosedCountMismatch { manifest, actual } => write!(
                f,
                "manifest unclosed_span_count {manifest}, file has {actual}"
            ),
        }
    }
}

impl fmt::Display for IntegrityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.seq) {
            (Some(l), Some(s)) => write!(f, "line {l} (seq {s}): {}", self.kind),
            (Some(l), None) => write!(f, "line {l}: {}", self.kind),
            _ => write!(f, "{}", self.kind),
        }
    }
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Gap::DroppedEvents { count } => write!(f, "{count} event(s) dropped at the bounds"),
            Gap::RejectedEvents { count } => write!(f, "{count} event(s) rejected by validation"),
            Gap::SeqGap { previous, next } => {
                write!(f, "seq jumps {previous} -> {next}: events lost between")
            }
            Gap::MissingStart { span_id, seq } => write!(
                f,
                "seq {seq}: end of span {span_id} whose start is missing (unknown duration)"
            ),
            Gap::MissingParent { span_id, parent } => {
                write!(f, "span {span_id}: parent {parent} missing")
            }
        }
    }
}

impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.summary())?;
        for e in &self.errors {
            writeln!(f, "  error: {e}")?;
        }
        if self.errors_omitted > 0 {
            writeln!(f, "  error: … and {} more", self.errors_omitted)?;
        }
        for g in &self.gaps {
            writeln!(f, "  gap: {g}")?;
        }
        if self.gaps_omitted > 0 {
            writeln!(f, "  gap: … and {} more", self.gaps_omitted)?;
        }
        for s in self.unknown_end_spans.iter().take(MAX_ITEMIZED) {
            writeln!(f, "  unknown end: span {s}")?;
        }
        if self.unknown_end_spans.len() > MAX_ITEMIZED {
            writeln!(
                f,
                "  unknown end: … and {} more",
                self.unknown_end_spans.len() - MAX_ITEMIZED
            )?;
        }
        Ok(())
    }
}
