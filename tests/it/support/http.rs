//! A loopback HTTP/1.1 test server on hyper: every request, its body read whole, goes to
//! one synchronous closure. The receivers of the OTLP and telemetry tests (a collector, a
//! `/metrics` endpoint); included by `support` and, alone, by the telemetry tests.

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
pub use hyper::{HeaderMap, Method, StatusCode, Uri};

/// A request as the handler sees it.
pub struct Request {
    pub method: Method,
    pub uri: Uri,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// A whole response.
pub type Response = hyper::Response<Full<Bytes>>;

/// A response with `status`, `content-type` and `body`.
pub fn response(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response {
    let mut r = hyper::Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        content_type.parse().expect("a valid content-type"),
    );
    r
}

/// Serves `listener` with `handler` until the task is dropped or aborted.
pub async fn serve(
    listener: tokio::net::TcpListener,
    handler: impl Fn(Request) -> Response + Send + Sync + 'static,
) {
    let handler = Arc::new(handler);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let handler = handler.clone();
        let service =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let handler = handler.clone();
                async move {
                    let (parts, body) = req.into_parts();
                    let body = body
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    Ok::<_, Infallible>(handler(Request {
                        method: parts.method,
                        uri: parts.uri,
                        headers: parts.headers,
                        body,
                    }))
                }
            });
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}
