//! The drivers' view of timeline capture: phase, request, fixture and harness spans
//! (docs/artifacts.md). With capture off every method is a no-op; with it on,
//! each call is one non-blocking, allocation-free insertion into the bounded sink
//! ([`crate::timeline::TimelineSink`]). Only validated ids and closed names are passed:
//! prompts, responses and tool payloads cannot reach the sink through this API.

use std::sync::Arc;
use std::sync::Mutex;

use crate::client::RequestRecord;
#[cfg(test)]
use crate::client::TokenSource;
use crate::timeline::{FailureCode, Phase, Sink, SpanContext, SpanEnd, SpanId, SpanName};

/// A cloneable handle on the run's capture (or nothing).
#[derive(Clone, Default)]
pub struct Capture {
    sink: Option<Arc<dyn Sink>>,
    /// Open request/fixture/harness spans, closed as `cancelled` on Ctrl-C.
    open: Arc<Mutex<Vec<SpanId>>>,
    /// The current phase span (parent of request and fixture spans).
    phase: Arc<Mutex<Option<SpanId>>>,
}

impl Capture {
    /// Capture off.
    pub fn off() -> Self {
        Self::default()
    }

    /// Capture into `sink`.
    pub fn on(sink: Arc<dyn Sink>) -> Self {
        Self {
            sink: Some(sink),
            ..Self::default()
        }
    }

    /// Whether capture is on.
    pub fn is_on(&self) -> bool {
        self.sink.is_some()
    }

    /// The sink, when on.
    pub fn sink(&self) -> Option<&Arc<dyn Sink>> {
        self.sink.as_ref()
    }

    /// Opens a phase span (closing the previous phase, if any, as completed).
    pub fn phase(&self, phase: Phase) {
        let Some(sink) = &self.sink else { return };
        let mut cur = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(prev) = cur.take() {
            sink.span_end(prev, SpanEnd::completed());
        }
        *cur = sink.span_start(SpanName::Phase(phase), None, SpanContext::default());
    }

    /// Closes the current phase span (completed, or cancelled).
    pub fn end_phase(&self, cancelled: bool) {
        let Some(sink) = &self.sink else { return };
        let mut cur = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(prev) = cur.take() {
            sink.span_end(
                prev,
                if cancelled {
                    SpanEnd::cancelled()
                } else {
                    SpanEnd::completed()
                },
            );
        }
    }

    fn parent(&self) -> Option<SpanId> {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn start(&self, name: SpanName<'_>, request_id: Option<&str>, case_id: &str) -> Option<SpanId> {
        let sink = self.sink.as_ref()?;
        let id = sink.span_start(
            name,
            self.parent(),
            SpanContext {
                request_id,
                case_id: Some(case_id),
                attempt: Some(1),
            },
        )?;
        self.open.lock().unwrap_or_else(|e| e.into_inner()).push(id);
        Some(id)
    }

    fn end(&self, span: Option<SpanId>, end: SpanEnd<'_>) {
        let (Some(sink), Some(span)) = (&self.sink, span) else {
            return;
        };
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = open.iter().position(|s| *s == span) {
            open.swap_remove(i);
            drop(open);
            sink.span_end(span, end);
        }
    }

    /// A `chat_completion` request span starts.
    pub fn request_start(&self, request_id: &str, case_id: &str) -> Option<SpanId> {
        self.start(SpanName::ChatCompletion, Some(request_id), case_id)
    }

    /// The request span ends with the record's status, tokens and failure code. A
    /// completion count the client estimated (the record's `completion_tokens_estimate`, no
    /// server usage — docs/measurement.md) goes to the event's `completion_tokens_estimate`, never
    /// `completion_tokens`.
    pub fn request_end(&self, span: Option<SpanId>, rec: &RequestRecord) {
        let end = if rec.is_success() {
            SpanEnd::completed()
        } else {
            SpanEnd::failed(rec.failure_code)
        };
        let end = match rec.completion_tokens_estimate {
            Some(e) if rec.completion_tokens.is_none() => {
                end.with_estimated_completion(rec.prompt_tokens, Some(e.tokens))
            }
            _ => end.with_tokens(rec.prompt_tokens, rec.completion_tokens),
        };
        self.end(span, end);
    }

    /// The request span ends `cancelled` (Ctrl-C while it was in flight).
    pub fn request_cancelled(&self, span: Option<SpanId>) {
        self.end(span, SpanEnd::cancelled());
    }

    /// A fixture-tool span starts (name must be a declared tool).
    pub fn fixture_start(&self, tool: &str, case_id: &str) -> Option<SpanId> {
        self.start(SpanName::Fixture(tool), None, case_id)
    }

    /// The fixture span ends.
    pub fn fixture_end(&self, span: Option<SpanId>, ok: bool) {
        self.end(
            span,
            if ok {
                SpanEnd::completed()
            } else {
                SpanEnd::failed(Some(FailureCode::ToolError))
            },
        );
    }

    /// One job's `grading` phase span starts, nested in the current phase (request
    /// execution: each job is graded as it ends) and named by the job's id as its case;
    /// [`Capture::grading_end`] closes it. A job id that is not a valid
    /// case id gives a span without one.
    pub fn grading_start(&self, job_id: &str) -> Option<SpanId> {
        let case = crate::timeline::ids::is_valid_case_id(job_id).then_some(job_id);
        let sink = self.sink.as_ref()?;
        let id = sink.span_start(
            SpanName::Phase(Phase::Grading),
            self.parent(),
            SpanContext {
                case_id: case,
                ..SpanContext::default()
            },
        )?;
        self.open.lock().unwrap_or_else(|e| e.into_inner()).push(id);
        Some(id)
    }

    /// The job's grading span ends.
    pub fn grading_end(&self, span: Option<SpanId>) {
        self.end(span, SpanEnd::completed());
    }

    /// An SWE harness span starts.
    pub fn harness_start(&self, case_id: &str) -> Option<SpanId> {
        self.start(SpanName::SweHarness, None, case_id)
    }

    /// The harness span ends.
    pub fn harness_end(&self, span: Option<SpanId>, ok: bool, timed_out: bool) {
        let end = if ok {
            SpanEnd::completed()
        } else if timed_out {
            SpanEnd::failed(Some(FailureCode::HarnessTimeout))
        } else {
            SpanEnd::failed(Some(FailureCode::HarnessFailed))
        };
        self.end(span, end);
    }

    /// Ctrl-C: every open request/fixture/harness span gets a `cancelled` end, then the
    /// phase is closed as cancelled.
    pub fn cancel_open_spans(&self) {
        let Some(sink) = &self.sink else { return };
        let open: Vec<SpanId> =
            std::mem::take(&mut *self.open.lock().unwrap_or_else(|e| e.into_inner()));
        for s in open {
            sink.span_end(s, SpanEnd::cancelled());
        }
        self.end_phase(true);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::event::validate_event;
    use crate::timeline::{ManualClock, SinkConfig, TimelineEvent, TimelineSink};

    /// The `request_end` event (parsed from its JSON line) of one request recorded with
    /// `source` and 2 completion tokens.
    fn request_end_event(source: TokenSource) -> TimelineEvent {
        let clock = Arc::new(ManualClock::new(1_700_000_000_000_000_000, "mono:test:1:2"));
        let sink = Arc::new(TimelineSink::new(clock.clone(), SinkConfig::new("run-1")).unwrap());
        let cap = Capture::on(sink.clone());
        cap.phase(Phase::RequestExecution);
        let span = cap.request_start("req-1", "agentic::lookup#0");
        clock.advance(161_000_000);
        let mut rec = RequestRecord::new("req-1", 0, 0, true);
        rec.prompt_tokens = Some(7);
        match source {
            TokenSource::Server => rec.completion_tokens = Some(2),
            TokenSource::ClientEstimate => {
                rec.completion_tokens_estimate = Some(crate::client::TokenEstimate {
                    tokens: 2,
                    method: crate::model::EstimateMethod::Utf8BytesDiv4,
                })
            }
        }
        rec.status = crate::client::RequestStatus::Success;
        cap.request_end(span, &rec);
        let e: TimelineEvent = sink
            .event_lines()
            .iter()
            .map(|line| serde_json::from_slice::<TimelineEvent>(line).unwrap())
            .find(|e| e.kind == crate::timeline::EventKind::RequestEnd)
            .expect("request_end kept");
        assert_eq!(validate_event(&e), Ok(()));
        e
    }

    #[test]
    fn request_without_usage_is_marked_estimated() {
        // C01/C11: the server sent no usage; the client counted 2 tokens.
        let e = request_end_event(TokenSource::ClientEstimate);
        assert_eq!(
            e.completion_tokens, None,
            "an estimate is not an observed count"
        );
        assert_eq!(e.completion_tokens_estimate, Some(2));
        assert_eq!(e.prompt_tokens, Some(7));
    }

    #[test]
    fn request_with_usage_is_not_marked_estimated() {
        let e = request_end_event(TokenSource::Server);
        assert_eq!(e.completion_tokens, Some(2));
        assert_eq!(e.completion_tokens_estimate, None);
    }
}
