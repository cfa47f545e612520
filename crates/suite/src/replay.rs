//! The shape of a recorded agentic trajectory, read from a run directory's
//! `report.json` (bounded, no symlink below the run directory, schema-checked): per LLM step
//! the prompt tokens the server reported, how many of them are the previous LLM step's
//! prompt (prefix growth), the output tokens and the think time before it; per tool step
//! its name and duration. Artifacts hold no text: a replay synthesizes prompts to these
//! sizes. Every figure is the recorded usage; a step without one is a located error.

use std::path::Path;

use inferscope_model::RunReport;
use inferscope_model::step::{StepKind, StepReport};

/// One step of a recorded trajectory's shape.
#[derive(Debug, Clone, PartialEq)]
pub enum ShapeStep {
    /// An LLM call.
    Llm {
        /// `usage.prompt_tokens` as recorded.
        prompt_tokens: u64,
        /// The previous LLM step's prompt tokens when this prompt is at least as long
        /// (the agentic history grows), else 0: the prefix a replay shares with it.
        prefix_tokens: u64,
        /// `usage.completion_tokens` as recorded (the replay's fixed output length).
        output_tokens: u64,
        /// Time from the previous step's end (or the trajectory's start) to this start, ns.
        think_ns: u64,
    },
    /// A tool execution.
    Tool {
        /// The tool's name.
        name: String,
        /// Its recorded duration, ns.
        duration_ns: u64,
        /// Time from the previous step's end to this start, ns.
        think_ns: u64,
    },
}

/// A recorded trajectory's shape and where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TrajectoryShape {
    /// `RUN_DIR/report.json`.
    pub source: String,
    /// The recorded trajectory id (`suite::job#index`).
    pub trajectory: String,
    /// Steps, in order.
    pub steps: Vec<ShapeStep>,
}

/// Reads trajectory `trajectory` (its id, `suite::job#index`) of the run in `run_dir`.
/// Errors name the file, the trajectory and the step (index and `step_id`) and field.
pub fn read_shape(run_dir: &Path, trajectory: &str) -> Result<TrajectoryShape, String> {
    let source = run_dir.join(REPORT_FILE).display().to_string();
    let bytes = crate::fsio::Root::open(run_dir, true)
        .and_then(|r| r.read(&[REPORT_FILE], crate::fsio::limits::REPORT_BYTES))
        .map_err(|e| match e {
            crate::fsio::ReadError::NotFound => format!(
                "{source}: not found: not a run directory (or an incomplete run: report.json \
                 is written last)"
            ),
            e => format!("{source}: {e}"),
        })?;
    let rep = RunReport::from_json(&bytes).map_err(|e| format!("{source}: {e}"))?;
    let t = rep
        .jobs
        .iter()
        .flat_map(|j| j.trajectories.iter())
        .find(|t| t.id == trajectory)
        .ok_or_else(|| format!("{source}: no trajectory {trajectory:?} in jobs[].trajectories"))?;
    let at = format!("{source}: trajectory {trajectory:?}");
    let steps = shape_of(&t.steps, t.start_ns, &at)?;
    Ok(TrajectoryShape {
        source,
        trajectory: trajectory.to_string(),
        steps,
    })
}

/// A run's report file (`docs/artifacts.md`).
const REPORT_FILE: &str = "report.json";

/// The shape of `steps` (a trajectory starting at `start_ns`); `at` locates errors.
pub fn shape_of(steps: &[StepReport], start_ns: u64, at: &str) -> Result<Vec<ShapeStep>, String> {
    if !steps.iter().any(|s| s.kind == StepKind::LlmCall) {
        return Err(format!("{at}: no llm_call step to replay"));
    }
    let mut out = Vec::with_capacity(steps.len());
    let (mut prev_end, mut prev_prompt) = (start_ns, None::<u64>);
    for (i, s) in steps.iter().enumerate() {
        let think_ns = s.start_ns.saturating_sub(prev_end);
        prev_end = s.end_ns.max(s.start_ns);
        let step = match s.kind {
            StepKind::LlmCall => {
                let loc = |f: &str| format!("{at}: steps[{i}] (step_id {}): {f}", s.step_id);
                let prompt_tokens = s.prompt_tokens.ok_or_else(|| {
                    loc("prompt_tokens is null (no usage recorded): nothing to size a prompt to")
                })?;
                let output_tokens = s.completion_tokens.ok_or_else(|| {
                    loc("completion_tokens is null (no usage recorded): no output length")
                })?;
                let prefix_tokens = prev_prompt.filter(|&p| p <= prompt_tokens).unwrap_or(0);
                prev_prompt = Some(prompt_tokens);
                ShapeStep::Llm {
                    prompt_tokens,
                    prefix_tokens,
                    output_tokens,
                    think_ns,
                }
            }
            StepKind::Tool => ShapeStep::Tool {
                name: s.name.clone(),
                duration_ns: s.end_ns.saturating_sub(s.start_ns),
                think_ns,
            },
        };
        out.push(step);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferscope_model::basis::Basis;
    use inferscope_model::figure::Figure;
    use inferscope_model::step::StepStatus;

    fn step(id: u64, kind: StepKind, window: (u64, u64), usage: Option<(u64, u64)>) -> StepReport {
        StepReport {
            step_id: id,
            kind,
            name: if kind == StepKind::Tool {
                "read_file"
            } else {
                "chat"
            }
            .into(),
            start_ns: window.0,
            end_ns: window.1,
            duration_ms: (window.1 - window.0) as f64 / 1e6,
            start_before_anchor_ns: None,
            end_before_anchor_ns: None,
            harness_step_id: None,
            status: Some(StepStatus::Completed),
            failure_code: None,
            tool_error: None,
            prompt_tokens: usage.map(|u| u.0),
            cached_tokens: None,
            completion_tokens: usage.map(|u| u.1),
            completion_tokens_estimate: None,
            ttft_ms: None,
            max_tokens: None,
            finish_reason: None,
            http_status: Some(200),
            response_model: None,
            tool_call_id: None,
            energy: Figure::missing(Basis::Unavailable, "no power source"),
            tokens_per_joule: Figure::missing(Basis::Unavailable, "no power source"),
            warmup: false,
            attribution: None,
        }
    }

    #[test]
    fn agentic_replay_shape_has_prefix_growth_tool_durations_and_think_times() {
        let steps = [
            step(1, StepKind::LlmCall, (100, 400), Some((120, 9))),
            step(2, StepKind::Tool, (450, 2_450), None),
            step(3, StepKind::LlmCall, (2_500, 2_900), Some((180, 7))),
            // A shorter prompt (history compacted) shares no prefix.
            step(4, StepKind::LlmCall, (2_900, 3_000), Some((90, 5))),
        ];
        let got = shape_of(&steps, 40, "report.json").unwrap();
        let want = vec![
            ShapeStep::Llm {
                prompt_tokens: 120,
                prefix_tokens: 0,
                output_tokens: 9,
                think_ns: 60,
            },
            ShapeStep::Tool {
                name: "read_file".into(),
                duration_ns: 2_000,
                think_ns: 50,
            },
            ShapeStep::Llm {
                prompt_tokens: 180,
                prefix_tokens: 120,
                output_tokens: 7,
                think_ns: 50,
            },
            ShapeStep::Llm {
                prompt_tokens: 90,
                prefix_tokens: 0,
                output_tokens: 5,
                think_ns: 0,
            },
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn agentic_replay_shape_refuses_a_step_without_usage_naming_it() {
        let steps = [
            step(1, StepKind::LlmCall, (0, 1), Some((120, 9))),
            step(8, StepKind::LlmCall, (1, 2), None),
        ];
        let e = shape_of(&steps, 0, "R/report.json: trajectory \"s::a#0\"").unwrap_err();
        assert!(
            e.starts_with(
                "R/report.json: trajectory \"s::a#0\": steps[1] (step_id 8): prompt_tokens is null"
            ),
            "{e}"
        );
        let mut no_output = step(9, StepKind::LlmCall, (0, 1), Some((120, 9)));
        no_output.completion_tokens = None;
        let e = shape_of(&[no_output], 0, "R").unwrap_err();
        assert!(
            e.contains("steps[0] (step_id 9): completion_tokens is null"),
            "{e}"
        );
        let tools_only = [step(2, StepKind::Tool, (0, 1), None)];
        let e = shape_of(&tools_only, 0, "R").unwrap_err();
        assert_eq!(e, "R: no llm_call step to replay");
    }

    #[test]
    fn agentic_replay_shape_refuses_a_directory_that_is_not_a_run() {
        let dir =
            std::env::temp_dir().join(format!("inferscope-replay-shape-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = read_shape(&dir, "s::a#0").unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(e.contains("report.json: not found"), "{e}");
        assert!(e.contains("not a run directory"), "{e}");
    }
}
