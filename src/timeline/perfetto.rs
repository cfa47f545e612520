//! Chrome / Perfetto trace export (issue 4 §6; docs/artifacts.md "Exports"): the JSON object
//! format `{"traceEvents": [...], "displayTimeUnit": "ms"}` that ui.perfetto.dev and
//! chrome://tracing open.
//!
//! Layout (one process, the run):
//! - metadata (`ph: "M"`): `process_name`, and `thread_name` for the phase lane;
//! - phases as complete events (`ph: "X"`, `ts` + `dur`) on the phase lane (phases are
//!   sequential, so they nest correctly there);
//! - request, fixture and harness spans as async slices (`ph: "b"` / `"e"`, `cat`
//!   `request|fixture|harness`, `id` = the span id), because they overlap at
//!   concurrency > 1;
//! - a span with unknown end becomes an instant (`ph: "i"`) named `<name> (unknown end)`
//!   at its start, and an end whose start is missing an instant `<name> (start missing)`
//!   at its end: the missing boundary is never invented;
//! - counter tracks (`ph: "C"`) from [`CounterTrack`]s, one series per track.
//!
//! `ts`/`dur` are microseconds as floats (`elapsed_ns / 1000`). Every number is finite: a
//! counter point whose value is NaN or infinite is omitted. Pure function, no I/O.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::accounting::Quality;
use super::event::{SpanFamily, TimelineEvent};

const PID: u64 = 1;
const PHASE_TID: u64 = 1;
const SPAN_TID: u64 = 2;

/// One resource counter series (e.g. GPU power): a track name, its unit (`mW`, `bytes`,
/// `jiffies`, `%`…), and `(elapsed_ns, value)` points on the run's clock.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterTrack {
    /// Track name, e.g. `gpu0 power` (host/device kept in the name; never summed).
    pub name: String,
    /// Unit of the values.
    pub unit: String,
    /// `(elapsed_ns, value)`; non-finite values are omitted from the export.
    pub points: Vec<(u64, f64)>,
}

/// Trace-level facts shown in Perfetto's metadata (`otherData`) and the process name.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TraceMeta {
    /// Process name shown in the UI, e.g. `inferscope-bench run <run_id>`.
    pub process_name: String,
    /// The run id, or `None`.
    pub run_id: Option<String>,
    /// The clock domain of the timestamps, or `None`.
    pub clock_domain_id: Option<String>,
    /// Unix ns of the reference instant (`ts = 0`), or `None`.
    pub reference_instant_unix_ns: Option<u64>,
    /// Capture quality, or `None`.
    pub quality: Option<Quality>,
    /// Dropped events, or `None`.
    pub dropped_count: Option<u64>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn cat(f: SpanFamily) -> &'static str {
    match f {
        SpanFamily::Phase => "phase",
        SpanFamily::Request => "request",
        SpanFamily::Fixture => "fixture",
        SpanFamily::Harness => "harness",
    }
}

fn start_args(e: &TimelineEvent) -> Value {
    json!({
        "seq": e.seq,
        "span_id": e.span_id,
        "parent_span_id": e.parent_span_id,
        "case_id": e.case_id,
        "request_id": e.request_id,
        "attempt": e.attempt,
        "wall_time_utc": e.wall_time_utc,
    })
}

fn end_args(e: &TimelineEvent) -> Value {
    json!({
        "seq": e.seq,
        "status": e.status.map(|s| s.as_str()),
        "request_id": e.request_id,
        "prompt_tokens": e.prompt_tokens,
        "completion_tokens": e.completion_tokens,
        "completion_tokens_estimate": e.completion_tokens_estimate,
        "failure_code": e.failure_code.map(|c| c.as_str()),
    })
}

/// Builds the trace (see the module doc). `events` in `seq` order, as the reader returns
/// them.
pub fn perfetto_trace(
    events: &[TimelineEvent],
    counters: &[CounterTrack],
    meta: &TraceMeta,
) -> Value {
    let mut out: Vec<Value> = vec![
        json!({"ph": "M", "name": "process_name", "pid": PID, "tid": 0,
               "args": {"name": meta.process_name}}),
        json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": PHASE_TID,
               "args": {"name": "phases"}}),
        json!({"ph": "M", "name": "thread_name", "pid": PID, "tid": SPAN_TID,
               "args": {"name": "requests and tools"}}),
    ];
    // Index of each span's start and end within `events`.
    let mut starts: HashMap<u64, usize> = HashMap::new();
    let mut ends: HashMap<u64, usize> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        let map = if e.kind.is_start() {
            &mut starts
        } else {
            &mut ends
        };
        map.entry(e.span_id).or_insert(i);
    }
    let mut timed: Vec<(u64, Value)> = Vec::new();
    for e in events {
        let family = e.kind.family();
        let matched_end = starts
            .get(&e.span_id)
            .and_then(|_| ends.get(&e.span_id))
            .map(|&j| &events[j]);
        if e.kind.is_start() {
            match (family, matched_end) {
                (SpanFamily::Phase, Some(end)) => timed.push((
                    e.elapsed_ns,
                    json!({"ph": "X", "name": e.name, "cat": cat(family), "pid": PID,
                           "tid": PHASE_TID, "ts": us(e.elapsed_ns),
                           "dur": us(end.elapsed_ns.saturating_sub(e.elapsed_ns)),
                           "args": {"start": start_args(e), "end": end_args(end)}}),
                )),
                (_, Some(_)) => timed.push((
                    e.elapsed_ns,
                    json!({"ph": "b", "name": e.name, "cat": cat(family), "pid": PID,
                           "tid": SPAN_TID, "id": e.span_id, "ts": us(e.elapsed_ns),
                           "args": start_args(e)}),
                )),
                (_, None) => timed.push((
                    e.elapsed_ns,
                    json!({"ph": "i", "s": "p", "name": format!("{} (unknown end)", e.name),
                           "cat": cat(family), "pid": PID,
                           "tid": if family == SpanFamily::Phase { PHASE_TID } else { SPAN_TID },
                           "ts": us(e.elapsed_ns), "args": start_args(e)}),
                )),
            }
        } else if !starts.contains_key(&e.span_id) {
            timed.push((
                e.elapsed_ns,
                json!({"ph": "i", "s": "p", "name": format!("{} (start missing)", e.name),
                       "cat": cat(family), "pid": PID,
                       "tid": if family == SpanFamily::Phase { PHASE_TID } else { SPAN_TID },
                       "ts": us(e.elapsed_ns), "args": end_args(e)}),
            ));
        } else if family != SpanFamily::Phase
            && ends.get(&e.span_id).map(|&j| &events[j]) == Some(e)
        {
            timed.push((
                e.elapsed_ns,
                json!({"ph": "e", "name": e.name, "cat": cat(family), "pid": PID,
                       "tid": SPAN_TID, "id": e.span_id, "ts": us(e.elapsed_ns),
                       "args": end_args(e)}),
            ));
        }
    }
    for track in counters {
        let name = format!("{} ({})", track.name, track.unit);
        for &(t, v) in &track.points {
            if v.is_finite() {
                timed.push((
                    t,
                    json!({"ph": "C", "name": name, "pid": PID, "ts": us(t),
                           "args": {"value": v}}),
                ));
            }
        }
    }
    timed.sort_by_key(|(t, _)| *t);
    out.extend(timed.into_iter().map(|(_, v)| v));
    json!({
        "traceEvents": out,
        "displayTimeUnit": "ms",
        "otherData": {
            "generator": "inferscope-bench",
            "run_id": meta.run_id,
            "clock_domain_id": meta.clock_domain_id,
            "reference_instant_unix_ns": meta.reference_instant_unix_ns,
            "quality": meta.quality.map(|q| q.as_str()),
            "dropped_count": meta.dropped_count,
        },
    })
}
