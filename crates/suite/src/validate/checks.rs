//! The checks the suite, job and tool validators share: names and job ids, environment
//! variable names, durations in seconds, `[gates]` tables and references to declared tools.

use std::collections::BTreeSet;
use std::time::Duration;

use super::super::ctx::Ctx;
use super::super::error::{SuiteError, SuiteErrorKind as K};
use super::super::fields::did_you_mean;
use super::super::model::{MAX_ID_SUFFIX_LEN, MAX_JOB_ID_LEN, ToolSpec};
use crate::gate::spec::GateSpec;

/// A validation step's result: the value or the one located error.
pub(super) type R<T> = Result<T, SuiteError>;

/// Checks one `[gates]` table as written at `table` (`gates` or `jobs[i].gates`) with
/// [`crate::gate::validate_spec`]; the first problem in file order, located at its value
/// and naming `where_` (the suite's table or the job's).
pub(super) fn gate_spec(ctx: &Ctx, table: &str, where_: &str, spec: &GateSpec) -> R<()> {
    match crate::gate::validate_spec(spec) {
        Ok(()) => Ok(()),
        Err(problems) => Err(first_problem(ctx, table, where_, problems)),
    }
}

/// The [`SpecProblem`](crate::gate::SpecProblem) earliest in the file as a located
/// error at `{table}.{gate}`.
pub(super) fn first_problem(
    ctx: &Ctx,
    table: &str,
    where_: &str,
    problems: Vec<crate::gate::SpecProblem>,
) -> SuiteError {
    problems
        .into_iter()
        .map(|p| {
            ctx.at_value(
                &format!("{table}.{}", p.gate),
                K::InvalidValue,
                format!("`{}` in {where_}: {}", p.gate, p.problem),
            )
        })
        .min_by_key(|e| e.location().map_or(usize::MAX, |l| l.offset))
        .expect("validation returns at least one problem")
}

/// `[A-Za-z0-9_.-]+`: suite and job names (they form job ids `suite::job`).
pub(super) fn check_name(n: &str) -> Result<(), String> {
    if !n.is_empty()
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        Ok(())
    } else {
        Err(format!(
            "{} is not a valid name: use letters, digits, `_`, `.` and `-`",
            shown(n)
        ))
    }
}

/// A name for messages: `name` itself, or its first 24 characters and its length in
/// bytes when longer (a 5000-character name is not worth echoing).
fn shown(name: &str) -> String {
    const SHOWN: usize = 24;
    if name.chars().count() <= SHOWN {
        format!("`{name}`")
    } else {
        let head: String = name.chars().take(SHOWN).collect();
        format!("`{head}…` ({} bytes)", name.len())
    }
}

/// A suite name short enough that `NAME::J` (a one-character job) fits
/// [`MAX_JOB_ID_LEN`].
pub(super) fn check_suite_name_len(n: &str) -> Result<(), String> {
    let max = MAX_JOB_ID_LEN - "::".len() - 1;
    if n.len() <= max {
        Ok(())
    } else {
        Err(format!(
            "suite name {} is too long: at most {max} bytes, since job ids \
             `suite::job` may be at most {MAX_JOB_ID_LEN} bytes (the timeline's \
             {}-byte id limit less {MAX_ID_SUFFIX_LEN} for the step suffixes)",
            shown(n),
            crate::timeline::ids::MAX_ID_LEN
        ))
    }
}

/// Job id `id` (`suite::job`) is at most [`MAX_JOB_ID_LEN`] bytes and a valid timeline id
/// ([`is_valid_id`](crate::timeline::ids::is_valid_id)).
pub(super) fn check_job_id(id: &str, job: &str) -> Result<(), String> {
    if id.len() <= MAX_JOB_ID_LEN && crate::timeline::ids::is_valid_id(id) {
        Ok(())
    } else {
        Err(format!(
            "job name {} is too long: the job id `suite::job` it makes is {} bytes, at \
             most {MAX_JOB_ID_LEN} (the timeline's {}-byte id limit less \
             {MAX_ID_SUFFIX_LEN} for the step suffixes)",
            shown(job),
            id.len(),
            crate::timeline::ids::MAX_ID_LEN
        ))
    }
}

pub(crate) fn is_env_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

pub(super) fn seconds(ctx: &Ctx, key: &str, v: Option<f64>, default: f64) -> R<Duration> {
    let s = v.unwrap_or(default);
    match Duration::try_from_secs_f64(s) {
        Ok(d) if s > 0.0 => Ok(d),
        _ => Err(ctx.at_value(
            key,
            K::InvalidValue,
            format!("`{key}` must be a positive number of seconds"),
        )),
    }
}

/// An unknown-tool error with a did-you-mean hint or the list of declared tools.
pub(super) fn unknown_tool(ctx: &Ctx, at: &str, name: &str, tools: &[ToolSpec]) -> SuiteError {
    let hint = did_you_mean(name, tools.iter().map(|t| t.name.as_str()))
        .map(|s| format!("did you mean `{s}`?"))
        .or_else(|| {
            let names: BTreeSet<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            Some(if names.is_empty() {
                "the suite declares no `[[tools]]`".to_string()
            } else {
                format!(
                    "declared tools: {}",
                    names
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
        });
    ctx.at_value(
        at,
        K::UnknownReference,
        format!("unknown tool `{name}`: not declared in `[[tools]]`"),
    )
    .with_hint(hint)
}
