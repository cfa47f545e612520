//! The compact fixed-size record the sink keeps per event, and its one serializer.
//!
//! A record holds no heap pointer: names are enum codes or indices into the sink's tool
//! table, ids sit in fixed inline buffers. The same function ([`emit`]) both counts the
//! bytes of a record's JSON line (on the hot path, allocation-free) and writes it (at
//! persistence), so the size bound checked at insertion is exactly the size written.

use super::event::{EndStatus, EventKind, FailureCode, Phase, SpanFamily, TimelineEvent};
use super::event::{HARNESS_SPAN_NAME, REQUEST_SPAN_NAME};
use super::ids::InlineId;

/// Length of `wall_time_utc` for any `u64` unix-ns time: `YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ`
/// (years 1970..=2554 always have four digits).
pub(crate) const WALL_TIME_LEN: usize = 30;

/// The span name as a code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NameCode {
    Phase(Phase),
    ChatCompletion,
    /// Index into the sink's registered tool names.
    Fixture(u16),
    SweHarness,
}

impl NameCode {
    pub(crate) fn family(self) -> SpanFamily {
        match self {
            NameCode::Phase(_) => SpanFamily::Phase,
            NameCode::ChatCompletion => SpanFamily::Request,
            NameCode::Fixture(_) => SpanFamily::Fixture,
            NameCode::SweHarness => SpanFamily::Harness,
        }
    }

    pub(crate) fn as_str(self, tools: &[Box<str>]) -> &str {
        match self {
            NameCode::Phase(p) => p.as_str(),
            NameCode::ChatCompletion => REQUEST_SPAN_NAME,
            NameCode::Fixture(i) => tools.get(i as usize).map(|s| &**s).unwrap_or(""),
            NameCode::SweHarness => HARNESS_SPAN_NAME,
        }
    }
}

/// One kept event. `Copy`, fixed size (see `record_is_compact` test), no heap.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Record {
    pub(crate) seq: u32,
    pub(crate) span: u32,
    /// 0 = no parent.
    pub(crate) parent: u32,
    pub(crate) start: bool,
    pub(crate) name: NameCode,
    pub(crate) elapsed_ns: u64,
    pub(crate) status: Option<EndStatus>,
    pub(crate) failure: Option<FailureCode>,
    pub(crate) attempt: Option<u32>,
    pub(crate) prompt_tokens: Option<u64>,
    pub(crate) completion_tokens: Option<u64>,
    /// `completion_tokens` is the client's estimate, not server usage: it is emitted as
    /// `completion_tokens_estimate` and `completion_tokens` is `null`.
    pub(crate) completion_estimated: bool,
    pub(crate) request_id: InlineId,
    pub(crate) case_id: InlineId,
}

impl Record {
    pub(crate) const EMPTY: Record = Record {
        seq: 0,
        span: 0,
        parent: 0,
        start: true,
        name: NameCode::ChatCompletion,
        elapsed_ns: 0,
        status: None,
        failure: None,
        attempt: None,
        prompt_tokens: None,
        completion_tokens: None,
        completion_estimated: false,
        request_id: InlineId::NONE,
        case_id: InlineId::NONE,
    };

    pub(crate) fn kind(&self) -> EventKind {
        EventKind::of(self.name.family(), self.start)
    }

    /// Completion tokens from server usage, `None` when estimated or unknown.
    pub(crate) fn observed_completion(&self) -> Option<u64> {
        self.completion_tokens
            .filter(|_| !self.completion_estimated)
    }

    /// The client's completion-token estimate, `None` when usage was observed or unknown.
    pub(crate) fn estimated_completion(&self) -> Option<u64> {
        self.completion_tokens.filter(|_| self.completion_estimated)
    }

    /// The public event form (allocates; persistence and negative controls only).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn to_event(self, tools: &[Box<str>], wall: &str, domain: &str) -> TimelineEvent {
        TimelineEvent {
            seq: self.seq.into(),
            span_id: self.span.into(),
            parent_span_id: (self.parent != 0).then_some(self.parent.into()),
            kind: self.kind(),
            name: self.name.as_str(tools).to_string(),
            elapsed_ns: self.elapsed_ns,
            wall_time_utc: wall.to_string(),
            clock_domain_id: domain.to_string(),
            status: self.status,
            request_id: self.request_id.get().map(str::to_string),
            case_id: self.case_id.get().map(str::to_string),
            attempt: self.attempt,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.observed_completion(),
            completion_tokens_estimate: self.estimated_completion(),
            failure_code: self.failure,
        }
    }
}

/// Where [`emit`] puts a line: a byte counter (hot path) or a buffer (persistence).
pub(crate) trait LineOut {
    fn raw(&mut self, s: &str);
    fn num(&mut self, n: u64);
}

/// Counts bytes without writing them.
pub(crate) struct Count(pub(crate) usize);

impl LineOut for Count {
    #[inline]
    fn raw(&mut self, s: &str) {
        self.0 += s.len();
    }
    #[inline]
    fn num(&mut self, n: u64) {
        self.0 += digits(n);
    }
}

impl LineOut for Vec<u8> {
    fn raw(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
    fn num(&mut self, n: u64) {
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        let mut n = n;
        loop {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.extend_from_slice(&buf[i..]);
    }
}

/// Decimal digits of `n`.
#[inline]
pub(crate) fn digits(n: u64) -> usize {
    n.checked_ilog10().unwrap_or(0) as usize + 1
}

fn opt_num<O: LineOut>(o: &mut O, v: Option<u64>) {
    match v {
        Some(n) => o.num(n),
        None => o.raw("null"),
    }
}

fn opt_str<O: LineOut>(o: &mut O, v: Option<&str>) {
    match v {
        Some(s) => {
            o.raw("\"");
            o.raw(s);
            o.raw("\"");
        }
        None => o.raw("null"),
    }
}

/// Emits the JSON line of `r` (no trailing newline), field order of [`TimelineEvent`].
///
/// Every string emitted is a closed name or a validated id, none of which needs JSON
/// escaping; `wall` must be [`WALL_TIME_LEN`] bytes (the counter passes a placeholder).
#[inline]
pub(crate) fn emit<O: LineOut>(
    o: &mut O,
    r: &Record,
    tools: &[Box<str>],
    wall: &str,
    domain: &str,
) {
    o.raw("{\"seq\":");
    o.num(r.seq.into());
    o.raw(",\"span_id\":");
    o.num(r.span.into());
    o.raw(",\"parent_span_id\":");
    opt_num(o, (r.parent != 0).then_some(r.parent.into()));
    o.raw(",\"kind\":\"");
    o.raw(r.kind().as_str());
    o.raw("\",\"name\":\"");
    o.raw(r.name.as_str(tools));
    o.raw("\",\"elapsed_ns\":");
    o.num(r.elapsed_ns);
    o.raw(",\"wall_time_utc\":\"");
    o.raw(wall);
    o.raw("\",\"clock_domain_id\":\"");
    o.raw(domain);
    o.raw("\",\"status\":");
    opt_str(o, r.status.map(EndStatus::as_str));
    o.raw(",\"request_id\":");
    opt_str(o, r.request_id.get());
    o.raw(",\"case_id\":");
    opt_str(o, r.case_id.get());
    o.raw(",\"attempt\":");
    opt_num(o, r.attempt.map(u64::from));
    o.raw(",\"prompt_tokens\":");
    opt_num(o, r.prompt_tokens);
    o.raw(",\"completion_tokens\":");
    opt_num(o, r.observed_completion());
    o.raw(",\"completion_tokens_estimate\":");
    opt_num(o, r.estimated_completion());
    o.raw(",\"failure_code\":");
    opt_str(o, r.failure.map(FailureCode::as_str));
    o.raw("}");
}

/// A 30-byte stand-in for `wall_time_utc` when only the length matters.
pub(crate) const WALL_PLACEHOLDER: &str = "0000-00-00T00:00:00.000000000Z";

/// Bytes of `r`'s JSON line, newline excluded. Allocates nothing.
#[inline]
pub(crate) fn line_len(r: &Record, tools: &[Box<str>], domain: &str) -> usize {
    let mut c = Count(0);
    emit(&mut c, r, tools, WALL_PLACEHOLDER, domain);
    c.0
}

#[cfg(test)]
mod tests {
    use super::super::ids::{InlineId, is_valid_case_id, is_valid_id};
    use super::*;
    use proptest::prelude::*;

    fn tools() -> Vec<Box<str>> {
        vec!["read_file".into(), format!("t{}", "x".repeat(63)).into()]
    }

    fn name_strategy() -> impl Strategy<Value = NameCode> {
        prop_oneof![
            (0usize..5).prop_map(|i| NameCode::Phase(Phase::ALL[i])),
            Just(NameCode::ChatCompletion),
            (0u16..2).prop_map(NameCode::Fixture),
            Just(NameCode::SweHarness),
        ]
    }

    prop_compose! {
        fn record_strategy()(
            seq in 1u32.., span in 1u32.., parent in 0u32.., start in any::<bool>(),
            name in name_strategy(), elapsed_ns in any::<u64>(),
            status in prop::option::of(prop_oneof![
                Just(EndStatus::Completed), Just(EndStatus::Failed), Just(EndStatus::Cancelled)]),
            failure in prop::option::of((0usize..14).prop_map(|i| FailureCode::ALL[i])),
            attempt in prop::option::of(any::<u32>()),
            prompt_tokens in prop::option::of(any::<u64>()),
            completion_tokens in prop::option::of(any::<u64>()),
            completion_estimated in any::<bool>(),
            request_id in prop::option::of("[A-Za-z0-9_.:-]{1,128}"),
            case_id in prop::option::of("[A-Za-z0-9_.:#/-]{1,128}"),
        ) -> Record {
            Record {
                seq, span, parent, start, name, elapsed_ns, status, failure, attempt,
                prompt_tokens, completion_tokens, completion_estimated,
                request_id: request_id.map(|s| InlineId::new(&s, is_valid_id).unwrap())
                    .unwrap_or(InlineId::NONE),
                case_id: case_id.map(|s| InlineId::new(&s, is_valid_case_id).unwrap())
                    .unwrap_or(InlineId::NONE),
            }
        }
    }

    proptest! {
        /// The hand-written line is byte-identical to serde's serialization of the public
        /// event, and the counted length equals the written length.
        #[test]
        fn emitted_line_equals_serde_and_count(r in record_strategy(), unix in any::<u64>()) {
            let tools = tools();
            let wall = inferscope_clock::unix_ns_to_rfc3339(unix);
            prop_assert_eq!(wall.len(), WALL_TIME_LEN);
            let domain = "mono:host-1:42:1726000000000000000";
            let mut line = Vec::new();
            emit(&mut line, &r, &tools, &wall, domain);
            let serde_line = serde_json::to_vec(&r.to_event(&tools, &wall, domain)).unwrap();
            prop_assert_eq!(&line, &serde_line);
            prop_assert_eq!(line_len(&r, &tools, domain), line.len());
        }
    }

    #[test]
    fn largest_possible_record_fits_the_event_bound() {
        let tools = tools();
        let r = Record {
            seq: u32::MAX,
            span: u32::MAX,
            parent: u32::MAX,
            start: false,
            name: NameCode::Fixture(1),
            elapsed_ns: u64::MAX,
            status: Some(EndStatus::Cancelled),
            failure: Some(FailureCode::IncompleteStream),
            attempt: Some(u32::MAX),
            prompt_tokens: Some(u64::MAX),
            completion_tokens: Some(u64::MAX),
            completion_estimated: false,
            request_id: InlineId::new(&"r".repeat(128), is_valid_id).unwrap(),
            case_id: InlineId::new(&"c".repeat(128), is_valid_case_id).unwrap(),
        };
        let domain = "d".repeat(128);
        let n = line_len(&r, &tools, &domain);
        // By construction a record cannot exceed the 2 KiB bound.
        assert!(n <= super::super::bounds::MAX_EVENT_BYTES as usize, "{n}");
        assert!(n < 1024, "{n}");
    }

    #[test]
    fn record_is_compact() {
        assert!(
            std::mem::size_of::<Record>() <= 352,
            "{}",
            std::mem::size_of::<Record>()
        );
    }

    #[test]
    fn digits_counts() {
        assert_eq!(digits(0), 1);
        assert_eq!(digits(9), 1);
        assert_eq!(digits(10), 2);
        assert_eq!(digits(u64::MAX), 20);
    }
}
