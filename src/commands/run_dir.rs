//! Reading a run directory's report for a command: an unreadable one is an error line on
//! stderr and the exit status for bad input.

use crate::model::exit::ExitCode;
use crate::run_dir::{read_report, read_report_with_requests};

/// [`read_report`] for a command: on failure prints `error: PATH: REASON` to stderr and
/// returns the exit status [`ExitCode::BAD_INPUT`] (2) as the error.
pub fn load_report(run_dir: &std::path::Path) -> Result<crate::model::RunReport, i32> {
    read_report(run_dir).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::BAD_INPUT
    })
}

/// [`read_report_with_requests`] for a command (see [`load_report`]).
pub fn load_report_with_requests(
    run_dir: &std::path::Path,
) -> Result<crate::model::RunReport, i32> {
    read_report_with_requests(run_dir).map_err(|e| {
        eprintln!("error: {e}");
        ExitCode::BAD_INPUT
    })
}
