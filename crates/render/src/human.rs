//! nextest-style terminal lines (docs/architecture.md "Events and reporters"):
//!
//! ```text
//!     Starting 2 jobs across 1 suite (endpoint: simulated (built-in))
//!         PASS [   1.234s] agentic::lookup
//!         FAIL [   0.512s] agentic::search
//!              ttft_ms.p99 = 812.4 ms > bound 500 ms (client timing)
//!      Summary [   1.746s] 2 jobs run: 1 passed, 1 failed
//! 1 passed, 1 failed
//! ```
//!
//! After Ctrl-C, a job stopped part-way is `CANCELLED` (never `PASS`, whatever its gates
//! said about what ran), a job that never started is `NOT RUN` (not `FAIL`) and is not
//! counted in `N jobs run`; the summary adds `, N cancelled` and `, N not run (cancelled)`
//! (nextest's convention). A job whose endpoint failed the preflight is `SETUP ERROR`, with
//! its one cause:
//!
//! ```text
//!    CANCELLED [   0.900s] agentic::lookup
//!              agentic::lookup#0 stopped: cancelled
//!      NOT RUN [   0.000s] agentic::repo_tour
//!              note: not run: cancelled before start
//!      Summary [   0.901s] 1 job run: 0 passed, 0 failed, 1 cancelled, 1 not run (cancelled)
//! 0 passed, 1 failed
//! ```
//!
//! The plain line counts a cancelled job as failed (it did not pass).
//!
//! The status word is right-aligned in a 12-column field, the duration is `[{:>8.3}s]`,
//! reason lines are indented to the `[` column. The last line is the plain
//! `N passed, N failed` that CI tooling parses: never coloured, nothing else on it.

use super::view::EndpointLabel;
use inferscope_model::{JobReport, JobStatus, SummaryReport};

const GREEN_BOLD: &str = "\x1b[32;1m";
const RED_BOLD: &str = "\x1b[31;1m";
const YELLOW_BOLD: &str = "\x1b[33;1m";
const RESET: &str = "\x1b[0m";
/// Indentation of reason lines: aligned with the `[` of the duration.
pub const REASON_INDENT: &str = "             ";

/// Rendering style.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Style {
    /// Emit ANSI colours (status words green/red bold). Decide with [`color_enabled`].
    pub color: bool,
}

impl Style {
    /// No colour (the default; what non-TTY and CI output always gets).
    pub const PLAIN: Style = Style { color: false };
}

/// Colour only when the user asked for it (a flag), the stream is a terminal, and no CI
/// environment is detected — never in non-TTY or CI output.
pub fn color_enabled(asked: bool, is_tty: bool, ci: bool) -> bool {
    asked && is_tty && !ci
}

/// Whether the environment is a CI system, from an environment lookup (pass
/// `|k| std::env::var(k).ok()`): `CI` set to anything but empty, `0` or `false`, or one of
/// `GITHUB_ACTIONS`, `GITLAB_CI`, `BUILDKITE`, `TF_BUILD`, `JENKINS_URL`, `TEAMCITY_VERSION`,
/// `CIRCLECI`, `TRAVIS` set. Also the condition that hides the progress bar.
pub fn is_ci(env: impl Fn(&str) -> Option<String>) -> bool {
    if let Some(v) = env("CI") {
        let v = v.trim().to_ascii_lowercase();
        if !(v.is_empty() || v == "0" || v == "false") {
            return true;
        }
    }
    [
        "GITHUB_ACTIONS",
        "GITLAB_CI",
        "BUILDKITE",
        "TF_BUILD",
        "JENKINS_URL",
        "TEAMCITY_VERSION",
        "CIRCLECI",
        "TRAVIS",
    ]
    .iter()
    .any(|k| env(k).is_some_and(|v| !v.is_empty()))
}

fn painted(word: &str, color: &str, style: Style) -> String {
    let pad = " ".repeat(12usize.saturating_sub(word.chars().count()));
    if style.color {
        format!("{pad}{color}{word}{RESET}")
    } else {
        format!("{pad}{word}")
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `[   1.234s]`: seconds with millisecond resolution (truncated), right-aligned in 8.
pub fn duration_field(ns: u64) -> String {
    let secs = format!("{}.{:03}", ns / 1_000_000_000, (ns / 1_000_000) % 1000);
    format!("[{secs:>8}s]")
}

/// `    Starting N jobs across M suites (endpoint: …)` (no newline).
pub fn start_line(jobs: usize, suites: usize, endpoint: &EndpointLabel, style: Style) -> String {
    format!(
        "{} {} across {} (endpoint: {})",
        painted("Starting", GREEN_BOLD, style),
        plural(jobs, "job", "jobs"),
        plural(suites, "suite", "suites"),
        endpoint.display()
    )
}

/// `        PASS [   1.234s] agentic::lookup`, `FAIL`, `CANCELLED`, `NOT RUN` or
/// `SETUP ERROR` (no newline).
pub fn status_line(job: &JobReport, style: Style) -> String {
    let color = match job.status {
        JobStatus::Pass => GREEN_BOLD,
        JobStatus::NotRun | JobStatus::Cancelled => YELLOW_BOLD,
        JobStatus::Fail | JobStatus::SetupError => RED_BOLD,
    };
    let word = painted(job.status.word(), color, style);
    format!("{word} {} {}", duration_field(job.duration_ns), job.id)
}

/// The status line followed by the job's reason lines ([`JobReport::reason_lines`]),
/// each indented by [`REASON_INDENT`]; every line ends with `\n`.
pub fn job_block(job: &JobReport, style: Style) -> String {
    let mut out = status_line(job, style);
    out.push('\n');
    for line in job.reason_lines() {
        // a reason never breaks the layout: embedded newlines stay inside the indent
        for part in line.lines() {
            out.push_str(REASON_INDENT);
            out.push_str(part);
            out.push('\n');
        }
    }
    out
}

/// `     Summary [  12.345s] N jobs run: N passed, N failed` (no newline), followed by
/// `, N cancelled` when jobs were stopped part-way, `, N not run (cancelled)` when jobs were
/// not run, and `, N setup errors` when jobs could not start. `N jobs run` counts only jobs
/// that started.
pub fn summary_line(totals: &SummaryReport, style: Style) -> String {
    let color = if totals.all_passed() {
        GREEN_BOLD
    } else {
        RED_BOLD
    };
    let mut line = format!(
        "{} {} {} run: {} passed, {} failed",
        painted("Summary", color, style),
        duration_field(totals.duration_ns),
        plural(totals.jobs, "job", "jobs"),
        totals.passed,
        totals.failed
    );
    if totals.cancelled > 0 {
        line.push_str(&format!(", {} cancelled", totals.cancelled));
    }
    if totals.not_run > 0 {
        line.push_str(&format!(", {} not run (cancelled)", totals.not_run));
    }
    if totals.setup_errors > 0 {
        line.push_str(&format!(
            ", {}",
            plural(totals.setup_errors, "setup error", "setup errors")
        ));
    }
    line
}

/// The plain closing line `N passed, N failed` (no newline, never coloured): every job
/// that did not pass and was not left unstarted by a cancellation counts as failed
/// (a cancelled job and a setup error included).
pub fn plain_line(totals: &SummaryReport) -> String {
    format!(
        "{} passed, {} failed",
        totals.passed,
        totals.failed + totals.cancelled + totals.setup_errors
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{failing_job, passing_job};

    fn totals(jobs: &[JobReport], duration_ns: u64) -> SummaryReport {
        SummaryReport::of(jobs, duration_ns, false)
    }

    fn counts(passed: usize, failed: usize, duration_ns: u64) -> SummaryReport {
        SummaryReport {
            jobs: passed + failed,
            passed,
            failed,
            cancelled: 0,
            not_run: 0,
            setup_errors: 0,
            duration_ns,
            exit_status: 0,
        }
    }

    #[test]
    fn exact_status_lines() {
        assert_eq!(
            status_line(&passing_job(), Style::PLAIN),
            "        PASS [   1.234s] agentic::lookup"
        );
        let mut j = failing_job();
        j.id = "agentic::lookup".into();
        assert_eq!(
            status_line(&j, Style::PLAIN),
            "        FAIL [   0.512s] agentic::lookup"
        );
    }

    #[test]
    fn exact_failing_block() {
        assert_eq!(
            job_block(&failing_job(), Style::PLAIN),
            "        FAIL [   0.512s] context::long<prompt>\n\
             \x20            ttft_ms.p99 = 812.4 ms > bound 500 ms (client timing)\n\
             \x20            tokens_per_joule = unavailable (no GPU), bound >= 2 tokens/J (unavailable)\n\
             \x20            grading: contains(\"Oslo\") failed: final answer lacks \"Oslo\"\n\
             \x20            1 of 2 requests failed: 1 idle_timeout\n\
             \x20            note: endpoint was simulated\n"
        );
        assert_eq!(
            job_block(&passing_job(), Style::PLAIN),
            "        PASS [   1.234s] agentic::lookup\n"
        );
    }

    #[test]
    fn exact_start_summary_and_plain_lines() {
        assert_eq!(
            start_line(3, 2, &EndpointLabel::Simulated, Style::PLAIN),
            "    Starting 3 jobs across 2 suites (endpoint: simulated (built-in))"
        );
        assert_eq!(
            start_line(
                1,
                1,
                &EndpointLabel::Url("http://127.0.0.1:8080/v1".into()),
                Style::PLAIN
            ),
            "    Starting 1 job across 1 suite (endpoint: http://127.0.0.1:8080/v1)"
        );
        let t = counts(2, 1, 12_345_678_901);
        assert_eq!(
            summary_line(&t, Style::PLAIN),
            "     Summary [  12.345s] 3 jobs run: 2 passed, 1 failed"
        );
        assert_eq!(plain_line(&t), "2 passed, 1 failed");
        let one = counts(1, 0, 8_000_000);
        assert_eq!(
            summary_line(&one, Style::PLAIN),
            "     Summary [   0.008s] 1 job run: 1 passed, 0 failed"
        );
    }

    #[test]
    fn a_job_not_run_is_not_a_failure_nor_counted_as_run() {
        let mut skipped = failing_job();
        skipped.id = "agentic::repo_tour".into();
        skipped.status = JobStatus::NotRun;
        skipped.duration_ns = 0;
        skipped.notes = vec!["not run: cancelled before start".into()];
        assert_eq!(
            job_block(&skipped, Style::PLAIN),
            "     NOT RUN [   0.000s] agentic::repo_tour\n\
             \x20            note: not run: cancelled before start\n"
        );
        let t = totals(&[passing_job(), skipped], 1_746_000_000);
        assert_eq!(
            summary_line(&t, Style::PLAIN),
            "     Summary [   1.746s] 1 job run: 1 passed, 0 failed, 1 not run (cancelled)"
        );
        assert_eq!(plain_line(&t), "1 passed, 0 failed");
        assert!(
            summary_line(&t, Style { color: true }).contains("\x1b[31;1mSummary"),
            "a cancelled run is not shown green"
        );
    }

    /// A job stopped part-way by Ctrl-C is CANCELLED (never PASS), and a
    /// job whose endpoint failed the preflight is SETUP ERROR with its cause.
    #[test]
    fn cancelled_and_setup_error_status_words() {
        let mut cut = passing_job();
        cut.status = JobStatus::Cancelled;
        assert_eq!(
            status_line(&cut, Style::PLAIN),
            "   CANCELLED [   1.234s] agentic::lookup"
        );
        let mut setup = failing_job();
        setup.status = JobStatus::SetupError;
        setup.verdicts.clear();
        setup.notes.clear();
        setup.setup_error = Some(inferscope_model::SetupError {
            cause: inferscope_model::SetupCause::Unreachable,
            message: "nothing answers at http://127.0.0.1:9/v1".into(),
            url: None,
            http_status: None,
            body_excerpt: None,
            listed_models: vec![],
        });
        assert_eq!(
            job_block(&setup, Style::PLAIN),
            " SETUP ERROR [   0.512s] context::long<prompt>\n\
             \x20            setup error (unreachable): nothing answers at http://127.0.0.1:9/v1\n"
        );
        let t = totals(&[passing_job(), cut, setup], 1_000_000_000);
        assert_eq!(
            summary_line(&t, Style::PLAIN),
            "     Summary [   1.000s] 2 jobs run: 1 passed, 0 failed, 1 cancelled, 1 setup error"
        );
        assert_eq!(plain_line(&t), "1 passed, 2 failed");
        assert_eq!(t.exit_status, 100, "a cancelled job: 100");
    }

    #[test]
    fn plain_line_matches_ci_pattern() {
        let re = regex::Regex::new(r"^(\w+: )?\d+ passed, \d+ failed(, \d+ skipped)?$").unwrap();
        assert!(re.is_match(&plain_line(&counts(10, 0, 1))));
    }

    #[test]
    fn colour_only_when_asked_on_a_tty_outside_ci() {
        assert!(color_enabled(true, true, false));
        assert!(!color_enabled(false, true, false));
        assert!(!color_enabled(true, false, false));
        assert!(!color_enabled(true, true, true));
        let c = Style { color: true };
        assert_eq!(
            status_line(&passing_job(), c),
            "        \x1b[32;1mPASS\x1b[0m [   1.234s] agentic::lookup"
        );
        assert!(summary_line(&counts(0, 1, 0), c).contains("\x1b[31;1mSummary\x1b[0m"));
        assert!(!status_line(&passing_job(), Style::PLAIN).contains('\x1b'));
    }

    #[test]
    fn ci_detection() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|p| p.0 == k).map(|p| p.1.to_string())
        };
        assert!(is_ci(env(&[("CI", "true")])));
        assert!(is_ci(env(&[("CI", "1")])));
        assert!(!is_ci(env(&[("CI", "false")])));
        assert!(!is_ci(env(&[])));
        assert!(is_ci(env(&[("GITHUB_ACTIONS", "true")])));
    }

    #[test]
    fn duration_field_widths() {
        assert_eq!(duration_field(0), "[   0.000s]");
        assert_eq!(duration_field(1_234_999_999), "[   1.234s]");
        assert_eq!(duration_field(240_000_000_000), "[ 240.000s]");
        assert_eq!(duration_field(123_456_000_000_000), "[123456.000s]");
    }
}
