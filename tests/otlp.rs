// OTLP export (issue 8 item 3): an OTLP/JSON export of a run of the fixture suite
// (`suites/agentic.toml` on the in-process simulator) checked against the OTLP JSON
// shape, then delivered over OTLP/HTTP to a local receiver (an axum server on
// 127.0.0.1:0) by `report --otlp-endpoint` and by `run --otlp-endpoint`.

mod support;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::routing::post;
use serde_json::Value;
use support::{repo, report, run_async, run_suite};

async fn run_fixture_suite(out: &Path) {
    let o = run_suite(&repo().join("suites/agentic.toml"), None, out).await;
    assert_eq!(o.exit_status, 0, "{}", support::console(&o.report));
}

fn text(o: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.chars()
            .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
        && s.chars().any(|c| c != '0')
}

fn attrs(span: &Value) -> HashMap<String, Value> {
    span["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let v = a["value"].as_object().unwrap();
            assert_eq!(v.len(), 1, "one typed value per attribute: {a}");
            (
                a["key"].as_str().unwrap().to_string(),
                v.values().next().unwrap().clone(),
            )
        })
        .collect()
}

fn nanos(v: &Value) -> u64 {
    v.as_str()
        .expect("unix-nano times are JSON strings")
        .parse()
        .unwrap()
}

/// Checks `export` against the OTLP/JSON trace shape and against the run's report.
fn validate(export: &Value, report: &Value) {
    let anchor = report["reference_instant_unix_ns"].as_u64().unwrap();
    let rs = export["resourceSpans"].as_array().unwrap();
    assert_eq!(rs.len(), 1);
    let res = attrs(&rs[0]["resource"]);
    assert_eq!(res["service.name"], "inferscope-bench");
    assert_eq!(res["inferscope.run_id"], report["run_id"]);
    assert_eq!(
        res["inferscope.reference_instant_unix_ns"],
        anchor.to_string()
    );
    let ss = rs[0]["scopeSpans"].as_array().unwrap();
    assert_eq!(ss[0]["scope"]["name"], "inferscope-bench");
    let spans = ss[0]["spans"].as_array().unwrap();

    // Report side: every trajectory and step, by id.
    let mut steps: HashMap<u64, (&Value, &Value, String)> = HashMap::new();
    let mut trajectories = 0;
    for j in report["jobs"].as_array().unwrap() {
        for t in j["trajectories"].as_array().unwrap() {
            trajectories += 1;
            for s in t["steps"].as_array().unwrap() {
                steps.insert(
                    s["step_id"].as_u64().unwrap(),
                    (t, s, j["id"].as_str().unwrap().to_string()),
                );
            }
        }
    }
    assert_eq!(spans.len(), trajectories + steps.len());

    let mut roots: HashMap<String, &Value> = HashMap::new();
    let mut span_ids = HashSet::new();
    for s in spans {
        let trace = s["traceId"].as_str().unwrap();
        let id = s["spanId"].as_str().unwrap();
        assert!(is_hex(trace, 32), "trace id: {trace}");
        assert!(is_hex(id, 16), "span id: {id}");
        assert!(span_ids.insert(id.to_string()), "span ids are unique");
        let (start, end) = (nanos(&s["startTimeUnixNano"]), nanos(&s["endTimeUnixNano"]));
        assert!(anchor <= start && start <= end, "{s}");
        assert!(s["kind"].is_u64(), "enums are integers");
        if s.get("parentSpanId").is_none() {
            assert!(
                roots.insert(trace.to_string(), s).is_none(),
                "one root per trace"
            );
        }
    }
    assert_eq!(roots.len(), trajectories, "a trace per trajectory");

    for s in spans.iter().filter(|s| s.get("parentSpanId").is_some()) {
        let a = attrs(s);
        let root = roots[s["traceId"].as_str().unwrap()];
        assert_eq!(s["parentSpanId"], root["spanId"], "parent link");
        let (start, end) = (nanos(&s["startTimeUnixNano"]), nanos(&s["endTimeUnixNano"]));
        assert!(nanos(&root["startTimeUnixNano"]) <= start);
        assert!(end <= nanos(&root["endTimeUnixNano"]));
        let step_id: u64 = a["inferscope.step_id"].as_str().unwrap().parse().unwrap();
        let (t, st, job) = &steps[&step_id];
        // Anchored at the recorded reference instant, never at export time.
        assert_eq!(start, anchor + st["start_ns"].as_u64().unwrap());
        assert_eq!(end, anchor + st["end_ns"].as_u64().unwrap());
        assert_eq!(a["gen_ai.conversation.id"], t["id"]);
        let root_attrs = attrs(root);
        assert_eq!(root_attrs["gen_ai.operation.name"], "invoke_agent");
        assert_eq!(root_attrs["gen_ai.agent.name"], job.as_str());
        assert_eq!(root["name"], format!("invoke_agent {job}"));
        assert_eq!(
            nanos(&root["startTimeUnixNano"]),
            anchor + t["start_ns"].as_u64().unwrap()
        );
        match st["kind"].as_str().unwrap() {
            "tool" => {
                assert_eq!(
                    s["name"],
                    format!("execute_tool {}", st["name"].as_str().unwrap())
                );
                assert_eq!(s["kind"], 1);
                assert_eq!(a["gen_ai.operation.name"], "execute_tool");
                assert_eq!(a["gen_ai.tool.name"], st["name"]);
            }
            _ => {
                assert_eq!(s["name"], "chat inferscope-sim");
                assert_eq!(s["kind"], 3);
                assert_eq!(a["gen_ai.operation.name"], "chat");
                assert_eq!(a["gen_ai.request.model"], "inferscope-sim");
                assert_eq!(
                    a["gen_ai.usage.input_tokens"],
                    st["prompt_tokens"].as_u64().unwrap().to_string()
                );
                if let Some(out) = st["completion_tokens"].as_u64() {
                    assert_eq!(a["gen_ai.usage.output_tokens"], out.to_string());
                    assert!(!a.contains_key("inferscope.usage.output_tokens_estimate"));
                } else {
                    let est = st["completion_tokens_estimate"]["tokens"].as_u64().unwrap();
                    assert_eq!(
                        a["inferscope.usage.output_tokens_estimate"],
                        est.to_string()
                    );
                    assert!(!a.contains_key("gen_ai.usage.output_tokens"));
                }
            }
        }
        match st["energy"]["value"].as_u64() {
            Some(mj) => {
                assert_eq!(a["inferscope.energy_mj"], mj.to_string());
                assert_eq!(a["inferscope.energy_basis"], st["energy"]["basis"]);
            }
            None => assert!(
                !a.contains_key("inferscope.energy_mj"),
                "missing energy is left out, never 0"
            ),
        }
    }
    assert!(
        spans
            .iter()
            .any(|s| attrs(s).get("inferscope.energy_basis") == Some(&Value::from("simulated"))),
        "the simulator's energy is exported with its basis"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_json_export_of_a_fixture_run_has_the_otlp_shape() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_fixture_suite(&run).await;
    let file = tmp.path().join("otlp.json");
    let args = [
        "report",
        run.to_str().unwrap(),
        "--format",
        "otlp-json",
        "-o",
        file.to_str().unwrap(),
    ];
    let o = run_async(&repo(), &args).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let export: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let report = report(&run);
    validate(&export, &report);
    // Deterministic: the same run exports the same spans later (ids and times come from
    // the run, not from the export).
    std::thread::sleep(std::time::Duration::from_millis(20));
    let o = run_async(&repo(), &args).await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let again: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(export, again);
}

/// One POST the receiver got.
struct Post {
    path: String,
    content_type: Option<String>,
    body: Value,
}

#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Post>>>);

async fn receiver() -> (String, Received, tokio::task::JoinHandle<()>) {
    let got = Received::default();
    let app = Router::new()
        .route(
            "/v1/traces",
            post(
                |State(r): State<Received>, uri: Uri, headers: HeaderMap, body: Bytes| async move {
                    let ct = headers
                        .get("content-type")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_string);
                    let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    r.0.lock().unwrap().push(Post {
                        path: uri.path().to_string(),
                        content_type: ct,
                        body: v,
                    });
                    axum::Json(serde_json::json!({"partialSuccess": {}}))
                },
            ),
        )
        .with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (url, got, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_http_delivers_the_export_to_a_collector() {
    let (url, got, task) = receiver().await;
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_fixture_suite(&run).await;

    // `report --otlp-endpoint`: the same spans as the file export.
    let o = run_async(
        &repo(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "otlp-json",
            "-o",
            tmp.path().join("otlp.json").to_str().unwrap(),
            "--otlp-endpoint",
            &url,
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("otlp: sent"), "{}", text(&o));
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("otlp.json")).unwrap())
            .unwrap();
    {
        let g = got.0.lock().unwrap();
        assert_eq!(g.len(), 1);
        let Post {
            path,
            content_type,
            body,
        } = &g[0];
        assert_eq!(path, "/v1/traces");
        assert_eq!(content_type.as_deref(), Some("application/json"));
        assert_eq!(body, &file, "what arrived is the export");
        let report = report(&run);
        validate(body, &report);
    }

    // `run --otlp-endpoint`: sent after the run, spans of that run.
    let out = tmp.path().join("run2");
    let o = run_async(
        &repo(),
        &[
            "run",
            repo().join("suites/agentic.toml").to_str().unwrap(),
            "--filter",
            "agentic::repo_tour",
            "--out",
            out.to_str().unwrap(),
            "--otlp-endpoint",
            &format!("{url}/"),
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let g = got.0.lock().unwrap();
    assert_eq!(g.len(), 2);
    let report = report(&out);
    validate(&g[1].body, &report);
    let res = attrs(&g[1].body["resourceSpans"][0]["resource"]);
    assert_eq!(res["inferscope.run_id"], report["run_id"]);
    drop(g);
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_collector_fails_report_but_not_the_run() {
    // A port nothing listens on: bind, note it, close.
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = run_async(
        &repo(),
        &[
            "run",
            repo().join("suites/agentic.toml").to_str().unwrap(),
            "--filter",
            "agentic::repo_tour",
            "--out",
            out.to_str().unwrap(),
            "--otlp-endpoint",
            &format!("http://{addr}"),
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("warning: otlp:"), "{}", text(&o));
    let o = run_async(
        &repo(),
        &[
            "report",
            out.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            tmp.path().join("r.json").to_str().unwrap(),
            "--otlp-endpoint",
            &format!("http://{addr}"),
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
}
