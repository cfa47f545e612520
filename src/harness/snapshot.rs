//! Redacted trajectory reports for snapshot testing with insta (issue 6 item 4).
//!
//! [`redacted_job_report`] turns one job of a run's `report.json` into a JSON document
//! that is stable across runs of a deterministic endpoint (the built-in simulator with a
//! fixed seed): it keeps the structure, step kinds and names, step statuses and failure
//! codes, token counts from each response's own usage (prompt, cached, completion),
//! finish and stop reasons, grading results, gate outcomes and bounds, and the ADR-013
//! attribution status and bases; it redacts what varies from run to run:
//!
//! | field | snapshot | why |
//! |---|---|---|
//! | step / request ids, run id, trajectory ids | dropped (the step's position is kept) | run-local counters, random ids |
//! | times, durations, TTFT (`*_ns`, `*_ms`) | `"[ms]"` when present, `null` when absent | wall-clock timing |
//! | step energy | `"[mJ]"` always | the value is timing; even whether a short tool step holds a power sample depends on scheduling |
//! | gate values in ms, J, tokens/J, % | `"[ms]"`, `"[J]"`, … (`null` stays `null`) | timing or energy |
//! | gate values without unit (counts, rates) | rounded to 4 decimals | deterministic |
//! | gate messages | dropped | they embed the value |
//! | URLs in notes (loopback port) | `"[url]"` | the simulator's port is random |
//! | counter deltas, samples in window, coverage | dropped | scrape/sample timing |
//!
//! The body is `serde_json` pretty JSON (2-space indent). The Rust harness asserts it
//! with `insta::assert_snapshot!` and the CLI (`inferscope-bench snapshot`) writes the same
//! body into an insta `.snap.new` file ([`snap_file_text`]), so both paths produce the
//! same snapshot. The harness runs each job alone against a fresh simulator; a run of
//! several jobs shares the endpoint's prefix cache between them, so its cached-token
//! counts differ from the harness's for every job but the first (a real difference,
//! shown as such): snapshot a one-job run (`run SUITE --filter JOB`) to compare.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::gate::{EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, Verdict};
use crate::runner::report::{JobReport, RunReport, StepReport, TrajectoryReport};

/// Schema id of a redacted job report.
pub const SNAPSHOT_SCHEMA: &str = "inferscope-bench.snapshot/v1";

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

fn timing(v: Option<f64>) -> Value {
    match v {
        Some(_) => Value::String("[ms]".into()),
        None => Value::Null,
    }
}

fn redact_urls(s: &str) -> String {
    // Loopback ports and hosts vary per run; the text around them does not.
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r"https?://[^\s,;)]+").expect("static regex"))
        .replace_all(s, "[url]")
        .into_owned()
}

fn round4(v: f64) -> Value {
    let r = (v * 10_000.0).round() / 10_000.0;
    serde_json::Number::from_f64(r).map_or(Value::Null, Value::Number)
}

fn verdict(v: &Verdict) -> Value {
    let value = match (v.value, v.unit.as_str()) {
        (None, _) => Value::Null,
        (Some(x), "") => round4(x),
        (Some(_), u) => Value::String(format!("[{u}]")),
    };
    json!({
        "gate": v.gate,
        "figure": v.figure,
        "comparison": v.comparison,
        "bound": v.bound,
        "unit": v.unit,
        "basis": v.basis,
        "value": value,
        "outcome": v.outcome,
    })
}

fn step(i: usize, s: &StepReport, finish_reason: Option<&str>) -> Value {
    let mut m = Map::new();
    m.insert("step".into(), json!(i + 1));
    m.insert("kind".into(), json!(s.kind));
    m.insert("name".into(), json!(s.name));
    m.insert("status".into(), json!(s.status));
    m.insert("failure_code".into(), json!(s.failure_code));
    if s.kind == "llm_call" {
        m.insert("prompt_tokens".into(), json!(s.prompt_tokens));
        m.insert("cached_tokens".into(), json!(s.cached_tokens));
        m.insert("completion_tokens".into(), json!(s.completion_tokens));
        m.insert("finish_reason".into(), json!(finish_reason));
        m.insert("ttft_ms".into(), timing(s.ttft_ms));
    }
    m.insert("duration_ms".into(), timing(Some(s.duration_ms)));
    m.insert("energy_mj".into(), json!("[mJ]"));
    m.insert("energy_basis".into(), json!(s.energy_basis));
    Value::Object(m)
}

fn attribution(report: &RunReport, traj_id: &str) -> Value {
    let Some(t) = report
        .trajectory
        .as_ref()
        .and_then(|t| t.get("trajectories"))
        .and_then(Value::as_array)
        .and_then(|ts| {
            ts.iter()
                .find(|t| t.get("trajectory").and_then(Value::as_str) == Some(traj_id))
        })
    else {
        return Value::Null;
    };
    let get = |k: &str| t.get(k).cloned().unwrap_or(Value::Null);
    let dropped: Vec<Value> = t
        .get("dropped_steps")
        .and_then(Value::as_array)
        .map(|d| {
            d.iter()
                .map(|x| x.get("reason").cloned().unwrap_or_else(|| x.clone()))
                .collect()
        })
        .unwrap_or_default();
    json!({
        "status": get("status"),
        "energy_basis": get("energy_basis"),
        "power_basis": get("power_basis"),
        "max_trajectories_in_flight": t
            .get("concurrency")
            .and_then(|c| c.get("max_trajectories_in_flight"))
            .cloned()
            .unwrap_or(Value::Null),
        "steps": t.get("steps").and_then(Value::as_array).map(Vec::len),
        "dropped_steps": dropped,
        "usage_completion_tokens": get("total_usage_completion_tokens"),
    })
}

fn trajectory(report: &RunReport, job: &JobReport, t: &TrajectoryReport) -> Value {
    let finish = |s: &StepReport| -> Option<String> {
        // The request of an LLM step ends at the step's end; match on it.
        job.requests
            .iter()
            .find(|r| s.kind == "llm_call" && r.end_ns == Some(s.end_ns))
            .and_then(|r| r.finish_reason.clone())
    };
    json!({
        "index": t.index,
        "stop_reason": t.stop_reason,
        "graded_pass": t.graded_pass,
        "steps": t
            .steps
            .iter()
            .enumerate()
            .map(|(i, s)| step(i, s, finish(s).as_deref()))
            .collect::<Vec<_>>(),
        "attribution": attribution(report, &t.id),
    })
}

/// The redacted report of job `job_id` of `report` (see the module docs), or `None`
/// when the run has no such job. Pure.
pub fn redacted_job_report(report: &RunReport, job_id: &str) -> Option<Value> {
    let job = report.jobs.iter().find(|j| j.id == job_id)?;
    let endpoint = report.endpoint_of(job_id).map(|e| {
        json!({
            "simulated": e.simulated,
            "model": e.model,
            "engine_profile": e.engine_profile,
        })
    });
    let succeeded = job.requests.iter().filter(|r| r.is_success()).count();
    Some(json!({
        "schema": SNAPSHOT_SCHEMA,
        "job": job.id,
        "kind": job.kind,
        "status": job.status,
        "endpoint": endpoint,
        "requests": {
            "total": job.requests.len(),
            "succeeded": succeeded,
            "failed": job.requests.len() - succeeded,
            "failure_codes": job.failure_codes,
        },
        "verdicts": job.verdicts.iter().map(verdict).collect::<Vec<_>>(),
        "grading": job
            .grading
            .iter()
            .map(|(check, passed, reason)| json!({"check": check, "passed": passed, "reason": reason}))
            .collect::<Vec<_>>(),
        "grade_pass_rate": job.grade_pass_rate.map(round4),
        "harness": job.harness.as_ref().map(|h| json!({
            "exit_code": h.exit_code,
            "timed_out": h.timed_out,
            "spawn_error": h.spawn_error,
        })),
        "notes": job.notes.iter().map(|n| redact_urls(n)).collect::<Vec<_>>(),
        "trajectories": job
            .trajectories
            .iter()
            .map(|t| trajectory(report, job, t))
            .collect::<Vec<_>>(),
    }))
}

/// The snapshot body of job `job_id`: [`redacted_job_report`] as pretty JSON, no
/// trailing newline. `None` when the run has no such job.
pub fn snapshot_body(report: &RunReport, job_id: &str) -> Option<String> {
    redacted_job_report(report, job_id)
        .map(|v| serde_json::to_string_pretty(&v).expect("JSON values always serialize"))
}

fn yaml_str(s: &str) -> String {
    // A JSON string is a valid YAML double-quoted scalar.
    serde_json::to_string(s).expect("strings serialize")
}

/// The text of an insta snapshot file (`.snap` / `.snap.new`): the YAML header with
/// `source`, `description` and `expression` between `---` lines, then `body` and one
/// newline (insta's `serialize_snapshot` format, https://insta.rs/docs/snapshot-files).
pub fn snap_file_text(source: &str, description: &str, expression: &str, body: &str) -> String {
    format!(
        "---\nsource: {}\ndescription: {}\nexpression: {}\n---\n{}\n",
        yaml_str(source),
        yaml_str(description),
        yaml_str(expression),
        body.trim_end()
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
        let text = snap_file_text(
            &format!("inferscope-bench snapshot (run {})", report.run_id),
            &format!("redacted trajectory report of {}", job.id),
            &job.id,
            &body,
        );
        std::fs::write(&pending, text)?;
        out.push(if existing.is_some() {
            SnapshotWrite::Changed(pending)
        } else {
            SnapshotWrite::New(pending)
        });
    }
    Ok(out)
}

/// `inferscope-bench snapshot RUN_DIR --into DIR`: exit 0 when every job's snapshot
/// matches its accepted `.snap`, 100 when any is new or changed (a `.snap.new` was
/// written: review with `cargo insta review`), 2 bad input.
pub fn snapshot_command(run_dir: &Path, into: &Path) -> i32 {
    let report = match crate::commands::load_report(run_dir) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let writes = match write_pending(&report, into) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: writing snapshots into {}: {e}", into.display());
            return EXIT_BAD_INPUT;
        }
    };
    let mut pending = 0;
    for w in &writes {
        match w {
            SnapshotWrite::Unchanged(p) => println!("unchanged {}", p.display()),
            SnapshotWrite::New(p) => {
                pending += 1;
                println!("new       {}", p.display());
            }
            SnapshotWrite::Changed(p) => {
                pending += 1;
                println!("changed   {}", p.display());
            }
        }
    }
    if pending > 0 {
        println!(
            "{pending} snapshot(s) pending: review with `cargo insta review` (accept renames .snap.new to .snap)"
        );
        EXIT_FAILED
    } else {
        EXIT_OK
    }
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
        assert!(t.starts_with("---\nsource: \"src\"\n"));
        assert_eq!(snap_file_body(&t), Some("{\n  \"a\": 1\n}"));
        assert_eq!(snap_file_body("no header"), None);
    }

    #[test]
    fn urls_are_redacted_in_notes() {
        assert_eq!(
            redact_urls("model not listed at http://127.0.0.1:33235/v1, continuing"),
            "model not listed at [url], continuing"
        );
    }
}
