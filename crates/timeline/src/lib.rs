//! Timeline capture: the bounded event contract, the non-blocking in-memory sink, the
//! durable artifact and its validating reader, and the Perfetto export.
//!
//! Sources: docs/artifacts.md "Timeline capture rules", the requirement ids R001–R008 and
//! T001–T002 (docs/artifacts.md "Requirement ids").
//!
//! Lifecycle, as the lead wires it:
//! 1. before the measured window: [`TimelineSink::with_run_clock`] (preallocates), and
//!    [`proc_self_io`] for the "before" reading;
//! 2. during it: drivers call [`Sink::span_start`] / [`Sink::span_end`] (never blocks,
//!    allocates nothing, no I/O; losses are counted, the run goes on);
//! 3. after it: [`proc_self_io`] again, then [`TimelineSink::finalize`] (`cancelled =
//!    true` on Ctrl-C, after emitting `cancelled` ends for in-flight requests), then
//!    [`TimelineSink::persist`]; a [`PersistError`] is a capture diagnostic only;
//! 4. later: [`verify`] / [`read_timeline`] and [`perfetto_trace`].
//!
//! Nothing here accepts free text: names are closed enums or registered tool names, ids
//! are validated syntaxes ([`ids`]), failure codes a closed enum. No prompt, response,
//! tool argument or result can enter a timeline artifact.

pub mod accounting;
pub mod bounds;
pub mod controls;
pub mod event;
pub mod ids;
pub mod manifest;
pub mod perfetto;
pub mod persist;
pub mod reader;
mod record;
pub mod sink;
pub mod span;
pub mod time;
pub mod verify_report;

pub use accounting::{
    CaptureSummary, DropReason, DroppedCounts, Quality, QualityReason, RejectReason, RejectedCounts,
};
pub use bounds::Bounds;
pub use controls::{BLOCKING_SINK_STALL, BlockingSink, DiskWriteSink};
pub use event::{
    EndStatus, EventKind, FailureCode, HARNESS_SPAN_NAME, Phase, REQUEST_SPAN_NAME, SpanFamily,
    TimelineEvent,
};
pub use manifest::{
    IoCounters, SCHEMA, SCHEMA_V1, SchemaVersion, TimelineManifest, WindowIo, proc_self_io,
};
pub use perfetto::{CounterTrack, TraceMeta, TraceTracks, perfetto_trace, trajectory_of};
pub use persist::{ManifestInfo, PersistError, PersistReport};
pub use reader::{
    VerifiedTimeline, VerifyReport, VerifyStatus, read_timeline, verify, verify_at, verify_run,
};
pub use sink::{MAX_TOOLS, Sink, SinkConfig, SinkConfigError, SinkKind, TimelineSink};
pub use span::{SpanContext, SpanEnd, SpanId, SpanName};
pub use time::{ManualClock, TimeSource};
