//! The bounded, non-blocking, allocation-free in-memory event sink (docs/artifacts.md;
//! docs/artifacts.md).
//!
//! # Design (why it never blocks)
//!
//! The sink preallocates `max_events` fixed-size slots at construction (and touches their
//! pages, so the hot path takes no page faults for them). One `AtomicU64` packs the number
//! of claimed slots (low 32 bits), the serialized bytes claimed (bits 32..62), a FULL bit
//! and a STOP bit. An insert claims its slot **and** its share of the byte budget with a
//! single compare-and-swap, reading the clock between the load and the CAS: the winner of
//! slot `k + 1` loaded the value stored by the winner of slot `k` *after* that winner read
//! its clock, so `elapsed_ns` never decreases in `seq` order even with many producer
//! threads. A failed CAS, or a clock reading found stale against an event claimed after
//! the load, means another insert made progress: the loop retries (lock-free, no waiting
//! on anyone); only a lower reading with the state unchanged is a clock regression. The
//! claimed slot is then written by its owner alone, through a per-slot
//! `Mutex::try_lock` that is never contended (only the claimant writes a slot; the reader
//! touches it only after the owner set its `ready` flag); if that `try_lock` ever failed,
//! the event would be counted as dropped (`slot_contention`), never waited for. No lock is
//! shared between producers, and persistence never holds anything a producer needs.
//!
//! The hot path allocates nothing: names are enum codes or indices into the tool table
//! registered at construction, ids are copied into fixed inline buffers, and the event's
//! serialized size is counted, once per insert and without a buffer, by the same code
//! that writes the line at persistence (only the digits of `seq` and `elapsed_ns` are
//! added inside the CAS loop).
//! It does no I/O. Counters of dropped and rejected events live outside the slot array,
//! so a full buffer cannot hide its own loss.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::accounting::{
    CaptureSummary, DropReason, DroppedCounts, Quality, QualityReason, RejectReason, RejectedCounts,
};
use super::bounds::Bounds;
use super::ids::{InlineId, is_valid_case_id, is_valid_id, is_valid_tool_name};
use super::record::{NameCode, Record, digits, emit, line_len};
use super::span::{SpanContext, SpanEnd, SpanId, SpanName};
use super::time::TimeSource;
use inferscope_clock::RunClock;

/// What a sink is made with.
#[derive(Clone, Debug)]
pub struct SinkConfig {
    /// The run's id (`[A-Za-z0-9_.:-]{1,128}`), written to the manifest.
    pub run_id: String,
    /// The fixture tool names declared by the suite (`[a-z][a-z0-9_]{0,63}`, unique, at
    /// most [`MAX_TOOLS`]); a fixture span may only carry one of these names.
    pub tool_names: Vec<String>,
    /// Capture bounds (default: the bounds of docs/artifacts.md "Timeline capture rules").
    pub bounds: Bounds,
}

impl SinkConfig {
    /// A config with no tools and default bounds.
    pub fn new(run_id: &str) -> Self {
        Self {
            run_id: run_id.to_string(),
            tool_names: Vec::new(),
            bounds: Bounds::default(),
        }
    }
}

/// Most tool names one sink registers.
pub const MAX_TOOLS: usize = 256;

/// Why a sink could not be made. Messages never echo the rejected text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SinkConfigError {
    #[error("run_id fails the id syntax [A-Za-z0-9_.:-]{{1,128}}")]
    /// The run id fails its syntax.
    InvalidRunId,
    #[error("tool name #{index} fails the tool-name syntax [a-z][a-z0-9_]{{0,63}}")]
    /// A tool name fails its syntax (`index` in `tool_names`).
    InvalidToolName {
        /// Index in `tool_names`.
        index: usize,
    },
    #[error("tool name #{index} is declared twice")]
    /// A tool name is declared twice (`index` of the second).
    DuplicateToolName {
        /// Index in `tool_names`.
        index: usize,
    },
    #[error("more than {MAX_TOOLS} tool names")]
    /// Too many tool names.
    TooManyTools,
    #[error("clock_domain_id fails the id syntax [A-Za-z0-9_.:-]{{1,128}}")]
    /// The clock domain id fails its syntax.
    InvalidClockDomain,
    #[error("bound {0} is outside 1..=its default")]
    /// A bound outside `1..=default` (its name).
    InvalidBounds(&'static str),
}

const IDX_MASK: u64 = 0xFFFF_FFFF;
const BYTES_SHIFT: u32 = 32;
const BYTES_MASK: u64 = (1 << 30) - 1;
const FULL: u64 = 1 << 62;
const STOP: u64 = 1 << 63;
/// How long [`TimelineSink::finalize`] waits for writers that claimed a slot before the
/// stop to finish writing it (they need nanoseconds; this bound only guards a writer
/// thread that died mid-insert).
const FINALIZE_WAIT: Duration = Duration::from_millis(200);

static NEXT_SINK: AtomicU32 = AtomicU32::new(1);

/// The insert path's shared words (see [`Inner::hot`]).
#[repr(align(64))]
struct Hot {
    /// Claimed slots (low 32 bits), claimed serialized bytes (bits 32..62), FULL, STOP.
    state: AtomicU64,
    /// The highest `elapsed_ns` kept (clock-regression check).
    last_elapsed: AtomicU64,
}

/// One preallocated event slot. Cache-line aligned, so that two producers writing
/// neighbouring slots (consecutive `seq`s) never share a line (the two-producer
/// insert tail).
#[repr(align(64))]
struct Slot {
    ready: AtomicBool,
    /// For a start event: its span has ended (an end was kept or is being kept).
    ended: AtomicBool,
    rec: Mutex<Record>,
}

pub(crate) struct Inner {
    id: u32,
    pub(crate) clock: Arc<dyn TimeSource>,
    pub(crate) domain: Box<str>,
    pub(crate) run_id: Box<str>,
    pub(crate) timeline_id: Box<str>,
    pub(crate) tools: Box<[Box<str>]>,
    pub(crate) bounds: Bounds,
    slots: Box<[Slot]>,
    /// The two words every insert writes, on a cache line of their own: read-mostly
    /// fields (clock, bounds, slots) stay in every producer's cache.
    hot: Hot,
    rejected: [AtomicU64; RejectReason::ALL.len()],
    dropped: [AtomicU64; DropReason::ALL.len()],
    cancelled: AtomicBool,
    pub(crate) start_elapsed_ns: u64,
    end_elapsed_ns: AtomicU64,
}

/// The capture sink: a cheap `Clone + Send + Sync` handle (an `Arc`) shared by every
/// producer of one run. See the module doc for why insertion never blocks.
///
/// In memory it holds `max_events` slots of a fixed size ([`TimelineSink::preallocated_bytes`];
/// about 3.6 MB with the default 10,000 events), allocated and touched at construction.
#[derive(Clone)]
pub struct TimelineSink {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for TimelineSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimelineSink")
            .field("run_id", &self.inner.run_id)
            .field("timeline_id", &self.inner.timeline_id)
            .field("bounds", &self.inner.bounds)
            .finish_non_exhaustive()
    }
}

impl TimelineSink {
    /// Makes a sink on `clock` (usually the run's [`RunClock`]), preallocating every slot.
    ///
    /// Errors: a run id, tool name or clock domain failing its syntax, a duplicate tool
    /// name, more than [`MAX_TOOLS`] tools, or bounds outside `1..=default`.
    pub fn new(clock: Arc<dyn TimeSource>, config: SinkConfig) -> Result<Self, SinkConfigError> {
        config
            .bounds
            .validate()
            .map_err(SinkConfigError::InvalidBounds)?;
        if !is_valid_id(&config.run_id) {
            return Err(SinkConfigError::InvalidRunId);
        }
        if !is_valid_id(clock.clock_domain_id()) {
            return Err(SinkConfigError::InvalidClockDomain);
        }
        if config.tool_names.len() > MAX_TOOLS {
            return Err(SinkConfigError::TooManyTools);
        }
        for (index, name) in config.tool_names.iter().enumerate() {
            if !is_valid_tool_name(name) {
                return Err(SinkConfigError::InvalidToolName { index });
            }
            if config.tool_names[..index].contains(name) {
                return Err(SinkConfigError::DuplicateToolName { index });
            }
        }
        let slots: Box<[Slot]> = (0..config.bounds.max_events)
            .map(|_| Slot {
                ready: AtomicBool::new(false),
                ended: AtomicBool::new(false),
                rec: Mutex::new(Record::EMPTY),
            })
            .collect();
        let start_elapsed_ns = clock.elapsed_ns();
        let inner = Inner {
            id: NEXT_SINK.fetch_add(1, Ordering::Relaxed),
            domain: clock.clock_domain_id().into(),
            clock,
            run_id: config.run_id.as_str().into(),
            timeline_id: format!("tl-{:016x}", rand::random::<u64>()).into(),
            tools: config
                .tool_names
                .iter()
                .map(|s| s.as_str().into())
                .collect(),
            bounds: config.bounds,
            slots,
            hot: Hot {
                state: AtomicU64::new(0),
                last_elapsed: AtomicU64::new(0),
            },
            rejected: Default::default(),
            dropped: Default::default(),
            cancelled: AtomicBool::new(false),
            start_elapsed_ns,
            end_elapsed_ns: AtomicU64::new(u64::MAX),
        };
        Ok(Self {
            inner: Arc::new(inner),
        })
    }

    /// Makes a sink on the run's clock (a clone of it; cheap).
    pub fn with_run_clock(clock: &RunClock, config: SinkConfig) -> Result<Self, SinkConfigError> {
        Self::new(Arc::new(clock.clone()), config)
    }

    /// Starts a span now: keeps a `*_start` event and returns its handle, or `None` when
    /// the event was rejected or dropped (counted; the run goes on). Never blocks,
    /// allocates nothing, does no I/O.
    ///
    /// `parent` must be a span of this timeline that has not ended when this call checks
    /// it (a parent ended concurrently by another thread may still precede this start).
    #[inline]
    pub fn span_start(
        &self,
        name: SpanName<'_>,
        parent: Option<SpanId>,
        ctx: SpanContext<'_>,
    ) -> Option<SpanId> {
        let mut rec = Record::EMPTY;
        self.start_into(name, parent, ctx, &mut rec)
    }

    /// Ends a span now: keeps a `*_end` event with the span's kind, name and parent.
    /// Returns whether it was kept; a rejected or dropped end is counted and the span
    /// keeps an unknown end. Never blocks, allocates nothing, does no I/O.
    #[inline]
    pub fn span_end(&self, span: SpanId, end: SpanEnd<'_>) -> bool {
        let mut rec = Record::EMPTY;
        self.end_into(span, end, &mut rec)
    }

    /// [`TimelineSink::span_start`] that also returns the kept record (negative controls).
    pub(crate) fn start_record(
        &self,
        name: SpanName<'_>,
        parent: Option<SpanId>,
        ctx: SpanContext<'_>,
    ) -> Option<(SpanId, Record)> {
        let mut rec = Record::EMPTY;
        let id = self.start_into(name, parent, ctx, &mut rec)?;
        Some((id, rec))
    }

    /// [`TimelineSink::span_end`] that also returns the kept record (negative controls).
    pub(crate) fn end_record(&self, span: SpanId, end: SpanEnd<'_>) -> Option<Record> {
        let mut rec = Record::EMPTY;
        self.end_into(span, end, &mut rec).then_some(rec)
    }

    /// Builds the start event in `rec` (the caller's `Record::EMPTY`) and keeps it: the
    /// record is written in place and copied once, into its slot.
    #[inline(always)]
    fn start_into(
        &self,
        name: SpanName<'_>,
        parent: Option<SpanId>,
        ctx: SpanContext<'_>,
        rec: &mut Record,
    ) -> Option<SpanId> {
        let inner = &*self.inner;
        if !self.precheck() {
            return None;
        }
        let name = match name {
            SpanName::Phase(p) => NameCode::Phase(p),
            SpanName::ChatCompletion => NameCode::ChatCompletion,
            SpanName::SweHarness => NameCode::SweHarness,
            SpanName::Fixture(tool) => match inner.tools.iter().position(|t| **t == *tool) {
                Some(i) => NameCode::Fixture(i as u16),
                None => return self.reject(RejectReason::InvalidName),
            },
        };
        if let Some(s) = ctx.case_id {
            match InlineId::new(s, is_valid_case_id) {
                Ok(id) => rec.case_id = id,
                Err(()) => return self.reject(RejectReason::InvalidCaseId),
            }
        }
        if let Some(s) = ctx.request_id {
            match InlineId::new(s, is_valid_id) {
                Ok(id) => rec.request_id = id,
                Err(()) => return self.reject(RejectReason::InvalidRequestId),
            }
        }
        let parent_seq = match parent {
            None => 0,
            Some(p) if p.sink != inner.id => return self.reject(RejectReason::ForeignSpan),
            Some(p) => {
                if inner.slots[(p.seq - 1) as usize]
                    .ended
                    .load(Ordering::Acquire)
                {
                    return self.reject(RejectReason::ParentNotOpen);
                }
                p.seq
            }
        };
        rec.parent = parent_seq;
        rec.start = true;
        rec.name = name;
        rec.attempt = ctx.attempt;
        if !self.insert(rec) {
            return None;
        }
        Some(SpanId {
            sink: inner.id,
            seq: rec.seq,
            parent: parent_seq,
            name,
        })
    }

    /// Builds the end event in `rec` (the caller's `Record::EMPTY`) and keeps it.
    #[inline(always)]
    fn end_into(&self, span: SpanId, end: SpanEnd<'_>, rec: &mut Record) -> bool {
        let inner = &*self.inner;
        if span.sink != inner.id {
            return self.rejected(RejectReason::ForeignSpan);
        }
        if let Some(s) = end.request_id {
            match InlineId::new(s, is_valid_id) {
                Ok(id) => rec.request_id = id,
                Err(()) => return self.rejected(RejectReason::InvalidRequestId),
            }
        }
        if !self.precheck() {
            return false;
        }
        let ended = &inner.slots[(span.seq - 1) as usize].ended;
        if ended
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return self.rejected(RejectReason::SpanNotOpen);
        }
        rec.span = span.seq;
        rec.parent = span.parent;
        rec.start = false;
        rec.name = span.name;
        rec.status = Some(end.status);
        rec.failure = end.failure;
        rec.prompt_tokens = end.prompt_tokens;
        rec.completion_tokens = end.completion_tokens;
        rec.completion_estimated = end.completion_estimated;
        let kept = self.insert(rec);
        if !kept {
            // The end was not kept: in the artifact the span has an unknown end, so it
            // stays open here too.
            ended.store(false, Ordering::Release);
        }
        kept
    }

    /// Rejects at once when stopped or full (counted).
    #[inline]
    fn precheck(&self) -> bool {
        let cur = self.inner.hot.state.load(Ordering::Acquire);
        if cur & STOP != 0 {
            self.reject::<()>(RejectReason::SinkStopped);
            false
        } else if cur & FULL != 0 {
            self.drop_event::<()>(DropReason::ByteBudget);
            false
        } else if (cur & IDX_MASK) >= u64::from(self.inner.bounds.max_events) {
            self.drop_event::<()>(DropReason::Capacity);
            false
        } else {
            true
        }
    }

    #[cold]
    fn reject<T>(&self, r: RejectReason) -> Option<T> {
        self.inner.rejected[r as usize].fetch_add(1, Ordering::Relaxed);
        None
    }

    #[cold]
    fn drop_event<T>(&self, r: DropReason) -> Option<T> {
        self.inner.dropped[r as usize].fetch_add(1, Ordering::Relaxed);
        None
    }

    /// [`Self::reject`] for the bool-returning insert path: counts, returns `false`.
    #[cold]
    fn rejected(&self, r: RejectReason) -> bool {
        self.reject::<()>(r).is_some()
    }

    /// [`Self::drop_event`] for the bool-returning insert path: counts, returns `false`.
    #[cold]
    fn dropped(&self, r: DropReason) -> bool {
        self.drop_event::<()>(r).is_some()
    }

    /// Claims a slot and byte budget with one CAS (clock read inside the loop), then
    /// writes the slot. Fills `rec`'s `seq`, `span` (a start) and `elapsed_ns`; returns
    /// whether it was kept.
    #[inline(always)]
    fn insert(&self, rec: &mut Record) -> bool {
        let inner = &*self.inner;
        let max_events = u64::from(inner.bounds.max_events);
        let max_event_bytes = inner.bounds.max_event_bytes as usize;
        let max_total = u64::from(inner.bounds.max_total_bytes);
        // Line length with seq (and, for a start, span_id) = 0 and elapsed_ns = 0, each
        // one digit; inside the loop only the real digit counts are added, so the window
        // between load and CAS holds little more than the clock read.
        let id_fields = if rec.start { 2 } else { 1 };
        let base_len = line_len(rec, &inner.tools, &inner.domain);
        let mut cur = inner.hot.state.load(Ordering::Acquire);
        let (idx, claimed_len) = loop {
            if cur & STOP != 0 {
                return self.rejected(RejectReason::SinkStopped);
            }
            if cur & FULL != 0 {
                return self.dropped(DropReason::ByteBudget);
            }
            let idx = cur & IDX_MASK;
            if idx >= max_events {
                return self.dropped(DropReason::Capacity);
            }
            let now = inner.clock.elapsed_ns();
            if now < inner.hot.last_elapsed.load(Ordering::Acquire) {
                // A newer event may have been claimed between our load and our clock
                // read; then our reading is merely stale: retry with a fresh state.
                // With the state unchanged, every kept event read its clock before our
                // load, so a lower reading is a real regression of the time source.
                let again = inner.hot.state.load(Ordering::Acquire);
                if again != cur {
                    cur = again;
                    continue;
                }
                return self.rejected(RejectReason::ClockRegression);
            }
            let seq = idx + 1;
            let len = base_len + (digits(seq) - 1) * id_fields + (digits(now) - 1);
            if len > max_event_bytes {
                return self.dropped(DropReason::EventTooLarge);
            }
            let bytes = (cur >> BYTES_SHIFT) & BYTES_MASK;
            let new_bytes = bytes + len as u64 + 1;
            let next = if new_bytes > max_total {
                cur | FULL
            } else {
                (cur & (FULL | STOP)) | (new_bytes << BYTES_SHIFT) | (idx + 1)
            };
            match inner.hot.state.compare_exchange_weak(
                cur,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) if next & FULL != 0 => return self.dropped(DropReason::ByteBudget),
                Ok(_) => {
                    rec.seq = seq as u32;
                    if rec.start {
                        rec.span = rec.seq;
                    }
                    rec.elapsed_ns = now;
                    break (idx as usize, len);
                }
                Err(actual) => cur = actual,
            }
        };
        debug_assert_eq!(line_len(rec, &inner.tools, &inner.domain), claimed_len);
        inner
            .hot
            .last_elapsed
            .fetch_max(rec.elapsed_ns, Ordering::AcqRel);
        let slot = &inner.slots[idx];
        match slot.rec.try_lock() {
            Ok(mut guard) => *guard = *rec,
            Err(_) => return self.dropped(DropReason::SlotContention),
        }
        slot.ready.store(true, Ordering::Release);
        true
    }

    /// Stops the sink (every later offer is rejected at once as `sink_stopped`), waits briefly for
    /// inserts that had already claimed a slot, and returns the summary. With `cancelled = true`
    /// the capture is `partial` (reason `cancelled`). Open spans are NOT closed: they stay spans
    /// with unknown end (no end is invented; docs/artifacts.md "Timeline capture rules").
    /// Idempotent; a later `cancelled = true` still marks the cancel.
    ///
    /// Call it after the measured window; it may sleep up to 200 ms in the (never
    /// expected) case of a writer that died mid-insert.
    pub fn finalize(&self, cancelled: bool) -> CaptureSummary {
        let inner = &*self.inner;
        if cancelled {
            inner.cancelled.store(true, Ordering::Release);
        }
        let prev = inner.hot.state.fetch_or(STOP, Ordering::AcqRel);
        if prev & STOP == 0 {
            let _ = inner.end_elapsed_ns.compare_exchange(
                u64::MAX,
                inner.clock.elapsed_ns(),
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        let claimed = (prev & IDX_MASK) as usize;
        let deadline = Instant::now() + FINALIZE_WAIT;
        let unwritten = loop {
            let n = inner.slots[..claimed]
                .iter()
                .filter(|s| !s.ready.load(Ordering::Acquire))
                .count() as u64;
            if n == 0 || Instant::now() >= deadline {
                break n;
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        // Slot contention already counted its own loss; the remainder is unwritten.
        let contention = inner.dropped[DropReason::SlotContention as usize].load(Ordering::Acquire);
        inner.dropped[DropReason::Unwritten as usize]
            .store(unwritten.saturating_sub(contention), Ordering::Release);
        self.summary()
    }

    /// Whether [`finalize`](Self::finalize) has been called.
    pub fn is_stopped(&self) -> bool {
        self.inner.hot.state.load(Ordering::Acquire) & STOP != 0
    }

    /// The kept records, in `seq` order (only slots whose write completed).
    pub(crate) fn records(&self) -> Vec<Record> {
        let inner = &*self.inner;
        let claimed = (inner.hot.state.load(Ordering::Acquire) & IDX_MASK) as usize;
        inner.slots[..claimed.min(inner.slots.len())]
            .iter()
            .filter(|s| s.ready.load(Ordering::Acquire))
            .filter_map(|s| s.rec.try_lock().ok().map(|g| *g))
            .collect()
    }

    /// Counts and quality now (allocates; not for the hot path).
    pub fn summary(&self) -> CaptureSummary {
        let inner = &*self.inner;
        let state = inner.hot.state.load(Ordering::Acquire);
        let records = self.records();
        let starts = records.iter().filter(|r| r.start).count() as u64;
        let ends = records.len() as u64 - starts;
        let dropped = self.dropped_counts();
        let rejected = self.rejected_counts();
        let cancelled = inner.cancelled.load(Ordering::Acquire);
        let unclosed = starts.saturating_sub(ends);
        let mut reasons = Vec::new();
        let mut push = |cond: bool, r| {
            if cond {
                reasons.push(r);
            }
        };
        push(cancelled, QualityReason::Cancelled);
        push(dropped.capacity > 0, QualityReason::CapacityExceeded);
        push(dropped.byte_budget > 0, QualityReason::ByteBudgetExceeded);
        push(dropped.event_too_large > 0, QualityReason::EventTooLarge);
        push(
            dropped.slot_contention + dropped.unwritten > 0,
            QualityReason::EventsLost,
        );
        push(rejected.total() > 0, QualityReason::EventsRejected);
        push(unclosed > 0, QualityReason::UnclosedSpans);
        CaptureSummary {
            event_count: records.len() as u64,
            serialized_bytes: (state >> BYTES_SHIFT) & BYTES_MASK,
            dropped,
            rejected,
            unclosed_span_count: unclosed,
            cancelled,
            stopped: state & STOP != 0,
            quality: if reasons.is_empty() {
                Quality::Complete
            } else {
                Quality::Partial
            },
            quality_reasons: reasons,
        }
    }

    fn rejected_counts(&self) -> RejectedCounts {
        let c = |r: RejectReason| self.inner.rejected[r as usize].load(Ordering::Acquire);
        RejectedCounts {
            invalid_name: c(RejectReason::InvalidName),
            invalid_case_id: c(RejectReason::InvalidCaseId),
            invalid_request_id: c(RejectReason::InvalidRequestId),
            foreign_span: c(RejectReason::ForeignSpan),
            parent_not_open: c(RejectReason::ParentNotOpen),
            span_not_open: c(RejectReason::SpanNotOpen),
            clock_regression: c(RejectReason::ClockRegression),
            sink_stopped: c(RejectReason::SinkStopped),
        }
    }

    fn dropped_counts(&self) -> DroppedCounts {
        let c = |r: DropReason| self.inner.dropped[r as usize].load(Ordering::Acquire);
        DroppedCounts {
            capacity: c(DropReason::Capacity),
            byte_budget: c(DropReason::ByteBudget),
            event_too_large: c(DropReason::EventTooLarge),
            slot_contention: c(DropReason::SlotContention),
            unwritten: c(DropReason::Unwritten),
        }
    }

    /// The run id this sink was made for.
    pub fn run_id(&self) -> &str {
        &self.inner.run_id
    }

    /// This timeline's id (`tl-` + 16 random hex digits).
    pub fn timeline_id(&self) -> &str {
        &self.inner.timeline_id
    }

    /// The clock domain id of every event.
    pub fn clock_domain_id(&self) -> &str {
        &self.inner.domain
    }

    /// The bounds in force.
    pub fn bounds(&self) -> Bounds {
        self.inner.bounds
    }

    /// `elapsed_ns` at finalization (`None` before it).
    pub fn end_elapsed_ns(&self) -> Option<u64> {
        let v = self.inner.end_elapsed_ns.load(Ordering::Acquire);
        (v != u64::MAX).then_some(v)
    }

    /// Bytes of the preallocated slot array (the sink's fixed in-memory footprint).
    pub fn preallocated_bytes(&self) -> usize {
        self.inner.slots.len() * std::mem::size_of::<Slot>()
    }

    /// The JSON lines of the kept records, in `seq` order, each with its newline (allocates):
    /// the events as `events.jsonl` would hold them, for a caller that reads a capture
    /// without writing it (the runner's capture tests).
    pub fn event_lines(&self) -> Vec<Vec<u8>> {
        self.records().iter().map(|r| self.render_line(r)).collect()
    }

    /// The JSON line of a kept record, newline included (allocates).
    pub(crate) fn render_line(&self, rec: &Record) -> Vec<u8> {
        let inner = &*self.inner;
        let wall = inferscope_clock::unix_ns_to_rfc3339(
            inner
                .clock
                .reference_instant_unix_ns()
                .saturating_add(rec.elapsed_ns),
        );
        let mut line = Vec::with_capacity(512);
        emit(&mut line, rec, &inner.tools, &wall, &inner.domain);
        line.push(b'\n');
        line
    }
}

/// What the drivers hold: the real sink or one of the overhead command's negative
/// controls ([`super::controls`]). Object safe; use `Arc<dyn Sink>`.
pub trait Sink: Send + Sync {
    /// See [`TimelineSink::span_start`].
    fn span_start(
        &self,
        name: SpanName<'_>,
        parent: Option<SpanId>,
        ctx: SpanContext<'_>,
    ) -> Option<SpanId>;
    /// See [`TimelineSink::span_end`].
    fn span_end(&self, span: SpanId, end: SpanEnd<'_>) -> bool;
    /// The underlying timeline (for `finalize` and `persist`).
    fn timeline(&self) -> &TimelineSink;
    /// Which sink this is (`timeline`, or a negative control's name).
    fn kind(&self) -> SinkKind;
}

/// The kind of a [`Sink`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SinkKind {
    /// The real, non-blocking sink.
    Timeline,
    /// NEGATIVE CONTROL: blocks on every insert.
    BlockingControl,
    /// NEGATIVE CONTROL: writes and fsyncs every event.
    DiskWriteControl,
}

impl Sink for TimelineSink {
    #[inline]
    fn span_start(
        &self,
        name: SpanName<'_>,
        parent: Option<SpanId>,
        ctx: SpanContext<'_>,
    ) -> Option<SpanId> {
        TimelineSink::span_start(self, name, parent, ctx)
    }
    #[inline]
    fn span_end(&self, span: SpanId, end: SpanEnd<'_>) -> bool {
        TimelineSink::span_end(self, span, end)
    }
    fn timeline(&self) -> &TimelineSink {
        self
    }
    fn kind(&self) -> SinkKind {
        SinkKind::Timeline
    }
}
