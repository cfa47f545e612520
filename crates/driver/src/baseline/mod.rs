//! Saved baselines and comparisons against them.
//!
//! - `inferscope-bench baseline save RUN_DIR --name NAME` keeps the run's summary — per job,
//!   latency figures and their spread ([`summary`]) — in
//!   `.inferscope/baselines/NAME.json` under the current directory (schema
//!   [`BASELINE_SCHEMA`]);
//! - `inferscope-bench compare RUN_DIR --baseline NAME` and `run … --baseline NAME` print
//!   per-job, per-figure changes with a verdict — improved, regressed or within noise —
//!   from the spread of both runs ([`compare`]);
//! - a job's `[gates] regression_pct` bound fails the job (exit 100) when its worst
//!   regressed figure is slower than the baseline by more than that percent.
//!
//! Summaries are computed from `report.json`'s per-request records (warm-up requests
//! excluded), so a baseline can be saved from any finished run. Names are
//! `[A-Za-z0-9_.-]+` (no path separators).

pub use inferscope_report::baseline::{compare, summary};

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::{JobReport, JobStatus, RunReport};
pub use compare::{
    ChangeVerdict, DEFAULT_NOISE_PCT, FigureChange, JobComparison, compare_job, render_job,
};
pub use summary::{
    FigureSummary, JobSamples, JobSummary, SPREAD_METHOD, job_summary, quantile_ci_ranks,
    samples_of, samples_of_compact,
};

/// Schema id of a baseline file.
pub const BASELINE_SCHEMA: &str = "inferscope-bench.baseline/v1";

/// Where baselines live, relative to the current directory (gitignored).
pub const BASELINES_DIR: &str = ".inferscope/baselines";

/// A saved baseline: one run's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// [`BASELINE_SCHEMA`].
    pub schema: String,
    /// The baseline's name.
    pub name: String,
    /// The run it was saved from.
    pub run_id: String,
    /// `inferscope-bench <version>` that ran it.
    pub tool: String,
    /// Run start, RFC 3339 UTC (display only).
    pub started_utc: String,
    /// True when any suite of the run was served by the built-in simulator.
    pub simulated: bool,
    /// [`SPREAD_METHOD`].
    pub spread_method: String,
    /// [`crate::stats::PERCENTILE_METHOD`].
    pub percentile_method: String,
    /// Per-job summaries, in run order.
    pub jobs: Vec<JobSummary>,
}

/// Errors of saving and loading baselines (bad input: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// The name is not `[A-Za-z0-9_.-]+`.
    #[error("invalid baseline name {0:?}: use letters, digits, `_`, `.` and `-`")]
    InvalidName(String),
    /// No such baseline.
    #[error("no baseline named `{name}` ({path} does not exist)")]
    NotFound {
        /// The name asked for.
        name: String,
        /// The path looked at.
        path: String,
    },
    /// Reading, parsing or writing failed.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// What went wrong.
        reason: String,
    },
}

/// The file of baseline `name` under `root` (`root/.inferscope/baselines/NAME.json`).
///
/// Errors: [`BaselineError::InvalidName`].
pub fn path_for(root: &Path, name: &str) -> Result<PathBuf, BaselineError> {
    let ok = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'));
    if !ok {
        return Err(BaselineError::InvalidName(name.to_string()));
    }
    Ok(root.join(BASELINES_DIR).join(format!("{name}.json")))
}

/// Summaries of every job of `report` (read from `run_dir`), streaming its
/// `requests.jsonl` ([`crate::records::visit`], checked as every reader checks it): only
/// each job's compact samples ([`JobSamples`]) are held, never its records.
/// `want(job)` selects the jobs to summarise (`None` for the others).
pub fn stream_summaries(
    run_dir: &Path,
    report: &RunReport,
    want: impl Fn(&JobReport) -> bool,
) -> Result<Vec<Option<JobSummary>>, String> {
    struct Acc<'a> {
        warm: HashSet<&'a str>,
        load: bool,
        samples: JobSamples,
        n: u64,
        ok: u64,
    }
    let mut acc: Vec<Option<Acc>> = report
        .jobs
        .iter()
        .map(|j| {
            want(j).then(|| Acc {
                warm: j
                    .load
                    .as_ref()
                    .map(|l| l.warmup_requests.iter().map(String::as_str).collect())
                    .unwrap_or_default(),
                load: j.load.is_some(),
                samples: JobSamples::default(),
                n: 0,
                ok: 0,
            })
        })
        .collect();
    crate::records::visit(run_dir, report, |j, line| {
        let (Some(Some(a)), crate::records::Line::Request(r)) = (acc.get_mut(j), line) else {
            return;
        };
        if r.warmup || a.warm.contains(r.request_id.as_str()) {
            return;
        }
        a.n += 1;
        if r.is_success() {
            a.ok += 1;
            a.samples.push(&r, a.load);
        }
    })?;
    Ok(report
        .jobs
        .iter()
        .zip(acc)
        .map(|(j, a)| a.map(|a| job_summary(&j.id, j.kind.as_str(), a.n, a.ok, &a.samples)))
        .collect())
}

/// Whether a job of a run belongs in a baseline: it ran to its end (`not_run`,
/// `cancelled` and `setup_error` jobs are left out: a partial or absent run is no
/// baseline).
fn baseline_job(j: &JobReport) -> bool {
    matches!(j.status, JobStatus::Pass | JobStatus::Fail)
}

/// [`samples_of`] a job of a report (its warm-up ids from `jobs[].load`).
pub fn job_samples(job: &JobReport) -> (JobSamples, u64, u64) {
    let warm: HashSet<&str> = job
        .load
        .as_ref()
        .map(|l| l.warmup_requests.iter().map(String::as_str).collect())
        .unwrap_or_default();
    samples_of(job.requests.iter(), &warm, job.load.is_some())
}

/// The summary of one job of a report.
pub fn summarize_job(job: &JobReport) -> JobSummary {
    let (samples, n, ok) = job_samples(job);
    job_summary(&job.id, job.kind.as_str(), n, ok, &samples)
}

impl Baseline {
    /// The baseline of `report` named `name`: every job the run ran to its end, summarised
    /// (`not_run`, `cancelled` and `setup_error` jobs are left out: a partial or absent run
    /// is no baseline).
    pub fn from_report(report: &RunReport, name: &str) -> Baseline {
        Baseline {
            schema: BASELINE_SCHEMA.into(),
            name: name.into(),
            run_id: report.run_id.clone(),
            tool: report.tool.clone(),
            started_utc: report.started_utc.clone(),
            simulated: report.endpoints.iter().any(|e| e.simulated),
            spread_method: SPREAD_METHOD.into(),
            percentile_method: report.percentile_method.clone(),
            // A job the run never started (cancelled first) has nothing to compare with.
            jobs: report
                .jobs
                .iter()
                .filter(|j| baseline_job(j))
                .map(summarize_job)
                .collect(),
        }
    }

    /// [`Baseline::from_report`] of a run on disk, its records streamed
    /// ([`stream_summaries`]): a run of any size in the memory of its compact samples.
    pub fn from_run_dir(
        run_dir: &Path,
        report: &RunReport,
        name: &str,
    ) -> Result<Baseline, String> {
        let jobs = stream_summaries(run_dir, report, baseline_job)?;
        let mut b = Baseline::from_report(
            &RunReport {
                jobs: Vec::new(),
                ..report.clone()
            },
            name,
        );
        b.jobs = jobs.into_iter().flatten().collect();
        Ok(b)
    }

    /// The summary of job `id`.
    pub fn job(&self, id: &str) -> Option<&JobSummary> {
        self.jobs.iter().find(|j| j.id == id)
    }

    /// Writes the baseline to `root/.inferscope/baselines/NAME.json` (atomically),
    /// creating the directory. Returns the path.
    pub fn save(&self, root: &Path) -> Result<PathBuf, BaselineError> {
        let path = path_for(root, &self.name)?;
        let io = |e: std::io::Error| BaselineError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        };
        let dir = path.parent().unwrap_or(root);
        std::fs::create_dir_all(dir).map_err(io)?;
        let json = serde_json::to_vec_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        std::io::Write::write_all(&mut tmp, &json).map_err(io)?;
        tmp.persist(&path).map_err(|e| io(e.error))?;
        Ok(path)
    }

    /// Reads baseline `name` from `root/.inferscope/baselines/`.
    pub fn load(root: &Path, name: &str) -> Result<Baseline, BaselineError> {
        let path = path_for(root, name)?;
        let bytes = crate::fsio::read(&path, crate::fsio::limits::BASELINE_BYTES).map_err(|e| {
            if e == crate::fsio::ReadError::NotFound {
                BaselineError::NotFound {
                    name: name.into(),
                    path: path.display().to_string(),
                }
            } else {
                BaselineError::Io {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                }
            }
        })?;
        let b: Baseline = serde_json::from_slice(&bytes).map_err(|e| BaselineError::Io {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        if b.schema != BASELINE_SCHEMA {
            return Err(BaselineError::Io {
                path: path.display().to_string(),
                reason: format!("schema {:?}, expected {BASELINE_SCHEMA:?}", b.schema),
            });
        }
        Ok(b)
    }

    /// Compares job `cur` with this baseline's summary of the same job (`None` when the
    /// baseline lacks it).
    pub fn compare(&self, cur: &JobSummary, noise_pct: f64) -> Option<JobComparison> {
        self.job(&cur.id)
            .map(|b| compare_job(b, cur, &self.name, &self.run_id, noise_pct))
    }
}

/// Compares every job of `report` with `baseline`: per job its comparison (or `None` when
/// the baseline lacks the job), in report order.
pub fn compare_report(
    baseline: &Baseline,
    report: &RunReport,
    noise_pct: f64,
) -> Vec<(String, Option<JobComparison>)> {
    let summaries: Vec<JobSummary> = report.jobs.iter().map(summarize_job).collect();
    compare_summaries(baseline, &summaries, noise_pct)
}

/// [`compare_report`] of summaries already made (e.g. streamed, [`stream_summaries`]).
pub fn compare_summaries(
    baseline: &Baseline,
    summaries: &[JobSummary],
    noise_pct: f64,
) -> Vec<(String, Option<JobComparison>)> {
    summaries
        .iter()
        .map(|j| (j.id.clone(), baseline.compare(j, noise_pct)))
        .collect()
}

/// How a run's jobs meet a baseline's, from [`compare_report`]'s result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobCoverage {
    /// Every job of the run is in the baseline, with at least one figure in both.
    All,
    /// Some are: the ids of the run's jobs the baseline lacks (or shares no figure with),
    /// in report order.
    Partial(Vec<String>),
    /// None is (also when the run has no job): nothing was compared.
    None,
}

/// Which of the run's jobs the baseline holds (see [`JobCoverage`]).
pub fn job_coverage(jobs: &[(String, Option<JobComparison>)]) -> JobCoverage {
    let missing: Vec<String> = jobs
        .iter()
        .filter(|(_, c)| c.as_ref().is_none_or(|c| c.figures.is_empty()))
        .map(|(id, _)| id.clone())
        .collect();
    if missing.len() == jobs.len() {
        JobCoverage::None
    } else if missing.is_empty() {
        JobCoverage::All
    } else {
        JobCoverage::Partial(missing)
    }
}

/// The console text of a comparison: one table per job, a line for jobs the baseline
/// lacks, and a closing count.
pub fn render_comparison(
    baseline: &Baseline,
    run_id: &str,
    jobs: &[(String, Option<JobComparison>)],
) -> String {
    let mut out = format!(
        "compare run {run_id} with baseline {} (run {}, {})\n",
        baseline.name,
        baseline.run_id,
        if baseline.simulated {
            "simulated endpoint"
        } else {
            "real endpoint"
        }
    );
    let (mut reg, mut imp, mut noise) = (0, 0, 0);
    for (id, c) in jobs {
        match c {
            Some(c) => {
                out.push_str(&render_job(c));
                out.push('\n');
                reg += c.count(ChangeVerdict::Regressed);
                imp += c.count(ChangeVerdict::Improved);
                noise += c.count(ChangeVerdict::WithinNoise);
            }
            None => out.push_str(&format!("job {id}: not in baseline {}\n", baseline.name)),
        }
    }
    out.push_str(&format!(
        "summary: {reg} regressed, {imp} improved, {noise} within noise"
    ));
    out
}

/// The stderr line for saving baseline `name` over the file at `path`: `None` when there
/// is no file; `replaced baseline `NAME` (was saved from run RUN_ID)` when it is a
/// baseline; the same with `(the old file could not be read: REASON)` when it is not.
pub fn replaced_note(name: &str, path: &Path) -> Option<String> {
    let old = match crate::fsio::read(path, crate::fsio::limits::BASELINE_BYTES) {
        Err(crate::fsio::ReadError::NotFound) => return None,
        Err(e) => Err(e.to_string()),
        Ok(bytes) => serde_json::from_slice::<Baseline>(&bytes).map_err(|e| e.to_string()),
    };
    Some(match old {
        Ok(old) => format!(
            "replaced baseline `{name}` (was saved from run {})",
            old.run_id
        ),
        Err(e) => format!("replaced baseline `{name}` (the old file could not be read: {e})"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job summary with one figure (`ttft_ms.p50` = 20 ms).
    fn summary(id: &str) -> JobSummary {
        let fig = FigureSummary {
            value: 20.0,
            ci_low: Some(19.0),
            ci_high: Some(21.0),
            n: 10,
            p25: 19.5,
            p75: 20.5,
            unit: "ms".into(),
        };
        JobSummary {
            id: id.into(),
            kind: "context".into(),
            requests: 1,
            succeeded: 1,
            figures: [("ttft_ms.p50".to_string(), fig)].into(),
        }
    }

    /// A job the baseline holds without figures (no successful request) compares nothing:
    /// not covered, and its `regression_pct` is unavailable, never a 0 % pass.
    #[test]
    fn a_job_without_figures_is_not_compared() {
        let mut b = baseline("main", "r0");
        b.jobs[0].figures.clear();
        let c = b
            .compare(&summary("s::a"), 5.0)
            .expect("the job is in the baseline");
        assert!(c.figures.is_empty());
        assert_eq!(
            job_coverage(&[("s::a".into(), Some(c.clone()))]),
            JobCoverage::None
        );
        let f = crate::baseline::compare::regression_figure(Some(&c), None, "");
        assert_eq!(f.value, None, "{f:?}");
        assert!(
            f.reason
                .as_deref()
                .unwrap_or("")
                .contains("no figure of job `s::a`"),
            "{f:?}"
        );
        // With a shared figure the gate figure is available (0 % when nothing regressed).
        let c = baseline("main", "r0")
            .compare(&summary("s::a"), 5.0)
            .unwrap();
        assert_eq!(
            crate::baseline::compare::regression_figure(Some(&c), None, "").value,
            Some(0.0)
        );
    }

    fn baseline(name: &str, run_id: &str) -> Baseline {
        Baseline {
            schema: BASELINE_SCHEMA.into(),
            name: name.into(),
            run_id: run_id.into(),
            tool: "inferscope-bench test".into(),
            started_utc: "2026-01-01T00:00:00Z".into(),
            simulated: true,
            spread_method: SPREAD_METHOD.into(),
            percentile_method: "nearest-rank".into(),
            jobs: vec![summary("s::a")],
        }
    }

    #[test]
    fn job_coverage_tells_all_some_and_none() {
        let b = baseline("main", "r0");
        let cmp = |id: &str| (id.to_string(), b.compare(&summary(id), 5.0));
        assert_eq!(job_coverage(&[cmp("s::a")]), JobCoverage::All);
        assert_eq!(
            job_coverage(&[cmp("s::a"), cmp("s::b"), cmp("s::c")]),
            JobCoverage::Partial(vec!["s::b".into(), "s::c".into()])
        );
        assert_eq!(
            job_coverage(&[cmp("renamed::a"), cmp("renamed::b")]),
            JobCoverage::None
        );
        assert_eq!(job_coverage(&[]), JobCoverage::None);
    }

    #[test]
    fn replacing_a_baseline_names_the_run_it_was_saved_from() {
        let tmp = tempfile::tempdir().unwrap();
        let path = path_for(tmp.path(), "good").unwrap();
        assert_eq!(replaced_note("good", &path), None, "nothing to replace yet");
        baseline("good", "run-old").save(tmp.path()).unwrap();
        assert_eq!(
            replaced_note("good", &path).as_deref(),
            Some("replaced baseline `good` (was saved from run run-old)")
        );
        std::fs::write(&path, "not json").unwrap();
        let note = replaced_note("good", &path).unwrap();
        assert!(
            note.starts_with("replaced baseline `good` (the old file could not be read: "),
            "{note}"
        );
    }
}
