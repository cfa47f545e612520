//! OTLP export of a run's trajectories: the official `opentelemetry-proto` messages
//! (`ExportTraceServiceRequest`, prost-generated), written as OTLP/HTTP protobuf (gzip) or
//! OTLP/JSON, and delivered to a collector ([`send`]).
//!
//! Shape: one resource (`service.name = inferscope-bench`, the run id, clock domain and
//! anchor, whether the endpoint was simulated) with [`SCHEMA_URL`], one scope (also with
//! [`SCHEMA_URL`]), and per trajectory one trace that follows the OpenTelemetry GenAI
//! semantic conventions (semconv 1.41, `docs/otlp.md` lists every attribute):
//! - a root span `invoke_agent {job id}` (kind INTERNAL: the agent loop runs in this
//!   process) over the trajectory;
//! - per LLM step a child `chat {model}` (kind CLIENT); per tool step a child
//!   `execute_tool {tool}` (kind INTERNAL).
//!
//! Required and recommended attributes: `gen_ai.operation.name`, `gen_ai.provider.name`
//! ([`provider_name`]), `gen_ai.request.model`, `server.address` / `server.port`,
//! `gen_ai.request.max_tokens`, `gen_ai.request.stream`, `gen_ai.response.model`,
//! `gen_ai.response.finish_reasons`, `gen_ai.usage.input_tokens`,
//! `gen_ai.usage.output_tokens`, `gen_ai.usage.cache_read.input_tokens`,
//! `gen_ai.response.time_to_first_chunk` (s), `gen_ai.conversation.id`,
//! `gen_ai.agent.name`, `gen_ai.tool.name`, `gen_ai.tool.type`, `gen_ai.tool.call.id`.
//! A failed operation has span status ERROR and `error.type` ([`error_type`]): the HTTP
//! status code as a string for an HTTP error (`"503"`), else the failure code (`timeout`,
//! `connect`, `stream_error`, `cancelled`, a tool's error such as `bad_arguments`, …); a
//! trajectory that did not reach its end has status ERROR on its `invoke_agent` span with
//! its stop reason as `error.type` (`request_failed`, `max_steps`, `cancelled`, …).
//!
//! A figure that is not a plain measurement keeps its basis in the `inferscope.*`
//! namespace: energy is `inferscope.energy_mj` with `inferscope.energy_basis`
//! (`measured`, `apportioned`, `simulated`, or `unavailable` with
//! `inferscope.energy_reason` and no value); a client-estimated output count (no server
//! usage) is `inferscope.usage.output_tokens_estimate` with its method, never
//! `gen_ai.usage.output_tokens`. A value the run did not observe is left out (OTLP has no
//! null), never written as 0.
//!
//! Times are unix nanoseconds **anchored at the run's recorded reference instant**
//! (`reference_instant_unix_ns + elapsed_ns`, docs/measurement.md; never the export time). Ids are
//! deterministic: SHA-256 of the run id and trajectory id (trace, 16 bytes) and of those
//! plus the step id (span, 8 bytes), so exporting a run twice gives the same trace.

mod send;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{
    AnyValue, ArrayValue, InstrumentationScope, KeyValue,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};
use sha2::{Digest, Sha256};

use inferscope_model::{
    EndpointReport, Figure, JobReport, RunReport, StepKind, StepReport, StepStatus,
    TrajectoryReport,
};

pub use send::{SEND_TIMEOUT, SendOutcome, send, send_report, traces_url};

/// The semantic-conventions schema the attributes follow (OpenTelemetry semconv 1.41.0,
/// whose GenAI registry has `gen_ai.provider.name`, `gen_ai.request.stream` and
/// `gen_ai.response.time_to_first_chunk`).
pub const SCHEMA_URL: &str = "https://opentelemetry.io/schemas/1.41.0";
/// The instrumentation scope name.
pub const SCOPE_NAME: &str = "inferscope-bench";

/// How an export is encoded (the `OTEL_EXPORTER_OTLP_PROTOCOL` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Encoding {
    /// `http/protobuf`: binary protobuf, sent gzip-compressed (collectors' default).
    #[default]
    Protobuf,
    /// `http/json`: the OTLP/JSON mapping (hex ids, integer enums, 64-bit integers as
    /// strings).
    Json,
}

impl Encoding {
    /// `http/protobuf` or `http/json`.
    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::Protobuf => "http/protobuf",
            Encoding::Json => "http/json",
        }
    }
}

fn digest(parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h.finalize().into()
}

/// `n` bytes of `d`, never all zero (an all-zero id is invalid in OTLP).
fn id_bytes(d: &[u8; 32], n: usize) -> Vec<u8> {
    let mut b = d[..n].to_vec();
    if b.iter().all(|&x| x == 0) {
        b[n - 1] = 1;
    }
    b
}

/// The trace id of a trajectory: 16 bytes.
pub fn trace_id(run_id: &str, trajectory: &str) -> Vec<u8> {
    id_bytes(&digest(&["inferscope-bench/trace", run_id, trajectory]), 16)
}

/// A span id: 8 bytes; `step = None` is the trajectory's root span.
pub fn span_id(run_id: &str, trajectory: &str, step: Option<u64>) -> Vec<u8> {
    let s = step.map_or_else(|| "root".to_string(), |s| s.to_string());
    id_bytes(
        &digest(&["inferscope-bench/span", run_id, trajectory, &s]),
        8,
    )
}

fn kv(key: &str, value: Any) -> KeyValue {
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn s(v: impl Into<String>) -> Any {
    Any::StringValue(v.into())
}

fn int(v: u64) -> Any {
    Any::IntValue(i64::try_from(v).unwrap_or(i64::MAX))
}

fn strings(v: &[&str]) -> Any {
    Any::ArrayValue(ArrayValue {
        values: v.iter().map(|x| AnyValue { value: Some(s(*x)) }).collect(),
    })
}

/// `gen_ai.provider.name`: the engine the suite names (`vllm`, `sglang`, `llama.cpp`), the
/// built-in simulator as `inferscope.simulator`, and an endpoint whose engine is detected
/// (`auto`) as `openai` — the API it speaks (the convention's rule for servers reached
/// through the OpenAI API). No well-known value names these engines, so the first three are
/// custom values, as the convention allows.
pub fn provider_name(e: Option<&EndpointReport>) -> &'static str {
    match e {
        Some(e) if e.simulated => "inferscope.simulator",
        Some(e) => match e.engine_profile.as_str() {
            "vllm" => "vllm",
            "sglang" => "sglang",
            "llamacpp" => "llama.cpp",
            _ => "openai",
        },
        None => "openai",
    }
}

/// `server.address` and `server.port` of an endpoint's base URL (the port the scheme
/// implies when the URL names none); `None` when it does not parse.
fn server(e: Option<&EndpointReport>) -> Option<(String, u16)> {
    let url = reqwest::Url::parse(&e?.base_url).ok()?;
    Some((url.host_str()?.to_string(), url.port_or_known_default()?))
}

/// `error.type` of a failed step (see the module docs): the HTTP status as a string for
/// an HTTP error, a tool's own error code, else the failure code; `None` when the step
/// did not fail.
pub fn error_type(st: &StepReport) -> Option<String> {
    let failed = matches!(st.status, Some(StepStatus::Failed | StepStatus::Cancelled))
        || st.failure_code.is_some();
    if !failed {
        return None;
    }
    Some(match (st.failure_code, st.http_status, st.tool_error) {
        (Some(inferscope_model::FailureCode::HttpStatus), Some(code), _) => code.to_string(),
        (Some(inferscope_model::FailureCode::ToolError), _, Some(t)) => t.as_str().to_string(),
        (Some(c), _, _) => c.as_str().to_string(),
        (None, _, _) => st.status.map_or("_OTHER", StepStatus::as_str).to_string(),
    })
}

fn energy_attrs(attrs: &mut Vec<KeyValue>, energy: &Figure<u64>) {
    attrs.push(kv("inferscope.energy_basis", s(energy.basis.name())));
    match energy.value {
        Some(mj) => attrs.push(kv("inferscope.energy_mj", int(mj))),
        None => {
            if let Some(r) = &energy.reason {
                attrs.push(kv("inferscope.energy_reason", s(r.clone())));
            }
        }
    }
}

fn error_status(message: String) -> Option<Status> {
    Some(Status {
        message,
        code: StatusCode::Error as i32,
    })
}

/// What every span of one job shares: its endpoint and model.
struct JobContext<'a> {
    run_id: &'a str,
    anchor: u64,
    model: &'a str,
    provider: &'static str,
    server: Option<(String, u16)>,
}

impl JobContext<'_> {
    fn endpoint_attrs(&self, attrs: &mut Vec<KeyValue>) {
        attrs.push(kv("gen_ai.provider.name", s(self.provider)));
        attrs.push(kv("gen_ai.request.model", s(self.model)));
        if let Some((host, port)) = &self.server {
            attrs.push(kv("server.address", s(host.clone())));
            attrs.push(kv("server.port", int(u64::from(*port))));
        }
    }
}

fn llm_attrs(cx: &JobContext, st: &StepReport, attrs: &mut Vec<KeyValue>) {
    attrs.push(kv("gen_ai.operation.name", s("chat")));
    cx.endpoint_attrs(attrs);
    attrs.push(kv("gen_ai.request.stream", Any::BoolValue(true)));
    if let Some(n) = st.max_tokens {
        attrs.push(kv("gen_ai.request.max_tokens", int(n)));
    }
    if let Some(m) = &st.response_model {
        attrs.push(kv("gen_ai.response.model", s(m.clone())));
    }
    if let Some(fr) = &st.finish_reason {
        attrs.push(kv("gen_ai.response.finish_reasons", strings(&[fr])));
    }
    if let Some(v) = st.prompt_tokens {
        attrs.push(kv("gen_ai.usage.input_tokens", int(v)));
    }
    // `gen_ai.usage.*` is server usage: a client estimate (docs/measurement.md) is not passed off
    // as one.
    if let Some(v) = st.completion_tokens {
        attrs.push(kv("gen_ai.usage.output_tokens", int(v)));
    } else if let Some(e) = st.completion_tokens_estimate {
        attrs.push(kv("inferscope.usage.output_tokens_estimate", int(e.tokens)));
        attrs.push(kv(
            "inferscope.usage.output_tokens_estimate_method",
            s(e.method.name()),
        ));
    }
    if let Some(v) = st.cached_tokens {
        attrs.push(kv("gen_ai.usage.cache_read.input_tokens", int(v)));
    }
    if let Some(ms) = st.ttft_ms {
        attrs.push(kv(
            "gen_ai.response.time_to_first_chunk",
            Any::DoubleValue(ms / 1000.0),
        ));
    }
}

fn step_span(
    cx: &JobContext,
    t: &TrajectoryReport,
    number: usize,
    st: &StepReport,
    trace: &[u8],
    parent: &[u8],
) -> Span {
    let mut attrs = Vec::new();
    let (name, kind) = if st.kind == StepKind::Tool {
        attrs.push(kv("gen_ai.operation.name", s("execute_tool")));
        attrs.push(kv("gen_ai.tool.name", s(st.name.clone())));
        attrs.push(kv("gen_ai.tool.type", s("function")));
        if let Some(id) = &st.tool_call_id {
            attrs.push(kv("gen_ai.tool.call.id", s(id.clone())));
        }
        (format!("execute_tool {}", st.name), SpanKind::Internal)
    } else {
        llm_attrs(cx, st, &mut attrs);
        (format!("chat {}", cx.model), SpanKind::Client)
    };
    attrs.push(kv("gen_ai.conversation.id", s(t.id.clone())));
    attrs.push(kv("inferscope.step_id", int(st.step_id)));
    attrs.push(kv("inferscope.step_number", int(number as u64)));
    energy_attrs(&mut attrs, &st.energy);
    if st.warmup {
        attrs.push(kv("inferscope.warmup", Any::BoolValue(true)));
    }
    let error = error_type(st);
    let status = error.as_ref().and_then(|e| {
        let what = st.failure_code.map_or_else(
            || st.status.map_or("failed", StepStatus::as_str).to_string(),
            |c| c.as_str().to_string(),
        );
        error_status(if what == *e {
            what
        } else {
            format!("{what}: {e}")
        })
    });
    if let Some(e) = error {
        attrs.push(kv("error.type", s(e)));
    }
    Span {
        trace_id: trace.to_vec(),
        span_id: span_id(cx.run_id, &t.id, Some(st.step_id)),
        parent_span_id: parent.to_vec(),
        name,
        kind: kind as i32,
        start_time_unix_nano: st.start_unix_ns(cx.anchor),
        end_time_unix_nano: st.end_unix_ns(cx.anchor).max(st.start_unix_ns(cx.anchor)),
        attributes: attrs,
        status,
        ..Default::default()
    }
}

fn root_span(cx: &JobContext, job: &JobReport, t: &TrajectoryReport, trace: &[u8]) -> Span {
    let mut attrs = vec![kv("gen_ai.operation.name", s("invoke_agent"))];
    cx.endpoint_attrs(&mut attrs);
    attrs.extend([
        kv("gen_ai.agent.name", s(job.id.clone())),
        kv("gen_ai.conversation.id", s(t.id.clone())),
        kv("inferscope.job.kind", s(job.kind.as_str())),
        kv("inferscope.stop_reason", s(t.stop_reason.as_str())),
    ]);
    if let Some(p) = t.graded_pass {
        attrs.push(kv("inferscope.graded_pass", Any::BoolValue(p)));
    }
    if let Some(k) = t.shard {
        attrs.push(kv("inferscope.shard", int(u64::from(k))));
    }
    // The trajectory's own energy figure (its steps' windows; never summed across
    // trajectories in flight together).
    energy_attrs(&mut attrs, &t.energy);
    // A trajectory that did not reach its end failed as an operation (a graded answer
    // that fails a check is not an error of the invocation: `inferscope.graded_pass`).
    let status = if t.stop_reason.finished() {
        None
    } else {
        attrs.push(kv("error.type", s(t.stop_reason.as_str())));
        let failed = t
            .steps
            .iter()
            .find_map(error_type)
            .map_or_else(String::new, |e| format!(" (step error {e})"));
        error_status(format!(
            "trajectory stopped: {}{failed}",
            t.stop_reason.as_str()
        ))
    };
    Span {
        trace_id: trace.to_vec(),
        span_id: span_id(cx.run_id, &t.id, None),
        name: format!("invoke_agent {}", job.id),
        kind: SpanKind::Internal as i32,
        start_time_unix_nano: cx.anchor + t.start_ns,
        end_time_unix_nano: cx.anchor + t.end_ns.max(t.start_ns),
        attributes: attrs,
        status,
        ..Default::default()
    }
}

/// The `ExportTraceServiceRequest` of a run (see the module docs). Pure.
pub fn export(report: &RunReport) -> ExportTraceServiceRequest {
    let mut spans = Vec::new();
    for job in &report.jobs {
        let endpoint = report.endpoint_of(&job.id);
        let cx = JobContext {
            run_id: &report.run_id,
            anchor: report.reference_instant_unix_ns,
            model: endpoint.map_or("unknown", |e| e.model.as_str()),
            provider: provider_name(endpoint),
            server: server(endpoint),
        };
        for t in &job.trajectories {
            let trace = trace_id(&report.run_id, &t.id);
            spans.push(root_span(&cx, job, t, &trace));
            let parent = span_id(&report.run_id, &t.id, None);
            for (i, st) in t.steps.iter().enumerate() {
                spans.push(step_span(&cx, t, i + 1, st, &trace, &parent));
            }
        }
    }
    let resource = vec![
        kv("service.name", s("inferscope-bench")),
        kv("service.version", s(env!("CARGO_PKG_VERSION"))),
        kv("inferscope.run_id", s(report.run_id.clone())),
        kv(
            "inferscope.clock_domain_id",
            s(report.clock_domain_id.clone()),
        ),
        kv(
            "inferscope.reference_instant_unix_ns",
            int(report.reference_instant_unix_ns),
        ),
        kv(
            "inferscope.simulated",
            Any::BoolValue(report.endpoints.iter().any(|e| e.simulated)),
        ),
        kv(
            "inferscope.power_source",
            s(report.power.source.map_or("unavailable", |p| p.label())),
        ),
    ];
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: resource,
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: SCOPE_NAME.into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                    ..Default::default()
                }),
                spans,
                schema_url: SCHEMA_URL.into(),
            }],
            schema_url: SCHEMA_URL.into(),
        }],
    }
}

/// Number of spans in an export.
pub fn span_count(export: &ExportTraceServiceRequest) -> usize {
    export
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum()
}

/// The export as OTLP/JSON (pretty-printed; the opentelemetry-proto serde mapping).
pub fn to_json(export: &ExportTraceServiceRequest) -> String {
    serde_json::to_string_pretty(export).expect("OTLP messages always serialize")
}

/// The export as protobuf bytes (uncompressed).
pub fn to_protobuf(export: &ExportTraceServiceRequest) -> Vec<u8> {
    prost::Message::encode_to_vec(export)
}

/// `bytes` gzip-compressed (the OTLP/HTTP `Content-Encoding: gzip` body).
pub fn gzip(bytes: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).expect("writing to memory");
    e.finish().expect("writing to memory")
}

/// The export in `encoding`: protobuf bytes, or OTLP/JSON text.
pub fn encode(export: &ExportTraceServiceRequest, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Protobuf => to_protobuf(export),
        Encoding::Json => to_json(export).into_bytes(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inferscope_model::{Basis, FailureCode, TokenEstimate, ToolErrorCode};

    #[test]
    fn ids_are_deterministic_and_of_the_right_length() {
        let t = trace_id("run-1", "s::j#0");
        assert_eq!(t.len(), 16);
        assert_eq!(t, trace_id("run-1", "s::j#0"));
        assert_ne!(t, trace_id("run-2", "s::j#0"));
        let a = span_id("run-1", "s::j#0", None);
        let b = span_id("run-1", "s::j#0", Some(1));
        assert_eq!((a.len(), b.len()), (8, 8));
        assert_ne!(a, b);
        assert_ne!(id_bytes(&[0; 32], 8), vec![0; 8]);
    }

    fn step(kind: StepKind) -> StepReport {
        StepReport {
            step_id: 7,
            kind,
            name: if kind == StepKind::Tool {
                "read_file".into()
            } else {
                "chat".into()
            },
            start_ns: 10,
            end_ns: 20,
            duration_ms: 0.0,
            start_before_anchor_ns: None,
            end_before_anchor_ns: None,
            harness_step_id: None,
            status: Some(StepStatus::Completed),
            failure_code: None,
            tool_error: None,
            prompt_tokens: Some(12),
            cached_tokens: Some(0),
            completion_tokens: None,
            completion_tokens_estimate: Some(TokenEstimate {
                tokens: 3,
                method: inferscope_model::EstimateMethod::Utf8BytesDiv4,
            }),
            ttft_ms: Some(25.0),
            max_tokens: Some(64),
            finish_reason: Some("length".into()),
            http_status: Some(200),
            response_model: Some("served-model".into()),
            tool_call_id: None,
            energy: Figure::missing(Basis::Unavailable, "no power source"),
            tokens_per_joule: Figure::missing(Basis::Unavailable, "no power source"),
            warmup: false,
            attribution: None,
        }
    }

    /// `error.type` per the convention: the HTTP status code as a string, a tool's own
    /// error code, the failure code otherwise; nothing for a step that did not fail.
    #[test]
    fn error_type_follows_the_convention() {
        let mut st = step(StepKind::LlmCall);
        assert_eq!(error_type(&st), None);
        st.status = Some(StepStatus::Failed);
        st.failure_code = Some(FailureCode::HttpStatus);
        st.http_status = Some(503);
        assert_eq!(error_type(&st).as_deref(), Some("503"));
        st.failure_code = Some(FailureCode::IdleTimeout);
        assert_eq!(error_type(&st).as_deref(), Some("idle_timeout"));
        let mut tool = step(StepKind::Tool);
        tool.status = Some(StepStatus::Failed);
        tool.failure_code = Some(FailureCode::ToolError);
        tool.tool_error = Some(ToolErrorCode::BadArguments);
        assert_eq!(error_type(&tool).as_deref(), Some("bad_arguments"));
        tool.status = Some(StepStatus::Cancelled);
        tool.failure_code = None;
        tool.tool_error = None;
        assert_eq!(error_type(&tool).as_deref(), Some("cancelled"));
    }

    #[test]
    fn provider_names_the_engine() {
        let mut e = EndpointReport {
            suite: "s".into(),
            base_url: "http://10.0.0.5:8000/v1".into(),
            simulated: false,
            model: "m".into(),
            engine_profile: "vllm".into(),
            setup_error: None,
        };
        assert_eq!(provider_name(Some(&e)), "vllm");
        assert_eq!(server(Some(&e)), Some(("10.0.0.5".into(), 8000)));
        e.engine_profile = "llamacpp".into();
        assert_eq!(provider_name(Some(&e)), "llama.cpp");
        e.engine_profile = "auto".into();
        e.base_url = "https://api.example.com/v1".into();
        assert_eq!(provider_name(Some(&e)), "openai");
        assert_eq!(server(Some(&e)), Some(("api.example.com".into(), 443)));
        e.simulated = true;
        assert_eq!(provider_name(Some(&e)), "inferscope.simulator");
    }

    #[test]
    fn an_estimate_keeps_its_basis_and_missing_energy_its_reason() {
        let cx = JobContext {
            run_id: "r",
            anchor: 1_000,
            model: "m",
            provider: "vllm",
            server: Some(("h".into(), 1)),
        };
        let t = TrajectoryReport {
            id: "s::j#0".into(),
            index: 0,
            stop_reason: inferscope_model::StopReason::FinalAnswer,
            start_ns: 0,
            end_ns: 30,
            graded_pass: None,
            completion_tokens: Figure::missing(Basis::ServerReported, "none"),
            energy: Figure::missing(Basis::Unavailable, "no power source"),
            tokens_per_joule: Figure::missing(Basis::Unavailable, "none"),
            steps: vec![step(StepKind::LlmCall)],
            attribution: None,
            shard: None,
        };
        let span = step_span(&cx, &t, 1, &t.steps[0], &[1; 16], &[2; 8]);
        let keys: Vec<&str> = span.attributes.iter().map(|a| a.key.as_str()).collect();
        assert!(!keys.contains(&"gen_ai.usage.output_tokens"), "{keys:?}");
        assert!(keys.contains(&"inferscope.usage.output_tokens_estimate"));
        assert!(keys.contains(&"inferscope.energy_reason"));
        assert!(!keys.contains(&"inferscope.energy_mj"));
        assert!(keys.contains(&"gen_ai.response.finish_reasons"));
        assert_eq!(span.start_time_unix_nano, 1_010);
        assert_eq!(span.status, None);
    }
}
