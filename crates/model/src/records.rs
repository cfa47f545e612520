//! The compact per-request line of `requests.jsonl`: one line per
//! [`RequestRecord`], beside `report.json` in the run directory.
//!
//! Encoding (documented for users in `docs/artifacts.md`):
//! - every line is one JSON object; a key that is absent means the value is missing
//!   (`null` in the typed record), never 0;
//! - `s` is the send instant, integer ns on the run clock from the run's reference
//!   instant; every other instant is an integer ns offset from `s` (signed, exact), and
//!   `q` is `send − scheduled` (the schedule lag, ns, signed);
//! - `itl` is every inter-token gap in integer ns, exactly as the statistics use them;
//! - `id` is the request id with the job id interned: a request id that starts with its
//!   job's id is stored as `+` and the rest (`+#3/s128r0`), any other id is stored whole
//!   (`=` and the id);
//! - closed vocabularies (failure code, warnings, finish reason) keep their snake_case
//!   names; no response text is stored (it never reaches an artifact).
//!
//! The line codec is pure: [`encode_line`] and [`decode_line`] round-trip every field of a
//! [`RequestRecord`] except its in-memory `output`.

use serde::{Deserialize, Serialize};

use super::basis::TokenEstimate;
use super::request::{ChoiceRecord, FailureCode, RecordWarning, RequestRecord, RequestStatus};
use super::step::StopReason;

/// One unit (trajectory or request) of a load job, as `requests.jsonl` keeps it: what a
/// user needs per unit once `report.json` holds the job's summaries only. Its
/// requests are the job's request lines whose id starts with the unit's id (`#` written
/// `.t`, see `docs/artifacts.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitRecord {
    /// `suite::job#k` or `suite::job#pP.k`.
    pub id: String,
    /// The unit's number in its point.
    pub index: u32,
    /// Its point (index into `jobs[].sweep.points`).
    pub point: usize,
    /// Start, ns from the reference instant.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// Whether its grading checks passed (`None` without checks).
    pub graded_pass: Option<bool>,
    /// The shard that ran it (merged runs).
    pub shard: Option<u32>,
}

/// What every unit id of point `point` of load job `job_id` starts with: `suite::job#pP.`
/// in a sweep, `suite::job#` otherwise (the unit's number follows).
pub fn unit_id_prefix(job_id: &str, sweep: bool, point: usize) -> String {
    if sweep {
        format!("{job_id}#p{point}.")
    } else {
        format!("{job_id}#")
    }
}

/// A unit line: `u` (its index) first, so a reader tells it from a request line by its
/// first key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompactUnit {
    u: u32,
    j: usize,
    id: String,
    p: usize,
    s: u64,
    d: u64,
    sr: StopReason,
    #[serde(rename = "g", default, skip_serializing_if = "Option::is_none")]
    graded_pass: Option<bool>,
    #[serde(rename = "sh", default, skip_serializing_if = "Option::is_none")]
    shard: Option<u32>,
}

/// The first bytes of a unit line.
pub const UNIT_LINE_PREFIX: &[u8] = b"{\"u\":";

/// The unit line (no line end) of `u`, a unit of job `job` whose id is `job_id`.
pub fn encode_unit_line(job: usize, job_id: &str, u: &UnitRecord) -> Vec<u8> {
    let line = CompactUnit {
        u: u.index,
        j: job,
        id: intern(job_id, &u.id),
        p: u.point,
        s: u.start_ns,
        d: u.end_ns.saturating_sub(u.start_ns),
        sr: u.stop_reason,
        graded_pass: u.graded_pass,
        shard: u.shard,
    };
    serde_json::to_vec(&line).expect("a unit line always serializes")
}

/// Decodes a unit line against the header's job ids: the job index and the unit.
pub fn decode_unit_line(line: &[u8], jobs: &[String]) -> Result<(usize, UnitRecord), String> {
    let c: CompactUnit = parse_json(line)?;
    let job_id = job_of(c.j, jobs)?;
    let end_ns = c.s.checked_add(c.d).ok_or_else(|| {
        format!(
            "field `d`: duration {} runs past the end of the run clock",
            c.d
        )
    })?;
    Ok((
        c.j,
        UnitRecord {
            id: unintern(job_id, &c.id)?,
            index: c.u,
            point: c.p,
            start_ns: c.s,
            end_ns,
            stop_reason: c.sr,
            graded_pass: c.graded_pass,
            shard: c.shard,
        },
    ))
}

/// `+rest` for an id that starts with its job's id, else `=id`.
fn intern(job_id: &str, id: &str) -> String {
    match id.strip_prefix(job_id) {
        Some(rest) if !job_id.is_empty() => format!("+{rest}"),
        _ => format!("={id}"),
    }
}

/// The id [`intern`] stored.
fn unintern(job_id: &str, id: &str) -> Result<String, String> {
    if let Some(rest) = id.strip_prefix('+') {
        Ok(format!("{job_id}{rest}"))
    } else if let Some(whole) = id.strip_prefix('=') {
        Ok(whole.to_string())
    } else {
        Err("field `id`: must start with `+` (job id interned) or `=`".into())
    }
}

/// The job id of index `j` of the header.
fn job_of(j: usize, jobs: &[String]) -> Result<&str, String> {
    jobs.get(j).map(String::as_str).ok_or_else(|| {
        format!(
            "field `j`: job index {j} is out of range (the header lists {} jobs)",
            jobs.len()
        )
    })
}

/// Schema id of `requests.jsonl` (its header line's `schema`). v2 adds the unit lines of
/// load jobs ([`UnitRecord`], lines that start with `{"u":`); a v1 file (no unit lines) is
/// still read.
pub const REQUESTS_SCHEMA: &str = "inferscope-bench.requests/v2";

/// The earlier schema, read (never written): request lines only.
pub const REQUESTS_SCHEMA_V1: &str = "inferscope-bench.requests/v1";

/// Whether a reader of this version reads a file of `schema`.
pub fn is_readable_schema(schema: &str) -> bool {
    schema == REQUESTS_SCHEMA || schema == REQUESTS_SCHEMA_V1
}

/// The file name of the companion file in a run directory (the only name a reader opens,
/// whatever `report.json` says).
pub const REQUESTS_FILE: &str = "requests.jsonl";

/// The first line of `requests.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestsHeader {
    /// [`REQUESTS_SCHEMA`].
    pub schema: String,
    /// The run's id (the one in `report.json`).
    pub run_id: String,
    /// Job ids in `report.json` order: a line's `j` is an index into this list.
    pub jobs: Vec<String>,
    /// Unit of every instant and gap: `ns`.
    pub time_unit: String,
    /// What `s` counts from: `reference_instant` (the run's, `report.json`'s
    /// `reference_instant_unix_ns`).
    pub origin: String,
}

impl RequestsHeader {
    /// The header of a run with these job ids.
    pub fn new(run_id: &str, jobs: Vec<String>) -> Self {
        Self {
            schema: REQUESTS_SCHEMA.into(),
            run_id: run_id.into(),
            jobs,
            time_unit: "ns".into(),
            origin: "reference_instant".into(),
        }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_true(b: &bool) -> bool {
    *b
}

fn yes() -> bool {
    true
}

/// One choice of a line (`n > 1`), instants as offsets from the request's send.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompactChoice {
    #[serde(rename = "i")]
    index: u64,
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    ttft: Option<i64>,
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    ttfo: Option<i64>,
    #[serde(rename = "lt", default, skip_serializing_if = "Option::is_none")]
    last_token: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    itl: Vec<u64>,
    #[serde(rename = "te", default, skip_serializing_if = "is_zero")]
    token_events: u64,
    #[serde(rename = "fr", default, skip_serializing_if = "Option::is_none")]
    finish_reason: Option<String>,
    #[serde(rename = "tc", default, skip_serializing_if = "is_zero")]
    tool_calls: u64,
    #[serde(rename = "tb", default, skip_serializing_if = "Option::is_none")]
    text_bytes: Option<u64>,
}

/// One line of `requests.jsonl` (see the module docs for the keys' meaning).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CompactLine {
    j: usize,
    id: String,
    s: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    q: Option<i64>,
    #[serde(rename = "h", default, skip_serializing_if = "Option::is_none")]
    headers: Option<i64>,
    #[serde(rename = "b", default, skip_serializing_if = "Option::is_none")]
    first_byte: Option<i64>,
    #[serde(rename = "t", default, skip_serializing_if = "Option::is_none")]
    ttft: Option<i64>,
    #[serde(rename = "o", default, skip_serializing_if = "Option::is_none")]
    ttfo: Option<i64>,
    #[serde(rename = "lt", default, skip_serializing_if = "Option::is_none")]
    last_token: Option<i64>,
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    end: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    itl: Vec<u64>,
    #[serde(rename = "te", default, skip_serializing_if = "is_zero")]
    token_events: u64,
    #[serde(rename = "ch", default, skip_serializing_if = "is_zero")]
    chunks: u64,
    #[serde(rename = "pt", default, skip_serializing_if = "Option::is_none")]
    prompt_tokens: Option<u64>,
    #[serde(rename = "ct", default, skip_serializing_if = "Option::is_none")]
    completion_tokens: Option<u64>,
    #[serde(rename = "est", default, skip_serializing_if = "Option::is_none")]
    estimate: Option<TokenEstimate>,
    #[serde(rename = "tt", default, skip_serializing_if = "Option::is_none")]
    total_tokens: Option<u64>,
    #[serde(rename = "cached", default, skip_serializing_if = "Option::is_none")]
    cached_tokens: Option<u64>,
    #[serde(rename = "rt", default, skip_serializing_if = "Option::is_none")]
    reasoning_tokens: Option<u64>,
    #[serde(rename = "fr", default, skip_serializing_if = "Option::is_none")]
    finish_reason: Option<String>,
    ok: bool,
    #[serde(rename = "fc", default, skip_serializing_if = "Option::is_none")]
    failure_code: Option<FailureCode>,
    #[serde(rename = "hs", default, skip_serializing_if = "Option::is_none")]
    http_status: Option<u16>,
    #[serde(rename = "err", default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(rename = "w", default, skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<RecordWarning>,
    #[serde(rename = "tc", default, skip_serializing_if = "is_zero")]
    tool_calls: u64,
    #[serde(rename = "sm", default = "yes", skip_serializing_if = "is_true")]
    stream: bool,
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none")]
    choices_requested: Option<u32>,
    #[serde(rename = "cs", default, skip_serializing_if = "Vec::is_empty")]
    choices: Vec<CompactChoice>,
    #[serde(rename = "wu", default, skip_serializing_if = "std::ops::Not::not")]
    warmup: bool,
    #[serde(rename = "ota", default, skip_serializing_if = "Option::is_none")]
    output_tokens_asked: Option<u32>,
    #[serde(rename = "pta", default, skip_serializing_if = "Option::is_none")]
    prompt_tokens_asked: Option<u64>,
    /// A duration (ns), not an offset from `s`.
    #[serde(rename = "cn", default, skip_serializing_if = "Option::is_none")]
    connect_ns: Option<u64>,
}

/// `t − base` as a signed offset (exact for every instant of one run: both are below
/// `i64::MAX` ns, 292 years).
fn off(t: Option<u64>, base: u64) -> Option<i64> {
    t.map(|t| (t as i128 - base as i128) as i64)
}

/// The instant `base + d`; an offset before 0 is refused (`None`).
fn at(d: Option<i64>, base: u64) -> Result<Option<u64>, String> {
    match d {
        None => Ok(None),
        Some(d) => {
            let t = base as i128 + d as i128;
            u64::try_from(t).map(Some).map_err(|_| {
                if t < 0 {
                    format!("offset {d} lies before the reference instant")
                } else {
                    format!("offset {d} lies past the end of the run clock (u64 ns)")
                }
            })
        }
    }
}

/// The compact line (no line end) of `r`, a request of job `job` (index into the header's
/// `jobs`) whose id is `job_id`.
pub fn encode_line(job: usize, job_id: &str, r: &RequestRecord) -> Vec<u8> {
    let s = r.send_ns;
    let id = intern(job_id, &r.request_id);
    let line = CompactLine {
        j: job,
        id,
        s,
        q: (r.scheduled_ns != s).then(|| (s as i128 - r.scheduled_ns as i128) as i64),
        headers: off(r.headers_ns, s),
        first_byte: off(r.first_byte_ns, s),
        ttft: off(r.ttft_ns, s),
        ttfo: off(r.ttfo_ns, s),
        last_token: off(r.last_token_ns, s),
        end: off(r.end_ns, s),
        itl: r.itl_ns.clone(),
        token_events: r.token_event_count,
        chunks: r.chunk_count,
        prompt_tokens: r.prompt_tokens,
        completion_tokens: r.completion_tokens,
        estimate: r.completion_tokens_estimate,
        total_tokens: r.total_tokens,
        cached_tokens: r.cached_tokens,
        reasoning_tokens: r.reasoning_tokens,
        finish_reason: r.finish_reason.clone(),
        ok: r.status == RequestStatus::Success,
        failure_code: r.failure_code,
        http_status: r.http_status,
        error: r.error.clone(),
        warnings: r.warnings.clone(),
        tool_calls: r.tool_call_count,
        stream: r.stream,
        choices_requested: r.choices_requested,
        output_tokens_asked: r.output_tokens_asked,
        prompt_tokens_asked: r.prompt_tokens_asked,
        connect_ns: r.connect_ns,
        choices: r
            .choices
            .iter()
            .map(|c| CompactChoice {
                index: c.index,
                ttft: off(c.ttft_ns, s),
                ttfo: off(c.ttfo_ns, s),
                last_token: off(c.last_token_ns, s),
                itl: c.itl_ns.clone(),
                token_events: c.token_event_count,
                finish_reason: c.finish_reason.clone(),
                tool_calls: c.tool_call_count,
                text_bytes: c.text_bytes,
            })
            .collect(),
        warmup: r.warmup,
    };
    serde_json::to_vec(&line).expect("a compact line always serializes")
}

/// Parses one line into its compact shape. Errors give the column and the field's path
/// (`column 215: field `ok`: invalid type: …`), never the content.
fn parse_json<T: serde::de::DeserializeOwned>(line: &[u8]) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_slice(line);
    let describe = |e: serde_json::Error, path: Option<String>| {
        let text = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let msg = text.strip_suffix(&suffix).unwrap_or(&text);
        match path.filter(|p| p != ".") {
            Some(p) => format!("column {}: field `{p}`: {msg}", e.column()),
            None => format!("column {}: {msg}", e.column()),
        }
    };
    let c: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        describe(e.into_inner(), Some(path))
    })?;
    de.end().map_err(|e| describe(e, None))?;
    Ok(c)
}

/// Decodes one line (without its line end) against the header's job ids: the job index
/// and the record. Errors name the field (serde's message) and never quote the line.
pub fn decode_line(line: &[u8], jobs: &[String]) -> Result<(usize, RequestRecord), String> {
    let c: CompactLine = parse_json(line)?;
    let job_id = job_of(c.j, jobs)?;
    let request_id = unintern(job_id, &c.id)?;
    let s = c.s;
    let field =
        |name: &str, r: Result<Option<u64>, String>| r.map_err(|e| format!("field `{name}`: {e}"));
    let scheduled_ns = match c.q {
        None => s,
        // `q` is send minus scheduled; i64::MIN has no negation (a damaged line).
        Some(q) => {
            let back = q
                .checked_neg()
                .ok_or_else(|| format!("field `q`: offset {q} is out of range"))?;
            field("q", at(Some(back), s))?.expect("some")
        }
    };
    let mut choices = Vec::with_capacity(c.choices.len());
    for ch in c.choices {
        choices.push(ChoiceRecord {
            index: ch.index,
            ttft_ns: field("cs.t", at(ch.ttft, s))?,
            ttfo_ns: field("cs.o", at(ch.ttfo, s))?,
            last_token_ns: field("cs.lt", at(ch.last_token, s))?,
            itl_ns: ch.itl,
            token_event_count: ch.token_events,
            finish_reason: ch.finish_reason,
            tool_call_count: ch.tool_calls,
            text_bytes: ch.text_bytes,
            output: Default::default(),
        });
    }
    let mut r = RequestRecord::new(&request_id, scheduled_ns, s, c.stream);
    r.headers_ns = field("h", at(c.headers, s))?;
    r.first_byte_ns = field("b", at(c.first_byte, s))?;
    r.ttft_ns = field("t", at(c.ttft, s))?;
    r.ttfo_ns = field("o", at(c.ttfo, s))?;
    r.last_token_ns = field("lt", at(c.last_token, s))?;
    r.end_ns = field("e", at(c.end, s))?;
    r.itl_ns = c.itl;
    r.token_event_count = c.token_events;
    r.chunk_count = c.chunks;
    r.prompt_tokens = c.prompt_tokens;
    r.completion_tokens = c.completion_tokens;
    r.completion_tokens_estimate = c.estimate;
    r.total_tokens = c.total_tokens;
    r.cached_tokens = c.cached_tokens;
    r.reasoning_tokens = c.reasoning_tokens;
    r.finish_reason = c.finish_reason;
    r.status = if c.ok {
        RequestStatus::Success
    } else {
        RequestStatus::Failed
    };
    r.failure_code = c.failure_code;
    r.http_status = c.http_status;
    r.error = c.error;
    r.warnings = c.warnings;
    r.tool_call_count = c.tool_calls;
    r.choices_requested = c.choices_requested;
    r.choices = choices;
    r.warmup = c.warmup;
    r.output_tokens_asked = c.output_tokens_asked;
    r.prompt_tokens_asked = c.prompt_tokens_asked;
    r.connect_ns = c.connect_ns;
    Ok((c.j, r))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::basis::EstimateMethod;

    fn full() -> RequestRecord {
        let mut r = RequestRecord::new("s::j#3/s128r0", 1_000, 1_250, true);
        r.headers_ns = Some(2_000);
        r.first_byte_ns = Some(2_100);
        r.ttft_ns = Some(2_200);
        r.ttfo_ns = Some(2_300);
        r.last_token_ns = Some(9_000);
        r.end_ns = Some(9_100);
        r.itl_ns = vec![1, 22, 333_333_333, 0];
        r.token_event_count = 5;
        r.chunk_count = 6;
        r.prompt_tokens = Some(128);
        r.completion_tokens = None;
        r.completion_tokens_estimate = Some(TokenEstimate {
            tokens: 7,
            method: EstimateMethod::Utf8BytesDiv4,
        });
        r.total_tokens = Some(135);
        r.cached_tokens = Some(0);
        r.reasoning_tokens = Some(2);
        r.finish_reason = Some("length".into());
        r.status = RequestStatus::Failed;
        r.failure_code = Some(FailureCode::StreamError);
        r.http_status = Some(200);
        r.error = Some("boom".into());
        r.warnings = vec![
            RecordWarning::UsageAllZero,
            RecordWarning::NotStreamed,
            RecordWarning::ShortOutput,
            RecordWarning::ConnectRetransmit,
        ];
        r.tool_call_count = 1;
        r.stream = false;
        r.choices_requested = Some(2);
        r.choices = vec![ChoiceRecord {
            index: 1,
            ttft_ns: Some(2_500),
            ttfo_ns: None,
            last_token_ns: Some(8_000),
            itl_ns: vec![5, 6],
            token_event_count: 3,
            finish_reason: Some("stop".into()),
            tool_call_count: 0,
            text_bytes: Some(4),
            output: Default::default(),
        }];
        r.output_tokens_asked = Some(64);
        r.prompt_tokens_asked = Some(130);
        r.connect_ns = Some(1_003_000_000);
        r
    }

    #[test]
    fn every_field_round_trips_exactly() {
        let jobs = vec!["s::j".to_string()];
        for r in [full(), RequestRecord::new("other-id", 10, 5, true)] {
            let line = encode_line(0, "s::j", &r);
            let (j, back) = decode_line(&line, &jobs).unwrap();
            assert_eq!(j, 0);
            assert_eq!(back, r, "{}", String::from_utf8_lossy(&line));
        }
        let line = String::from_utf8(encode_line(0, "s::j", &full())).unwrap();
        assert!(line.contains("\"id\":\"+#3/s128r0\""), "{line}");
        assert!(line.contains("\"q\":250"), "{line}");
        assert!(line.contains("\"itl\":[1,22,333333333,0]"), "{line}");
        // Missing stays absent (null), a real 0 stays 0.
        assert!(line.contains("\"cached\":0"), "{line}");
        assert!(!line.contains("\"ct\""), "{line}");
        // The connect time is a duration, not an offset from `s`.
        assert!(line.contains("\"cn\":1003000000"), "{line}");
        let none = String::from_utf8(encode_line(0, "s::j", &RequestRecord::new("x", 1, 1, true)))
            .unwrap();
        assert!(!none.contains("\"cn\""), "{none}");
    }

    #[test]
    fn a_unit_line_round_trips_and_a_bad_one_names_its_field() {
        let jobs = vec!["s::j".to_string()];
        let u = UnitRecord {
            id: "s::j#p1.7".into(),
            index: 7,
            point: 1,
            start_ns: 1_000,
            end_ns: 5_500,
            stop_reason: StopReason::Completed,
            graded_pass: Some(false),
            shard: Some(2),
        };
        let line = encode_unit_line(0, "s::j", &u);
        assert!(line.starts_with(UNIT_LINE_PREFIX));
        assert_eq!(decode_unit_line(&line, &jobs).unwrap(), (0, u));
        let bad = br#"{"u":1,"j":0,"id":"+#1","p":0,"s":1,"d":2,"sr":"nope"}"#;
        let e = decode_unit_line(bad, &jobs).unwrap_err();
        assert!(e.contains("field `sr`"), "{e}");
        let past =
            br#"{"u":1,"j":0,"id":"+#1","p":0,"s":18446744073709551615,"d":2,"sr":"completed"}"#;
        let e = decode_unit_line(past, &jobs).unwrap_err();
        assert!(e.contains("field `d`"), "{e}");
    }

    #[test]
    fn a_bad_line_names_its_field() {
        let jobs = vec!["s::j".to_string()];
        let e = decode_line(br#"{"j":3,"id":"+x","s":1,"ok":true}"#, &jobs).unwrap_err();
        assert!(e.contains("field `j`"), "{e}");
        let e = decode_line(br#"{"j":0,"id":"x","s":1,"ok":true}"#, &jobs).unwrap_err();
        assert!(e.contains("field `id`"), "{e}");
        let e = decode_line(br#"{"j":0,"id":"+x","s":1,"ok":true,"t":-5}"#, &jobs).unwrap_err();
        assert!(e.contains("field `t`"), "{e}");
        let e = decode_line(br#"{"j":0,"id":"+x","s":1}"#, &jobs).unwrap_err();
        assert!(e.contains("`ok`"), "{e}");
        let e = decode_line(br#"{"j":0,"id":"+x","s":1,"ok":true,"zz":1}"#, &jobs).unwrap_err();
        assert!(e.contains("zz"), "{e}");
        // A wrong type names the field and its column on the line, not "line 1".
        let e = decode_line(br#"{"j":0,"id":"+x","s":1,"ok":"y"}"#, &jobs).unwrap_err();
        assert!(e.contains("field `ok`") && e.starts_with("column "), "{e}");
        assert!(!e.contains("line 1"), "{e}");
    }

    #[test]
    fn offsets_out_of_range_are_errors_not_panics() {
        let jobs = vec!["s::j".to_string()];
        let min = i64::MIN;
        let line = format!(r#"{{"j":0,"id":"+x","s":1,"q":{min},"ok":true}}"#);
        let e = decode_line(line.as_bytes(), &jobs).unwrap_err();
        assert!(e.contains("field `q`"), "{e}");
        let max = u64::MAX;
        let line = format!(r#"{{"j":0,"id":"+x","s":{max},"h":5,"ok":true}}"#);
        let e = decode_line(line.as_bytes(), &jobs).unwrap_err();
        assert!(e.contains("field `h`") && e.contains("past the end"), "{e}");
    }
}
