//! The producer-side span API types: handles, names, context and end records.

use super::event::{EndStatus, FailureCode, Phase};
use super::record::NameCode;

/// A span handle: opaque, `Copy`, bound to the timeline (sink) that issued it.
/// [`SpanId::get`] is the `span_id` written to the artifact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanId {
    pub(crate) sink: u32,
    pub(crate) seq: u32,
    pub(crate) parent: u32,
    pub(crate) name: NameCode,
}

impl SpanId {
    /// The span's id in the artifact (the `seq` of its start event; positive).
    pub fn get(&self) -> u64 {
        self.seq.into()
    }
}

/// The name of a span to start; it also fixes the event kind (phase, request, fixture,
/// harness). Source: docs/artifacts.md event table, docs/artifacts.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanName<'a> {
    /// A run phase (`phase_start`/`phase_end`).
    Phase(Phase),
    /// A model request, named `chat_completion` (`request_start`/`request_end`).
    ChatCompletion,
    /// A fixture tool execution named by a tool registered in [`SinkConfig::tool_names`]
    /// (`fixture_start`/`fixture_end`); any other text is rejected (`invalid_name`).
    Fixture(&'a str),
    /// An opaque SWE harness run, named `swe_harness` (`harness_start`/`harness_end`).
    SweHarness,
}

/// Optional correlation fields of a start event (docs/artifacts.md). Each id is validated; an
/// invalid one rejects the event (counted), it is never truncated or kept as text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpanContext<'a> {
    /// `[A-Za-z0-9_.:-]{1,128}`.
    pub request_id: Option<&'a str>,
    /// `[A-Za-z0-9_.:#/-]{1,128}`, e.g. `agentic::lookup#0/step3`.
    pub case_id: Option<&'a str>,
    /// Attempt number (count).
    pub attempt: Option<u32>,
}

/// How a span ended. Built only through the constructors, so a `completed` end cannot
/// carry a failure code. Token counts are observed counts or `None` (never 0 for
/// unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanEnd<'a> {
    pub(crate) status: EndStatus,
    pub(crate) failure: Option<FailureCode>,
    pub(crate) prompt_tokens: Option<u64>,
    pub(crate) completion_tokens: Option<u64>,
    /// `completion_tokens` is the client's estimate (docs/measurement.md), not server usage.
    pub(crate) completion_estimated: bool,
    pub(crate) request_id: Option<&'a str>,
}

impl<'a> SpanEnd<'a> {
    fn new(status: EndStatus, failure: Option<FailureCode>) -> Self {
        Self {
            status,
            failure,
            prompt_tokens: None,
            completion_tokens: None,
            completion_estimated: false,
            request_id: None,
        }
    }
    /// `status = completed`, no failure code.
    pub fn completed() -> Self {
        Self::new(EndStatus::Completed, None)
    }
    /// `status = failed` with an optional code from the closed mapping.
    pub fn failed(code: Option<FailureCode>) -> Self {
        Self::new(EndStatus::Failed, code)
    }
    /// `status = cancelled`, `failure_code = cancelled`.
    pub fn cancelled() -> Self {
        Self::new(EndStatus::Cancelled, Some(FailureCode::Cancelled))
    }
    /// Observed prompt and completion token counts (from the response's own usage).
    pub fn with_tokens(mut self, prompt: Option<u64>, completion: Option<u64>) -> Self {
        self.prompt_tokens = prompt;
        self.completion_tokens = completion;
        self.completion_estimated = false;
        self
    }
    /// Observed prompt tokens and a client-estimated completion count (count of
    /// [`inferscope_client::estimate_tokens`], used when the server sent no usage — docs/measurement.md).
    /// The event carries it as `completion_tokens_estimate` with `completion_tokens` `null`.
    pub fn with_estimated_completion(mut self, prompt: Option<u64>, estimate: Option<u64>) -> Self {
        self.prompt_tokens = prompt;
        self.completion_tokens = estimate;
        self.completion_estimated = estimate.is_some();
        self
    }
    /// The request id learned at the end (e.g. the server's response id),
    /// `[A-Za-z0-9_.:-]{1,128}`.
    pub fn with_request_id(mut self, id: &'a str) -> Self {
        self.request_id = Some(id);
        self
    }
}
