//! The validating reader (docs/artifacts.md checks reused by the API): manifest
//! presence, schema, byte length and SHA-256 of the events file, strict JSON of every
//! line (unknown fields, negative and non-integer numbers rejected), line size, sequence
//! order and duplicates, clock order, clock domain and wall-time binding to the manifest
//! anchor, parent references and span matching.
//!
//! Span rules (docs/artifacts.md): a parent must be a span started earlier in
//! the same file (it may have ended by then: the sink checks "parent still open" when a
//! child starts, but a parent ended concurrently can precede the child's start); an
//! unmatched start is a span with unknown
//! end (never closed by the reader); an unmatched end or parent in a `partial` capture is
//! a visible gap; the same in a `complete` capture is an integrity error, and so is an
//! unknown-end span (a complete capture closed every span it kept).
//!
//! `inferscope-bench timeline verify RUN_DIR` prints [`VerifyReport`] (its `Display`) and
//! exits with [`VerifyReport::exit_code`]: **0** the timeline is intact (complete or
//! partial), **1** an integrity error, **2** unavailable or bad input (no run directory,
//! no manifest: capture off, a killed run, or a failed persistence).
//!
//! I/O is confined to [`verify`] / [`read_timeline`]; [`check_manifest`] and the event
//! checks behind `verify` are pure functions of the bytes read.

use std::collections::HashMap;
use std::path::Path;

use inferscope_fsio as fsio;

use sha2::{Digest, Sha256};

use super::accounting::{Quality, QualityReason};
use super::bounds::{Bounds, MAX_MANIFEST_BYTES};
use super::event::{SpanFamily, TimelineEvent, TimelineEventV1, validate_event};
use super::ids::is_valid_id;
use super::manifest::{
    EVENTS_REL_PATH, MANIFEST_FILE, SchemaVersion, TIMELINE_DIR, TimelineManifest,
};
pub use super::verify_report::{
    ErrorKind, Gap, IntegrityError, MAX_ITEMIZED, Unavailable, VerifyReport, VerifyStatus,
};

/// A fixed description of a JSON error, never quoting the input (a tampered artifact
/// could hold any text): the kind of fault and its column.
fn json_fault(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    let what = [
        "unknown field",
        "duplicate field",
        "missing field",
        "unknown variant",
        "invalid type",
        "invalid value",
        "invalid length",
        "trailing characters",
    ]
    .into_iter()
    .find(|p| msg.starts_with(p))
    .unwrap_or(match e.classify() {
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Eof => "unexpected end of input",
        serde_json::error::Category::Data => "invalid data",
        serde_json::error::Category::Io => "read error",
    });
    format!("{what} at column {}", e.column())
}

/// Reads `rel` below the run directory through the bounded reader ([`crate::fsio`]: no
/// symlink followed on any component, no FIFO or device, size checked before reading).
/// `Ok(None)` when missing; a file over `limit` is `Ok(Some)` of `limit + 1` bytes so
/// callers report their own too-large error.
fn read_bounded(root: &fsio::Root, rel: &[&str], limit: u64) -> Result<Option<Vec<u8>>, ErrorKind> {
    match root.read_optional(rel, limit) {
        Err(fsio::ReadError::TooLarge { .. }) => Ok(Some(vec![
            0;
            usize::try_from(limit + 1)
                .unwrap_or(usize::MAX)
        ])),
        Err(
            fsio::ReadError::Symlink
            | fsio::ReadError::NotRegular(_)
            | fsio::ReadError::NotDirectory,
        ) => Err(ErrorKind::NotRegularFile("file")),
        Err(e) => Err(ErrorKind::Unreadable("file", e.to_string())),
        Ok(b) => Ok(b),
    }
}

fn rename_what(k: ErrorKind, what: &'static str) -> ErrorKind {
    match k {
        ErrorKind::NotRegularFile(_) => ErrorKind::NotRegularFile(what),
        ErrorKind::Unreadable(_, e) => ErrorKind::Unreadable(what, e),
        other => other,
    }
}

/// Verifies the timeline of `run_dir` alone (reads `timeline/manifest.json` and the events
/// file it names; when `report.json` is there too, the manifest's `run_id` must be its).
/// A run directory without `report.json` is still verified here; [`verify_run`] (the
/// `timeline verify` command) reports it as incomplete. Never panics on hostile input;
/// reads at most 16 KiB of manifest and the manifest's byte budget (≤ 8 MiB) of events.
pub fn verify(run_dir: &Path) -> VerifyReport {
    verify_opened(run_dir, false)
}

fn verify_opened(run_dir: &Path, require_report: bool) -> VerifyReport {
    match fsio::Root::open(run_dir, true) {
        Ok(root) => verify_at(&root, run_dir, require_report),
        Err(_) => {
            let mut report = VerifyReport::new(run_dir);
            report.unavailable = Some(Unavailable::RunDirMissing);
            report
        }
    }
}

/// [`verify`] of a whole run directory: a run is complete only when `report.json`, its
/// last artifact (written atomically after everything else), is in place; without it the
/// timeline is [`Unavailable::Incomplete`] (exit 2), whatever the timeline holds.
pub fn verify_run(run_dir: &Path) -> VerifyReport {
    verify_opened(run_dir, true)
}

/// [`verify`] / [`verify_run`] below an opened run directory (`serve` opens it from its
/// runs root without following any component). `run_dir` is only displayed.
pub fn verify_at(root: &fsio::Root, run_dir: &Path, require_report: bool) -> VerifyReport {
    let mut report = VerifyReport::new(run_dir);
    let owner = match report_run_id(root) {
        Ok(o) => o,
        Err(k) => {
            report.error(None, None, k);
            return report;
        }
    };
    if require_report && matches!(owner, ReportId::Missing) {
        report.unavailable = Some(Unavailable::Incomplete);
        return report;
    }
    let manifest_bytes = match read_bounded(
        root,
        &[TIMELINE_DIR, MANIFEST_FILE],
        MAX_MANIFEST_BYTES.into(),
    ) {
        Ok(Some(b)) => b,
        Ok(None) => {
            report.unavailable = Some(Unavailable::NoManifest);
            return report;
        }
        Err(k) => {
            report.error(None, None, rename_what(k, "manifest"));
            return report;
        }
    };
    if manifest_bytes.len() > MAX_MANIFEST_BYTES as usize {
        report.error(
            None,
            None,
            ErrorKind::ManifestTooLarge {
                limit: MAX_MANIFEST_BYTES,
            },
        );
        return report;
    }
    let manifest: TimelineManifest = match serde_json::from_slice(&manifest_bytes) {
        Ok(m) => m,
        Err(e) => {
            report.error(None, None, ErrorKind::ManifestMalformed(json_fault(&e)));
            return report;
        }
    };
    let mut manifest_faults = check_manifest(&manifest);
    if let ReportId::Id(id) = &owner
        && *id != manifest.run_id
    {
        manifest_faults.push(ErrorKind::ManifestInvalid(
            "run_id differs from report.json's: the timeline belongs to another run",
        ));
    }
    let usable = !manifest_faults.iter().any(|k| {
        matches!(
            k,
            ErrorKind::UnknownSchema
                | ErrorKind::ManifestInvalid("events.path")
                | ErrorKind::ManifestInvalid("bounds")
        )
    });
    for k in manifest_faults {
        report.error(None, None, k);
    }
    report.manifest = Some(manifest.clone());
    if !usable {
        return report;
    }
    let limit = u64::from(manifest.bounds.max_total_bytes);
    let events_rel: Vec<&str> = EVENTS_REL_PATH.split('/').collect();
    let bytes = match read_bounded(root, &events_rel, limit) {
        Ok(Some(b)) => b,
        Ok(None) => {
            report.error(None, None, ErrorKind::EventsMissing);
            return report;
        }
        Err(k) => {
            report.error(None, None, rename_what(k, "events file"));
            return report;
        }
    };
    if bytes.len() as u64 > limit {
        report.error(None, None, ErrorKind::EventsTooLarge);
        return report;
    }
    if bytes.len() as u64 != manifest.events.byte_length {
        report.error(
            None,
            None,
            ErrorKind::LengthMismatch {
                manifest: manifest.events.byte_length,
                actual: bytes.len() as u64,
            },
        );
    }
    if hex::encode(Sha256::digest(&bytes)) != manifest.events.sha256 {
        report.error(None, None, ErrorKind::HashMismatch);
    }
    check_events(&manifest, &bytes, &mut report);
    report
}

/// What `report.json` says about ownership.
enum ReportId {
    /// No `report.json`: the run did not complete.
    Missing,
    /// Present, but without a readable `run_id` (no ownership check).
    Unknown,
    /// Its `run_id`.
    Id(String),
}

/// The `run_id` of the run's `report.json`, read through the bounded reader. A
/// `report.json` that is a symlink, a FIFO, a device or over its limit is an error.
fn report_run_id(root: &fsio::Root) -> Result<ReportId, ErrorKind> {
    #[derive(serde::Deserialize)]
    struct RunIdOnly {
        run_id: String,
    }
    match root.read_optional(&["report.json"], fsio::limits::REPORT_BYTES) {
        Ok(None) => Ok(ReportId::Missing),
        Ok(Some(bytes)) => Ok(serde_json::from_slice::<RunIdOnly>(&bytes)
            .map_or(ReportId::Unknown, |r| ReportId::Id(r.run_id))),
        Err(
            fsio::ReadError::Symlink
            | fsio::ReadError::NotRegular(_)
            | fsio::ReadError::NotDirectory,
        ) => Err(ErrorKind::NotRegularFile("report.json")),
        Err(e) => Err(ErrorKind::Unreadable("report.json", e.to_string())),
    }
}

/// A verified timeline: the manifest and every event, in `seq` order.
#[derive(Clone, Debug)]
pub struct VerifiedTimeline {
    /// The manifest.
    pub manifest: TimelineManifest,
    /// The events.
    pub events: Vec<TimelineEvent>,
    /// Visible gaps (partial captures).
    pub gaps: Vec<Gap>,
    /// Spans with unknown end.
    pub unknown_end_spans: Vec<u64>,
}

/// The lower-level reader for exports and the API: the events of `run_dir` only when
/// [`verify`] finds the timeline intact; otherwise the full report.
pub fn read_timeline(run_dir: &Path) -> Result<VerifiedTimeline, Box<VerifyReport>> {
    let report = verify(run_dir);
    if !report.ok() {
        return Err(Box::new(report));
    }
    match report.manifest {
        Some(manifest) => Ok(VerifiedTimeline {
            manifest,
            events: report.events,
            gaps: report.gaps,
            unknown_end_spans: report.unknown_end_spans,
        }),
        None => Err(Box::new(VerifyReport::new(run_dir))),
    }
}

/// Checks the manifest's own rules (pure): schema, id syntax, events path and hash
/// syntax, bounds, counts consistent with reasons and quality.
pub fn check_manifest(m: &TimelineManifest) -> Vec<ErrorKind> {
    let mut out = Vec::new();
    let mut bad = |cond: bool, rule: &'static str| {
        if cond {
            out.push(ErrorKind::ManifestInvalid(rule));
        }
    };
    bad(!is_valid_id(&m.run_id), "run_id syntax");
    bad(!is_valid_id(&m.timeline_id), "timeline_id syntax");
    bad(
        m.telemetry_session_id
            .as_deref()
            .is_some_and(|s| !is_valid_id(s)),
        "telemetry_session_id syntax",
    );
    bad(!is_valid_id(&m.clock_domain_id), "clock_domain_id syntax");
    bad(m.events.path != EVENTS_REL_PATH, "events.path");
    bad(
        m.events.sha256.len() != 64
            || !m
                .events
                .sha256
                .bytes()
                .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(&c)),
        "events.sha256 syntax",
    );
    bad(m.bounds.validate().is_err(), "bounds");
    bad(
        m.events.byte_length > u64::from(m.bounds.max_total_bytes),
        "events.byte_length over max_total_bytes",
    );
    bad(
        m.event_count > u64::from(m.bounds.max_events),
        "event_count over max_events",
    );
    bad(
        m.start_utc
            != inferscope_clock::unix_ns_to_rfc3339(
                m.reference_instant_unix_ns
                    .saturating_add(m.start_elapsed_ns),
            ),
        "start_utc is not anchor + start_elapsed_ns",
    );
    bad(
        m.end_elapsed_ns < m.start_elapsed_ns,
        "end_elapsed_ns before start",
    );
    bad(
        m.dropped_count != m.dropped.total(),
        "dropped_count != sum of dropped",
    );
    bad(
        m.rejected_count != m.rejected.total(),
        "rejected_count != sum of rejected",
    );
    let mut seen = Vec::new();
    for r in &m.quality_reasons {
        if seen.contains(r) {
            bad(true, "duplicate quality reason");
        }
        seen.push(*r);
    }
    let has = |r| m.quality_reasons.contains(&r);
    bad(
        (m.dropped.capacity > 0) != has(QualityReason::CapacityExceeded)
            || (m.dropped.byte_budget > 0) != has(QualityReason::ByteBudgetExceeded)
            || (m.dropped.event_too_large > 0) != has(QualityReason::EventTooLarge)
            || (m.dropped.slot_contention + m.dropped.unwritten > 0)
                != has(QualityReason::EventsLost)
            || (m.rejected_count > 0) != has(QualityReason::EventsRejected)
            || (m.unclosed_span_count > 0) != has(QualityReason::UnclosedSpans),
        "quality_reasons inconsistent with counts",
    );
    match m.quality {
        Quality::Complete => bad(!m.quality_reasons.is_empty(), "complete with reasons"),
        Quality::Partial => bad(m.quality_reasons.is_empty(), "partial without reasons"),
        Quality::Unavailable => bad(true, "a manifest cannot say unavailable"),
    }
    if SchemaVersion::of(&m.schema).is_none() {
        out.insert(0, ErrorKind::UnknownSchema);
    }
    out
}

struct SpanState {
    family: SpanFamily,
    name: String,
    parent: Option<u64>,
    ended: bool,
}

/// The lines of `events.jsonl`, with an error for a missing final newline and for a
/// line count other than the manifest's event count.
fn event_lines<'b>(
    manifest: &TimelineManifest,
    bytes: &'b [u8],
    report: &mut VerifyReport,
) -> Vec<&'b [u8]> {
    if !bytes.is_empty() && bytes.last() != Some(&b'\n') {
        report.error(None, None, ErrorKind::MissingFinalNewline);
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let lines: Vec<&[u8]> = if bytes.is_empty() {
        Vec::new()
    } else {
        body.split(|&b| b == b'\n').collect()
    };
    if lines.len() as u64 != manifest.event_count {
        report.error(
            None,
            None,
            ErrorKind::EventCountMismatch {
                manifest: manifest.event_count,
                actual: lines.len() as u64,
            },
        );
    }
    lines
}

/// Pairs event `e` (file line `ln`) with its span: a start opens it (once; its parent
/// known), an end closes it (once, with the start's family, name and parent). In a complete
/// capture a missing start or parent is an error; in a partial one it is a gap.
fn check_span(
    e: &TimelineEvent,
    ln: Option<u64>,
    complete: bool,
    spans: &mut HashMap<u64, SpanState>,
    report: &mut VerifyReport,
) {
    let seq = Some(e.seq);
    let family = e.kind.family();
    if e.kind.is_start() {
        if spans.contains_key(&e.span_id) {
            report.error(
                ln,
                seq,
                ErrorKind::DuplicateSpanStart { span_id: e.span_id },
            );
        } else {
            if let Some(p) = e.parent_span_id {
                match spans.get(&p) {
                    None if complete => report.error(
                        ln,
                        seq,
                        ErrorKind::UnknownParent {
                            span_id: e.span_id,
                            parent: p,
                        },
                    ),
                    None => report.gap(Gap::MissingParent {
                        span_id: e.span_id,
                        parent: p,
                    }),
                    Some(_) => {}
                }
            }
            spans.insert(
                e.span_id,
                SpanState {
                    family,
                    name: e.name.clone(),
                    parent: e.parent_span_id,
                    ended: false,
                },
            );
        }
    } else {
        match spans.get_mut(&e.span_id) {
            None if complete => {
                report.error(ln, seq, ErrorKind::UnmatchedEnd { span_id: e.span_id })
            }
            None => report.gap(Gap::MissingStart {
                span_id: e.span_id,
                seq: e.seq,
            }),
            Some(s) if s.ended => {
                report.error(ln, seq, ErrorKind::DuplicateEnd { span_id: e.span_id })
            }
            Some(s) if s.family != family || s.name != e.name || s.parent != e.parent_span_id => {
                report.error(ln, seq, ErrorKind::EndMismatch { span_id: e.span_id })
            }
            Some(s) => s.ended = true,
        }
    }
}

/// The spans left open at the end of the file: errors in a complete capture, their count
/// against the manifest's, and the report's unknown-end spans in id order.
fn check_unclosed(
    manifest: &TimelineManifest,
    complete: bool,
    spans: &HashMap<u64, SpanState>,
    report: &mut VerifyReport,
) {
    let mut open: Vec<u64> = spans
        .iter()
        .filter(|(_, s)| !s.ended)
        .map(|(id, _)| *id)
        .collect();
    open.sort_unstable();
    if complete {
        for &span_id in &open {
            report.error(
                None,
                None,
                ErrorKind::UnclosedSpanInCompleteCapture { span_id },
            );
        }
    }
    if open.len() as u64 != manifest.unclosed_span_count {
        report.error(
            None,
            None,
            ErrorKind::UnclosedCountMismatch {
                manifest: manifest.unclosed_span_count,
                actual: open.len() as u64,
            },
        );
    }
    report.unknown_end_spans = open;
}

/// Checks the bytes of `events.jsonl` against `manifest` (pure), filling `report`'s
/// events, errors, gaps and unknown-end spans.
pub(crate) fn check_events(manifest: &TimelineManifest, bytes: &[u8], report: &mut VerifyReport) {
    let complete = manifest.quality == Quality::Complete;
    // `verify` reads no events under an unknown schema; a direct caller gets v2's rules.
    let version = SchemaVersion::of(&manifest.schema).unwrap_or(SchemaVersion::V2);
    let bounds: Bounds = manifest.bounds;
    if manifest.dropped_count > 0 {
        report.gap(Gap::DroppedEvents {
            count: manifest.dropped_count,
        });
    }
    if manifest.rejected_count > 0 {
        report.gap(Gap::RejectedEvents {
            count: manifest.rejected_count,
        });
    }
    let lines = event_lines(manifest, bytes, report);
    let mut spans: HashMap<u64, SpanState> = HashMap::new();
    let mut prev_seq = 0u64;
    let mut prev_elapsed = 0u64;
    for (i, line) in lines.iter().enumerate() {
        let ln = Some(i as u64 + 1);
        if line.len() > bounds.max_event_bytes as usize {
            report.error(
                ln,
                None,
                ErrorKind::LineTooLong {
                    bytes: line.len(),
                    limit: bounds.max_event_bytes,
                },
            );
            continue;
        }
        let parsed = match version {
            SchemaVersion::V1 => serde_json::from_slice::<TimelineEventV1>(line).map(Into::into),
            SchemaVersion::V2 => serde_json::from_slice::<TimelineEvent>(line),
        };
        let e: TimelineEvent = match parsed {
            Ok(e) => e,
            Err(err) => {
                report.error(ln, None, ErrorKind::LineMalformed(json_fault(&err)));
                continue;
            }
        };
        let seq = Some(e.seq);
        if let Err(fault) = validate_event(&e) {
            report.error(ln, seq, ErrorKind::EventInvalid(fault));
            continue;
        }
        if e.seq == prev_seq {
            report.error(ln, seq, ErrorKind::DuplicateSeq);
            continue;
        }
        if e.seq < prev_seq {
            report.error(ln, seq, ErrorKind::SeqOutOfOrder { previous: prev_seq });
            continue;
        }
        if e.seq > prev_seq + 1 {
            if complete {
                report.error(ln, seq, ErrorKind::SeqGap { previous: prev_seq });
            } else {
                report.gap(Gap::SeqGap {
                    previous: prev_seq,
                    next: e.seq,
                });
            }
        }
        prev_seq = e.seq;
        if e.elapsed_ns < prev_elapsed {
            report.error(
                ln,
                seq,
                ErrorKind::ClockRegression {
                    previous_ns: prev_elapsed,
                    elapsed_ns: e.elapsed_ns,
                },
            );
        }
        prev_elapsed = prev_elapsed.max(e.elapsed_ns);
        if e.clock_domain_id != manifest.clock_domain_id {
            report.error(ln, seq, ErrorKind::ClockDomainMismatch);
        }
        let wall = inferscope_clock::unix_ns_to_rfc3339(
            manifest
                .reference_instant_unix_ns
                .saturating_add(e.elapsed_ns),
        );
        if e.wall_time_utc != wall {
            report.error(ln, seq, ErrorKind::WallTimeMismatch);
        }
        check_span(&e, ln, complete, &mut spans, report);
        report.events.push(e);
    }
    check_unclosed(manifest, complete, &spans, report);
}
