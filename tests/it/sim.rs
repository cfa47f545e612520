// Integration tests of the built-in simulator, against `spawn` on 127.0.0.1:0.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use inferscope_bench::sim::prompt::{ChatRequest, render_prompt};
use inferscope_bench::sim::{FaultConfig, SimConfig, SimHandle, spawn};
use serde_json::{Value, json};

fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn start(cfg: SimConfig) -> SimHandle {
    spawn(cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

async fn post(
    c: &reqwest::Client,
    sim: &SimHandle,
    body: &Value,
    fault: Option<&str>,
) -> reqwest::Response {
    let mut rb = c
        .post(format!("{}/chat/completions", sim.base_url()))
        .json(body);
    if let Some(f) = fault {
        rb = rb.header("x-inferscope-sim-fault", f);
    }
    rb.send().await.unwrap()
}

/// The `data:` payloads of an SSE body, in order.
fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            e.strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data event: {e:?}"))
                .to_string()
        })
        .collect()
}

fn json_events(data: &[String]) -> Vec<Value> {
    data.iter()
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

async fn stream_text(c: &reqwest::Client, sim: &SimHandle, body: &Value) -> (Vec<Value>, bool) {
    let r = post(c, sim, body, None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let data = sse_data(&r.text().await.unwrap());
    let done = data.last().map(String::as_str) == Some("[DONE]");
    (json_events(&data), done)
}

/// Concatenated `delta.content` of a stream's chunks.
fn content_of(events: &[Value]) -> String {
    events
        .iter()
        .filter_map(|e| {
            e.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
        })
        .collect()
}

fn usage_of(events: &[Value]) -> Option<&Value> {
    events
        .iter()
        .find_map(|e| e.get("usage").filter(|u| !u.is_null()))
}

/// Sum of every sample of `name` (all label sets) in a Prometheus text body.
fn metric(text: &str, name: &str) -> f64 {
    let mut found = false;
    let mut sum = 0.0;
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let (series, value) = l.rsplit_once(' ').unwrap();
        let n = series.split('{').next().unwrap();
        if n == name {
            found = true;
            sum += value.parse::<f64>().unwrap();
        }
    }
    assert!(found, "{name} not in metrics");
    sum
}

fn metric_types(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|r| {
            let (n, t) = r.split_once(' ').unwrap();
            (n.to_string(), t.to_string())
        })
        .collect()
}

async fn scrape(c: &reqwest::Client, sim: &SimHandle) -> String {
    let r = c.get(sim.metrics_url()).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    r.text().await.unwrap()
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

#[tokio::test]
async fn stream_shape_and_usage() {
    let sim = start(SimConfig::zero_delay()).await;
    let c = client();
    let body = json!({
        "model": "inferscope-sim",
        "messages": [user("hello there")],
        "stream": true,
        "stream_options": {"include_usage": true}
    });
    let (ev, done) = stream_text(&c, &sim, &body).await;
    assert!(done, "stream ends with [DONE]");
    // role-only first chunk
    assert_eq!(
        ev[0]["choices"][0]["delta"],
        json!({"role": "assistant", "content": ""})
    );
    assert_eq!(ev[0]["object"], "chat.completion.chunk");
    assert_eq!(ev[0]["model"], "inferscope-sim");
    // 17 content chunks (Answer: + 16 filler), each one non-empty token
    let content: Vec<&Value> = ev[1..ev.len() - 2].iter().collect();
    assert_eq!(content.len(), 17);
    for e in &content {
        let s = e["choices"][0]["delta"]["content"].as_str().unwrap();
        assert!(!s.is_empty());
        assert!(e["choices"][0]["finish_reason"].is_null());
    }
    // finish chunk
    let fin = &ev[ev.len() - 2];
    assert_eq!(fin["choices"][0]["delta"], json!({}));
    assert_eq!(fin["choices"][0]["finish_reason"], "stop");
    // usage-only chunk
    let last = &ev[ev.len() - 1];
    assert_eq!(last["choices"], json!([]));
    let u = &last["usage"];
    let prompt = render_prompt(
        &serde_json::from_value::<ChatRequest>(body.clone())
            .unwrap()
            .messages,
        &[],
    );
    assert_eq!(u["prompt_tokens"], prompt.len().div_ceil(4));
    assert_eq!(u["completion_tokens"], 17);
    assert_eq!(u["total_tokens"], prompt.len().div_ceil(4) + 17);
    assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 0);
    assert!(content_of(&ev).starts_with("Answer: "));
    // all chunks share one id
    assert!(ev.iter().all(|e| e["id"] == ev[0]["id"]));

    // Without include_usage: no usage chunk, no usage fields.
    let body2 = json!({"model": "inferscope-sim", "messages": [user("x")], "stream": true});
    let (ev2, done2) = stream_text(&c, &sim, &body2).await;
    assert!(done2);
    assert!(ev2.iter().all(|e| e.get("usage").is_none()));
    assert_eq!(ev2.len(), 1 + 17 + 1);

    // max_tokens caps and says length.
    let body3 = json!({"model": "inferscope-sim", "messages": [user("x")], "stream": true,
        "max_tokens": 4, "stream_options": {"include_usage": true}});
    let (ev3, _) = stream_text(&c, &sim, &body3).await;
    assert_eq!(usage_of(&ev3).unwrap()["completion_tokens"], 4);
    assert_eq!(ev3[ev3.len() - 2]["choices"][0]["finish_reason"], "length");
    sim.shutdown().await;
}

#[tokio::test]
async fn non_stream_shape_models_health_and_errors() {
    let sim = start(SimConfig::zero_delay()).await;
    let c = client();
    let r = post(
        &c,
        &sim,
        &json!({"model": "inferscope-sim", "messages": [user("hi")]}),
        None,
    )
    .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert!(
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .starts_with("Answer: ")
    );
    assert_eq!(v["choices"][0]["finish_reason"], "stop");
    assert_eq!(v["usage"]["completion_tokens"], 17);
    assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 0);

    let models: Value = c
        .get(format!("{}/models", sim.base_url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], "inferscope-sim");
    assert_eq!(models["data"][0]["object"], "model");

    let health = c
        .get(format!("http://{}/health", sim.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);

    let r = post(
        &c,
        &sim,
        &json!({"model": "gpt-9", "messages": [user("hi")], "stream": true}),
        None,
    )
    .await;
    assert_eq!(r.status(), 404);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["code"], 404);
    assert_eq!(e["error"]["param"], "model");
    assert!(e["error"]["message"].as_str().unwrap().contains("gpt-9"));

    let r = c
        .post(format!("{}/chat/completions", sim.base_url()))
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["code"], 400);
    assert!(e["error"]["message"].is_string());

    for bad in [
        json!({"model": "inferscope-sim", "messages": []}),
        json!({"model": "inferscope-sim"}),
        json!({"model": "inferscope-sim", "messages": [user("x")], "max_tokens": 0}),
        json!({"model": "inferscope-sim", "messages": [user("x")], "n": 2}),
    ] {
        assert_eq!(post(&c, &sim, &bad, None).await.status(), 400, "{bad}");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn cached_tokens_grow_across_conversation_and_metrics_agree() {
    let sim = start(SimConfig::zero_delay()).await;
    let c = client();
    let mut messages = vec![
        json!({"role": "system", "content": "You are a careful assistant. ".repeat(8)}),
        user("Summarise the design of a prefix cache in three sentences."),
    ];
    let mut prev_prompt: Option<String> = None;
    let (mut sum_prompt, mut sum_cached, mut sum_completion) = (0u64, 0u64, 0u64);
    let mut cached_series = Vec::new();
    for turn in 0..5 {
        let body = json!({"model": "inferscope-sim", "messages": messages, "stream": true,
            "stream_options": {"include_usage": true}});
        let prompt = render_prompt(
            &serde_json::from_value::<ChatRequest>(body.clone())
                .unwrap()
                .messages,
            &[],
        );
        let (ev, done) = stream_text(&c, &sim, &body).await;
        assert!(done);
        let u = usage_of(&ev).unwrap().clone();
        let cached = u["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap();
        let prompt_tokens = u["prompt_tokens"].as_u64().unwrap();
        assert_eq!(prompt_tokens as usize, prompt.len().div_ceil(4));
        // Expected: every full 16-token block of the previous prompt (whose bytes are a
        // prefix of this one), bounded by this prompt's (n - 1) tokens.
        let expected = match &prev_prompt {
            None => 0,
            Some(p) => {
                assert!(prompt.starts_with(p.as_str()), "history keeps its prefix");
                let full_tokens = p.len() / 4;
                let blocks = (full_tokens / 16).min((prompt_tokens as usize - 1) / 16);
                (blocks * 16) as u64
            }
        };
        assert_eq!(cached, expected, "turn {turn}");
        assert_eq!(cached % 16, 0);
        cached_series.push(cached);
        sum_prompt += prompt_tokens;
        sum_cached += cached;
        sum_completion += u["completion_tokens"].as_u64().unwrap();
        messages.push(json!({"role": "assistant", "content": content_of(&ev)}));
        messages.push(user(&format!("Now add detail number {turn}.")));
        prev_prompt = Some(prompt);
    }
    assert!(
        cached_series.windows(2).all(|w| w[1] > w[0]),
        "{cached_series:?}"
    );

    let text = scrape(&c, &sim).await;
    assert_eq!(metric(&text, "vllm:prompt_tokens_total") as u64, sum_prompt);
    assert_eq!(
        metric(&text, "vllm:prefix_cache_queries_total") as u64,
        sum_prompt
    );
    assert_eq!(
        metric(&text, "vllm:prefix_cache_hits_total") as u64,
        sum_cached
    );
    assert_eq!(
        metric(&text, "vllm:generation_tokens_total") as u64,
        sum_completion
    );
    let snap = sim.state().metrics();
    assert_eq!(snap.prefix_cache_hits_total, sum_cached);
    sim.shutdown().await;
}

#[tokio::test]
async fn metrics_counters_move_and_parse() {
    let sim = start(SimConfig::zero_delay()).await;
    let c = client();
    let before = scrape(&c, &sim).await;
    let types = metric_types(&before);
    for (name, ty) in [
        ("vllm:prompt_tokens_total", "counter"),
        ("vllm:generation_tokens_total", "counter"),
        ("vllm:prefix_cache_queries_total", "counter"),
        ("vllm:prefix_cache_hits_total", "counter"),
        ("vllm:request_success_total", "counter"),
        ("vllm:num_requests_running", "gauge"),
        ("vllm:num_requests_waiting", "gauge"),
        ("vllm:kv_cache_usage_perc", "gauge"),
    ] {
        assert_eq!(types.get(name).map(String::as_str), Some(ty), "{name}");
        assert!(
            before.contains(&format!("# HELP {name} ")),
            "HELP for {name}"
        );
        assert_eq!(metric(&before, name), 0.0, "{name} starts at 0");
    }
    assert!(before.contains("model_name=\"inferscope-sim\""));

    let body = json!({"model": "inferscope-sim", "messages": [user("count me")], "stream": true,
        "stream_options": {"include_usage": true}});
    let mut completion = 0;
    let mut prompt = 0;
    for _ in 0..3 {
        let (ev, _) = stream_text(&c, &sim, &body).await;
        let u = usage_of(&ev).unwrap();
        completion += u["completion_tokens"].as_u64().unwrap();
        prompt += u["prompt_tokens"].as_u64().unwrap();
    }
    let non_stream = post(
        &c,
        &sim,
        &json!({"model": "inferscope-sim", "messages": [user("ns")], "max_tokens": 2}),
        None,
    )
    .await;
    let v: Value = non_stream.json().await.unwrap();
    completion += v["usage"]["completion_tokens"].as_u64().unwrap();
    prompt += v["usage"]["prompt_tokens"].as_u64().unwrap();

    let after = scrape(&c, &sim).await;
    assert_eq!(
        metric(&after, "vllm:generation_tokens_total") as u64,
        completion
    );
    assert_eq!(metric(&after, "vllm:prompt_tokens_total") as u64, prompt);
    assert_eq!(metric(&after, "vllm:request_success_total"), 4.0);
    assert!(after.contains(
        "vllm:request_success_total{engine=\"0\",finished_reason=\"length\",model_name=\"inferscope-sim\"} 1.0"
    ));
    assert_eq!(metric(&after, "vllm:num_requests_running"), 0.0);
    assert_eq!(metric(&after, "vllm:num_requests_waiting"), 0.0);
    let kv = metric(&after, "vllm:kv_cache_usage_perc");
    assert!((0.0..=1.0).contains(&kv));
    sim.shutdown().await;
}

fn tools() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object",
                "properties": {
                    "city": {"type": "string", "enum": ["Oslo", "Rome"]},
                    "days": {"type": "integer"},
                    "units": {"type": "string", "default": "metric"}
                },
                "required": ["city", "days", "units"]}}},
        {"type": "function", "function": {
            "name": "read_file",
            "parameters": {"type": "object",
                "properties": {"path": {"type": "string", "examples": ["notes.txt"]},
                               "verbose": {"type": "boolean"}},
                "required": ["path", "verbose"]}}}
    ])
}

/// Assembles the single streamed tool call of a response: (id, name, arguments, fragments).
fn assemble_tool_call(ev: &[Value]) -> (String, String, String, usize) {
    let (mut id, mut name, mut args, mut frags) = (String::new(), String::new(), String::new(), 0);
    for e in ev {
        let Some(calls) = e
            .pointer("/choices/0/delta/tool_calls")
            .and_then(Value::as_array)
        else {
            continue;
        };
        for tc in calls {
            assert_eq!(tc["index"], 0);
            if let Some(i) = tc["id"].as_str() {
                id = i.to_string();
                assert_eq!(tc["type"], "function");
                name = tc["function"]["name"].as_str().unwrap().to_string();
                assert_eq!(tc["function"]["arguments"], "");
            } else {
                args.push_str(tc["function"]["arguments"].as_str().unwrap());
                frags += 1;
            }
        }
    }
    (id, name, args, frags)
}

#[tokio::test]
async fn tool_call_turns_then_final_answer() {
    let sim = start(SimConfig::zero_delay()).await;
    let c = client();
    let mut messages = vec![user(
        "What is the weather in Oslo and what do my notes say?",
    )];
    let results = [
        "Oslo: 7 degrees, light rain.",
        "Fact: the launch code is AZURE-4417.",
    ];
    for (turn, result) in results.iter().enumerate() {
        let body = json!({"model": "inferscope-sim", "messages": messages, "tools": tools(),
            "stream": true, "stream_options": {"include_usage": true}});
        let (ev, done) = stream_text(&c, &sim, &body).await;
        assert!(done);
        let (id, name, args, frags) = assemble_tool_call(&ev);
        assert_eq!(id, format!("call_{turn}"));
        assert!(frags >= 2, "arguments in at least two fragments");
        let parsed: Value = serde_json::from_str(&args).unwrap();
        if turn == 0 {
            assert_eq!(name, "get_weather");
            assert_eq!(
                parsed,
                json!({"city": "Oslo", "days": 1, "units": "metric"})
            );
        } else {
            assert_eq!(name, "read_file");
            assert_eq!(parsed, json!({"path": "notes.txt", "verbose": true}));
        }
        assert_eq!(
            ev[ev.len() - 2]["choices"][0]["finish_reason"],
            "tool_calls"
        );
        assert_eq!(usage_of(&ev).unwrap()["completion_tokens"], 1 + frags);
        assert_eq!(content_of(&ev), "");
        messages.push(json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": name, "arguments": args}}]}));
        messages.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
    }
    let body = json!({"model": "inferscope-sim", "messages": messages, "tools": tools(),
        "stream": true, "stream_options": {"include_usage": true}});
    let (ev, _) = stream_text(&c, &sim, &body).await;
    let text = content_of(&ev);
    assert!(
        text.starts_with("Answer: Fact: the launch code is AZURE-4417."),
        "{text}"
    );
    assert_eq!(ev[ev.len() - 2]["choices"][0]["finish_reason"], "stop");
    // The tool-bearing history hit the prefix cache.
    assert!(
        usage_of(&ev).unwrap()["prompt_tokens_details"]["cached_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );

    // Non-streamed tool call shape, and tool_choice "none".
    let first = json!({"model": "inferscope-sim", "messages": [user("go")], "tools": tools()});
    let v: Value = post(&c, &sim, &first, None).await.json().await.unwrap();
    let tc = &v["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(tc["id"], "call_0");
    assert_eq!(tc["function"]["name"], "get_weather");
    assert!(serde_json::from_str::<Value>(tc["function"]["arguments"].as_str().unwrap()).is_ok());
    assert_eq!(v["choices"][0]["finish_reason"], "tool_calls");
    assert!(v["choices"][0]["message"]["content"].is_null());
    let none = json!({"model": "inferscope-sim", "messages": [user("go")], "tools": tools(), "tool_choice": "none"});
    let v: Value = post(&c, &sim, &none, None).await.json().await.unwrap();
    assert!(
        v["choices"][0]["message"]["content"]
            .as_str()
            .unwrap()
            .starts_with("Answer: ")
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn faults_by_header() {
    let sim = start(SimConfig::zero_delay()).await;
    let c = client();
    let body = json!({"model": "inferscope-sim", "messages": [user("fault me")], "stream": true,
        "stream_options": {"include_usage": true}});

    // error_mid_stream: HTTP 200, some tokens, an error object, no finish, no usage.
    let r = post(&c, &sim, &body, Some("error_mid_stream")).await;
    assert_eq!(r.status(), 200);
    let data = sse_data(&r.text().await.unwrap());
    let ev = json_events(&data);
    let err = ev
        .iter()
        .find(|e| e.get("error").is_some())
        .expect("error event");
    assert_eq!(err["error"]["code"], 500);
    assert!(
        !content_of(&ev).is_empty(),
        "partial tokens before the error"
    );
    assert!(ev.iter().all(|e| {
        e.pointer("/choices/0/finish_reason")
            .is_none_or(Value::is_null)
    }));
    assert!(usage_of(&ev).is_none());

    // disconnect: the body ends in a transport error, never [DONE].
    let r = post(&c, &sim, &body, Some("disconnect")).await;
    assert_eq!(r.status(), 200);
    let (partial, failed) = read_until_error(r).await;
    assert!(failed, "disconnect must fail the body read");
    assert!(
        partial.contains("\"role\":\"assistant\""),
        "head and first bytes arrive: {partial:?}"
    );
    assert!(partial.contains("\"content\":\"Answer:\""), "{partial:?}");
    assert!(!partial.contains("[DONE]") && !partial.contains("finish_reason\":\""));

    // slow_first_byte: headers arrive no earlier than the delay (lower bound only).
    let t0 = Instant::now();
    let r = post(&c, &sim, &body, Some("slow_first_byte=300")).await;
    assert!(t0.elapsed() >= Duration::from_millis(300));
    assert_eq!(r.status(), 200);
    assert!(r.text().await.unwrap().ends_with("data: [DONE]\n\n"));

    // no_usage: usage requested but absent; stream otherwise complete.
    let r = post(&c, &sim, &body, Some("no_usage")).await;
    let data = sse_data(&r.text().await.unwrap());
    assert_eq!(data.last().unwrap(), "[DONE]");
    let ev = json_events(&data);
    assert!(usage_of(&ev).is_none());
    assert!(
        ev.iter()
            .all(|e| !e["choices"].as_array().unwrap().is_empty())
    );

    // no_done: finish and usage present, [DONE] absent.
    let r = post(&c, &sim, &body, Some("no_done")).await;
    let data = sse_data(&r.text().await.unwrap());
    assert!(!data.iter().any(|d| d == "[DONE]"));
    let ev = json_events(&data);
    assert!(usage_of(&ev).is_some());
    assert_eq!(ev[ev.len() - 2]["choices"][0]["finish_reason"], "stop");

    // Combined, and an unknown fault is a 400.
    let r = post(&c, &sim, &body, Some("no_usage,no_done")).await;
    let data = sse_data(&r.text().await.unwrap());
    assert!(!data.iter().any(|d| d == "[DONE]"));
    assert!(usage_of(&json_events(&data)).is_none());
    assert_eq!(post(&c, &sim, &body, Some("explode")).await.status(), 400);

    // Aborted requests are counted as such and leave nothing running.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let m = sim.state().metrics();
    assert_eq!(m.request_success_abort, 2);
    assert_eq!(m.num_requests_running, 0);
    assert_eq!(m.kv_blocks_in_use, 0);
    sim.shutdown().await;
}

#[tokio::test]
async fn faults_every_nth_request() {
    let cfg = SimConfig {
        faults: FaultConfig {
            disconnect_every: 2,
            no_done_every: 3,
            ..FaultConfig::default()
        },
        ..SimConfig::zero_delay()
    };
    let sim = start(cfg).await;
    let c = client();
    let body = json!({"model": "inferscope-sim", "messages": [user("n")], "stream": true});
    let mut outcome = Vec::new();
    for _ in 1..=6 {
        let r = post(&c, &sim, &body, None).await;
        outcome.push(match r.text().await {
            Err(_) => "disconnect",
            Ok(t) if t.ends_with("data: [DONE]\n\n") => "ok",
            Ok(_) => "no_done",
        });
    }
    assert_eq!(
        outcome,
        [
            "ok",
            "disconnect",
            "no_done",
            "disconnect",
            "ok",
            "disconnect"
        ]
    );
    // Non-streaming requests follow the same count (7th: ok; 8th: disconnect).
    let ns = json!({"model": "inferscope-sim", "messages": [user("n")]});
    assert!(
        post(&c, &sim, &ns, None)
            .await
            .json::<Value>()
            .await
            .is_ok()
    );
    assert!(post(&c, &sim, &ns, None).await.bytes().await.is_err());
    assert_eq!(sim.state().requests_received(), 8);
    sim.shutdown().await;
}

#[tokio::test]
async fn determinism_for_the_same_seed() {
    let c = client();
    let body =
        json!({"model": "inferscope-sim", "messages": [user("tell me something")], "stream": true});
    let mut texts = Vec::new();
    for seed in [7u64, 7, 8] {
        let sim = start(SimConfig {
            seed,
            ..SimConfig::zero_delay()
        })
        .await;
        let (ev, _) = stream_text(&c, &sim, &body).await;
        let (ev_again, _) = stream_text(&c, &sim, &body).await;
        assert_eq!(
            content_of(&ev),
            content_of(&ev_again),
            "same sim, same prompt"
        );
        texts.push(content_of(&ev));
        sim.shutdown().await;
    }
    assert_eq!(texts[0], texts[1], "same seed, same text");
    assert_ne!(texts[0], texts[2], "another seed, another text");
    // A request's own seed overrides the simulator's.
    let sim = start(SimConfig::zero_delay()).await;
    let mut seeded = body.clone();
    seeded["seed"] = json!(7);
    let (ev, _) = stream_text(&c, &sim, &seeded).await;
    assert_eq!(content_of(&ev), texts[0]);
    sim.shutdown().await;
}

/// The body bytes received before the stream failed, and whether it failed.
async fn read_until_error(r: reqwest::Response) -> (String, bool) {
    use futures_util::StreamExt;
    let mut s = r.bytes_stream();
    let mut buf = String::new();
    while let Some(chunk) = s.next().await {
        match chunk {
            Ok(b) => buf.push_str(std::str::from_utf8(&b).unwrap()),
            Err(_) => return (buf, true),
        }
    }
    (buf, false)
}

/// Arrival of the first content event, relative to the request send (lower bounds only).
async fn ttft_of(c: &reqwest::Client, sim: &SimHandle, body: &Value) -> (Duration, u64) {
    use futures_util::StreamExt;
    let t0 = Instant::now();
    let r = post(c, sim, body, None).await;
    let mut s = r.bytes_stream();
    let mut buf = String::new();
    let mut ttft = None;
    while let Some(chunk) = s.next().await {
        buf.push_str(std::str::from_utf8(&chunk.unwrap()).unwrap());
        if ttft.is_none() && buf.contains("\"delta\":{\"content\":\"Answer:\"}") {
            ttft = Some(t0.elapsed());
        }
    }
    let ev = json_events(&sse_data(&buf));
    let cached = usage_of(&ev).unwrap()["prompt_tokens_details"]["cached_tokens"]
        .as_u64()
        .unwrap();
    (ttft.expect("content arrived"), cached)
}

#[tokio::test]
async fn ttft_grows_with_uncached_prompt_tokens() {
    let sim = start(SimConfig {
        ttft_base_ms: 10,
        prefill_us_per_token: 500,
        itl_ms: 1,
        itl_jitter_ms: 0,
        default_output_tokens: 2,
        ..SimConfig::default()
    })
    .await;
    let c = client();
    let body = json!({"model": "inferscope-sim", "messages": [user(&"context ".repeat(400))],
        "stream": true, "stream_options": {"include_usage": true}});
    // ~806 prompt tokens: cold TTFT ≥ 10 ms + 806 × 0.5 ms ≈ 413 ms.
    let (cold, cached_cold) = ttft_of(&c, &sim, &body).await;
    assert_eq!(cached_cold, 0);
    assert!(cold >= Duration::from_millis(400), "{cold:?}");
    // The same prompt again: all but the last partial block cached.
    let (warm, cached_warm) = ttft_of(&c, &sim, &body).await;
    assert!(cached_warm >= 784, "{cached_warm}");
    assert!(warm >= Duration::from_millis(10), "{warm:?}");
    assert!(warm < cold, "warm {warm:?} vs cold {cold:?}");
    sim.shutdown().await;
}

#[tokio::test]
async fn itl_spreads_tokens_over_time() {
    use futures_util::StreamExt;
    let sim = start(SimConfig {
        ttft_base_ms: 0,
        prefill_us_per_token: 0,
        itl_ms: 30,
        itl_jitter_ms: 0,
        default_output_tokens: 4,
        ..SimConfig::default()
    })
    .await;
    let c = client();
    let body = json!({"model": "inferscope-sim", "messages": [user("slowly")], "stream": true});
    let r = post(&c, &sim, &body, None).await;
    let mut s = r.bytes_stream();
    let (mut first, mut last, mut reads_with_content) = (None, None, 0);
    let mut buf = String::new();
    while let Some(chunk) = s.next().await {
        let text = String::from_utf8(chunk.unwrap().to_vec()).unwrap();
        if text.contains("\"content\":\"") && !text.contains("\"content\":\"\"") {
            reads_with_content += 1;
            first.get_or_insert_with(Instant::now);
            last = Some(Instant::now());
        }
        buf.push_str(&text);
    }
    // 5 tokens ("Answer:" + 4 filler), 30 ms apart (120 ms first to last); half of it as a
    // loose lower bound that scheduling delays cannot break.
    assert_eq!(
        content_of(&json_events(&sse_data(&buf))).split(' ').count(),
        5
    );
    assert!(reads_with_content >= 2, "tokens are not all in one read");
    assert!(last.unwrap() - first.unwrap() >= Duration::from_millis(60));
    sim.shutdown().await;
}

#[tokio::test]
async fn simulated_power_and_energy_follow_activity() {
    let sim = start(SimConfig {
        ttft_base_ms: 400,
        itl_ms: 0,
        itl_jitter_ms: 0,
        ..SimConfig::default()
    })
    .await;
    let state = sim.state();
    let idle = state.config().power.idle_mw;
    assert_eq!(state.power_mw(), idle);
    let e0 = state.energy_mj();
    let c = client();
    let url = format!("{}/chat/completions", sim.base_url());
    let req = tokio::spawn(async move {
        c.post(url)
            .json(&json!({"model": "inferscope-sim", "messages": [user("p")], "stream": true}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    // Wait (logically) until the request is in prefill.
    let mut saw = 0;
    for _ in 0..400 {
        saw = saw.max(state.power_mw());
        if saw > idle {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(
        saw,
        idle + state.config().power.prefill_mw,
        "one active prefill"
    );
    assert!(req.await.unwrap().ends_with("data: [DONE]\n\n"));
    assert_eq!(state.power_mw(), idle);
    let e1 = state.energy_mj();
    // At least idle power over the ≥ 400 ms prefill: 60 W × 0.4 s = 24 J.
    assert!(e1 - e0 >= 24_000, "{}", e1 - e0);
    let text = state.render_metrics();
    assert!(text.contains("inferscope_sim:energy_millijoules_total"));
    sim.shutdown().await;
}

#[tokio::test]
async fn waiting_gauge_counts_requests_beyond_max_num_seqs() {
    let sim = start(SimConfig {
        ttft_base_ms: 300,
        max_num_seqs: 1,
        ..SimConfig::default()
    })
    .await;
    let state = sim.state();
    let mut tasks = Vec::new();
    for _ in 0..2 {
        let c = client();
        let url = format!("{}/chat/completions", sim.base_url());
        tasks.push(tokio::spawn(async move {
            c.post(url)
                .json(&json!({"model": "inferscope-sim", "messages": [user("q")]}))
                .send()
                .await
                .unwrap()
                .status()
        }));
    }
    let mut seen = (0, 0);
    for _ in 0..2000 {
        let m = state.metrics();
        if m.num_requests_running == 1 && m.num_requests_waiting == 1 {
            seen = (1, 1);
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(seen, (1, 1), "one running, one waiting");
    for t in tasks {
        assert_eq!(t.await.unwrap(), 200);
    }
    let m = state.metrics();
    assert_eq!((m.num_requests_running, m.num_requests_waiting), (0, 0));
    sim.shutdown().await;
}

#[tokio::test]
async fn shutdown_stops_serving() {
    let sim = start(SimConfig::zero_delay()).await;
    let addr = sim.addr();
    let c = client();
    assert_eq!(
        c.get(format!("http://{addr}/health"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    sim.shutdown().await;
    let fresh = client();
    assert!(
        fresh
            .get(format!("http://{addr}/health"))
            .send()
            .await
            .is_err()
    );
}

/// With every delay zero the request path never touches a timer: the simulator serves a
/// streamed and a non-streamed request on a runtime whose time driver is disabled (any
/// sleep would panic there). The client is a raw HTTP/1.1 exchange for the same reason.
#[test]
fn zero_delay_path_never_sleeps() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    rt.block_on(async {
        let sim = start(SimConfig::zero_delay()).await;
        for stream in [true, false] {
            let body = json!({"model": "inferscope-sim", "messages": [user("no timers")],
                "stream": stream, "stream_options": {"include_usage": true}})
            .to_string();
            let mut tcp = tokio::net::TcpStream::connect(sim.addr()).await.unwrap();
            let req = format!(
                "POST /v1/chat/completions HTTP/1.1\r\nhost: sim\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            tcp.write_all(req.as_bytes()).await.unwrap();
            let mut resp = String::new();
            tcp.read_to_string(&mut resp).await.unwrap();
            assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
            if stream {
                assert!(resp.contains("data: [DONE]"), "{resp}");
            } else {
                assert!(resp.contains("\"finish_reason\":\"stop\""), "{resp}");
            }
        }
        drop(sim);
    });
}

/// One raw HTTP/1.1 exchange (`connection: close`): the response head and body as text.
async fn raw_exchange(addr: std::net::SocketAddr, head: &str, body: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tcp.write_all(head.as_bytes()).await.unwrap();
    // The server may answer (and close) before it has read the whole body.
    let _ = tcp.write_all(body).await;
    let mut resp = Vec::new();
    let _ = tcp.read_to_end(&mut resp).await;
    String::from_utf8_lossy(&resp).into_owned()
}

/// The routing answers the OpenAI-compatible clients rely on: an unknown path is 404 with
/// an empty body, a known path with another method 405 with `allow`, a `GET` route
/// answers `HEAD` with its headers and no body, and `/metrics` has the Prometheus type.
#[tokio::test]
async fn unknown_paths_methods_and_head_are_answered_by_status() {
    let sim = start(SimConfig::zero_delay()).await;
    let c = client();
    let base = format!("http://{}", sim.addr());
    let r = c.get(format!("{base}/v2/models")).send().await.unwrap();
    assert_eq!(r.status(), 404);
    assert!(r.bytes().await.unwrap().is_empty());
    let r = c
        .get(format!("{base}/v1/chat/completions"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(r.headers()["allow"], "POST");
    for path in ["/v1/models", "/metrics", "/health"] {
        let r = c.post(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status(), 405, "{path}");
        assert_eq!(r.headers()["allow"], "GET,HEAD", "{path}");
    }
    let r = c.head(format!("{base}/v1/models")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/json");
    let r = c.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(
        r.headers()["content-type"],
        "text/plain; version=0.0.4; charset=utf-8"
    );
    let r = c.get(format!("{base}/health")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-length"], "0");
    // No chat request reached the engine.
    assert_eq!(sim.state().requests_received(), 0);
}

/// A request body over 64 MiB is refused 413 before the engine sees it.
#[tokio::test]
async fn request_bodies_over_64_mib_are_refused_413() {
    let sim = start(SimConfig::zero_delay()).await;
    let len = 64 * 1024 * 1024 + 1;
    let head = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: sim\r\ncontent-type: application/json\r\ncontent-length: {len}\r\nconnection: close\r\n\r\n"
    );
    let resp = raw_exchange(sim.addr(), &head, &vec![b' '; len]).await;
    assert!(resp.starts_with("HTTP/1.1 413"), "{resp}");
    assert!(resp.ends_with("Failed to buffer the request body: length limit exceeded"));
    assert_eq!(sim.state().requests_received(), 0);
}

/// Shutdown is graceful: a stream in flight when it starts ends normally (`[DONE]`), and
/// the listener is closed at once.
#[tokio::test]
async fn shutdown_lets_a_stream_in_flight_finish() {
    let cfg = SimConfig {
        ttft_base_ms: 50,
        itl_ms: 20,
        itl_jitter_ms: 0,
        ..SimConfig::zero_delay()
    };
    let sim = start(cfg).await;
    let addr = sim.addr();
    let c = client();
    let body = json!({"model": "inferscope-sim", "messages": [user("in flight")],
        "stream": true, "max_tokens": 8});
    let r = post(&c, &sim, &body, None).await;
    assert_eq!(r.status(), 200);
    let stop = tokio::spawn(sim.shutdown());
    let text = r.text().await.unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"), "{text}");
    stop.await.unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
