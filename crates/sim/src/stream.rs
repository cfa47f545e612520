//! SSE encoding of a planned completion in vLLM's chat-completions stream shape, and the
//! timed response body that releases it on schedule.
//!
//! Stream shape: a role-only first chunk (`{"role":"assistant","content":""}`) sent at
//! admission, before the first token (as many servers do; field case C01), then one chunk
//! per completion token, a finish chunk with an empty delta, then, with
//! `stream_options.include_usage`, a usage-only chunk with `choices: []`, then
//! `data: [DONE]`. When usage is requested every other chunk carries `"usage":null`
//! (OpenAI's behaviour). Events due at the same instant are written as one body frame, so
//! with zero delays the whole stream is one write and nothing sleeps.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::{Instant, Sleep};

use super::fault::Faults;
use super::generate::{Completion, FinishReason};
use super::request::RequestGuard;

/// Token usage of one response.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub cached_tokens: usize,
}

impl Usage {
    pub(crate) fn json(&self) -> String {
        format!(
            "{{\"prompt_tokens\":{},\"total_tokens\":{},\"completion_tokens\":{},\"prompt_tokens_details\":{{\"cached_tokens\":{}}}}}",
            self.prompt_tokens,
            self.prompt_tokens + self.completion_tokens,
            self.completion_tokens,
            self.cached_tokens
        )
    }
}

pub(crate) fn push_json_str(out: &mut Vec<u8>, s: &str) {
    // Writing into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// The `data: ` line shared by every chunk of one response.
pub(crate) struct ChunkEncoder {
    head: Vec<u8>,
    usage_null: bool,
}

impl ChunkEncoder {
    pub(crate) fn new(id: &str, created: u64, model: &str, usage_null: bool) -> Self {
        let mut head = Vec::with_capacity(128);
        head.extend_from_slice(b"data: {\"id\":");
        push_json_str(&mut head, id);
        head.extend_from_slice(b",\"object\":\"chat.completion.chunk\",\"created\":");
        head.extend_from_slice(created.to_string().as_bytes());
        head.extend_from_slice(b",\"model\":");
        push_json_str(&mut head, model);
        head.extend_from_slice(b",\"choices\":[");
        Self { head, usage_null }
    }

    fn choice(&self, out: &mut Vec<u8>, delta: &[u8], finish: Option<FinishReason>) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(b"{\"index\":0,\"delta\":");
        out.extend_from_slice(delta);
        out.extend_from_slice(b",\"logprobs\":null,\"finish_reason\":");
        match finish {
            Some(f) => {
                out.push(b'"');
                out.extend_from_slice(f.as_str().as_bytes());
                out.push(b'"');
            }
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b"}]");
        if self.usage_null {
            out.extend_from_slice(b",\"usage\":null");
        }
        out.extend_from_slice(b"}\n\n");
    }

    fn usage(&self, out: &mut Vec<u8>, usage: &Usage) {
        out.extend_from_slice(&self.head);
        out.extend_from_slice(b"],\"usage\":");
        out.extend_from_slice(usage.json().as_bytes());
        out.extend_from_slice(b"}\n\n");
    }
}

/// The mid-stream error event (field case C07, input A shape).
pub(crate) const ERROR_EVENT: &[u8] = b"data: {\"error\":{\"message\":\"inferscope-sim: injected error mid-stream\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}\n\n";
pub(crate) const DONE_EVENT: &[u8] = b"data: [DONE]\n\n";

/// Bytes due at one instant, with the bookkeeping to apply when they are released.
#[derive(Debug, Default)]
pub(crate) struct Segment {
    /// Due time, µs after admission.
    pub at_us: u64,
    pub bytes: Vec<u8>,
    /// Completion tokens carried.
    pub tokens: u64,
    /// Carries the first token (prefill ends).
    pub first_token: bool,
    /// Carries the finish chunk.
    pub finish: Option<FinishReason>,
    /// The request ends aborted after these bytes.
    pub abort: bool,
    /// Drop the connection after these bytes.
    pub disconnect: bool,
}

#[derive(Default)]
struct Segments(Vec<Segment>);

impl Segments {
    fn at(&mut self, at_us: u64) -> &mut Segment {
        if self.0.last().is_none_or(|s| s.at_us != at_us) {
            self.0.push(Segment {
                at_us,
                ..Segment::default()
            });
        }
        self.0.last_mut().expect("just pushed")
    }
}

/// The delta JSON of every completion token, in order.
pub(crate) fn token_deltas(c: &Completion) -> Vec<Vec<u8>> {
    match c {
        Completion::Text { pieces, .. } => pieces
            .iter()
            .map(|p| {
                let mut d = Vec::with_capacity(p.len() + 16);
                d.extend_from_slice(b"{\"content\":");
                push_json_str(&mut d, p);
                d.push(b'}');
                d
            })
            .collect(),
        Completion::ToolCall {
            id,
            name,
            fragments,
        } => {
            let mut out = Vec::with_capacity(1 + fragments.len());
            let mut first = Vec::new();
            first.extend_from_slice(b"{\"tool_calls\":[{\"index\":0,\"id\":");
            push_json_str(&mut first, id);
            first.extend_from_slice(b",\"type\":\"function\",\"function\":{\"name\":");
            push_json_str(&mut first, name);
            first.extend_from_slice(b",\"arguments\":\"\"}}]}");
            out.push(first);
            for f in fragments {
                let mut d = Vec::new();
                d.extend_from_slice(b"{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":");
                push_json_str(&mut d, f);
                d.extend_from_slice(b"}}]}");
                out.push(d);
            }
            out
        }
    }
}

/// Where a faulted response stops: after `max(1, n/2)` of its `n` tokens.
pub(crate) fn fault_cut(n: usize) -> usize {
    (n / 2).max(1).min(n)
}

/// Lays out a streamed response as timed segments.
///
/// `schedule[i]` is token `i`'s due time (µs after admission); `usage` is `Some` when the
/// usage chunk is to be sent.
pub(crate) fn build_stream(
    enc: &ChunkEncoder,
    completion: &Completion,
    schedule: &[u64],
    usage: Option<&Usage>,
    faults: &Faults,
) -> Vec<Segment> {
    let deltas = token_deltas(completion);
    let n = deltas.len();
    let mut segs = Segments::default();
    enc.choice(
        &mut segs.at(0).bytes,
        b"{\"role\":\"assistant\",\"content\":\"\"}",
        None,
    );
    let cut = (faults.disconnect || faults.error_mid_stream).then(|| fault_cut(n));
    let emit = cut.unwrap_or(n);
    for (i, d) in deltas.iter().take(emit).enumerate() {
        let seg = segs.at(schedule[i]);
        enc.choice(&mut seg.bytes, d, None);
        seg.tokens += 1;
        seg.first_token |= i == 0;
    }
    let last_at = schedule.get(emit.saturating_sub(1)).copied().unwrap_or(0);
    match cut {
        Some(k) => {
            let at = schedule.get(k).copied().unwrap_or(last_at);
            let seg = segs.at(at);
            seg.abort = true;
            if faults.disconnect {
                seg.disconnect = true;
            } else {
                seg.bytes.extend_from_slice(ERROR_EVENT);
                if !faults.no_done {
                    seg.bytes.extend_from_slice(DONE_EVENT);
                }
            }
        }
        None => {
            let seg = segs.at(last_at);
            enc.choice(&mut seg.bytes, b"{}", Some(completion.finish()));
            seg.finish = Some(completion.finish());
            if let Some(u) = usage {
                enc.usage(&mut seg.bytes, u);
            }
            if !faults.no_done {
                seg.bytes.extend_from_slice(DONE_EVENT);
            }
        }
    }
    segs.0
}

/// A response body that releases segments at their due times and keeps the request's
/// engine bookkeeping (gauges, counters, power) in step with what was sent.
pub(crate) struct TimedBody {
    segs: std::vec::IntoIter<Segment>,
    next: Option<Segment>,
    start: Instant,
    sleep: Option<Pin<Box<Sleep>>>,
    guard: RequestGuard,
    then_disconnect: bool,
    flush_yielded: bool,
    done: bool,
}

impl TimedBody {
    pub(crate) fn new(segs: Vec<Segment>, start: Instant, guard: RequestGuard) -> Self {
        Self {
            segs: segs.into_iter(),
            next: None,
            start,
            sleep: None,
            guard,
            then_disconnect: false,
            flush_yielded: false,
            done: false,
        }
    }
}

/// A simulator response body: a whole body, a timed SSE stream, or a body that sends its
/// bytes, lets the server flush them, then fails (the server drops the connection without
/// completing the message: an injected disconnect).
pub(crate) enum SimBody {
    Full(Option<Bytes>),
    Timed(Box<TimedBody>),
    Disconnecting { bytes: Option<Bytes>, flushed: bool },
}

impl SimBody {
    pub(crate) fn full(bytes: impl Into<Bytes>) -> Self {
        Self::Full(Some(bytes.into()))
    }

    pub(crate) fn empty() -> Self {
        Self::Full(None)
    }

    pub(crate) fn timed(body: TimedBody) -> Self {
        Self::Timed(Box::new(body))
    }

    pub(crate) fn disconnecting(bytes: Bytes) -> Self {
        Self::Disconnecting {
            bytes: Some(bytes),
            flushed: false,
        }
    }
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            Self::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Self::Timed(t) => Pin::new(t.as_mut())
                .poll_next(cx)
                .map(|o| o.map(|r| r.map(Frame::data))),
            Self::Disconnecting { bytes, flushed } => {
                if let Some(b) = bytes.take() {
                    return Poll::Ready(Some(Ok(Frame::data(b))));
                }
                if !*flushed {
                    // Pending once, so the server writes what was sent before failing.
                    *flushed = true;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Poll::Ready(Some(Err(disconnect_error())))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Self::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Full(b) => SizeHint::with_exact(b.as_ref().map_or(0, |b| b.len() as u64)),
            _ => SizeHint::default(),
        }
    }
}

pub(crate) fn disconnect_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::ConnectionAborted,
        "inferscope-sim: injected disconnect",
    )
}

impl Stream for TimedBody {
    type Item = Result<Bytes, io::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.then_disconnect {
            if !this.flush_yielded {
                // Return Pending once so the server flushes the head and the bytes already
                // yielded; the client then sees a cut stream, not a failed request.
                this.flush_yielded = true;
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            this.then_disconnect = false;
            this.done = true;
            return Poll::Ready(Some(Err(disconnect_error())));
        }
        if this.done {
            return Poll::Ready(None);
        }
        if this.next.is_none() {
            this.next = this.segs.next();
        }
        let Some(at_us) = this.next.as_ref().map(|s| s.at_us) else {
            this.done = true;
            // Normally already ended by the finish segment; otherwise counted as abort.
            this.guard.abort();
            return Poll::Ready(None);
        };
        if at_us > 0 {
            if this.sleep.is_none() {
                let deadline = this.start + Duration::from_micros(at_us);
                if Instant::now() < deadline {
                    this.sleep = Some(Box::pin(tokio::time::sleep_until(deadline)));
                }
            }
            if let Some(s) = this.sleep.as_mut() {
                ready!(s.as_mut().poll(cx));
                this.sleep = None;
            }
        }
        let seg = this.next.take().expect("checked above");
        if seg.first_token {
            this.guard.first_token();
        }
        if seg.tokens > 0 {
            this.guard.generated(seg.tokens);
        }
        if let Some(f) = seg.finish {
            this.guard.finish(f);
        }
        if seg.abort {
            this.guard.abort();
        }
        if seg.disconnect {
            this.then_disconnect = true;
            if seg.bytes.is_empty() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
        Poll::Ready(Some(Ok(Bytes::from(seg.bytes))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(n: usize) -> Completion {
        Completion::Text {
            pieces: (0..n).map(|i| format!(" w{i}")).collect(),
            finish: FinishReason::Stop,
        }
    }

    fn events(segs: &[Segment]) -> Vec<String> {
        let all: Vec<u8> = segs.iter().flat_map(|s| s.bytes.clone()).collect();
        String::from_utf8(all)
            .unwrap()
            .split("\n\n")
            .filter(|e| !e.is_empty())
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn zero_delay_is_one_segment_with_full_shape() {
        let enc = ChunkEncoder::new("id1", 7, "m", true);
        let usage = Usage {
            prompt_tokens: 10,
            completion_tokens: 3,
            cached_tokens: 0,
        };
        let segs = build_stream(&enc, &text(3), &[0, 0, 0], Some(&usage), &Faults::default());
        assert_eq!(segs.len(), 1);
        assert!(segs[0].first_token && segs[0].tokens == 3);
        let ev = events(&segs);
        assert_eq!(ev.len(), 1 + 3 + 1 + 1 + 1);
        assert_eq!(
            ev[0],
            "data: {\"id\":\"id1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\"usage\":null}"
        );
        assert!(ev[4].contains("\"delta\":{},\"logprobs\":null,\"finish_reason\":\"stop\""));
        assert_eq!(
            ev[5],
            "data: {\"id\":\"id1\",\"object\":\"chat.completion.chunk\",\"created\":7,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"total_tokens\":13,\"completion_tokens\":3,\"prompt_tokens_details\":{\"cached_tokens\":0}}}"
        );
        assert_eq!(ev[6], "data: [DONE]");
        for e in &ev[..6] {
            let v: serde_json::Value =
                serde_json::from_str(e.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(v["id"], "id1");
        }
    }

    #[test]
    fn timed_segments_follow_schedule() {
        let enc = ChunkEncoder::new("i", 0, "m", false);
        let segs = build_stream(&enc, &text(3), &[100, 200, 300], None, &Faults::default());
        let at: Vec<u64> = segs.iter().map(|s| s.at_us).collect();
        assert_eq!(at, vec![0, 100, 200, 300]);
        assert!(segs[1].first_token);
        assert_eq!(segs[3].finish, Some(FinishReason::Stop));
        assert!(!events(&segs).iter().any(|e| e.contains("usage")));
    }

    #[test]
    fn faults_shape_the_stream() {
        let enc = ChunkEncoder::new("i", 0, "m", false);
        let sched = [10, 20, 30, 40];
        let err = build_stream(
            &enc,
            &text(4),
            &sched,
            None,
            &Faults {
                error_mid_stream: true,
                ..Faults::default()
            },
        );
        let ev = events(&err);
        assert_eq!(ev.len(), 1 + 2 + 2);
        assert!(ev[3].starts_with("data: {\"error\":"));
        assert_eq!(ev[4], "data: [DONE]");
        assert_eq!(err.last().unwrap().at_us, 30);
        let disc = build_stream(
            &enc,
            &text(4),
            &sched,
            None,
            &Faults {
                disconnect: true,
                ..Faults::default()
            },
        );
        assert!(disc.last().unwrap().disconnect && disc.last().unwrap().bytes.is_empty());
        let no_done = build_stream(
            &enc,
            &text(2),
            &[0, 0],
            None,
            &Faults {
                no_done: true,
                ..Faults::default()
            },
        );
        assert!(!events(&no_done).iter().any(|e| e.contains("[DONE]")));
    }

    #[test]
    fn tool_call_deltas() {
        let c = Completion::ToolCall {
            id: "call_0".into(),
            name: "f".into(),
            fragments: vec!["{\"a\"".into(), ":1}".into()],
        };
        let d: Vec<String> = token_deltas(&c)
            .into_iter()
            .map(|b| String::from_utf8(b).unwrap())
            .collect();
        assert_eq!(
            d[0],
            r#"{"tool_calls":[{"index":0,"id":"call_0","type":"function","function":{"name":"f","arguments":""}}]}"#
        );
        assert_eq!(
            d[1],
            r#"{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}"#
        );
        assert_eq!(d.len(), 3);
    }
}
