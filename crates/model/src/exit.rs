//! The process exit statuses of every command, in one place, as nextest keeps its own in
//! `nextest-metadata` (`NextestExitCode`). docs/commands.md lists the same values; a test
//! below holds the two together.

/// The exit statuses: `i32` constants, the type `std::process::exit` takes and every
/// command returns. The type has no values; it only names them.
#[derive(Debug)]
pub enum ExitCode {}

impl ExitCode {
    /// Success: every job and every gate passed, or the command did what was asked.
    pub const OK: i32 = 0;
    /// An error on input that was accepted: `timeline verify` found an integrity error (a
    /// hash, length, schema, order or parent that does not match the manifest), `report`
    /// could not deliver to `--otlp-endpoint` or render JUnit, `trajectory` could not
    /// serialize its output, or the binary could not start its async runtime.
    pub const ERROR: i32 = 1;
    /// Bad input, reported before any request: a suite, a flag, a gate bound, a path, no
    /// job selected, shards that do not belong together; also a run whose artifacts
    /// could not be written, so CI does not read figures it cannot find as a pass.
    pub const BAD_INPUT: i32 = 2;
    /// `overhead`: the noise is wider than the budget, so the gate neither passes nor
    /// fails (never a pass on noisy evidence).
    pub const INCONCLUSIVE: i32 = 3;
    /// A setup error: an endpoint failed the preflight (nothing listening, `/models` not
    /// found, model not listed, auth refused) or a suite could not be set up; nothing was
    /// measured. nextest's `SETUP_ERROR`, distinct from a failed run.
    pub const SETUP_ERROR: i32 = 96;
    /// A job or a gate failed (grading, a gate, zero successful requests), a comparison
    /// regressed past `--regression-pct`, or the run was cancelled by Ctrl-C / SIGTERM (a
    /// cancelled run never exits 0). nextest's `TEST_RUN_FAILED`.
    pub const FAILED: i32 = 100;
    /// A second Ctrl-C / SIGTERM aborted `run` or `overhead` before the run was finalized
    /// (128 + SIGINT, as a shell reports a process a Ctrl-C ended).
    pub const INTERRUPTED: i32 = 130;

    /// Every status with its name, in increasing order.
    pub const ALL: [(&'static str, i32); 7] = [
        ("OK", Self::OK),
        ("ERROR", Self::ERROR),
        ("BAD_INPUT", Self::BAD_INPUT),
        ("INCONCLUSIVE", Self::INCONCLUSIVE),
        ("SETUP_ERROR", Self::SETUP_ERROR),
        ("FAILED", Self::FAILED),
        ("INTERRUPTED", Self::INTERRUPTED),
    ];
}

#[cfg(test)]
mod tests {
    use super::ExitCode;

    /// The values docs/commands.md gives in its "Exit statuses" paragraph: each `**N**`.
    fn documented() -> Vec<i32> {
        let doc = include_str!("../../../docs/commands.md");
        let start = doc
            .find("Exit statuses, shared by every command")
            .expect("docs/commands.md states the exit statuses");
        let para = doc[start..].split("\n\n").next().unwrap_or_default();
        para.split("**")
            .skip(1)
            .step_by(2)
            .map(|n| {
                n.parse()
                    .unwrap_or_else(|_| panic!("not a status: **{n}**"))
            })
            .collect()
    }

    #[test]
    fn the_statuses_are_distinct_and_in_increasing_order() {
        let values: Vec<i32> = ExitCode::ALL.iter().map(|(_, v)| *v).collect();
        assert!(values.windows(2).all(|w| w[0] < w[1]), "{values:?}");
        let mut names: Vec<&str> = ExitCode::ALL.iter().map(|(n, _)| *n).collect();
        names.dedup();
        assert_eq!(names.len(), ExitCode::ALL.len());
    }

    /// Every documented status is a constant and every constant is documented, with the
    /// values they have always had.
    #[test]
    fn the_statuses_are_the_documented_ones() {
        let mut doc = documented();
        doc.sort_unstable();
        let values: Vec<i32> = ExitCode::ALL.iter().map(|(_, v)| *v).collect();
        assert_eq!(doc, values, "docs/commands.md against ExitCode::ALL");
        assert_eq!(values, [0, 1, 2, 3, 96, 100, 130]);
    }
}
