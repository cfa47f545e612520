//! Loading suites for a command: every error printed once (`error: file:line:col:
//! message; hint` and the source snippet) and exit 2, before any request. Shared by
//! `check`, `list`, `run`, `overhead` and `k8s`.

use std::path::PathBuf;

use super::{ResolvedSuite, RunOverrides, Suite, SuiteError};
use inferscope_model::exit::ExitCode;

/// Prints a suite error once: the one-line `error: file:line:col: message; hint` form,
/// then (when the file's text can be shown) the source snippet with the labelled span.
pub fn print_suite_error(e: &SuiteError) {
    let color = std::io::IsTerminal::is_terminal(&std::io::stderr());
    match e.snippet(color) {
        Some(snippet) => eprintln!("error: {e}\n{snippet}"),
        None => eprintln!("error: {e}"),
    }
}

/// Errors printed per suite file at most; the rest are counted.
pub const MAX_PRINTED_ERRORS: usize = 50;

/// Prints the first [`MAX_PRINTED_ERRORS`] of one file's `errors` (in file order), then
/// `… and N more errors not shown` for the rest and `N errors in FILE` when more than one.
pub fn print_suite_errors(path: &std::path::Path, errors: &[SuiteError]) {
    for e in errors.iter().take(MAX_PRINTED_ERRORS) {
        print_suite_error(e);
    }
    if let Some(rest) = errors
        .len()
        .checked_sub(MAX_PRINTED_ERRORS)
        .filter(|&r| r > 0)
    {
        eprintln!(
            "error: … and {rest} more error{} in {} not shown (the first {MAX_PRINTED_ERRORS} are)",
            if rest == 1 { "" } else { "s" },
            path.display()
        );
    }
    if errors.len() > 1 {
        eprintln!("error: {} errors in {}", errors.len(), path.display());
    }
}

/// Loads every suite; on any problem prints the errors of every file (each once, in file
/// order, at most [`MAX_PRINTED_ERRORS`] a file, then `N errors in FILE`) and returns
/// exit 2. Job ids shared across files
/// ([`super::check_distinct_job_ids`]) are checked once every file loads.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Suite>, i32> {
    let mut out = Vec::new();
    let mut failed = false;
    for p in paths {
        match super::load_all(p) {
            Ok(s) => out.push(s),
            Err(errors) => {
                failed = true;
                print_suite_errors(p, &errors);
            }
        }
    }
    if failed {
        return Err(ExitCode::BAD_INPUT);
    }
    if let Err(e) = super::check_distinct_job_ids(&out) {
        print_suite_error(&e);
        return Err(ExitCode::BAD_INPUT);
    }
    Ok(out)
}

/// Prints `error: no job selected[ by --filter "PATTERN"]` and returns exit 2 (bad input),
/// for `run` and `list` alike.
pub fn no_job_selected(filter: Option<&str>) -> i32 {
    eprintln!(
        "error: no job selected{}",
        filter
            .map(|f| format!(" by --filter {f:?}"))
            .unwrap_or_default()
    );
    ExitCode::BAD_INPUT
}

/// Loads and resolves the suites of a run with `overrides` (exit 2 on any problem,
/// printed, before any request).
pub fn resolve_for_run(
    paths: &[PathBuf],
    overrides: &RunOverrides,
) -> Result<Vec<ResolvedSuite>, i32> {
    if let Err(e) = overrides.validate() {
        eprintln!("error: {e}");
        return Err(ExitCode::BAD_INPUT);
    }
    let suites = load_all(paths)?;
    let resolved: Vec<ResolvedSuite> = suites
        .iter()
        .map(|s| super::resolve(s, overrides))
        .collect();
    for r in &resolved {
        if let Err(e) = r.check_endpoint_settings() {
            print_suite_error(&e);
            return Err(ExitCode::BAD_INPUT);
        }
    }
    if resolved.iter().all(|r| r.jobs.is_empty()) {
        return Err(no_job_selected(overrides.filter.as_deref()));
    }
    Ok(resolved)
}
