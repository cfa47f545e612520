//! Issue 30 ("Hardening, third pass"): regression tests of the items checked through the
//! binary — credentials in endpoint URLs (item 2), secrets in error snippets (item 4),
//! many-error suites (item 5). Item 1 is in `serve_hostile.rs`, item 7 in `client.rs`,
//! items 9 and 10 beside their code (telemetry, attribution, serve).

use crate::support;

use std::path::Path;
use std::process::Output;

use support::{describe, run, text, write};

/// `check FILE` (exit 2 expected) on a suite written to `dir`; stdout and stderr together.
fn check(dir: &Path, name: &str, body: &str) -> String {
    write(dir, name, body);
    let o = run(dir, &["check", name]);
    assert_eq!(o.status.code(), Some(2), "{name}: {}", describe(&o));
    all(&o)
}

fn all(o: &Output) -> String {
    let (out, err) = text(o);
    format!("{out}{err}")
}

const JOB: &str = "[[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [1]\n";

/// Item 2: a password holding an unencoded `/`, `?` or `#`, a space, a quote, or behind a
/// bad scheme, is refused and never shown — in the suite's `endpoint`, in
/// `telemetry.metrics_url`, and in `--endpoint`.
#[test]
fn endpoint_credentials_are_refused_and_never_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let urls = [
        "http://user:PW1/x@127.0.0.1:9/v1",
        "http://user:PW2?x@127.0.0.1:9/v1",
        "http://user:PW3#x@127.0.0.1:9/v1",
        "http://user:PW4 x@127.0.0.1:9/v1",
        "http://user:PW5\\\"x@127.0.0.1:9/v1",
        "htp://user:PW6@127.0.0.1:9/v1",
        "user:PW7@127.0.0.1:9/v1",
    ];
    for (i, url) in urls.iter().enumerate() {
        let pw = format!("PW{}", i + 1);
        let out = check(
            tmp.path(),
            &format!("e{i}.toml"),
            &format!("name = \"x\"\nendpoint = \"{url}\"\nmodel = \"m\"\n{JOB}"),
        );
        assert!(out.contains(&format!("e{i}.toml:2:")), "{url}: {out}");
        assert!(out.contains("credentials"), "{url}: {out}");
        assert!(!out.contains(&pw), "{url}: echoed\n{out}");
        let out = check(
            tmp.path(),
            &format!("m{i}.toml"),
            &format!("name = \"x\"\nmodel = \"m\"\n[telemetry]\nmetrics_url = \"{url}\"\n{JOB}"),
        );
        assert!(!out.contains(&pw), "metrics_url {url}: echoed\n{out}");
    }
    write(
        tmp.path(),
        "ok.toml",
        &format!("name = \"x\"\nmodel = \"m\"\n{JOB}"),
    );
    for (i, url) in urls.iter().enumerate() {
        let url = url.replace("\\\"", "\"");
        let o = run(tmp.path(), &["run", "ok.toml", "--endpoint", &url]);
        assert_eq!(o.status.code(), Some(2), "{url}: {}", describe(&o));
        assert!(
            !all(&o).contains(&format!("PW{}", i + 1)),
            "--endpoint {url}: {}",
            describe(&o)
        );
    }
}

/// Item 4: a key pasted as the value of `api_key_env`, and the continuation lines of a
/// multi-line value under an unknown key, are never shown in a snippet.
#[test]
fn snippets_never_show_credential_like_values() {
    let tmp = tempfile::tempdir().unwrap();
    let out = check(
        tmp.path(),
        "env.toml",
        &format!("name = \"x\"\nmodel = \"m\"\napi_key_env = \"sk-proj-Q7pX2mZ9kL4vB8\"\n{JOB}"),
    );
    assert!(out.contains("env.toml:3:"), "{out}");
    assert!(!out.contains("Q7pX2mZ9kL4vB8"), "echoed\n{out}");
    let out = check(
        tmp.path(),
        "multi.toml",
        &format!(
            "name = \"x\"\nmodel = \"m\"\nmystery = \"\"\"\nhunter2 is the password\nand so on\n\"\"\"\n{JOB}"
        ),
    );
    assert!(out.contains("multi.toml:3:1"), "{out}");
    assert!(
        !out.contains("hunter2") && !out.contains("and so on"),
        "echoed\n{out}"
    );
    // A credential-looking word in a known key's value is masked in its snippet too.
    let out = check(
        tmp.path(),
        "word.toml",
        &format!(
            "name = \"x\"\nmodel = \"m\"\nengine = 7\nnote_for_me = \"ghp_0123456789abcdefABCD\"\n{JOB}"
        ),
    );
    assert!(!out.contains("ghp_0123456789"), "echoed\n{out}");
}

/// Secrets in a suite error's message and snippet: a type error quoted the bad string
/// (`invalid type: string "sk-…"`) under its masked snippet, and an unknown variant or a
/// duplicate name did too; a secret-looking key inside an inline table
/// (`env = { OPENAI_API_KEY = "…" }`) and the value after `--api-key` in an array were
/// shown in the snippet. `check` and `run --message-format json` show none of them, and
/// the message still names the field and what it expects.
#[test]
fn suite_errors_never_echo_secrets_in_messages_or_structured_values() {
    let tmp = tempfile::tempdir().unwrap();
    let wrong_type = |v: &str| {
        format!(
            "name=\"s\"\n[[jobs]]\nname=\"c\"\nkind=\"context\"\nsizes=[8]\nmax_tokens = \"{v}\"\n"
        )
    };
    let swe = |command: &str, line: &str| {
        format!(
            "name=\"s\"\n[[jobs]]\nname=\"h\"\nkind=\"swe\"\ncommand={command}\n{line}timeout_s = -1\n"
        )
    };
    let cases = [
        (
            wrong_type("sk-proj-SECRETabc123def456ghi789"),
            "SECRETabc123def456ghi789",
            ":6:14: wrong type for `jobs[0].max_tokens`: invalid type: a string (32 characters), \
             expected a non-negative integer",
        ),
        (
            wrong_type("Zq9xK2mP7vL4nR8t"),
            "Zq9xK2mP7vL4nR8t",
            ":6:14: wrong type for `jobs[0].max_tokens`: invalid type: a string (16 characters)",
        ),
        (
            "name=\"s\"\n[[jobs]]\nname=\"c\"\nkind=\"context\"\nsizes=[\"Bearer SECRETxyz\"]\n"
                .to_string(),
            "SECRETxyz",
            ":5:8: wrong type for `jobs[0].sizes[0]`: invalid type: a string (16 characters)",
        ),
        (
            "name=\"s\"\n[[jobs]]\nname=\"c\"\nkind=\"sk-proj-SECRETabc123def456ghi789\"\nsizes=[8]\n"
                .to_string(),
            "SECRETabc123def456ghi789",
            ":4:6: invalid value for `jobs[0].kind`",
        ),
        (
            swe("[\"x\"]", "env = { OPENAI_API_KEY = \"SECRETenv123\" }\n"),
            "SECRETenv123",
            ":7:13: `jobs[0].timeout_s` must be a positive number of seconds",
        ),
        (
            swe("[\"x\"]", "env = { token = \"SECRETenv124\" }\n"),
            "SECRETenv124",
            ":7:13:",
        ),
        (
            swe("[\"x\"]", "env = { GITHUB_TOKEN = \"SECRETenv125\" }\n"),
            "SECRETenv125",
            ":7:13:",
        ),
        (
            swe("[\"x\"]", "env = { DB_PASSWORD = \"SECRETenv126\" }\n"),
            "SECRETenv126",
            ":7:13:",
        ),
        (
            swe("[\"x\"]", "env = { ANTHROPIC_API_KEY = \"SECRETenv127\" }\n"),
            "SECRETenv127",
            ":7:13:",
        ),
        (
            swe("[\"x\",\"--api-key\",\"SECRETarg123\"]", ""),
            "SECRETarg123",
            ":6:13: `jobs[0].timeout_s` must be a positive number of seconds",
        ),
        (
            swe("[\n  \"x\",\n  \"--token\",\n  \"SECRETarg124\",\n  5,\n]", ""),
            "SECRETarg124",
            ":9:3: wrong type for `jobs[0].command[3]`",
        ),
    ];
    for (i, (body, secret, want)) in cases.iter().enumerate() {
        let name = format!("leak{i}.toml");
        write(tmp.path(), &name, body);
        for args in [
            vec!["check", name.as_str()],
            vec!["run", name.as_str(), "--message-format", "json"],
        ] {
            let o = run(tmp.path(), &args);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {}", describe(&o));
            let out = all(&o);
            assert!(
                out.contains(&format!("{name}{want}")),
                "{args:?}: {want}\n{out}"
            );
            assert!(!out.contains(secret), "{args:?}: {secret} echoed\n{out}");
        }
    }
}

/// Item 5: 8,000 unknown keys are reported (the old cost was errors × file size: over
/// 90 s); at most 50 are printed, with the count of the rest and the total. Timing is in
/// `benchmarks/suite_errors.rs`, not here.
#[test]
fn many_errors_are_capped_with_the_count_of_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let mut body = String::from("name = \"x\"\nmodel = \"m\"\n");
    for i in 0..8000 {
        body.push_str(&format!("unknown_key_{i:05} = {i}\n"));
    }
    body.push_str(JOB);
    let out = check(tmp.path(), "many.toml", &body);
    let shown = out.matches("error: many.toml:").count();
    assert_eq!(shown, 50, "{}", &out[..out.len().min(4000)]);
    assert!(
        out.contains("and 7950 more errors in many.toml not shown"),
        "{}",
        &out[out.len().saturating_sub(2000)..]
    );
    assert!(out.contains("8000 errors in many.toml"));
    assert!(out.len() < 64 << 10, "{} bytes printed", out.len());
}

/// `GET target` with a bearer token and `Connection: close`: the whole answer, as text.
fn get_bearer(addr: std::net::SocketAddr, target: &str, token: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

/// The API key of item 3's runs: a server echoes it back in every string it sends.
const KEY: &str = "sk-echo-0123456789-KEYVALUE";

/// One streamed answer that names the key as its `model` and `finish_reason`, calling the
/// tool `lookup` with the key as the call's id when `tool` is set.
fn echoing_events(tool: bool) -> Vec<String> {
    let delta = if tool {
        format!(
            r#"{{"tool_calls":[{{"index":0,"id":"{KEY}","type":"function","function":{{"name":"lookup","arguments":"{{}}"}}}}]}}"#
        )
    } else {
        r#"{"role":"assistant","content":"an answer"}"#.to_string()
    };
    vec![
        format!(r#"{{"model":"{KEY}","choices":[{{"index":0,"delta":{delta}}}]}}"#),
        format!(
            r#"{{"model":"{KEY}","choices":[{{"index":0,"delta":{{}},"finish_reason":"{KEY}"}}]}}"#
        ),
        format!(
            r#"{{"model":"{KEY}","choices":[],"usage":{{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}}}"#
        ),
        "[DONE]".to_string(),
    ]
}

/// Every file under `dir` and every `report --format` rendering of the run in `dir`: none
/// holds `KEY`.
fn assert_no_key(cwd: &Path, run_dir: &Path) {
    for (p, bytes) in support::files_under(run_dir) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the API key is in {}",
            p.display()
        );
    }
    for format in ["markdown", "junit", "json", "html", "otlp-json", "perfetto"] {
        let o = run(
            cwd,
            &["report", run_dir.to_str().unwrap(), "--format", format],
        );
        assert_eq!(o.status.code(), Some(0), "{format}: {}", describe(&o));
        assert!(
            !all(&o).contains(KEY),
            "the API key is in the {format} report"
        );
    }
}

/// Item 3: a server that echoes the API key as the response's `model`, its
/// `finish_reason`, a tool call's id and a `/v1/models` id: the key is in no artifact, no
/// report format, no console line and no dashboard answer. The test first proves the key
/// was echoed (it reached the client in each place).
#[test]
fn an_api_key_the_server_echoes_is_stored_nowhere() {
    use support::{Hostile, ModelsReply, Received, Reply};
    let server = Hostile::start_with_models(
        ModelsReply::List(vec!["hostile-model".into(), KEY.into()]),
        |r: &Received| {
            let first_turn = r.request_id().ends_with(".llm0");
            Reply::Events(echoing_events(
                r.request_id().contains("agent") && first_turn,
            ))
        },
    );
    let cwd = tempfile::tempdir().unwrap();
    let suite = format!(
        "name = \"echo\"\nendpoint = \"{}\"\nmodel = \"hostile-model\"\napi_key_env = \"ECHO_KEY\"\n\
         capture_timeline = true\n[telemetry]\nmetrics = false\n\
         [[tools]]\nname = \"lookup\"\ndescription = \"d\"\nparameters = {{ type = \"object\" }}\n\
         response_file = \"tools/r.json\"\n\
         [[jobs]]\nname = \"ctx\"\nkind = \"context\"\nsizes = [8]\nmax_tokens = 8\n\
         [[jobs]]\nname = \"agent\"\nkind = \"agentic\"\nmode = \"model\"\ntask = \"t\"\n\
         tools = [\"lookup\"]\nmax_steps = 3\nmax_tokens = 8\n",
        server.base_url()
    );
    write(cwd.path(), "fixtures/tools/r.json", "{\"found\": true}");
    write(cwd.path(), "echo.toml", &suite);
    let out = cwd.path().join("run");
    let junit = cwd.path().join("junit.xml");
    let o = support::command(cwd.path())
        .args(["run", "echo.toml", "--out", out.to_str().unwrap()])
        .args(["--junit", junit.to_str().unwrap()])
        .env("ECHO_KEY", KEY)
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 100)), "{}", describe(&o));
    assert!(
        !all(&o).contains(KEY),
        "the API key on the console\n{}",
        describe(&o)
    );
    // The key was in play: sent as the bearer token, and echoed in every place.
    let sent = server.chat_requests();
    assert!(sent.len() >= 3, "{}", sent.len());
    let r = support::report(&out);
    let steps: Vec<&serde_json::Value> = r["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|j| j["trajectories"].as_array().unwrap())
        .flat_map(|t| t["steps"].as_array().unwrap())
        .collect();
    let redacted = |f: &str| steps.iter().filter(|s| s[f] == "[redacted]").count();
    assert!(redacted("response_model") >= 3, "{r:#}");
    assert!(redacted("finish_reason") >= 3, "{r:#}");
    assert!(redacted("tool_call_id") >= 1, "{r:#}");
    assert!(!std::fs::read_to_string(&junit).unwrap().contains(KEY));
    assert_no_key(cwd.path(), &out);

    // The dashboard API's answers.
    let root = cwd.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::rename(&out, root.join("r1")).unwrap();
    let srv = support::ServeThread::start(&root, "dashboard-token-0123456789", Default::default());
    for target in [
        "/v1/runs",
        "/v1/runs/r1",
        "/v1/benchmark-timeline?run_id=r1",
    ] {
        let body = get_bearer(srv.addr, target, "dashboard-token-0123456789");
        assert!(body.contains("r1"), "{target}: {body}");
        assert!(!body.contains(KEY), "the API key in {target}");
    }

    // A /v1/models list that does not list the model, with the key among its ids: the
    // setup error names the listed models, the key redacted.
    let listing =
        Hostile::start_with_models(ModelsReply::List(vec![KEY.into()]), |_: &Received| {
            Reply::Ok("x".into())
        });
    let suite = suite.replace(&server.base_url(), &listing.base_url());
    write(cwd.path(), "listing.toml", &suite);
    let out = cwd.path().join("run2");
    let o = support::command(cwd.path())
        .args(["run", "listing.toml", "--out", out.to_str().unwrap()])
        .env("ECHO_KEY", KEY)
        .output()
        .unwrap();
    assert!(
        !all(&o).contains(KEY),
        "the API key on the console\n{}",
        describe(&o)
    );
    let report = std::fs::read_to_string(out.join("report.json")).unwrap();
    assert!(report.contains("listed_models"), "{report}");
    assert!(report.contains("[redacted]"), "{report}");
    assert_no_key(cwd.path(), &out);
}
