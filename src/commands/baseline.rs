//! `baseline save RUN_DIR --name NAME`: keeps a finished run's summary as a named
//! baseline ([`crate::baseline`]).

use std::path::Path;

use crate::model::exit::ExitCode;

use crate::baseline::{Baseline, path_for, replaced_note};

/// `baseline save RUN_DIR --name NAME`: writes `.inferscope/baselines/NAME.json` under the
/// current directory, replacing an existing baseline of that name (stderr then says
/// `replaced baseline `NAME` (was saved from run OLD_RUN_ID)`). Exit 0, or 2 on an
/// unreadable run or a bad name.
pub fn save(run_dir: &Path, name: &str) -> i32 {
    if let Err(e) = path_for(Path::new("."), name) {
        eprintln!("error: {e}");
        return ExitCode::BAD_INPUT;
    }
    let report = match super::run_dir::load_report(run_dir) {
        Ok(r) => r,
        Err(code) => return code,
    };
    // The records are streamed, never all held.
    let b = match Baseline::from_run_dir(run_dir, &report, name) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::BAD_INPUT;
        }
    };
    let figures: usize = b.jobs.iter().map(|j| j.figures.len()).sum();
    if figures == 0 {
        // A baseline with no figure compares with nothing: refuse it rather than write a
        // file every later `compare` would fail on.
        let statuses: Vec<String> = report
            .jobs
            .iter()
            .map(|j| format!("{} {}", j.id, j.status.as_str()))
            .collect();
        eprintln!(
            "error: run {} has no figure to keep as baseline `{name}`: none of its {} jobs \
             has latency figures from successful requests ({}); nothing was written",
            report.run_id,
            report.jobs.len(),
            statuses.join(", ")
        );
        return ExitCode::BAD_INPUT;
    }
    // Read what is replaced before the write (CI flows re-save a name on purpose; say so).
    let replaced = path_for(Path::new("."), name)
        .ok()
        .and_then(|p| replaced_note(name, &p));
    match b.save(Path::new(".")) {
        Ok(p) => {
            if let Some(note) = replaced {
                eprintln!("{note}");
            }
            println!(
                "saved baseline {name}: run {}, {} jobs, {figures} figures -> {}",
                b.run_id,
                b.jobs.len(),
                p.display()
            );
            ExitCode::OK
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::BAD_INPUT
        }
    }
}
