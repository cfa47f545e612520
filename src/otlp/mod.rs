//! OTLP export of a run's trajectories (issue 8 item 3): OTLP/JSON trace spans, and
//! OTLP/HTTP delivery to a collector.
//!
//! Shape (opentelemetry-proto `ExportTraceServiceRequest`, JSON encoding): one resource
//! (`service.name = inferscope-bench`, the run id, clock domain and anchor), one scope, and
//! per trajectory one trace:
//! - a root span `invoke_agent {job id}` (kind INTERNAL) over the trajectory;
//! - per LLM step a child `chat {model}` (kind CLIENT); per tool step a child
//!   `execute_tool {tool}` (kind INTERNAL);
//! - OpenTelemetry GenAI attributes (`gen_ai.operation.name`, `gen_ai.request.model`,
//!   `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`,
//!   `gen_ai.usage.cache_read.input_tokens`, `gen_ai.tool.name`, `gen_ai.agent.name`,
//!   `gen_ai.conversation.id`, `gen_ai.response.time_to_first_chunk` in s, `error.type`);
//!   energy has no GenAI attribute, so it is the project's own `inferscope.energy_mj`
//!   with `inferscope.energy_basis` (`measured`, `apportioned`, `simulated`)
//!   (docs/measurement.md); a trajectory's root span carries its
//!   trajectory energy figure. A client-estimated output count (the report's
//!   `completion_tokens_estimate`, no server usage — docs/measurement.md) is
//!   `inferscope.usage.output_tokens_estimate`, never `gen_ai.usage.output_tokens`. A value
//!   the run did not observe is left out (OTLP has no null), never written as 0.
//!
//! Times are unix-nanosecond strings **anchored at the run's recorded reference instant**:
//! `reference_instant_unix_ns + elapsed_ns` (docs/measurement.md; never the export time). Ids are
//! deterministic lowercase hex from SHA-256 of the run id and trajectory id (trace, 16
//! bytes) and of those plus the step id (span, 8 bytes), so exporting a run twice gives
//! the same trace. Enum fields are integers, 64-bit integers strings, as the JSON encoding
//! requires.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::model::{
    Figure, JobReport, RunReport, StepKind, StepReport, StepStatus, TrajectoryReport,
};

/// `SPAN_KIND_INTERNAL`.
pub const SPAN_KIND_INTERNAL: u8 = 1;
/// `SPAN_KIND_CLIENT`.
pub const SPAN_KIND_CLIENT: u8 = 3;
/// `STATUS_CODE_ERROR`.
pub const STATUS_CODE_ERROR: u8 = 2;
/// The instrumentation scope name.
pub const SCOPE_NAME: &str = "inferscope-bench";

fn digest(parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0]);
    }
    h.finalize().into()
}

/// `n` bytes of `d` as lowercase hex, never all zero (an all-zero id is invalid in OTLP).
fn id_hex(d: &[u8; 32], n: usize) -> String {
    let mut b = d[..n].to_vec();
    if b.iter().all(|&x| x == 0) {
        b[n - 1] = 1;
    }
    hex::encode(b)
}

/// The trace id of a trajectory: 32 hex characters.
pub fn trace_id(run_id: &str, trajectory: &str) -> String {
    id_hex(&digest(&["inferscope-bench/trace", run_id, trajectory]), 16)
}

/// A span id: 16 hex characters; `step = None` is the trajectory's root span.
pub fn span_id(run_id: &str, trajectory: &str, step: Option<u64>) -> String {
    let s = step.map_or_else(|| "root".to_string(), |s| s.to_string());
    id_hex(
        &digest(&["inferscope-bench/span", run_id, trajectory, &s]),
        8,
    )
}

fn kv(key: &str, value: Value) -> Value {
    json!({"key": key, "value": value})
}

fn s(v: impl Into<String>) -> Value {
    json!({"stringValue": v.into()})
}

fn int(v: u64) -> Value {
    json!({"intValue": v.to_string()})
}

fn boolean(v: bool) -> Value {
    json!({"boolValue": v})
}

fn double(v: f64) -> Value {
    json!({"doubleValue": v})
}

/// The model a job's requests named: its suite's endpoint model.
fn model_of<'a>(report: &'a RunReport, job: &JobReport) -> &'a str {
    report
        .endpoint_of(&job.id)
        .map_or("unknown", |e| e.model.as_str())
}

fn energy_attrs(attrs: &mut Vec<Value>, energy: &Figure<u64>) {
    if let Some(mj) = energy.value {
        attrs.push(kv("inferscope.energy_mj", int(mj)));
        attrs.push(kv("inferscope.energy_basis", s(energy.basis.name())));
    }
}

fn step_span(
    report: &RunReport,
    model: &str,
    t: &TrajectoryReport,
    st: &StepReport,
    trace: &str,
    parent: &str,
) -> Value {
    let anchor = report.reference_instant_unix_ns;
    let mut attrs = Vec::new();
    let (name, kind) = if st.kind == StepKind::Tool {
        attrs.push(kv("gen_ai.operation.name", s("execute_tool")));
        attrs.push(kv("gen_ai.tool.name", s(st.name.clone())));
        attrs.push(kv("gen_ai.tool.type", s("function")));
        (format!("execute_tool {}", st.name), SPAN_KIND_INTERNAL)
    } else {
        attrs.push(kv("gen_ai.operation.name", s("chat")));
        attrs.push(kv("gen_ai.request.model", s(model)));
        attrs.push(kv("gen_ai.request.stream", boolean(true)));
        if let Some(v) = st.prompt_tokens {
            attrs.push(kv("gen_ai.usage.input_tokens", int(v)));
        }
        // `gen_ai.usage.*` is server usage: a client estimate (docs/measurement.md) is not passed
        // off as one.
        if let Some(v) = st.completion_tokens {
            attrs.push(kv("gen_ai.usage.output_tokens", int(v)));
        } else if let Some(e) = st.completion_tokens_estimate {
            attrs.push(kv("inferscope.usage.output_tokens_estimate", int(e.tokens)));
        }
        if let Some(v) = st.cached_tokens {
            attrs.push(kv("gen_ai.usage.cache_read.input_tokens", int(v)));
        }
        if let Some(ms) = st.ttft_ms {
            attrs.push(kv(
                "gen_ai.response.time_to_first_chunk",
                double(ms / 1000.0),
            ));
        }
        (format!("chat {model}"), SPAN_KIND_CLIENT)
    };
    attrs.push(kv("gen_ai.conversation.id", s(t.id.clone())));
    attrs.push(kv("inferscope.step_id", int(st.step_id)));
    energy_attrs(&mut attrs, &st.energy);
    if st.warmup {
        attrs.push(kv("inferscope.warmup", boolean(true)));
    }
    if let Some(code) = st.failure_code {
        attrs.push(kv("error.type", s(code.as_str())));
    }
    let mut span = json!({
        "traceId": trace,
        "spanId": span_id(&report.run_id, &t.id, Some(st.step_id)),
        "parentSpanId": parent,
        "name": name,
        "kind": kind,
        "startTimeUnixNano": (anchor + st.start_ns).to_string(),
        "endTimeUnixNano": (anchor + st.end_ns.max(st.start_ns)).to_string(),
        "attributes": attrs,
    });
    let failed = matches!(st.status, Some(StepStatus::Failed | StepStatus::Cancelled));
    if failed || st.failure_code.is_some() {
        span["status"] = json!({
            "code": STATUS_CODE_ERROR,
            "message": st.failure_code.map_or_else(
                || st.status.map_or("failed", StepStatus::as_str).to_string(),
                |c| c.as_str().to_string(),
            ),
        });
    }
    span
}

fn root_span(report: &RunReport, job: &JobReport, t: &TrajectoryReport, trace: &str) -> Value {
    let anchor = report.reference_instant_unix_ns;
    let mut attrs = vec![
        kv("gen_ai.operation.name", s("invoke_agent")),
        kv("gen_ai.agent.name", s(job.id.clone())),
        kv("gen_ai.agent.id", s(t.id.clone())),
        kv("gen_ai.conversation.id", s(t.id.clone())),
        kv("inferscope.job.kind", s(job.kind.as_str())),
        kv("inferscope.stop_reason", s(t.stop_reason.as_str())),
    ];
    if let Some(p) = t.graded_pass {
        attrs.push(kv("inferscope.graded_pass", boolean(p)));
    }
    // The trajectory's own energy figure (its steps' windows; never summed across
    // trajectories in flight together).
    energy_attrs(&mut attrs, &t.energy);
    json!({
        "traceId": trace,
        "spanId": span_id(&report.run_id, &t.id, None),
        "name": format!("invoke_agent {}", job.id),
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": (anchor + t.start_ns).to_string(),
        "endTimeUnixNano": (anchor + t.end_ns.max(t.start_ns)).to_string(),
        "attributes": attrs,
    })
}

/// The OTLP/JSON `ExportTraceServiceRequest` of a run (see the module docs).
pub fn export(report: &RunReport) -> Value {
    let mut spans = Vec::new();
    for job in &report.jobs {
        let model = model_of(report, job);
        for t in &job.trajectories {
            let trace = trace_id(&report.run_id, &t.id);
            spans.push(root_span(report, job, t, &trace));
            let parent = span_id(&report.run_id, &t.id, None);
            for st in &t.steps {
                spans.push(step_span(report, model, t, st, &trace, &parent));
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
            boolean(report.endpoints.iter().any(|e| e.simulated)),
        ),
    ];
    json!({
        "resourceSpans": [{
            "resource": {"attributes": resource},
            "scopeSpans": [{
                "scope": {"name": SCOPE_NAME, "version": env!("CARGO_PKG_VERSION")},
                "spans": spans,
            }],
        }],
    })
}

/// Number of spans in an export.
pub fn span_count(export: &Value) -> usize {
    export["resourceSpans"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|r| r["scopeSpans"].as_array().into_iter().flatten())
        .map(|s| s["spans"].as_array().map_or(0, Vec::len))
        .sum()
}

/// The traces URL of a collector: `URL` when it already ends in `/v1/traces`, else
/// `URL/v1/traces` (the OTLP/HTTP default path).
pub fn traces_url(endpoint: &str) -> String {
    let e = endpoint.trim().trim_end_matches('/');
    if e.ends_with("/v1/traces") {
        e.to_string()
    } else {
        format!("{e}/v1/traces")
    }
}

/// What a collector answered.
#[derive(Debug, Clone, PartialEq)]
pub struct SendOutcome {
    /// The URL posted to.
    pub url: String,
    /// HTTP status.
    pub status: u16,
    /// Spans sent.
    pub spans: usize,
    /// `partialSuccess.rejectedSpans` when the collector reported any.
    pub rejected_spans: Option<u64>,
    /// `partialSuccess.errorMessage` when given.
    pub message: Option<String>,
}

/// Sends `export` to a collector over OTLP/HTTP with the JSON encoding: `POST
/// {endpoint}/v1/traces`, `content-type: application/json`, within `timeout`.
///
/// Errors (text): an invalid URL, a transport failure, a non-2xx status with its body.
pub async fn send(
    endpoint: &str,
    export: &Value,
    timeout: Duration,
) -> Result<SendOutcome, String> {
    let url = traces_url(endpoint);
    let parsed =
        reqwest::Url::parse(&url).map_err(|e| format!("invalid OTLP endpoint {url:?}: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("invalid OTLP endpoint {url:?}: not http(s)"));
    }
    // Messages name the URL without its userinfo (issue 15 item 5).
    let shown = crate::redact::urls(&url).into_owned();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .map_err(|e| format!("OTLP client: {e}"))?;
    let body = serde_json::to_vec(export).map_err(|e| e.to_string())?;
    let resp = client
        .post(&url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| format!("POST {shown}: {}", e.without_url()))?;
    let status = resp.status();
    let text = resp.text().await.unwrap_or_default();
    if !status.is_success() {
        let t: String = text.chars().take(300).collect();
        return Err(format!(
            "POST {shown}: HTTP {}: {}",
            status.as_u16(),
            crate::redact::excerpt(&t)
        ));
    }
    let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
    let partial = &v["partialSuccess"];
    Ok(SendOutcome {
        url,
        status: status.as_u16(),
        spans: span_count(export),
        rejected_spans: partial["rejectedSpans"]
            .as_u64()
            .or_else(|| {
                partial["rejectedSpans"]
                    .as_str()
                    .and_then(|x| x.parse().ok())
            })
            .filter(|&n| n > 0),
        message: partial["errorMessage"]
            .as_str()
            .filter(|m| !m.is_empty())
            .map(str::to_string),
    })
}

/// How long a collector gets to answer.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends a finished run's spans to `endpoint` and prints the outcome (stdout) or the
/// problem (stderr, `warning:`). Returns whether the collector accepted them.
pub async fn send_report(report: &RunReport, endpoint: &str) -> bool {
    let body = export(report);
    match send(endpoint, &body, SEND_TIMEOUT).await {
        Ok(o) => {
            println!(
                "otlp: sent {} spans to {} (HTTP {}){}",
                o.spans,
                crate::redact::urls(&o.url),
                o.status,
                match (o.rejected_spans, &o.message) {
                    (Some(n), Some(m)) => format!("; collector rejected {n}: {m}"),
                    (Some(n), None) => format!("; collector rejected {n}"),
                    (None, Some(m)) => format!("; collector: {m}"),
                    (None, None) => String::new(),
                }
            );
            o.rejected_spans.is_none()
        }
        Err(e) => {
            eprintln!("warning: otlp: {}", crate::redact::urls(&e));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_deterministic_hex_of_the_right_length() {
        let t = trace_id("run-1", "s::j#0");
        assert_eq!(t.len(), 32);
        assert!(
            t.chars()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_eq!(t, trace_id("run-1", "s::j#0"));
        assert_ne!(t, trace_id("run-2", "s::j#0"));
        let a = span_id("run-1", "s::j#0", None);
        let b = span_id("run-1", "s::j#0", Some(1));
        assert_eq!((a.len(), b.len()), (16, 16));
        assert_ne!(a, b);
        assert_ne!(id_hex(&[0; 32], 8), "0000000000000000");
    }

    #[test]
    fn traces_url_appends_the_default_path_once() {
        assert_eq!(traces_url("http://h:4318"), "http://h:4318/v1/traces");
        assert_eq!(traces_url("http://h:4318/"), "http://h:4318/v1/traces");
        assert_eq!(
            traces_url("http://h:4318/v1/traces"),
            "http://h:4318/v1/traces"
        );
    }
}
