//! Capture accounting: why events were rejected or dropped, the counts by reason, and
//! the resulting capture quality (docs/artifacts.md; manifest `dropped`, `rejected`,
//! `quality`, `quality_reasons`).

use serde::{Deserialize, Serialize};

/// Why an offered event was rejected as invalid (counted per reason; manifest
/// `rejected`). Source: docs/artifacts.md "Timeline capture rules".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RejectReason {
    /// A fixture name that is not a registered tool name.
    InvalidName,
    /// A case id failing its syntax.
    InvalidCaseId,
    /// A request id failing its syntax.
    InvalidRequestId,
    /// A span handle from another timeline.
    ForeignSpan,
    /// A parent span that has already ended.
    ParentNotOpen,
    /// An end for a span that has already ended.
    SpanNotOpen,
    /// `elapsed_ns` lower than the last kept event's.
    ClockRegression,
    /// Offered after [`super::TimelineSink::finalize`].
    SinkStopped,
}

impl RejectReason {
    /// All reasons, in manifest order.
    pub const ALL: [RejectReason; 8] = [
        RejectReason::InvalidName,
        RejectReason::InvalidCaseId,
        RejectReason::InvalidRequestId,
        RejectReason::ForeignSpan,
        RejectReason::ParentNotOpen,
        RejectReason::SpanNotOpen,
        RejectReason::ClockRegression,
        RejectReason::SinkStopped,
    ];
}

/// Why a valid event was not kept (counted per reason; manifest `dropped`). Source:
/// docs/artifacts.md "Timeline capture rules" (R006: a full sink drops the new event, counts
/// it and marks the capture partial).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The event bound (`max_events`) was reached.
    Capacity,
    /// The total byte budget (`max_total_bytes`) was reached.
    ByteBudget,
    /// The event alone exceeds `max_event_bytes` (impossible with the default bounds).
    EventTooLarge,
    /// A slot's `try_lock` failed (never expected; counted rather than waited for).
    SlotContention,
    /// A slot was claimed but not written when the sink was finalized.
    Unwritten,
}

impl DropReason {
    /// All reasons, in manifest order.
    pub const ALL: [DropReason; 5] = [
        DropReason::Capacity,
        DropReason::ByteBudget,
        DropReason::EventTooLarge,
        DropReason::SlotContention,
        DropReason::Unwritten,
    ];
}

/// Rejected-event counts by reason (manifest `rejected`; every key always present).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RejectedCounts {
    /// Count for [`RejectReason::InvalidName`].
    pub invalid_name: u64,
    /// Count for [`RejectReason::InvalidCaseId`].
    pub invalid_case_id: u64,
    /// Count for [`RejectReason::InvalidRequestId`].
    pub invalid_request_id: u64,
    /// Count for [`RejectReason::ForeignSpan`].
    pub foreign_span: u64,
    /// Count for [`RejectReason::ParentNotOpen`].
    pub parent_not_open: u64,
    /// Count for [`RejectReason::SpanNotOpen`].
    pub span_not_open: u64,
    /// Count for [`RejectReason::ClockRegression`].
    pub clock_regression: u64,
    /// Count for [`RejectReason::SinkStopped`].
    pub sink_stopped: u64,
}

impl RejectedCounts {
    /// Sum over reasons.
    pub fn total(&self) -> u64 {
        self.invalid_name
            + self.invalid_case_id
            + self.invalid_request_id
            + self.foreign_span
            + self.parent_not_open
            + self.span_not_open
            + self.clock_regression
            + self.sink_stopped
    }
    /// The count for one reason.
    pub fn get(&self, r: RejectReason) -> u64 {
        match r {
            RejectReason::InvalidName => self.invalid_name,
            RejectReason::InvalidCaseId => self.invalid_case_id,
            RejectReason::InvalidRequestId => self.invalid_request_id,
            RejectReason::ForeignSpan => self.foreign_span,
            RejectReason::ParentNotOpen => self.parent_not_open,
            RejectReason::SpanNotOpen => self.span_not_open,
            RejectReason::ClockRegression => self.clock_regression,
            RejectReason::SinkStopped => self.sink_stopped,
        }
    }
}

/// Dropped-event counts by reason (manifest `dropped`; every key always present).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DroppedCounts {
    /// Count for [`DropReason::Capacity`].
    pub capacity: u64,
    /// Count for [`DropReason::ByteBudget`].
    pub byte_budget: u64,
    /// Count for [`DropReason::EventTooLarge`].
    pub event_too_large: u64,
    /// Count for [`DropReason::SlotContention`].
    pub slot_contention: u64,
    /// Count for [`DropReason::Unwritten`].
    pub unwritten: u64,
}

impl DroppedCounts {
    /// Sum over reasons (the manifest's `dropped_count`).
    pub fn total(&self) -> u64 {
        self.capacity
            + self.byte_budget
            + self.event_too_large
            + self.slot_contention
            + self.unwritten
    }
    /// The count for one reason.
    pub fn get(&self, r: DropReason) -> u64 {
        match r {
            DropReason::Capacity => self.capacity,
            DropReason::ByteBudget => self.byte_budget,
            DropReason::EventTooLarge => self.event_too_large,
            DropReason::SlotContention => self.slot_contention,
            DropReason::Unwritten => self.unwritten,
        }
    }
}

/// Capture quality: the report model's [`Quality`] (`complete`, `partial`,
/// `unavailable`), shared by the manifest and `report.json`.
pub use inferscope_model::Quality;

/// The bounded set of reason codes behind a `partial` quality (manifest
/// `quality_reasons`, in this order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QualityReason {
    /// The run was cancelled (Ctrl-C); finalized with what existed.
    Cancelled,
    /// Events dropped at the event bound.
    CapacityExceeded,
    /// Events dropped at the byte budget.
    ByteBudgetExceeded,
    /// Events dropped for exceeding the per-event size bound.
    EventTooLarge,
    /// Events lost to slot contention or left unwritten at finalization.
    EventsLost,
    /// Events rejected by validation (any [`RejectReason`]).
    EventsRejected,
    /// Spans started and never ended (unknown end).
    UnclosedSpans,
}

impl QualityReason {
    /// The JSON spelling (the serde name, as in the manifest's `quality_reasons`).
    pub fn as_str(self) -> &'static str {
        match self {
            QualityReason::Cancelled => "cancelled",
            QualityReason::CapacityExceeded => "capacity_exceeded",
            QualityReason::ByteBudgetExceeded => "byte_budget_exceeded",
            QualityReason::EventTooLarge => "event_too_large",
            QualityReason::EventsLost => "events_lost",
            QualityReason::EventsRejected => "events_rejected",
            QualityReason::UnclosedSpans => "unclosed_spans",
        }
    }
}

/// Counts and quality of a capture at one moment (after [`super::TimelineSink::finalize`], the
/// final figures, apart from late offers rejected as `sink_stopped`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureSummary {
    /// Events kept (count).
    pub event_count: u64,
    /// Bytes claimed by kept events: the byte length `events.jsonl` will have.
    pub serialized_bytes: u64,
    /// Dropped events by reason.
    pub dropped: DroppedCounts,
    /// Rejected events by reason.
    pub rejected: RejectedCounts,
    /// Spans kept with a start and no end (unknown end).
    pub unclosed_span_count: u64,
    /// Whether [`TimelineSink::finalize`] was called with `cancelled = true`.
    pub cancelled: bool,
    /// Whether the sink is stopped.
    pub stopped: bool,
    /// `complete` when no reason below applies, else `partial`.
    pub quality: Quality,
    /// Reasons for `partial`, in [`QualityReason`] order, no duplicates.
    pub quality_reasons: Vec<QualityReason>,
}
