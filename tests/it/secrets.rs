//! Secret markers never reach a run's artifacts (issue 4 "Done when"; docs/artifacts.md): a
//! distinct `SECRET-MARKER-…` string is planted in the system prompt, the task, every kind
//! of fixture-tool response (file, read root, table row, inline default), scripted and
//! model-chosen tool arguments, the model's responses and the error messages of a hostile
//! server. The run captures its timeline; afterwards no file anywhere under the run
//! directory (`report.json`, `steps.jsonl`, `samples/*`, `timeline/*`) holds a marker.
//! The tests first prove the markers were really in play (sent to or received from the
//! endpoint), so a marker that never left the suite cannot make them pass.

use crate::support;

use std::path::Path;

use support::{Hostile, Received, Reply, describe, files_under, run, write};

const MARK: &str = "SECRET-MARKER-";
/// The suite's API key (from `api_key_env`): never in any artifact, even when a server
/// echoes it into its error text.
const KEY: &str = "sk-test-SECRET-MARKER-api-key";

/// Fixture files and the suite's tools, with a marker in each response source.
fn plant_fixtures(dir: &Path) {
    write(
        dir,
        "fixtures/tools/notes.json",
        &format!("{{\"notes\": \"{MARK}fixture-file\"}}"),
    );
    write(
        dir,
        "fixtures/repo/doc.md",
        &format!("# Doc\n\n{MARK}read-root contents\n"),
    );
    write(
        dir,
        "fixtures/tools/row.json",
        &format!("{{\"row\": \"{MARK}table-row\"}}"),
    );
}

const TOOLS: &str = r#"
[[tools]]
name = "notes"
description = "Team notes"
parameters = { type = "object", properties = { topic = { type = "string" } } }
response_file = "tools/notes.json"

[[tools]]
name = "read_doc"
description = "Read a document"
parameters = { type = "object", properties = { path = { type = "string", default = "doc.md" } }, required = ["path"] }
read_root = "repo"
path_argument = "path"

[[tools]]
name = "lookup"
description = "Look a key up"
parameters = { type = "object", properties = { key = { type = "string", default = "SECRET-MARKER-enum-choice" } }, required = ["key"] }
default_text = "SECRET-MARKER-default-text"
[[tools.responses]]
when = { key = "SECRET-MARKER-enum-choice" }
file = "tools/row.json"
"#;

fn agentic_jobs() -> String {
    format!(
        r#"
[[jobs]]
name = "scripted"
kind = "agentic"
mode = "scripted"
system = "{MARK}system prompt: you are a careful reviewer"
task = "{MARK}task: review the patient record of Jane Doe"
tools = ["notes", "read_doc", "lookup"]
max_tokens = 16
[[jobs.script]]
tool = "notes"
arguments = {{ topic = "{MARK}scripted-args" }}
[[jobs.script]]
tool = "read_doc"
arguments = {{ path = "doc.md" }}
[[jobs.script]]
tool = "lookup"
arguments = {{ key = "SECRET-MARKER-enum-choice" }}
[[jobs.script]]
tool = "read_doc"
arguments = {{ path = "../{MARK}escape-path" }}

[[jobs]]
name = "model"
kind = "agentic"
mode = "model"
system = "{MARK}model-system"
task = "{MARK}model-task"
tools = ["lookup", "read_doc"]
max_steps = 4
max_tokens = 16
"#
    )
}

/// `requests.jsonl` with every record's `err` excerpt blanked after checking its bound: the
/// one place a server's own error text is kept (bounded, redacted; issue 13, issue 19 moved
/// the records there from `report.json`). Returns the file's other text and the excerpts.
fn records_without_error_excerpts(bytes: &[u8]) -> (String, Vec<String>) {
    let mut excerpts = Vec::new();
    let mut rest = Vec::new();
    for line in String::from_utf8_lossy(bytes).lines() {
        let mut r: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(e) = r["err"].as_str() {
            assert!(
                e.len() <= 512 + '…'.len_utf8(),
                "error excerpt over 512 bytes: {e}"
            );
            excerpts.push(e.to_string());
            r.as_object_mut().unwrap().remove("err");
        }
        rest.push(r.to_string());
    }
    (rest.join("\n"), excerpts)
}

/// Asserts that no file under `run_dir` contains the marker prefix — `requests.jsonl`'s
/// request error excerpts aside (a server's error text, kept bounded and redacted, and
/// never in the timeline); returns the number of files scanned.
fn assert_clean(run_dir: &Path) -> usize {
    let files = files_under(run_dir);
    let mut dirty = Vec::new();
    for (p, bytes) in &files {
        let text = if p.ends_with("requests.jsonl") {
            std::borrow::Cow::Owned(records_without_error_excerpts(bytes).0)
        } else {
            String::from_utf8_lossy(bytes)
        };
        for (i, _) in text.match_indices(MARK) {
            let end = (i + 60).min(text.len());
            let end = (end..=text.len())
                .find(|&e| text.is_char_boundary(e))
                .unwrap_or(text.len());
            dirty.push(format!(
                "{}: …{}…",
                p.strip_prefix(run_dir).unwrap().display(),
                &text[i..end]
            ));
        }
    }
    assert!(
        dirty.is_empty(),
        "secret markers in artifacts:\n{}",
        dirty.join("\n")
    );
    files.len()
}

fn assert_artifacts_present(run_dir: &Path) {
    for f in [
        "report.json",
        "steps.jsonl",
        "timeline/events.jsonl",
        "timeline/manifest.json",
    ] {
        assert!(run_dir.join(f).is_file(), "missing {f}");
    }
}

/// Against a hostile endpoint: markers in what is sent (prompts, tool results, arguments)
/// and in what comes back (responses, tool-call arguments, in-band and HTTP error text).
/// A server's error text is kept in `requests.jsonl` only — bounded to 512 bytes, with the
/// suite's API key and any `Authorization`/`Bearer` value redacted — never in the timeline,
/// the step markers or the samples.
#[test]
fn no_marker_from_prompts_tools_responses_or_errors_reaches_any_artifact() {
    let server = Hostile::start("hostile-model", |r: &Received| {
        let id = r.request_id();
        if id.starts_with("sec::model.") && id.ends_with(".llm0") {
            Reply::ToolCalls(vec![
                (
                    "lookup".into(),
                    format!("{{\"key\": \"{MARK}model-chosen-args\"}}"),
                ),
                // A tool name is model output too: an undeclared one must not be copied.
                (format!("{MARK}undeclared-tool-name"), "{}".into()),
            ])
        } else if id.contains(".s8.") {
            Reply::ErrorMidStream(format!("{MARK}stream-error: prompt was {MARK}echo"))
        } else if id.contains(".s9.") {
            Reply::Status(500, format!("{MARK}http-error in request"))
        } else if id.contains(".s10.") {
            Reply::Status(400, format!("{MARK}http-400 validation"))
        } else if id.contains(".s11.") {
            // A server that echoes the credentials it was sent into its error text.
            Reply::Status(
                401,
                format!("invalid key {KEY}; Authorization: Bearer {KEY}; api_key={MARK}q"),
            )
        } else {
            Reply::Ok(format!("{MARK}response text quoting the tools"))
        }
    });
    let cwd = tempfile::tempdir().unwrap();
    plant_fixtures(cwd.path());
    let suite = format!(
        "name = \"sec\"\nendpoint = \"{}\"\nmodel = \"hostile-model\"\ncapture_timeline = true\n\
         api_key_env = \"SEC_TEST_KEY\"\n\
         [telemetry]\nmetrics = false\n\
         {TOOLS}\n{}\n\
         [[jobs]]\nname = \"errors\"\nkind = \"context\"\nsizes = [8, 9, 10, 11, 12]\nmax_tokens = 8\n",
        server.base_url(),
        agentic_jobs()
    );
    write(cwd.path(), "sec.toml", &suite);
    let out = cwd.path().join("run");
    let o = support::command(cwd.path())
        .args(["run", "sec.toml", "--out", out.to_str().unwrap()])
        .env("SEC_TEST_KEY", KEY)
        .output()
        .unwrap();
    assert!(matches!(o.status.code(), Some(0 | 100)), "{}", describe(&o));

    // The markers were in play: sent in prompts and tool results, and received.
    let sent: String = server
        .chat_requests()
        .iter()
        .map(|r| r.body.clone())
        .collect();
    for m in [
        "system prompt",
        "task:",
        "fixture-file",
        "read-root contents",
        "table-row",
        "scripted-args",
        "model-system",
        "model-task",
        "model-chosen-args",
        "default-text",
    ] {
        assert!(
            sent.contains(&format!("{MARK}{m}")),
            "marker {m} was never sent"
        );
    }
    let r = support::report(&out);
    let errors = support::job(&r, "sec::errors");
    let codes: Vec<&str> = errors["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["failure_code"].as_str().unwrap_or("none"))
        .collect();
    assert_eq!(
        codes,
        vec![
            "stream_error",
            "http_status",
            "http_status",
            "http_status",
            "none"
        ]
    );
    // The error excerpts are in requests.jsonl (no longer `null`), with the key redacted.
    let (_, excerpts) =
        records_without_error_excerpts(&std::fs::read(out.join("requests.jsonl")).unwrap());
    assert!(
        excerpts.iter().any(|e| e.contains("http-400 validation")),
        "{excerpts:?}"
    );
    let echoed = excerpts
        .iter()
        .find(|e| e.contains("invalid key"))
        .expect("the 401 body's excerpt");
    assert!(!echoed.contains(KEY), "{echoed}");
    assert!(echoed.contains("Bearer [redacted]"), "{echoed}");
    assert!(echoed.contains("api_key=[redacted]"), "{echoed}");
    for (p, bytes) in files_under(&out) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the API key is in {}",
            p.display()
        );
    }

    assert_artifacts_present(&out);
    let scanned = assert_clean(&out);
    assert!(scanned >= 4);
    let v = run(cwd.path(), &["timeline", "verify", out.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(0), "{}", describe(&v));
}

/// On the built-in simulator (which quotes tool results in its answers and picks tool
/// arguments from the offered schema), with every sampler writing `samples/`.
#[test]
fn no_marker_reaches_any_artifact_on_the_simulator() {
    let cwd = tempfile::tempdir().unwrap();
    plant_fixtures(cwd.path());
    let suite = format!(
        "name = \"sec\"\n[telemetry]\nsample_period_ms = 10\n{TOOLS}\n{}",
        agentic_jobs()
    );
    write(cwd.path(), "sec.toml", &suite);
    let out = cwd.path().join("run");
    let o = run(
        cwd.path(),
        &[
            "run",
            "sec.toml",
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(matches!(o.status.code(), Some(0 | 100)), "{}", describe(&o));
    let r = support::report(&out);
    for id in ["sec::scripted", "sec::model"] {
        let j = support::job(&r, id);
        assert!(
            j["stats"]["succeeded"].as_u64().unwrap() >= 2,
            "{id} made requests"
        );
    }
    // The model-mode job really called the tool whose arguments and rows carry markers.
    let model_tools: Vec<&str> = support::job(&r, "sec::model")["trajectories"][0]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kind"] == "tool")
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert!(model_tools.contains(&"lookup"), "{model_tools:?}");
    assert_artifacts_present(&out);
    assert!(out.join("samples").is_dir());
    assert_clean(&out);
}
