//! Comparing a run's job summaries with a baseline's (pure).
//!
//! Per figure (every figure is a latency, lower is better):
//! `change_pct = (current − baseline) / baseline × 100` (`null` when the baseline is ≤ 0).
//! The verdict uses the spread of **both** runs (their distribution-free 95 % CIs, see
//! [`super::summary`]) and a noise threshold:
//! - `regressed`: the current CI lies entirely above the baseline CI (current lower end >
//!   baseline upper end, both bounded) **and** the change exceeds `+noise_pct`;
//! - `improved`: the current CI lies entirely below **and** the change is below
//!   `−noise_pct`;
//! - `within_noise`: otherwise — overlapping intervals, an unbounded end (too few samples
//!   to bound a tail quantile), or a shift too small to matter (sampling CIs do not
//!   capture run-to-run drift of the machine, which the threshold absorbs; default
//!   [`DEFAULT_NOISE_PCT`]).
//!
//! The `[gates] regression_pct` bound reads [`regression_figure`]: the worst
//! `change_pct` among regressed figures (0 when none regressed).

use std::fmt::Write as _;

use super::summary::JobSummary;
use crate::attribution::{ABSENT, align_rows};
use crate::gate::{Figure, format_number};
use crate::model::Basis;
pub use crate::model::baseline::{ChangeVerdict, FigureChange, FigureSummary, JobComparison};

/// Default noise threshold, percent.
pub const DEFAULT_NOISE_PCT: f64 = 5.0;

/// Compares one figure (see the module docs).
pub fn compare_figure(
    name: &str,
    base: &FigureSummary,
    cur: &FigureSummary,
    noise_pct: f64,
) -> FigureChange {
    let change_pct = (base.value > 0.0).then(|| (cur.value - base.value) / base.value * 100.0);
    let worse = matches!((cur.ci_low, base.ci_high), (Some(c), Some(b)) if c > b);
    let better = matches!((cur.ci_high, base.ci_low), (Some(c), Some(b)) if c < b);
    let verdict = match change_pct {
        Some(c) if worse && c > noise_pct => ChangeVerdict::Regressed,
        Some(c) if better && c < -noise_pct => ChangeVerdict::Improved,
        None if worse => ChangeVerdict::Regressed,
        None if better => ChangeVerdict::Improved,
        _ => ChangeVerdict::WithinNoise,
    };
    FigureChange {
        figure: name.to_string(),
        baseline: base.clone(),
        current: cur.clone(),
        change_pct,
        verdict,
    }
}

/// Compares a job's summary with the baseline's summary of the same job.
pub fn compare_job(
    base: &JobSummary,
    cur: &JobSummary,
    baseline_name: &str,
    baseline_run_id: &str,
    noise_pct: f64,
) -> JobComparison {
    let mut figures = Vec::new();
    let mut missing = Vec::new();
    for (name, b) in &base.figures {
        match cur.figures.get(name) {
            Some(c) => figures.push(compare_figure(name, b, c, noise_pct)),
            None => missing.push(name.clone()),
        }
    }
    JobComparison {
        job: cur.id.clone(),
        baseline: baseline_name.to_string(),
        baseline_run_id: baseline_run_id.to_string(),
        noise_pct,
        figures,
        missing,
    }
}

/// The gate figure `regression_pct` of a job (basis `baseline`): the worst `change_pct`
/// among regressed figures (0 when none regressed); unavailable with the reason when no
/// figure is in both summaries (a comparison of nothing is not a 0 % regression), without
/// `--baseline`, or when the job is not in the baseline.
pub fn regression_figure(cmp: Option<&JobComparison>, baseline: Option<&str>, job: &str) -> Figure {
    match (cmp, baseline) {
        (Some(c), _) if c.figures.is_empty() => Figure::missing(
            Basis::Baseline,
            format!(
                "no figure of job `{}` is in both the run and baseline `{}`",
                c.job, c.baseline
            ),
        ),
        (Some(c), _) => Figure::finite(c.worst_regression_pct(), Basis::Baseline),
        (None, Some(name)) => Figure::missing(
            Basis::Baseline,
            format!("job `{job}` is not in baseline `{name}`"),
        ),
        (None, None) => Figure::missing(Basis::Baseline, "no baseline (run with --baseline NAME)"),
    }
}

/// `value [low, high]` of a figure; an end too few samples bound (`null` in JSON), or any
/// non-finite number, prints as [`ABSENT`] (never `inf` or `NaN`).
fn fig(f: &FigureSummary) -> String {
    let num = |v: Option<f64>| {
        v.filter(|x| x.is_finite())
            .map_or_else(|| ABSENT.to_string(), format_number)
    };
    format!(
        "{} [{}, {}]",
        num(Some(f.value)),
        num(f.ci_low),
        num(f.ci_high)
    )
}

/// The per-figure table of one job, e.g.
///
/// ```text
/// baseline main (run 20261129T131500Z-3f9a1c) · agentic::lookup · ms, [95% CI], noise 5%
///   figure       baseline               current                change   verdict
///   ttft_ms.p50  21.3 [20.9, 21.8]      63.1 [62.2, 64]        +196.2%  regressed
///   ttft_ms.p99  30.2 [24.1, —]         70.9 [65.3, —]         +134.8%  within noise
/// ```
pub fn render_job(c: &JobComparison) -> String {
    let mut rows: Vec<[String; 5]> = vec![[
        "figure".into(),
        "baseline".into(),
        "current".into(),
        "change".into(),
        "verdict".into(),
    ]];
    for f in &c.figures {
        rows.push([
            f.figure.clone(),
            fig(&f.baseline),
            fig(&f.current),
            f.change_pct
                .filter(|p| p.is_finite())
                .map_or_else(|| ABSENT.to_string(), |p| format!("{p:+.1}%")),
            f.verdict.label().to_string(),
        ]);
    }
    let mut out = String::new();
    let _ = writeln!(
        out,
        "baseline {} (run {}) · {} · ms, [95% CI], noise {}%",
        c.baseline,
        c.baseline_run_id,
        c.job,
        format_number(c.noise_pct)
    );
    for l in align_rows(&rows, |_| true, "  ") {
        let _ = writeln!(out, "{l}");
    }
    if !c.missing.is_empty() {
        let _ = writeln!(out, "  not in this run: {}", c.missing.join(", "));
    }
    let _ = write!(
        out,
        "  {} regressed, {} improved, {} within noise",
        c.count(ChangeVerdict::Regressed),
        c.count(ChangeVerdict::Improved),
        c.count(ChangeVerdict::WithinNoise)
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(value: f64, lo: f64, hi: f64) -> FigureSummary {
        FigureSummary {
            value,
            ci_low: Some(lo),
            ci_high: Some(hi),
            n: 10,
            p25: lo,
            p75: hi,
            unit: "ms".into(),
        }
    }

    #[test]
    fn verdicts_need_disjoint_intervals_and_a_change_beyond_noise() {
        let base = f(100.0, 95.0, 105.0);
        let v = |c| compare_figure("x", &base, &c, 5.0).verdict;
        assert_eq!(v(f(200.0, 190.0, 210.0)), ChangeVerdict::Regressed);
        assert_eq!(v(f(50.0, 45.0, 55.0)), ChangeVerdict::Improved);
        assert_eq!(
            v(f(120.0, 104.0, 130.0)),
            ChangeVerdict::WithinNoise,
            "overlapping intervals"
        );
        assert_eq!(
            v(f(104.0, 105.5, 106.0)),
            ChangeVerdict::WithinNoise,
            "disjoint but within the noise threshold"
        );
        let c = compare_figure("x", &base, &f(200.0, 190.0, 210.0), 5.0);
        assert_eq!(c.change_pct, Some(100.0));
        let unbounded = FigureSummary {
            ci_high: None,
            ..base.clone()
        };
        assert_eq!(
            compare_figure("x", &unbounded, &f(500.0, 400.0, 600.0), 5.0).verdict,
            ChangeVerdict::WithinNoise,
            "a baseline tail too thin to bound cannot be called regressed"
        );
    }

    #[test]
    fn unbounded_interval_ends_print_as_absent_never_inf() {
        let thin = FigureSummary {
            ci_low: None,
            ci_high: None,
            ..f(25.392, 0.0, 0.0)
        };
        assert_eq!(fig(&thin), format!("25.392 [{ABSENT}, {ABSENT}]"));
        let half = FigureSummary {
            ci_high: None,
            ..f(30.0, 25.392, 0.0)
        };
        assert_eq!(fig(&half), format!("30 [25.392, {ABSENT}]"));
        let odd = FigureSummary {
            value: f64::NAN,
            ci_low: Some(f64::NEG_INFINITY),
            ci_high: Some(f64::INFINITY),
            ..f(0.0, 0.0, 0.0)
        };
        assert_eq!(fig(&odd), format!("{ABSENT} [{ABSENT}, {ABSENT}]"));
        let base = JobSummary {
            id: "s::j".into(),
            kind: "context".into(),
            requests: 3,
            succeeded: 3,
            figures: [("ttft_ms.p99".to_string(), half.clone())].into(),
        };
        let t = render_job(&compare_job(&base, &base, "main", "r1", 5.0));
        assert!(!t.contains("inf") && !t.contains("NaN"), "{t}");
        assert!(t.contains(&format!("[25.392, {ABSENT}]")), "{t}");
    }

    #[test]
    fn regression_figure_is_the_worst_regressed_change() {
        let base = JobSummary {
            id: "s::j".into(),
            kind: "agentic".into(),
            requests: 10,
            succeeded: 10,
            figures: [
                ("a".to_string(), f(100.0, 99.0, 101.0)),
                ("b".to_string(), f(100.0, 99.0, 101.0)),
                ("c".to_string(), f(100.0, 99.0, 101.0)),
            ]
            .into(),
        };
        let mut cur = base.clone();
        cur.figures.insert("a".into(), f(150.0, 149.0, 151.0));
        cur.figures.insert("b".into(), f(300.0, 299.0, 301.0));
        cur.figures.remove("c");
        let c = compare_job(&base, &cur, "main", "r1", 5.0);
        assert_eq!(c.count(ChangeVerdict::Regressed), 2);
        assert_eq!(c.missing, vec!["c"]);
        assert_eq!(c.worst_regression_pct(), 200.0);
        assert_eq!(
            crate::baseline::compare::regression_figure(Some(&c), None, "").value,
            Some(200.0)
        );
        let same = compare_job(&base, &base, "main", "r1", 5.0);
        assert_eq!(
            crate::baseline::compare::regression_figure(Some(&same), None, "").value,
            Some(0.0)
        );
        let t = render_job(&c);
        assert!(t.contains("regressed"), "{t}");
        assert!(t.contains("+200.0%"), "{t}");
        assert!(
            t.ends_with("2 regressed, 0 improved, 0 within noise"),
            "{t}"
        );
        assert_eq!(regression_figure(None, None, "s::j").value, None);
        assert!(
            regression_figure(None, Some("main"), "s::j")
                .reason
                .unwrap()
                .contains("not in baseline")
        );
    }
}
