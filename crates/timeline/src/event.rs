//! The event contract: one JSON line of `timeline/events.jsonl`
//! (docs/artifacts.md "timeline/manifest.json and timeline/events.jsonl"). Every name is from a
//! closed set or a validated id; no field can hold free text.

use serde::{Deserialize, Serialize};

use super::ids::{is_valid_case_id, is_valid_id, is_valid_tool_name};

/// Request span name (the one OpenAI-compatible call the client makes).
pub const REQUEST_SPAN_NAME: &str = "chat_completion";
/// Harness span name (an opaque SWE harness gets one enclosing span, docs/artifacts.md).
pub const HARNESS_SPAN_NAME: &str = "swe_harness";

/// One persisted timeline event (docs/artifacts.md event table). Field order is the serialized order.
///
/// - `seq`: positive, strictly increasing within a timeline; gaps only after losses.
/// - `span_id`: opaque positive id (the `seq` of the span's start event);
///   `parent_span_id`: a span of the same timeline, or `null`.
/// - `elapsed_ns`: nanoseconds from the run's reference instant (monotonic clock).
/// - `wall_time_utc`: RFC 3339 UTC with nanoseconds, derived as
///   `reference_instant_unix_ns + elapsed_ns` (never read from the wall clock per event).
/// - `status`: `null` on a start, `completed | failed | cancelled` on an end.
/// - `prompt_tokens`, `completion_tokens`: observed counts (server `usage`) or `null`,
///   never inferred.
/// - `completion_tokens_estimate`: the client's output-token estimate (count,
///   `ceil(bytes / 4)` of the whole output, [`inferscope_client::estimate_tokens`]) when the
///   server sent no usage (docs/figures.md "The figures", field case C11/C12), else `null`.
///   At most one of `completion_tokens` and `completion_tokens_estimate` is set.
///
/// Deserialization rejects unknown fields, negative numbers and non-integers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimelineEvent {
    /// Run-local sequence number (positive, strictly increasing).
    pub seq: u64,
    /// Opaque positive span id (the `seq` of the span's start).
    pub span_id: u64,
    /// Parent span in the same timeline, or `null`.
    pub parent_span_id: Option<u64>,
    /// Event kind (closed set).
    pub kind: EventKind,
    /// Span name: a phase, `chat_completion`, a tool name, or `swe_harness`.
    pub name: String,
    /// Nanoseconds from the reference instant (monotonic).
    pub elapsed_ns: u64,
    /// RFC 3339 UTC (ns) of `reference_instant_unix_ns + elapsed_ns`, for display.
    pub wall_time_utc: String,
    /// Clock domain of `elapsed_ns` (equals the manifest's).
    pub clock_domain_id: String,
    /// `null` on a start; the end status on an end.
    pub status: Option<EndStatus>,
    /// Validated request id, or `null`.
    pub request_id: Option<String>,
    /// Validated case id, or `null`.
    pub case_id: Option<String>,
    /// Attempt number (count), or `null`.
    pub attempt: Option<u32>,
    /// Observed prompt tokens (count) from the response usage, or `null`.
    pub prompt_tokens: Option<u64>,
    /// Observed completion tokens (count) from the response usage, or `null` (also when
    /// only a client estimate exists).
    pub completion_tokens: Option<u64>,
    /// Client-estimated completion tokens (count) when the server reported no usage, or
    /// `null`; never set together with `completion_tokens`. Added by schema v2 (a v1
    /// line is read through [`TimelineEventV1`], which refuses it); absent reads as `null`.
    #[serde(default)]
    pub completion_tokens_estimate: Option<u64>,
    /// Failure code from the closed mapping, or `null`.
    pub failure_code: Option<FailureCode>,
}

/// An event line of a `inferscope-bench.timeline/v1` file: the v2 fields less
/// `completion_tokens_estimate`, which v1 did not have (a v1 line carrying it is rejected
/// as an unknown field, as a v1 reader would). Read only; converted to [`TimelineEvent`]
/// with no estimate.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TimelineEventV1 {
    seq: u64,
    span_id: u64,
    parent_span_id: Option<u64>,
    kind: EventKind,
    name: String,
    elapsed_ns: u64,
    wall_time_utc: String,
    clock_domain_id: String,
    status: Option<EndStatus>,
    request_id: Option<String>,
    case_id: Option<String>,
    attempt: Option<u32>,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    failure_code: Option<FailureCode>,
}

impl From<TimelineEventV1> for TimelineEvent {
    fn from(e: TimelineEventV1) -> Self {
        Self {
            seq: e.seq,
            span_id: e.span_id,
            parent_span_id: e.parent_span_id,
            kind: e.kind,
            name: e.name,
            elapsed_ns: e.elapsed_ns,
            wall_time_utc: e.wall_time_utc,
            clock_domain_id: e.clock_domain_id,
            status: e.status,
            request_id: e.request_id,
            case_id: e.case_id,
            attempt: e.attempt,
            prompt_tokens: e.prompt_tokens,
            completion_tokens: e.completion_tokens,
            completion_tokens_estimate: None,
            failure_code: e.failure_code,
        }
    }
}

/// The closed set of event kinds (docs/artifacts.md event table; harness kinds for SWE jobs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// A run phase starts.
    PhaseStart,
    /// A run phase ends.
    PhaseEnd,
    /// A model request starts (send).
    RequestStart,
    /// A model request ends.
    RequestEnd,
    /// A fixture tool execution starts.
    FixtureStart,
    /// A fixture tool execution ends.
    FixtureEnd,
    /// An opaque SWE harness starts.
    HarnessStart,
    /// An opaque SWE harness ends.
    HarnessEnd,
}

/// What a span is: a run phase, a model request, a fixture tool execution or an
/// opaque harness. A start and its end share the family.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SpanFamily {
    /// Run phase spans.
    Phase,
    /// Model request spans.
    Request,
    /// Fixture tool spans.
    Fixture,
    /// SWE harness spans.
    Harness,
}

impl EventKind {
    /// The JSON spelling, e.g. `phase_start`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::PhaseStart => "phase_start",
            EventKind::PhaseEnd => "phase_end",
            EventKind::RequestStart => "request_start",
            EventKind::RequestEnd => "request_end",
            EventKind::FixtureStart => "fixture_start",
            EventKind::FixtureEnd => "fixture_end",
            EventKind::HarnessStart => "harness_start",
            EventKind::HarnessEnd => "harness_end",
        }
    }

    /// True for `*_start` kinds.
    pub fn is_start(self) -> bool {
        matches!(
            self,
            EventKind::PhaseStart
                | EventKind::RequestStart
                | EventKind::FixtureStart
                | EventKind::HarnessStart
        )
    }

    /// The span family of this kind.
    pub fn family(self) -> SpanFamily {
        match self {
            EventKind::PhaseStart | EventKind::PhaseEnd => SpanFamily::Phase,
            EventKind::RequestStart | EventKind::RequestEnd => SpanFamily::Request,
            EventKind::FixtureStart | EventKind::FixtureEnd => SpanFamily::Fixture,
            EventKind::HarnessStart | EventKind::HarnessEnd => SpanFamily::Harness,
        }
    }

    /// The kind of a family's start (`start = true`) or end event.
    pub fn of(family: SpanFamily, start: bool) -> Self {
        match (family, start) {
            (SpanFamily::Phase, true) => EventKind::PhaseStart,
            (SpanFamily::Phase, false) => EventKind::PhaseEnd,
            (SpanFamily::Request, true) => EventKind::RequestStart,
            (SpanFamily::Request, false) => EventKind::RequestEnd,
            (SpanFamily::Fixture, true) => EventKind::FixtureStart,
            (SpanFamily::Fixture, false) => EventKind::FixtureEnd,
            (SpanFamily::Harness, true) => EventKind::HarnessStart,
            (SpanFamily::Harness, false) => EventKind::HarnessEnd,
        }
    }
}

/// The closed set of run phases (docs/artifacts.md goal: "preparation, preflight, request execution,
/// grading, and finalization").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Suite loading, job expansion, fixture setup.
    Preparation,
    /// Endpoint reachable, model listed.
    Preflight,
    /// The measured workload.
    RequestExecution,
    /// Deterministic grading of results.
    Grading,
    /// Statistics and artifacts.
    Finalization,
}

impl Phase {
    /// All phases, in run order.
    pub const ALL: [Phase; 5] = [
        Phase::Preparation,
        Phase::Preflight,
        Phase::RequestExecution,
        Phase::Grading,
        Phase::Finalization,
    ];

    /// The span name, e.g. `request_execution`.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Preparation => "preparation",
            Phase::Preflight => "preflight",
            Phase::RequestExecution => "request_execution",
            Phase::Grading => "grading",
            Phase::Finalization => "finalization",
        }
    }

    /// The phase named `s`, if any.
    pub fn from_name(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == s)
    }
}

/// The status of an end event (docs/artifacts.md "Timeline capture rules").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndStatus {
    /// Finished normally.
    Completed,
    /// Finished with a failure.
    Failed,
    /// Stopped by cancellation (Ctrl-C).
    Cancelled,
}

impl EndStatus {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EndStatus::Completed => "completed",
            EndStatus::Failed => "failed",
            EndStatus::Cancelled => "cancelled",
        }
    }
}

/// The closed mapping of failure codes an end event may carry (a code, never exception text;
/// docs/artifacts.md "Timeline capture rules"): the report model's one [`FailureCode`] set,
/// the same for the client's records, the runner's steps and the timeline.
pub use inferscope_model::FailureCode;

/// Why one event breaks the per-event contract (structure only; sequence, clock and span
/// checks need the whole file and live in the reader).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventFault {
    /// `seq` or `span_id` is 0 (both are positive).
    ZeroId,
    /// A name outside the closed set of its kind (or, for fixtures, not a tool name).
    BadName,
    /// `status` null on an end, or non-null on a start.
    BadStatus,
    /// A start carries `failure_code` or token counts, an end carries both an observed
    /// and an estimated completion count, a completed end a failure code, or a cancelled
    /// end a code other than `cancelled`.
    BadEndFields,
    /// `request_id` or `case_id` fails its syntax.
    BadId,
    /// `parent_span_id` is 0 or equals `span_id`.
    BadParent,
}

impl std::fmt::Display for EventFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EventFault::ZeroId => "seq and span_id must be positive",
            EventFault::BadName => "name outside the closed set of its kind",
            EventFault::BadStatus => "status must be null on a start and set on an end",
            EventFault::BadEndFields => "failure_code/tokens inconsistent with kind and status",
            EventFault::BadId => "request_id or case_id fails its syntax",
            EventFault::BadParent => "parent_span_id must be positive and differ from span_id",
        })
    }
}

/// Checks one event against the per-event contract (pure). Source: docs/artifacts.md event table.
pub fn validate_event(e: &TimelineEvent) -> Result<(), EventFault> {
    if e.seq == 0 || e.span_id == 0 {
        return Err(EventFault::ZeroId);
    }
    if let Some(p) = e.parent_span_id
        && (p == 0 || p == e.span_id)
    {
        return Err(EventFault::BadParent);
    }
    let name_ok = match e.kind.family() {
        SpanFamily::Phase => Phase::from_name(&e.name).is_some(),
        SpanFamily::Request => e.name == REQUEST_SPAN_NAME,
        SpanFamily::Fixture => is_valid_tool_name(&e.name),
        SpanFamily::Harness => e.name == HARNESS_SPAN_NAME,
    };
    if !name_ok {
        return Err(EventFault::BadName);
    }
    if e.kind.is_start() {
        if e.status.is_some() {
            return Err(EventFault::BadStatus);
        }
        if e.failure_code.is_some()
            || e.prompt_tokens.is_some()
            || e.completion_tokens.is_some()
            || e.completion_tokens_estimate.is_some()
        {
            return Err(EventFault::BadEndFields);
        }
    } else {
        if e.completion_tokens.is_some() && e.completion_tokens_estimate.is_some() {
            return Err(EventFault::BadEndFields);
        }
        match (e.status, e.failure_code) {
            (None, _) => return Err(EventFault::BadStatus),
            (Some(EndStatus::Completed), Some(_)) => return Err(EventFault::BadEndFields),
            (Some(EndStatus::Cancelled), Some(c)) if c != FailureCode::Cancelled => {
                return Err(EventFault::BadEndFields);
            }
            _ => {}
        }
    }
    if e.request_id.as_deref().is_some_and(|s| !is_valid_id(s))
        || e.case_id.as_deref().is_some_and(|s| !is_valid_case_id(s))
    {
        return Err(EventFault::BadId);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start() -> TimelineEvent {
        TimelineEvent {
            seq: 1,
            span_id: 1,
            parent_span_id: None,
            kind: EventKind::PhaseStart,
            name: "preparation".into(),
            elapsed_ns: 5,
            wall_time_utc: "1970-01-01T00:00:00.000000005Z".into(),
            clock_domain_id: "d".into(),
            status: None,
            request_id: None,
            case_id: None,
            attempt: None,
            prompt_tokens: None,
            completion_tokens: None,
            completion_tokens_estimate: None,
            failure_code: None,
        }
    }

    #[test]
    fn estimated_completion_is_end_only_and_exclusive() {
        let mut e = start();
        e.kind = EventKind::RequestStart;
        e.name = REQUEST_SPAN_NAME.into();
        e.completion_tokens_estimate = Some(2);
        assert_eq!(validate_event(&e), Err(EventFault::BadEndFields));
        e.kind = EventKind::RequestEnd;
        e.status = Some(EndStatus::Completed);
        assert_eq!(validate_event(&e), Ok(()));
        e.completion_tokens = Some(2);
        assert_eq!(validate_event(&e), Err(EventFault::BadEndFields));
        e.completion_tokens_estimate = None;
        assert_eq!(validate_event(&e), Ok(()));
    }

    #[test]
    fn estimate_field_parses_and_unknown_fields_are_still_rejected() {
        let base = r#"{"seq":2,"span_id":1,"parent_span_id":null,"kind":"request_end","name":"chat_completion","elapsed_ns":9,"wall_time_utc":"1970-01-01T00:00:00.000000009Z","clock_domain_id":"d","status":"completed","request_id":null,"case_id":null,"attempt":null,"prompt_tokens":null,"completion_tokens":null,"completion_tokens_estimate":2,"failure_code":null}"#;
        let e: TimelineEvent = serde_json::from_str(base).unwrap();
        assert_eq!(e.completion_tokens, None);
        assert_eq!(e.completion_tokens_estimate, Some(2));
        assert_eq!(serde_json::to_string(&e).unwrap(), base);
        let old = base.replace(",\"completion_tokens_estimate\":2", "");
        let e: TimelineEvent = serde_json::from_str(&old).unwrap();
        assert_eq!(e.completion_tokens_estimate, None);
        let unknown = base.replace(
            "\"completion_tokens_estimate\":2",
            "\"completion_tokens_estimated\":true",
        );
        assert!(serde_json::from_str::<TimelineEvent>(&unknown).is_err());
    }

    #[test]
    fn closed_names_per_kind() {
        assert_eq!(validate_event(&start()), Ok(()));
        let mut e = start();
        e.name = "warmup".into();
        assert_eq!(validate_event(&e), Err(EventFault::BadName));
        e.kind = EventKind::RequestStart;
        assert_eq!(validate_event(&e), Err(EventFault::BadName));
        e.name = REQUEST_SPAN_NAME.into();
        assert_eq!(validate_event(&e), Ok(()));
        e.kind = EventKind::FixtureStart;
        e.name = "Read File".into();
        assert_eq!(validate_event(&e), Err(EventFault::BadName));
        e.name = "read_file".into();
        assert_eq!(validate_event(&e), Ok(()));
    }

    #[test]
    fn status_rules() {
        let mut e = start();
        e.status = Some(EndStatus::Completed);
        assert_eq!(validate_event(&e), Err(EventFault::BadStatus));
        e.kind = EventKind::PhaseEnd;
        assert_eq!(validate_event(&e), Ok(()));
        e.failure_code = Some(FailureCode::Timeout);
        assert_eq!(validate_event(&e), Err(EventFault::BadEndFields));
        e.status = Some(EndStatus::Failed);
        assert_eq!(validate_event(&e), Ok(()));
        e.status = Some(EndStatus::Cancelled);
        assert_eq!(validate_event(&e), Err(EventFault::BadEndFields));
        e.failure_code = Some(FailureCode::Cancelled);
        assert_eq!(validate_event(&e), Ok(()));
        e.status = None;
        assert_eq!(validate_event(&e), Err(EventFault::BadStatus));
    }

    #[test]
    fn failure_codes_spell_their_serde_names() {
        for c in FailureCode::ALL {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert_eq!(FailureCode::from_code(c.as_str()), Some(c));
        }
        assert_eq!(FailureCode::from_code("SECRET-MARKER-1"), None);
        for k in [
            EventKind::PhaseStart,
            EventKind::HarnessEnd,
            EventKind::FixtureEnd,
        ] {
            assert_eq!(
                serde_json::to_string(&k).unwrap(),
                format!("\"{}\"", k.as_str())
            );
            assert_eq!(EventKind::of(k.family(), k.is_start()), k);
        }
    }
}
