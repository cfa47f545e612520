//! Persistence of a finalized capture, after the measured window only
//! (docs/artifacts.md "Timeline capture rules"): `timeline/events.jsonl` then
//! `timeline/manifest.json`, each written to a temp file in the same directory, fsynced, renamed
//! into place, and the directory fsynced. The manifest is written last and never overwritten, so a
//! run killed before or during persistence leaves no manifest (the reader then says `unavailable`).
//!
//! A persistence failure is returned as a [`PersistError`]; the caller reports it as a
//! capture diagnostic and must not change job results or the exit status (docs/artifacts.md).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::accounting::{Quality, QualityReason};
use super::ids::is_valid_id;
use super::manifest::{
    EVENTS_FILE, EVENTS_REL_PATH, EventsFileRef, IoCounters, MANIFEST_FILE, SCHEMA, TIMELINE_DIR,
    TimelineManifest, WindowIo,
};
use super::record::{WALL_TIME_LEN, emit};
use super::sink::TimelineSink;

/// What the lead adds to the manifest at persistence.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManifestInfo {
    /// [`super::proc_self_io`] read right before the measured window.
    pub io_before: Option<IoCounters>,
    /// [`super::proc_self_io`] read right after the measured window.
    pub io_after: Option<IoCounters>,
    /// Optional explicit telemetry session join (`[A-Za-z0-9_.:-]{1,128}`).
    pub telemetry_session_id: Option<String>,
}

/// What was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersistReport {
    /// Absolute or run-dir-based path of `timeline/events.jsonl`.
    pub events_path: PathBuf,
    /// Path of `timeline/manifest.json`.
    pub manifest_path: PathBuf,
    /// Lines written.
    pub event_count: u64,
    /// Bytes of the events file.
    pub byte_length: u64,
    /// SHA-256 of the events file, lowercase hex.
    pub sha256: String,
    /// Bytes of the manifest file.
    pub manifest_bytes: u64,
    /// Capture quality recorded.
    pub quality: Quality,
    /// Reasons recorded.
    pub quality_reasons: Vec<QualityReason>,
}

/// Why persistence failed (a capture diagnostic, never a job failure). Messages name
/// paths and operations, never event content.
#[derive(Debug, thiserror::Error)]
pub enum PersistError {
    /// `persist` before `finalize`.
    #[error("timeline sink not finalized; call finalize() after the measured window")]
    NotFinalized,
    /// A manifest already exists there: historical evidence is never rewritten.
    #[error("timeline manifest already exists at {0}; refusing to overwrite evidence")]
    AlreadyPersisted(PathBuf),
    /// The telemetry session id fails the id syntax.
    #[error("telemetry_session_id fails the id syntax [A-Za-z0-9_.:-]{{1,128}}")]
    InvalidSessionId,
    /// The manifest would exceed `max_manifest_bytes`.
    #[error("timeline manifest is {bytes} bytes, over the {limit}-byte bound")]
    ManifestTooLarge {
        /// Bytes.
        bytes: usize,
        /// The bound (bytes).
        limit: u32,
    },
    /// A kept event would break its bound when written (impossible by construction;
    /// reported rather than written).
    #[error("internal: serialized event breaks the capture bounds ({0})")]
    BoundBroken(&'static str),
    /// A filesystem operation failed.
    #[error("timeline persistence: {op} {path}: {source}")]
    Io {
        /// The operation, e.g. `create directory`, `fsync`, `rename into`.
        op: &'static str,
        /// The path it was applied to.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

fn io_err(op: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> PersistError {
    let path = path.to_path_buf();
    move |source| PersistError::Io { op, path, source }
}

impl TimelineSink {
    /// Writes the finalized capture under `run_dir/timeline/` (see the module doc).
    ///
    /// Errors: [`PersistError`]; on error no manifest exists (an events file may, which
    /// without a manifest is not evidence and reads as `unavailable`).
    pub fn persist(
        &self,
        run_dir: &Path,
        info: &ManifestInfo,
    ) -> Result<PersistReport, PersistError> {
        if !self.is_stopped() {
            return Err(PersistError::NotFinalized);
        }
        if let Some(s) = &info.telemetry_session_id
            && !is_valid_id(s)
        {
            return Err(PersistError::InvalidSessionId);
        }
        let inner = &*self.inner;
        let bounds = inner.bounds;
        let summary = self.summary();
        let records = self.records();

        let anchor = inner.clock.reference_instant_unix_ns();
        let mut events = Vec::with_capacity(summary.serialized_bytes as usize);
        for rec in &records {
            let wall = inferscope_clock::unix_ns_to_rfc3339(anchor.saturating_add(rec.elapsed_ns));
            if wall.len() != WALL_TIME_LEN {
                return Err(PersistError::BoundBroken("wall_time_utc length"));
            }
            let start = events.len();
            emit(&mut events, rec, &inner.tools, &wall, &inner.domain);
            if events.len() - start > bounds.max_event_bytes as usize {
                return Err(PersistError::BoundBroken("max_event_bytes"));
            }
            events.push(b'\n');
        }
        if events.len() > bounds.max_total_bytes as usize {
            return Err(PersistError::BoundBroken("max_total_bytes"));
        }
        let sha256 = hex::encode(Sha256::digest(&events));

        let dir = run_dir.join(TIMELINE_DIR);
        std::fs::create_dir_all(&dir).map_err(io_err("create directory", &dir))?;
        let manifest_path = dir.join(MANIFEST_FILE);
        if std::fs::symlink_metadata(&manifest_path).is_ok() {
            return Err(PersistError::AlreadyPersisted(manifest_path));
        }

        let events_path = write_atomic(&dir, EVENTS_FILE, &events, false)?;

        let end_elapsed_ns = self.end_elapsed_ns().unwrap_or(inner.start_elapsed_ns);
        let manifest = TimelineManifest {
            schema: SCHEMA.to_string(),
            run_id: inner.run_id.to_string(),
            timeline_id: inner.timeline_id.to_string(),
            telemetry_session_id: info.telemetry_session_id.clone(),
            reference_instant_unix_ns: anchor,
            clock_domain_id: inner.domain.to_string(),
            start_utc: inferscope_clock::unix_ns_to_rfc3339(
                anchor.saturating_add(inner.start_elapsed_ns),
            ),
            start_elapsed_ns: inner.start_elapsed_ns,
            end_elapsed_ns,
            event_count: records.len() as u64,
            dropped_count: summary.dropped.total(),
            dropped: summary.dropped,
            rejected_count: summary.rejected.total(),
            rejected: summary.rejected,
            unclosed_span_count: summary.unclosed_span_count,
            quality: summary.quality,
            quality_reasons: summary.quality_reasons.clone(),
            events: EventsFileRef {
                path: EVENTS_REL_PATH.to_string(),
                byte_length: events.len() as u64,
                sha256: sha256.clone(),
            },
            bounds,
            measured_window_io: WindowIo::new(info.io_before, info.io_after),
        };
        let mut manifest_bytes =
            serde_json::to_vec_pretty(&manifest).map_err(|e| PersistError::Io {
                op: "serialize manifest",
                path: manifest_path.clone(),
                source: e.into(),
            })?;
        manifest_bytes.push(b'\n');
        if manifest_bytes.len() > bounds.max_manifest_bytes as usize {
            return Err(PersistError::ManifestTooLarge {
                bytes: manifest_bytes.len(),
                limit: bounds.max_manifest_bytes,
            });
        }
        let manifest_path = write_atomic(&dir, MANIFEST_FILE, &manifest_bytes, true)?;
        Ok(PersistReport {
            events_path,
            manifest_path,
            event_count: manifest.event_count,
            byte_length: manifest.events.byte_length,
            sha256,
            manifest_bytes: manifest_bytes.len() as u64,
            quality: manifest.quality,
            quality_reasons: manifest.quality_reasons,
        })
    }
}

/// Temp file in `dir`, write, fsync, rename to `dir/name` (no-clobber when asked), fsync
/// `dir`.
fn write_atomic(
    dir: &Path,
    name: &str,
    bytes: &[u8],
    noclobber: bool,
) -> Result<PathBuf, PersistError> {
    let dest = dir.join(name);
    let mut tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(&format!(".{name}"))
        .tempfile_in(dir)
        .map_err(io_err("create temp file in", dir))?;
    tmp.write_all(bytes).map_err(io_err("write", tmp.path()))?;
    tmp.as_file()
        .sync_all()
        .map_err(io_err("fsync", tmp.path()))?;
    let done = if noclobber {
        tmp.persist_noclobber(&dest)
    } else {
        tmp.persist(&dest)
    };
    done.map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            PersistError::AlreadyPersisted(dest.clone())
        } else {
            PersistError::Io {
                op: "rename into",
                path: dest.clone(),
                source: e.error,
            }
        }
    })?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io_err("fsync directory", dir))?;
    Ok(dest)
}
