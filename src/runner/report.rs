//! `report.json`, `steps.jsonl` and the console lines of a run (DESIGN §7, §10).
//!
//! `report.json` schema `inferscope-bench.report/v1`: per request the times in ns from the
//! reference instant, tokens, cached tokens and failure code; per job the p50/p90/p95/p99
//! of TTFT, ITL, TPOT and E2E, throughput, success, grade and gate verdicts; per
//! trajectory its steps with exact usage and TTFT; the ADR-013 attribution under
//! `trajectory`; for load jobs (issue 8) the settings under `load` and the curve under
//! `sweep`; with `--baseline`, the per-figure comparison under `baseline`. Missing values
//! are `null`, never 0. No prompt, response or tool payload is written.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::attribution::{StepMarker, step_markers_to_jsonl};
use crate::baseline::{self, Baseline, JobComparison};
use crate::client::RequestRecord;
use crate::clock::{RunClock, unix_ns_to_rfc3339};
use crate::gate::{self, Figure, FigureSet, JobOutcome, Verdict};
use crate::grade::CheckResult;
use crate::load::curve::{PointFacts, PointRequest};
use crate::load::energy::RunEnergy;
use crate::load::{
    GoodputCriteria, LoadReport, LoadRun, Sweep, SweepReport, render_curve, summarize_point,
    warmup_flags,
};
use crate::render::{self, EndpointLabel, GradingCheck, JobReportView, RunTotals, Style};
use crate::runner::capture::Capture;
use crate::runner::energy;
use crate::runner::execute::{ExecutedJob, GradedJob, Session};
use crate::runner::steps::{StepKind, StepRecord, StepStatus, StopReason};
use crate::stats::{AggregateParams, JobStats, PERCENTILE_METHOD, RequestFigures};
use crate::telemetry::TelemetryRun;
use crate::timeline::{IoCounters, ManifestInfo};

/// Schema id of `report.json`.
pub const REPORT_SCHEMA: &str = "inferscope-bench.report/v1";

/// The endpoint a suite ran against.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EndpointReport {
    /// Suite name.
    pub suite: String,
    /// Base URL used (the simulator's loopback URL when simulated).
    pub base_url: String,
    /// True when the built-in simulator served the suite (never a real-engine figure).
    pub simulated: bool,
    /// Model name sent.
    pub model: String,
    /// Metrics profile (`auto`, `vllm`, `sglang`, `llamacpp`, `sim`).
    pub engine_profile: String,
}

/// Timeline capture summary.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CaptureReport {
    /// Whether capture was on.
    pub enabled: bool,
    /// `complete`, `partial` or `unavailable`; `null` when off.
    pub quality: Option<String>,
    /// Events kept.
    pub events: Option<u64>,
    /// Events dropped (overflow).
    pub dropped: Option<u64>,
    /// Events rejected by validation.
    pub rejected: Option<u64>,
    /// Relative path of the manifest when written.
    pub manifest: Option<String>,
    /// Bytes the runner wrote to disk during the measured window (`/proc/self/io`
    /// `write_bytes` delta); `null` when unreadable.
    pub window_write_bytes: Option<u64>,
    /// Persistence problem, if any (never changes job results or the exit status).
    pub diagnostic: Option<String>,
}

/// One step in the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepReport {
    /// Run-unique step id.
    pub step_id: u64,
    /// `llm_call` or `tool`.
    pub kind: String,
    /// `chat` or the tool name.
    pub name: String,
    /// Start, ns from the reference instant.
    pub start_ns: u64,
    /// End, ns from the reference instant.
    pub end_ns: u64,
    /// Duration, ms.
    pub duration_ms: f64,
    /// `completed`, `failed` or `cancelled`.
    pub status: String,
    /// Failure code, `null` on success.
    pub failure_code: Option<String>,
    /// Prompt tokens from this response's usage (exact); `null` for tools or unreported.
    pub prompt_tokens: Option<u64>,
    /// Cached prompt tokens from this response's usage; `null` when not reported.
    pub cached_tokens: Option<u64>,
    /// Completion tokens (count): this response's usage, or — when the server sent none —
    /// the client estimate (`token_source = client_estimate`, DESIGN §5); `null` for tools
    /// or when nothing is known.
    pub completion_tokens: Option<u64>,
    /// Where `completion_tokens` came from: `server` (usage) or `client_estimate`
    /// ([`crate::client::TokenSource`]); `null` when there is no count. Absent in reports
    /// written before the field existed.
    #[serde(default)]
    pub token_source: Option<crate::client::TokenSource>,
    /// TTFT, ms from send; `null` for tools or when no token arrived.
    pub ttft_ms: Option<f64>,
    /// Step energy, mJ (ADR-013 trapezoid; basis in `energy_basis`); `null` when
    /// unattributed or unmeasured.
    pub energy_mj: Option<u64>,
    /// `measured`, `apportioned`, `simulated` or `null` (no power source; ADR-013's
    /// [`crate::attribution::EnergyBasis::of`]). Above one trajectory in flight (load jobs)
    /// always `apportioned`, never `measured` (ADR-013 wall); on the simulator never
    /// `measured`.
    pub energy_basis: Option<String>,
    /// A warm-up request of a load point: recorded, excluded from statistics.
    #[serde(default)]
    pub warmup: bool,
    /// For an SWE harness marker that starts before the run's reference instant: how
    /// long before it, ns (`start_ns` is then 0, the real start `reference_instant_unix_ns
    /// −` this); `null` otherwise. Absent in older reports.
    #[serde(default)]
    pub start_before_anchor_ns: Option<u64>,
}

/// One trajectory in the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrajectoryReport {
    /// `suite::job#index`.
    pub id: String,
    /// Repeat index.
    pub index: u32,
    /// Why it stopped.
    pub stop_reason: String,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Whether every check passed for this trajectory (`null` without checks).
    pub graded_pass: Option<bool>,
    /// Steps.
    pub steps: Vec<StepReport>,
}

/// SWE harness result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HarnessReport {
    /// Exit code (`null` when killed or not started).
    pub exit_code: Option<i32>,
    /// Killed after the timeout.
    pub timed_out: bool,
    /// Why it could not start.
    pub spawn_error: Option<String>,
    /// What was read from its `INFERSCOPE_STEPS_FILE` (`truncated_tail`, rejected lines,
    /// steps before the anchor); `null` when it wrote none. Absent in older reports.
    #[serde(default)]
    pub steps_file: Option<crate::runner::swe::StepsFileReport>,
}

/// One job in the report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JobReport {
    /// `suite::job`.
    pub id: String,
    /// `agentic`, `context` or `swe`.
    pub kind: String,
    /// `pass`, `fail`, or `not_run` (the run was cancelled before the job started: it made
    /// no request and counts as neither passed nor failed; nextest's convention).
    pub status: String,
    /// Job duration, ns.
    pub duration_ns: u64,
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// Request statistics (`null` when the job made no requests of its own). For a load
    /// job: every non-warm-up request of every point, rates over the sum of the point
    /// windows (per-point figures are under `sweep`).
    pub stats: Option<JobStats>,
    /// Gate verdicts (the built-in `successful_requests` first); empty for a `not_run` job.
    pub verdicts: Vec<Verdict>,
    /// Grading checks: `(description, passed, reason)` over all trajectories.
    pub grading: Vec<GradingCheck>,
    /// Fraction of trajectories that passed grading (`null` without checks).
    pub grade_pass_rate: Option<f64>,
    /// Failed requests per failure code.
    pub failure_codes: Vec<(String, u64)>,
    /// Notes (preflight, set-up, energy basis).
    pub notes: Vec<String>,
    /// SWE harness outcome.
    pub harness: Option<HarnessReport>,
    /// Load settings and what was achieved (`null` for a sequential job; issue 8).
    #[serde(default)]
    pub load: Option<LoadReport>,
    /// The load curve: one point per sweep value, or one point (`null` for a sequential
    /// job).
    #[serde(default)]
    pub sweep: Option<SweepReport>,
    /// Comparison with `--baseline NAME` (`null` without one, or when the baseline lacks
    /// this job).
    #[serde(default)]
    pub baseline: Option<JobComparison>,
    /// Trajectories.
    pub trajectories: Vec<TrajectoryReport>,
    /// Every request of the job (no content).
    pub requests: Vec<RequestRecord>,
}

impl JobReport {
    /// The renderers' view of this job.
    pub fn view(&self) -> JobReportView {
        JobReportView {
            id: self.id.clone(),
            kind: self.kind.clone(),
            passed: self.status == "pass",
            not_run: self.status == "not_run",
            duration_ns: self.duration_ns,
            verdicts: self.verdicts.clone(),
            grading: self.grading.clone(),
            stats: self.stats.clone(),
            failure_codes: self.failure_codes.clone(),
            notes: self.notes.clone(),
        }
    }
}

/// Run totals.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SummaryReport {
    /// Jobs run (`passed + failed`; jobs not run are not counted).
    pub jobs: usize,
    /// Jobs passed.
    pub passed: usize,
    /// Jobs failed.
    pub failed: usize,
    /// Jobs not run because the run was cancelled before they started (status
    /// `not_run`). Absent in reports written before the field existed (read as 0).
    #[serde(default)]
    pub not_run: usize,
    /// Run duration, ns.
    pub duration_ns: u64,
    /// 0 all passed, 100 any failed or the run was cancelled (Ctrl-C / SIGTERM: never 0),
    /// 2 no job selected or artifacts not written.
    pub exit_status: i32,
}

/// `report.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    /// [`REPORT_SCHEMA`].
    pub schema: String,
    /// Run id.
    pub run_id: String,
    /// `inferscope-bench <version>`.
    pub tool: String,
    /// Run start, RFC 3339 UTC (display only).
    pub started_utc: String,
    /// ADR-013 anchor: unix ns of the reference instant.
    pub reference_instant_unix_ns: u64,
    /// Clock domain of every `*_ns` value.
    pub clock_domain_id: String,
    /// Percentile method of every percentile.
    pub percentile_method: String,
    /// True when Ctrl-C ended the run early.
    pub cancelled: bool,
    /// The first suite's endpoint (see `endpoints` for all).
    pub endpoint: Option<EndpointReport>,
    /// Every suite's endpoint.
    pub endpoints: Vec<EndpointReport>,
    /// Timeline capture.
    pub capture: CaptureReport,
    /// Sampler status (sources, periods, counts, reasons).
    pub telemetry: Option<serde_json::Value>,
    /// Jobs.
    pub jobs: Vec<JobReport>,
    /// ADR-013 trajectory attribution (`null` when withheld for the whole run).
    pub trajectory: Option<serde_json::Value>,
    /// Totals.
    pub summary: SummaryReport,
    /// Rendered per-step tables of the load points (console only; empty in a run without
    /// load jobs: [`trajectory_tables`] renders the sequential jobs' tables from the report).
    #[serde(skip)]
    pub tables: Vec<String>,
}

impl RunReport {
    /// The endpoint job `job_id` ran against: the entry of `endpoints` whose suite is the
    /// job id's part before `::`, else the first suite's `endpoint`; `None` when the report
    /// has neither.
    pub fn endpoint_of(&self, job_id: &str) -> Option<&EndpointReport> {
        let suite = job_id.split_once("::").map_or(job_id, |(s, _)| s);
        self.endpoints
            .iter()
            .find(|e| e.suite == suite)
            .or(self.endpoint.as_ref())
    }
}

fn figures(r: &RequestRecord) -> RequestFigures {
    RequestFigures {
        ok: r.is_success(),
        ttft_ms: r.ttft_ms(),
        itl_ms: r.itl_ms(),
        tpot_ms: r.tpot_ms(),
        e2e_ms: r.e2e_ms(),
        output_tokens: r.output_tokens(),
        prompt_tokens: r.prompt_tokens,
        cached_tokens: r.cached_tokens,
        schedule_lag_ms: Some(r.schedule_lag_ns() as f64 / 1e6),
    }
}

fn step_status(s: StepStatus) -> &'static str {
    match s {
        StepStatus::Completed => "completed",
        StepStatus::Failed => "failed",
        StepStatus::Cancelled => "cancelled",
    }
}

fn stop_reason(s: StopReason) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn step_report(s: &StepRecord, energy: Option<&energy::StepEnergy>, warmup: bool) -> StepReport {
    let r = s.request.as_ref();
    StepReport {
        step_id: s.step_id,
        kind: match s.kind {
            StepKind::LlmCall => "llm_call".into(),
            StepKind::Tool => "tool".into(),
        },
        name: s.name.clone(),
        start_ns: s.start_ns,
        end_ns: s.end_ns,
        duration_ms: s.duration_ms(),
        start_before_anchor_ns: s.start_before_anchor_ns,
        status: step_status(s.status).into(),
        failure_code: s.failure_code.clone(),
        prompt_tokens: r.and_then(|r| r.prompt_tokens),
        cached_tokens: r.and_then(|r| r.cached_tokens),
        completion_tokens: r.and_then(|r| r.completion_tokens),
        token_source: r
            .filter(|r| r.completion_tokens.is_some())
            .and_then(|r| r.token_source),
        ttft_ms: r.and_then(|r| r.ttft_ms()),
        energy_mj: energy.and_then(|e| e.energy_mj),
        energy_basis: energy.and_then(|e| e.basis.clone()),
        warmup,
    }
}

/// Request ids of the warm-up requests of every point of a load job (the first `warmup`
/// of each point by scheduled, then actual send time).
fn warmup_ids(e: &ExecutedJob, l: &LoadRun) -> Vec<String> {
    let mut out = Vec::new();
    for p in &l.points {
        let reqs: Vec<&RequestRecord> = e.trajectories[p.trajectories.clone()]
            .iter()
            .flat_map(|t| t.steps.iter().filter_map(|s| s.request.as_ref()))
            .collect();
        let keys: Vec<(u64, u64)> = reqs.iter().map(|r| (r.scheduled_ns, r.send_ns)).collect();
        for (r, w) in reqs.iter().zip(warmup_flags(&keys, p.point.warmup)) {
            if w {
                out.push(r.request_id.clone());
            }
        }
    }
    out
}

/// The curve of a load job: one summary per point (see [`crate::load::curve`]);
/// `windows[i]` is point i's window energy ([`RunEnergy::window`]).
fn curve(
    e: &ExecutedJob,
    l: &LoadRun,
    warm: &HashSet<&str>,
    windows: &[Option<(u64, String, String)>],
) -> Vec<crate::load::PointSummary> {
    let criteria = GoodputCriteria::from_gates(&e.job.gates);
    let values = l.spec.sweep.as_ref().map_or_else(Vec::new, Sweep::values);
    l.points
        .iter()
        .zip(windows)
        .map(|(p, window)| {
            let reqs: Vec<PointRequest> = e.trajectories[p.trajectories.clone()]
                .iter()
                .flat_map(|t| t.steps.iter().filter_map(|s| s.request.as_ref()))
                .map(|r| PointRequest {
                    figures: figures(r),
                    warmup: warm.contains(r.request_id.as_str()),
                })
                .collect();
            let value = values.get(p.point.index).copied();
            let facts = PointFacts {
                index: p.point.index,
                value,
                label: p.point.label(),
                concurrency: p.point.concurrency,
                rate: p.point.rate,
                achieved_concurrency: p.max_units_in_flight,
                max_requests_in_flight: p.max_requests_in_flight,
                units: p.units_started,
                window_ns: p.window_ns(),
                energy: window.clone(),
            };
            summarize_point(facts, &reqs, criteria.as_ref())
        })
        .collect()
}

/// Builds the report: statistics, attribution, gates.
pub fn build(
    run_id: &str,
    clock: &RunClock,
    session: &Session,
    graded: &[GradedJob],
    telemetry: Option<&TelemetryRun>,
    cancelled: bool,
    baseline: Option<&Baseline>,
) -> RunReport {
    let end_ns = clock.elapsed_ns();
    let attribution = RunEnergy::attribute(graded, telemetry, session);
    let mut jobs = Vec::new();
    for g in graded {
        let e = &g.executed;
        let requests: Vec<RequestRecord> = e
            .trajectories
            .iter()
            .flat_map(|t| t.steps.iter().filter_map(|s| s.request.clone()))
            .map(|mut r| {
                // Server error text can echo the prompt: report.json keeps the typed
                // failure code and HTTP status, never the text.
                r.error = None;
                r
            })
            .collect();
        let duration_ns = e.end_ns.saturating_sub(e.start_ns);
        // Load jobs: warm-up requests stay recorded but leave every statistic, and rates
        // are over the points' windows (not the gaps between points).
        let warm_ids: Vec<String> = e
            .load
            .as_ref()
            .map(|l| warmup_ids(e, l))
            .unwrap_or_default();
        let warm: HashSet<&str> = warm_ids.iter().map(String::as_str).collect();
        let window_ns = e.load.as_ref().map_or(duration_ns, |l| {
            l.points.iter().map(|p| p.window_ns()).sum()
        });
        let measured: Vec<&RequestRecord> = requests
            .iter()
            .filter(|r| !warm.contains(r.request_id.as_str()))
            .collect();
        let stats = (!measured.is_empty()).then(|| {
            let figs: Vec<RequestFigures> = measured.iter().map(|r| figures(r)).collect();
            JobStats::aggregate(&figs, AggregateParams::new(window_ns.max(1)))
        });
        let mut figs = stats
            .as_ref()
            .map(FigureSet::from_job_stats)
            .unwrap_or_default();
        let is_swe = e.harness.is_some();
        if is_swe {
            // An SWE harness talks to the endpoint itself: its success stands for the
            // built-in "at least one successful request" rule.
            let harness_ok = e.harness.as_ref().is_some_and(|h| h.exit_code == Some(0));
            figs.successful_requests = u64::from(harness_ok);
            figs.error_rate = Figure::unavailable(gate::basis::REQUEST_OUTCOMES, "swe harness");
        }
        figs.grade_pass_rate = match g.grade_pass_rate() {
            Some(v) => Figure::available(v, gate::basis::GRADING),
            None => Figure::unavailable(gate::basis::GRADING, "no checks"),
        };
        // Each load point's window energy, computed once for the job figures and the curve.
        let windows: Vec<Option<(u64, String, String)>> =
            e.load.as_ref().map_or_else(Vec::new, |l| {
                l.points
                    .iter()
                    .map(|p| attribution.window(p.start_ns, p.end_ns))
                    .collect()
            });
        let job_energy = match &e.load {
            Some(l) => attribution.load_job_figures(l, &windows, &e.trajectories),
            None => attribution
                .job_figures(&e.job.job.id)
                .unwrap_or_else(|| energy::JobEnergy {
                    tokens_per_joule: Figure::unavailable(gate::basis::MEASURED, "no telemetry"),
                    energy_per_trajectory_j: Figure::unavailable(
                        gate::basis::MEASURED,
                        "no telemetry",
                    ),
                    notes: Vec::new(),
                }),
        };
        figs.tokens_per_joule = job_energy.tokens_per_joule.clone();
        figs.energy_per_trajectory_j = job_energy.energy_per_trajectory_j.clone();
        let (load, sweep) = match &e.load {
            Some(l) => (
                Some(LoadReport::new(l, warm_ids.clone())),
                Some(SweepReport::new(&l.spec, curve(e, l, &warm, &windows))),
            ),
            None => (None, None),
        };
        let comparison = baseline.and_then(|b| {
            let (samples, n, ok) = baseline::samples_of(requests.iter(), &warm, e.load.is_some());
            let kind = e.job.job.kind_name().as_str();
            b.compare(
                &baseline::job_summary(&e.job.job.id, kind, n, ok, &samples),
                baseline::DEFAULT_NOISE_PCT,
            )
        });
        figs.regression_pct = baseline::compare::regression_figure(
            comparison.as_ref(),
            baseline.map(|b| b.name.as_str()),
            &e.job.job.id,
        );
        let spec = &e.job.gates;
        let mut verdicts = gate::evaluate(spec, &figs);
        if baseline.is_none() {
            // `regression_pct` compares with `--baseline NAME`; a run without one (e.g. the
            // run a baseline is saved from) reports the gate as skipped, never passed.
            for v in verdicts.iter_mut().filter(|v| v.gate == "regression_pct") {
                *v = gate::Verdict::judge(
                    &v.gate,
                    &v.figure,
                    &v.unit,
                    v.comparison,
                    v.bound,
                    &figs.regression_pct,
                    gate::spec::WhenUnavailable::Skip,
                );
            }
        }
        if e.cancelled_before_start {
            // A job that never started was not judged: no verdict, least of all a failed
            // `successful_requests` (it is `not_run`, and the cancelled run exits 100).
            verdicts.clear();
        }
        let grading: Vec<GradingCheck> = g
            .checks
            .iter()
            .enumerate()
            .flat_map(|(i, cs)| {
                let multi = g.checks.len() > 1;
                cs.iter().map(move |c: &CheckResult| {
                    let name = if multi {
                        format!("#{i} {}", c.check)
                    } else {
                        c.check.clone()
                    };
                    (name, c.passed, c.reason.clone())
                })
            })
            .collect();
        let mut notes = e.notes.clone();
        if let (Some(b), None) = (baseline, &comparison) {
            notes.push(format!("baseline {} has no job {}", b.name, e.job.job.id));
        }
        if let Some(err) = &e.setup_error {
            notes.push(format!("not run: {err}"));
        }
        notes.extend(job_energy.notes.iter().cloned());
        let mut harness_ok = true;
        if let Some(h) = &e.harness {
            if h.timed_out {
                notes.push("harness timed out; its process group was killed".into());
                harness_ok = false;
            } else if let Some(err) = &h.spawn_error {
                notes.push(format!("harness: {err}"));
                harness_ok = false;
            } else if h.exit_code != Some(0) {
                notes.push(format!("harness exited with {:?}", h.exit_code));
                harness_ok = false;
            }
            if let Some(f) = &h.steps_file {
                notes.extend(steps_file_notes(f));
            }
        }
        let outcome = JobOutcome::from_verdicts(&verdicts, g.grading_passed());
        // A trajectory that ended without its final answer (max_steps, a repeated tool
        // call, a failed request, Ctrl-C) fails the job even without checks (C27).
        let unfinished: Vec<String> = e
            .trajectories
            .iter()
            .filter(|t| {
                !matches!(
                    t.stop_reason,
                    StopReason::FinalAnswer | StopReason::Completed
                )
            })
            .map(|t| format!("{} stopped: {}", t.id, stop_reason(t.stop_reason)))
            .collect();
        notes.extend(unfinished.iter().cloned());
        let passed = outcome == JobOutcome::Pass
            && harness_ok
            && e.setup_error.is_none()
            && unfinished.is_empty();
        let mut failure_codes: BTreeMap<String, u64> = BTreeMap::new();
        for r in requests.iter().filter(|r| !r.is_success()) {
            let code = r
                .failure_code
                .map(|c| c.as_str().to_string())
                .unwrap_or_else(|| "cancelled".into());
            *failure_codes.entry(code).or_default() += 1;
        }
        let trajectories = e
            .trajectories
            .iter()
            .enumerate()
            .map(|(i, t)| TrajectoryReport {
                id: t.id.clone(),
                index: t.index,
                stop_reason: stop_reason(t.stop_reason),
                start_ns: t.start_ns,
                end_ns: t.end_ns,
                graded_pass: g
                    .checks
                    .get(i)
                    .filter(|c| !c.is_empty())
                    .map(|c| c.iter().all(|r| r.passed)),
                steps: t
                    .steps
                    .iter()
                    .map(|s| {
                        let warmup = s
                            .request
                            .as_ref()
                            .is_some_and(|r| warm.contains(r.request_id.as_str()));
                        step_report(s, attribution.step(&t.id, s.step_id), warmup)
                    })
                    .collect(),
            })
            .collect();
        jobs.push(JobReport {
            id: e.job.job.id.clone(),
            kind: e.job.job.kind_name().as_str().into(),
            status: if e.cancelled_before_start {
                "not_run"
            } else if passed {
                "pass"
            } else {
                "fail"
            }
            .into(),
            duration_ns,
            start_ns: e.start_ns,
            end_ns: e.end_ns,
            stats,
            verdicts,
            grading,
            grade_pass_rate: g.grade_pass_rate(),
            failure_codes: failure_codes.into_iter().collect(),
            notes,
            harness: e.harness.as_ref().map(|h| HarnessReport {
                exit_code: h.exit_code,
                timed_out: h.timed_out,
                spawn_error: h.spawn_error.clone(),
                steps_file: h.steps_file.clone(),
            }),
            load,
            sweep,
            baseline: comparison,
            trajectories,
            requests,
        });
    }
    let passed = jobs.iter().filter(|j| j.status == "pass").count();
    let not_run = jobs.iter().filter(|j| j.status == "not_run").count();
    let failed = jobs.len() - passed - not_run;
    let any_runner_requests = jobs.iter().any(|j| j.stats.is_some());
    let successful: u64 = jobs
        .iter()
        .filter_map(|j| j.stats.as_ref())
        .map(|s| s.succeeded)
        .sum();
    // Zero successful requests in a run that made requests always fails (DESIGN §7);
    // a run that selected no job is bad input (exit 2); a cancelled run (jobs not run
    // included) never exits 0: it exits 100.
    let exit_status = if jobs.is_empty() {
        gate::EXIT_BAD_INPUT
    } else if failed > 0 || (any_runner_requests && successful == 0) || cancelled {
        gate::EXIT_FAILED
    } else {
        gate::EXIT_OK
    };
    let endpoints: Vec<EndpointReport> = session
        .suites
        .iter()
        .map(|s| EndpointReport {
            suite: s.resolved.suite.name.clone(),
            base_url: s.base_url.clone(),
            simulated: s.simulated,
            model: s.model.clone(),
            engine_profile: s.resolved.suite.engine.as_str().into(),
        })
        .collect();
    RunReport {
        schema: REPORT_SCHEMA.into(),
        run_id: run_id.into(),
        tool: format!("inferscope-bench {}", env!("CARGO_PKG_VERSION")),
        started_utc: unix_ns_to_rfc3339(clock.reference_instant_unix_ns()),
        reference_instant_unix_ns: clock.reference_instant_unix_ns(),
        clock_domain_id: clock.clock_domain_id().into(),
        percentile_method: PERCENTILE_METHOD.into(),
        cancelled,
        endpoint: endpoints.first().cloned(),
        endpoints,
        capture: CaptureReport::default(),
        telemetry: telemetry.map(|t| {
            serde_json::json!({"proc": t.proc, "power": t.power, "metrics": t.metrics,
                "prometheus": t.prometheus,
                "started_elapsed_ns": t.started_elapsed_ns, "stopped_elapsed_ns": t.stopped_elapsed_ns})
        }),
        jobs,
        trajectory: attribution.run_value(),
        tables: attribution.tables(),
        summary: SummaryReport {
            jobs: passed + failed,
            passed,
            failed,
            not_run,
            duration_ns: end_ns,
            exit_status,
        },
    }
}

/// The endpoint label for console output.
pub fn endpoint_label(report: &RunReport) -> EndpointLabel {
    match &report.endpoint {
        Some(e) if e.simulated => EndpointLabel::Simulated,
        Some(e) => EndpointLabel::Url(e.base_url.clone()),
        None => EndpointLabel::Simulated,
    }
}

/// nextest-style lines: one block per job, the summary line, the plain line.
pub fn console_lines(report: &RunReport) -> Vec<String> {
    let style = Style::PLAIN;
    let views: Vec<JobReportView> = report.jobs.iter().map(JobReport::view).collect();
    let mut out = Vec::new();
    for (v, j) in views.iter().zip(&report.jobs) {
        let mut block = render::job_block(v, style)
            .trim_end_matches('\n')
            .to_string();
        // Load jobs: the curve; `--baseline`: the per-figure comparison.
        if let Some(sw) = &j.sweep {
            block.push('\n');
            block.push_str(&render_curve(&j.id, sw.variable.as_deref(), &sw.points));
        }
        if let Some(c) = &j.baseline {
            block.push('\n');
            block.push_str(&crate::baseline::render_job(c));
        }
        out.push(block);
    }
    let totals = RunTotals::from_jobs(&views, report.summary.duration_ns);
    out.push(render::summary_line(&totals, style));
    out.push(render::plain_line(&totals));
    out
}

/// Per-step tables of the attribution, one per trajectory (printed after the job lines).
///
/// A run with load jobs prints the sequential jobs' tables under their own concurrency
/// condition, then for each load point the ADR-013 table of its first trajectory under
/// that point's condition (`apportioned` above one in flight); every trajectory is in
/// report.json.
pub fn trajectory_tables(report: &RunReport) -> Vec<String> {
    if report.jobs.iter().all(|j| j.load.is_none()) {
        return super::table::step_tables(report);
    }
    let mut seq = report.clone();
    seq.jobs.retain(|j| j.load.is_none());
    let ids: HashSet<String> = seq
        .jobs
        .iter()
        .flat_map(|j| j.trajectories.iter().map(|t| t.id.clone()))
        .collect();
    if let Some(v) = seq.trajectory.as_mut() {
        if let Some(ts) = v.get_mut("trajectories").and_then(|t| t.as_array_mut()) {
            ts.retain(|t| {
                t.get("trajectory")
                    .and_then(|x| x.as_str())
                    .is_some_and(|id| ids.contains(id))
            });
        }
        // The sequential group's own condition: its declared and observed figures, and the
        // energy basis its join gave (from the power series it had).
        let group = v
            .get("groups")
            .and_then(|g| g.as_array())
            .and_then(|g| g.iter().find(|x| x["group"] == "sequential jobs"))
            .cloned();
        let n = |x: u64| u32::try_from(x).unwrap_or(u32::MAX);
        let (d, o) = group.as_ref().map_or((1, None), |g| {
            let d = g["declared_max_trajectories_in_flight"]
                .as_u64()
                .unwrap_or(1);
            (
                n(d),
                g["observed_max_trajectories_in_flight"].as_u64().map(n),
            )
        });
        let mut c = serde_json::to_value(crate::attribution::concurrency_condition(d, o, None))
            .unwrap_or_default();
        c["energy_basis"] = group.map_or(serde_json::Value::Null, |g| g["energy_basis"].clone());
        v["concurrency"] = c;
    }
    let mut out = if seq.jobs.is_empty() {
        Vec::new()
    } else {
        super::table::step_tables(&seq)
    };
    out.extend(report.tables.iter().cloned());
    out
}

/// The console notes of an SWE steps file: a truncated tail, every rejected line (by its
/// line number) and steps that start before the run's anchor.
fn steps_file_notes(f: &crate::runner::swe::StepsFileReport) -> Vec<String> {
    let mut notes = Vec::new();
    if let Some(e) = &f.read_error {
        notes.push(format!("steps file unreadable: {e}"));
    }
    if let Some(l) = f.truncated_line {
        notes.push(format!(
            "steps file: truncated_tail: line {l} was half-written and left out; the {} \
             marker(s) before it are kept",
            f.markers
        ));
    }
    for r in &f.rejected {
        notes.push(format!(
            "steps file line {}: rejected step marker: {}",
            r.line, r.message
        ));
    }
    if f.rejected_count > f.rejected.len() {
        notes.push(format!(
            "steps file: {} more rejected line(s)",
            f.rejected_count - f.rejected.len()
        ));
    }
    if !f.before_anchor_steps.is_empty() {
        notes.push(format!(
            "steps file: {} step(s) start before the run's reference instant (steps {:?}): \
             kept with their real times, dropped from attribution by ADR-013's outside_run \
             rule",
            f.before_anchor_steps.len(),
            f.before_anchor_steps
        ));
    }
    notes
}

fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// The ADR-013 markers of every step of every trajectory (unix ns from the anchor).
pub fn step_markers(report: &RunReport) -> Vec<StepMarker> {
    let anchor = report.reference_instant_unix_ns;
    report
        .jobs
        .iter()
        .flat_map(|j| j.trajectories.iter())
        .flat_map(|t| {
            t.steps.iter().map(move |s| StepMarker {
                step_id: s.step_id,
                kind: if s.kind == "tool" {
                    crate::attribution::StepKind::Tool
                } else {
                    crate::attribution::StepKind::LlmCall
                },
                t_start_unix_ns: match s.start_before_anchor_ns {
                    Some(b) => anchor.saturating_sub(b),
                    None => anchor + s.start_ns,
                },
                t_end_unix_ns: anchor + s.end_ns,
                trajectory: Some(t.id.clone()),
                name: Some(s.name.clone()),
            })
        })
        .collect()
}

/// Writes `report.json`, `steps.jsonl`, `samples/` and the timeline (when captured)
/// into `run_dir`, after the measured window. A timeline persistence failure is recorded
/// as a capture diagnostic and never changes results.
#[allow(clippy::too_many_arguments)]
pub fn write_artifacts(
    run_dir: &Path,
    report: &mut RunReport,
    telemetry: Option<&TelemetryRun>,
    capture: &Capture,
    io_before: Option<IoCounters>,
    io_after: Option<IoCounters>,
    cancelled: bool,
) -> std::io::Result<()> {
    std::fs::create_dir_all(run_dir)?;
    report.capture.enabled = capture.is_on();
    report.capture.window_write_bytes = match (io_before, io_after) {
        (Some(a), Some(b)) => Some(b.write_bytes.saturating_sub(a.write_bytes)),
        _ => None,
    };
    if let Some(sink) = capture.sink() {
        let tl = sink.timeline();
        let summary = tl.finalize(cancelled);
        report.capture.events = Some(summary.event_count);
        report.capture.dropped = Some(summary.dropped.total());
        report.capture.rejected = Some(summary.rejected.total());
        report.capture.quality = Some(summary.quality.as_str().into());
        let info = ManifestInfo {
            io_before,
            io_after,
            telemetry_session_id: None,
        };
        match tl.persist(run_dir, &info) {
            Ok(p) => {
                report.capture.quality = Some(p.quality.as_str().into());
                report.capture.manifest = Some("timeline/manifest.json".into());
            }
            Err(e) => report.capture.diagnostic = Some(e.to_string()),
        }
    }
    if let Some(t) = telemetry
        && let Err(e) = t.write_samples(run_dir)
    {
        eprintln!("warning: samples not written: {e}");
    }
    let markers = step_markers(report);
    write_atomic(
        &run_dir.join("steps.jsonl"),
        step_markers_to_jsonl(&markers).as_bytes(),
    )?;
    let json = serde_json::to_vec_pretty(report).map_err(std::io::Error::other)?;
    write_atomic(&run_dir.join("report.json"), &json)?;
    Ok(())
}
