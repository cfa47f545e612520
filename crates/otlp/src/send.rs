//! OTLP/HTTP delivery of an export to a collector: `POST {endpoint}/v1/traces`, protobuf
//! with `Content-Encoding: gzip` (the default) or JSON.

use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};

use super::{Encoding, encode, gzip, span_count};

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
    /// Bytes of the request body (compressed, for protobuf).
    pub body_bytes: usize,
    /// `partial_success.rejected_spans` when the collector reported any.
    pub rejected_spans: Option<u64>,
    /// `partial_success.error_message` when given.
    pub message: Option<String>,
}

/// The collector's `partial_success` from its answer: protobuf when it says so (or sent
/// bytes that decode), else JSON; `(None, None)` for an empty or unreadable body.
fn partial_success(content_type: Option<&str>, body: &[u8]) -> (Option<u64>, Option<String>) {
    let from_proto = || {
        <ExportTraceServiceResponse as prost::Message>::decode(body)
            .ok()
            .and_then(|r| r.partial_success)
            .map(|p| (u64::try_from(p.rejected_spans).ok(), Some(p.error_message)))
    };
    let from_json = || {
        let v: serde_json::Value = serde_json::from_slice(body).ok()?;
        let p = &v["partialSuccess"];
        let rejected = p["rejectedSpans"]
            .as_u64()
            .or_else(|| p["rejectedSpans"].as_str().and_then(|x| x.parse().ok()));
        Some((rejected, p["errorMessage"].as_str().map(str::to_string)))
    };
    let parsed = if content_type.is_some_and(|c| c.contains("protobuf")) {
        from_proto()
    } else {
        from_json().or_else(from_proto)
    };
    let (rejected, message) = parsed.unwrap_or((None, None));
    (
        rejected.filter(|&n| n > 0),
        message.filter(|m| !m.is_empty()),
    )
}

/// Sends `export` to a collector over OTLP/HTTP: `POST {endpoint}/v1/traces` with
/// `Content-Type: application/x-protobuf` and a gzip body, or `application/json`, within
/// `timeout`.
///
/// Errors (text, the URL without its userinfo): an invalid URL, a transport failure, a
/// non-2xx status with an excerpt of its body.
pub async fn send(
    endpoint: &str,
    export: &ExportTraceServiceRequest,
    encoding: Encoding,
    timeout: Duration,
) -> Result<SendOutcome, String> {
    let url = traces_url(endpoint);
    // Messages name the URL without its userinfo — everything before
    // its last `@`, so a password with a space or a `/` is hidden too — and without its
    // query or fragment.
    let shown = inferscope_redact::url_shown(&url);
    if endpoint.contains(['?', '#']) {
        return Err(format!(
            "invalid OTLP endpoint \"{}\": a query or fragment is not allowed (`/v1/traces` \
             is appended to the endpoint)",
            inferscope_redact::url_shown(endpoint.trim())
        ));
    }
    let parsed =
        reqwest::Url::parse(&url).map_err(|e| format!("invalid OTLP endpoint \"{shown}\": {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!("invalid OTLP endpoint \"{shown}\": not http(s)"));
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(timeout)
        .build()
        .map_err(|e| format!("OTLP client: {e}"))?;
    let body = encode(export, encoding);
    let mut req = client.post(&url);
    let body = match encoding {
        Encoding::Protobuf => {
            req = req
                .header(reqwest::header::CONTENT_TYPE, "application/x-protobuf")
                .header(reqwest::header::CONTENT_ENCODING, "gzip");
            gzip(&body)
        }
        Encoding::Json => {
            req = req.header(reqwest::header::CONTENT_TYPE, "application/json");
            body
        }
    };
    let body_bytes = body.len();
    let resp = req
        .body(body)
        .send()
        .await
        .map_err(|e| format!("POST {shown}: {}", e.without_url()))?;
    let status = resp.status();
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let bytes = resp.bytes().await.unwrap_or_default();
    if !status.is_success() {
        let t: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
        return Err(format!(
            "POST {shown}: HTTP {}: {}",
            status.as_u16(),
            inferscope_redact::excerpt(&t)
        ));
    }
    let (rejected_spans, message) = partial_success(content_type.as_deref(), &bytes);
    Ok(SendOutcome {
        url,
        status: status.as_u16(),
        spans: span_count(export),
        body_bytes,
        rejected_spans,
        message,
    })
}

/// How long a collector gets to answer.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Sends a finished run's spans to `endpoint` in `encoding` and prints the outcome
/// (stdout) or the problem (stderr, `warning:`). Returns whether the collector accepted
/// them.
// Boxed at the crate's edge: an unboxed `impl Future` would be compiled again in every
// crate that polls it (docs/architecture.md "Build cost").
pub fn send_report<'a>(
    report: &'a inferscope_model::RunReport,
    endpoint: &'a str,
    encoding: Encoding,
) -> futures_util::future::BoxFuture<'a, bool> {
    Box::pin(send_report_inner(report, endpoint, encoding))
}

async fn send_report_inner(
    report: &inferscope_model::RunReport,
    endpoint: &str,
    encoding: Encoding,
) -> bool {
    let body = super::export(report);
    match send(endpoint, &body, encoding, SEND_TIMEOUT).await {
        Ok(o) => {
            println!(
                "otlp: sent {} spans to {} ({}, {} bytes, HTTP {}){}",
                o.spans,
                inferscope_redact::url_shown(&o.url),
                encoding.as_str(),
                o.body_bytes,
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
            eprintln!("warning: otlp: {}", inferscope_redact::urls(&e));
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_url_appends_the_default_path_once() {
        assert_eq!(traces_url("http://h:4318"), "http://h:4318/v1/traces");
        assert_eq!(traces_url("http://h:4318/"), "http://h:4318/v1/traces");
        assert_eq!(
            traces_url("http://h:4318/v1/traces"),
            "http://h:4318/v1/traces"
        );
    }

    #[test]
    fn partial_success_reads_protobuf_and_json_answers() {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTracePartialSuccess;
        let r = ExportTraceServiceResponse {
            partial_success: Some(ExportTracePartialSuccess {
                rejected_spans: 2,
                error_message: "bad span".into(),
            }),
        };
        let bytes = prost::Message::encode_to_vec(&r);
        assert_eq!(
            partial_success(Some("application/x-protobuf"), &bytes),
            (Some(2), Some("bad span".into()))
        );
        assert_eq!(
            partial_success(
                Some("application/json"),
                br#"{"partialSuccess":{"rejectedSpans":"3"}}"#
            ),
            (Some(3), None)
        );
        assert_eq!(
            partial_success(Some("application/x-protobuf"), b""),
            (None, None)
        );
        assert_eq!(
            partial_success(None, br#"{"partialSuccess":{}}"#),
            (None, None)
        );
    }
}
