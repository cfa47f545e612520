//! SSE framing with per-event arrival times: the project's own framer ([`SseFramer`]).
//!
//! Pipeline (docs/measurement.md "Per request (client timing)";
//! cases C03, C04, C05, C30):
//!
//! ```text
//! network read (Bytes)  --stamp-->  arrival_ns taken as the read completes, before any parsing
//! SseFramer::push       line endings normalized (CRLF, bare CR -> LF; a CR/LF pair split
//!                       across reads is one line end), a leading BOM dropped, events cut at
//!                       blank lines, each complete event checked against max_event_bytes and
//!                       for UTF-8, its fields parsed (data lines joined with LF, `event:`,
//!                       comments, `id:` / `retry:` ignored)
//! on_event callback     one SseEventRef per dispatched event, borrowed from the framer's
//!                       buffer: no allocation per event (a multi-line `data` field is joined
//!                       in one reused scratch string)
//! ```
//!
//! **Why its own framer.** Until the framer of its own, the field parsing was eventsource-stream 0.2.3's,
//! behind a splitter of this module. That crate re-parsed its buffer with nom for every
//! read, copied the remainder after every line and built three `String`s per event; at
//! saturation the framer cost about a fifth of the client's CPU (a perf profile), and
//! this one about 1.5 % (the same profile, in the history of BENCHMARKS.md "Client cost"). The SSE field grammar is small and this module already had to normalize line
//! endings, drop the BOM (the crate panicked on one) and bound memory itself, so the field
//! parsing moved here. A property test checks it against eventsource-stream (a
//! dev-dependency) on arbitrary streams and read splits.
//!
//! **Memory.** The framer buffers only the incomplete trailing event (at most
//! `max_event_bytes` plus one read); bytes of complete events are dropped after each read.
//! A read's bytes are copied once (normalizing as they go); an event whose data is a single
//! line is handed out as a slice of that copy.
//!
//! **Liveness.** Comment lines (`: ping`) dispatch nothing, so the idle timer cannot see
//! them as events. Every network read (any bytes) is recorded in [`ReadStamps`] instead,
//! and the client's idle timer is measured from the last read (C03).

use std::convert::Infallible;
use std::ops::ControlFlow;

use bytes::Bytes;

use super::accumulate::{Flow, RequestHead, StreamAccumulator};
use super::record::{FailureCode, RequestRecord};

/// Default cap on one SSE event (bytes buffered since the last event boundary): 16 MiB
/// (C30: "default ≥ 16 MiB").
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// Why framing stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// More than `limit` bytes were buffered for one event (`buffered` is what was seen).
    TooLarge {
        /// Bytes of the offending event seen so far.
        buffered: usize,
        /// The configured `max_event_bytes`.
        limit: usize,
    },
    /// An event's bytes were not valid UTF-8.
    InvalidUtf8,
}

impl std::fmt::Display for FrameError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameError::TooLarge { buffered, limit } => {
                write!(
                    f,
                    "SSE event exceeds max_event_bytes ({buffered} > {limit} bytes)"
                )
            }
            FrameError::InvalidUtf8 => f.write_str("SSE event is not valid UTF-8"),
        }
    }
}

/// One dispatched SSE event, borrowed from the framer (valid during the callback).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseEventRef<'a> {
    /// The `event:` field; `None` for the default type `message` (an empty `event:` value
    /// and `event: message` are the default type too).
    pub event_type: Option<&'a str>,
    /// Data lines joined with `\n` (SSE spec), trailing LF removed.
    pub data: &'a str,
}

/// The SSE framer of one response body: bytes in (one call per network read), events out
/// through a callback. Pure and synchronous; see the module docs.
///
/// Each dispatched event is one SSE event per the spec's dispatch rule: an event whose
/// data buffer is empty (comments only, `event:` without data, an extra blank line)
/// dispatches nothing. Bytes of the incomplete trailing event stay buffered; a stream that
/// ends mid-event never dispatches it (SSE spec).
#[derive(Debug)]
pub struct SseFramer {
    max_event_bytes: usize,
    /// Normalized bytes (LF line ends) of the incomplete trailing event.
    buf: Vec<u8>,
    /// Where the next line-end scan starts in `buf` (everything before it is scanned).
    scanned: usize,
    /// The previous byte scanned was a line end (stream start counts as one).
    prev_lf: bool,
    /// The previous read ended in a CR: an LF starting the next read belongs to it.
    skip_lf: bool,
    bom_checked: bool,
    /// Scratch for joining multi-line `data` fields (reused across events).
    joined: String,
    /// Once failed, every later push fails the same way.
    failed: Option<FrameError>,
}

impl SseFramer {
    /// A framer that fails once more than `max_event_bytes` bytes are buffered for one
    /// event.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            buf: Vec::new(),
            scanned: 0,
            prev_lf: true,
            skip_lf: false,
            bom_checked: false,
            joined: String::new(),
            failed: None,
        }
    }

    /// Bytes currently buffered for the incomplete event.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Appends one read and dispatches every event it completes, in order, to `on_event`.
    /// `on_event` returns [`ControlFlow::Break`] to stop: the rest of the read is then not
    /// parsed (the caller stops reading; the framer must not be pushed again, and its
    /// state past the break is unspecified).
    ///
    /// A read with no CR that starts at an event boundary (the common case) is parsed in
    /// place; only its incomplete trailing event, if any, is copied.
    ///
    /// Errors: [`FrameError::TooLarge`] when one event (complete or still buffered) exceeds
    /// the cap; [`FrameError::InvalidUtf8`] for a complete event that is not UTF-8. Events
    /// completed before the offending one are dispatched first.
    pub fn push(
        &mut self,
        read: &[u8],
        on_event: impl FnMut(SseEventRef<'_>) -> ControlFlow<()>,
    ) -> Result<(), FrameError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.buf.is_empty()
            && self.bom_checked
            && !self.skip_lf
            && memchr::memchr(b'\r', read).is_none()
        {
            let scanned = scan(
                read,
                0,
                &mut self.prev_lf,
                &mut self.joined,
                self.max_event_bytes,
                on_event,
            );
            return match scanned {
                Ok(Some(rest)) => {
                    self.buf.extend_from_slice(&read[rest..]);
                    self.scanned = self.buf.len();
                    self.check_buffered()
                }
                Ok(None) => Ok(()),
                Err(e) => Err(self.fail(e)),
            };
        }
        self.append_normalized(read);
        if !self.bom_checked {
            // One leading UTF-8 BOM is dropped (SSE spec), possibly split across reads.
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            let n = self.buf.len().min(3);
            if self.buf[..n] == BOM[..n] && n < 3 {
                return Ok(());
            }
            self.bom_checked = true;
            if self.buf.starts_with(BOM) {
                self.buf.drain(..3);
            }
            self.scanned = 0;
        }
        let scanned = scan(
            &self.buf,
            self.scanned,
            &mut self.prev_lf,
            &mut self.joined,
            self.max_event_bytes,
            on_event,
        );
        match scanned {
            Ok(Some(rest)) => {
                // Keep only the incomplete trailing event: bytes of complete events are
                // dropped, so a remainder is moved at most once (it then starts the buffer).
                if rest > 0 {
                    self.buf.drain(..rest);
                }
                self.scanned = self.buf.len();
                self.check_buffered()
            }
            Ok(None) => Ok(()),
            Err(e) => Err(self.fail(e)),
        }
    }

    /// The cap applies to the incomplete trailing event too.
    fn check_buffered(&mut self) -> Result<(), FrameError> {
        if self.buf.len() > self.max_event_bytes {
            return Err(self.fail(FrameError::TooLarge {
                buffered: self.buf.len(),
                limit: self.max_event_bytes,
            }));
        }
        Ok(())
    }

    fn fail(&mut self, e: FrameError) -> FrameError {
        self.failed = Some(e);
        e
    }

    /// Copies `read` to the buffer with every CR or CRLF turned into one LF.
    fn append_normalized(&mut self, read: &[u8]) {
        let mut rest = read;
        if self.skip_lf && !rest.is_empty() {
            self.skip_lf = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(p) = memchr::memchr(b'\r', rest) {
            self.buf.extend_from_slice(&rest[..p]);
            self.buf.push(b'\n');
            rest = match rest.get(p + 1) {
                Some(b'\n') => &rest[p + 2..],
                Some(_) => &rest[p + 1..],
                None => {
                    self.skip_lf = true;
                    &[]
                }
            };
        }
        self.buf.extend_from_slice(rest);
    }
}

/// Scans `bytes` (LF line ends only) from `from` for blank lines, dispatching each event
/// they complete; events start at 0 (`bytes` begins at an event boundary). Returns where
/// the incomplete trailing event starts, or `None` when `on_event` broke off.
fn scan(
    bytes: &[u8],
    from: usize,
    prev_lf: &mut bool,
    joined: &mut String,
    max_event_bytes: usize,
    mut on_event: impl FnMut(SseEventRef<'_>) -> ControlFlow<()>,
) -> Result<Option<usize>, FrameError> {
    let mut event_start = 0usize;
    // Line ends seen in the current event (2 = more than one line); a resumed scan does
    // not know, so it counts as many.
    let mut lines: u8 = if from > 0 { 2 } else { 0 };
    let mut i = from;
    while let Some(off) = memchr::memchr(b'\n', &bytes[i..]) {
        let j = i + off;
        let blank = *prev_lf && off == 0;
        *prev_lf = true;
        i = j + 1;
        if !blank {
            lines = lines.saturating_add(1);
            continue;
        }
        // A blank line at j ends the event bytes[event_start..=j].
        let len = j + 1 - event_start;
        if len > max_event_bytes {
            return Err(FrameError::TooLarge {
                buffered: len,
                limit: max_event_bytes,
            });
        }
        let Ok(event) = std::str::from_utf8(&bytes[event_start..j]) else {
            return Err(FrameError::InvalidUtf8);
        };
        event_start = j + 1;
        let parsed = if lines == 1 {
            // One line (the common `data: {...}`): it is the event without its line end.
            parse_line(&event[..event.len() - 1]).map(|data| SseEventRef {
                event_type: None,
                data,
            })
        } else {
            parse_event(event, joined)
        };
        lines = 0;
        if let Some(ev) = parsed
            && on_event(ev).is_break()
        {
            return Ok(None);
        }
    }
    // No line end in bytes[i..]: bytes after the last LF start a line.
    if i < bytes.len() {
        *prev_lf = false;
    }
    Ok(Some(event_start))
}

/// A line's field name and value (one leading space of the value dropped); `None` for a
/// blank line or a comment.
#[inline]
fn split_field(line: &str) -> Option<(&str, &str)> {
    if line.is_empty() || line.as_bytes()[0] == b':' {
        return None;
    }
    // Field names are short: a plain scan finds the colon sooner than a SIMD search.
    Some(match line.bytes().position(|b| b == b':') {
        Some(c) => {
            let v = &line[c + 1..];
            (&line[..c], v.strip_prefix(' ').unwrap_or(v))
        }
        None => (line, ""),
    })
}

/// [`parse_event`] for an event of one line: its data when it is a `data` line; `None`
/// when the line dispatches nothing on its own (a comment, `event:`, `id:`, another
/// field). The event type is always the default.
#[inline]
fn parse_line(line: &str) -> Option<&str> {
    match split_field(line)? {
        ("data", value) => Some(value),
        _ => None,
    }
}

/// Parses one complete event (its lines, LF-separated, without the terminating blank line)
/// per the SSE spec's field rules; `None` when it dispatches nothing (empty data buffer).
/// A single data line is returned as a slice of `event`; several are joined in `joined`.
fn parse_event<'a>(event: &'a str, joined: &'a mut String) -> Option<SseEventRef<'a>> {
    let mut event_type: Option<&'a str> = None;
    let mut first: Option<&'a str> = None;
    let mut many = false;
    let mut rest = event;
    while !rest.is_empty() {
        let (line, next) = match memchr::memchr(b'\n', rest.as_bytes()) {
            Some(p) => (&rest[..p], &rest[p + 1..]),
            None => (rest, ""),
        };
        rest = next;
        let Some((field, value)) = split_field(line) else {
            continue;
        };
        match field {
            "data" => match first {
                None => first = Some(value),
                Some(f) => {
                    if !many {
                        many = true;
                        joined.clear();
                        joined.push_str(f);
                    }
                    joined.push('\n');
                    joined.push_str(value);
                }
            },
            "event" => event_type = Some(value),
            // `id` and `retry` only matter to a reconnecting EventSource; others are ignored.
            _ => {}
        }
    }
    let data: &'a str = match (first, many) {
        (None, _) => return None,
        (Some(f), false) => f,
        (Some(_), true) => joined.as_str(),
    };
    let event_type = event_type.filter(|t| !t.is_empty() && *t != "message");
    Some(SseEventRef { event_type, data })
}

/// Record of a response body's network reads, written as each read completes (before
/// parsing) and read by the idle timer and the record. Elapsed ns on the run clock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadStamps {
    first_ns: Option<u64>,
    last_ns: Option<u64>,
    reads: u64,
    bytes: u64,
}

impl ReadStamps {
    /// Records one read of `len` bytes that arrived at `arrival_ns` (empty reads are not
    /// reads).
    #[inline]
    pub fn record(&mut self, arrival_ns: u64, len: usize) {
        if len == 0 {
            return;
        }
        self.first_ns.get_or_insert(arrival_ns);
        self.last_ns = Some(arrival_ns);
        self.reads += 1;
        self.bytes += len as u64;
    }

    /// Arrival (elapsed ns) of the first non-empty read.
    pub fn first_read_ns(&self) -> Option<u64> {
        self.first_ns
    }

    /// Arrival (elapsed ns) of the most recent non-empty read (any bytes, comments included).
    pub fn last_read_ns(&self) -> Option<u64> {
        self.last_ns
    }

    /// Number of non-empty reads.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// Total body bytes read.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

/// One dispatched SSE event with the arrival time of the read that completed it (owned;
/// for tests and offline replay — the client itself uses [`SseEventRef`]).
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
    /// The byte stream failed → `disconnect`.
    Transport(E),
}

impl<E> From<FrameError> for SseError<E> {
    fn from(e: FrameError) -> Self {
        match e {
            FrameError::TooLarge { buffered, limit } => SseError::EventTooLarge { buffered, limit },
            FrameError::InvalidUtf8 => SseError::InvalidUtf8,
        }
    }
}

impl<E> SseError<E> {
    /// The record's failure code for this error: `event_too_large`, `malformed_event`
    /// (not UTF-8) or `disconnect` (transport).
    pub fn failure_code(&self) -> FailureCode {
        match self {
            SseError::EventTooLarge { .. } => FailureCode::EventTooLarge,
            SseError::InvalidUtf8 => FailureCode::MalformedEvent,
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
            SseError::Transport(e) => write!(f, "response body error: {e}"),
        }
    }
}

/// Frames a scripted sequence of reads `(arrival_ns, bytes)` without a network: the events
/// in order, each stamped with the arrival of the read that completed it, and the error
/// that stopped framing, if any. For tests and offline replay.
pub fn frame_reads(
    reads: Vec<(u64, Bytes)>,
    max_event_bytes: usize,
) -> (Vec<SseEvent>, Option<SseError<Infallible>>) {
    let mut framer = SseFramer::new(max_event_bytes);
    let mut events = Vec::new();
    for (arrival_ns, read) in reads {
        let pushed = framer.push(&read, |ev| {
            events.push(SseEvent {
                event_type: ev.event_type.map(str::to_string),
                data: ev.data.to_string(),
                arrival_ns,
            });
            ControlFlow::Continue(())
        });
        if let Err(e) = pushed {
            return (events, Some(e.into()));
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
    let mut framer = SseFramer::new(max_event_bytes);
    let mut acc = StreamAccumulator::new();
    let mut clean = true;
    for (arrival_ns, read) in &reads {
        match feed(&mut framer, &mut acc, read, *arrival_ns) {
            Ok(Flow::Continue) => {}
            Ok(_) => break,
            Err(e) => {
                let e = SseError::<Infallible>::from(e);
                acc.fail(e.failure_code(), &e.to_string());
                clean = false;
                break;
            }
        }
    }
    acc.finish(head, end_ns, clean)
}

/// Frames one read that arrived at `arrival_ns` and feeds every event it completes to the
/// accumulator, stopping at `Done` or `Failed`. The one place framing meets accumulation
/// (the client's read loop and [`replay_reads`]).
#[inline]
pub fn feed(
    framer: &mut SseFramer,
    acc: &mut StreamAccumulator,
    read: &[u8],
    arrival_ns: u64,
) -> Result<Flow, FrameError> {
    let mut flow = Flow::Continue;
    framer.push(read, |ev| {
        flow = acc.on_event(ev.event_type, ev.data, arrival_ns);
        if flow == Flow::Continue {
            ControlFlow::Continue(())
        } else {
            ControlFlow::Break(())
        }
    })?;
    Ok(flow)
}

#[cfg(test)]
mod tests;
