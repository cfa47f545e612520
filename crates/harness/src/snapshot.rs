//! Redacted trajectory reports for snapshot testing with insta.
//!
//! [`redacted_job_report`] turns one job of a run's `report.json` into a JSON document
//! that is stable across runs of a deterministic endpoint (the built-in simulator with a
//! fixed seed): it keeps the structure, step kinds and names, step statuses and failure
//! codes, token counts from each response's own usage (prompt, cached, completion),
//! finish and stop reasons, grading results, gate outcomes, bounds and bases, the power
//! source, and the step attribution (docs/measurement.md) status and bases; it redacts what varies from run
//! to run:
//!
//! | field | snapshot | why |
//! |---|---|---|
//! | step / request ids, run id, trajectory ids | dropped (the step's position is kept) | run-local counters, random ids |
//! | times, durations, TTFT (`*_ns`, `*_ms`) | `"[ms]"` when present, `null` when absent | wall-clock timing |
//! | step energy | `"[mJ]"` when accounted for, else `null` | the value is timing; `"[mJ]"` means the step has its own figure, or — a window shorter than the sampling grid, where whether a sample segment falls inside depends on scheduling — its energy is in the trajectory's unattributed energy; `null` means nothing accounts for it (no power source, attribution withheld, a device without coverage), so energy disappearing changes the snapshot |
//! | trajectory energy | `"[mJ]"` when accounted for, else `null` | the same rule as a step's: its own figure, or every step shorter than the sampling grid (so none has a figure of its own) |
//! | gate values in ms, J, tokens/J, % | `"[ms]"`, `"[J]"`, … (`null` stays `null`) | timing or energy |
//! | gate values without unit (counts, rates) | rounded to 4 decimals | deterministic |
//! | gate messages | dropped | they embed the value |
//! | URLs in notes (loopback port) | `"[url]"` | the simulator's port is random |
//! | the note on low-confidence counter steps (`engine counters: …`) | dropped | which steps a scrape proved depends on where the scrapes fell: timing |
//! | counter deltas, samples in window, coverage | dropped | scrape/sample timing |
//!
//! The body is `serde_json` pretty JSON (2-space indent). The Rust harness asserts it
//! with `insta::assert_snapshot!` and the CLI (`inferscope-bench snapshot`) writes the same
//! body into an insta `.snap.new` file ([`snap_file_text`]), so both paths produce the
//! same snapshot, header included ([`snap_header`]: no run id, nothing that varies). The
//! harness runs each job alone against a fresh simulator; `run` on the built-in simulator
//! empties its prefix cache at the start of every job, so a run of several jobs snapshots
//! the same cached-token counts as the harness. Against a real endpoint the cache carries
//! over between jobs (a real difference, shown as such).

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::model::{
    AttributionOutcome, Basis, Comparison, EnergyBasis, FailureCode, FailureCount, HarnessReport,
    JobKind, JobReport, JobStatus, NO_STEP_ENERGY, Outcome, PowerBasisLabel, RunReport, StepKind,
    StepReport, StepStatus, StopReason, TokenEstimate, TokenSource, TrajectoryReport, Verdict,
};

/// Schema id of a redacted job report. v2: typed enums, bases as their serialized names,
/// the energy of each step and trajectory recorded as present (`"[mJ]"`) or `null`.
pub const SNAPSHOT_SCHEMA: &str = "inferscope-bench.snapshot/v2";

/// The snapshot name of a job id: `agentic::lookup` → `agentic__lookup`; every
/// character outside `[A-Za-z0-9_-]` becomes `_` (insta file names are `<name>.snap`).
pub fn snapshot_name(job_id: &str) -> String {
    job_id
        .replace("::", "__")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn timing(v: Option<f64>) -> Option<&'static str> {
    v.map(|_| "[ms]")
}

fn redact_urls(s: &str) -> String {
    // Loopback ports and hosts vary per run; the text around them does not.
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"https?://[^\s,;)]+").expect("static regex"))
        .replace_all(s, "[url]")
        .into_owned()
}

/// A job note as snapshotted: URLs redacted; `None` for the note on steps whose counters
/// are low confidence (which steps a scrape proved depends on where the scrapes fell).
fn redact_note(s: &str) -> Option<String> {
    (!s.starts_with("engine counters: ")).then(|| redact_urls(s))
}

fn round4(v: f64) -> Value {
    let r = (v * 10_000.0).round() / 10_000.0;
    serde_json::Number::from_f64(r).map_or(Value::Null, Value::Number)
}

#[derive(Serialize)]
struct SnapVerdict<'a> {
    gate: &'a str,
    figure: &'a str,
    comparison: Comparison,
    bound: f64,
    unit: &'a str,
    basis: Basis,
    tokens: Option<TokenSource>,
    built_in: bool,
    value: Value,
    outcome: Outcome,
}

fn verdict(v: &Verdict) -> SnapVerdict<'_> {
    SnapVerdict {
        gate: &v.gate,
        figure: &v.figure,
        comparison: v.comparison,
        bound: v.bound,
        unit: &v.unit,
        basis: v.basis,
        tokens: v.tokens,
        built_in: v.built_in,
        value: match (v.value, v.unit.as_str()) {
            (None, _) => Value::Null,
            (Some(x), "") => round4(x),
            (Some(_), u) => Value::String(format!("[{u}]")),
        },
        outcome: v.outcome,
    }
}

#[derive(Serialize)]
struct SnapLlm<'a> {
    prompt_tokens: Option<u64>,
    cached_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    completion_tokens_estimate: Option<TokenEstimate>,
    finish_reason: Option<&'a str>,
    ttft_ms: Option<&'static str>,
}

#[derive(Serialize)]
struct SnapStep<'a> {
    step: usize,
    kind: StepKind,
    name: &'a str,
    status: Option<StepStatus>,
    failure_code: Option<FailureCode>,
    #[serde(flatten)]
    llm: Option<SnapLlm<'a>>,
    duration_ms: Option<&'static str>,
    energy: Option<&'static str>,
    energy_basis: Option<Basis>,
}

/// `"[mJ]"` when the step's energy is accounted for: its own figure, or — for a window
/// shorter than the sampling grid, where whether a sample segment falls inside depends on
/// scheduling — the trajectory's unattributed energy; `null` when nothing accounts for it
/// (no power source, attribution withheld, the step dropped, a device without coverage).
fn step_energy(s: &StepReport) -> Option<&'static str> {
    let grid_only = s
        .energy
        .reason
        .as_deref()
        .is_some_and(|r| r.starts_with("no power-sample segment lies fully inside"));
    (s.energy.is_present() || grid_only).then_some("[mJ]")
}

fn step(i: usize, s: &StepReport) -> SnapStep<'_> {
    let accounted = step_energy(s);
    SnapStep {
        step: i + 1,
        kind: s.kind,
        name: &s.name,
        status: s.status,
        failure_code: s.failure_code,
        llm: (s.kind == StepKind::LlmCall).then(|| SnapLlm {
            prompt_tokens: s.prompt_tokens,
            cached_tokens: s.cached_tokens,
            completion_tokens: s.completion_tokens,
            completion_tokens_estimate: s.completion_tokens_estimate,
            finish_reason: s.finish_reason.as_deref(),
            ttft_ms: timing(s.ttft_ms),
        }),
        duration_ms: timing(Some(s.duration_ms)),
        energy: accounted,
        energy_basis: accounted.map(|_| s.energy.basis),
    }
}

#[derive(Serialize)]
struct SnapAttribution {
    status: &'static str,
    energy_basis: Option<EnergyBasis>,
    power_basis: Option<PowerBasisLabel>,
    max_trajectories_in_flight: u32,
    steps: usize,
    dropped_steps: Vec<&'static str>,
    usage_completion_tokens: Option<u64>,
}

fn attribution(t: &TrajectoryReport) -> Option<SnapAttribution> {
    let o = t.attribution.as_ref()?;
    Some(match o {
        AttributionOutcome::Attributed(m) => SnapAttribution {
            status: "attributed",
            energy_basis: m.energy_basis,
            power_basis: m.power_basis,
            max_trajectories_in_flight: m.concurrency.max_trajectories_in_flight,
            steps: t.steps.iter().filter(|s| s.attribution.is_some()).count(),
            dropped_steps: m.dropped_steps.iter().map(|d| d.reason.label()).collect(),
            usage_completion_tokens: m.total_usage_completion_tokens,
        },
        AttributionOutcome::Withheld(w) => SnapAttribution {
            status: "withheld",
            energy_basis: None,
            power_basis: None,
            max_trajectories_in_flight: w.concurrency.max_trajectories_in_flight,
            steps: 0,
            dropped_steps: w.dropped_steps.iter().map(|d| d.reason.label()).collect(),
            usage_completion_tokens: None,
        },
    })
}

#[derive(Serialize)]
struct SnapTrajectory<'a> {
    index: u32,
    stop_reason: StopReason,
    graded_pass: Option<bool>,
    energy: Option<&'static str>,
    energy_basis: Basis,
    steps: Vec<SnapStep<'a>>,
    attribution: Option<SnapAttribution>,
}

/// `"[mJ]"` when the trajectory's energy is accounted for: its own figure, or — every step
/// shorter than the sampling grid, so none has a figure of its own — the same rule as a
/// step's ([`step_energy`]); `null` when nothing accounts for it.
fn trajectory_energy(t: &TrajectoryReport) -> Option<&'static str> {
    let grid_only = t.energy.reason.as_deref() == Some(NO_STEP_ENERGY)
        && !t.steps.is_empty()
        && t.steps.iter().all(|s| step_energy(s).is_some());
    (t.energy.is_present() || grid_only).then_some("[mJ]")
}

fn trajectory(t: &TrajectoryReport) -> SnapTrajectory<'_> {
    SnapTrajectory {
        index: t.index,
        stop_reason: t.stop_reason,
        graded_pass: t.graded_pass,
        energy: trajectory_energy(t),
        energy_basis: t.energy.basis,
        steps: t
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| step(i, s))
            .collect(),
        attribution: attribution(t),
    }
}

#[derive(Serialize)]
struct SnapEndpoint<'a> {
    simulated: bool,
    model: &'a str,
    engine_profile: &'a str,
}

#[derive(Serialize)]
struct SnapRequests<'a> {
    total: usize,
    succeeded: usize,
    failed: usize,
    failure_codes: &'a [FailureCount],
}

#[derive(Serialize)]
struct SnapGrading<'a> {
    check: &'a str,
    passed: bool,
    reason: Option<&'a str>,
}

#[derive(Serialize)]
struct SnapHarness<'a> {
    exit_code: Option<i32>,
    timed_out: bool,
    spawn_error: Option<&'a str>,
}

/// A redacted job report (see the module docs).
#[derive(Serialize)]
struct Snapshot<'a> {
    schema: &'static str,
    job: &'a str,
    kind: JobKind,
    status: JobStatus,
    endpoint: Option<SnapEndpoint<'a>>,
    power: Option<&'static str>,
    requests: SnapRequests<'a>,
    verdicts: Vec<SnapVerdict<'a>>,
    grading: Vec<SnapGrading<'a>>,
    grade_pass_rate: Option<Value>,
    harness: Option<SnapHarness<'a>>,
    notes: Vec<String>,
    trajectories: Vec<SnapTrajectory<'a>>,
    /// A load job's units (requests.jsonl's unit lines: report.json keeps one trajectory
    /// per point): point, index and stop reason of each; absent for a sequential job.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    units: Vec<SnapUnit>,
}

/// One unit of a load job in a snapshot (its times are left out: they vary run to run).
#[derive(Serialize)]
struct SnapUnit {
    point: usize,
    index: u32,
    stop_reason: crate::model::StopReason,
    graded_pass: Option<bool>,
}

/// The redacted report of job `job_id` of `report` (see the module docs) as JSON, or
/// `None` when the run has no such job. Pure.
pub fn redacted_job_report(report: &RunReport, job_id: &str) -> Option<Value> {
    let job = report.jobs.iter().find(|j| j.id == job_id)?;
    Some(serde_json::to_value(snapshot(report, job)).expect("snapshots always serialize"))
}

fn snapshot<'a>(report: &'a RunReport, job: &'a JobReport) -> Snapshot<'a> {
    let job_id = job.id.as_str();
    let succeeded = job.requests.iter().filter(|r| r.is_success()).count();
    Snapshot {
        schema: SNAPSHOT_SCHEMA,
        job: &job.id,
        kind: job.kind,
        status: job.status,
        endpoint: report.endpoint_of(job_id).map(|e| SnapEndpoint {
            simulated: e.simulated,
            model: &e.model,
            engine_profile: &e.engine_profile,
        }),
        power: report.power.source.map(|p| p.label()),
        requests: SnapRequests {
            total: job.requests.len(),
            succeeded,
            failed: job.requests.len() - succeeded,
            failure_codes: &job.failure_codes,
        },
        verdicts: job.verdicts.iter().map(verdict).collect(),
        grading: job
            .grading
            .iter()
            .map(|g| SnapGrading {
                check: &g.check,
                passed: g.passed,
                reason: g.detail.as_deref(),
            })
            .collect(),
        grade_pass_rate: job.grade_pass_rate.map(round4),
        harness: job.harness.as_ref().map(|h: &HarnessReport| SnapHarness {
            exit_code: h.exit_code,
            timed_out: h.timed_out,
            spawn_error: h.spawn_error.as_deref(),
        }),
        notes: job.notes.iter().filter_map(|n| redact_note(n)).collect(),
        trajectories: job.trajectories.iter().map(trajectory).collect(),
        units: {
            let mut u: Vec<SnapUnit> = job
                .units
                .iter()
                .map(|u| SnapUnit {
                    point: u.point,
                    index: u.index,
                    stop_reason: u.stop_reason,
                    graded_pass: u.graded_pass,
                })
                .collect();
            u.sort_by_key(|u| (u.point, u.index));
            u
        },
    }
}

/// The snapshot body of job `job_id`: [`redacted_job_report`] as pretty JSON, no
/// trailing newline. `None` when the run has no such job.
pub fn snapshot_body(report: &RunReport, job_id: &str) -> Option<String> {
    let job = report.jobs.iter().find(|j| j.id == job_id)?;
    // Serialized from the structs, in their field order (never a `Value` map's, whose
    // order depends on serde_json's features).
    Some(serde_json::to_string_pretty(&snapshot(report, job)).expect("snapshots always serialize"))
}

/// A YAML scalar as insta writes one: plain when it is only path-like characters, else
/// double-quoted (a JSON string is a valid YAML double-quoted scalar).
fn yaml_scalar(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-'));
    if plain {
        s.to_string()
    } else {
        serde_json::to_string(s).expect("strings serialize")
    }
}

/// The text of an insta snapshot file (`.snap` / `.snap.new`): the YAML header with
/// `source`, `description` and `expression` between `---` lines, then `body` and one
/// newline (insta's `serialize_snapshot` format, https://insta.rs/docs/snapshot-files).
pub fn snap_file_text(source: &str, description: &str, expression: &str, body: &str) -> String {
    format!(
        "---\nsource: {}\ndescription: {}\nexpression: {}\n---\n{}\n",
        yaml_scalar(source),
        yaml_scalar(description),
        yaml_scalar(expression),
        body.trim_end()
    )
}

/// The header fields of job `job_id`'s snapshot file, the same for the harness
/// ([`super::assert_snapshot`], through insta) and the CLI (`snapshot`): `(source,
/// description, expression)`. Nothing in them varies from run to run, so accepting a
/// snapshot from either path gives the same file.
pub fn snap_header(job_id: &str) -> (&'static str, String, &'static str) {
    (
        "crates/harness/src/lib.rs",
        format!("redacted trajectory report of {job_id}"),
        "body",
    )
}

/// The body of an insta snapshot file's text (after the header's closing `---`), with
/// trailing whitespace trimmed; `None` when the text has no header. Pure.
pub fn snap_file_body(text: &str) -> Option<&str> {
    let rest = text.strip_prefix("---\n")?;
    let end = rest.find("\n---\n")?;
    Some(rest[end + 5..].trim_end())
}

/// What [`write_pending`] did for one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotWrite {
    /// `<name>.snap` exists with the same body; nothing written (a stale `.snap.new`
    /// removed).
    Unchanged(PathBuf),
    /// No `<name>.snap` yet: `.snap.new` written.
    New(PathBuf),
    /// `<name>.snap` differs: `.snap.new` written.
    Changed(PathBuf),
}

/// Writes the snapshot of every job of `report` into `into` as insta pending files
/// (`<name>.snap.new`) unless the accepted `<name>.snap` already has the same body.
///
/// Errors: the directory or a file cannot be written.
pub fn write_pending(report: &RunReport, into: &Path) -> std::io::Result<Vec<SnapshotWrite>> {
    std::fs::create_dir_all(into)?;
    let mut out = Vec::new();
    for job in &report.jobs {
        let Some(body) = snapshot_body(report, &job.id) else {
            continue;
        };
        let name = snapshot_name(&job.id);
        let accepted = into.join(format!("{name}.snap"));
        let pending = into.join(format!("{name}.snap.new"));
        let existing = std::fs::read_to_string(&accepted).ok();
        let same = existing
            .as_deref()
            .and_then(snap_file_body)
            .is_some_and(|b| b == body.trim_end());
        if same {
            if pending.exists() {
                std::fs::remove_file(&pending)?;
            }
            out.push(SnapshotWrite::Unchanged(accepted));
            continue;
        }
        let (source, description, expression) = snap_header(&job.id);
        let text = snap_file_text(source, &description, expression, &body);
        std::fs::write(&pending, text)?;
        out.push(if existing.is_some() {
            SnapshotWrite::Changed(pending)
        } else {
            SnapshotWrite::New(pending)
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitized() {
        assert_eq!(snapshot_name("agentic::lookup"), "agentic__lookup");
        assert_eq!(snapshot_name("my suite::a/b.c"), "my_suite__a_b_c");
    }

    #[test]
    fn snap_text_round_trips_its_body() {
        let t = snap_file_text("src", "desc \"q\"", "agentic::lookup", "{\n  \"a\": 1\n}\n");
        assert!(t.starts_with("---\nsource: src\ndescription: \"desc \\\"q\\\"\"\nexpression: \"agentic::lookup\"\n"), "{t}");
        let (source, description, expression) = snap_header("agentic::lookup");
        assert_eq!(
            snap_file_text(source, &description, expression, "{}"),
            "---\nsource: crates/harness/src/lib.rs\ndescription: \"redacted trajectory report of \
             agentic::lookup\"\nexpression: body\n---\n{}\n",
            "insta's own header of a harness snapshot"
        );
        assert_eq!(snap_file_body(&t), Some("{\n  \"a\": 1\n}"));
        assert_eq!(snap_file_body("no header"), None);
    }

    fn step_with(energy: crate::model::Figure<u64>) -> StepReport {
        StepReport {
            step_id: 1,
            kind: StepKind::Tool,
            name: "read_file".into(),
            start_ns: 0,
            end_ns: 1,
            duration_ms: 0.0,
            start_before_anchor_ns: None,
            end_before_anchor_ns: None,
            harness_step_id: None,
            status: Some(StepStatus::Completed),
            failure_code: None,
            tool_error: None,
            prompt_tokens: None,
            cached_tokens: None,
            completion_tokens: None,
            completion_tokens_estimate: None,
            ttft_ms: None,
            max_tokens: None,
            finish_reason: None,
            http_status: None,
            response_model: None,
            tool_call_id: None,
            energy,
            tokens_per_joule: crate::model::Figure::missing(Basis::Simulated, "not an LLM step"),
            warmup: false,
            attribution: None,
        }
    }

    /// The snapshot records whether each step's energy is accounted for,
    /// so energy disappearing (no power source, attribution withheld) changes it.
    #[test]
    fn step_energy_presence_is_recorded() {
        use crate::model::Figure;
        let present = step_with(Figure::of(12, Basis::Simulated));
        assert_eq!(step(0, &present).energy, Some("[mJ]"));
        // Shorter than the sampling grid: accounted for in the unattributed energy.
        let short = step_with(Figure::missing(
            Basis::Simulated,
            "no power-sample segment lies fully inside the step window (shorter than the \
             sampling grid; its energy is in the trajectory's unattributed energy)",
        ));
        assert_eq!(step(0, &short).energy, Some("[mJ]"));
        let gone = step_with(Figure::missing(Basis::Unavailable, "no power source: NVML"));
        let s = step(0, &gone);
        assert_eq!((s.energy, s.energy_basis), (None, None));
        let withheld = step_with(Figure::missing(
            Basis::Simulated,
            "attribution withheld (no_anchor)",
        ));
        assert_eq!(step(0, &withheld).energy, None);
    }

    /// The flake this rule removes: a load point's trajectory whose every step is shorter
    /// than the sampling grid has no energy figure of its own, yet its energy is accounted
    /// for (the trajectory's unattributed energy), so the snapshot shows it as present.
    #[test]
    fn trajectory_energy_presence_follows_its_steps() {
        use crate::model::{Figure, StopReason, TrajectoryReport};
        let short = "no power-sample segment lies fully inside the step window (shorter than \
                     the sampling grid; its energy is in the trajectory's unattributed energy)";
        let traj = |energy: Figure<u64>, steps: Vec<StepReport>| TrajectoryReport {
            id: "t".into(),
            index: 0,
            stop_reason: StopReason::FinalAnswer,
            start_ns: 0,
            end_ns: 1,
            graded_pass: None,
            completion_tokens: Figure::missing(Basis::ServerReported, "none"),
            energy,
            tokens_per_joule: Figure::missing(Basis::Simulated, "none"),
            steps,
            attribution: None,
            shard: None,
        };
        let own = traj(Figure::of(5, Basis::Simulated), vec![]);
        assert_eq!(trajectory_energy(&own), Some("[mJ]"));
        let grid = traj(
            Figure::missing(Basis::Simulated, NO_STEP_ENERGY),
            vec![step_with(Figure::missing(Basis::Simulated, short))],
        );
        assert_eq!(trajectory_energy(&grid), Some("[mJ]"));
        let gone = traj(
            Figure::missing(Basis::Simulated, NO_STEP_ENERGY),
            vec![step_with(Figure::missing(
                Basis::Unavailable,
                "no power source: NVML",
            ))],
        );
        assert_eq!(trajectory_energy(&gone), None);
        let withheld = traj(
            Figure::missing(Basis::Simulated, "attribution withheld (no_anchor)"),
            vec![step_with(Figure::missing(Basis::Simulated, short))],
        );
        assert_eq!(trajectory_energy(&withheld), None);
    }

    #[test]
    fn the_low_confidence_counters_note_is_dropped() {
        assert_eq!(
            redact_note("engine counters: 12 LLM step(s) low confidence: x"),
            None
        );
        assert_eq!(
            redact_note("prompt tokens: 12").as_deref(),
            Some("prompt tokens: 12")
        );
    }

    #[test]
    fn urls_are_redacted_in_notes() {
        assert_eq!(
            redact_urls("model not listed at http://127.0.0.1:33235/v1, continuing"),
            "model not listed at [url], continuing"
        );
    }
}
