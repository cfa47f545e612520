//! Several choices per response against a scripted loopback server that
//! streams `n = 2` choices interleaved by `choices[].index`: through the client (the body
//! asks for `n`, each choice is measured on its own, choice 0 is the output) and through
//! the CLI (the suite key `n`, grading on choice 0, the per-choice record in
//! `report.json`, a job note when the server sends fewer choices than asked for).

use crate::support;

use inferscope_bench::client::{ChatRequest, Client, ClientConfig, RecordWarning, RequestRecord};
use inferscope_bench::clock::RunClock;
use serde_json::{Value, json};
use support::{Hostile, Received, Reply, describe, job, report, run, text, write};

/// One chunk carrying `delta` for choice `index`.
fn delta(index: u32, delta: Value, finish: Option<&str>) -> String {
    json!({"id": "chatcmpl-n", "object": "chat.completion.chunk", "created": 0, "model": "m",
           "choices": [{"index": index, "delta": delta, "logprobs": null,
                        "finish_reason": finish}]})
    .to_string()
}

/// vLLM's shape for `texts.len()` choices: role chunks, then one word of each choice in
/// turn (interleaved), each choice finishing on its own, usage over all, `[DONE]`.
fn interleaved(texts: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = (0..texts.len() as u32)
        .map(|i| delta(i, json!({"role": "assistant", "content": ""}), None))
        .collect();
    let words: Vec<Vec<&str>> = texts
        .iter()
        .map(|t| t.split_inclusive(' ').collect())
        .collect();
    let longest = words.iter().map(Vec::len).max().unwrap_or(0);
    for k in 0..longest {
        for (i, w) in words.iter().enumerate() {
            if let Some(word) = w.get(k) {
                out.push(delta(i as u32, json!({"content": word}), None));
            }
        }
    }
    for i in 0..texts.len() as u32 {
        out.push(delta(i, json!({}), Some("stop")));
    }
    let completion: usize = words.iter().map(Vec::len).sum();
    out.push(
        json!({"id": "chatcmpl-n", "object": "chat.completion.chunk", "created": 0,
               "model": "m", "choices": [],
               "usage": {"prompt_tokens": 9, "completion_tokens": completion,
                         "total_tokens": 9 + completion}})
        .to_string(),
    );
    out.push("[DONE]".into());
    out
}

/// One streamed request for `n` choices to `server` through the product's client.
async fn chat_n(server: &Hostile, n: u32) -> RequestRecord {
    let client = Client::new(ClientConfig::new(server.base_url())).unwrap();
    let clock = RunClock::start();
    let req = ChatRequest {
        request_id: format!("n{n}"),
        model: "m".into(),
        messages: vec![json!({"role": "user", "content": "Capital?"})],
        n: Some(n),
        stream: true,
        ..ChatRequest::default()
    };
    client.chat(&req, &clock, clock.elapsed_ns()).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_tracks_two_interleaved_choices_and_outputs_choice_0() {
    let server = Hostile::start("m", |_r: &Received| {
        Reply::Events(interleaved(&["The capital is Paris", "It is London then"]))
    });
    let rec = chat_n(&server, 2).await;
    assert!(rec.is_success(), "{:?}", rec.error);

    let sent: Value = serde_json::from_str(&server.chat_requests()[0].body).unwrap();
    assert_eq!(sent["n"], 2, "the body asks for two choices");

    // The graded output is choice 0 alone; before issue 13 item 5 both texts were merged.
    assert_eq!(rec.output.text, "The capital is Paris");
    assert_eq!(rec.choices_requested, Some(2));
    assert_eq!(rec.choices.len(), 2);
    assert_eq!(rec.choices[0].output.text, "The capital is Paris");
    assert_eq!(rec.choices[1].output.text, "It is London then");
    for c in &rec.choices {
        assert_eq!(c.token_event_count, 4);
        assert_eq!(
            c.itl_ns.len(),
            3,
            "one gap per pair of this choice's token events"
        );
        assert_eq!(c.finish_reason.as_deref(), Some("stop"));
    }
    // Request-level TTFT is the first token event of any choice (choice 0 came first).
    assert_eq!(rec.ttft_ns, rec.choices[0].ttft_ns);
    assert!(rec.choices[1].ttft_ns >= rec.choices[0].ttft_ns);
    assert_eq!(rec.token_event_count, 8);
    assert_eq!(
        rec.itl_ns.len(),
        6,
        "every choice's gaps, none across choices"
    );
    assert_eq!(rec.completion_tokens, Some(8));
    assert!(rec.warnings.is_empty(), "{:?}", rec.warnings);

    // In report.json the per-choice figures are there, the content is not.
    let json = serde_json::to_string(&rec).unwrap();
    assert!(json.contains("\"choices_requested\":2"), "{json}");
    assert!(
        !json.contains("Paris") && !json.contains("London"),
        "{json}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_warns_when_fewer_choices_come_back() {
    let server = Hostile::start("m", |_r: &Received| {
        Reply::Events(interleaved(&["only one choice"]))
    });
    let rec = chat_n(&server, 3).await;
    assert!(rec.is_success());
    assert_eq!(rec.warnings, vec![RecordWarning::ChoiceCountMismatch]);
    assert_eq!(rec.choices.len(), 1);
    assert_eq!(rec.output.text, "only one choice");
}

fn suite(url: &str) -> String {
    format!(
        "name = \"n\"\nendpoint = \"{url}\"\nmodel = \"m\"\n\
         [telemetry]\nmetrics = false\n\
         [[jobs]]\nname = \"paris\"\nkind = \"agentic\"\nmode = \"model\"\n\
         task = \"What is the capital of France?\"\nn = 2\nmax_steps = 2\n\
         [[jobs.checks]]\nkind = \"contains\"\nvalue = \"Paris\"\n\
         [[jobs]]\nname = \"london\"\nkind = \"agentic\"\nmode = \"model\"\n\
         task = \"What is the capital of France?\"\nn = 2\nmax_steps = 2\n\
         [[jobs.checks]]\nkind = \"contains\"\nvalue = \"London\"\n\
         [[jobs]]\nname = \"short\"\nkind = \"context\"\nsizes = [8, 9]\nn = 3\n"
    )
}

#[test]
fn cli_grades_choice_0_records_each_choice_and_notes_a_short_response() {
    let server = Hostile::start("m", |r: &Received| {
        if r.request_id().starts_with("n::short") {
            Reply::Events(interleaved(&["first", "second"]))
        } else {
            Reply::Events(interleaved(&["The capital is Paris", "It is London"]))
        }
    });
    let cwd = tempfile::tempdir().unwrap();
    write(cwd.path(), "n.toml", &suite(&server.base_url()));
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "n.toml", "--out", out.to_str().unwrap()],
    );
    // `london` fails its check: choice 1 said London, but only choice 0 is graded.
    assert_eq!(o.status.code(), Some(100), "{}", describe(&o));
    let (stdout, _) = text(&o);

    for r in server.chat_requests() {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        let want = if r.request_id().starts_with("n::short") {
            3
        } else {
            2
        };
        assert_eq!(body["n"], want, "{}", r.body);
    }
    let rep = report(&out);
    assert_eq!(job(&rep, "n::paris")["status"], "pass", "{stdout}");
    assert_eq!(job(&rep, "n::london")["status"], "fail", "{stdout}");

    let paris = &job(&rep, "n::paris")["requests"][0];
    assert_eq!(paris["choices_requested"], 2);
    let choices = paris["choices"].as_array().expect("per-choice records");
    assert_eq!(choices.len(), 2);
    assert_eq!(choices[0]["index"], 0);
    assert_eq!(choices[1]["index"], 1);
    assert_eq!(choices[0]["token_event_count"], 4);
    assert_eq!(choices[1]["token_event_count"], 3);
    assert!(choices[1]["ttft_ns"].as_u64().unwrap() >= paris["ttft_ns"].as_u64().unwrap());
    assert!(paris["warnings"].as_array().unwrap().is_empty());

    // Two choices for n = 3: each request warns, the job says so once (not stderr).
    let short = job(&rep, "n::short");
    for q in short["requests"].as_array().unwrap() {
        assert_eq!(q["warnings"], json!(["choice_count_mismatch"]), "{q}");
    }
    let notes: Vec<&str> = short["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("choices: 2 of 2 requests")
                && n.contains("n = 3")
                && n.contains("2 choices: 2 requests")),
        "{notes:?}"
    );
    assert!(stdout.contains("choices: 2 of 2 requests"), "{stdout}");
}

#[test]
fn check_rejects_n_out_of_range_with_a_located_error() {
    let cwd = tempfile::tempdir().unwrap();
    for (n, want) in [("0", "at least 1"), ("129", "at most 128")] {
        let s = format!(
            "name = \"bad\"\nmodel = \"m\"\n\
             [[jobs]]\nname = \"ctx\"\nkind = \"context\"\nsizes = [8]\nn = {n}\n"
        );
        write(cwd.path(), "bad.toml", &s);
        let o = run(cwd.path(), &["check", "bad.toml"]);
        assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
        let (stdout, stderr) = text(&o);
        let all = format!("{stdout}{stderr}");
        assert!(all.contains(want), "{all}");
        assert!(
            all.contains("bad.toml:7:5"),
            "file:line of the `n` value: {all}"
        );
    }
    // An SWE job has no chat requests of its own: `n` is an unknown key there.
    let s = "name = \"bad\"\nmodel = \"m\"\n[[jobs]]\nname = \"h\"\nkind = \"swe\"\n\
             command = [\"true\"]\nn = 2\n";
    write(cwd.path(), "bad.toml", s);
    let o = run(cwd.path(), &["check", "bad.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    let (stdout, stderr) = text(&o);
    assert!(
        format!("{stdout}{stderr}")
            .contains("`n` is a request key of `agentic` and `context` jobs"),
        "{stdout}{stderr}"
    );
}

#[test]
fn dry_run_shows_n() {
    let cwd = tempfile::tempdir().unwrap();
    let s = "name = \"d\"\nmodel = \"m\"\n\
             [[jobs]]\nname = \"two\"\nkind = \"context\"\nsizes = [8]\nn = 2\n\
             [[jobs]]\nname = \"one\"\nkind = \"context\"\nsizes = [8]\n";
    write(cwd.path(), "d.toml", s);
    let o = run(cwd.path(), &["run", "d.toml", "--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (stdout, _) = text(&o);
    assert!(stdout.lines().any(|l| l == "  n: 2 (suite)"), "{stdout}");
    assert!(
        stdout.lines().any(|l| l == "  n: 1 (not sent) (default)"),
        "{stdout}"
    );
}

/// With `n = 2` a check may name a choice — choice 1's
/// text ("B1B2") is graded, a choice the response lacks fails saying so — and each
/// choice's text length and finish reason reach the records (`text_bytes`,
/// `finish_reason`; on main choice 1's text was lost).
#[test]
fn checks_name_a_choice_and_each_choices_text_length_is_recorded() {
    let server = Hostile::start("m", |_: &Received| {
        Reply::Events(interleaved(&["A1 A2", "B1 B2 B3"]))
    });
    let cwd = tempfile::tempdir().unwrap();
    let url = server.base_url();
    let s = format!(
        "name = \"c\"\nendpoint = \"{url}\"\nmodel = \"m\"\n[telemetry]\nmetrics = false\n\
         [[jobs]]\nname = \"b\"\nkind = \"context\"\nsizes = [8]\nn = 2\n\
         [[jobs.checks]]\nkind = \"contains\"\nvalue = \"B1 B2\"\nchoice = 1\n\
         [[jobs.checks]]\nkind = \"equals\"\nvalue = \"A1 A2\"\n\
         [[jobs]]\nname = \"missing\"\nkind = \"context\"\nsizes = [8]\nn = 2\n\
         [[jobs.checks]]\nkind = \"contains\"\nvalue = \"B1\"\nchoice = 2\n"
    );
    write(cwd.path(), "c.toml", &s);
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &["run", "c.toml", "--out", out.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(100), "{}", describe(&o));
    let rep = report(&out);
    let b = job(&rep, "c::b");
    assert_eq!(b["status"], "pass", "{}", describe(&o));
    let checks: Vec<&str> = b["grading"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["check"].as_str().unwrap())
        .collect();
    assert!(
        checks.contains(&"contains(final_answer choice 1)"),
        "{checks:?}"
    );
    let choices = b["requests"][0]["choices"].as_array().unwrap();
    assert_eq!(choices[0]["text_bytes"], "A1 A2".len());
    assert_eq!(choices[1]["text_bytes"], "B1 B2 B3".len());
    assert_eq!(choices[1]["finish_reason"], "stop");
    let m = job(&rep, "c::missing");
    assert_eq!(m["status"], "fail");
    let reason = m["grading"][0]["detail"].as_str().unwrap();
    assert!(
        reason.contains("no choice 2 in the final answer"),
        "{reason}"
    );
    // A choice of stdout is refused at load, naming the key.
    write(
        cwd.path(),
        "bad.toml",
        "name = \"x\"\n[[jobs]]\nname = \"h\"\nkind = \"swe\"\ncommand = [\"true\"]\n\
         [[jobs.checks]]\nkind = \"contains\"\nvalue = \"ok\"\ntarget = \"stdout\"\nchoice = 1\n",
    );
    let o = run(cwd.path(), &["check", "bad.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", describe(&o));
    assert!(describe(&o).contains("`choice`"), "{}", describe(&o));
}
