//! Chrome / Perfetto trace export (docs/artifacts.md "Exports"): the JSON
//! object format `{"traceEvents": [...], "displayTimeUnit": "ms"}` of the Trace Event
//! Format, which ui.perfetto.dev and chrome://tracing open.
//!
//! Tracks:
//! - process 1, the run: its phases as complete events (`ph: "X"`) on thread 1 (`phases`),
//!   the spans of no known trajectory as async slices (`ph: "b"` / `"e"`) on thread 2, and
//!   one counter track (`ph: "C"`) per resource lane of the dashboard ([`CounterTrack`]:
//!   power per device, `/proc` RSS and CPU, `/metrics` gauges and counters; never summed);
//! - one process per job (`job suite::job`, in report order), with one thread per
//!   trajectory (named by its id, in order). A trajectory's request, fixture and harness
//!   spans are complete events on its thread (its steps are sequential, so they nest), and
//!   each request with a first token holds a nested `ttft` slice from its send to that
//!   token (its TTFT, from the report's request record). A span overlapping the previous one on its thread (not expected)
//!   becomes an async slice of the job's process, so nesting is never broken;
//! - a span with unknown end becomes an instant (`ph: "i"`) named `<name> (unknown end)` at
//!   its start, and an end whose start is missing an instant `<name> (start missing)` at
//!   its end: the missing boundary is never invented.
//!
//! `ts`/`dur` are microseconds as floats (`elapsed_ns / 1000`). Every number is finite: a
//! counter point whose value is NaN or infinite is omitted. Pure function, no I/O.

use std::collections::HashMap;

use serde_json::{Value, json};

use super::accounting::Quality;
use super::event::{SpanFamily, TimelineEvent};

const RUN_PID: u64 = 1;
const PHASE_TID: u64 = 1;
const LOOSE_TID: u64 = 2;

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

/// Which thread each trajectory is drawn on, and each request's first token.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceTracks {
    /// Jobs in report order: `(job id, its trajectory ids in order)`; a job's process
    /// holds one thread per trajectory.
    pub jobs: Vec<(String, Vec<String>)>,
    /// `request_id` → `(send_ns, ttft_ns)` of the request's record: its send and the
    /// arrival of its first token (TTFT is the difference).
    pub ttft: HashMap<String, (u64, u64)>,
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

/// One end of an async slice: `ph` `b` at the span's start or `e` at `end` (its end
/// event), with that event's args.
fn async_event(ph: &str, start: &TimelineEvent, end: &TimelineEvent, track: Track) -> Value {
    let (at, args) = if ph == "b" {
        (start, start_args(start))
    } else {
        (end, end_args(end))
    };
    json!({"ph": ph, "name": start.name, "cat": cat(start.kind.family()), "pid": track.pid,
           "tid": track.tid, "id": start.span_id, "ts": us(at.elapsed_ns), "args": args})
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

/// The trajectory a case id belongs to: its part before the first `/`
/// (`suite::job#3/s128r0` → `suite::job#3`).
pub fn trajectory_of(case_id: &str) -> &str {
    case_id.split('/').next().unwrap_or(case_id)
}

/// Where one timed event goes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Track {
    pid: u64,
    tid: u64,
}

const LOOSE: Track = Track {
    pid: RUN_PID,
    tid: LOOSE_TID,
};

fn meta_event(name: &str, pid: u64, tid: u64, args: Value) -> Value {
    json!({"ph": "M", "name": name, "pid": pid, "tid": tid, "args": args})
}

/// The metadata events that name and order the run's process and threads (phases, loose
/// spans) and each job's process with a thread per trajectory, and each trajectory's track.
fn metadata_events<'a>(
    meta: &TraceMeta,
    tracks: &'a TraceTracks,
) -> (Vec<Value>, HashMap<&'a str, Track>) {
    let mut out: Vec<Value> = vec![
        meta_event(
            "process_name",
            RUN_PID,
            0,
            json!({"name": meta.process_name}),
        ),
        meta_event("process_sort_index", RUN_PID, 0, json!({"sort_index": 0})),
        meta_event("thread_name", RUN_PID, PHASE_TID, json!({"name": "phases"})),
        meta_event(
            "thread_name",
            RUN_PID,
            LOOSE_TID,
            json!({"name": "spans of no known trajectory"}),
        ),
    ];
    let mut thread_of: HashMap<&str, Track> = HashMap::new();
    for (j, (job, trajectories)) in tracks.jobs.iter().enumerate() {
        let pid = RUN_PID + 1 + j as u64;
        out.push(meta_event(
            "process_name",
            pid,
            0,
            json!({"name": format!("job {job}")}),
        ));
        out.push(meta_event(
            "process_sort_index",
            pid,
            0,
            json!({"sort_index": j + 1}),
        ));
        for (i, t) in trajectories.iter().enumerate() {
            let tid = 1 + i as u64;
            out.push(meta_event("thread_name", pid, tid, json!({"name": t})));
            out.push(meta_event(
                "thread_sort_index",
                pid,
                tid,
                json!({"sort_index": i}),
            ));
            thread_of.entry(t.as_str()).or_insert(Track { pid, tid });
        }
    }
    (out, thread_of)
}

/// Places closed spans on their threads: complete events, which nest only when no two
/// overlap partially (a span that starts inside the previous one and ends after it is an
/// async slice instead), with a request's TTFT slice inside it.
fn place_closed<'e>(
    mut closed: Vec<(Track, &'e TimelineEvent, &'e TimelineEvent)>,
    tracks: &TraceTracks,
    timed: &mut Vec<(u64, Value)>,
) {
    closed.sort_by_key(|(t, s, end)| (*t, s.elapsed_ns, std::cmp::Reverse(end.elapsed_ns)));
    let mut open: Vec<(Track, u64)> = Vec::new();
    for (track, s, end) in closed {
        open.retain(|(t, until)| *t == track && *until > s.elapsed_ns);
        let crosses = open
            .last()
            .is_some_and(|(_, until)| end.elapsed_ns > *until);
        if crosses {
            timed.push((s.elapsed_ns, async_event("b", s, end, track)));
            timed.push((end.elapsed_ns, async_event("e", s, end, track)));
            continue;
        }
        open.push((track, end.elapsed_ns));
        let family = s.kind.family();
        timed.push((
            s.elapsed_ns,
            json!({"ph": "X", "name": s.name, "cat": cat(family), "pid": track.pid,
                   "tid": track.tid, "ts": us(s.elapsed_ns),
                   "dur": us(end.elapsed_ns.saturating_sub(s.elapsed_ns)),
                   "args": {"start": start_args(s), "end": end_args(end)}}),
        ));
        // TTFT: from the request's send to its first token, inside the request's slice.
        let ttft = s
            .request_id
            .as_deref()
            .and_then(|r| tracks.ttft.get(r))
            .copied()
            .filter(|&(send, first)| {
                send >= s.elapsed_ns && send <= first && first <= end.elapsed_ns
            });
        if family == SpanFamily::Request
            && let Some((send, first)) = ttft
        {
            timed.push((
                send,
                json!({"ph": "X", "name": "ttft", "cat": "ttft", "pid": track.pid,
                       "tid": track.tid, "ts": us(send), "dur": us(first - send),
                       "args": {"ttft_ms": (first - send) as f64 / 1e6,
                                "request_id": s.request_id}}),
            ));
        }
    }
}

/// Builds the trace (see the module doc). `events` in `seq` order, as the reader returns
/// them.
pub fn perfetto_trace(
    events: &[TimelineEvent],
    counters: &[CounterTrack],
    meta: &TraceMeta,
    tracks: &TraceTracks,
) -> Value {
    let (mut out, thread_of) = metadata_events(meta, tracks);
    let track_of = |e: &TimelineEvent| -> Track {
        e.case_id
            .as_deref()
            .and_then(|c| thread_of.get(trajectory_of(c)).copied())
            .unwrap_or(LOOSE)
    };
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
    // Closed spans of trajectory threads, placed after the overlap check.
    let mut closed: Vec<(Track, &TimelineEvent, &TimelineEvent)> = Vec::new();
    for e in events {
        let family = e.kind.family();
        let matched_end = starts
            .get(&e.span_id)
            .and_then(|_| ends.get(&e.span_id))
            .map(|&j| &events[j]);
        if e.kind.is_start() {
            let track = if family == SpanFamily::Phase {
                Track {
                    pid: RUN_PID,
                    tid: PHASE_TID,
                }
            } else {
                track_of(e)
            };
            match matched_end {
                Some(end) if family == SpanFamily::Phase || track != LOOSE => {
                    closed.push((track, e, end));
                }
                Some(end) => {
                    timed.push((e.elapsed_ns, async_event("b", e, end, track)));
                    timed.push((end.elapsed_ns, async_event("e", e, end, track)));
                }
                None => timed.push((
                    e.elapsed_ns,
                    json!({"ph": "i", "s": "t", "name": format!("{} (unknown end)", e.name),
                           "cat": cat(family), "pid": track.pid, "tid": track.tid,
                           "ts": us(e.elapsed_ns), "args": start_args(e)}),
                )),
            }
        } else if !starts.contains_key(&e.span_id) {
            let track = if family == SpanFamily::Phase {
                Track {
                    pid: RUN_PID,
                    tid: PHASE_TID,
                }
            } else {
                LOOSE
            };
            timed.push((
                e.elapsed_ns,
                json!({"ph": "i", "s": "t", "name": format!("{} (start missing)", e.name),
                       "cat": cat(family), "pid": track.pid, "tid": track.tid,
                       "ts": us(e.elapsed_ns), "args": end_args(e)}),
            ));
        }
    }
    place_closed(closed, tracks, &mut timed);
    for track in counters {
        let name = format!("{} ({})", track.name, track.unit);
        for &(t, v) in &track.points {
            if v.is_finite() {
                timed.push((
                    t,
                    json!({"ph": "C", "name": name, "pid": RUN_PID, "ts": us(t),
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
