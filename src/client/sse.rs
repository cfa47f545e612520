//! SSE framing with per-event arrival times, over `eventsource-stream`.
//!
//! Pipeline (issue 2 item 3; rust-conventions §4.2–4.3; cases C03, C04, C05, C30):
//!
//! ```text
//! bytes_stream()            Result<Bytes>          (network reads)
//!   .map(stamp)             Result<(arrival_ns, Bytes)>   <- clock read as each read completes,
//!                                                           before any parsing
//! SseFrames                 Result<Bytes>   one item per complete event (see EventSplitter)
//! eventsource_stream::EventStream            field parsing, multi-line data join, comments,
//!                                            `event:`, BOM, UTF-8
//! SseEventStream            Result<SseEvent>  each event stamped with the arrival of the
//!                                              read that completed it
//! ```
//!
//! **Why the [`EventSplitter`] sits in front of eventsource-stream 0.2.3.** Fed raw reads,
//! that crate gets two things wrong for this project:
//! 1. a bare CR at the very end of a read is held as "maybe the first half of a CRLF", so an
//!    event terminated by `\r\r` (C05 R3) is only dispatched when the NEXT read arrives —
//!    its arrival time would be the next read's;
//! 2. it re-parses its whole buffer from the start on every read and copies the remainder
//!    after every line, which is quadratic for a multi-MiB event (C30) and for many events
//!    coalesced in one read.
//!
//! The splitter therefore normalizes line endings (CRLF, bare CR → LF, a CR/LF pair split
//! across reads is one line end — it emits the LF at the CR and drops a following LF), and
//! hands eventsource-stream exactly one complete event (ending in its blank line) per item.
//! eventsource-stream still does all field parsing. The splitter also enforces
//! `max_event_bytes` on the bytes buffered since the last event boundary, so memory stays
//! below the cap plus one read, and validates UTF-8 per event (eventsource-stream would
//! otherwise buffer without bound behind an invalid byte).
//!
//! 3. it panics (slicing `&s[1..]` inside a 3-byte char) when the stream starts with a
//!    UTF-8 BOM; the splitter drops the BOM itself and the framer feeds a leading blank
//!    line (a no-op at stream start) so the crate never sees one.
//!
//! **Liveness.** eventsource-stream drops comment lines (`: ping`), so the idle timer
//! cannot see them as events. Instead every network read (any bytes) is recorded in
//! [`ReadStamps`], and the client's idle timer is measured from the last read (C03).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use eventsource_stream::{EventStream, EventStreamError, Eventsource};
use futures_util::{FutureExt, Stream, StreamExt};

use super::accumulate::{Flow, RequestHead, StreamAccumulator};
use super::record::{FailureCode, RequestRecord};

/// Default cap on one SSE event (bytes buffered since the last event boundary): 16 MiB
/// (C30: "default ≥ 16 MiB").
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Why framing stopped (before eventsource-stream parsing).
#[derive(Debug)]
pub enum FrameError<E> {
    /// More than `limit` bytes were buffered for one event (`buffered` is what was seen).
    TooLarge {
        /// Bytes of the offending event seen so far.
        buffered: usize,
        /// The configured `max_event_bytes`.
        limit: usize,
    },
    /// An event's bytes were not valid UTF-8.
    InvalidUtf8,
    /// The underlying byte stream failed.
    Transport(E),
}

impl<E: std::fmt::Display> std::fmt::Display for FrameError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLarge { buffered, limit } => {
                write!(
                    f,
                    "SSE event exceeds max_event_bytes ({buffered} > {limit} bytes)"
                )
            }
            FrameError::InvalidUtf8 => f.write_str("SSE event is not valid UTF-8"),
            FrameError::Transport(e) => write!(f, "transport error: {e}"),
        }
    }
}

/// Pure splitter of a byte stream into complete SSE events with normalized line endings.
///
/// Each item pushed to the output is one event's bytes up to and including its
/// terminating blank line, with every line ending as LF (an event that dispatches nothing —
/// comments only, `event:` without data, an extra blank line — is still an item). Bytes of
/// the incomplete trailing event stay buffered; a stream that ends mid-event never
/// dispatches it (SSE spec).
#[derive(Debug)]
pub struct EventSplitter {
    max_event_bytes: usize,
    pending: BytesMut,
    skip_lf: bool,
    prev_lf: bool,
    bom_checked: bool,
}

impl EventSplitter {
    /// A splitter that fails once more than `max_event_bytes` bytes are buffered for one
    /// event.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            pending: BytesMut::new(),
            skip_lf: false,
            // Stream start counts as a line start: a leading blank line is a boundary.
            prev_lf: true,
            bom_checked: false,
        }
    }

    /// Bytes currently buffered for the incomplete event.
    pub fn buffered(&self) -> usize {
        self.pending.len()
    }

    /// Appends one read. Complete events are pushed to `out` in order; on error, the events
    /// completed before the offending one are still in `out`.
    ///
    /// Errors: [`FrameError::TooLarge`] when one event (complete or still buffered) exceeds
    /// the cap; [`FrameError::InvalidUtf8`] for a complete event that is not UTF-8.
    pub fn push<E>(&mut self, read: &[u8], out: &mut VecDeque<Bytes>) -> Result<(), FrameError<E>> {
        let mut input = read;
        if input.is_empty() {
            return Ok(());
        }
        if self.skip_lf {
            self.skip_lf = false;
            if input[0] == b'\n' {
                input = &input[1..];
            }
        }
        let mut start = self.pending.len();
        // Copy runs between CRs; each CR (alone or as CRLF) becomes one LF.
        let mut rest = input;
        while let Some(p) = rest.iter().position(|&b| b == b'\r') {
            self.pending.extend_from_slice(&rest[..p]);
            self.pending.extend_from_slice(b"\n");
            rest = match rest.get(p + 1) {
                Some(b'\n') => &rest[p + 2..],
                Some(_) => &rest[p + 1..],
                None => {
                    self.skip_lf = true;
                    &[]
                }
            };
        }
        self.pending.extend_from_slice(rest);
        if !self.bom_checked {
            // One leading UTF-8 BOM is dropped (SSE spec), possibly split across reads.
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let n = self.pending.len().min(3);
            if self.pending[..n] == BOM[..n] && n < 3 {
                return Ok(());
            }
            self.bom_checked = true;
            if self.pending.starts_with(BOM) {
                let _ = self.pending.split_to(3);
            }
            start = 0;
        }
        // Event boundaries among the new bytes: an LF directly after an LF (blank line).
        let mut cuts: Vec<usize> = Vec::new();
        let mut last_cut = 0usize;
        let mut i = start;
        while i < self.pending.len() {
            match self.pending[i..].iter().position(|&b| b == b'\n') {
                Some(off) => {
                    let j = i + off;
                    if off > 0 {
                        self.prev_lf = false;
                    }
                    if self.prev_lf {
                        cuts.push(j + 1 - last_cut);
                        last_cut = j + 1;
                    }
                    self.prev_lf = true;
                    i = j + 1;
                }
                None => {
                    self.prev_lf = false;
                    break;
                }
            }
        }
        for len in cuts {
            if len > self.max_event_bytes {
                return Err(FrameError::TooLarge {
                    buffered: len,
                    limit: self.max_event_bytes,
                });
            }
            let piece = self.pending.split_to(len).freeze();
            if std::str::from_utf8(&piece).is_err() {
                return Err(FrameError::InvalidUtf8);
            }
            out.push_back(piece);
        }
        if self.pending.len() > self.max_event_bytes {
            return Err(FrameError::TooLarge {
                buffered: self.pending.len(),
                limit: self.max_event_bytes,
            });
        }
        Ok(())
    }
}

/// Shared record of network reads, written as each read completes (before parsing) and
/// read by the event stamper and the idle timer. All values are elapsed ns on the run
/// clock; `u64::MAX` inside means "none yet".
#[derive(Debug)]
pub struct ReadStamps {
    first_ns: AtomicU64,
    last_ns: AtomicU64,
    reads: AtomicU64,
    bytes: AtomicU64,
}

impl Default for ReadStamps {
    fn default() -> Self {
        Self {
            first_ns: AtomicU64::new(u64::MAX),
            last_ns: AtomicU64::new(u64::MAX),
            reads: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }
}

impl ReadStamps {
    fn record(&self, arrival_ns: u64, len: usize) {
        if len == 0 {
            return;
        }
        if self.first_ns.load(Ordering::Relaxed) == u64::MAX {
            self.first_ns.store(arrival_ns, Ordering::Relaxed);
        }
        self.last_ns.store(arrival_ns, Ordering::Relaxed);
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
    }

    fn get(v: &AtomicU64) -> Option<u64> {
        match v.load(Ordering::Relaxed) {
            u64::MAX => None,
            x => Some(x),
        }
    }

    /// Arrival (elapsed ns) of the first non-empty read.
    pub fn first_read_ns(&self) -> Option<u64> {
        Self::get(&self.first_ns)
    }

    /// Arrival (elapsed ns) of the most recent non-empty read (any bytes, comments included).
    pub fn last_read_ns(&self) -> Option<u64> {
        Self::get(&self.last_ns)
    }

    /// Number of non-empty reads.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// Total body bytes read.
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
}

/// Stream adapter: stamped reads in, one complete event's bytes per item out (see
/// [`EventSplitter`]). Records every read in [`ReadStamps`] before splitting it.
pub struct SseFrames<S> {
    inner: S,
    splitter: EventSplitter,
    queue: VecDeque<Bytes>,
    stamps: Arc<ReadStamps>,
    error: Option<FrameError<Infallible>>,
    finished: bool,
}

impl<S, E> Stream for SseFrames<S>
where
    S: Stream<Item = Result<(u64, Bytes), E>> + Unpin,
{
    type Item = Result<Bytes, FrameError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(piece) = this.queue.pop_front() {
                return Poll::Ready(Some(Ok(piece)));
            }
            if let Some(err) = this.error.take() {
                this.finished = true;
                let err = match err {
                    FrameError::TooLarge { buffered, limit } => {
                        FrameError::TooLarge { buffered, limit }
                    }
                    FrameError::InvalidUtf8 => FrameError::InvalidUtf8,
                    FrameError::Transport(never) => match never {},
                };
                return Poll::Ready(Some(Err(err)));
            }
            if this.finished {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Ready(Some(Ok((arrival_ns, read)))) => {
                    this.stamps.record(arrival_ns, read.len());
                    if let Err(e) = this.splitter.push::<Infallible>(&read, &mut this.queue) {
                        this.error = Some(e);
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(FrameError::Transport(e))));
                }
                Poll::Ready(None) => {
                    this.finished = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

/// One dispatched SSE event with the arrival time of the read that completed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; `None` for the default type `message`.
    pub event_type: Option<String>,
    /// Data lines joined with `\n` (SSE spec), trailing LF removed.
    pub data: String,
    /// Arrival (elapsed ns) of the network read that delivered the terminating blank line.
    pub arrival_ns: u64,
}

/// Why an SSE stream stopped with an error.
#[derive(Debug)]
pub enum SseError<E> {
    /// One event exceeded `max_event_bytes` (C30) → `event_too_large`.
    EventTooLarge {
        /// Bytes of the offending event seen so far.
        buffered: usize,
        /// The configured cap.
        limit: usize,
    },
    /// The stream was not UTF-8 → `malformed_event`.
    InvalidUtf8,
    /// eventsource-stream rejected a line → `malformed_event` (cannot happen for complete
    /// lines, kept for completeness).
    Parse(String),
    /// The byte stream failed → `disconnect`.
    Transport(E),
}

impl<E> SseError<E> {
    /// The record's failure code for this error: `event_too_large`, `malformed_event`
    /// (not UTF-8, parse error) or `disconnect` (transport).
    pub fn failure_code(&self) -> FailureCode {
        match self {
            SseError::EventTooLarge { .. } => FailureCode::EventTooLarge,
            SseError::InvalidUtf8 | SseError::Parse(_) => FailureCode::MalformedEvent,
            SseError::Transport(_) => FailureCode::Disconnect,
        }
    }
}

impl<E: std::fmt::Display> std::fmt::Display for SseError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SseError::EventTooLarge { buffered, limit } => {
                write!(
                    f,
                    "SSE event exceeds max_event_bytes ({buffered} > {limit} bytes)"
                )
            }
            SseError::InvalidUtf8 => f.write_str("SSE stream is not valid UTF-8"),
            SseError::Parse(e) => write!(f, "SSE parse error: {e}"),
            SseError::Transport(e) => write!(f, "response body error: {e}"),
        }
    }
}

/// Stamped SSE events over a stream of stamped reads `(arrival_ns, bytes)`.
pub struct SseEventStream<S> {
    events: EventStream<SseFrames<S>>,
    stamps: Arc<ReadStamps>,
}

impl<S, E> SseEventStream<S>
where
    S: Stream<Item = Result<(u64, Bytes), E>> + Unpin,
{
    /// Wraps stamped reads. Each read's `arrival_ns` must be taken as the read completes.
    pub fn new(reads: S, max_event_bytes: usize) -> Self {
        let stamps = Arc::new(ReadStamps::default());
        // eventsource-stream 0.2.3 slices `&s[1..]` when its first string starts with a
        // BOM, which panics (the BOM is 3 bytes). The splitter drops the BOM itself, and
        // this leading blank line (a no-op at stream start) guarantees the crate's first
        // string never starts with one.
        let frames = SseFrames {
            inner: reads,
            splitter: EventSplitter::new(max_event_bytes),
            queue: VecDeque::from([Bytes::from_static(b"\n")]),
            stamps: Arc::clone(&stamps),
            error: None,
            finished: false,
        };
        Self {
            events: frames.eventsource(),
            stamps,
        }
    }

    /// The shared read record (first/last read arrival, for first byte and idle timing).
    pub fn stamps(&self) -> &Arc<ReadStamps> {
        &self.stamps
    }
}

impl<S, E> Stream for SseEventStream<S>
where
    S: Stream<Item = Result<(u64, Bytes), E>> + Unpin,
{
    type Item = Result<SseEvent, SseError<E>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match Pin::new(&mut this.events).poll_next(cx) {
            Poll::Ready(Some(Ok(ev))) => {
                // The event popped out of the most recent read: that read completed it.
                let arrival_ns = this.stamps.last_read_ns().unwrap_or(0);
                let event_type = (ev.event != "message").then_some(ev.event);
                Poll::Ready(Some(Ok(SseEvent {
                    event_type,
                    data: ev.data,
                    arrival_ns,
                })))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(match e {
                EventStreamError::Transport(FrameError::TooLarge { buffered, limit }) => {
                    SseError::EventTooLarge { buffered, limit }
                }
                EventStreamError::Transport(FrameError::InvalidUtf8)
                | EventStreamError::Utf8(_) => SseError::InvalidUtf8,
                EventStreamError::Transport(FrameError::Transport(e)) => SseError::Transport(e),
                EventStreamError::Parser(e) => SseError::Parse(e.to_string()),
            }))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// Frames a scripted sequence of reads `(arrival_ns, bytes)` without a network: the events
/// in order, and the error that stopped framing, if any. For tests and offline replay.
pub fn frame_reads(
    reads: Vec<(u64, Bytes)>,
    max_event_bytes: usize,
) -> (Vec<SseEvent>, Option<SseError<Infallible>>) {
    let source = futures_util::stream::iter(reads.into_iter().map(Ok::<_, Infallible>));
    let mut stream = SseEventStream::new(source, max_event_bytes);
    let mut events = Vec::new();
    // The source is always ready, so every poll completes immediately.
    while let Some(Some(item)) = stream.next().now_or_never() {
        match item {
            Ok(ev) => events.push(ev),
            Err(e) => return (events, Some(e)),
        }
    }
    (events, None)
}

/// Replays scripted reads `(arrival_ns, bytes)` through the real framing and the
/// accumulator, without a network or clock: the record a streamed response made of these
/// reads would give. The end is the last read's arrival; the body is taken to end cleanly
/// after the last read unless framing failed. `head.first_byte_ns` is filled in.
pub fn replay_reads(
    reads: Vec<(u64, Bytes)>,
    max_event_bytes: usize,
    mut head: RequestHead,
) -> RequestRecord {
    let end_ns = reads.last().map_or(head.send_ns, |r| r.0);
    head.first_byte_ns = reads.iter().find(|r| !r.1.is_empty()).map(|r| r.0);
    let (events, error) = frame_reads(reads, max_event_bytes);
    let mut acc = StreamAccumulator::new();
    let mut flow = Flow::Continue;
    for ev in &events {
        flow = acc.on_event(ev.event_type.as_deref(), &ev.data, ev.arrival_ns);
        if flow != Flow::Continue {
            break;
        }
    }
    let mut clean = true;
    if flow == Flow::Continue
        && let Some(e) = error
    {
        acc.fail(e.failure_code(), &e.to_string());
        clean = false;
    }
    acc.finish(head, end_ns, clean)
}

#[cfg(test)]
mod tests;
