//! `compare RUN_DIR --baseline NAME`: a finished run against a saved baseline
//! ([`crate::baseline`]).

use std::path::Path;

use crate::model::exit::ExitCode;

use crate::baseline::{
    Baseline, JobComparison, JobCoverage, compare_summaries, job_coverage, render_comparison,
    stream_summaries,
};

/// `compare RUN_DIR --baseline NAME [--noise-pct P] [--regression-pct P]`: prints the
/// comparison. Exit 0; 100 when `regression_pct` is given and a figure regressed by more;
/// 2 on bad input (unreadable run, unknown baseline, negative percent, or a baseline that
/// shares no job with the run). When only some of the run's jobs are in the baseline, a
/// `note:` on stderr lists the others (exit unchanged).
pub fn command(run_dir: &Path, name: &str, noise_pct: f64, regression_pct: Option<f64>) -> i32 {
    if !(noise_pct.is_finite() && noise_pct >= 0.0)
        || regression_pct.is_some_and(|p| !(p.is_finite() && p >= 0.0))
    {
        eprintln!("error: --noise-pct and --regression-pct must be finite numbers >= 0");
        return ExitCode::BAD_INPUT;
    }
    let report = match super::run_dir::load_report(run_dir) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let baseline = match Baseline::load(Path::new("."), name) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::BAD_INPUT;
        }
    };
    // The records are streamed, never all held.
    let summaries = match stream_summaries(run_dir, &report, |_| true) {
        Ok(s) => s.into_iter().flatten().collect::<Vec<_>>(),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::BAD_INPUT;
        }
    };
    let jobs = compare_summaries(&baseline, &summaries, noise_pct);
    match job_coverage(&jobs) {
        JobCoverage::All => {}
        JobCoverage::None => {
            let base_jobs: Vec<&str> = baseline.jobs.iter().map(|j| j.id.as_str()).collect();
            let run_jobs: Vec<&str> = jobs.iter().map(|(id, _)| id.as_str()).collect();
            let shared: Vec<&str> = run_jobs
                .iter()
                .copied()
                .filter(|id| base_jobs.contains(id))
                .collect();
            if !shared.is_empty() {
                // The jobs are there, their figures are not (a run, or a baseline, without
                // successful requests): say that, not that no job is shared.
                eprintln!(
                    "error: baseline `{name}` (saved from run {}) and run {} share {} jobs \
                     ([{}]) but no figure of them is in both: a job without successful \
                     requests has no latency figures; nothing to compare",
                    baseline.run_id,
                    report.run_id,
                    shared.len(),
                    shared.join(", ")
                );
                return ExitCode::BAD_INPUT;
            }
            eprintln!(
                "error: baseline `{name}` (saved from run {}) shares no job with run {}: \
                 the baseline has [{}], the run has [{}]; nothing to compare (re-save the \
                 baseline after renaming a suite or job)",
                baseline.run_id,
                report.run_id,
                base_jobs.join(", "),
                run_jobs.join(", ")
            );
            return ExitCode::BAD_INPUT;
        }
        JobCoverage::Partial(missing) => eprintln!(
            "note: {} of run {}'s {} jobs are not in baseline `{name}` and are not \
             compared: {}",
            missing.len(),
            report.run_id,
            jobs.len(),
            missing.join(", ")
        ),
    }
    println!("{}", render_comparison(&baseline, &report.run_id, &jobs));
    let worst = jobs
        .iter()
        .filter_map(|(_, c)| c.as_ref())
        .map(JobComparison::worst_regression_pct)
        .fold(0.0, f64::max);
    match regression_pct {
        Some(bound) if worst > bound => {
            println!(
                "regression: {worst:.1}% > --regression-pct {}",
                crate::gate::format_number(bound)
            );
            ExitCode::FAILED
        }
        _ => ExitCode::OK,
    }
}
