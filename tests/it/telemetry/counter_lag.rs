//! An LLM step whose counter deltas the scrapes cannot prove its own (no scrape sent after
//! its first token answered by its end: vLLM counts prompt tokens at the first token) is
//! flagged low confidence with the reason, and the job says how many. A step whose tail
//! holds scrapes is not, and its deltas equal its usage (the rule: docs/measurement.md,
//! "Counter deltas of short steps").

use serde_json::Value;

use crate::support::{describe, job, report, run, text, write};

/// The simulator run of a context sweep over `sizes` (`max_tokens` output tokens per
/// request) with `/metrics` scraped every `period_ms`: the job's report and stdout.
fn sweep(sizes: &str, max_tokens: u32, period_ms: &str) -> (Value, String) {
    let cwd = tempfile::tempdir().unwrap();
    write(
        cwd.path(),
        "c.toml",
        &format!(
            "name = \"c\"\n[[jobs]]\nname = \"sweep\"\nkind = \"context\"\n\
             sizes = {sizes}\nmax_tokens = {max_tokens}\n"
        ),
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            "c.toml",
            "--metrics-period-ms",
            period_ms,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, _) = text(&o);
    (job(&report(&out), "c::sweep").clone(), stdout)
}

fn llm_steps(j: &Value) -> Vec<Value> {
    j["trajectories"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "llm_call")
        .cloned()
        .collect()
}

#[test]
fn steps_shorter_than_a_scrape_period_have_low_confidence_counters() {
    // Long prompts (simulated prefill of 80–160 ms, scraped inside the step) and one
    // output token: the step ends as its first token arrives, inside one 50 ms period.
    let (j, stdout) = sweep("[4096, 8192]", 1, "50");
    let steps = llm_steps(&j);
    assert_eq!(steps.len(), 2);
    for s in &steps {
        let why = s["attribution"]["counters_low_confidence"]
            .as_str()
            .unwrap_or_else(|| panic!("not flagged: {s:#}"));
        assert!(
            why.contains("no scrape sent after the step's first token was answered by its end"),
            "{why}"
        );
    }
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("engine counters: 2 LLM step(s) low confidence"),
        "{notes}"
    );
    assert!(
        stdout.contains("engine counters: 2 LLM step(s)"),
        "{stdout}"
    );
}

#[test]
fn steps_that_span_a_scrape_period_are_not_flagged() {
    // 10 ms: a step's tail (39 more tokens, 80 ms or more on the simulator) holds several
    // scrapes, even on a loaded machine.
    let (j, _) = sweep("[64, 128, 256, 512]", 40, "10");
    for s in llm_steps(&j) {
        let tail = s["duration_ms"].as_f64().unwrap() - s["ttft_ms"].as_f64().unwrap();
        assert!(tail >= 50.0, "the premise: tail {tail} ms");
        let a = &s["attribution"];
        assert_eq!(
            a["prompt_tokens_delta"], a["usage"]["prompt_tokens"],
            "{s:#}"
        );
        assert!(
            s["attribution"]["counters_low_confidence"].is_null(),
            "{s:#}"
        );
    }
    assert!(!j["notes"].to_string().contains("engine counters:"));
}
