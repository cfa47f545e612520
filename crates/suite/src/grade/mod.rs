//! Deterministic grading of a job's outcome (docs/suite.md "`[[jobs.checks]]`").
//!
//! A suite's `[[jobs.checks]]` tables deserialize into [`Check`]s (schema:
//! docs/suite.md "`[[jobs.checks]]`"); regexes and JSON paths are compiled when the suite
//! is loaded, so an invalid one is a load error with a file:line:col location, never a
//! run-time surprise. [`evaluate`] applies every check to a [`GradeSubject`] and returns
//! one [`CheckResult`] per check; a job passes grading only when all of them pass. A
//! grading failure is a job failure, distinct from a transport failure.
//!
//! Pure logic: no I/O. Check descriptions and failure reasons never contain the graded
//! text or the expected value (no responses in artifacts), only lengths, counts and the
//! suite's own configuration (tool names, JSON paths).

mod check;
mod eval;

pub use check::{Check, CheckError, CheckKind, CheckProblem, CheckTarget, RawCheck};
pub use eval::{CheckResult, GradeSubject, evaluate};

#[cfg(test)]
mod tests;
