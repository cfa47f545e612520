//! Defects found by the fresh review of issues 29, 30 and 34 (on the built binary): an
//! endpoint URL whose query or fragment carries a key, and tampered shard directories
//! that `merge` still accepted.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::{describe, run};

/// Issue 30 item 2 (a key in the URL's query): an endpoint URL with a query or fragment
/// was accepted, requested as `…/v1?api-key=K/models`, and echoed whole on the console,
/// in `report.json` and JUnit. It is refused (exit 2, nothing sent), from the flag and
/// from the suite, and neither the error nor the suite snippet shows the query.
#[test]
fn an_endpoint_url_with_a_query_or_fragment_is_refused_and_never_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let trip = support::Tripwire::new();
    let base = trip.base_url();
    support::write(
        cwd,
        "s.toml",
        "name = \"s\"\nmodel = \"m\"\n[[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [16]\n",
    );
    for url in [
        format!("{base}?api-key=QSECRET1"),
        format!("{base}/?sig=QSECRET2&x=1"),
        format!("{base}#QSECRET3"),
        format!("http://u:QSECRET4@{}/v1?key=QSECRET5", trip.addr),
    ] {
        let out = cwd.join("out");
        let junit = cwd.join("j.xml");
        let o = run(
            cwd,
            &[
                "run",
                "s.toml",
                "--endpoint",
                &url,
                "--out",
                out.to_str().unwrap(),
                "--junit",
                junit.to_str().unwrap(),
            ],
        );
        let all = describe(&o);
        assert_eq!(o.status.code(), Some(2), "{url}: {all}");
        assert!(!all.contains("QSECRET"), "{url}: {all}");
        assert!(!out.exists() && !junit.exists(), "{url}: {all}");

        // The same URL in the suite: `check` refuses it; error and snippet hide the query.
        let text = format!(
            "name = \"t\"\nendpoint = \"{url}\"\nmodel = \"m\"\n\
             [[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [16]\n"
        );
        support::write(cwd, "t.toml", &text);
        let o = run(cwd, &["check", "t.toml"]);
        let all = describe(&o);
        assert_eq!(o.status.code(), Some(2), "{url}: {all}");
        assert!(!all.contains("QSECRET"), "{url}: {all}");
        assert!(all.contains("endpoint"), "{url}: {all}");
    }
    assert_eq!(trip.accepted(), 0, "nothing is sent");
    // A plain base URL (trailing slash) is still accepted by `check`.
    support::write(
        cwd,
        "ok.toml",
        &format!(
            "name = \"ok\"\nendpoint = \"{base}/\"\nmodel = \"m\"\n\
             [[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [16]\n"
        ),
    );
    let o = run(cwd, &["check", "ok.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}

/// A closed-loop load job with warm-up.
const LOAD: &str = "name = \"o\"\nseed = 3\n\
    [telemetry]\nsample_period_ms = 20\nmetrics_period_ms = 50\n\
    [[jobs]]\nname = \"load\"\nkind = \"context\"\nsizes = [16, 64]\nmax_tokens = 6\n\
    concurrency = 2\ncount = 12\nwarmup = 3\n";

/// Two `--shard` runs of `LOAD` on the simulator, in `dir/s1` and `dir/s2`.
fn two_shards(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    support::write(dir, "o.toml", LOAD);
    let dirs = (dir.join("s1"), dir.join("s2"));
    for (k, d) in [(1, &dirs.0), (2, &dirs.1)] {
        let o = run(
            dir,
            &[
                "run",
                "o.toml",
                "--shard",
                &format!("{k}/2"),
                "--out",
                d.to_str().unwrap(),
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    }
    dirs
}

fn merge(cwd: &Path, dirs: &[&Path], out: &Path) -> std::process::Output {
    let mut args = vec!["merge".to_string()];
    args.extend(dirs.iter().map(|d| d.display().to_string()));
    args.extend(["--out".into(), out.display().to_string()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    run(cwd, &refs)
}

fn edit_report(dir: &Path, f: impl FnOnce(&mut Value)) {
    let p = dir.join("report.json");
    let mut v: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&p, serde_json::to_vec(&v).unwrap()).unwrap();
}

/// `(warm-up, other)` request records of a run directory's `requests.jsonl`.
fn warm_and_measured(dir: &Path) -> (usize, usize) {
    let text = std::fs::read_to_string(dir.join("requests.jsonl")).unwrap();
    let recs: Vec<Value> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|r: &Value| r.get("u").is_none())
        .collect();
    let warm = recs.iter().filter(|r| r["wu"] == Value::Bool(true)).count();
    (warm, recs.len() - warm)
}

/// Issue 29 items 4 and 9: `merge` refuses a shard whose `shard.anchor_read_ns` is absurd
/// (u64::MAX made every merged time "uncertain by 18446744073709552 µs", exit 0), and a
/// shard whose `requests.jsonl` lost its warm-up marks (digest and size re-stated) no
/// longer makes a merged `requests.jsonl` that disagrees with the merged report: the
/// records the report excludes as warm-up are marked `wu` in the merged file.
#[test]
fn merge_refuses_an_absurd_read_bracket_and_marks_every_warm_up_it_excludes() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let (s1, s2) = two_shards(cwd);

    let read = cwd.join("read");
    support::copy_dir(&s2, &read);
    edit_report(&read, |v| {
        v["shard"]["anchor_read_ns"] = Value::from(u64::MAX);
    });
    let out = cwd.join("m-read");
    let o = merge(cwd, &[&s1, &read], &out);
    let all = describe(&o);
    assert_eq!(o.status.code(), Some(2), "{all}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("field `shard.anchor_read_ns`"), "{all}");
    assert!(
        err.contains(&format!("shard 2 ({})", read.display())),
        "{all}"
    );
    assert!(!out.join("report.json").exists(), "{all}");

    // Shard 2's records without their `wu` marks; report.json's digest and size follow.
    let bare = cwd.join("bare");
    support::copy_dir(&s2, &bare);
    let text = std::fs::read_to_string(bare.join("requests.jsonl")).unwrap();
    let stripped = text.replace(",\"wu\":true", "");
    assert_ne!(stripped, text, "shard 2 has warm-up records");
    std::fs::write(bare.join("requests.jsonl"), &stripped).unwrap();
    edit_report(&bare, |v| {
        use sha2::Digest;
        let f = &mut v["requests_file"];
        let digest = hex::encode(sha2::Sha256::digest(stripped.as_bytes()));
        let old = f["sha256"].as_str().unwrap().to_string();
        f["sha256"] = Value::from(match old.strip_prefix("sha256:") {
            Some(_) => format!("sha256:{digest}"),
            None => digest,
        });
        f["bytes"] = Value::from(stripped.len());
    });
    let (good, tampered) = (cwd.join("m-good"), cwd.join("m-bare"));
    let o = merge(cwd, &[&s1, &s2], &good);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let o = merge(cwd, &[&s1, &bare], &tampered);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    for d in [&good, &tampered] {
        let r = support::report(d);
        let job = support::job(&r, "o::load");
        let excluded: Vec<&str> = job["load"]["warmup_requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap())
            .collect();
        let (warm, measured) = warm_and_measured(d);
        assert_eq!(warm, excluded.len(), "{}", d.display());
        assert_eq!(
            Some(measured as u64),
            job["stats"]["requests"].as_u64(),
            "{}",
            d.display()
        );
    }
}

/// The API key of the fragment test.
const KEY: &str = "sk-echo-0123456789-KEYVALUE";

/// Whether `s` holds any 12-byte piece of `KEY` (a third of it, at least 12 bytes, is
/// what the redaction recognises as a fragment).
fn holds_key_piece(s: &str) -> Option<&'static str> {
    (0..=KEY.len() - 12)
        .map(|i| &KEY[i..i + 12])
        .find(|p| s.contains(p))
}

/// Pieces of the key: a server that echoes the API key only in part
/// (the tool call's id streamed in two pieces, as deltas may carry it; a `model` and a
/// `finish_reason` with a byte cut off) had the piece stored whole in `report.json` and
/// every report rendering (`tool_call_id: "0123456789-KEYVALUE"`): exact-match redaction
/// missed it. Runs of 12-byte pieces of the key are redacted too.
#[test]
fn pieces_of_an_api_key_the_server_echoes_are_stored_nowhere() {
    use support::{Hostile, ModelsReply, Received, Reply};
    let server = Hostile::start_with_models(
        ModelsReply::List(vec!["hostile-model".into()]),
        |r: &Received| {
            let model = &KEY[1..];
            let finish = &KEY[..KEY.len() - 1];
            let first = if r.request_id().ends_with(".llm0") {
                vec![
                    format!(
                        r#"{{"model":"{model}","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"{}","type":"function","function":{{"name":"lookup","arguments":""}}}}]}}}}]}}"#,
                        &KEY[..8]
                    ),
                    format!(
                        r#"{{"model":"{model}","choices":[{{"index":0,"delta":{{"tool_calls":[{{"index":0,"id":"{}","function":{{"arguments":"{{}}"}}}}]}}}}]}}"#,
                        &KEY[8..]
                    ),
                ]
            } else {
                vec![format!(
                    r#"{{"model":"{model}","choices":[{{"index":0,"delta":{{"role":"assistant","content":"done"}}}}]}}"#
                )]
            };
            let mut events = first;
            events.push(format!(
                r#"{{"model":"{model}","choices":[{{"index":0,"delta":{{}},"finish_reason":"{finish}"}}]}}"#
            ));
            events.push(format!(
                r#"{{"model":"{model}","choices":[],"usage":{{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}}}"#
            ));
            events.push("[DONE]".into());
            Reply::Events(events)
        },
    );
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    support::write(cwd, "fixtures/tools/r.json", "{\"found\": true}");
    support::write(
        cwd,
        "echo.toml",
        &format!(
            "name = \"echo\"\nendpoint = \"{}\"\nmodel = \"hostile-model\"\n\
             api_key_env = \"ECHO_KEY\"\ncapture_timeline = true\n[telemetry]\nmetrics = false\n\
             [[tools]]\nname = \"lookup\"\ndescription = \"d\"\nparameters = {{ type = \"object\" }}\n\
             response_file = \"tools/r.json\"\n\
             [[jobs]]\nname = \"agent\"\nkind = \"agentic\"\nmode = \"model\"\ntask = \"t\"\n\
             tools = [\"lookup\"]\nmax_steps = 3\nmax_tokens = 8\n",
            server.base_url()
        ),
    );
    let out = cwd.join("run");
    let junit = cwd.join("junit.xml");
    let o = support::command(cwd)
        .args(["run", "echo.toml", "--out", out.to_str().unwrap()])
        .args(["--junit", junit.to_str().unwrap()])
        .env("ECHO_KEY", KEY)
        .output()
        .unwrap();
    let all = describe(&o);
    assert!(matches!(o.status.code(), Some(0 | 100)), "{all}");
    assert_eq!(holds_key_piece(&all), None, "console\n{all}");
    // The pieces were in play: the tool was called with the streamed id.
    assert!(server.chat_requests().len() >= 2, "{all}");
    let r = support::report(&out);
    assert!(r.to_string().contains("[redacted]"), "{r:#}");
    let mut texts: Vec<(String, String)> = support::files_under(&out)
        .into_iter()
        .map(|(p, b)| {
            (
                p.display().to_string(),
                String::from_utf8_lossy(&b).into_owned(),
            )
        })
        .collect();
    texts.push(("junit".into(), std::fs::read_to_string(&junit).unwrap()));
    for format in ["markdown", "junit", "json", "html", "otlp-json", "perfetto"] {
        let o = run(cwd, &["report", out.to_str().unwrap(), "--format", format]);
        assert_eq!(o.status.code(), Some(0), "{format}: {}", describe(&o));
        texts.push((format.into(), describe(&o)));
    }
    for (what, text) in texts {
        assert_eq!(
            holds_key_piece(&text),
            None,
            "a piece of the API key in {what}"
        );
    }
}

/// Issue 30 items 2 and 4, escapes: a suite whose endpoint URL writes its `@` or `?` as a
/// TOML escape (`\u0040`, `\U00000040`, `\u003F`), or breaks the URL with a line
/// continuation before its `@`, is refused, and the error's source snippet showed the
/// password or the query key (the snippet masked only a literal `@`). Whatever follows
/// the scheme of a URL value with an escape is masked.
#[test]
fn a_credential_behind_a_toml_escape_is_never_shown_in_a_snippet() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let jobs = "model = \"m\"\n[[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [16]\n";
    for (i, head) in [
        r#"endpoint = "http://u:PWSECRET\u0040127.0.0.1:9/v1""#,
        r#"endpoint = "http://127.0.0.1:9/v1\u003Fapi-key=PWSECRET""#,
        "endpoint = \"http://u:PWSECRET\\\n@127.0.0.1:9/v1\"",
        "[telemetry]\nmetrics_url = \"http://u:PWSECRET\\U00000040127.0.0.1:9/metrics\"",
    ]
    .into_iter()
    .enumerate()
    {
        let name = format!("e{i}.toml");
        let text = if head.starts_with('[') {
            format!("name = \"e\"\n{jobs}{head}\n")
        } else {
            format!("name = \"e\"\n{head}\n{jobs}")
        };
        support::write(cwd, &name, &text);
        let o = run(cwd, &["check", &name]);
        let all = describe(&o);
        assert_eq!(o.status.code(), Some(2), "{head}: {all}");
        assert!(all.contains(&format!("{name}:")), "{head}: {all}");
        assert!(!all.contains("PWSECRET"), "{head}: {all}");
    }
}

/// A loopback OTLP collector that answers every request `200` with an empty body, on a
/// thread; returns its port and the count of requests it answered.
fn collector() -> (u16, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let n = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = n.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; len];
            let _ = r.read_exact(&mut body);
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let _ =
                s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    (port, n)
}

/// `--otlp-endpoint`: a password with a space (`u:SE CRET@`) was printed
/// (`otlp: sent … to http://u:SE CRET@…`: the free-text redaction ends a URL at a space),
/// and a query (`?key=K`) was echoed and posted to as `…?key=K/v1/traces`. The password
/// is hidden wherever the URL is named, and a query or fragment is refused, unsent.
#[test]
fn otlp_endpoint_messages_never_show_a_password_or_a_query() {
    use std::sync::atomic::Ordering;
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    support::write(
        cwd,
        "s.toml",
        "name = \"s\"\n[[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [16]\nmax_tokens = 4\n",
    );
    let out = cwd.join("run");
    let o = run(cwd, &["run", "s.toml", "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    let (port, posts) = collector();
    let report = |url: &str| {
        run(
            cwd,
            &[
                "report",
                out.to_str().unwrap(),
                "--format",
                "otlp-json",
                "-o",
                cwd.join("x.json").to_str().unwrap(),
                "--otlp-endpoint",
                url,
            ],
        )
    };
    let o = report(&format!("http://u:SE CRET@127.0.0.1:{port}"));
    let all = describe(&o);
    assert!(all.contains("otlp: sent"), "{all}");
    assert!(!all.contains("CRET"), "{all}");
    assert_eq!(posts.load(Ordering::SeqCst), 1, "{all}");
    for url in [
        format!("http://127.0.0.1:{port}/x?key=QSECRET"),
        format!("http://127.0.0.1:{port}#QSECRET"),
    ] {
        let o = report(&url);
        let all = describe(&o);
        assert_ne!(o.status.code(), Some(0), "{url}: {all}");
        assert!(all.contains("query or fragment"), "{url}: {all}");
        assert!(!all.contains("QSECRET"), "{url}: {all}");
    }
    assert_eq!(posts.load(Ordering::SeqCst), 1, "nothing more was posted");
}

/// `k8s` wrote `--memory lots`, `--cpu x`, `--api-key-secret "a b"`,
/// `--runs-volume "a b"`, `--wait-timeout forever` and an empty `--kubectl-image` into
/// the manifests verbatim (exit 0): every cluster refuses such a quantity or name, and
/// `kubectl wait --timeout=forever` fails in the merge Job. Each is refused (exit 2,
/// naming the flag); well-formed values still print.
#[test]
fn k8s_refuses_names_quantities_and_durations_no_cluster_accepts() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let suite = support::repo().join("suites/load.toml");
    let suite = suite.to_str().unwrap();
    let k8s = |extra: &[&str]| {
        let mut args = vec!["k8s", suite, "--shards", "2", "--image", "img:1"];
        args.extend_from_slice(extra);
        run(cwd, &args)
    };
    for (flag, value) in [
        ("--memory", "lots"),
        ("--memory", "2 Gi"),
        ("--cpu", "x"),
        ("--cpu", "1.5.2"),
        ("--api-key-secret", "a b"),
        ("--api-key-secret", "Upper"),
        ("--runs-volume", "a b"),
        ("--runs-volume", "claim-"),
        ("--wait-timeout", "forever"),
        ("--wait-timeout", "6"),
        ("--kubectl-image", " "),
        // Quantities no shard can use: bytes, not gigabytes; no CPU; 10^8 cores; no wait.
        ("--memory", "500m"),
        ("--memory", "2"),
        ("--memory", "0"),
        ("--cpu", "0"),
        ("--cpu", "100Mi"),
        ("--wait-timeout", "0"),
        ("--wait-timeout", "0s"),
    ] {
        let o = k8s(&[flag, value]);
        let all = describe(&o);
        assert_eq!(o.status.code(), Some(2), "{flag} {value:?}: {all}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(flag),
            "{flag} {value:?}: {all}"
        );
        assert!(o.stdout.is_empty(), "{flag} {value:?}: {all}");
    }
    for (flag, value) in [
        ("--memory", "512Mi"),
        ("--memory", "1e9"),
        ("--cpu", "500m"),
        ("--cpu", "0.5"),
        ("--api-key-secret", "team.api-key-1"),
        ("--runs-volume", "runs"),
        ("--wait-timeout", "1h30m"),
        ("--wait-timeout", "90s"),
    ] {
        let o = k8s(&[flag, value]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{flag} {value:?}: {}",
            describe(&o)
        );
        // (The Secret is named only for a suite with `api_key_env`.)
        assert!(
            flag == "--api-key-secret" || String::from_utf8_lossy(&o.stdout).contains(value),
            "{flag} {value:?}"
        );
    }
}
