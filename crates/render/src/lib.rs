//! Renderers of a run's job results (pure: every function returns a `String`; the caller
//! writes it). See docs/measurement.md and docs/architecture.md.
//!
//! - [`view`]: [`EndpointLabel`]. Every renderer reads the report model itself
//!   ([`inferscope_model::JobReport`], [`inferscope_model::SummaryReport`]); the reason lines they
//!   share are [`inferscope_model::JobReport::reason_lines`].
//! - [`human`]: nextest-style terminal lines (`Starting`, `PASS`/`FAIL`, `Summary`, and the
//!   plain `N passed, N failed` line CI tooling parses); colour only when asked, never in
//!   non-TTY/CI ([`human::color_enabled`]).
//! - [`junit`]: JUnit XML via quick-junit 0.8 (one testsuite per suite, one testcase per job).
//! - [`json`]: `--message-format json` lines (one object per job, one summary object).
//! - [`markdown`]: a summary table for pull-request comments.

pub mod human;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod view;

pub use human::{
    Style, color_enabled, is_ci, job_block, plain_line, start_line, status_line, summary_line,
};
pub use json::{job_message, summary_message};
pub use junit::{RequestCounts, junit_report, junit_report_with, junit_xml, junit_xml_with};
pub use markdown::markdown_summary;
pub use view::EndpointLabel;

#[cfg(test)]
pub(crate) mod fixtures;
