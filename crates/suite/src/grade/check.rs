//! The `[[jobs.checks]]` table: raw form (as written) and compiled form.

use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json_path::JsonPath;

/// The `kind` of a check (docs/suite.md "`[[jobs.checks]]`").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    /// The subject contains `value` (substring, case-sensitive).
    Contains,
    /// The subject matches `pattern` (Rust `regex` syntax, unanchored).
    Regex,
    /// The subject, trimmed, equals `value`, trimmed.
    Equals,
    /// Tool `tool` was called at least `min_times` times (default 1).
    ToolCalled,
    /// The subject parsed as JSON has a match for `path` (RFC 9535), optionally equal to
    /// `equals`.
    JsonPath,
}

impl CheckKind {
    /// The snake_case name used in suites.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::Contains => "contains",
            CheckKind::Regex => "regex",
            CheckKind::Equals => "equals",
            CheckKind::ToolCalled => "tool_called",
            CheckKind::JsonPath => "json_path",
        }
    }

    /// The keys a check of this kind accepts besides `kind` (`target` included where it
    /// applies). Any other key of [`RawCheck`] on this kind is an error.
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            CheckKind::Contains | CheckKind::Equals => &["value", "target", "choice"],
            CheckKind::Regex => &["pattern", "target", "choice"],
            CheckKind::ToolCalled => &["tool", "min_times", "valid_arguments"],
            CheckKind::JsonPath => &["path", "equals", "target", "choice"],
        }
    }
}

/// What a check reads: the final answer of the job (default) or, for SWE jobs, the
/// harness's standard output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckTarget {
    /// The assistant's final answer (agentic, context).
    #[default]
    FinalAnswer,
    /// The harness process's stdout (swe).
    Stdout,
    /// The final answer's choice of this `index` (`n > 1`; the check's `choice` key);
    /// choice 0 is the final answer itself.
    #[serde(skip_deserializing)]
    Choice(u32),
}

impl CheckTarget {
    /// The snake_case name used in suites (a choice is of the `final_answer`).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckTarget::FinalAnswer | CheckTarget::Choice(_) => "final_answer",
            CheckTarget::Stdout => "stdout",
        }
    }

    /// `final_answer`, `stdout`, or `final_answer choice 1`, for descriptions and reasons.
    pub fn label(self) -> String {
        match self {
            CheckTarget::Choice(k) => format!("final_answer choice {k}"),
            t => t.as_str().to_string(),
        }
    }

    /// Whether the check reads the final answer (of some choice).
    pub fn reads_final_answer(self) -> bool {
        self != CheckTarget::Stdout
    }
}

/// One `[[jobs.checks]]` table exactly as written; every operand optional so that a
/// missing or misplaced operand is reported by [`Check::try_from`] with the key's name.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCheck {
    /// The check kind (required).
    pub kind: CheckKind,
    /// Operand of `contains` and `equals`.
    pub value: Option<String>,
    /// Operand of `regex`.
    pub pattern: Option<String>,
    /// Operand of `tool_called`: the tool name.
    pub tool: Option<String>,
    /// `tool_called`: minimum number of calls, default 1, at least 1.
    pub min_times: Option<u32>,
    /// `tool_called`: count only calls whose arguments validated against the tool's
    /// parameters (default false: every call of the tool counts).
    pub valid_arguments: Option<bool>,
    /// Operand of `json_path`: an RFC 9535 JSON path such as `$.city`.
    pub path: Option<String>,
    /// `json_path`: the value the match must equal (any TOML value); absent = the path
    /// must match something.
    pub equals: Option<serde_json::Value>,
    /// `final_answer` (default) or `stdout`; not accepted on `tool_called`.
    pub target: Option<CheckTarget>,
    /// The final answer's choice to read (`n > 1`), by its index; default 0.
    pub choice: Option<u32>,
}

/// What is wrong with one key of a check table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckProblem {
    /// The kind's operand is absent (locate the error at the check table).
    Missing,
    /// The key does not apply to this kind (locate it at the key).
    NotApplicable,
    /// The value is invalid: a regex or JSON path that does not compile, `min_times = 0`
    /// (locate it at the value).
    Invalid,
}

/// Why a [`RawCheck`] is not a valid [`Check`]: `field` names the offending key so the
/// suite loader can point at it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct CheckError {
    /// The key of the check table the error is about (`value`, `pattern`, `path`, ...).
    pub field: &'static str,
    /// Human-readable message, without the check's operand values.
    pub message: String,
    /// The class of problem.
    pub problem: CheckProblem,
}

/// A compiled check (contains, regex, equals, tool called, JSON path).
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawCheck")]
pub enum Check {
    /// The target contains `value`.
    Contains {
        /// Expected substring.
        value: String,
        /// What is checked.
        target: CheckTarget,
    },
    /// The target matches `pattern`.
    Regex {
        /// Compiled at suite load.
        pattern: Regex,
        /// What is checked.
        target: CheckTarget,
    },
    /// The target, trimmed of leading and trailing whitespace, equals `value` trimmed.
    Equals {
        /// Expected text.
        value: String,
        /// What is checked.
        target: CheckTarget,
    },
    /// The job called `tool` at least `min_times` times (with `valid_arguments`: calls
    /// whose arguments validated against the tool's parameters).
    ToolCalled {
        /// Tool name.
        tool: String,
        /// Minimum number of calls (≥ 1).
        min_times: u32,
        /// Count only calls with valid arguments.
        valid_arguments: bool,
    },
    /// The target, parsed as JSON, has a match for `path`; with `equals`, the match
    /// (one node) or the array of matches (several nodes) equals it, numbers compared by
    /// value (`3` equals `3.0`).
    JsonPath {
        /// Compiled at suite load.
        path: JsonPath,
        /// Expected value, if any.
        equals: Option<serde_json::Value>,
        /// What is checked.
        target: CheckTarget,
    },
}

impl Check {
    /// The check's kind.
    pub fn kind(&self) -> CheckKind {
        match self {
            Check::Contains { .. } => CheckKind::Contains,
            Check::Regex { .. } => CheckKind::Regex,
            Check::Equals { .. } => CheckKind::Equals,
            Check::ToolCalled { .. } => CheckKind::ToolCalled,
            Check::JsonPath { .. } => CheckKind::JsonPath,
        }
    }

    /// What the check reads; `None` for `tool_called` (it reads the tool-call list).
    pub fn target(&self) -> Option<CheckTarget> {
        match self {
            Check::Contains { target, .. }
            | Check::Regex { target, .. }
            | Check::Equals { target, .. }
            | Check::JsonPath { target, .. } => Some(*target),
            Check::ToolCalled { .. } => None,
        }
    }

    /// A short description without expected or graded content, e.g.
    /// `contains(final_answer)`, `tool_called(read_file, min 2)`, `json_path($.city ==)`.
    pub fn describe(&self) -> String {
        match self {
            Check::Contains { target, .. } => format!("contains({})", target.label()),
            Check::Regex { target, .. } => format!("regex({})", target.label()),
            Check::Equals { target, .. } => format!("equals({})", target.label()),
            Check::ToolCalled {
                tool,
                min_times,
                valid_arguments,
            } => {
                let valid = if *valid_arguments {
                    ", valid arguments"
                } else {
                    ""
                };
                format!("tool_called({tool}, min {min_times}{valid})")
            }
            Check::JsonPath {
                path,
                equals,
                target,
            } => {
                let op = if equals.is_some() { " ==" } else { "" };
                format!("json_path({}, {path}{op})", target.label())
            }
        }
    }
}

impl TryFrom<RawCheck> for Check {
    type Error = CheckError;

    fn try_from(raw: RawCheck) -> Result<Self, CheckError> {
        let kind = raw.kind;
        let present: [(&'static str, bool); 9] = [
            ("value", raw.value.is_some()),
            ("pattern", raw.pattern.is_some()),
            ("tool", raw.tool.is_some()),
            ("min_times", raw.min_times.is_some()),
            ("valid_arguments", raw.valid_arguments.is_some()),
            ("path", raw.path.is_some()),
            ("equals", raw.equals.is_some()),
            ("target", raw.target.is_some()),
            ("choice", raw.choice.is_some()),
        ];
        for (key, is_set) in present {
            if is_set && !kind.keys().contains(&key) {
                return Err(CheckError {
                    field: key,
                    message: format!(
                        "`{key}` does not apply to a `{}` check (it takes {})",
                        kind.as_str(),
                        list_keys(kind.keys())
                    ),
                    problem: CheckProblem::NotApplicable,
                });
            }
        }
        let missing = |key: &'static str| CheckError {
            field: key,
            message: format!("a `{}` check needs `{key}`", kind.as_str()),
            problem: CheckProblem::Missing,
        };
        let target = match (raw.choice, raw.target.unwrap_or_default()) {
            (Some(_), CheckTarget::Stdout) => {
                return Err(CheckError {
                    field: "choice",
                    message: "`choice` names a choice of the final answer; it does not apply \
                              with `target = \"stdout\"`"
                        .into(),
                    problem: CheckProblem::NotApplicable,
                });
            }
            (Some(k), _) => CheckTarget::Choice(k),
            (None, t) => t,
        };
        Ok(match kind {
            CheckKind::Contains => Check::Contains {
                value: raw.value.ok_or_else(|| missing("value"))?,
                target,
            },
            CheckKind::Equals => Check::Equals {
                value: raw.value.ok_or_else(|| missing("value"))?,
                target,
            },
            CheckKind::Regex => {
                let src = raw.pattern.ok_or_else(|| missing("pattern"))?;
                let pattern = Regex::new(&src).map_err(|e| CheckError {
                    field: "pattern",
                    message: format!("invalid regex: {}", regex_reason(&e.to_string())),
                    problem: CheckProblem::Invalid,
                })?;
                Check::Regex { pattern, target }
            }
            CheckKind::ToolCalled => {
                let tool = raw.tool.ok_or_else(|| missing("tool"))?;
                let min_times = raw.min_times.unwrap_or(1);
                if min_times == 0 {
                    return Err(CheckError {
                        field: "min_times",
                        message: "`min_times` must be at least 1".into(),
                        problem: CheckProblem::Invalid,
                    });
                }
                Check::ToolCalled {
                    tool,
                    min_times,
                    valid_arguments: raw.valid_arguments.unwrap_or(false),
                }
            }
            CheckKind::JsonPath => {
                let src = raw.path.ok_or_else(|| missing("path"))?;
                let path = JsonPath::parse(&src).map_err(|e| CheckError {
                    field: "path",
                    message: format!("invalid JSON path: {}", one_line(&e.to_string())),
                    problem: CheckProblem::Invalid,
                })?;
                Check::JsonPath {
                    path,
                    equals: raw.equals,
                    target,
                }
            }
        })
    }
}

fn list_keys(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The last `error: ...` line of a regex error (the rest is an ASCII-art caret).
fn regex_reason(s: &str) -> String {
    match s.rfind("error: ") {
        Some(i) => one_line(&s[i + "error: ".len()..]),
        None => one_line(s),
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}
