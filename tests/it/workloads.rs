//! Workloads in the engine's own tokens on the built-in simulator: fixed output
//! lengths (`output_tokens`), the suite's `extra_body`, the `short_output` warning, count
//! and gate.

use crate::support;

use serde_json::{Value, json};
use support::{describe, job, report, run, text, write};

fn suite(extra: &str, output_tokens: u32, gates: &str) -> String {
    format!(
        "name = \"w\"\n{extra}\n\
         [telemetry]\nmetrics = false\n\
         [[jobs]]\nname = \"fixed\"\nkind = \"context\"\nsizes = [32, 64]\nrepeat = 2\n\
         output_tokens = {output_tokens}\n{gates}\n"
    )
}

fn requests(rep: &Value) -> &Vec<Value> {
    job(rep, "w::fixed")["requests"].as_array().unwrap()
}

#[test]
fn output_tokens_decodes_exactly_n_tokens_on_every_request() {
    let cwd = tempfile::tempdir().unwrap();
    // 200 is far above the simulator's natural answer (its text plus 16 filler tokens):
    // only `ignore_eos` makes it decode them all.
    write(cwd.path(), "w.toml", &suite("", 200, ""));
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let rep = report(&out);
    let reqs = requests(&rep);
    assert_eq!(reqs.len(), 4);
    for r in reqs {
        assert_eq!(r["completion_tokens"], 200, "{r}");
        assert_eq!(r["output_tokens_asked"], 200, "{r}");
        assert_eq!(r["finish_reason"], "length", "{r}");
        assert_eq!(r["warnings"], json!([]), "{r}");
    }
    let stats = &job(&rep, "w::fixed")["stats"];
    assert_eq!(stats["short_outputs"], 0, "{stats}");
    assert_eq!(stats["short_output_rate"], 0.0, "{stats}");
}

#[test]
fn an_engine_that_stops_early_yields_short_output_a_count_and_a_failing_gate() {
    let cwd = tempfile::tempdir().unwrap();
    // `extra_body` comes last: `ignore_eos = false` turns the switch off, so the
    // simulator stops at its natural length, short of 200.
    write(
        cwd.path(),
        "w.toml",
        &suite(
            "[extra_body]\nignore_eos = false\n",
            200,
            "gates = { max_short_output_rate = 0.0 }",
        ),
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(100), "{}", describe(&o));
    let (stdout, _) = text(&o);
    let rep = report(&out);
    for r in requests(&rep) {
        assert!(r["completion_tokens"].as_u64().unwrap() < 200, "{r}");
        assert_eq!(r["warnings"], json!(["short_output"]), "{r}");
    }
    let j = job(&rep, "w::fixed");
    assert_eq!(j["stats"]["short_outputs"], 4, "{}", j["stats"]);
    assert_eq!(j["stats"]["short_output_rate"], 1.0);
    let gate = j["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["gate"] == "max_short_output_rate")
        .expect("a verdict for the gate");
    assert_eq!(gate["outcome"], "fail", "{gate}");
    assert!(
        stdout.contains("short_output: 4 of the successful requests"),
        "{stdout}"
    );
}

#[test]
fn without_output_tokens_nothing_is_asked_or_counted() {
    let cwd = tempfile::tempdir().unwrap();
    write(
        cwd.path(),
        "w.toml",
        "name = \"w\"\n[telemetry]\nmetrics = false\n\
         [[jobs]]\nname = \"fixed\"\nkind = \"context\"\nsizes = [32]\n",
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let rep = report(&out);
    let r = &requests(&rep)[0];
    assert_eq!(r["output_tokens_asked"], Value::Null, "{r}");
    let stats = &job(&rep, "w::fixed")["stats"];
    assert!(stats.get("short_outputs").is_none(), "{stats}");
}

#[test]
fn check_rejects_bad_output_tokens_and_reserved_extra_body_members_with_located_errors() {
    let cwd = tempfile::tempdir().unwrap();
    let cases = [
        (
            "name = \"w\"\n[[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [8]\noutput_tokens = 0\n",
            "`output_tokens` must be at least 1",
            "bad.toml:6",
        ),
        (
            "name = \"w\"\n[[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [8]\nmax_tokens = 8\noutput_tokens = 16\n",
            "`output_tokens` and `max_tokens` are both set",
            "bad.toml:7",
        ),
        (
            "name = \"w\"\n[extra_body]\ntop_k = 1\nstream = false\n[[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [8]\n",
            "`extra_body.stream` would replace a member the runner writes itself",
            "bad.toml:4",
        ),
        (
            "name = \"w\"\n[[jobs]]\nname = \"a\"\nkind = \"swe\"\ncommand = [\"true\"]\noutput_tokens = 16\n",
            "`output_tokens` is a request key",
            "bad.toml:6",
        ),
    ];
    for (toml, message, at) in cases {
        write(cwd.path(), "bad.toml", toml);
        let o = run(cwd.path(), &["check", "bad.toml"]);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
        let (out, err) = text(&o);
        let all = format!("{out}{err}");
        assert!(all.contains(message), "{toml}\n{all}");
        assert!(all.contains(at), "{toml}\n{all}");
    }
}

fn sized_suite(tokenizer: &str, sizes: &str) -> String {
    format!(
        "name = \"w\"\n{tokenizer}\n[telemetry]\nmetrics = false\n\
         [[jobs]]\nname = \"sized\"\nkind = \"context\"\nsizes = {sizes}\nmax_tokens = 4\n"
    )
}

/// The simulator's `POST /tokenize` (vLLM's shape) is the engine's own count: every
/// request's `usage.prompt_tokens` is the size asked, chat template included.
#[test]
fn the_endpoint_tokenizer_gives_exactly_the_asked_prompt_tokens() {
    let cwd = tempfile::tempdir().unwrap();
    write(
        cwd.path(),
        "w.toml",
        &sized_suite("tokenizer = \"endpoint\"", "[128, 512, 2048]"),
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let rep = report(&out);
    let j = job(&rep, "w::sized");
    let got: Vec<u64> = j["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["prompt_tokens"].as_u64().unwrap())
        .collect();
    assert_eq!(got, [128, 512, 2048], "{}", j["requests"]);
    for r in j["requests"].as_array().unwrap() {
        assert_eq!(r["prompt_tokens_asked"], r["prompt_tokens"], "{r}");
    }
    assert_eq!(j["stats"]["prompt_tokens_diff_max"], 0, "{}", j["stats"]);
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("counted by the engine /tokenize source"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("prompt tokens: the server reported"),
        "{stdout}"
    );
}

/// `w.toml` (sizes 128, 512, 2048, `tokenizer = "endpoint"`) run on the simulator with
/// `sim_args`: the exit code, the job's report and stdout.
fn endpoint_sized_run(sim_args: &[&str]) -> (Option<i32>, Value, String) {
    let cwd = tempfile::tempdir().unwrap();
    write(
        cwd.path(),
        "w.toml",
        &sized_suite("tokenizer = \"endpoint\"", "[128, 512, 2048]"),
    );
    let (mut sim, url) = support::spawn_sim(cwd.path(), sim_args);
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            "w.toml",
            "--endpoint",
            &url,
            "--model",
            "inferscope-sim",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    sim.kill().unwrap();
    sim.wait().unwrap();
    let (stdout, _) = text(&o);
    assert!(out.join("report.json").exists(), "{}", describe(&o));
    let j = job(&report(&out), "w::sized").clone();
    (o.status.code(), j, stdout)
}

/// The prompt tokens each request of `j` got (`usage.prompt_tokens`).
fn prompt_tokens_of(j: &Value) -> Vec<u64> {
    j["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["prompt_tokens"].as_u64().unwrap())
        .collect()
}

/// A `POST /tokenize` that fails now and then (every 4th answers 503, as an engine that
/// closed a pooled connection or was busy for a moment) is tried again: the sizes stay
/// exact and no note speaks of a failed counter. (Seen in CI against llama-server: one
/// failed count sent a 512-token prompt as bytes/4 filler, 345 tokens, silently.)
#[test]
fn a_transient_tokenize_failure_is_retried_and_the_sizes_stay_exact() {
    let (code, j, stdout) = endpoint_sized_run(&["--fault-tokenize-503-every", "4"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert_eq!(prompt_tokens_of(&j), [128, 512, 2048], "{}", j["requests"]);
    assert_eq!(j["stats"]["prompt_tokens_diff_max"], 0, "{}", j["stats"]);
    assert!(!stdout.contains("token counter failed"), "{stdout}");
}

/// A counter that stops answering after the preflight: the prompts it could not size are
/// sent as bytes/4 filler, and the job says so (how many, the first error) beside the
/// server's difference, never silently.
#[test]
fn a_counter_that_fails_for_good_is_stated_in_the_job_notes() {
    let (code, j, stdout) = endpoint_sized_run(&["--fault-tokenize-503-after", "24"]);
    assert_eq!(code, Some(0), "{stdout}");
    let notes = j["notes"].to_string();
    assert!(
        notes.contains("the token counter failed on") && notes.contains("503"),
        "{notes}\n{stdout}"
    );
    assert!(stdout.contains("the token counter failed on"), "{stdout}");
    let diff = j["stats"]["prompt_tokens_diff_max"].as_i64().unwrap();
    assert_ne!(diff, 0, "{}", j["stats"]);
    assert_ne!(prompt_tokens_of(&j), [128, 512, 2048]);
}

/// The bytes/4 fallback says what it is and reports the difference the server measured
/// (the simulator's chat template: 13 tokens around a message of 128 × 4 bytes).
#[test]
fn the_bytes_fallback_states_the_measured_difference() {
    let cwd = tempfile::tempdir().unwrap();
    write(cwd.path(), "w.toml", &sized_suite("", "[128]"));
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let rep = report(&out);
    let j = job(&rep, "w::sized");
    let r = &j["requests"][0];
    let diff = r["prompt_tokens"].as_i64().unwrap() - 128;
    assert_ne!(diff, 0, "{r}");
    assert_eq!(j["stats"]["prompt_tokens_diff_max"], diff, "{}", j["stats"]);
    let (stdout, _) = text(&o);
    assert!(stdout.contains("the bytes/4 estimate"), "{stdout}");
    assert!(
        stdout.contains(&format!("the server reported up to {diff:+} tokens")),
        "{stdout}"
    );
}

#[test]
fn a_tokenizer_that_is_not_a_file_is_a_located_error_and_a_bad_one_a_setup_error() {
    let cwd = tempfile::tempdir().unwrap();
    write(
        cwd.path(),
        "w.toml",
        &sized_suite("tokenizer = \"missing.json\"", "[8]"),
    );
    let o = run(cwd.path(), &["check", "w.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(format!("{out}{err}").contains("w.toml:2"), "{out}{err}");
    assert!(
        format!("{out}{err}").contains("is not a file"),
        "{out}{err}"
    );

    // A file that is not a tokenizer.json: the suite cannot start (setup error, exit 96).
    write(cwd.path(), "bad.json", "{\"not\": \"a tokenizer\"}");
    write(
        cwd.path(),
        "w.toml",
        &sized_suite("tokenizer = \"bad.json\"", "[8]"),
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(96), "{}", describe(&o));
    let rep = report(&out);
    assert_eq!(job(&rep, "w::sized")["status"], "setup_error");
    // `run --tokenizer` overrides the suite's source.
    let out2 = cwd.path().join("run2");
    let o = run(
        cwd.path(),
        &[
            "run",
            "w.toml",
            "--tokenizer",
            "endpoint",
            "--out",
            out2.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

fn dataset_suite(dataset: &str, extra_job: &str) -> String {
    format!(
        "name = \"w\"\n[telemetry]\nmetrics = false\n\
         [[jobs]]\nname = \"data\"\nkind = \"context\"\nmax_tokens = 4\n\
         dataset = {dataset}\n{extra_job}\n"
    )
}

#[test]
fn a_jsonl_dataset_sends_its_prompts_with_their_output_lengths() {
    let cwd = tempfile::tempdir().unwrap();
    write(
        cwd.path(),
        "fixtures/d.jsonl",
        "{\"prompt\": \"one\"}\n{\"messages\": [{\"role\": \"user\", \"content\": \"two\"}], \"output_tokens\": 30}\n",
    );
    write(
        cwd.path(),
        "w.toml",
        &dataset_suite("{ path = \"d.jsonl\", format = \"jsonl\" }", "repeat = 2"),
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let rep = report(&out);
    let reqs = job(&rep, "w::data")["requests"].as_array().unwrap().clone();
    let ids: Vec<&str> = reqs
        .iter()
        .map(|r| r["request_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "w::data.t0.e0.r0",
            "w::data.t0.e1.r0",
            "w::data.t0.e0.r1",
            "w::data.t0.e1.r1"
        ]
    );
    assert_eq!(reqs[0]["completion_tokens"], 4, "max_tokens caps entry 0");
    assert_eq!(reqs[1]["completion_tokens"], 30, "entry 1's fixed output");
    assert_eq!(reqs[1]["output_tokens_asked"], 30);
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("(jsonl, 2 entries); length scale 1: lengths as recorded"),
        "{stdout}"
    );
}

/// A Mooncake trace replayed (scaled) on the simulator: requests whose hash ids repeat an
/// earlier prefix hit the simulator's prefix cache, and the scale is stated.
#[test]
fn a_mooncake_trace_replays_with_its_prefix_sharing_at_a_length_scale() {
    let cwd = tempfile::tempdir().unwrap();
    let trace = std::fs::read_to_string(
        support::repo().join("fixtures/traces/mooncake-conversation-first200.jsonl"),
    )
    .unwrap();
    let first: String = trace.lines().take(30).map(|l| format!("{l}\n")).collect();
    write(cwd.path(), "fixtures/t.jsonl", &first);
    write(
        cwd.path(),
        "w.toml",
        &dataset_suite(
            "{ path = \"t.jsonl\", format = \"mooncake\", length_scale = 0.0625 }",
            "",
        ),
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let rep = report(&out);
    let reqs = job(&rep, "w::data")["requests"].as_array().unwrap().clone();
    assert_eq!(reqs.len(), 30);
    // Output lengths are the recorded ones, scaled: fixed outputs.
    for (r, l) in reqs.iter().zip(first.lines()) {
        let t: Value = serde_json::from_str(l).unwrap();
        let want = ((t["output_length"].as_f64().unwrap() * 0.0625).round() as u64).max(1);
        assert_eq!(r["completion_tokens"], want, "{r}");
    }
    let cached: u64 = reqs
        .iter()
        .map(|r| r["cached_tokens"].as_u64().unwrap())
        .sum();
    assert!(cached > 0, "shared hash-id prefixes hit the prefix cache");
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains(
            "(mooncake, 30 entries); prompts synthesized from hash ids, blocks of 32 tokens"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("length scale 0.0625"), "{stdout}");
}

#[test]
fn a_bad_dataset_line_is_a_located_error_before_any_request() {
    let cwd = tempfile::tempdir().unwrap();
    let cases = [
        (
            "jsonl",
            "{\"prompt\": \"a\"}\n{\"prompt\": 3}\n",
            "d.jsonl:2: field `prompt`",
        ),
        (
            "jsonl",
            "{\"prompt\": \"a\"}\n{oops\n",
            "d.jsonl:2: not JSON",
        ),
        (
            "sharegpt",
            "[\n {\"conversations\": [{\"from\": \"gpt\", \"value\": \"x\"}]}\n]\n",
            "d.jsonl:2: field `conversations`: no `human` turn",
        ),
        (
            "mooncake",
            "{\"timestamp\": 0, \"input_length\": -1, \"output_length\": 1, \"hash_ids\": [1]}\n",
            "d.jsonl:1: field `input_length`",
        ),
        (
            "mooncake",
            "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2]}\n\
             {\"timestamp\": 1, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [3, 2]}\n",
            "d.jsonl:2: field `hash_ids[1]`: id 2 does not chain",
        ),
    ];
    for (format, body, message) in cases {
        write(cwd.path(), "fixtures/d.jsonl", body);
        write(
            cwd.path(),
            "w.toml",
            &dataset_suite(
                &format!("{{ path = \"d.jsonl\", format = \"{format}\" }}"),
                "",
            ),
        );
        let o = run(cwd.path(), &["check", "w.toml"]);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
        let (out, err) = text(&o);
        assert!(
            format!("{out}{err}").contains(message),
            "{format}: {out}{err}"
        );
    }
    write(
        cwd.path(),
        "w.toml",
        &dataset_suite(
            "{ path = \"d.jsonl\", format = \"mooncake\", block_tokens = 4, \
             template_bytes = [16, 0] }",
            "",
        ),
    );
    let o = run(cwd.path(), &["check", "w.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(
        format!("{out}{err}").contains("w.toml:8:87: the template's head must be shorter"),
        "{out}{err}"
    );
    let bad_time = [
        (
            "format = \"jsonl\", time_scale = 1.0",
            "only a `mooncake` trace has them",
        ),
        (
            "format = \"mooncake\", time_scale = 0.0",
            "`time_scale` must be a number > 0",
        ),
    ];
    write(
        cwd.path(),
        "fixtures/m.jsonl",
        "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1]}\n{\"prompt\": \"x\"}\n",
    );
    for (keys, message) in bad_time {
        write(
            cwd.path(),
            "w.toml",
            &dataset_suite(&format!("{{ path = \"m.jsonl\", {keys} }}"), ""),
        );
        let o = run(cwd.path(), &["check", "w.toml"]);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
        let (out, err) = text(&o);
        assert!(
            format!("{out}{err}").contains(message),
            "{keys}: {out}{err}"
        );
    }
    write(
        cwd.path(),
        "w.toml",
        &dataset_suite(
            "{ path = \"g.jsonl\", format = \"mooncake\", time_scale = 1.0 }",
            "rate = 5.0",
        ),
    );
    write(
        cwd.path(),
        "fixtures/g.jsonl",
        "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1]}\n",
    );
    let o = run(cwd.path(), &["check", "w.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(
        format!("{out}{err}").contains("a rate would be a second schedule"),
        "{out}{err}"
    );
    write(
        cwd.path(),
        "w.toml",
        &dataset_suite("{ path = \"d.jsonl\", format = \"csv\" }", ""),
    );
    let o = run(cwd.path(), &["check", "w.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(format!("{out}{err}").contains("csv"), "{out}{err}");
}

/// The trace's ideal prefix hit rate, computed from the file: the fraction of (scaled)
/// prompt tokens whose whole prefix chain of block ids was seen in an earlier request.
fn ideal_hit_rate(trace: &str, block: u64, scale: f64) -> f64 {
    let mut seen = std::collections::HashSet::new();
    let (mut hit, mut total) = (0u64, 0u64);
    for l in trace.lines() {
        let t: Value = serde_json::from_str(l).unwrap();
        let ids: Vec<u64> = serde_json::from_value(t["hash_ids"].clone()).unwrap();
        let k = ids.len() as u64;
        // Scaled, within its k blocks, the last block holding the simulator's 33-byte tail.
        let len = ((t["input_length"].as_f64().unwrap() * scale).round() as u64)
            .clamp((k - 1) * block + 9, k * block);
        let leading = (1..=ids.len())
            .take_while(|&n| seen.contains(&ids[..n]))
            .count() as u64;
        hit += (leading * block).min(len);
        total += len;
        for n in 1..=ids.len() {
            seen.insert(ids[..n].to_vec());
        }
    }
    hit as f64 / total as f64
}

/// Part 5 of issue 27: the whole 200-line trace slice replayed on the simulator with an
/// unbounded prefix cache and the trace's (scaled) block size, the chat template's bytes
/// counted in the blocks, reports exactly the trace's ideal prefix hit rate.
#[test]
fn a_mooncake_replay_on_the_simulator_reports_the_traces_ideal_prefix_hit_rate() {
    let cwd = tempfile::tempdir().unwrap();
    let trace = std::fs::read_to_string(
        support::repo().join("fixtures/traces/mooncake-conversation-first200.jsonl"),
    )
    .unwrap();
    write(cwd.path(), "fixtures/t.jsonl", &trace);
    write(
        cwd.path(),
        "w.toml",
        &dataset_suite(
            "{ path = \"t.jsonl\", format = \"mooncake\", length_scale = 0.0625, \
             template_bytes = [17, 33] }",
            "",
        ),
    );
    let (mut sim, url) = support::spawn_sim(
        cwd.path(),
        &[
            "--block-size",
            "32",
            "--cache-capacity-blocks",
            "100000000",
            "--ttft-ms",
            "0",
            "--itl-ms",
            "0",
            "--itl-jitter-ms",
            "0",
            "--prefill-us-per-token",
            "0",
        ],
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            "w.toml",
            "--endpoint",
            &url,
            "--model",
            "inferscope-sim",
            "--out",
        ]
        .iter()
        .copied()
        .chain([out.to_str().unwrap()])
        .collect::<Vec<_>>(),
    );
    let _ = sim.kill();
    let _ = sim.wait();
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let rep = report(&out);
    let j = job(&rep, "w::data");
    let reqs = j["requests"].as_array().unwrap();
    assert_eq!(reqs.len(), 200);
    for r in reqs {
        assert_eq!(r["prompt_tokens"], r["prompt_tokens_asked"], "{r}");
    }
    let ideal = ideal_hit_rate(&trace, 32, 0.0625);
    assert!(ideal > 0.0, "the slice shares prefixes");
    let got = j["stats"]["cache_hit_rate"].as_f64().unwrap();
    assert!((got - ideal).abs() < 1e-12, "report {got}, ideal {ideal}");
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("the chat template's 17 + 33 bytes counted in them"),
        "{stdout}"
    );
}

/// Part 3 of issue 27: a Mooncake trace with `time_scale` arrives open loop at its
/// recorded timestamps times the scale: the report's recorded schedule (each request's
/// scheduled send, from the first) is exactly the scaled timestamps, the schedule lag is
/// reported, and the scale and the arrival kind are stated.
#[test]
fn a_mooncake_trace_arrives_at_its_scaled_timestamps() {
    let cwd = tempfile::tempdir().unwrap();
    let trace = std::fs::read_to_string(
        support::repo().join("fixtures/traces/mooncake-conversation-first200.jsonl"),
    )
    .unwrap();
    let first: String = trace.lines().take(60).map(|l| format!("{l}\n")).collect();
    write(cwd.path(), "fixtures/t.jsonl", &first);
    write(
        cwd.path(),
        "w.toml",
        &dataset_suite(
            "{ path = \"t.jsonl\", format = \"mooncake\", length_scale = 0.0625, \
             time_scale = 0.02 }",
            "concurrency = 8",
        ),
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let rep = report(&out);
    let j = job(&rep, "w::data");
    assert_eq!(j["load"]["arrival"], "trace");
    let mut reqs = j["requests"].as_array().unwrap().clone();
    assert_eq!(reqs.len(), 60);
    reqs.sort_by_key(|r| r["request_id"].as_str().unwrap().to_string());
    let entry = |r: &Value| -> usize {
        let id = r["request_id"].as_str().unwrap();
        id.split(".e")
            .nth(1)
            .unwrap()
            .split('.')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let ts: Vec<u64> = first
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["timestamp"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let s0 = reqs
        .iter()
        .find(|r| entry(r) == 0)
        .map(|r| r["scheduled_ns"].as_u64().unwrap())
        .unwrap();
    for r in &reqs {
        let want = ((ts[entry(r)] - ts[0]) as f64 * 0.02 * 1e6).round() as u64;
        assert_eq!(r["scheduled_ns"].as_u64().unwrap() - s0, want, "{r}");
    }
    assert!(ts[59] > ts[0], "the slice spans time");
    let lag = &j["stats"]["schedule_lag_ms"];
    assert!(lag["p50"].is_number() && lag["p99"].is_number(), "{lag}");
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("open-loop arrivals at the recorded timestamps × time scale 0.02"),
        "{stdout}"
    );
    assert!(
        stdout.contains("trace arrivals, concurrency <= 8"),
        "{stdout}"
    );
}

/// A scripted agentic suite on the simulator: three tool calls (50 ms each), four LLM
/// calls over a growing history.
fn recorded_agentic_suite() -> String {
    "name = \"rec\"\n[telemetry]\nmetrics = false\n\
     [[tools]]\nname = \"note\"\ndescription = \"a note\"\n\
     parameters = { type = \"object\", properties = {} }\nlatency_ms = 50\n\
     [[tools.responses]]\nwhen = {}\ntext = \"noted: the build is green and the cache is warm\"\n\
     [[jobs]]\nname = \"agent\"\nkind = \"agentic\"\nmode = \"scripted\"\nmax_tokens = 16\n\
     system = \"You are a careful assistant who takes notes before answering anything.\"\n\
     task = \"Take three notes about the build, then summarize them in one sentence.\"\n\
     tools = [\"note\"]\n\
     [[jobs.script]]\ntool = \"note\"\n[[jobs.script]]\ntool = \"note\"\n\
     [[jobs.script]]\ntool = \"note\"\n"
        .into()
}

fn steps_of<'a>(rep: &'a Value, job_id: &str) -> &'a Vec<Value> {
    job(rep, job_id)["trajectories"][0]["steps"]
        .as_array()
        .unwrap()
}

/// A recorded agentic run replays on the simulator with the same
/// per-step prompt and output tokens (usage; `tokenizer = "endpoint"` counts exactly), its
/// tools as steps of the same names, and the prefix growth as prefix-cache hits.
#[test]
fn agentic_replay_of_a_recorded_run_gives_the_recorded_usage_per_step() {
    let cwd = tempfile::tempdir().unwrap();
    write(cwd.path(), "rec.toml", &recorded_agentic_suite());
    let rec = cwd.path().join("rec-run");
    let o = run(
        cwd.path(),
        &["run", "rec.toml", "--out", rec.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    write(
        cwd.path(),
        "replay.toml",
        "name = \"rp\"\ntokenizer = \"endpoint\"\n[telemetry]\nmetrics = false\n\
         [[jobs]]\nname = \"again\"\nkind = \"agentic\"\nmode = \"replay\"\n\
         replay = { run = \"rec-run\", trajectory = \"rec::agent#0\" }\n",
    );
    let out = cwd.path().join("rp-run");
    let o = run(
        cwd.path(),
        &["run", "replay.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (recorded, replayed) = (report(&rec), report(&out));
    let (a, b) = (
        steps_of(&recorded, "rec::agent"),
        steps_of(&replayed, "rp::again"),
    );
    let shape = |s: &Vec<Value>| -> Vec<(String, String, Value, Value)> {
        s.iter()
            .map(|x| {
                (
                    x["kind"].as_str().unwrap().to_string(),
                    x["name"].as_str().unwrap().to_string(),
                    x["prompt_tokens"].clone(),
                    x["completion_tokens"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(shape(a).len(), 7, "{a:?}");
    assert_eq!(shape(b), shape(a), "replayed {b:?}\nrecorded {a:?}");
    // Each later prompt starts with the previous one: cache hits on every step after the first.
    let llm: Vec<&Value> = b.iter().filter(|x| x["kind"] == "llm_call").collect();
    assert_eq!(llm[0]["cached_tokens"].as_u64(), Some(0), "{:?}", llm[0]);
    for s in &llm[1..] {
        assert!(
            s["cached_tokens"].as_u64().unwrap() > 0,
            "no prefix hit: {s}"
        );
    }
    let (stdout, _) = text(&o);
    assert!(
        stdout.contains("replay of trajectory rec::agent#0"),
        "{stdout}"
    );
    // A trajectory the run does not hold is a located error before any request.
    write(
        cwd.path(),
        "nope.toml",
        "name = \"rp\"\n[telemetry]\nmetrics = false\n\
         [[jobs]]\nname = \"again\"\nkind = \"agentic\"\nmode = \"replay\"\n\
         replay = { run = \"rec-run\", trajectory = \"rec::nope#0\" }\n",
    );
    let o = run(cwd.path(), &["check", "nope.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    assert!(
        format!("{stdout}{stderr}")
            .contains("no trajectory \"rec::nope#0\" in jobs[].trajectories"),
        "{stdout}{stderr}"
    );
}

/// A replay source that is not a run directory, or names a trajectory it does not hold, is
/// a located error (exit 2) before any request.
#[test]
fn agentic_replay_of_a_bad_source_is_a_located_error() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir(cwd.path().join("empty")).unwrap();
    let suite = |run: &str| {
        format!(
            "name = \"rp\"\n[telemetry]\nmetrics = false\n\
             [[jobs]]\nname = \"again\"\nkind = \"agentic\"\nmode = \"replay\"\n\
             replay = {{ run = \"{run}\", trajectory = \"rec::agent#0\" }}\n"
        )
    };
    write(cwd.path(), "rp.toml", &suite("empty"));
    let o = run(cwd.path(), &["check", "rp.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    let all = format!("{stdout}{stderr}");
    assert!(all.contains("rp.toml:8:18"), "{all}");
    assert!(
        all.contains("report.json: not found: not a run directory"),
        "{all}"
    );
}

/// A ShareGPT conversation with `turns = "all"` is a session on the
/// simulator: one request per human turn, in order, each carrying the earlier turns (its
/// prompt grows, the earlier ones a cached prefix), its output the recorded reply's length.
#[test]
fn a_sharegpt_dataset_with_all_turns_replays_each_conversation_as_a_session() {
    let cwd = tempfile::tempdir().unwrap();
    let reply = "x".repeat(120);
    write(
        cwd.path(),
        "fixtures/chat.json",
        &format!(
            "[\n {{\"conversations\": [{{\"from\": \"human\", \"value\": \"{q}\"}}, \
             {{\"from\": \"gpt\", \"value\": \"{reply}\"}}, {{\"from\": \"human\", \"value\": \"and then?\"}}, \
             {{\"from\": \"gpt\", \"value\": \"12345678\"}}]}}\n]\n",
            q = "tell me about the build ".repeat(8)
        ),
    );
    write(
        cwd.path(),
        "w.toml",
        &dataset_suite(
            "{ path = \"chat.json\", format = \"sharegpt\", turns = \"all\" }",
            "",
        ),
    );
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "w.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let rep = report(&out);
    let reqs = job(&rep, "w::data")["requests"].as_array().unwrap().clone();
    let asked: Vec<&Value> = reqs.iter().map(|r| &r["output_tokens_asked"]).collect();
    assert_eq!(asked, [&json!(30), &json!(2)], "reply bytes / 4");
    let done: Vec<&Value> = reqs.iter().map(|r| &r["completion_tokens"]).collect();
    assert_eq!(done, [&json!(30), &json!(2)]);
    let prompts: Vec<u64> = reqs
        .iter()
        .map(|r| r["prompt_tokens"].as_u64().unwrap())
        .collect();
    assert!(
        prompts[1] > prompts[0] + 30,
        "turn 2 carries turn 1 and its reply: {prompts:?}"
    );
    assert!(
        reqs[1]["cached_tokens"].as_u64().unwrap() > 0,
        "{}",
        reqs[1]
    );
    let (stdout, _) = text(&o);
    assert!(stdout.contains("every human turn a request"), "{stdout}");
}

/// An agentic reply the server sent no usage for is counted by the suite's
/// tokenizer (method `tokenizer`), never as usage; with the bytes/4 fallback the method
/// says so. No template probe runs for a suite that sizes no prompt, so a server that
/// never sends usage still runs it.
#[test]
fn agentic_replies_without_usage_are_counted_by_the_suites_tokenizer() {
    let cwd = tempfile::tempdir().unwrap();
    let (mut sim, url) = support::spawn_sim(cwd.path(), &["--fault-no-usage-every", "1"]);
    for (source, method) in [
        ("tokenizer = \"endpoint\"\n", "tokenizer"),
        ("", "utf8_bytes_div_4"),
    ] {
        let suite = recorded_agentic_suite().replacen(
            "name = \"rec\"\n",
            &format!("name = \"rec\"\n{source}"),
            1,
        );
        write(cwd.path(), "na.toml", &suite);
        let out = cwd.path().join(format!("na-{method}"));
        let o = run(
            cwd.path(),
            &[
                "run",
                "na.toml",
                "--endpoint",
                &url,
                "--model",
                "inferscope-sim",
                "--out",
                out.to_str().unwrap(),
            ],
        );
        assert_ne!(o.status.code(), Some(96), "{}", describe(&o));
        let rep = report(&out);
        let llm: Vec<&Value> = steps_of(&rep, "rec::agent")
            .iter()
            .filter(|s| s["kind"] == "llm_call")
            .collect();
        assert_eq!(llm.len(), 4, "{llm:?}");
        for s in llm {
            assert!(s["completion_tokens"].is_null(), "{s}");
            let est = &s["completion_tokens_estimate"];
            assert_eq!(est["method"], method, "{s}");
            assert!(est["tokens"].as_u64().unwrap() > 0, "{s}");
        }
    }
    sim.kill().unwrap();
    sim.wait().unwrap();
}

/// Runs `check` and `run` of `w.toml` in `cwd` against a tripwire endpoint: both exit 2
/// with `message` in their output, `run` connects to nothing and writes no report.
fn refused_before_any_request(cwd: &std::path::Path, message: &str) {
    let wire = support::Tripwire::new();
    let suite = std::fs::read_to_string(cwd.join("w.toml")).unwrap();
    write(
        cwd,
        "w.toml",
        &format!("endpoint = \"{}\"\n{suite}", wire.base_url()),
    );
    let o = run(cwd, &["check", "w.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(format!("{out}{err}").contains(message), "{out}{err}");
    let dir = cwd.join("run");
    let o = run(cwd, &["run", "w.toml", "--out", dir.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(format!("{out}{err}").contains(message), "{out}{err}");
    assert!(!dir.join("report.json").exists(), "no report is written");
    assert_eq!(wire.accepted(), 0, "nothing is sent");
}

/// Break-it review: a Mooncake trace whose scaled length or block was past the prompt cap
/// passed `check`, then `run` aborted allocating the prompt (SIGABRT, no report.json).
#[test]
fn a_dataset_length_or_block_past_the_prompt_cap_is_refused_before_any_request() {
    let cwd = tempfile::tempdir().unwrap();
    write(
        cwd.path(),
        "fixtures/m11.jsonl",
        "{\"timestamp\":0,\"input_length\":512,\"output_length\":10,\"hash_ids\":[0]}\n",
    );
    for (keys, message) in [
        (
            "length_scale = 1e9",
            "m11.jsonl:1: field `input_length`: 512 × length_scale 1000000000 → \
             512000000000 prompt tokens; a prompt size must be at most 10000000 tokens",
        ),
        (
            "block_tokens = 2000000000",
            "w.toml:9:69: `block_tokens` must be at most 10000000 tokens",
        ),
    ] {
        write(
            cwd.path(),
            "w.toml",
            &dataset_suite(
                &format!("{{ path = \"m11.jsonl\", format = \"mooncake\", {keys} }}"),
                "",
            ),
        );
        refused_before_any_request(cwd.path(), message);
    }
}

/// Break-it review: a JSONL message without `content` or with an unknown `role` passed
/// `check` and went to the engine.
#[test]
fn a_dataset_message_without_content_or_with_an_unknown_role_is_a_located_error() {
    let cwd = tempfile::tempdir().unwrap();
    for (body, message) in [
        (
            "{\"prompt\": \"a\"}\n{\"messages\": [{\"role\": \"user\"}]}\n",
            "d.jsonl:2: field `messages[0].content`: missing",
        ),
        (
            "{\"messages\": [{\"role\": \"wizard\", \"content\": \"x\"}]}\n",
            "d.jsonl:1: field `messages[0].role`: \"wizard\" is not `system`, `user`, \
             `assistant`, `tool` or `developer`",
        ),
    ] {
        write(cwd.path(), "fixtures/d.jsonl", body);
        write(
            cwd.path(),
            "w.toml",
            &dataset_suite("{ path = \"d.jsonl\", format = \"jsonl\" }", ""),
        );
        refused_before_any_request(cwd.path(), message);
    }
}

/// Break-it review: `sizes = [1000000000000]` said the job had no `sizes` and that the
/// value was not a non-negative integer; it is one error, the prompt cap's.
#[test]
fn a_prompt_size_past_u32_is_one_error_naming_the_cap() {
    let cwd = tempfile::tempdir().unwrap();
    write(cwd.path(), "w.toml", &sized_suite("", "[1000000000000]"));
    let o = run(cwd.path(), &["check", "w.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (out, err) = text(&o);
    let all = format!("{out}{err}");
    assert!(
        all.contains("w.toml:8:10: a prompt size must be at most 10000000 tokens"),
        "{all}"
    );
    assert!(!all.contains("has no `sizes`"), "{all}");
    assert!(!all.contains("non-negative integer"), "{all}");
    assert_eq!(all.matches("error:").count(), 1, "one error: {all}");
}

/// Break-it review: a `tokenizer` that is a symlink passed `check` (exit 0), then `run`
/// failed its setup (exit 96): it is a `check` error naming the field.
#[cfg(unix)]
#[test]
fn a_tokenizer_that_is_a_symlink_is_refused_before_any_request() {
    let cwd = tempfile::tempdir().unwrap();
    write(cwd.path(), "tok.json", "{}");
    std::os::unix::fs::symlink("tok.json", cwd.path().join("lnk.json")).unwrap();
    write(
        cwd.path(),
        "w.toml",
        &sized_suite("tokenizer = \"lnk.json\"", "[8]"),
    );
    refused_before_any_request(
        cwd.path(),
        "w.toml:3:13: `tokenizer`: lnk.json is a symlink",
    );
    // `run --tokenizer` is refused the same way.
    write(cwd.path(), "w.toml", &sized_suite("", "[8]"));
    let dir = cwd.path().join("run2");
    let o = run(
        cwd.path(),
        &[
            "run",
            "w.toml",
            "--tokenizer",
            "lnk.json",
            "--out",
            dir.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (out, err) = text(&o);
    assert!(
        format!("{out}{err}").contains("--tokenizer: `tokenizer`: lnk.json is a symlink"),
        "{out}{err}"
    );
    assert!(!dir.join("report.json").exists());
}
