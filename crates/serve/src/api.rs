//! Response bodies of the API and their bounds
//! (docs/artifacts.md "The dashboard API"): a timeline page
//! (`GET /v1/benchmark-timeline?run_id=<id>&after_seq=0&limit=500`) holds at most 1,000 events
//! and 1 MiB, with a cursor to the next page while more follow. Pure: pages are cut from data
//! already read and verified.
//!
//! Every body is JSON. Errors are `{"error":{"status":u16,"code":str,"message":str,
//! "issues":[…]}}` with a stable `code`; see [`ApiError`].

use serde::Serialize;

use crate::timeline::{Quality, TimelineEvent, VerifiedTimeline};

use super::runs::{IntegrityItem, ReportState};
use super::view::{JobView, RunDetail, clock_domain_label};

/// Events per timeline page at most (docs/artifacts.md).
pub const MAX_PAGE_EVENTS: u64 = 1000;
/// Events per timeline page by default.
pub const DEFAULT_PAGE_EVENTS: u64 = 500;
/// Bytes of one response body at most (docs/artifacts.md: 1 MiB).
pub const MAX_RESPONSE_BYTES: usize = 1 << 20;
/// Bytes kept free for the page envelope within [`MAX_RESPONSE_BYTES`].
pub const ENVELOPE_RESERVE: usize = 4096;
/// Samples per samples page at most.
pub const MAX_PAGE_SAMPLES: u64 = 5000;
/// Samples per samples page by default.
pub const DEFAULT_PAGE_SAMPLES: u64 = 2000;
/// Jobs per run-detail page at most.
pub const MAX_PAGE_JOBS: u64 = 100;
/// Runs per listing page at most.
pub const MAX_LIST_LIMIT: u64 = 100;
/// Runs per listing page by default.
pub const DEFAULT_LIST_LIMIT: u64 = 50;

/// Schema id of [`TimelinePage`] and [`TimelineUnavailable`].
pub const TIMELINE_PAGE_SCHEMA: &str = "inferscope-bench.serve.timeline-page/v1";
/// Schema id of [`SamplesPage`].
pub const SAMPLES_PAGE_SCHEMA: &str = "inferscope-bench.serve.samples-page/v1";
/// Schema id of [`RunList`].
pub const RUN_LIST_SCHEMA: &str = "inferscope-bench.serve.runs/v1";

/// A typed API error: HTTP status, stable code, a fixed message (never echoing a path or
/// artifact content), and itemized integrity problems.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApiError {
    /// HTTP status (400, 401, 404, 422, 500, 503).
    pub status: u16,
    /// Stable code: `unauthorized`, `not_found`, `bad_query`, `unknown_query_key`,
    /// `duplicate_query_key`, `missing_query_key`, `invalid_limit`, `invalid_run_id`,
    /// `invalid_query_value`, `input_too_large`, `bad_path`, `integrity_error`,
    /// `runs_root_unavailable`, `internal`.
    pub code: &'static str,
    /// What a person reads.
    pub message: String,
    /// Integrity problems (for `integrity_error`).
    pub issues: Vec<IntegrityItem>,
}

impl ApiError {
    /// An error without issues.
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            issues: Vec::new(),
        }
    }
    /// 401.
    pub fn unauthorized() -> Self {
        Self::new(401, "unauthorized", "missing or invalid bearer token")
    }
    /// 404, the same body for every unknown run or path.
    pub fn not_found() -> Self {
        Self::new(404, "not_found", "not found")
    }
    /// 422 with the problems found.
    pub fn integrity(what: &str, issues: Vec<IntegrityItem>) -> Self {
        Self {
            status: 422,
            code: "integrity_error",
            message: format!("{what} failed verification; nothing from it is served"),
            issues,
        }
    }
    /// The JSON body.
    pub fn body(&self) -> serde_json::Value {
        serde_json::json!({ "error": self })
    }
}

/// One page of timeline events.
#[derive(Clone, Debug, Serialize)]
pub struct TimelinePage {
    /// [`TIMELINE_PAGE_SCHEMA`].
    pub schema: &'static str,
    /// The run id.
    pub run_id: String,
    /// Always `ok`.
    pub state: &'static str,
    /// The timeline id.
    pub timeline_id: String,
    /// Capture quality.
    pub quality: Quality,
    /// Events in the whole timeline.
    pub event_count: u64,
    /// The cursor asked for: events with `seq > after_seq`.
    pub after_seq: u64,
    /// The limit asked for.
    pub limit: u64,
    /// Events, ascending `seq` (`clock_domain_id` as `report.json` has it: [`clock_domain_label`]).
    pub events: Vec<TimelineEvent>,
    /// `seq` of events left out for being larger than a page by themselves (never in a
    /// verified timeline, whose events are at most 2 KiB); the cursor moves past them.
    pub oversized_seqs: Vec<u64>,
    /// Pass as `after_seq` for the next page; `null` on the last page. Always greater
    /// than `after_seq`.
    pub next_after_seq: Option<u64>,
}

/// The typed answer for a run without a timeline (HTTP 200).
#[derive(Clone, Debug, Serialize)]
pub struct TimelineUnavailable {
    /// [`TIMELINE_PAGE_SCHEMA`].
    pub schema: &'static str,
    /// The run id.
    pub run_id: String,
    /// Always `unavailable`.
    pub state: &'static str,
    /// `no_timeline` (capture off), `no_manifest` (killed run / failed persistence) or
    /// `run_incomplete` (no `report.json`, the run's last artifact).
    pub reason: &'static str,
}

/// One page cut from a list (pure): which items go in, which were skipped for being
/// larger than a whole page by themselves, and how many items the page consumed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// Positions (relative to the slice given) of the items served.
    pub taken: Vec<usize>,
    /// Positions of items skipped because one alone exceeds the byte budget.
    pub oversized: Vec<usize>,
    /// Items consumed (served or skipped); the next page starts after them. At least 1
    /// whenever any item was given: a cursor always advances.
    pub consumed: usize,
}

/// Cuts one page from `items` (pure): at most `limit` items and `budget` bytes of
/// serialized items plus separators. An item that alone exceeds `budget` is skipped and
/// listed in [`Cut::oversized`] (it costs 24 bytes of the budget for its marker), so a
/// page whose first item is oversized still makes progress.
pub fn cut_page<T: Serialize>(items: &[T], limit: u64, budget: usize) -> Cut {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut cut = Cut {
        taken: Vec::new(),
        oversized: Vec::new(),
        consumed: 0,
    };
    let mut used = 0usize;
    for (i, it) in items.iter().enumerate().take(limit) {
        let len = serde_json::to_vec(it)
            .map(|v| v.len())
            .unwrap_or(usize::MAX)
            .saturating_add(1);
        if len > budget {
            if used + 24 > budget {
                break;
            }
            used += 24;
            cut.oversized.push(i);
        } else if used.saturating_add(len) > budget {
            break;
        } else {
            used += len;
            cut.taken.push(i);
        }
        cut.consumed = i + 1;
    }
    cut
}

/// How many of `items` fit one page (pure): [`cut_page`]'s served count when nothing was
/// skipped.
pub fn fit_within<T: Serialize>(items: &[T], limit: u64, budget: usize) -> usize {
    cut_page(items, limit, budget).taken.len()
}

/// The event as served: its clock-domain id as the page shows it ([`clock_domain_label`]; pure).
pub fn public_event(e: &TimelineEvent) -> TimelineEvent {
    let mut e = e.clone();
    e.clock_domain_id = clock_domain_label(&e.clock_domain_id);
    e
}

/// Cuts one page (pure): events with `seq > after_seq`, at most `limit` (≤
/// [`MAX_PAGE_EVENTS`]) and within [`MAX_RESPONSE_BYTES`]. Pages are stable: the artifact
/// is immutable and verified, and the cursor is a `seq`.
pub fn timeline_page(
    run_id: &str,
    t: &VerifiedTimeline,
    after_seq: u64,
    limit: u64,
) -> TimelinePage {
    let limit = limit.clamp(1, MAX_PAGE_EVENTS);
    let start = t.events.partition_point(|e| e.seq <= after_seq);
    let rest: Vec<TimelineEvent> = t.events[start..]
        .iter()
        .take(limit as usize)
        .map(public_event)
        .collect();
    let cut = cut_page(&rest, limit, MAX_RESPONSE_BYTES - ENVELOPE_RESERVE);
    let oversized_seqs: Vec<u64> = cut.oversized.iter().map(|&i| rest[i].seq).collect();
    let last_seq = cut.consumed.checked_sub(1).map(|i| rest[i].seq);
    let more = start + cut.consumed < t.events.len();
    let keep: std::collections::HashSet<usize> = cut.taken.iter().copied().collect();
    let events: Vec<TimelineEvent> = rest
        .into_iter()
        .enumerate()
        .filter(|(i, _)| keep.contains(i))
        .map(|(_, e)| e)
        .collect();
    TimelinePage {
        schema: TIMELINE_PAGE_SCHEMA,
        run_id: run_id.to_string(),
        state: "ok",
        timeline_id: t.manifest.timeline_id.clone(),
        quality: t.manifest.quality,
        event_count: t.events.len() as u64,
        after_seq,
        limit,
        next_after_seq: if more { last_seq } else { None },
        events,
        oversized_seqs,
    }
}

/// One page of resource samples (`GET /v1/samples`).
#[derive(Clone, Debug, Serialize)]
pub struct SamplesPage<T: Serialize> {
    /// [`SAMPLES_PAGE_SCHEMA`].
    pub schema: &'static str,
    /// The run id.
    pub run_id: String,
    /// `power`, `proc` or `metrics`.
    pub source: &'static str,
    /// `ok` or `unavailable`.
    pub state: &'static str,
    /// Why unavailable (`no_samples`, `source_not_configured`).
    pub reason: Option<&'static str>,
    /// Fingerprint of the samples' clock domain.
    pub clock_domain: Option<String>,
    /// Whether that is the run's clock domain (`null` when unknown).
    pub aligned: Option<bool>,
    /// Samples in the whole file.
    pub total: u64,
    /// The cursor asked for: samples with index `>= after`.
    pub after: u64,
    /// The samples (the sample files' line formats, see [`crate::telemetry`]).
    pub samples: Vec<T>,
    /// Indexes of samples left out for being larger than a page by themselves; the
    /// cursor moves past them.
    pub oversized: Vec<u64>,
    /// Pass as `after` for the next page; `null` on the last page. Always greater than
    /// `after`.
    pub next_after: Option<u64>,
}

/// Cuts one samples page (pure): items from index `after`, at most `limit` and within
/// [`MAX_RESPONSE_BYTES`].
pub fn samples_page<T: Serialize + Clone>(
    run_id: &str,
    source: &'static str,
    all: &[T],
    after: u64,
    limit: u64,
    clock_domain: Option<String>,
    aligned: Option<bool>,
) -> SamplesPage<T> {
    let start = usize::try_from(after).unwrap_or(usize::MAX).min(all.len());
    let cut = cut_page(&all[start..], limit, MAX_RESPONSE_BYTES - ENVELOPE_RESERVE);
    let end = start + cut.consumed;
    SamplesPage {
        schema: SAMPLES_PAGE_SCHEMA,
        run_id: run_id.to_string(),
        source,
        state: "ok",
        reason: None,
        clock_domain,
        aligned,
        total: all.len() as u64,
        after,
        samples: cut.taken.iter().map(|&i| all[start + i].clone()).collect(),
        oversized: cut.oversized.iter().map(|&i| (start + i) as u64).collect(),
        next_after: (end < all.len()).then_some(end as u64),
    }
}

/// The typed "no samples" page.
pub fn samples_unavailable(
    run_id: &str,
    source: &'static str,
    reason: &'static str,
) -> SamplesPage<serde_json::Value> {
    SamplesPage {
        schema: SAMPLES_PAGE_SCHEMA,
        run_id: run_id.to_string(),
        source,
        state: "unavailable",
        reason: Some(reason),
        clock_domain: None,
        aligned: None,
        total: 0,
        after: 0,
        samples: Vec::new(),
        oversized: Vec::new(),
        next_after: None,
    }
}

/// One row of the run listing.
#[derive(Clone, Debug, Serialize)]
pub struct RunListItem {
    /// The run id (directory name).
    pub run_id: String,
    /// `ok`, `missing` or `fault`.
    pub report_state: &'static str,
    /// The report's own run id.
    pub report_run_id: Option<String>,
    /// Run start, RFC 3339 UTC.
    pub started_utc: Option<String>,
    /// Cancelled run.
    pub cancelled: Option<bool>,
    /// Jobs run.
    pub jobs: Option<usize>,
    /// Jobs passed.
    pub passed: Option<usize>,
    /// Jobs failed.
    pub failed: Option<usize>,
    /// Jobs not run (the run was cancelled before they started; not counted in `jobs`).
    pub not_run: Option<usize>,
    /// Jobs Ctrl-C / SIGTERM stopped part-way (counted in `jobs`, never passed).
    pub jobs_cancelled: Option<usize>,
    /// Jobs that could not start (setup errors; not counted in `jobs`).
    pub setup_errors: Option<usize>,
    /// Capture was on.
    pub capture_enabled: Option<bool>,
    /// Capture quality as the runner recorded it (verified only in the detail).
    pub capture_quality: Option<String>,
    /// A timeline manifest exists (not verified here).
    pub timeline_present: bool,
}

/// The listing row of a run (pure). Reads only the report's header, so the jobs are not
/// built ([`super::view::report_head`]).
pub fn list_item(run_id: &str, report: &ReportState, timeline_present: bool) -> RunListItem {
    let v = super::view::report_head(report);
    RunListItem {
        run_id: run_id.to_string(),
        report_state: v.state,
        report_run_id: v.run_id,
        started_utc: v.started_utc,
        cancelled: v.cancelled,
        jobs: v.summary.as_ref().map(|s| s.jobs),
        passed: v.summary.as_ref().map(|s| s.passed),
        failed: v.summary.as_ref().map(|s| s.failed),
        not_run: v.summary.as_ref().map(|s| s.not_run),
        jobs_cancelled: v.summary.as_ref().map(|s| s.cancelled),
        setup_errors: v.summary.as_ref().map(|s| s.setup_errors),
        capture_enabled: v.capture.as_ref().map(|c| c.enabled),
        capture_quality: v.capture.and_then(|c| c.quality),
        timeline_present,
    }
}

/// One listing page.
#[derive(Clone, Debug, Serialize)]
pub struct RunList {
    /// [`RUN_LIST_SCHEMA`].
    pub schema: &'static str,
    /// Rows, ascending run id.
    pub runs: Vec<RunListItem>,
    /// Pass as `after` for the next page; `null` on the last page.
    pub next_after: Option<String>,
    /// The runs root held more entries than one listing examines.
    pub scan_truncated: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::EventKind;

    fn event(seq: u64, pad: usize) -> TimelineEvent {
        TimelineEvent {
            seq,
            span_id: seq,
            parent_span_id: None,
            kind: EventKind::PhaseStart,
            name: format!("p{}", "x".repeat(pad)),
            elapsed_ns: seq,
            wall_time_utc: String::new(),
            clock_domain_id: "mono:host:1:2".into(),
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

    fn timeline(events: Vec<TimelineEvent>) -> VerifiedTimeline {
        let manifest: crate::timeline::TimelineManifest = serde_json::from_str(include_str!(
            "../../../fixtures/runs/complete/timeline/manifest.json"
        ))
        .unwrap();
        VerifiedTimeline {
            manifest,
            events,
            gaps: Vec::new(),
            unknown_end_spans: Vec::new(),
        }
    }

    #[test]
    fn pages_respect_limit_cursor_and_stability() {
        let t = timeline((1..=2500).map(|s| event(s, 0)).collect());
        let mut seen = Vec::new();
        let mut after = 0;
        let mut pages = 0;
        loop {
            let p = timeline_page("r", &t, after, 1000);
            assert!(p.events.len() <= 1000);
            assert!(
                p.events
                    .iter()
                    .all(|e| e.clock_domain_id == "mono:host:1:2")
            );
            seen.extend(p.events.iter().map(|e| e.seq));
            pages += 1;
            match p.next_after_seq {
                Some(n) => after = n,
                None => break,
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(seen, (1..=2500).collect::<Vec<u64>>());
        // Same cursor, same page.
        let a = serde_json::to_string(&timeline_page("r", &t, 700, 50)).unwrap();
        let b = serde_json::to_string(&timeline_page("r", &t, 700, 50)).unwrap();
        assert_eq!(a, b);
        assert_eq!(timeline_page("r", &t, 700, 50).events[0].seq, 701);
        assert!(timeline_page("r", &t, 2500, 50).events.is_empty());
    }

    #[test]
    fn pages_stay_under_one_mebibyte() {
        // 1,000 events of ~2 KiB would be ~2 MiB: the byte bound cuts the page first.
        let t = timeline((1..=1000).map(|s| event(s, 1700)).collect());
        let p = timeline_page("r", &t, 0, 1000);
        let body = serde_json::to_vec(&p).unwrap();
        assert!(body.len() <= MAX_RESPONSE_BYTES, "{}", body.len());
        assert!(p.events.len() < 1000 && !p.events.is_empty());
        assert_eq!(p.next_after_seq, p.events.last().map(|e| e.seq));
    }

    #[test]
    fn samples_pages_chain() {
        let all: Vec<u64> = (0..12).collect();
        let p = samples_page("r", "power", &all, 0, 5, None, Some(true));
        assert_eq!(p.samples, [0, 1, 2, 3, 4]);
        assert_eq!(p.next_after, Some(5));
        let p = samples_page("r", "power", &all, 10, 5, None, Some(true));
        assert_eq!(p.samples, [10, 11]);
        assert_eq!(p.next_after, None);
        let p = samples_page("r", "power", &all, 99, 5, None, None);
        assert!(p.samples.is_empty() && p.next_after.is_none());
    }
}

/// A job cut to fit a detail page by itself (its trajectories or steps left out).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SummarisedJob {
    /// The job id.
    pub id: String,
    /// Trajectories in the job.
    pub trajectories_total: u64,
    /// Trajectories served (the last one possibly with fewer steps).
    pub trajectories_kept: u64,
    /// Steps left out over all its trajectories.
    pub steps_omitted: u64,
}

/// Items a detail page left out of its side lists to stay within the byte budget.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DetailOmitted {
    /// Gap markers left out (the first ones are served).
    pub gaps: u64,
    /// Resource lanes left out.
    pub lanes: u64,
    /// Unknown-end span ids left out.
    pub unknown_end_spans: u64,
}

/// `GET /v1/runs/{run_id}?jobs_after=N` (pure): the run's detail with the jobs from index
/// `jobs_after` that fit [`MAX_RESPONSE_BYTES`] (at most [`MAX_PAGE_JOBS`]).
#[derive(Clone, Debug, Serialize)]
pub struct DetailPage {
    /// The detail; `report.jobs` holds this page's jobs only.
    #[serde(flatten)]
    pub detail: RunDetail,
    /// Jobs in the run.
    pub jobs_total: u64,
    /// Index of this page's first job.
    pub jobs_after: u64,
    /// Pass as `jobs_after` for the next page; `null` on the last page. Always greater
    /// than `jobs_after`.
    pub jobs_next_after: Option<u64>,
    /// Jobs too large for a page by themselves, served cut down (never skipped).
    pub jobs_summarised: Vec<SummarisedJob>,
    /// What the side lists left out.
    pub omitted: DetailOmitted,
}

fn json_len<T: Serialize>(v: &T) -> usize {
    serde_json::to_vec(v).map_or(usize::MAX, |b| b.len())
}

/// Keeps the longest prefix of `v` within `budget` bytes; returns how many were dropped.
fn keep_within<T: Serialize>(v: &mut Vec<T>, budget: usize) -> u64 {
    let n = fit_within(v, u64::MAX, budget);
    let dropped = v.len() - n;
    v.truncate(n);
    dropped as u64
}

/// `job` cut to `budget` bytes: whole trajectories while they fit, then the steps of the
/// next one that fit, the rest left out (pure).
fn summarise_job(mut job: JobView, budget: usize) -> (JobView, SummarisedJob) {
    let trajectories = std::mem::take(&mut job.trajectories);
    let total = trajectories.len() as u64;
    let total_steps: u64 = trajectories.iter().map(|t| t.steps.len() as u64).sum();
    let mut used = json_len(&job);
    for mut t in trajectories {
        let len = json_len(&t) + 1;
        if used + len <= budget {
            used += len;
            job.trajectories.push(t);
            continue;
        }
        let steps = std::mem::take(&mut t.steps);
        let shell = json_len(&t) + 1;
        if used + shell <= budget {
            let n = fit_within(&steps, u64::MAX, budget - used - shell);
            t.steps = steps.into_iter().take(n).collect();
            job.trajectories.push(t);
        }
        break;
    }
    let kept_steps: u64 = job.trajectories.iter().map(|t| t.steps.len() as u64).sum();
    let s = SummarisedJob {
        id: job.id.clone(),
        trajectories_total: total,
        trajectories_kept: job.trajectories.len() as u64,
        steps_omitted: total_steps - kept_steps,
    };
    (job, s)
}

/// Cuts the detail page (pure); see [`DetailPage`]. Side lists (gaps, lanes, unknown-end
/// span ids) are bounded first, each to a share of the budget; the jobs fill the rest. A
/// first job that alone exceeds what is left is served summarised, so the cursor always
/// advances.
pub fn detail_page(mut d: RunDetail, jobs_after: u64) -> DetailPage {
    let budget = MAX_RESPONSE_BYTES - ENVELOPE_RESERVE;
    let jobs = std::mem::take(&mut d.report.jobs);
    let omitted = DetailOmitted {
        gaps: keep_within(&mut d.gaps, budget / 8),
        lanes: keep_within(&mut d.telemetry.lanes, budget / 8),
        unknown_end_spans: keep_within(&mut d.timeline.unknown_end_spans, budget / 16),
    };
    let base = json_len(&d) + 512;
    let room = budget.saturating_sub(base);
    let start = usize::try_from(jobs_after)
        .unwrap_or(usize::MAX)
        .min(jobs.len());
    let mut used = 0usize;
    let mut page = Vec::new();
    let mut summarised = Vec::new();
    let mut next = start;
    for job in jobs.iter().skip(start) {
        if page.len() as u64 >= MAX_PAGE_JOBS {
            break;
        }
        let len = json_len(job) + 1;
        if used + len <= room {
            used += len;
            page.push(job.clone());
            next += 1;
            continue;
        }
        if page.is_empty() {
            let (j, s) = summarise_job(job.clone(), room);
            page.push(j);
            summarised.push(s);
            next += 1;
        }
        break;
    }
    d.report.jobs = page;
    DetailPage {
        detail: d,
        jobs_total: jobs.len() as u64,
        jobs_after: start as u64,
        jobs_next_after: (next < jobs.len()).then_some(next as u64),
        jobs_summarised: summarised,
        omitted,
    }
}

/// One page of the raw events file (`GET /runs/{run_id}/timeline.jsonl`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawEventsPage {
    /// The exact bytes of the lines served (each with its newline).
    pub bytes: Vec<u8>,
    /// The `seq` to pass as `after_seq` for the next page; `None` on the last.
    pub next_after_seq: Option<u64>,
}

/// Cuts the verified events file's lines with `seq > after_seq` (pure): at most `limit`
/// lines and [`MAX_RESPONSE_BYTES`]. `events` are the verified events of `bytes`, one per
/// line in file order. A line longer than the budget (never in a verified file, whose
/// lines are at most 2 KiB) is served alone, so the cursor always advances.
pub fn raw_events_page(
    bytes: &[u8],
    events: &[TimelineEvent],
    after_seq: u64,
    limit: u64,
) -> RawEventsPage {
    let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
    let start = events.partition_point(|e| e.seq <= after_seq);
    let mut out = Vec::new();
    let mut end = start;
    for (i, line) in lines.iter().enumerate().skip(start) {
        if (end - start) as u64 >= limit
            || (end > start && out.len() + line.len() > MAX_RESPONSE_BYTES)
        {
            break;
        }
        out.extend_from_slice(line);
        end = i + 1;
    }
    RawEventsPage {
        bytes: out,
        next_after_seq: (end < events.len() && end > 0).then(|| events[end - 1].seq),
    }
}
