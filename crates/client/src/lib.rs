//! OpenAI-compatible streaming HTTP client (docs/architecture.md `client`).
//!
//! - [`accumulate`]: the pure stream accumulator (typed chunk view, token events,
//!   TTFT/TTFO/ITL per choice, usage, in-band errors, tool-call assembly) — field cases C01,
//!   C02, C07, C08, C09, C11, C12.
//! - [`sse`]: the SSE framer (per-read arrival stamps, line-ending normalization, field
//!   parsing, the `max_event_bytes` cap) — C03, C04, C05, C30.
//! - [`http`]: the reqwest edge ([`Client::chat`], [`Client::list_models`]).
//! - [`record`]: [`RequestRecord`] and the closed vocabularies ([`FailureCode`], ...),
//!   re-exported from the report model ([`inferscope_model::request`]).
//! - [`connect`]: connections as a phase of their own: each one reqwest opens is timed, and
//!   the request that waited on it records `connect_ns`.
//! - [`tool_calls`]: tool-call delta assembly by index and id — C09.
//!
//! Semantics follow docs/field-cases.md "Definitions": times are
//! arrivals of the network read that completed an SSE event, on the run's monotonic clock.

pub mod accumulate;
pub mod connect;
mod h1;
pub mod http;
pub mod in_flight;
pub mod record;
pub mod sse;
pub mod tool_calls;

pub use accumulate::{Flow, LlamaTimings, RequestHead, StreamAccumulator, Usage};
pub use connect::{CONNECT_RETRANSMIT_NS, ConnectCounts};
pub use http::{ChatRequest, Client, ClientConfig, ClientError, WarmPool};
pub use in_flight::{InFlight, InFlightGuard};
pub use record::{
    AssistantOutput, ChoiceRecord, FailureCode, RecordWarning, RequestRecord, RequestStatus,
    TokenEstimate, TokenSource, ToolCall, choice_count_note, estimate, estimate_all,
    estimate_tokens, estimate_tokens_all, sanitize_error,
};
pub use sse::{
    DEFAULT_MAX_EVENT_BYTES, FrameError, ReadStamps, SseError, SseEvent, SseEventRef, SseFramer,
    frame_reads, replay_reads,
};
