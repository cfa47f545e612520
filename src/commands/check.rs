//! `check SUITE...`: loads and validates suite files; sends nothing. Exit 0 valid, 2
//! invalid (every error printed by `suite::diagnose`).

use std::path::PathBuf;

use super::load_all;
use crate::model::exit::ExitCode;

/// Runs `check`.
pub fn command(paths: &[PathBuf]) -> i32 {
    match load_all(paths) {
        Ok(suites) => {
            for s in &suites {
                println!(
                    "ok: {} ({} jobs, {} tools)",
                    s.file.display(),
                    s.jobs.len(),
                    s.tools.len()
                );
            }
            ExitCode::OK
        }
        Err(code) => code,
    }
}
