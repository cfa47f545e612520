//! The run store: retained run directories under one runs root, addressed by `run_id`
//! only (docs/artifacts.md; field case C29).
//!
//! - A `run_id` has the syntax `[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}` ([`is_valid_run_id`]):
//!   no `/`, no `\`, no `%`, no NUL, and never `.` or `..`. It names a directory
//!   directly under the root (in the default layout `target/inferscope/runs/<run_id>/`
//!   the directory name *is* the run id). A client never sends a path.
//! - Every path the store opens is built from the root, the validated `run_id` and fixed
//!   component names of the run layout (`report.json`, `timeline/manifest.json`,
//!   `samples/gpu.jsonl`, …) and opened through [`crate::fsio`]: the root without
//!   following it, then every component with `openat(…, O_NOFOLLOW)` from the previous
//!   one's descriptor, the file with `O_NONBLOCK` and checked by `fstat` to be a regular
//!   file within its limit before a byte is read. A symlink anywhere, a FIFO, a device or
//!   an oversized (even sparse) file is refused, and a component swapped for a symlink
//!   after listing is refused at the open. Containment is by descriptor, never by string
//!   prefix (`/data/runs` does not contain `/data/runs-old`).
//! - Every read is bounded ([`MAX_REPORT_BYTES`], [`MAX_SOURCES_BYTES`],
//!   [`MAX_SAMPLES_FILE_BYTES`]; the timeline reader's own 16 KiB manifest and ≤ 8 MiB
//!   events bounds; all in [`fsio::limits`]).
//! - A run is complete only when `report.json`, written last and atomically, is in
//!   place; without it the timeline is `unavailable` (`run_incomplete`). Leftover temp
//!   files (`.tmp*`) of a killed run are never read: every read names a fixed file, and a
//!   listing takes only run-id names, which never start with a dot.
//! - The timeline is served only when [`crate::timeline::verify`] finds it intact (manifest
//!   schema, SHA-256 and byte length of the events file, every event) and the manifest's
//!   `run_id` equals the run's `report.json` `run_id` (ownership: run A cannot present run
//!   B's artifact).
//!
//! Every public method bumps a shared counter *before* it touches the filesystem, so
//! tests can prove that refused requests (401, 400) never reached it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde::de::DeserializeOwned;
use sha2::{Digest, Sha256};

use crate::fsio;
use crate::model::{REPORT_SCHEMA, RunReport};
pub use crate::telemetry::{SAMPLES_SCHEMA, SamplesSources};
use crate::timeline::ids::{MAX_ID_LEN, is_valid_id};
use crate::timeline::manifest::{EVENTS_FILE, MANIFEST_FILE, TIMELINE_DIR};
use crate::timeline::verify_report::{ErrorKind, Unavailable};
use crate::timeline::{TimelineManifest, VerifiedTimeline};

/// Longest run id, bytes (the timeline's [`MAX_ID_LEN`]).
pub const MAX_RUN_ID_LEN: usize = MAX_ID_LEN;
/// Directory entries examined per listing at most.
pub const MAX_LIST_SCAN: usize = 100_000;
/// Largest `report.json` read for a run's detail, bytes ([`fsio::limits`]).
pub const MAX_REPORT_BYTES: u64 = fsio::limits::REPORT_BYTES;
/// Largest `report.json` read for a listing row, bytes.
pub const MAX_LIST_REPORT_BYTES: u64 = fsio::limits::LIST_REPORT_BYTES;
/// Largest `samples/sources.json` read, bytes.
pub const MAX_SOURCES_BYTES: u64 = fsio::limits::SAMPLES_SOURCES_BYTES;
/// Largest `samples/*.jsonl` file read, bytes.
pub const MAX_SAMPLES_FILE_BYTES: u64 = fsio::limits::SAMPLES_FILE_BYTES;
/// The samples directory of a run.
pub const SAMPLES_DIR: &str = "samples";

/// Whether `s` is a run id: `[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}` (pure): an opaque id
/// ([`is_valid_id`]) whose first byte is alphanumeric.
pub fn is_valid_run_id(s: &str) -> bool {
    is_valid_id(s) && s.as_bytes().first().is_some_and(u8::is_ascii_alphanumeric)
}

/// What is wrong with one artifact of a run (answered as an integrity error). `artifact`
/// is a fixed name of the run layout, e.g. `samples/gpu.jsonl`, never client input.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ArtifactFault {
    /// A component on the way is a symlink.
    #[error("{0}: symlink refused")]
    Symlink(&'static str),
    /// A component is not of the expected type (directory or regular file).
    #[error("{0}: not a regular file or directory")]
    WrongType(&'static str),
    /// The file exceeds its read bound.
    #[error("{0}: larger than its read bound")]
    TooLarge(&'static str),
    /// The file is not valid JSON of its schema (the artifact and the line, 0 = whole file).
    #[error("{0}: malformed at line {1}")]
    Malformed(&'static str, usize),
    /// The file names an unknown schema.
    #[error("{0}: unknown schema")]
    UnknownSchema(&'static str),
    /// The file could not be read (the OS error kind).
    #[error("{0}: unreadable ({1})")]
    Unreadable(&'static str, String),
}

impl ArtifactFault {
    /// The stable code of the fault (`symlink`, `wrong_type`, `too_large`, `malformed`,
    /// `unknown_schema`, `unreadable`).
    pub fn code(&self) -> &'static str {
        match self {
            ArtifactFault::Symlink(_) => "symlink",
            ArtifactFault::WrongType(_) => "wrong_type",
            ArtifactFault::TooLarge(_) => "too_large",
            ArtifactFault::Malformed(..) => "malformed",
            ArtifactFault::UnknownSchema(_) => "unknown_schema",
            ArtifactFault::Unreadable(..) => "unreadable",
        }
    }
}

/// Why the store could not answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The runs root is missing, not a directory, a symlink, or unreadable.
    #[error("the runs root is unavailable")]
    RootUnavailable,
    /// No run directory with that id (also: a symlink or a file in its place). Says
    /// nothing more.
    #[error("no such run")]
    NotFound,
}

/// The retained runs under one root. Cheap to clone.
#[derive(Clone, Debug)]
pub struct RunStore {
    root: PathBuf,
    fs_ops: Arc<AtomicU64>,
}

/// One listing page of run ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunIdPage {
    /// Run ids in ascending byte order.
    pub run_ids: Vec<String>,
    /// More ids follow the last one.
    pub more: bool,
    /// The directory held more than [`MAX_LIST_SCAN`] entries; later ones were not seen.
    pub scan_truncated: bool,
}

impl RunStore {
    /// A store over `root`. Touches nothing on disk.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self {
            root: root.into(),
            fs_ops: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Store operations that reached the filesystem so far (count; for tests).
    pub fn fs_operations(&self) -> u64 {
        self.fs_ops.load(Ordering::SeqCst)
    }

    fn touch(&self) {
        self.fs_ops.fetch_add(1, Ordering::SeqCst);
    }

    fn check_root(&self) -> Result<(), StoreError> {
        match std::fs::symlink_metadata(&self.root) {
            Ok(m) if m.file_type().is_dir() => Ok(()),
            _ => Err(StoreError::RootUnavailable),
        }
    }

    /// Lists run ids after `after` (exclusive; ascending byte order), at most `limit`.
    /// Only real directories (no symlinks) whose names are valid run ids are listed.
    pub fn list(&self, after: Option<&str>, limit: usize) -> Result<RunIdPage, StoreError> {
        self.touch();
        self.check_root()?;
        let rd = std::fs::read_dir(&self.root).map_err(|_| StoreError::RootUnavailable)?;
        let mut ids = Vec::new();
        let mut scan_truncated = false;
        for (n, entry) in rd.enumerate() {
            if n >= MAX_LIST_SCAN {
                scan_truncated = true;
                break;
            }
            let Ok(entry) = entry else { continue };
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            // `DirEntry::file_type` does not follow symlinks.
            if is_valid_run_id(&name) && entry.file_type().is_ok_and(|t| t.is_dir()) {
                ids.push(name);
            }
        }
        Ok(page_ids(ids, after, limit, scan_truncated))
    }

    /// Resolves `run_id` to its directory (a real directory directly under the root).
    /// Errors: [`StoreError::NotFound`] for an invalid id too (callers validate first to
    /// answer 400), [`StoreError::RootUnavailable`].
    pub fn resolve(&self, run_id: &str) -> Result<RunDir, StoreError> {
        if !is_valid_run_id(run_id) {
            return Err(StoreError::NotFound);
        }
        self.touch();
        self.check_root()?;
        let path = self.root.join(run_id);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_dir() => Ok(RunDir {
                run_id: run_id.to_string(),
                path,
                root: Some(self.root.clone()),
                fs_ops: Some(self.fs_ops.clone()),
            }),
            _ => Err(StoreError::NotFound),
        }
    }
}

/// Sorts, deduplicates and pages run ids (pure).
pub fn page_ids(
    mut ids: Vec<String>,
    after: Option<&str>,
    limit: usize,
    scan_truncated: bool,
) -> RunIdPage {
    ids.sort_unstable();
    ids.dedup();
    let start = after.map_or(0, |a| ids.partition_point(|x| x.as_str() <= a));
    let rest = &ids[start..];
    RunIdPage {
        more: rest.len() > limit,
        run_ids: rest.iter().take(limit).cloned().collect(),
        scan_truncated,
    }
}

/// The state of a run's `report.json`.
#[derive(Clone, Debug)]
pub enum ReportState {
    /// Parsed, schema [`REPORT_SCHEMA`].
    Ok(Box<RunReport>),
    /// No `report.json` (a run killed before finalization).
    Missing,
    /// Present but refused.
    Fault(ArtifactFault),
}

/// The state of a run's timeline.
#[derive(Clone, Debug)]
pub enum TimelineState {
    /// Verified intact (complete or partial) and owned by this run.
    Ok(Box<VerifiedTimeline>),
    /// No timeline: capture off, or the run was killed before persistence
    /// (`no_timeline`, `no_manifest`).
    Unavailable(&'static str),
    /// The timeline exists and fails verification or ownership: itemized codes (at most
    /// [`crate::timeline::verify_report::MAX_ITEMIZED`]) and the count omitted.
    Integrity(Vec<IntegrityItem>, u64),
}

/// One itemized integrity problem: a stable code, and the events-file line and `seq`
/// when it concerns one event. Never quotes the artifact.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IntegrityItem {
    /// Stable code, e.g. `hash_mismatch`, `length_mismatch`, `symlink`, `run_id_mismatch`.
    pub code: &'static str,
    /// 1-based line of `timeline/events.jsonl`, or `null`.
    pub line: Option<u64>,
    /// The event's `seq`, or `null`.
    pub seq: Option<u64>,
}

impl IntegrityItem {
    /// An item about a whole artifact: `code`, no line, no `seq`.
    pub(crate) fn whole(code: &'static str) -> Self {
        Self {
            code,
            line: None,
            seq: None,
        }
    }
}

/// The stable code of a timeline reader error (pure).
pub fn error_code(k: &ErrorKind) -> &'static str {
    match k {
        ErrorKind::NotRegularFile(_) => "not_regular_file",
        ErrorKind::Unreadable(..) => "unreadable",
        ErrorKind::ManifestTooLarge { .. } => "manifest_too_large",
        ErrorKind::ManifestMalformed(_) => "manifest_malformed",
        ErrorKind::UnknownSchema => "unknown_schema",
        ErrorKind::ManifestInvalid(_) => "manifest_invalid",
        ErrorKind::EventsMissing => "events_missing",
        ErrorKind::EventsTooLarge => "events_too_large",
        ErrorKind::LengthMismatch { .. } => "length_mismatch",
        ErrorKind::HashMismatch => "hash_mismatch",
        ErrorKind::MissingFinalNewline => "missing_final_newline",
        ErrorKind::LineTooLong { .. } => "line_too_long",
        ErrorKind::LineMalformed(_) => "line_malformed",
        ErrorKind::EventInvalid(_) => "event_invalid",
        ErrorKind::DuplicateSeq => "duplicate_seq",
        ErrorKind::SeqOutOfOrder { .. } => "seq_out_of_order",
        ErrorKind::SeqGap { .. } => "seq_gap_in_complete_capture",
        ErrorKind::ClockRegression { .. } => "clock_regression",
        ErrorKind::ClockDomainMismatch => "clock_domain_mismatch",
        ErrorKind::WallTimeMismatch => "wall_time_mismatch",
        ErrorKind::DuplicateSpanStart { .. } => "duplicate_span_start",
        ErrorKind::UnknownParent { .. } => "unknown_parent",
        ErrorKind::UnmatchedEnd { .. } => "unmatched_end",
        ErrorKind::DuplicateEnd { .. } => "duplicate_end",
        ErrorKind::EndMismatch { .. } => "end_mismatch",
        ErrorKind::UnclosedSpanInCompleteCapture { .. } => "unclosed_span_in_complete_capture",
        ErrorKind::EventCountMismatch { .. } => "event_count_mismatch",
        ErrorKind::UnclosedCountMismatch { .. } => "unclosed_count_mismatch",
    }
}

/// The state of a run's `samples/`.
#[derive(Clone, Debug)]
pub enum SamplesState {
    /// `sources.json` parsed.
    Ok(Box<SamplesSources>),
    /// No `samples/` directory or no `sources.json`.
    Missing,
    /// Present but refused.
    Fault(ArtifactFault),
}

/// The sample files of `samples/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SampleFile {
    /// `proc.jsonl` ([`crate::telemetry::ProcSample`] lines).
    Proc,
    /// `gpu.jsonl` ([`crate::telemetry::PowerSample`] lines).
    Power,
    /// `metrics.jsonl` ([`crate::telemetry::MetricsSample`] lines).
    Metrics,
}

impl SampleFile {
    /// The source name of the API's `source` parameter and of the telemetry lanes:
    /// `power`, `proc` or `metrics`.
    pub fn source(self) -> &'static str {
        match self {
            SampleFile::Proc => "proc",
            SampleFile::Power => "power",
            SampleFile::Metrics => "metrics",
        }
    }
    /// The file of source name `name` (see [`SampleFile::source`]); `None` for any other.
    pub fn from_source(name: &str) -> Option<Self> {
        [SampleFile::Power, SampleFile::Proc, SampleFile::Metrics]
            .into_iter()
            .find(|f| f.source() == name)
    }
    /// The layout name, e.g. `samples/gpu.jsonl`.
    pub fn artifact(self) -> &'static str {
        match self {
            SampleFile::Proc => "samples/proc.jsonl",
            SampleFile::Power => "samples/gpu.jsonl",
            SampleFile::Metrics => "samples/metrics.jsonl",
        }
    }
    fn file(self) -> &'static str {
        match self {
            SampleFile::Proc => "proc.jsonl",
            SampleFile::Power => "gpu.jsonl",
            SampleFile::Metrics => "metrics.jsonl",
        }
    }
}

/// One run directory, resolved by [`RunStore::resolve`] or opened directly by
/// [`RunDir::open_local`] (the `report --format html` command).
#[derive(Clone, Debug)]
pub struct RunDir {
    /// The run id (the directory name).
    pub run_id: String,
    path: PathBuf,
    /// The runs root the directory was resolved under (`None`: a local run directory).
    root: Option<PathBuf>,
    fs_ops: Option<Arc<AtomicU64>>,
}

/// An [`fsio::ReadError`] as an artifact fault (`None` for a missing file).
fn fault_of(e: fsio::ReadError, artifact: &'static str) -> Option<ArtifactFault> {
    match e {
        fsio::ReadError::NotFound => None,
        fsio::ReadError::Symlink => Some(ArtifactFault::Symlink(artifact)),
        fsio::ReadError::NotRegular(_) | fsio::ReadError::NotDirectory => {
            Some(ArtifactFault::WrongType(artifact))
        }
        fsio::ReadError::TooLarge { .. } => Some(ArtifactFault::TooLarge(artifact)),
        fsio::ReadError::Io(k) => Some(ArtifactFault::Unreadable(artifact, k.to_string())),
    }
}

impl RunDir {
    /// Opens a run directory named on the command line by its operator (no root to be
    /// contained in; everything below it is checked as in the store). The id is the
    /// directory's name when it is a valid run id, else `run`.
    pub fn open_local(path: &Path) -> Self {
        let run_id = path
            .file_name()
            .and_then(|n| n.to_str())
            .filter(|n| is_valid_run_id(n))
            .unwrap_or("run")
            .to_string();
        Self {
            run_id,
            path: path.to_path_buf(),
            root: None,
            fs_ops: None,
        }
    }

    fn touch(&self) {
        if let Some(c) = &self.fs_ops {
            c.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// The run directory, opened without following anything below the runs root (a
    /// store run) or from the operator's own path (a local run). `Ok(None)` when gone.
    fn open_root(&self, artifact: &'static str) -> Result<Option<fsio::Root>, ArtifactFault> {
        let opened = match &self.root {
            Some(root) => fsio::Root::open(root, false).and_then(|r| r.dir(&[&self.run_id])),
            None => fsio::Root::open(&self.path, true),
        };
        match opened {
            Ok(r) => Ok(Some(r)),
            Err(e) => match fault_of(e, artifact) {
                None => Ok(None),
                Some(f) => Err(f),
            },
        }
    }

    /// What `rel` is below the run directory (no component followed). `Ok(None)` when
    /// missing; a symlink or an entry of the wrong type is a fault.
    fn entry(
        &self,
        rel: &[&str],
        artifact: &'static str,
        want_dir: bool,
    ) -> Result<Option<()>, ArtifactFault> {
        let Some(root) = self.open_root(artifact)? else {
            return Ok(None);
        };
        match root.entry(rel) {
            Ok(fsio::Entry::Dir) if want_dir => Ok(Some(())),
            Ok(fsio::Entry::File) if !want_dir => Ok(Some(())),
            Ok(_) => Err(ArtifactFault::WrongType(artifact)),
            Err(e) => fault_of(e, artifact).map_or(Ok(None), Err),
        }
    }

    /// Reads one file of the layout, at most `limit` bytes, through the bounded reader
    /// ([`crate::fsio`]: no component followed, regular files only, size checked before
    /// reading). `Ok(None)` when it does not exist.
    pub fn read(
        &self,
        rel: &[&str],
        artifact: &'static str,
        limit: u64,
    ) -> Result<Option<Vec<u8>>, ArtifactFault> {
        self.touch();
        let Some(root) = self.open_root(artifact)? else {
            return Ok(None);
        };
        match root.read(rel, limit) {
            Ok(b) => Ok(Some(b)),
            Err(e) => fault_of(e, artifact).map_or(Ok(None), Err),
        }
    }

    /// Reads and checks `report.json` (at most `limit` bytes; schema must be
    /// [`REPORT_SCHEMA`]).
    pub fn report(&self, limit: u64) -> ReportState {
        const A: &str = "report.json";
        match self.read(&[A], A, limit) {
            Ok(None) => ReportState::Missing,
            Err(f) => ReportState::Fault(f),
            Ok(Some(bytes)) => {
                // One parse for a well-formed report. Serde also reads a struct from a JSON
                // array; a report written as one is malformed (the `Head` rule below), so
                // only an object counts as read here.
                if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{')
                    && let Ok(r) = RunReport::from_json_body(&bytes)
                {
                    return if r.schema == REPORT_SCHEMA {
                        ReportState::Ok(Box::new(r))
                    } else {
                        ReportState::Fault(ArtifactFault::UnknownSchema(A))
                    };
                }
                // Not a report: an unknown schema when its `schema` is a string naming
                // another, else malformed.
                #[derive(Deserialize)]
                struct Head {
                    schema: String,
                }
                match serde_json::from_slice::<Head>(&bytes) {
                    Ok(h) if h.schema != REPORT_SCHEMA => {
                        ReportState::Fault(ArtifactFault::UnknownSchema(A))
                    }
                    _ => ReportState::Fault(ArtifactFault::Malformed(A, 0)),
                }
            }
        }
    }

    /// Whether `timeline/manifest.json` exists as a regular file (listing only; not a
    /// verification).
    pub fn has_manifest(&self) -> bool {
        self.touch();
        matches!(
            self.entry(
                &[TIMELINE_DIR, MANIFEST_FILE],
                "timeline/manifest.json",
                false
            ),
            Ok(Some(_))
        )
    }

    /// Verifies the timeline and its ownership. `owner_run_id` is the `run_id` of this
    /// run's `report.json`; `None` (no readable report) makes ownership unverifiable,
    /// an integrity error.
    /// Fills the `requests` of `report`'s load jobs with the records of the requests in
    /// `ids` only (the ones the captured timeline drew), streamed from `requests.jsonl`
    /// ([`crate::records::visit`]): the page marks their TTFT although report.json keeps
    /// one trajectory per load point. Memory is bounded by `ids` (the capture's bound),
    /// whatever the run's size. A records file that is refused leaves them empty (the
    /// error is returned; the page then draws those lanes without TTFT marks).
    pub fn load_requests_in(
        &self,
        report: &mut RunReport,
        ids: &std::collections::HashSet<&str>,
    ) -> Result<(), String> {
        self.touch();
        let load: Vec<bool> = report.jobs.iter().map(|j| j.load.is_some()).collect();
        let mut kept: Vec<Vec<crate::model::RequestRecord>> = vec![Vec::new(); load.len()];
        crate::records::visit(&self.path, report, |j, line| {
            if let crate::records::Line::Request(r) = line
                && load[j]
                && ids.contains(r.request_id.as_str())
            {
                kept[j].push(*r);
            }
        })?;
        for (j, k) in report.jobs.iter_mut().zip(kept) {
            if j.load.is_some() {
                j.requests = k;
            }
        }
        Ok(())
    }

    pub fn timeline(&self, owner_run_id: Option<&str>) -> TimelineState {
        self.touch();
        match self.entry(&[TIMELINE_DIR], "timeline", true) {
            Ok(None) => return TimelineState::Unavailable("no_timeline"),
            Err(f) => return TimelineState::Integrity(vec![IntegrityItem::whole(f.code())], 0),
            Ok(Some(_)) => {}
        }
        for (file, artifact) in [
            (MANIFEST_FILE, "timeline/manifest.json"),
            (EVENTS_FILE, "timeline/events.jsonl"),
        ] {
            if let Err(f) = self.entry(&[TIMELINE_DIR, file], artifact, false) {
                return TimelineState::Integrity(vec![IntegrityItem::whole(f.code())], 0);
            }
        }
        let root = match self.open_root("timeline") {
            Ok(Some(r)) => r,
            Ok(None) => return TimelineState::Unavailable("no_timeline"),
            Err(f) => return TimelineState::Integrity(vec![IntegrityItem::whole(f.code())], 0),
        };
        let report = crate::timeline::verify_at(&root, &self.path, false);
        if let Some(u) = &report.unavailable {
            return TimelineState::Unavailable(match u {
                Unavailable::RunDirMissing => "no_timeline",
                Unavailable::NoManifest => "no_manifest",
                Unavailable::Incomplete => "run_incomplete",
            });
        }
        let mut items: Vec<IntegrityItem> = report
            .errors
            .iter()
            .map(|e| IntegrityItem {
                code: error_code(&e.kind),
                line: e.line,
                seq: e.seq,
            })
            .collect();
        let omitted = report.errors_omitted;
        let Some(manifest) = report.manifest.clone() else {
            if items.is_empty() {
                items.push(IntegrityItem::whole("manifest_malformed"));
            }
            return TimelineState::Integrity(items, omitted);
        };
        match owner_run_id {
            None => items.insert(0, IntegrityItem::whole("owner_unverifiable")),
            Some(owner) if owner != manifest.run_id => {
                items.insert(0, IntegrityItem::whole("run_id_mismatch"))
            }
            Some(_) => {}
        }
        if !items.is_empty() {
            return TimelineState::Integrity(items, omitted);
        }
        TimelineState::Ok(Box::new(VerifiedTimeline {
            manifest,
            events: report.events,
            gaps: report.gaps,
            unknown_end_spans: report.unknown_end_spans,
        }))
    }

    /// The verified bytes of `timeline/events.jsonl` (`events = true`) or
    /// `timeline/manifest.json`, for download: read again after verification and
    /// checked against the verified manifest (SHA-256 and byte length, or equality of the
    /// manifest), so a file swapped after verification is refused.
    pub fn verified_artifact(
        &self,
        verified: &TimelineManifest,
        events: bool,
    ) -> Result<Vec<u8>, IntegrityItem> {
        let fault = |f: ArtifactFault| IntegrityItem::whole(f.code());
        if events {
            let bytes = self
                .read(
                    &[TIMELINE_DIR, EVENTS_FILE],
                    "timeline/events.jsonl",
                    u64::from(verified.bounds.max_total_bytes),
                )
                .map_err(fault)?
                .ok_or(IntegrityItem::whole("events_missing"))?;
            if bytes.len() as u64 != verified.events.byte_length {
                return Err(IntegrityItem::whole("length_mismatch"));
            }
            if hex::encode(Sha256::digest(&bytes)) != verified.events.sha256 {
                return Err(IntegrityItem::whole("hash_mismatch"));
            }
            Ok(bytes)
        } else {
            let bytes = self
                .read(
                    &[TIMELINE_DIR, MANIFEST_FILE],
                    "timeline/manifest.json",
                    u64::from(crate::timeline::bounds::MAX_MANIFEST_BYTES),
                )
                .map_err(fault)?
                .ok_or(IntegrityItem::whole("manifest_missing"))?;
            match serde_json::from_slice::<TimelineManifest>(&bytes) {
                Ok(m) if &m == verified => Ok(bytes),
                _ => Err(IntegrityItem::whole("manifest_changed")),
            }
        }
    }

    /// Reads `samples/sources.json`.
    pub fn samples_sources(&self) -> SamplesState {
        const A: &str = "samples/sources.json";
        match self.read(&[SAMPLES_DIR, "sources.json"], A, MAX_SOURCES_BYTES) {
            Ok(None) => SamplesState::Missing,
            Err(f) => SamplesState::Fault(f),
            Ok(Some(bytes)) => match serde_json::from_slice::<SamplesSources>(&bytes) {
                Ok(s) if s.schema != SAMPLES_SCHEMA => {
                    SamplesState::Fault(ArtifactFault::UnknownSchema(A))
                }
                Ok(s) => SamplesState::Ok(Box::new(s)),
                Err(_) => SamplesState::Fault(ArtifactFault::Malformed(A, 0)),
            },
        }
    }

    /// Reads every line of one sample file as `T` (strict JSON; a missing file is empty).
    pub fn samples<T: DeserializeOwned>(&self, file: SampleFile) -> Result<Vec<T>, ArtifactFault> {
        let a = file.artifact();
        let Some(bytes) = self.read(&[SAMPLES_DIR, file.file()], a, MAX_SAMPLES_FILE_BYTES)? else {
            return Ok(Vec::new());
        };
        parse_jsonl(&bytes, a)
    }
}

/// The sample files a run's lanes are drawn from, as read.
#[derive(Debug, Default)]
pub struct LaneFiles {
    /// `samples/gpu.jsonl`.
    pub power: Vec<crate::telemetry::PowerSample>,
    /// `samples/proc.jsonl`.
    pub proc: Vec<crate::telemetry::ProcSample>,
    /// `samples/metrics.jsonl`.
    pub metrics: Vec<crate::telemetry::MetricsSample>,
    /// A sample file that could not be read (its fault; its samples are left empty).
    pub fault: Option<ArtifactFault>,
}

/// Reads the sample files of every lane `s` lists (blocking I/O; bounded by
/// [`MAX_SAMPLES_FILE_BYTES`] per file). A file that cannot be read is left empty and its
/// fault recorded.
pub fn read_lane_files(dir: &RunDir, s: &SamplesSources) -> LaneFiles {
    fn read<T: DeserializeOwned>(
        dir: &RunDir,
        present: bool,
        file: SampleFile,
        fault: &mut Option<ArtifactFault>,
    ) -> Vec<T> {
        if !present {
            return Vec::new();
        }
        dir.samples(file).unwrap_or_else(|f| {
            *fault = Some(f);
            Vec::new()
        })
    }
    let mut fault = None;
    let power = read(dir, s.power.is_some(), SampleFile::Power, &mut fault);
    let proc = read(dir, s.proc.is_some(), SampleFile::Proc, &mut fault);
    let metrics = read(dir, s.metrics.is_some(), SampleFile::Metrics, &mut fault);
    LaneFiles {
        power,
        proc,
        metrics,
        fault,
    }
}

/// Parses JSON lines (pure); blank lines are skipped; the first bad line is the fault.
pub fn parse_jsonl<T: DeserializeOwned>(
    bytes: &[u8],
    artifact: &'static str,
) -> Result<Vec<T>, ArtifactFault> {
    let mut out = Vec::new();
    for (i, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        out.push(
            serde_json::from_slice(line).map_err(|_| ArtifactFault::Malformed(artifact, i + 1))?,
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_syntax() {
        for ok in [
            "r1",
            "20261129T133444Z-caa21e",
            "A.b:c-d_e",
            &"a".repeat(128),
        ] {
            assert!(is_valid_run_id(ok), "{ok}");
        }
        for bad in [
            "",
            ".",
            "..",
            ".hidden",
            "-x",
            "a/b",
            "a\\b",
            "a%2e",
            "a\0b",
            "/abs",
            "a b",
            "ü",
            &"a".repeat(129),
        ] {
            assert!(!is_valid_run_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn pages_are_sorted_and_stable() {
        let ids: Vec<String> = ["c", "a", "b", "e", "d"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let p1 = page_ids(ids.clone(), None, 2, false);
        assert_eq!(p1.run_ids, ["a", "b"]);
        assert!(p1.more);
        let p2 = page_ids(ids.clone(), Some("b"), 2, false);
        assert_eq!(p2.run_ids, ["c", "d"]);
        let p3 = page_ids(ids.clone(), Some("d"), 2, false);
        assert_eq!(p3.run_ids, ["e"]);
        assert!(!p3.more);
        // A cursor that is not itself a run still pages from its position.
        assert_eq!(
            page_ids(ids, Some("bb"), 10, false).run_ids,
            ["c", "d", "e"]
        );
    }

    #[test]
    fn resolve_refuses_symlinks_files_and_bad_ids_without_disclosure() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("runs");
        std::fs::create_dir_all(root.join("r1")).unwrap();
        std::fs::create_dir_all(tmp.path().join("runs-old/r2")).unwrap();
        std::fs::write(root.join("afile"), b"x").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("runs-old/r2"), root.join("r2")).unwrap();
        let store = RunStore::new(&root);
        assert!(store.resolve("r1").is_ok());
        for bad in ["r2", "afile", "nope", "..", "../runs-old", "r1/..", ""] {
            assert_eq!(
                store.resolve(bad).unwrap_err(),
                StoreError::NotFound,
                "{bad}"
            );
        }
        let page = store.list(None, 10).unwrap();
        assert_eq!(page.run_ids, ["r1"]);
        let missing = RunStore::new(tmp.path().join("absent"));
        assert_eq!(
            missing.resolve("r1").unwrap_err(),
            StoreError::RootUnavailable
        );
        assert_eq!(
            missing.list(None, 1).unwrap_err(),
            StoreError::RootUnavailable
        );
    }

    #[test]
    fn reads_refuse_symlinked_components_and_bound_size() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("runs");
        let run = root.join("r1");
        std::fs::create_dir_all(run.join("samples")).unwrap();
        std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
        std::fs::write(tmp.path().join("outside/secret.txt"), b"SECRET").unwrap();
        std::fs::write(run.join("report.json"), b"{}").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), run.join("timeline")).unwrap();
        std::os::unix::fs::symlink(
            tmp.path().join("outside/secret.txt"),
            run.join("samples/gpu.jsonl"),
        )
        .unwrap();
        let dir = RunStore::new(&root).resolve("r1").unwrap();
        assert_eq!(
            dir.read(&["samples", "gpu.jsonl"], "samples/gpu.jsonl", 100),
            Err(ArtifactFault::Symlink("samples/gpu.jsonl"))
        );
        match dir.timeline(Some("r1")) {
            TimelineState::Integrity(items, _) => assert_eq!(items[0].code, "symlink"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            dir.read(&["report.json"], "report.json", 1),
            Err(ArtifactFault::TooLarge("report.json"))
        );
        assert!(matches!(
            dir.report(100),
            ReportState::Fault(ArtifactFault::Malformed(..))
        ));
    }

    #[test]
    fn report_states_by_content() {
        let good: serde_json::Value = serde_json::from_slice(
            &std::fs::read(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../fixtures/runs/complete/report.json"
            ))
            .unwrap(),
        )
        .unwrap();
        let with = |f: &dyn Fn(&mut serde_json::Map<String, serde_json::Value>)| {
            let mut v = good.clone();
            f(v.as_object_mut().unwrap());
            serde_json::to_vec(&v).unwrap()
        };
        // The report's fields in declaration order, as an array: serde reads a struct
        // from one, so this is a whole report that is not an object.
        let parsed: RunReport = serde_json::from_value(good.clone()).unwrap();
        let fields = match serde_json::to_value(&parsed).unwrap() {
            serde_json::Value::Object(m) => m.into_iter().map(|(_, v)| v).collect(),
            other => panic!("{other}"),
        };
        let array = serde_json::to_vec(&serde_json::Value::Array(fields)).unwrap();
        assert!(serde_json::from_slice::<RunReport>(&array).is_ok());
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("whole", serde_json::to_vec(&good).unwrap(), "ok"),
            (
                "other schema",
                with(&|m| {
                    m.insert("schema".into(), "x/v9".into());
                }),
                "unknown_schema",
            ),
            (
                "other schema, bad body",
                with(&|m| {
                    m.insert("schema".into(), "x/v9".into());
                    m.remove("jobs");
                }),
                "unknown_schema",
            ),
            (
                "bad body",
                with(&|m| {
                    m.remove("jobs");
                }),
                "malformed",
            ),
            (
                "no schema",
                with(&|m| {
                    m.remove("schema");
                }),
                "malformed",
            ),
            (
                "schema not a string",
                with(&|m| {
                    m.insert("schema".into(), 1.into());
                }),
                "malformed",
            ),
            ("array", array, "malformed"),
            (
                "schema only",
                br#"{"schema":"x/v9"}"#.to_vec(),
                "unknown_schema",
            ),
            ("not json", b"{".to_vec(), "malformed"),
            ("empty", Vec::new(), "malformed"),
        ];
        let tmp = tempfile::tempdir().unwrap();
        let dir = RunDir::open_local(tmp.path());
        for (name, bytes, want) in cases {
            std::fs::write(tmp.path().join("report.json"), &bytes).unwrap();
            let got = match dir.report(MAX_REPORT_BYTES) {
                ReportState::Ok(_) => "ok",
                ReportState::Missing => "missing",
                ReportState::Fault(f) => f.code(),
            };
            assert_eq!(got, want, "{name}");
        }
    }
}
