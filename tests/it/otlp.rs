// OTLP export : the export of a run of the fixture suite
// (`suites/agentic.toml` on the in-process simulator) checked against the OTLP JSON shape
// and the OpenTelemetry GenAI conventions; its protobuf form decoded in Rust (the
// opentelemetry-proto messages) and, independently, by the official PyPI
// `opentelemetry-proto` definitions; then delivered over OTLP/HTTP (gzip protobuf by
// default, JSON on request) to a local receiver (a hyper server on 127.0.0.1:0, `support::http`) that
// decodes what arrives, by `report --otlp-endpoint` and by `run --otlp-endpoint`. A
// failing request gives ERROR spans with `error.type` per the convention.

use crate::support;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use support::http::{Method, StatusCode, response};
use support::{Hostile, Reply, repo, report, run_async, run_suite};

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

/// A root span: no parent (an empty `parentSpanId`, as the protobuf's empty bytes).
fn is_root(s: &Value) -> bool {
    s["parentSpanId"].as_str().unwrap_or("").is_empty()
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
    assert_eq!(
        rs[0]["schemaUrl"],
        "https://opentelemetry.io/schemas/1.41.0"
    );
    assert_eq!(
        rs[0]["scopeSpans"][0]["schemaUrl"],
        "https://opentelemetry.io/schemas/1.41.0"
    );
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
        if is_root(s) {
            assert!(
                roots.insert(trace.to_string(), s).is_none(),
                "one root per trace"
            );
        }
    }
    assert_eq!(roots.len(), trajectories, "a trace per trajectory");

    for s in spans.iter().filter(|s| !is_root(s)) {
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
        assert_eq!(root_attrs["gen_ai.provider.name"], "inferscope.simulator");
        assert_eq!(root_attrs["gen_ai.conversation.id"], t["id"]);
        assert_eq!(root_attrs["server.address"], "127.0.0.1");
        assert!(
            root_attrs["server.port"]
                .as_str()
                .unwrap()
                .parse::<u16>()
                .is_ok()
        );
        assert!(
            root["status"].is_null(),
            "a finished trajectory is not an error"
        );
        let number: usize = a["inferscope.step_number"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            t["steps"][number - 1]["step_id"].as_u64(),
            Some(step_id),
            "step numbers are 1..n within the trajectory"
        );
        assert!(
            s["status"].is_null() && !a.contains_key("error.type"),
            "{s}"
        );
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
                assert_eq!(a["gen_ai.tool.type"], "function");
                assert_eq!(a["gen_ai.tool.call.id"], st["tool_call_id"]);
                assert!(!st["tool_call_id"].as_str().unwrap().is_empty());
            }
            _ => {
                assert_eq!(s["name"], "chat inferscope-sim");
                assert_eq!(s["kind"], 3);
                assert_eq!(a["gen_ai.operation.name"], "chat");
                assert_eq!(a["gen_ai.request.model"], "inferscope-sim");
                assert_eq!(a["gen_ai.provider.name"], "inferscope.simulator");
                assert_eq!(a["server.address"], "127.0.0.1");
                assert_eq!(a["server.port"], root_attrs["server.port"]);
                assert_eq!(a["gen_ai.request.stream"], true);
                assert_eq!(
                    a["gen_ai.request.max_tokens"],
                    st["max_tokens"].as_u64().unwrap().to_string()
                );
                assert_eq!(a["gen_ai.response.model"], "inferscope-sim");
                assert_eq!(
                    a["gen_ai.response.finish_reasons"],
                    serde_json::json!({"values": [{"stringValue": st["finish_reason"]}]})
                );
                let ttft = a["gen_ai.response.time_to_first_chunk"].as_f64().unwrap();
                assert!((ttft * 1000.0 - st["ttft_ms"].as_f64().unwrap()).abs() < 1e-6);
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

/// The export decoded from protobuf bytes (gzip or plain) with the opentelemetry-proto
/// messages, in the OTLP/JSON mapping.
fn decode_protobuf(bytes: &[u8]) -> Value {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use prost::Message;
    let plain = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(bytes), &mut out).unwrap();
        out
    } else {
        bytes.to_vec()
    };
    let req = ExportTraceServiceRequest::decode(plain.as_slice()).expect("valid protobuf");
    serde_json::to_value(&req).unwrap()
}

/// A structural summary of an export, the same from the OTLP/JSON text (here) and from the
/// protobuf as the official Python definitions decode it ([`PY_SUMMARY`]): ids in hex,
/// enums as integers, attribute values typed.
fn summary(export: &Value) -> Value {
    fn value(v: &Value) -> Value {
        let (k, x) = v.as_object().unwrap().iter().next().unwrap();
        match k.as_str() {
            "intValue" => Value::from(x.as_str().unwrap().parse::<i64>().unwrap()),
            "arrayValue" => {
                Value::Array(x["values"].as_array().unwrap().iter().map(value).collect())
            }
            _ => x.clone(),
        }
    }
    fn attributes(a: &Value) -> Value {
        Value::Object(
            a.as_array()
                .unwrap()
                .iter()
                .map(|kv| (kv["key"].as_str().unwrap().to_string(), value(&kv["value"])))
                .collect(),
        )
    }
    let rs = &export["resourceSpans"][0];
    let ss = &rs["scopeSpans"][0];
    let spans: Vec<Value> = ss["spans"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            serde_json::json!({
                "trace_id": s["traceId"], "span_id": s["spanId"],
                "parent_span_id": s["parentSpanId"].as_str().unwrap_or(""),
                "name": s["name"], "kind": s["kind"],
                "start": nanos(&s["startTimeUnixNano"]), "end": nanos(&s["endTimeUnixNano"]),
                "status": s["status"]["code"].as_u64().unwrap_or(0),
                "status_message": s["status"]["message"].as_str().unwrap_or(""),
                "attributes": attributes(&s["attributes"]),
            })
        })
        .collect();
    serde_json::json!({
        "resource_schema_url": rs["schemaUrl"], "scope_schema_url": ss["schemaUrl"],
        "scope": ss["scope"]["name"], "resource": attributes(&rs["resource"]["attributes"]),
        "spans": spans,
    })
}

/// [`summary`] of a protobuf file (gzip or plain), decoded by the official
/// `opentelemetry-proto` Python package.
const PY_SUMMARY: &str = r#"
import gzip, json, sys
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
def value(v):
    k = v.WhichOneof("value")
    if k == "array_value":
        return [value(x) for x in v.array_value.values]
    return getattr(v, k)
def attributes(kvs):
    return {a.key: value(a.value) for a in kvs}
data = open(sys.argv[1], "rb").read()
if data[:2] == b"\x1f\x8b":
    data = gzip.decompress(data)
r = ExportTraceServiceRequest.FromString(data)
assert len(r.resource_spans) == 1 and len(r.resource_spans[0].scope_spans) == 1
rs = r.resource_spans[0]
ss = rs.scope_spans[0]
spans = [{
    "trace_id": s.trace_id.hex(), "span_id": s.span_id.hex(),
    "parent_span_id": s.parent_span_id.hex(), "name": s.name, "kind": s.kind,
    "start": s.start_time_unix_nano, "end": s.end_time_unix_nano,
    "status": s.status.code, "status_message": s.status.message,
    "attributes": attributes(s.attributes),
} for s in ss.spans]
print(json.dumps({
    "resource_schema_url": rs.schema_url, "scope_schema_url": ss.schema_url,
    "scope": ss.scope.name, "resource": attributes(rs.resource.attributes), "spans": spans,
}))
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_export_of_a_fixture_run_follows_the_genai_conventions() {
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

    // The protobuf form: the same request, decoded with the opentelemetry-proto messages.
    let pb = tmp.path().join("otlp.pb");
    let o = run_async(
        &repo(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "otlp-protobuf",
            "-o",
            pb.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let bytes = std::fs::read(&pb).unwrap();
    assert_eq!(
        decode_protobuf(&bytes),
        export,
        "protobuf and JSON carry one request"
    );

    // Independently: the official Python definitions decode the same spans.
    if let Some((python, _)) = support::py_validators("otlp protobuf decode") {
        let (code, out, err) = support::python(&python, PY_SUMMARY, &[&pb]);
        assert_eq!(code, 0, "{err}");
        let decoded: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(decoded, summary(&export));
    }
}

/// One POST the receiver got.
struct Post {
    path: String,
    content_type: Option<String>,
    content_encoding: Option<String>,
    /// The body decoded (protobuf, gzip or not, or JSON) into the OTLP/JSON mapping.
    body: Value,
    /// The raw body.
    raw: Vec<u8>,
}

#[derive(Clone, Default)]
struct Posts(Arc<Mutex<Vec<Post>>>);

async fn receiver() -> (String, Posts, tokio::task::JoinHandle<()>) {
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse;
    let got = Posts::default();
    let r = got.clone();
    let handler = move |req: support::http::Request| {
        if req.uri.path() != "/v1/traces" {
            return response(StatusCode::NOT_FOUND, "text/plain", "");
        }
        if req.method != Method::POST {
            return response(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "");
        }
        let h = |k: &str| {
            req.headers
                .get(k)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let ct = h("content-type");
        let protobuf = ct.as_deref() == Some("application/x-protobuf");
        let v = if protobuf {
            decode_protobuf(&req.body)
        } else {
            serde_json::from_slice(&req.body).unwrap_or(Value::Null)
        };
        r.0.lock().unwrap().push(Post {
            path: req.uri.path().to_string(),
            content_type: ct,
            content_encoding: h("content-encoding"),
            body: v,
            raw: req.body.to_vec(),
        });
        if protobuf {
            response(
                StatusCode::OK,
                "application/x-protobuf",
                prost::Message::encode_to_vec(&ExportTraceServiceResponse::default()),
            )
        } else {
            response(
                StatusCode::OK,
                "application/json",
                serde_json::json!({"partialSuccess": {}}).to_string(),
            )
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let task = tokio::spawn(support::http::serve(listener, handler));
    (url, got, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_http_delivers_gzip_protobuf_or_json_to_a_collector() {
    let (url, got, task) = receiver().await;
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    run_fixture_suite(&run).await;

    // `report --otlp-endpoint`: the same spans as the file export, as gzip protobuf.
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
    assert!(text(&o).contains("http/protobuf"), "{}", text(&o));
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("otlp.json")).unwrap())
            .unwrap();
    {
        let g = got.0.lock().unwrap();
        assert_eq!(g.len(), 1);
        let p = &g[0];
        assert_eq!(p.path, "/v1/traces");
        assert_eq!(p.content_type.as_deref(), Some("application/x-protobuf"));
        assert_eq!(p.content_encoding.as_deref(), Some("gzip"));
        assert!(p.raw.starts_with(&[0x1f, 0x8b]), "a gzip body");
        assert_eq!(p.body, file, "what arrived is the export");
        validate(&p.body, &report(&run));
    }

    // `--otlp-protocol http/json`: the OTLP/JSON body, uncompressed.
    let o = run_async(
        &repo(),
        &[
            "report",
            run.to_str().unwrap(),
            "--format",
            "json",
            "-o",
            tmp.path().join("r.json").to_str().unwrap(),
            "--otlp-endpoint",
            &url,
            "--otlp-protocol",
            "http/json",
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    {
        let g = got.0.lock().unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(g[1].content_type.as_deref(), Some("application/json"));
        assert_eq!(g[1].content_encoding, None);
        assert_eq!(g[1].body, file);
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
    assert_eq!(g.len(), 3);
    let report = report(&out);
    validate(&g[2].body, &report);
    let res = attrs(&g[2].body["resourceSpans"][0]["resource"]);
    assert_eq!(res["inferscope.run_id"], report["run_id"]);
    drop(g);
    task.abort();
}

/// A request the server refused (HTTP 503) is an ERROR `chat` span with
/// `error.type = "503"`, and the trajectory it stopped is an ERROR `invoke_agent` span with
/// its stop reason as `error.type`; the tool step before it is fine, with its call id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_request_and_its_trajectory_are_error_spans() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = calls.clone();
    let server = Hostile::start("hostile-model", move |_: &support::Received| {
        if c.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            Reply::Ok("looking it up".into())
        } else {
            Reply::Status(503, "overloaded".into())
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let suite = support::write(
        tmp.path(),
        "fail.toml",
        &format!(
            "name = \"fail\"\nendpoint = \"{}\"\nmodel = \"hostile-model\"\n\
             [telemetry]\nmetrics = false\n\
             [[tools]]\nname = \"note\"\ndescription = \"a note\"\n\
             parameters = {{ type = \"object\", properties = {{}} }}\n\
             [[tools.responses]]\nwhen = {{}}\ntext = \"ok\"\n\
             [[jobs]]\nname = \"agent\"\nkind = \"agentic\"\nmode = \"scripted\"\n\
             task = \"t\"\ntools = [\"note\"]\nmax_tokens = 8\n[[jobs.script]]\ntool = \"note\"\narguments = {{}}\n",
            server.base_url()
        ),
    );
    let out = tmp.path().join("run");
    let o = run_async(
        tmp.path(),
        &[
            "run",
            suite.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(100), "{}", text(&o));
    let file = tmp.path().join("otlp.json");
    let o = run_async(
        tmp.path(),
        &[
            "report",
            out.to_str().unwrap(),
            "--format",
            "otlp-json",
            "-o",
            file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let export: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let spans = export["resourceSpans"][0]["scopeSpans"][0]["spans"]
        .as_array()
        .unwrap();
    let names: Vec<&str> = spans.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "invoke_agent fail::agent",
            "chat hostile-model",
            "execute_tool note",
            "chat hostile-model"
        ]
    );
    let (root, ok, tool, refused) = (&spans[0], &spans[1], &spans[2], &spans[3]);
    assert_eq!(root["status"]["code"], 2, "{root}");
    assert_eq!(attrs(root)["error.type"], "request_failed");
    assert!(ok["status"].is_null() && !attrs(ok).contains_key("error.type"));
    assert_eq!(
        attrs(ok)["gen_ai.provider.name"],
        "openai",
        "an engine left to `auto`"
    );
    assert_eq!(
        attrs(ok)["gen_ai.response.finish_reasons"]["values"][0]["stringValue"],
        "stop"
    );
    assert_eq!(attrs(tool)["gen_ai.tool.call.id"], "call_0");
    assert!(tool["status"].is_null());
    assert_eq!(refused["status"]["code"], 2, "{refused}");
    assert_eq!(attrs(refused)["error.type"], "503");
    assert!(
        refused["status"]["message"]
            .as_str()
            .unwrap()
            .contains("http_status"),
        "{refused}"
    );
    assert!(!attrs(refused).contains_key("gen_ai.response.finish_reasons"));
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
