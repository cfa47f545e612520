//! What a load job keeps of its units while it runs: every finished unit's
//! records go to `requests.jsonl` as the unit ends, and only compact figures stay in
//! memory.
//!
//! Each unit's task hands its finished [`TrajectoryRecord`] (moved, not copied) to the job's
//! unit writer through a bounded channel: the task awaits a free slot, so a slow disk slows
//! the closed loop's next start but never blocks a runtime worker (the writer is its own
//! thread) and never delays the stamping of a stream in flight. The writer thread encodes
//! the unit's request lines and its unit line into the run's [`RecordsSink`], emits the
//! unit's `StepFinished` events, and folds the unit into [`LoadUnits`]: its requests'
//! [`CompactFigureSet`] entries (integer ns, `u32` ITL gaps), the warm-up candidates of its
//! point (a bounded heap of `warmup` entries), failure codes, stop reasons, grading counts.
//! The record itself is then dropped. What [`LoadUnits`] holds per request is
//! [`RETAINED_BYTES_PER_REQUEST`] plus 4 bytes a gap; per unit, nothing (the executor's
//! own entry of [`super::exec::UnitDone`] aside).

use std::collections::{BTreeMap, BinaryHeap};
use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::client::RequestRecord;
use crate::events::{EventSink, RunEvent};
use crate::model::FailureCode;
use crate::model::compact::CompactFigureSet;
use crate::model::records::UnitRecord;
use crate::model::streaming::StreamingStats;
use crate::records::RecordsWriter;
use crate::steps::{StepStatus, StopReason, TrajectoryRecord};
use inferscope_report::curve::{GoodputCriteria, meets_row};
pub use inferscope_report::curve::{StreamedPoint, StreamedUnits};

/// Bytes [`LoadUnits`] keeps per request besides its ITL gaps (4 bytes each): the compact
/// figures and the warm-up flag.
pub const RETAINED_BYTES_PER_REQUEST: usize =
    std::mem::size_of::<crate::model::compact::CompactFigures>() + 1;

/// The run's `requests.jsonl`, open from the run's start: load units append as they end,
/// the sequential jobs' records are appended when the report is written. The first write
/// error is kept and fails the artifacts (the file would miss records).
#[derive(Clone, Default)]
pub struct RecordsSink {
    inner: Arc<Mutex<SinkState>>,
}

#[derive(Default)]
struct SinkState {
    writer: Option<RecordsWriter>,
    error: Option<String>,
    /// Lines offered while no file was open (a session not started by `run`).
    dropped: u64,
}

impl std::fmt::Debug for RecordsSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordsSink").finish_non_exhaustive()
    }
}

impl RecordsSink {
    /// Creates `run_dir` (and parents) and `run_dir/requests.jsonl` with the header of a run
    /// with these job ids, in report order. An error is kept (the run goes on; writing the
    /// artifacts then fails with it).
    pub fn create(run_dir: &Path, run_id: &str, jobs: Vec<String>) -> Self {
        let made = std::fs::create_dir_all(run_dir)
            .and_then(|()| RecordsWriter::create(run_dir, run_id, jobs));
        let state = match made {
            Ok(w) => SinkState {
                writer: Some(w),
                ..SinkState::default()
            },
            Err(e) => SinkState {
                error: Some(format!("{}: {e}", run_dir.join("requests.jsonl").display())),
                ..SinkState::default()
            },
        };
        Self {
            inner: Arc::new(Mutex::new(state)),
        }
    }

    fn with(&self, f: impl FnOnce(&mut RecordsWriter) -> std::io::Result<()>) {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if s.error.is_some() {
            return;
        }
        match s.writer.as_mut() {
            Some(w) => {
                if let Err(e) = f(w) {
                    s.error = Some(format!("{}: {e}", w.path().display()));
                }
            }
            None => s.dropped += 1,
        }
    }

    /// Takes the writer to finish the file: `Err` with the first write error.
    pub fn take(&self) -> Result<Option<RecordsWriter>, String> {
        let mut s = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        match s.error.take() {
            Some(e) => Err(e),
            None if s.writer.is_none() && s.dropped > 0 => Err(format!(
                "{} per-request lines had no requests.jsonl to go to (no run directory was \
                 opened)",
                s.dropped
            )),
            None => Ok(s.writer.take()),
        }
    }
}

/// What a load job keeps of all its units (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct LoadUnits {
    /// Every request's compact figures, point by point.
    pub figures: CompactFigureSet,
    /// Each point's range of `figures` (in the order of the job's points).
    pub point_requests: Vec<Range<usize>>,
    /// `warm[i]`: request `i` of `figures` is a warm-up request (left out of statistics).
    pub warm: Vec<bool>,
    /// The warm-up requests' ids, point by point (each point's by scheduled, then send time).
    pub warmup_ids: Vec<String>,
    /// Units that ended.
    pub units: u64,
    /// Per point: a unit was cut short (cancelled, or a step cancelled).
    pub point_cut_short: Vec<bool>,
    /// Per point: the earliest send of a measured (not warm-up) request, ns: where the
    /// point's measured window starts ([`crate::load::PointRecord::measured_window_ns`]).
    pub point_measured_start_ns: Vec<Option<u64>>,
    /// Units that did not finish, by stop reason: count and the first one's id.
    pub unfinished: BTreeMap<&'static str, (u64, String)>,
    /// Failed requests by failure code.
    pub failure_codes: BTreeMap<FailureCode, u64>,
    /// Of those, the warm-up requests' (in `failure_codes` too; left out of statistics).
    pub warmup_failures: BTreeMap<FailureCode, u64>,
    /// Units graded, and those whose checks all passed.
    pub graded: (u64, u64),
    /// The earliest send of any request, ns.
    pub first_send_ns: Option<u64>,
    /// Requests seen.
    pub records: u64,
    /// The records that carry a choice-count warning (slimmed: no gaps), for the job's note.
    pub choice_mismatches: Vec<RequestRecord>,
    /// With `aggregation = "streaming"`: the histograms (and `figures` stays empty).
    pub streamed: Option<StreamedUnits>,
}

impl LoadUnits {
    /// The job's choice-count note ([`crate::client::choice_count_note`]) over every record.
    pub fn choice_count_note(&self, requested: Option<u32>) -> Option<String> {
        let plain = RequestRecord::new("", 0, 0, true);
        let others = self
            .records
            .saturating_sub(self.choice_mismatches.len() as u64);
        let all = self
            .choice_mismatches
            .iter()
            .chain(std::iter::repeat_n(&plain, others as usize));
        crate::client::choice_count_note(requested, all)
    }
}

/// One warm-up candidate of a point: ordered by `(scheduled, send, arrival)`. A streaming
/// job holds the candidate's figures (`held`) until it is known not to be warm-up.
#[derive(Debug)]
struct WarmCandidate {
    key: (u64, u64, u64),
    index: usize,
    id: String,
    held: Option<CompactFigureSet>,
    /// The request's record, its line written once its warm-up status is known: when it
    /// leaves the heap (not warm-up) or when the point ends (warm-up, `"wu":true`; issue
    /// 29 item 4). The heap holds at most `warmup` of them.
    rec: Box<RequestRecord>,
}

impl PartialEq for WarmCandidate {
    fn eq(&self, other: &Self) -> bool {
        (self.key, self.index) == (other.key, other.index)
    }
}
impl Eq for WarmCandidate {}
impl PartialOrd for WarmCandidate {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for WarmCandidate {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.key, self.index).cmp(&(other.key, other.index))
    }
}

/// What the unit writer receives.
pub(crate) enum UnitMsg {
    /// A point starts: its first `warmup` requests are warm-up.
    Point { warmup: u64 },
    /// A unit ended.
    Unit {
        rec: Box<TrajectoryRecord>,
        graded_pass: Option<bool>,
        point: usize,
    },
}

/// The job-level facts the unit writer needs.
pub(crate) struct UnitWriterEnv {
    pub sink: RecordsSink,
    /// The job's index in the report (its `j` in `requests.jsonl`).
    pub job_index: usize,
    pub job_id: String,
    pub secrets: Vec<String>,
    pub events: EventSink,
    /// `aggregation = "streaming"`: histograms instead of compact figures.
    pub streaming: bool,
    /// The job's goodput criteria (a streaming point counts its good requests as they end).
    pub criteria: Option<GoodputCriteria>,
    /// The schedule-miss threshold, ms.
    pub miss_threshold_ms: f64,
}

/// Channel slots between the unit tasks and the writer.
pub(crate) const UNIT_CHANNEL_SLOTS: usize = 1024;

/// Starts a job's unit writer thread; join it after the last unit is sent (drop the
/// sender) for the job's [`LoadUnits`].
pub(crate) fn spawn_unit_writer(
    env: UnitWriterEnv,
) -> (
    tokio::sync::mpsc::Sender<UnitMsg>,
    std::thread::JoinHandle<LoadUnits>,
) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<UnitMsg>(UNIT_CHANNEL_SLOTS);
    let handle = std::thread::Builder::new()
        .name("inferscope-units".into())
        .spawn(move || {
            let streamed = env.streaming.then(|| StreamedUnits {
                job: StreamingStats::new(env.miss_threshold_ms),
                ..StreamedUnits::default()
            });
            let mut w = Writer {
                env,
                out: LoadUnits {
                    streamed,
                    ..LoadUnits::default()
                },
                scratch: CompactFigureSet::new(),
                heap: BinaryHeap::new(),
                warmup: 0,
                point_start: 0,
                seq: 0,
                measured_start: None,
            };
            while let Some(m) = rx.blocking_recv() {
                w.on(m);
            }
            w.end_point();
            w.out.figures.shrink_to_fit();
            w.out
        })
        .expect("the unit writer thread starts");
    (tx, handle)
}

struct Writer {
    env: UnitWriterEnv,
    out: LoadUnits,
    /// One request's compact figures (streaming: reused per request).
    scratch: CompactFigureSet,
    heap: BinaryHeap<WarmCandidate>,
    warmup: u64,
    point_start: usize,
    seq: u64,
    /// The point's earliest measured send so far.
    measured_start: Option<u64>,
}

impl Writer {
    fn on(&mut self, m: UnitMsg) {
        match m {
            UnitMsg::Point { warmup } => {
                if !self.out.point_cut_short.is_empty() {
                    self.end_point();
                }
                self.out.point_cut_short.push(false);
                if let Some(st) = &mut self.out.streamed {
                    st.points.push(StreamedPoint {
                        stats: StreamingStats::new(self.env.miss_threshold_ms),
                        ..StreamedPoint::default()
                    });
                }
                self.warmup = warmup;
                self.measured_start = None;
                self.point_start = self.out.figures.len();
            }
            UnitMsg::Unit {
                rec,
                graded_pass,
                point,
            } => self.unit(*rec, graded_pass, point),
        }
    }

    fn end_point(&mut self) {
        if self.out.point_requests.len() >= self.out.point_cut_short.len() {
            return;
        }
        self.out
            .point_requests
            .push(self.point_start..self.out.figures.len());
        self.out
            .point_measured_start_ns
            .push(self.measured_start.take());
        let mut warm: Vec<WarmCandidate> = std::mem::take(&mut self.heap).into_vec();
        warm.sort();
        for mut c in warm {
            c.rec.warmup = true;
            if !c.rec.is_success() {
                let code = c.rec.failure_code.unwrap_or(FailureCode::Cancelled);
                *self.out.warmup_failures.entry(code).or_default() += 1;
            }
            let (job, rec) = (self.env.job_index, &c.rec);
            self.env.sink.with(|w| w.append(job, rec));
            if let Some(st) = &mut self.out.streamed {
                if let Some(p) = st.points.last_mut() {
                    p.warmup += 1;
                }
            } else {
                self.out.warm[c.index] = true;
            }
            self.out.warmup_ids.push(c.id);
        }
    }

    /// A measured request was sent at `send_ns`: the point's measured window starts no
    /// later.
    fn note_measured_send(&mut self, send_ns: u64) {
        self.measured_start = Some(self.measured_start.map_or(send_ns, |m| m.min(send_ns)));
    }

    /// Streaming: adds the requests of `set` (not warm-up) to the job's and the point's
    /// histograms, and counts the point's good requests.
    fn measured(&mut self, set: &CompactFigureSet) {
        let Some(st) = &mut self.out.streamed else {
            return;
        };
        for (c, g) in set.iter() {
            st.job.add(c, g);
            if let Some(p) = st.points.last_mut() {
                p.stats.add(c, g);
                if let Some(cr) = &self.env.criteria {
                    p.good += u64::from(meets_row(cr, c, g.mean_ms()));
                }
            }
        }
    }

    fn unit(&mut self, rec: TrajectoryRecord, graded_pass: Option<bool>, point: usize) {
        let owned = self.env.secrets.clone();
        let secrets: Vec<&str> = owned.iter().map(String::as_str).collect();
        let (job, sink) = (self.env.job_index, self.env.sink.clone());
        let cut_short = rec.stop_reason == StopReason::Cancelled
            || rec.steps.iter().any(|s| s.status == StepStatus::Cancelled);
        if cut_short && let Some(c) = self.out.point_cut_short.last_mut() {
            *c = true;
        }
        for st in &rec.steps {
            self.env.events.emit(RunEvent::StepFinished {
                job: self.env.job_id.clone(),
                step_id: st.step_id,
                kind: st.kind,
                name: st.name.clone(),
            });
        }
        for r in rec.steps.into_iter().filter_map(|s| s.request) {
            let mut r = r;
            r.redact_server_text(&secrets);
            if self.warmup == 0 {
                sink.with(|w| w.append(job, &r));
                self.note_measured_send(r.send_ns);
            }
            let index = self.out.figures.len();
            let streaming = self.out.streamed.is_some();
            if streaming {
                self.scratch.clear();
                self.scratch.push_record(&r);
                if let (Some(st), Some((c, _))) =
                    (self.out.streamed.as_mut(), self.scratch.iter().next())
                {
                    st.all.add(c, self.env.miss_threshold_ms);
                    if let Some(p) = st.points.last_mut() {
                        p.all.add(c, self.env.miss_threshold_ms);
                    }
                }
                if self.warmup == 0 {
                    let one = std::mem::take(&mut self.scratch);
                    self.measured(&one);
                    self.scratch = one;
                }
            } else {
                self.out.figures.push_record(&r);
                self.out.warm.push(false);
            }
            self.out.records += 1;
            self.out.first_send_ns = Some(
                self.out
                    .first_send_ns
                    .map_or(r.send_ns, |f| f.min(r.send_ns)),
            );
            if !r.is_success() {
                let code = r.failure_code.unwrap_or(FailureCode::Cancelled);
                *self.out.failure_codes.entry(code).or_default() += 1;
            }
            if r.warnings
                .contains(&crate::model::request::RecordWarning::ChoiceCountMismatch)
            {
                let mut m = r.clone();
                m.itl_ns = Vec::new();
                for c in &mut m.choices {
                    c.itl_ns = Vec::new();
                }
                self.out.choice_mismatches.push(m);
            }
            if self.warmup > 0 {
                let cand = WarmCandidate {
                    key: (r.scheduled_ns, r.send_ns, self.seq),
                    index,
                    id: r.request_id.clone(),
                    held: streaming.then(|| self.scratch.clone()),
                    rec: Box::new(r),
                };
                self.seq += 1;
                // The candidate that leaves the heap (or never enters it) is not warm-up:
                // a streaming job adds it to its histograms now.
                let out = if (self.heap.len() as u64) < self.warmup {
                    self.heap.push(cand);
                    None
                } else if self.heap.peek().is_some_and(|top| cand < *top) {
                    let top = self.heap.pop();
                    self.heap.push(cand);
                    top
                } else {
                    Some(cand)
                };
                if let Some(c) = out {
                    // Not warm-up: its line is written now, as it is.
                    self.note_measured_send(c.rec.send_ns);
                    sink.with(|w| w.append(job, &c.rec));
                    if let Some(held) = c.held {
                        self.measured(&held);
                    }
                }
            }
        }
        self.out.units += 1;
        if let Some(p) = graded_pass {
            self.out.graded.0 += 1;
            self.out.graded.1 += u64::from(p);
        }
        if !rec.stop_reason.finished() {
            self.out
                .unfinished
                .entry(rec.stop_reason.as_str())
                .or_insert((0, rec.id.clone()))
                .0 += 1;
        }
        let unit = UnitRecord {
            id: rec.id,
            index: rec.index,
            point,
            start_ns: rec.start_ns,
            end_ns: rec.end_ns,
            stop_reason: rec.stop_reason,
            graded_pass,
            shard: None,
        };
        sink.with(|w| w.append_unit(job, &unit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a load job retains per request is its compact figures and a flag (no record,
    /// no string); per unit it keeps nothing but the executor's fixed-size entry (see the
    /// load driver's tests).
    #[test]
    fn the_state_a_load_job_retains_per_request_is_compact() {
        assert_eq!(
            RETAINED_BYTES_PER_REQUEST, 81,
            "80 B of compact figures and a warm-up flag"
        );
    }
}
