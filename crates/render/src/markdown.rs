//! A Markdown summary for pull-request comments :
//! a heading with the plain `N passed, N failed` counts, the endpoint, one table row per job
//! (status, requests, key figures, verdict counts) and a list of each failed or noted job's
//! reasons. Missing figures show as `—` (never 0). Artifact text is escaped: `|` in cells,
//! `<`, `>` and `&` everywhere, newlines folded to spaces.

use super::view::EndpointLabel;
use inferscope_gate::{Outcome, format_number};
use inferscope_model::{Figure, JobReport, JobStatus, Summary, SummaryReport, TokenSource};

const MISSING: &str = "—";

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

fn cell(s: &str) -> String {
    esc(s).replace('|', "\\|")
}

fn pair(s: &Option<Summary>, a: fn(&Summary) -> f64, b: fn(&Summary) -> f64) -> String {
    match s {
        // A streamed summary states its bound beside the figures.
        Some(s) => format!(
            "{} / {}{}",
            format_number(a(s)),
            format_number(b(s)),
            s.bound_suffix()
        ),
        None => MISSING.to_string(),
    }
}

fn one(v: Option<f64>) -> String {
    v.map_or_else(|| MISSING.to_string(), format_number)
}

/// A token-derived figure: `~` marks a client estimate (the server sent no usage).
fn estimated(f: &Figure<f64>) -> String {
    match f.value {
        Some(v) if f.tokens == Some(TokenSource::ClientEstimate) => {
            format!("~{}", format_number(v))
        }
        v => one(v),
    }
}

fn status_cell(s: JobStatus) -> &'static str {
    match s {
        JobStatus::Pass => "✅ PASS",
        JobStatus::Fail => "❌ FAIL",
        JobStatus::Cancelled => "⏹ CANCELLED",
        JobStatus::NotRun => "⏹ NOT RUN",
        JobStatus::SetupError => "⚠ SETUP ERROR",
    }
}

fn verdict_counts(job: &JobReport) -> String {
    let count = |o: Outcome| job.verdicts.iter().filter(|v| v.outcome == o).count();
    let parts: Vec<String> = [
        (Outcome::Pass, "pass"),
        (Outcome::Fail, "fail"),
        (Outcome::Unavailable, "unavailable"),
        (Outcome::Skipped, "skipped"),
    ]
    .iter()
    .filter_map(|&(o, name)| {
        let n = count(o);
        (n > 0).then(|| format!("{n} {name}"))
    })
    .collect();
    if parts.is_empty() {
        MISSING.to_string()
    } else {
        parts.join(", ")
    }
}

/// The Markdown summary of a run (ends with a newline).
pub fn markdown_summary(
    jobs: &[JobReport],
    totals: &SummaryReport,
    endpoint: &EndpointLabel,
) -> String {
    let mut md = String::new();
    let mut extra = String::new();
    if totals.cancelled > 0 {
        extra.push_str(&format!(", {} cancelled", totals.cancelled));
    }
    if totals.not_run > 0 {
        extra.push_str(&format!(", {} not run (cancelled)", totals.not_run));
    }
    if totals.setup_errors > 0 {
        extra.push_str(&format!(", {} setup error(s)", totals.setup_errors));
    }
    md.push_str(&format!(
        "### inferscope-bench: {} passed, {} failed{extra}\n\n",
        totals.passed, totals.failed,
    ));
    md.push_str(&format!(
        "Endpoint: {} · {} job{} · {} s\n\n",
        esc(&endpoint.display()),
        totals.jobs,
        if totals.jobs == 1 { "" } else { "s" },
        format_number(totals.duration_ns as f64 / 1e9)
    ));
    md.push_str(
        "| Job | Status | Requests ok/total | TTFT p50 / p99 (ms) | ITL p50 / p99 (ms) \
         | TPOT mean (ms) | E2E p50 / p99 (ms) | Output tok/s | Cache hit rate | Verdicts |\n",
    );
    md.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for job in jobs {
        let status = status_cell(job.status);
        let (reqs, ttft, itl, tpot, e2e, tps, cache) = match &job.stats {
            Some(s) => (
                format!("{}/{}", s.succeeded, s.requests),
                pair(&s.ttft_ms, |s| s.p50, |s| s.p99),
                pair(&s.itl_ms, |s| s.p50, |s| s.p99),
                estimated(&s.tpot_ms.clone().map(|t| t.mean)),
                pair(&s.e2e_ms, |s| s.p50, |s| s.p99),
                estimated(&s.output_tokens_per_s),
                match (s.cache_hit_rate, s.cache_hit_coverage) {
                    (Some(r), Some(c)) => format!(
                        "{}% (coverage {}%)",
                        format_number(r * 100.0),
                        format_number(c * 100.0)
                    ),
                    _ => MISSING.to_string(),
                },
            ),
            None => {
                let m = || MISSING.to_string();
                (m(), m(), m(), m(), m(), m(), m())
            }
        };
        md.push_str(&format!(
            "| `{}` | {status} | {reqs} | {ttft} | {itl} | {tpot} | {e2e} | {tps} | {cache} | {} |\n",
            cell(&job.id).replace('`', "'"),
            verdict_counts(job)
        ));
    }
    let explained: Vec<&JobReport> = jobs
        .iter()
        .filter(|j| !j.reason_lines().is_empty())
        .collect();
    if !explained.is_empty() {
        md.push_str("\n#### Details\n\n");
        for job in explained {
            md.push_str(&format!(
                "- `{}` ({})\n",
                esc(&job.id).replace('`', "'"),
                job.status.as_str().replace('_', " ")
            ));
            for line in job.reason_lines() {
                md.push_str(&format!("  - {}\n", esc(&line)));
            }
        }
    }
    md
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{failing_job, passing_job};

    #[test]
    fn exact_table() {
        let jobs = [passing_job(), failing_job()];
        let t = SummaryReport::of(&jobs, 1_746_000_000, false);
        let md = markdown_summary(&jobs, &t, &EndpointLabel::Simulated);
        let expected = "\
### inferscope-bench: 1 passed, 1 failed

Endpoint: simulated (built-in) · 2 jobs · 1.746 s

| Job | Status | Requests ok/total | TTFT p50 / p99 (ms) | ITL p50 / p99 (ms) | TPOT mean (ms) | E2E p50 / p99 (ms) | Output tok/s | Cache hit rate | Verdicts |
|---|---|---|---|---|---|---|---|---|---|
| `agentic::lookup` | ✅ PASS | 3/3 | 100 / 100 | 10 / 50 | 30 | 205 / 209.9 | 7.5 | 50% (coverage 100%) | 3 pass |
| `context::long&lt;prompt&gt;` | ❌ FAIL | 1/2 | 812.4 / 812.4 | — | — | 900 / 900 | 8 | — | 2 pass, 1 fail, 1 unavailable |

#### Details

- `context::long&lt;prompt&gt;` (fail)
  - ttft_ms.p99 = 812.4 ms &gt; bound 500 ms (client timing)
  - tokens_per_joule = unavailable (no GPU), bound &gt;= 2 tokens/J (unavailable)
  - grading: contains(\"Oslo\") failed: final answer lacks \"Oslo\"
  - 1 of 2 requests failed: 1 idle_timeout
  - note: endpoint was simulated
";
        assert_eq!(md, expected);
    }

    #[test]
    fn cells_escape_pipes_and_missing_stats_show_dash() {
        let mut j = passing_job();
        j.stats = None;
        j.notes = vec!["a|b\nc".into()];
        let md = markdown_summary(
            std::slice::from_ref(&j),
            &SummaryReport::of(std::slice::from_ref(&j), 0, false),
            &EndpointLabel::Url("http://h:1/v1".into()),
        );
        assert!(
            md.contains("| `agentic::lookup` | ✅ PASS | — | — | — | — | — | — | — | 3 pass |"),
            "{md}"
        );
        assert!(md.contains("  - note: a|b c\n"), "{md}");
        assert!(md.contains("Endpoint: http://h:1/v1 · 1 job · 0 s"), "{md}");
    }
}
