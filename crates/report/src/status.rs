//! A job's status: one rule for the jobs of a run and for the jobs `merge` rebuilds from
//! the shards that ran them.

use crate::gate::JobOutcome;
use crate::model::JobStatus;

/// What decides a job's status, read in this order: a job that never started is `not_run`,
/// one that could not be set up `setup_error`, one stopped by Ctrl-C / SIGTERM
/// `cancelled`; otherwise it passes when its gates and grading pass and every other
/// condition of a pass held, and fails when not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusFacts {
    /// The job made no request: the run was cancelled before it started.
    pub not_run: bool,
    /// The job could not start (no request was made).
    pub setup_error: bool,
    /// The job was stopped before all its units ran.
    pub cancelled: bool,
    /// Its gates against its figures, with its grading.
    pub outcome: JobOutcome,
    /// Every other condition of a pass held: the harness succeeded, every unit finished,
    /// the arrival schedule was kept.
    pub complete: bool,
}

impl StatusFacts {
    /// The facts of a job merged from its shards' jobs (`statuses`): `not_run` when no
    /// shard ran it, `setup_error` when one could not set it up, `cancelled` when one was
    /// cancelled or did not run it while others did.
    pub fn of_shards(statuses: &[JobStatus], outcome: JobOutcome, complete: bool) -> StatusFacts {
        let any = |s: JobStatus| statuses.contains(&s);
        StatusFacts {
            not_run: statuses.iter().all(|s| *s == JobStatus::NotRun),
            setup_error: any(JobStatus::SetupError),
            cancelled: any(JobStatus::Cancelled) || any(JobStatus::NotRun),
            outcome,
            complete,
        }
    }
}

/// The job's status from its facts (see [`StatusFacts`]).
pub fn job_status(f: &StatusFacts) -> JobStatus {
    if f.not_run {
        JobStatus::NotRun
    } else if f.setup_error {
        JobStatus::SetupError
    } else if f.cancelled {
        JobStatus::Cancelled
    } else if f.outcome == JobOutcome::Pass && f.complete {
        JobStatus::Pass
    } else {
        JobStatus::Fail
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(outcome: JobOutcome, complete: bool) -> StatusFacts {
        StatusFacts {
            not_run: false,
            setup_error: false,
            cancelled: false,
            outcome,
            complete,
        }
    }

    #[test]
    fn a_job_passes_only_when_its_outcome_passes_and_it_is_complete() {
        assert_eq!(job_status(&facts(JobOutcome::Pass, true)), JobStatus::Pass);
        assert_eq!(job_status(&facts(JobOutcome::Pass, false)), JobStatus::Fail);
        assert_ne!(job_status(&facts(JobOutcome::Fail, true)), JobStatus::Pass);
    }

    #[test]
    fn not_run_then_setup_error_then_cancelled_come_before_the_outcome() {
        let all = StatusFacts {
            not_run: true,
            setup_error: true,
            cancelled: true,
            ..facts(JobOutcome::Pass, true)
        };
        assert_eq!(job_status(&all), JobStatus::NotRun);
        let f = StatusFacts {
            not_run: false,
            ..all
        };
        assert_eq!(job_status(&f), JobStatus::SetupError);
        let f = StatusFacts {
            setup_error: false,
            ..f
        };
        assert_eq!(job_status(&f), JobStatus::Cancelled);
    }

    #[test]
    fn merged_shards() {
        use JobStatus::*;
        let of = |s: &[JobStatus]| job_status(&StatusFacts::of_shards(s, JobOutcome::Pass, true));
        assert_eq!(of(&[NotRun, NotRun]), NotRun);
        assert_eq!(of(&[Pass, SetupError, Cancelled]), SetupError);
        assert_eq!(of(&[Pass, NotRun]), Cancelled);
        assert_eq!(of(&[Pass, Cancelled]), Cancelled);
        assert_eq!(of(&[Pass, Fail]), Pass);
    }
}
