//! The manifest contract, `timeline/manifest.json`
//! (docs/artifacts.md "timeline/manifest.json and timeline/events.jsonl": schema, run and
//! timeline ids, optional telemetry session id, start UTC, clock-domain id, event count,
//! dropped count, capture quality, bounded reason codes, and the events file's relative
//! path, byte length and SHA-256), plus the
//! capture bounds and the measured window's `/proc/self/io` evidence (docs/artifacts.md).

use serde::{Deserialize, Serialize};

use super::accounting::{DroppedCounts, Quality, QualityReason, RejectedCounts};
use super::bounds::Bounds;

/// The schema id the writer puts in the manifest (`schema` field), naming the contract
/// of manifest and events. v2 added `completion_tokens_estimate` to every event line.
pub const SCHEMA: &str = "inferscope-bench.timeline/v2";
/// The previous schema id, still read: its event lines have no
/// `completion_tokens_estimate` field (a line that has it is malformed).
pub const SCHEMA_V1: &str = "inferscope-bench.timeline/v1";

/// A timeline schema version the reader accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaVersion {
    /// [`SCHEMA_V1`]: no `completion_tokens_estimate` on event lines.
    V1,
    /// [`SCHEMA`]: `completion_tokens_estimate` allowed (end events only, never with
    /// `completion_tokens`).
    V2,
}

impl SchemaVersion {
    /// The version named by a manifest's `schema`, or `None` for an unknown schema.
    pub fn of(schema: &str) -> Option<Self> {
        match schema {
            SCHEMA_V1 => Some(Self::V1),
            SCHEMA => Some(Self::V2),
            _ => None,
        }
    }
}
/// The timeline directory under a run directory.
pub const TIMELINE_DIR: &str = "timeline";
/// The events file name inside [`TIMELINE_DIR`].
pub const EVENTS_FILE: &str = "events.jsonl";
/// The manifest file name inside [`TIMELINE_DIR`].
pub const MANIFEST_FILE: &str = "manifest.json";
/// The events file path relative to the run directory, as recorded in the manifest.
pub const EVENTS_REL_PATH: &str = "timeline/events.jsonl";
/// Where the disk-write evidence comes from.
pub const IO_SOURCE: &str = "/proc/self/io";

/// The manifest (closed: unknown fields are rejected on read). Times in ns; sizes in
/// bytes; counts are counts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineManifest {
    /// [`SCHEMA`] when written; [`SCHEMA_V1`] is also read.
    pub schema: String,
    /// The run's id.
    pub run_id: String,
    /// This timeline's id; every event line is bound to it by being listed (hash) here.
    pub timeline_id: String,
    /// Optional explicit join to a telemetry session (docs/artifacts.md; never guessed).
    pub telemetry_session_id: Option<String>,
    /// Unix ns of the run's reference instant (step-attribution anchor (docs/measurement.md)).
    pub reference_instant_unix_ns: u64,
    /// The clock domain of every event's `elapsed_ns`.
    pub clock_domain_id: String,
    /// RFC 3339 UTC of the capture start (sink creation).
    pub start_utc: String,
    /// `elapsed_ns` of the capture start.
    pub start_elapsed_ns: u64,
    /// `elapsed_ns` of finalization (sink stop).
    pub end_elapsed_ns: u64,
    /// Lines in the events file.
    pub event_count: u64,
    /// Sum of `dropped`.
    pub dropped_count: u64,
    /// Valid events not kept, by reason.
    pub dropped: DroppedCounts,
    /// Sum of `rejected`.
    pub rejected_count: u64,
    /// Invalid events refused, by reason.
    pub rejected: RejectedCounts,
    /// Spans with a start and no end in the file (unknown end).
    pub unclosed_span_count: u64,
    /// Capture quality.
    pub quality: Quality,
    /// Reasons for `partial` (empty iff `complete`).
    pub quality_reasons: Vec<QualityReason>,
    /// The events file.
    pub events: EventsFileRef,
    /// The bounds the capture ran under.
    pub bounds: Bounds,
    /// Disk-write evidence around the measured window.
    pub measured_window_io: WindowIo,
}

/// The events file reference: relative path, exact byte length, SHA-256 (lowercase hex).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EventsFileRef {
    /// Always [`EVENTS_REL_PATH`].
    pub path: String,
    /// Bytes.
    pub byte_length: u64,
    /// 64 lowercase hex digits.
    pub sha256: String,
}

/// One reading of `/proc/self/io` (Linux task I/O accounting; all byte counts are bytes,
/// `syscr`/`syscw` are syscall counts). `write_bytes` counts bytes sent to the storage
/// layer; `wchar` counts bytes passed to `write(2)`-like calls, terminals and pipes
/// included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoCounters {
    /// Bytes read via read-like syscalls.
    pub rchar: u64,
    /// Bytes written via write-like syscalls (any file, tty, pipe).
    pub wchar: u64,
    /// Read syscalls (count).
    pub syscr: u64,
    /// Write syscalls (count).
    pub syscw: u64,
    /// Bytes fetched from the storage layer.
    pub read_bytes: u64,
    /// Bytes sent to the storage layer.
    pub write_bytes: u64,
    /// Bytes whose writeback was cancelled (truncation).
    pub cancelled_write_bytes: u64,
}

impl IoCounters {
    /// Parses the text of `/proc/<pid>/io` (pure). `None` unless all seven keys are
    /// present with integer values.
    pub fn parse(text: &str) -> Option<Self> {
        let mut v = [None::<u64>; 7];
        const KEYS: [&str; 7] = [
            "rchar",
            "wchar",
            "syscr",
            "syscw",
            "read_bytes",
            "write_bytes",
            "cancelled_write_bytes",
        ];
        for line in text.lines() {
            let Some((k, val)) = line.split_once(':') else {
                continue;
            };
            if let Some(i) = KEYS.iter().position(|key| *key == k.trim()) {
                v[i] = Some(val.trim().parse().ok()?);
            }
        }
        Some(Self {
            rchar: v[0]?,
            wchar: v[1]?,
            syscr: v[2]?,
            syscw: v[3]?,
            read_bytes: v[4]?,
            write_bytes: v[5]?,
            cancelled_write_bytes: v[6]?,
        })
    }
}

/// Reads `/proc/self/io` now. `None` where it does not exist or cannot be read (no task
/// I/O accounting in the kernel, another OS): unavailable, never zeros.
///
/// The lead reads it right before and right after the measured window and passes both
/// to [`super::TimelineSink::persist`].
pub fn proc_self_io() -> Option<IoCounters> {
    std::fs::read_to_string(IO_SOURCE)
        .ok()
        .and_then(|t| IoCounters::parse(&t))
}

/// `/proc/self/io` around the measured window, as recorded in the manifest. The scope is
/// the whole runner process: the deltas are an upper bound on what the capture wrote
/// during the window (by construction the capture itself writes nothing then).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowIo {
    /// Always [`IO_SOURCE`].
    pub source: String,
    /// Always `process`.
    pub scope: String,
    /// Reading at window start, or `null` when unavailable.
    pub before: Option<IoCounters>,
    /// Reading at window end, or `null` when unavailable.
    pub after: Option<IoCounters>,
    /// `after.write_bytes - before.write_bytes` (bytes), `null` when either reading is
    /// missing or the counter went backwards.
    pub write_bytes_delta: Option<u64>,
    /// `after.wchar - before.wchar` (bytes), same rule.
    pub wchar_delta: Option<u64>,
}

impl WindowIo {
    /// Builds the record from the two readings (pure).
    pub fn new(before: Option<IoCounters>, after: Option<IoCounters>) -> Self {
        let delta = |f: fn(&IoCounters) -> u64| match (&before, &after) {
            (Some(b), Some(a)) => f(a).checked_sub(f(b)),
            _ => None,
        };
        Self {
            source: IO_SOURCE.to_string(),
            scope: "process".to_string(),
            write_bytes_delta: delta(|c| c.write_bytes),
            wchar_delta: delta(|c| c.wchar),
            before,
            after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "rchar: 323934931\nwchar: 323929600\nsyscr: 632687\nsyscw: 632675\n\
read_bytes: 0\nwrite_bytes: 323932160\ncancelled_write_bytes: 0\n";

    #[test]
    fn parses_proc_io() {
        let c = IoCounters::parse(SAMPLE).unwrap();
        assert_eq!(c.wchar, 323_929_600);
        assert_eq!(c.write_bytes, 323_932_160);
        assert_eq!(c.syscw, 632_675);
        assert_eq!(IoCounters::parse("rchar: 1\n"), None);
        assert_eq!(IoCounters::parse(&SAMPLE.replace("0\n", "-1\n")), None);
    }

    #[test]
    fn window_deltas_null_when_missing_or_backwards() {
        let a = IoCounters::parse(SAMPLE).unwrap();
        let mut b = a;
        b.write_bytes += 4096;
        b.wchar += 10;
        let w = WindowIo::new(Some(a), Some(b));
        assert_eq!(w.write_bytes_delta, Some(4096));
        assert_eq!(w.wchar_delta, Some(10));
        assert_eq!(WindowIo::new(None, Some(b)).write_bytes_delta, None);
        assert_eq!(WindowIo::new(Some(b), Some(a)).write_bytes_delta, None);
        let json = serde_json::to_value(WindowIo::new(None, None)).unwrap();
        assert!(json["before"].is_null() && json["write_bytes_delta"].is_null());
    }

    #[test]
    fn this_process_has_proc_io_or_none() {
        // Present on Linux with task I/O accounting; never a zeroed stand-in otherwise.
        if let Some(c) = proc_self_io() {
            assert!(c.rchar > 0);
        }
    }
}
