//! The runner's record of what one job did: steps, trajectories and job results.
//!
//! Every LLM call and every tool call is a step (docs/measurement.md `llm_call` / `tool`); an SWE
//! harness run is one `harness` span and contributes only the steps its own marker file
//! declares. Times are `elapsed_ns` on the run's clock.

pub use crate::model::{FailureCode, StepKind, StepStatus, StopReason, ToolErrorCode};
pub use inferscope_report::records::{StepRecord, TrajectoryRecord, step_duration_ns};

/// The results of `checks` on one trajectory.
pub fn grade_trajectory(
    checks: &[crate::grade::Check],
    t: &TrajectoryRecord,
) -> Vec<crate::grade::CheckResult> {
    // A call counts as valid unless its arguments failed the tool's schema (or it named
    // no declared tool).
    let valid: Vec<String> = t
        .steps
        .iter()
        .filter(|s| {
            s.kind == StepKind::Tool
                && !matches!(
                    s.tool_error,
                    Some(
                        crate::model::ToolErrorCode::BadArguments
                            | crate::model::ToolErrorCode::UnknownTool
                    )
                )
        })
        .map(|s| s.name.clone())
        .collect();
    // The final answer is the last LLM step's (choice 0's) text; with several choices
    // each choice's text can be checked.
    let last = t.steps.iter().rev().find_map(|s| s.request.as_ref());
    let choices: Vec<(u64, &str)> = last.map_or_else(Vec::new, |r| {
        r.choices
            .iter()
            .map(|c| (c.index, c.output.text.as_str()))
            .collect()
    });
    let mut results = crate::grade::evaluate(
        checks,
        &crate::grade::GradeSubject {
            final_answer: t.final_answer.as_deref(),
            stdout: t.stdout.as_deref(),
            tool_calls: &t.tools_called,
            valid_tool_calls: &valid,
            choices: &choices,
        },
    );
    // The answer is kept up to MAX_KEPT_TEXT_BYTES: a failed check on a longer answer
    // says what it could not see.
    let omitted = last.map_or(0, |r| r.output.text_omitted_bytes);
    if omitted > 0 && t.final_answer.is_some() {
        for (r, c) in results.iter_mut().zip(checks) {
            if !r.passed && c.target().is_some_and(|t| t.reads_final_answer()) {
                let reason = r.reason.take().unwrap_or_default();
                r.reason = Some(format!(
                    "{reason}; only the answer's first {} bytes were kept ({omitted} more \
                     bytes received, not graded)",
                    crate::model::request::MAX_KEPT_TEXT_BYTES
                ));
            }
        }
    }
    results
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::RequestRecord;

    fn check(text: &str) -> crate::grade::Check {
        toml::from_str(text).unwrap()
    }

    /// A trajectory whose final answer is `answer`, with `omitted` more bytes received
    /// than the client kept.
    fn answered(answer: &str, omitted: u64) -> TrajectoryRecord {
        let mut r = RequestRecord::new("s::j#0", 0, 0, true);
        r.output.text = answer.into();
        r.output.text_omitted_bytes = omitted;
        TrajectoryRecord {
            id: "s::j#0".into(),
            index: 0,
            stop_reason: StopReason::FinalAnswer,
            steps: vec![StepRecord::completed_llm_call(1, 0, 1, r)],
            tools_called: vec![],
            final_answer: Some(answer.into()),
            stdout: None,
            start_ns: 0,
            end_ns: 1,
        }
    }

    /// A check that fails on an answer longer than what was kept says
    /// that the rest was not graded; on a whole answer the reason is unchanged.
    #[test]
    fn a_failed_check_on_a_cut_answer_says_the_rest_was_not_graded() {
        let c = [check("kind = \"contains\"\nvalue = \"tail\"")];
        let cut = grade_trajectory(&c, &answered("head", 10));
        let reason = cut[0].reason.as_deref().unwrap();
        assert!(
            reason.ends_with("(10 more bytes received, not graded)"),
            "{reason}"
        );
        let whole = grade_trajectory(&c, &answered("head", 0));
        assert!(!whole[0].reason.as_deref().unwrap().contains("not graded"));
        let found = grade_trajectory(&c, &answered("head tail", 10));
        assert!(found[0].passed);
    }
}
