//! Verdicts and job outcomes (docs/measurement.md); exit statuses are
//! [`inferscope_model::exit::ExitCode`]'s.
//! The verdict type is the report model's ([`inferscope_model::Verdict`]); [`judge`] makes one.

use super::figures::Figure;
use super::spec::WhenUnavailable;
use serde::{Deserialize, Serialize};

pub use inferscope_model::{Comparison, Outcome, Verdict};

/// Judges `figure` against `bound`; an unavailable figure gives `Unavailable` or, with
/// `when == Skip`, `Skipped`. A non-finite bound fails with a message saying so. The
/// message names the figure, its value, the bound and the basis (with `tokens
/// client-estimated` when the figure rests on the client's token estimates).
#[allow(clippy::too_many_arguments)]
pub fn judge(
    gate: &str,
    figure_name: &str,
    unit: &str,
    comparison: Comparison,
    bound: f64,
    figure: &Figure,
    when: WhenUnavailable,
    built_in: bool,
) -> Verdict {
    let with_unit = |v: f64| with_unit(v, unit);
    let bound_txt = with_unit(bound);
    let basis = figure.basis_text();
    let (outcome, message) = if !bound.is_finite() {
        (
            Outcome::Fail,
            format!("{gate}: bound {bound} is not a finite number ({basis})"),
        )
    } else {
        match figure.value {
            Some(v) if comparison.holds(v, bound) => (
                Outcome::Pass,
                format!(
                    "{figure_name} = {} {} bound {bound_txt} ({basis})",
                    with_unit(v),
                    comparison.as_str(),
                ),
            ),
            Some(v) => (
                Outcome::Fail,
                format!(
                    "{figure_name} = {} {} bound {bound_txt} ({basis})",
                    with_unit(v),
                    comparison.violated_str(),
                ),
            ),
            None => {
                let reason = figure.reason.as_deref().unwrap_or("no value");
                let base = format!(
                    "{figure_name} = unavailable ({reason}), bound {} {bound_txt} ({basis})",
                    comparison.as_str(),
                );
                match when {
                    WhenUnavailable::Fail => (Outcome::Unavailable, base),
                    WhenUnavailable::Skip => (
                        Outcome::Skipped,
                        format!("{base}; skipped (when_unavailable = \"skip\")"),
                    ),
                }
            }
        }
    };
    Verdict {
        gate: gate.to_string(),
        figure: figure_name.to_string(),
        value: figure.value,
        bound,
        comparison,
        unit: unit.to_string(),
        basis: figure.basis,
        tokens: figure.tokens,
        built_in,
        outcome,
        message,
        error_bound: None,
    }
}

/// A job's overall result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JobOutcome {
    /// Every verdict passed or was skipped, and grading passed.
    Pass,
    /// A verdict failed or was unavailable, or grading failed.
    Fail,
}

impl JobOutcome {
    /// `Pass` iff every verdict is `pass`/`skipped` and `grading_passed` (docs/measurement.md: a
    /// grading failure is a job failure). Include the built-in `successful_requests`
    /// verdict from [`super::evaluate`] so zero successes fail.
    pub fn from_verdicts(verdicts: &[Verdict], grading_passed: bool) -> JobOutcome {
        if grading_passed && verdicts.iter().all(|v| v.outcome.is_passing()) {
            JobOutcome::Pass
        } else {
            JobOutcome::Fail
        }
    }

    /// Whether this is `Pass`.
    pub fn passed(self) -> bool {
        self == JobOutcome::Pass
    }
}

/// A number for messages: up to 3 decimals with trailing zeros trimmed (`812.4`, `500`,
/// `16.667`); scientific notation for non-zero magnitudes below 0.0005 or from 1e15 on.
pub fn format_number(v: f64) -> String {
    if !v.is_finite() {
        return v.to_string();
    }
    let a = v.abs();
    if (a != 0.0 && a < 0.0005) || a >= 1e15 {
        return format!("{v:.3e}");
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

fn with_unit(v: f64, unit: &str) -> String {
    match unit {
        "" => format_number(v),
        "%" => format!("{}%", format_number(v)),
        u => format!("{} {u}", format_number(v)),
    }
}
