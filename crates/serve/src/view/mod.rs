//! What the API and the page show of one run (pure: built from what [`super::runs`] read).
//! Sources: docs/artifacts.md "The dashboard API" (lanes and spans on one elapsed-time view
//! with a text alternative; quality, drops, gaps and missing associations shown; resource
//! lanes kept apart per host and device), docs/samples.md "The clock" (values of different
//! clock domains are never subtracted); requirement ids R003, R010, R011, T004
//! (docs/artifacts.md "Requirement ids").
//!
//! Nothing here copies free text from an artifact into the view except texts written by
//! this product itself (source status reasons, truncated); names and ids pass their
//! syntax or are replaced. A clock-domain id is shown as `report.json` has it (one id on
//! the page, in the API and in every export: [`clock_domain_label`]), or as its
//! fingerprint when it fails its syntax; metrics URLs and GPU UUIDs are left out.

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::timeline::{DroppedCounts, Quality};

use super::runs::IntegrityItem;

mod build;
mod detail;
mod gaps;
mod telemetry;

pub use build::{report_head, report_view, shard_views, timeline_view};
pub use detail::run_detail;
pub use gaps::gap_markers;
pub use telemetry::{
    LaneQuantity, LaneSamples, LaneTimes, METRICS_COUNTERS, METRICS_GAUGES, lane_label,
    lane_points, lane_quantities, sample_gaps, telemetry_view,
};

/// Schema id of [`RunDetail`].
pub const DETAIL_SCHEMA: &str = "inferscope-bench.serve.run/v1";
/// Most sample gaps itemized per lane; the rest are counted.
pub const MAX_LANE_GAPS: usize = 200;
/// A lane has a gap where consecutive samples (or the sampling window's ends) are more
/// than this many periods apart.
pub const GAP_PERIODS: u64 = 3;

/// `cd-` and the first 12 hex digits of the SHA-256 of a clock-domain id (pure): equal
/// ids give equal fingerprints; nothing of the id is disclosed.
pub fn clock_domain_fingerprint(id: &str) -> String {
    let h = hex::encode(Sha256::digest(id.as_bytes()));
    format!("cd-{}", &h[..12])
}

/// A clock-domain id as the page and the API show it (pure): the id itself, as
/// `report.json` and every other output have it (`mono:<host>:<pid>:<anchor>`,
/// `merged:<digest>`), when it passes its syntax (at most 300 characters of
/// `[A-Za-z0-9._:-]`); else its [`clock_domain_fingerprint`]. One id everywhere.
pub fn clock_domain_label(id: &str) -> String {
    let ok = !id.is_empty()
        && id.len() <= 300
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'-'));
    if ok {
        id.to_string()
    } else {
        clock_domain_fingerprint(id)
    }
}

/// Grading checks one job's detail shows at most (a report of many long
/// checks made a 1.09 MiB answer); the rest are counted in `grading_omitted`.
pub const MAX_GRADING_SHOWN: usize = 100;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// `codes` aggregated: one entry per failure code, in code order, counts summed
/// (saturating) (pure).
pub fn aggregate_failure_codes(
    codes: &[crate::model::FailureCount],
) -> Vec<crate::model::FailureCount> {
    let mut by_code = std::collections::BTreeMap::new();
    for c in codes {
        let n: &mut u64 = by_code.entry(c.code).or_default();
        *n = n.saturating_add(c.count);
    }
    by_code
        .into_iter()
        .map(|(code, count)| crate::model::FailureCount { code, count })
        .collect()
}

/// Keeps at most `max` characters of a product-written text, control characters removed.
pub fn bounded_text(s: &str, max: usize) -> String {
    s.chars().filter(|c| !c.is_control()).take(max).collect()
}

fn code_or_other(s: &str) -> String {
    let ok = !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_');
    if ok {
        s.to_string()
    } else {
        "other".to_string()
    }
}

/// The whole detail of one run (`GET /v1/runs/{run_id}`).
#[derive(Clone, Debug, Serialize)]
pub struct RunDetail {
    /// [`DETAIL_SCHEMA`].
    pub schema: &'static str,
    /// The run id (directory name).
    pub run_id: String,
    /// `report.json`.
    pub report: ReportView,
    /// The timeline.
    pub timeline: TimelineView,
    /// Resource telemetry.
    pub telemetry: TelemetryView,
    /// Every gap and missing association, for the gap list and the lanes.
    pub gaps: Vec<GapMarker>,
}

/// The report's summary, jobs, trajectories and steps (no requests, notes or texts).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ReportView {
    /// `ok`, `missing` or `fault`.
    pub state: &'static str,
    /// The fault code when `fault`.
    pub fault: Option<&'static str>,
    /// The report's run id.
    pub run_id: Option<String>,
    /// Run start, RFC 3339 UTC (display only).
    pub started_utc: Option<String>,
    /// `inferscope-bench <version>`.
    pub tool: Option<String>,
    /// True when Ctrl-C ended the run early.
    pub cancelled: Option<bool>,
    /// Fingerprint of the run's clock domain.
    pub clock_domain: Option<String>,
    /// Endpoint identity without its URL.
    pub endpoint: Option<EndpointView>,
    /// Totals.
    pub summary: Option<SummaryView>,
    /// Capture summary as the runner recorded it.
    pub capture: Option<CaptureView>,
    /// Jobs.
    pub jobs: Vec<JobView>,
    /// A merged run's shards: one lane group each, aligned by the shards' unix
    /// anchors; empty for a single run.
    pub shards: Vec<ShardView>,
}

/// One shard of a merged run: its lane group's header.
#[derive(Clone, Debug, Serialize)]
pub struct ShardView {
    /// The shard, from 1.
    pub k: u32,
    /// Shards in all.
    pub n: u32,
    /// Fingerprint of the shard's own clock domain.
    pub clock_domain: String,
    /// `anchor − merged anchor`, ns: the shift of its times onto the page's axis.
    pub offset_ns: u64,
    /// `same_host` or `cross_host`.
    pub alignment: String,
    /// Bound of the error of its placement on the axis, ns (anchor uncertainty).
    pub uncertainty_ns: u64,
    /// Its run window on the axis.
    pub start_ns: u64,
    /// End of its run window on the axis.
    pub end_ns: u64,
    /// Its trajectories (ids in `jobs[].trajectories`), in order.
    pub trajectories: Vec<String>,
}

/// Endpoint identity (no URL: R011).
#[derive(Clone, Debug, Serialize)]
pub struct EndpointView {
    /// Suite name.
    pub suite: String,
    /// Model name.
    pub model: String,
    /// Built-in simulator (never a real-engine figure).
    pub simulated: bool,
    /// Metrics profile.
    pub engine_profile: String,
}

/// Run totals: the report's own ([`crate::model::SummaryReport`]: counts and the exit
/// status, no text).
pub type SummaryView = crate::model::SummaryReport;

/// The runner's capture record (from `report.json`).
#[derive(Clone, Debug, Serialize)]
pub struct CaptureView {
    /// Capture was on.
    pub enabled: bool,
    /// `complete`, `partial`, `unavailable`, or `null` when off.
    pub quality: Option<String>,
    /// Events kept.
    pub events: Option<u64>,
    /// Events dropped.
    pub dropped: Option<u64>,
    /// Events rejected.
    pub rejected: Option<u64>,
    /// A persistence diagnostic was recorded (its text is not shown).
    pub diagnostic: bool,
}

/// One job.
#[derive(Clone, Debug, Serialize)]
pub struct JobView {
    /// `suite::job`.
    pub id: String,
    /// `agentic`, `context` or `swe`.
    pub kind: crate::model::JobKind,
    /// `pass`, `fail`, `cancelled`, `not_run` or `setup_error`.
    pub status: crate::model::JobStatus,
    /// The setup error's cause when `setup_error` (the message is not shown).
    pub setup_cause: Option<crate::model::SetupCause>,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Duration, ns.
    pub duration_ns: u64,
    /// Fraction of trajectories that passed grading.
    pub grade_pass_rate: Option<f64>,
    /// Gate verdicts.
    pub verdicts: Vec<VerdictView>,
    /// Grading checks (description and result; no reasons): the first
    /// [`MAX_GRADING_SHOWN`], each description at most 200 characters.
    pub grading: Vec<GradingView>,
    /// Grading checks left out past [`MAX_GRADING_SHOWN`] (absent when none).
    #[serde(skip_serializing_if = "is_zero")]
    pub grading_omitted: u64,
    /// Failed requests per failure code: one entry per code, counts summed (a report that
    /// lists a code many times still makes one entry).
    pub failure_codes: Vec<crate::model::FailureCount>,
    /// Trajectories.
    pub trajectories: Vec<TrajectoryView>,
    /// A load job's points in run order, each with its trajectories (the page's lane
    /// groups); absent for a sequential job.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub points: Vec<PointView>,
    /// A load job's TTFT per request id, ms, for the requests the captured timeline drew
    /// (read from requests.jsonl: report.json keeps one trajectory per point); absent for
    /// a sequential job, whose steps carry theirs.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub request_ttft_ms: std::collections::BTreeMap<String, f64>,
}

/// One point of a load job's sweep.
#[derive(Clone, Debug, Serialize)]
pub struct PointView {
    /// `concurrency 4`, `rate 20/s poisson, concurrency <= 8`.
    pub label: String,
    /// Its trajectories in `trajectories` (the first unit: report.json keeps one per
    /// point).
    pub trajectories: Vec<String>,
    /// What the id of every unit of the point starts with (`suite::job#p1.`): the page puts
    /// every captured lane whose id has it in this point's group.
    pub unit_prefix: String,
}

/// One gate verdict.
#[derive(Clone, Debug, Serialize)]
pub struct VerdictView {
    /// Gate key.
    pub gate: String,
    /// Figure name.
    pub figure: String,
    /// Value in `unit`, `null` when unavailable.
    pub value: Option<f64>,
    /// Bound in `unit`.
    pub bound: f64,
    /// `<=` or `>=`.
    pub comparison: crate::gate::Comparison,
    /// Unit.
    pub unit: String,
    /// What the figure rests on.
    pub basis: crate::model::Basis,
    /// For a token-derived figure: whose token counts.
    pub tokens: Option<crate::model::TokenSource>,
    /// Outcome.
    pub outcome: crate::gate::Outcome,
    /// A streamed figure's bound, as printed after its value (`±0.05 % (streaming)`);
    /// absent for an exact one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_bound: Option<String>,
}

/// One grading check.
#[derive(Clone, Debug, Serialize)]
pub struct GradingView {
    /// The check's description (suite-authored).
    pub check: String,
    /// Passed.
    pub passed: bool,
}

/// One trajectory.
#[derive(Clone, Debug, Serialize)]
pub struct TrajectoryView {
    /// `suite::job#index` (the timeline's `case_id`).
    pub id: String,
    /// Repeat index.
    pub index: u32,
    /// Why it stopped.
    pub stop_reason: crate::model::StopReason,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Grading result, `null` without checks.
    pub graded_pass: Option<bool>,
    /// In a merged run, the shard that ran it (its lane group); absent otherwise (a run
    /// detail's pages are budgeted per byte, so a single run pays nothing for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
    /// Steps in order: the report's own step shape ([`crate::model::StepReport`]), with
    /// its name passed through its syntax and its step-attribution breakdown (docs/measurement.md) left out (the page shows
    /// each step's energy figure with its basis, and its token counts with their source).
    pub steps: Vec<crate::model::StepReport>,
}

/// The timeline's state and manifest figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TimelineView {
    /// `ok`, `unavailable` or `integrity_error`.
    pub state: &'static str,
    /// Why unavailable (`no_timeline`, `no_manifest`, `run_incomplete`).
    pub reason: Option<&'static str>,
    /// Integrity problems when `integrity_error`.
    pub errors: Vec<IntegrityItem>,
    /// Problems beyond those itemized.
    pub errors_omitted: u64,
    /// Timeline id.
    pub timeline_id: Option<String>,
    /// `complete` or `partial`.
    pub quality: Option<Quality>,
    /// Reasons for `partial`.
    pub quality_reasons: Vec<String>,
    /// Events in the file.
    pub event_count: Option<u64>,
    /// Events dropped at the bounds.
    pub dropped_count: Option<u64>,
    /// Dropped by reason.
    pub dropped: Option<DroppedCounts>,
    /// Events rejected by validation.
    pub rejected_count: Option<u64>,
    /// Spans with unknown end.
    pub unclosed_span_count: Option<u64>,
    /// Fingerprint of the timeline's clock domain.
    pub clock_domain: Option<String>,
    /// Capture start, ns.
    pub start_elapsed_ns: Option<u64>,
    /// Capture end (finalization), ns.
    pub end_elapsed_ns: Option<u64>,
    /// Explicit telemetry join, if any.
    pub telemetry_session_id: Option<String>,
    /// Span ids with unknown end.
    pub unknown_end_spans: Vec<u64>,
}

/// Resource telemetry and its lanes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TelemetryView {
    /// `ok`, `unavailable` (no samples, or no source configured) or `fault`.
    pub state: &'static str,
    /// Why unavailable or the fault.
    pub reason: Option<String>,
    /// Fingerprint of the samples' clock domain.
    pub clock_domain: Option<String>,
    /// Whether the samples share the run's clock domain (`null` when unknown). Samples of
    /// another domain are never placed on the run's time axis.
    pub aligned: Option<bool>,
    /// Sampling start, ns (samples' domain).
    pub started_elapsed_ns: Option<u64>,
    /// Sampling stop, ns (samples' domain).
    pub stopped_elapsed_ns: Option<u64>,
    /// One lane per host, source, device and quantity; never summed.
    pub lanes: Vec<ResourceLane>,
}

/// One resource lane.
#[derive(Clone, Debug, Serialize)]
pub struct ResourceLane {
    /// `power:<device>`, `proc` (RSS), `proc:cpu`, `metrics:<gauge or counter>`.
    pub lane_id: String,
    /// `power`, `proc` or `metrics` (the samples route's `source`).
    pub source: &'static str,
    /// Who sampled it: `runner host` (power, proc) or `engine endpoint` (metrics).
    pub host: &'static str,
    /// Device id in `samples/gpu.jsonl` (power lanes).
    pub device: Option<u32>,
    /// Sanitized label, e.g. `GPU 0 · NVIDIA H200`, `simulated`.
    pub label: String,
    /// The sample field drawn: `power_mw`, `rss_bytes`, or a gauge name.
    pub quantity: String,
    /// Unit of `quantity`: `mW`, `bytes`, `% of one core`, `requests`, `fraction`,
    /// `tokens`.
    pub unit: &'static str,
    /// `level` (a reading held until the next: drawn as steps), `counter` (cumulative,
    /// steps) or `rate` (derived over the interval before each sample): [`LaneQuantity`].
    pub series: &'static str,
    /// For the CPU lane: the sampling host's `CLK_TCK` (jiffies per second) the page
    /// derives the rate with; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clk_tck: Option<u64>,
    /// Power basis (`instant`, `averaged_1s`, `simulated`) when known.
    pub basis: Option<String>,
    /// How exact each sample's time is, in words.
    pub time_uncertainty: String,
    /// Sampling period, ns.
    pub period_ns: u64,
    /// Source status: `ok`, `unavailable`, `ended`, `failed`.
    pub status: &'static str,
    /// Status reason (product text, truncated).
    pub reason: Option<String>,
    /// Samples of this lane.
    pub sample_count: u64,
    /// Samples dropped at the sampler cap (whole source).
    pub dropped: u64,
    /// First sample, ns.
    pub first_elapsed_ns: Option<u64>,
    /// Last sample, ns.
    pub last_elapsed_ns: Option<u64>,
    /// Intervals without samples (itemized up to [`MAX_LANE_GAPS`]).
    pub gaps: Vec<SampleGap>,
    /// Gaps beyond those itemized.
    pub gaps_omitted: u64,
}

/// An interval of a lane without samples, ns in the samples' clock domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SampleGap {
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
}

/// One visible gap or missing association.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GapMarker {
    /// `capture_unavailable`, `integrity_error`, `capture_partial`, `run_cancelled`,
    /// `dropped_events`, `rejected_events`, `seq_gap`, `unknown_end`, `missing_start`,
    /// `missing_parent`, `telemetry_unavailable`, `source_unavailable`,
    /// `clock_domain_mismatch`, `missing_samples`, `failed_scrapes`, `report_missing`.
    pub kind: &'static str,
    /// What a person reads.
    pub label: String,
    /// The lane it belongs to (`lane_id`, `phases`, or a trajectory id), if one.
    pub lane: Option<String>,
    /// Start, ns (run clock domain, or the lane's for `missing_samples`).
    pub start_ns: Option<u64>,
    /// End, ns.
    pub end_ns: Option<u64>,
    /// A count (events, intervals), if one.
    pub count: Option<u64>,
}

impl GapMarker {
    fn new(kind: &'static str, label: impl Into<String>) -> Self {
        Self {
            kind,
            label: label.into(),
            lane: None,
            start_ns: None,
            end_ns: None,
            count: None,
        }
    }
}
#[cfg(test)]
mod tests {
    use super::super::runs::{SamplesState, TimelineState};
    use super::*;

    #[test]
    fn gaps_cover_head_middle_tail_and_empty_lanes() {
        let p = 10;
        assert_eq!(
            sample_gaps(&[100, 110, 120, 200, 210], p, (0, 300)),
            vec![
                SampleGap {
                    start_ns: 0,
                    end_ns: 100
                },
                SampleGap {
                    start_ns: 120,
                    end_ns: 200
                },
                SampleGap {
                    start_ns: 210,
                    end_ns: 300
                },
            ]
        );
        // Within three periods is not a gap.
        assert_eq!(sample_gaps(&[0, 30, 60], p, (0, 60)), vec![]);
        assert_eq!(
            sample_gaps(&[], p, (5, 50)),
            vec![SampleGap {
                start_ns: 5,
                end_ns: 50
            }]
        );
        assert_eq!(sample_gaps(&[], p, (5, 5)), vec![]);
    }

    #[test]
    fn a_clock_domain_is_shown_as_the_report_has_it() {
        let id = "mono:gpu-node-17.corp:42:1796140338577069405";
        assert_eq!(clock_domain_label(id), id);
        assert_eq!(
            clock_domain_label("merged:0123456789abcdef"),
            "merged:0123456789abcdef"
        );
        let odd = "mono:<b>:1:2";
        assert_eq!(clock_domain_label(odd), clock_domain_fingerprint(odd));
        assert!(clock_domain_label(&"x".repeat(301)).starts_with("cd-"));
    }

    #[test]
    fn fingerprints_hide_hosts_and_keep_equality() {
        let a = clock_domain_fingerprint("mono:gpu-node-17.corp:42:1");
        assert!(a.starts_with("cd-") && a.len() == 15);
        assert!(!a.contains("gpu-node"));
        assert_eq!(a, clock_domain_fingerprint("mono:gpu-node-17.corp:42:1"));
        assert_ne!(a, clock_domain_fingerprint("mono:gpu-node-17.corp:42:2"));
    }

    #[test]
    fn codes_pass_only_their_syntax() {
        assert_eq!(code_or_other("http_status"), "http_status");
        assert_eq!(
            code_or_other("error sending request for url (http://10.0.0.7)"),
            "other"
        );
        assert_eq!(bounded_text("a\u{0}b\nc", 10), "abc");
    }

    #[test]
    fn missing_samples_and_no_telemetry_are_markers() {
        let unavailable = telemetry_view(&SamplesState::Missing, &LaneTimes::default(), Some("d"));
        let g = gap_markers(
            &ReportView {
                state: "ok",
                ..Default::default()
            },
            &TimelineState::Unavailable("no_timeline"),
            &timeline_view(&TimelineState::Unavailable("no_timeline")),
            &unavailable,
            0,
        );
        let kinds: Vec<&str> = g.iter().map(|g| g.kind).collect();
        assert_eq!(kinds, ["capture_unavailable", "telemetry_unavailable"]);
    }
}
