//! NEGATIVE CONTROLS for the overhead gate (docs/measurement.md "Runner overhead (`overhead`)":
//! a blocking or disk-writing sink must fail the gate; docs/ci.md).
//!
//! These sinks are deliberately bad. They exist only so `inferscope-bench overhead
//! --negative-control blocking-sink|disk-write-sink` can prove the overhead gate detects a
//! capture that blocks the workload or writes to disk during the measured window. Never
//! use them for a real capture. Each wraps a real [`TimelineSink`], so the run still
//! produces a normal timeline after the window.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use super::sink::{Sink, SinkKind, TimelineSink};
use super::span::{SpanContext, SpanEnd, SpanId, SpanName};

/// Default stall of [`BlockingSink`] per insert: 2 ms.
pub const BLOCKING_SINK_STALL: Duration = Duration::from_millis(2);

/// NEGATIVE CONTROL: sleeps `stall` (default 2 ms) on the calling thread before every
/// insert, then inserts into the real sink. A driver awaiting the request path through
/// this sink is held up on every span boundary, as a sink blocked on a lock would be.
#[derive(Clone, Debug)]
pub struct BlockingSink {
    inner: TimelineSink,
    stall: Duration,
}

impl BlockingSink {
    /// Wraps `inner`, stalling each insert for `stall`.
    pub fn new(inner: TimelineSink, stall: Duration) -> Self {
        Self { inner, stall }
    }
}

impl Sink for BlockingSink {
    fn span_start(
        &self,
        name: SpanName<'_>,
        parent: Option<SpanId>,
        ctx: SpanContext<'_>,
    ) -> Option<SpanId> {
        std::thread::sleep(self.stall);
        self.inner.span_start(name, parent, ctx)
    }
    fn span_end(&self, span: SpanId, end: SpanEnd<'_>) -> bool {
        std::thread::sleep(self.stall);
        self.inner.span_end(span, end)
    }
    fn timeline(&self) -> &TimelineSink {
        &self.inner
    }
    fn kind(&self) -> SinkKind {
        SinkKind::BlockingControl
    }
}

/// NEGATIVE CONTROL: inserts into the real sink and then, synchronously on the calling
/// thread, appends the kept event's JSON line to a file and `fsync`s it (under a mutex
/// shared by all producers). This is exactly the "timeline disk writes during the
/// measured workload" that docs/artifacts.md "Timeline capture rules" forbids; the overhead
/// gate must see the bytes in `/proc/self/io` and the latency it adds.
#[derive(Debug)]
pub struct DiskWriteSink {
    inner: TimelineSink,
    file: Mutex<File>,
    path: PathBuf,
}

impl DiskWriteSink {
    /// Wraps `inner`, appending every kept event to `path` (created or truncated).
    ///
    /// Errors: the file cannot be created.
    pub fn create(inner: TimelineSink, path: &Path) -> std::io::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(path)?;
        Ok(Self {
            inner,
            file: Mutex::new(file),
            path: path.to_path_buf(),
        })
    }

    /// The file this control writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_through(&self, line: &[u8]) {
        // A poisoned lock or a failing write only loses the control's side file; the
        // real capture is unaffected.
        if let Ok(mut f) = self.file.lock() {
            let _ = f.write_all(line).and_then(|()| f.sync_data());
        }
    }
}

impl Sink for DiskWriteSink {
    fn span_start(
        &self,
        name: SpanName<'_>,
        parent: Option<SpanId>,
        ctx: SpanContext<'_>,
    ) -> Option<SpanId> {
        let (id, rec) = self.inner.start_record(name, parent, ctx)?;
        self.write_through(&self.inner.render_line(&rec));
        Some(id)
    }
    fn span_end(&self, span: SpanId, end: SpanEnd<'_>) -> bool {
        match self.inner.end_record(span, end) {
            Some(rec) => {
                self.write_through(&self.inner.render_line(&rec));
                true
            }
            None => false,
        }
    }
    fn timeline(&self) -> &TimelineSink {
        &self.inner
    }
    fn kind(&self) -> SinkKind {
        SinkKind::DiskWriteControl
    }
}
