//! Applying checks to a job's outcome.

use serde::Serialize;

use super::check::{Check, CheckTarget};
use crate::json::json_values_equal;

/// What a job produced, as grading sees it.
#[derive(Debug, Clone, Copy, Default)]
pub struct GradeSubject<'a> {
    /// The assistant's final answer; `None` when the job ended without one (stopped at
    /// `max_steps`, failed request).
    pub final_answer: Option<&'a str>,
    /// The SWE harness's standard output; `None` for other job kinds or when not captured.
    pub stdout: Option<&'a str>,
    /// The names of the tools called, in call order.
    pub tool_calls: &'a [String],
    /// The names of the calls whose arguments validated against the tool's parameters
    /// (the tool ran, or failed for another reason than its arguments), in call order.
    pub valid_tool_calls: &'a [String],
    /// With several choices (`n > 1`): each choice's final-answer text by its index;
    /// empty for one choice (choice 0 is then `final_answer`).
    pub choices: &'a [(u64, &'a str)],
}

/// The verdict of one check, as written to `report.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CheckResult {
    /// Short description without content ([`Check::describe`]).
    pub check: String,
    /// Whether the check passed.
    pub passed: bool,
    /// Why it failed (no graded or expected content, only sizes and counts); `null` when
    /// it passed.
    pub reason: Option<String>,
}

/// Evaluates every check against `subject`, in order; one result per check. A check on
/// an absent target (no final answer, no stdout) fails with a reason.
pub fn evaluate(checks: &[Check], subject: &GradeSubject<'_>) -> Vec<CheckResult> {
    checks
        .iter()
        .map(|c| {
            let reason = failure(c, subject);
            CheckResult {
                check: c.describe(),
                passed: reason.is_none(),
                reason,
            }
        })
        .collect()
}

/// `None` when the check passes, else the reason.
fn failure(check: &Check, subject: &GradeSubject<'_>) -> Option<String> {
    let text = |target: CheckTarget| -> Result<&str, String> {
        let t = match target {
            CheckTarget::FinalAnswer => subject.final_answer,
            CheckTarget::Stdout => subject.stdout,
            CheckTarget::Choice(0) if subject.choices.is_empty() => subject.final_answer,
            CheckTarget::Choice(k) => subject.final_answer.and_then(|_| {
                let found = subject.choices.iter().find(|(i, _)| *i == u64::from(k));
                found.map(|(_, t)| *t)
            }),
        };
        t.ok_or_else(|| match target {
            CheckTarget::FinalAnswer => "no final answer".to_string(),
            CheckTarget::Stdout => "no stdout captured".to_string(),
            CheckTarget::Choice(k) if subject.final_answer.is_some() => format!(
                "no choice {k} in the final answer (it had {} choice(s))",
                subject.choices.len().max(1)
            ),
            CheckTarget::Choice(_) => "no final answer".to_string(),
        })
    };
    match check {
        Check::Contains { value, target } => match text(*target) {
            Err(r) => Some(r),
            Ok(t) if t.contains(value.as_str()) => None,
            Ok(t) => Some(format!(
                "{} ({} bytes) does not contain the expected text",
                target.label(),
                t.len()
            )),
        },
        Check::Equals { value, target } => match text(*target) {
            Err(r) => Some(r),
            Ok(t) if t.trim() == value.trim() => None,
            Ok(t) => Some(format!(
                "{} ({} bytes) differs from the expected text ({} bytes)",
                target.label(),
                t.trim().len(),
                value.trim().len()
            )),
        },
        Check::Regex { pattern, target } => match text(*target) {
            Err(r) => Some(r),
            Ok(t) if pattern.is_match(t) => None,
            Ok(t) => Some(format!(
                "{} ({} bytes) does not match the pattern",
                target.label(),
                t.len()
            )),
        },
        Check::ToolCalled {
            tool,
            min_times,
            valid_arguments,
        } => {
            let calls = if *valid_arguments {
                subject.valid_tool_calls
            } else {
                subject.tool_calls
            };
            let n = calls.iter().filter(|c| *c == tool).count();
            if n >= *min_times as usize {
                None
            } else if *valid_arguments {
                let all = subject.tool_calls.iter().filter(|c| *c == tool).count();
                Some(format!(
                    "`{tool}` called with valid arguments {n} time(s) ({all} call(s) in all), \
                     at least {min_times} required"
                ))
            } else {
                Some(format!(
                    "`{tool}` called {n} time(s), at least {min_times} required"
                ))
            }
        }
        Check::JsonPath {
            path,
            equals,
            target,
        } => {
            let t = match text(*target) {
                Err(r) => return Some(r),
                Ok(t) => t,
            };
            let value: serde_json::Value = match serde_json::from_str(strip_code_fence(t)) {
                Ok(v) => v,
                Err(e) => {
                    return Some(format!(
                        "{} is not JSON (line {}, column {}: {})",
                        target.label(),
                        e.line(),
                        e.column(),
                        classify(&e)
                    ));
                }
            };
            let nodes = path.query(&value).all();
            match (nodes.as_slice(), equals) {
                ([], _) => Some(format!("`{path}` matches nothing")),
                (_, None) => None,
                ([one], Some(want)) if json_values_equal(one, want) => None,
                ([_], Some(_)) => Some(format!("`{path}` matches a different value")),
                (many, Some(want)) => {
                    let arr = serde_json::Value::Array(many.iter().map(|v| (*v).clone()).collect());
                    if json_values_equal(&arr, want) {
                        None
                    } else {
                        Some(format!(
                            "`{path}` matches {} nodes whose array differs from the expected value",
                            many.len()
                        ))
                    }
                }
            }
        }
    }
}

/// The JSON text inside one surrounding Markdown code fence (```` ``` ```` or
/// ```` ```json ````), or the trimmed input when there is none.
fn strip_code_fence(t: &str) -> &str {
    let t = t.trim();
    if let Some(rest) = t.strip_prefix("```")
        && let Some(body) = rest.strip_suffix("```")
    {
        // Drop the info string (`json`) on the opening line.
        return match body.find('\n') {
            Some(i) => body[i + 1..].trim(),
            None => body.trim(),
        };
    }
    t
}

fn classify(e: &serde_json::Error) -> &'static str {
    match e.classify() {
        serde_json::error::Category::Eof => "unexpected end",
        serde_json::error::Category::Syntax => "syntax error",
        serde_json::error::Category::Data => "data error",
        serde_json::error::Category::Io => "read error",
    }
}
