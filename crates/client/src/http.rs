//! The HTTP edge: an OpenAI-compatible chat-completions client. A plain-`http` endpoint's
//! requests (chat, `/models`, `/tokenize`) go over HTTP/1.1 connections of hyper's
//! connection API pooled by this crate ([`super::h1`]); an `https` endpoint's go through
//! reqwest 0.13 (rustls).
//!
//! Timing (docs/measurement.md "Per request (client timing)"): `send_ns` is taken just before the
//! request is handed to the transport (before a connection is checked out or opened), `headers_ns` when the response head is in, and every SSE event
//! carries the arrival of the network read that completed it (see [`super::sse`]). All values are
//! `elapsed_ns` on the run's [`RunClock`].
//!
//! Failures never escape as `Err` or panics from [`Client::chat`]: each becomes a
//! [`RequestRecord`] with `status = failed` and a typed [`FailureCode`].

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http_body_util::BodyDataStream;
use reqwest::header::{
    ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, HeaderMap, HeaderValue, USER_AGENT,
};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};
use serde_json::{Map, Value};
use tokio::time::Instant as TokioInstant;

use super::accumulate::{Flow, RequestHead, StreamAccumulator};
use super::connect::CONNECT_RETRANSMIT_NS;
use super::connect::{ConnectCounts, ConnectLog, ConnectTimer};
use super::h1::{Pool, SendError};
use super::in_flight::InFlight;
use super::record::{FailureCode, RecordWarning, RequestRecord, sanitize_error};
use super::sse::{DEFAULT_MAX_EVENT_BYTES, ReadStamps, SseError, SseFramer, feed};
use inferscope_clock::RunClock;

/// Client settings.
#[derive(Clone)]
pub struct ClientConfig {
    /// Base URL of the OpenAI-compatible API, ending in `/v1` (e.g.
    /// `http://127.0.0.1:8000/v1`); a trailing `/` is ignored. Requests go to
    /// `{base_url}/chat/completions` and `{base_url}/models`.
    pub base_url: String,
    /// Bearer token sent as `Authorization: Bearer …`; never logged or serialized.
    pub api_key: Option<String>,
    /// Deadline for a whole request, from send to the end of the body → `timeout`.
    pub request_timeout: Duration,
    /// Longest silence (no bytes at all; SSE comments count as bytes) allowed on a streamed
    /// body after the response head → `idle_timeout` (C03).
    pub idle_timeout: Duration,
    /// Cap on one SSE event (bytes buffered since the last event boundary), and on a
    /// non-streamed body → `event_too_large` (C30). Default 16 MiB.
    pub max_event_bytes: usize,
    /// Idle connections kept per host for reuse. Neither pool limits the number of
    /// concurrent connections, so this never caps concurrency; size it to at least the
    /// concurrency so every connection can be reused (no reconnect inside TTFT).
    pub max_connections: usize,
    /// Send a plain-`http` endpoint's requests through reqwest too, as `https` ones go,
    /// instead of the client's own HTTP/1.1 pool ([`super::h1`]). Default `false`; the
    /// tests run the reqwest transport over loopback with it.
    pub reqwest_for_http: bool,
}

impl ClientConfig {
    /// Defaults: no API key, request timeout 600 s, idle timeout 60 s, max event 16 MiB,
    /// 256 pooled connections.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            api_key: None,
            request_timeout: Duration::from_secs(600),
            idle_timeout: Duration::from_secs(60),
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            max_connections: 256,
            reqwest_for_http: false,
        }
    }
}

impl std::fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("request_timeout", &self.request_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("max_event_bytes", &self.max_event_bytes)
            .field("max_connections", &self.max_connections)
            .field("reqwest_for_http", &self.reqwest_for_http)
            .finish()
    }
}

/// Errors of [`Client::new`] and [`Client::list_models`] (preflight). Messages are
/// lowercase fragments that read after "failed to …".
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// `base_url` is not an absolute http(s) URL.
    #[error("invalid base URL {url:?}: {reason}")]
    InvalidBaseUrl {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// reqwest could not build its client (TLS setup).
    #[error("build HTTP client: {0}")]
    Build(String),
    /// The request failed before a response head (connect, reset, TLS).
    #[error("reach {url}: {reason}")]
    Request {
        /// Request URL.
        url: String,
        /// Transport error text.
        reason: String,
    },
    /// The server answered with a non-2xx status.
    #[error("{url} answered HTTP {status}: {message}")]
    HttpStatus {
        /// Request URL.
        url: String,
        /// HTTP status code.
        status: u16,
        /// Sanitized error text from the body.
        message: String,
    },
    /// The body was not the expected JSON.
    #[error("read response of {url}: {reason}")]
    InvalidResponse {
        /// Request URL.
        url: String,
        /// What was wrong.
        reason: String,
    },
    /// No complete response within `request_timeout`.
    #[error("{url} did not answer within {timeout_ms} ms")]
    Timeout {
        /// Request URL.
        url: String,
        /// The timeout, ms.
        timeout_ms: u128,
    },
}

/// One chat-completions request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatRequest {
    /// Caller-chosen id, sent as `X-Request-ID` and copied into the record.
    pub request_id: String,
    /// Model name.
    pub model: String,
    /// OpenAI `messages` array entries.
    pub messages: Vec<Value>,
    /// OpenAI `tools` entries; omitted from the body when empty.
    pub tools: Vec<Value>,
    /// `max_tokens`; omitted when `None`.
    pub max_tokens: Option<u32>,
    /// `temperature`; omitted when `None`.
    pub temperature: Option<f64>,
    /// `seed`; omitted when `None`.
    pub seed: Option<u64>,
    /// `n`, the number of choices; omitted when `None` (one choice). With more than one,
    /// each choice is measured on its own and choice 0 is the output.
    pub n: Option<u32>,
    /// Streamed (SSE) or not.
    pub stream: bool,
    /// Extra body members (e.g. `tool_choice`); cannot override `model`, `messages`,
    /// `tools`, `stream` or `stream_options`.
    pub extra: Map<String, Value>,
    /// Not sent: the fixed output length (per choice) the request asks for through
    /// `max_tokens` and the engine's switches, stamped on its record by the
    /// driver ([`RequestRecord::set_asked`]).
    pub output_tokens_asked: Option<u32>,
    /// Not sent: the prompt tokens the request was built to have.
    pub prompt_tokens_asked: Option<u64>,
}

/// How long an idle pooled connection is kept (either transport).
const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// Largest body [`Client::post_root_json`] reads (64 MiB: a `/tokenize` answer lists every
/// token id of a prompt).
pub const MAX_AUX_BODY_BYTES: usize = 64 * 1024 * 1024;

const RESERVED_KEYS: [&str; 5] = ["model", "messages", "tools", "stream", "stream_options"];

/// The JSON body of a [`ChatRequest`], serialized straight from its fields (no `Value`
/// tree is built, nothing is cloned). Member order: `model`, `messages`, `tools`,
/// `max_tokens`, `temperature`, `seed`, `n`, the `extra` members, `stream`,
/// `stream_options`. An `extra` member named like one of the optional typed members
/// replaces that member's value where it stands when the typed member is set, and is
/// written among the `extra` members otherwise (one member, never two).
struct Body<'a>(&'a ChatRequest);

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("model", &r.model)?;
        m.serialize_entry("messages", &r.messages)?;
        if !r.tools.is_empty() {
            m.serialize_entry("tools", &r.tools)?;
        }
        // (key, set by a typed field) in body order.
        let typed = [
            ("max_tokens", r.max_tokens.is_some()),
            ("temperature", r.temperature.is_some()),
            ("seed", r.seed.is_some()),
            ("n", r.n.is_some()),
        ];
        for (key, set) in typed {
            if !set {
                continue;
            }
            match r.extra.get(key) {
                Some(v) => m.serialize_entry(key, v)?,
                None => match key {
                    "max_tokens" => m.serialize_entry(key, &r.max_tokens)?,
                    "temperature" => m.serialize_entry(key, &r.temperature)?,
                    "seed" => m.serialize_entry(key, &r.seed)?,
                    _ => m.serialize_entry(key, &r.n)?,
                },
            }
        }
        for (k, v) in &r.extra {
            let written = typed.iter().any(|(key, set)| *set && key == k);
            if !written && !RESERVED_KEYS.contains(&k.as_str()) {
                m.serialize_entry(k, v)?;
            }
        }
        m.serialize_entry("stream", &r.stream)?;
        if r.stream {
            #[derive(Serialize)]
            struct StreamOptions {
                include_usage: bool,
            }
            m.serialize_entry(
                "stream_options",
                &StreamOptions {
                    include_usage: true,
                },
            )?;
        }
        m.end()
    }
}

impl ChatRequest {
    /// The JSON body. Streaming requests always carry
    /// `"stream":true,"stream_options":{"include_usage":true}` (C12 A), serialized last and
    /// in that order. The same members, in the same order, as [`ChatRequest::body_bytes`].
    pub fn body_json(&self) -> Value {
        serde_json::to_value(Body(self)).unwrap_or(Value::Null)
    }

    /// The serialized JSON body (what is sent).
    ///
    /// Errors: a value serde_json cannot encode (a non-finite `temperature` is encoded as
    /// `null`, so in practice none).
    pub fn body_bytes(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut out = Vec::with_capacity(256);
        serde_json::to_writer(&mut out, &Body(self))?;
        Ok(out)
    }
}

/// A request made ready to send: its body serialized and its id header checked, so that
/// sending it ([`Client::send`]) does no encoding work. Build it before the request's
/// scheduled instant ([`Client::prepare`]); cheap to clone (the body is shared).
#[derive(Clone, Debug)]
pub struct PreparedRequest {
    request_id: String,
    id_header: Result<HeaderValue, String>,
    body: Result<Bytes, String>,
    stream: bool,
    choices_requested: Option<u32>,
}

impl PreparedRequest {
    /// The request's id.
    pub fn request_id(&self) -> &str {
        &self.request_id
    }

    /// Whether a streamed response is asked for.
    pub fn stream(&self) -> bool {
        self.stream
    }

    /// Bytes of the serialized body (0 when it could not be encoded).
    pub fn body_len(&self) -> usize {
        self.body.as_ref().map_or(0, Bytes::len)
    }
}

/// The OpenAI-compatible client. Cheap to share by reference across tasks (`Send + Sync`).
#[derive(Clone, Debug)]
pub struct Client {
    transport: Transport,
    /// The chat URL in origin form (path and query), for [`Transport::H1`].
    chat_path: http::Uri,
    chat_url: reqwest::Url,
    models_url: String,
    /// Headers of every streamed / non-streamed chat request (content type, accept,
    /// authorization, and `Host` for [`Transport::H1`]), built once.
    stream_headers: HeaderMap,
    body_headers: HeaderMap,
    /// Why the API key cannot be sent (every chat request then fails to build).
    auth_error: Option<String>,
    config: ClientConfig,
    /// Streamed bodies being read right now, over this client and its clones.
    streams_in_flight: Arc<InFlight>,
    /// The connections the pool opened, timed.
    connects: Arc<ConnectLog>,
}

/// Where a client's requests go.
#[derive(Clone, Debug)]
enum Transport {
    /// A plain-`http` endpoint: HTTP/1.1 connections pooled by this crate ([`super::h1`]).
    H1(Arc<Pool>),
    /// An `https` endpoint: reqwest (rustls), its pool filled only through requests.
    Reqwest(reqwest::Client),
}

/// What [`Client::warm_pool`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarmPool {
    /// Connections asked for.
    pub wanted: u64,
    /// Connections the pool opened meanwhile (the rest were already open, or failed).
    pub opened: u64,
    /// Warm-up requests that failed (connect refused, timeout): the window opens those
    /// connections itself, and their requests say so (`connect_ns`).
    pub failed: u64,
    /// Of the connections opened, those whose connect took
    /// [`crate::connect::CONNECT_RETRANSMIT_NS`] or more: a SYN the server's full listen
    /// backlog dropped, retransmitted after 1 s (the warm-up's time, in no figure).
    pub retransmits: u64,
    /// Wall time of the warm-up, ns.
    pub elapsed_ns: u64,
}

/// What [`next_or_timer`] saw first.
enum Next<T> {
    /// The stream's next item (`None`: it ended).
    Item(Option<T>),
    /// The timer elapsed.
    Timer,
}

/// The next item of `body`, or the timer if it elapses first (the stream wins a tie). The
/// timer is polled only while `armed` does not hold this task's waker (first call, after a
/// reset, or on another task): a pending `Sleep` keeps the waker it was last polled with
/// and wakes it when it elapses, and `is_elapsed` is then checked without re-registering.
/// That keeps one atomic waker registration off every pending read.
async fn next_or_timer<S: futures_util::Stream + Unpin>(
    body: &mut S,
    mut timer: std::pin::Pin<&mut tokio::time::Sleep>,
    armed: &mut Option<std::task::Waker>,
) -> Next<S::Item> {
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(item) = std::pin::Pin::new(&mut *body).poll_next(cx) {
            return std::task::Poll::Ready(Next::Item(item));
        }
        if timer.is_elapsed() {
            return std::task::Poll::Ready(Next::Timer);
        }
        if !armed.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            if timer.as_mut().poll(cx).is_ready() {
                return std::task::Poll::Ready(Next::Timer);
            }
            *armed = Some(cx.waker().clone());
        }
        std::task::Poll::Pending
    })
    .await
}

/// Reads what `body` has ready without waiting: `true` once it ended (or failed), `false`
/// when the next item is not there yet (the body's waker is then this task's).
async fn drain_ready<S: futures_util::Stream<Item = Result<Bytes, E>> + Unpin, E>(
    body: &mut S,
) -> bool {
    std::future::poll_fn(|cx| {
        loop {
            match std::pin::Pin::new(&mut *body).poll_next(cx) {
                std::task::Poll::Ready(Some(Ok(_))) => {}
                std::task::Poll::Ready(_) => return std::task::Poll::Ready(true),
                std::task::Poll::Pending => return std::task::Poll::Ready(false),
            }
        }
    })
    .await
}

/// Reads of one stream that arrive within this of its previous read are one burst (the
/// rest of a network read that hyper hands over chunk by chunk, the tail written right
/// after a token, a server writing faster than 1 ms per token): only the first read of a
/// burst yields before it is parsed. At real token intervals (several ms) every token read
/// starts a burst and yields as before; at saturation, where a response arrives in a few
/// network reads, the stream no longer rotates through every other stream's task between
/// two chunks of one read. What a read inside a burst costs the others: its parse (about
/// 0.1 µs per event) runs before their stamps (BENCHMARKS.md "Client cost").
const BURST_NS: u64 = 1_000_000;

/// Yields once by waking itself: the task goes to the back of its worker's run queue, so
/// every task already runnable (the other streams whose reads completed in this tick, and
/// their connection tasks) runs before it continues. Unlike `tokio::task::yield_now`, it
/// does not wait for the next I/O driver poll, which costs a syscall and keeps every
/// stream's state out of cache longer (BENCHMARKS.md).
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            return std::task::Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Transport error text: the error and its sources, joined by `: `.
/// Whether `e` is hyper's refusal of a response head over its size limit (the server
/// answered; the head was too large to read), anywhere in its source chain.
fn is_head_too_large(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut src = Some(e);
    while let Some(inner) = src {
        if inner
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_parse_too_large)
        {
            return true;
        }
        src = inner.source();
    }
    false
}

fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(inner) = src {
        let t = inner.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = inner.source();
    }
    sanitize_error(&s)
}

/// Error text of a non-2xx body: a string `error.message`, `error`, `message` or `detail`
/// of a JSON body (never other members, which may echo the request), else the text.
fn error_body_text(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    match serde_json::from_str::<Value>(&text) {
        Ok(v) => {
            let pick = |v: &Value| -> Option<String> {
                v.get("error")
                    .and_then(|e| e.get("message"))
                    .or_else(|| v.get("error"))
                    .or_else(|| v.get("message"))
                    .or_else(|| v.get("detail"))
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            sanitize_error(&pick(&v).unwrap_or_default())
        }
        Err(_) => sanitize_error(&text),
    }
}

impl Client {
    /// Builds the client: validates `base_url`, installs the ring rustls crypto provider
    /// (idempotent), disables proxies and redirects, enables TCP_NODELAY and sizes the
    /// idle pool to `max_connections`.
    ///
    /// Errors: [`ClientError::InvalidBaseUrl`], [`ClientError::Build`].
    pub fn new(config: ClientConfig) -> Result<Self, ClientError> {
        let base = config.base_url.trim_end_matches('/').to_string();
        let url = reqwest::Url::parse(&base).map_err(|e| ClientError::InvalidBaseUrl {
            url: config.base_url.clone(),
            reason: e.to_string(),
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ClientError::InvalidBaseUrl {
                url: config.base_url.clone(),
                reason: format!("scheme {:?} is not http or https", url.scheme()),
            });
        }
        let _ = rustls::crypto::ring::default_provider().install_default();
        let connects = Arc::new(ConnectLog::default());
        let chat_url = reqwest::Url::parse(&format!("{base}/chat/completions")).map_err(|e| {
            ClientError::InvalidBaseUrl {
                url: config.base_url.clone(),
                reason: e.to_string(),
            }
        })?;
        let invalid = |reason: String| ClientError::InvalidBaseUrl {
            url: config.base_url.clone(),
            reason,
        };
        let host_name = chat_url.host_str().unwrap_or_default();
        let host = HeaderValue::from_str(&match chat_url.port() {
            Some(port) => format!("{host_name}:{port}"),
            None => host_name.to_string(),
        })
        .map_err(|e| invalid(e.to_string()))?;
        let chat_path = origin_form(&chat_url).map_err(invalid)?;
        let transport = if url.scheme() == "http" && !config.reqwest_for_http {
            let port = chat_url.port_or_known_default().unwrap_or(80);
            Transport::H1(Arc::new(Pool::new(
                format!("{host_name}:{port}"),
                config.max_connections,
                IDLE_TIMEOUT,
                Arc::clone(&connects),
            )))
        } else {
            let mut builder = reqwest::Client::builder();
            if url.scheme() == "http" {
                // No certificate store for an endpoint that never does TLS (every URL this
                // client requests is under `base_url`, redirects are off).
                builder = builder.tls_certs_only(std::iter::empty());
            }
            Transport::Reqwest(
                builder
                    .connector_layer(ConnectTimer(Arc::clone(&connects)))
                    .no_proxy()
                    .tcp_nodelay(true)
                    .redirect(reqwest::redirect::Policy::none())
                    .pool_max_idle_per_host(config.max_connections.max(1))
                    .pool_idle_timeout(IDLE_TIMEOUT)
                    .user_agent(concat!("inferscope-bench/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| ClientError::Build(describe(&e)))?,
            )
        };
        let mut body_headers = HeaderMap::new();
        body_headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        body_headers.insert(ACCEPT, HeaderValue::from_static("*/*"));
        body_headers.insert(
            USER_AGENT,
            HeaderValue::from_static(concat!("inferscope-bench/", env!("CARGO_PKG_VERSION"))),
        );
        let mut auth_error = None;
        if let Some(key) = &config.api_key {
            match HeaderValue::try_from(format!("Bearer {key}")) {
                Ok(mut v) => {
                    v.set_sensitive(true);
                    body_headers.insert(AUTHORIZATION, v);
                }
                // Never the key itself in the message.
                Err(_) => auth_error = Some("the API key is not a valid header value".into()),
            }
        }
        if matches!(transport, Transport::H1(_)) {
            // hyper's connection API sends what it is given: the origin server's `Host`,
            // the same for every request (reqwest adds it itself).
            body_headers.insert(HOST, host);
        }
        let mut stream_headers = body_headers.clone();
        stream_headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        Ok(Self {
            transport,
            chat_path,
            chat_url,
            models_url: format!("{base}/models"),
            stream_headers,
            body_headers,
            auth_error,
            config,
            streams_in_flight: Arc::new(InFlight::default()),
            connects,
        })
    }

    /// The connections this client (and its clones) opened so far.
    pub fn connect_counts(&self) -> ConnectCounts {
        self.connects.counts()
    }

    /// Opens `n` connections before a measured window. A plain-`http` endpoint: `n`
    /// connections opened (those idle already count), at most
    /// [`crate::connect::MAX_CONNECTS_IN_FLIGHT`] connecting at once, no request sent. An
    /// `https` endpoint (reqwest's pool, filled only by requests): `n` concurrent
    /// `GET {base_url}/models`, started together so that each checks out a connection of
    /// its own, at most [`crate::connect::MAX_CONNECTS_IN_FLIGHT`] connecting at once (the
    /// connector's own bound), each response held until all have their heads, then every
    /// body read to its end, which hands the connections to the idle pool; connects still
    /// in progress are waited for; a wave that opened fewer than `n` is followed by another
    /// (at most 3 waves, ending at one that opens nothing). Any status will do: only the
    /// connection counts. The
    /// connections it opened are then forgotten by the connect log (no request waited on
    /// them). A failure is counted, never fatal.
    pub async fn warm_pool(&self, n: usize) -> WarmPool {
        let started = std::time::Instant::now();
        let before = self.connects.counts();
        let http = match &self.transport {
            Transport::Reqwest(http) => http,
            Transport::H1(pool) => {
                // Plain http: connections opened, no request sent.
                let (_, failed) = pool.warm(n, self.config.request_timeout).await;
                return self.warm_pool_done(n, before, failed, started);
            }
        };
        let one = || async {
            let mut rb = http.get(&self.models_url);
            if let Some(key) = &self.config.api_key {
                rb = rb.bearer_auth(key);
            }
            tokio::time::timeout(self.config.request_timeout, rb.send())
                .await
                .ok()?
                .ok()
        };
        let mut failed = 0;
        // A wave can open fewer than it asks for when a connection came back to the pool
        // while the wave's requests were still checking out (another worker thread ran
        // its exchange meanwhile): a second wave then finds the rest. A wave that opens
        // nothing means the pool holds `n` (or the server allows no more).
        for _wave in 0..3 {
            let wave_before = self.connects.counts();
            let held = futures_util::future::join_all((0..n).map(|_| one())).await;
            failed = held.iter().filter(|r| r.is_none()).count() as u64;
            let limit = self.config.request_timeout;
            futures_util::future::join_all(held.into_iter().flatten().map(|r| async move {
                let _ = tokio::time::timeout(limit, r.bytes()).await;
            }))
            .await;
            // A request whose own connect was still waiting for a slot when another one's
            // connection came back took that one; its connect goes on in the background
            // and pools its connection when done. Wait for those (bounded), then give
            // hyper's background tasks a moment to hand drained connections back to the
            // idle pool, so that the window's first requests find the pool full.
            let deadline = tokio::time::Instant::now() + limit;
            while self.connects.in_progress() > 0 && tokio::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
            let opened = self.connects.counts().since(wave_before).opened;
            if opened == 0 || failed > 0 || self.connects.counts().since(before).opened >= n as u64
            {
                break;
            }
        }
        self.connects.forget();
        self.warm_pool_done(n, before, failed, started)
    }

    /// What a warm pool of `n` that started at `started` with the connect counts `before`
    /// did, `failed` of its connections or requests having failed.
    fn warm_pool_done(
        &self,
        n: usize,
        before: crate::connect::ConnectCounts,
        failed: u64,
        started: std::time::Instant,
    ) -> WarmPool {
        let counts = self.connects.counts().since(before);
        WarmPool {
            wanted: n as u64,
            opened: counts.opened,
            failed,
            retransmits: counts.retransmits,
            elapsed_ns: ns(started.elapsed()),
        }
    }

    /// The configuration this client was built with.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Preflight: `GET {base_url}/models`, returning the `data[].id` values in order.
    ///
    /// Errors: [`ClientError::Request`], [`ClientError::Timeout`],
    /// [`ClientError::HttpStatus`], [`ClientError::InvalidResponse`].
    pub async fn list_models(&self) -> Result<Vec<String>, ClientError> {
        let url = self.models_url.clone();
        let body = self.aux(&url, None).await?;
        let invalid = |reason: &str| ClientError::InvalidResponse {
            url: url.clone(),
            reason: reason.to_string(),
        };
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| invalid(&format!("body is not JSON: {e}")))?;
        let data = v
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| invalid("no data array"))?;
        Ok(data
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
            .collect())
    }

    /// `POST {root}{path}` with the JSON `body`, where `root` is the base URL without its
    /// trailing `/v1` (the engines serve `/tokenize` there); the answer's JSON.
    /// The body read is bounded ([`MAX_AUX_BODY_BYTES`]) and the whole exchange by
    /// `request_timeout`. Errors as [`Client::list_models`]'s.
    pub async fn post_root_json(&self, path: &str, body: &Value) -> Result<Value, ClientError> {
        let base = self.config.base_url.trim_end_matches('/');
        let url = format!("{}{path}", base.strip_suffix("/v1").unwrap_or(base));
        let bytes = self.aux(&url, Some(body)).await?;
        serde_json::from_slice(&bytes).map_err(|e| ClientError::InvalidResponse {
            url: url.clone(),
            reason: format!("body is not JSON: {e}"),
        })
    }

    /// One auxiliary exchange (`GET` without `post`, else `POST` of its JSON) over the
    /// chat requests' transport: the body of a 2xx answer, read up to
    /// [`MAX_AUX_BODY_BYTES`]; the whole exchange bounded by `request_timeout`. A head too
    /// large to read is an invalid response (the server answered), not unreachable.
    async fn aux(&self, url: &str, post: Option<&Value>) -> Result<Vec<u8>, ClientError> {
        let timeout = self.config.request_timeout;
        let request_err = |reason: String| ClientError::Request {
            url: url.to_string(),
            reason,
        };
        let too_large = || ClientError::InvalidResponse {
            url: url.to_string(),
            reason: "the response head is too large to read (head_too_large)".into(),
        };
        let fut = async {
            let (status, bytes) = match &self.transport {
                Transport::H1(pool) => {
                    let request = self.aux_request(url, post).map_err(request_err)?;
                    let ex = match pool.send(request, false).await {
                        // A reused connection the peer had closed: once more on a new one.
                        Err(SendError::Stale(_)) => {
                            let request = self.aux_request(url, post).map_err(request_err)?;
                            pool.send(request, true).await
                        }
                        r => r,
                    };
                    let ex = ex.map_err(|e| match e {
                        SendError::Http(e) | SendError::Stale(e) if e.is_parse_too_large() => {
                            too_large()
                        }
                        SendError::Http(e) | SendError::Stale(e) => request_err(describe(&e)),
                        SendError::Connect(e) => {
                            request_err(format!("error sending request for url ({url}): {e}"))
                        }
                    })?;
                    let (parts, body) = ex.response.into_parts();
                    (parts.status, read_aux_body(body, url).await?)
                }
                Transport::Reqwest(http) => {
                    let rb = match post {
                        Some(v) => http.post(url).headers(self.body_headers.clone()).json(v),
                        None => {
                            let rb = http.get(url);
                            match &self.config.api_key {
                                Some(key) => rb.bearer_auth(key),
                                None => rb,
                            }
                        }
                    };
                    let resp = rb.send().await.map_err(|e| {
                        if is_head_too_large(&e) {
                            too_large()
                        } else {
                            request_err(describe(&e))
                        }
                    })?;
                    let resp = http::Response::<reqwest::Body>::from(resp);
                    let status = resp.status();
                    (status, read_aux_body(resp.into_body(), url).await?)
                }
            };
            if !status.is_success() {
                return Err(ClientError::HttpStatus {
                    url: url.to_string(),
                    status: status.as_u16(),
                    message: error_body_text(&bytes[..bytes.len().min(8192)]),
                });
            }
            Ok(bytes)
        };
        match tokio::time::timeout(timeout, fut).await {
            Ok(r) => r,
            Err(_) => Err(ClientError::Timeout {
                url: url.to_string(),
                timeout_ms: timeout.as_millis(),
            }),
        }
    }

    /// The plain-`http` request of [`Client::aux`]: origin-form path, the headers of a
    /// request with a body (`Host`, user agent, authorization), and for a `POST` its JSON
    /// body, else no content type.
    fn aux_request(
        &self,
        url: &str,
        post: Option<&Value>,
    ) -> Result<http::Request<http_body_util::Full<Bytes>>, String> {
        if let Some(e) = &self.auth_error {
            return Err(e.clone());
        }
        let uri = origin_form(&reqwest::Url::parse(url).map_err(|e| e.to_string())?)?;
        let body = match post {
            Some(v) => Bytes::from(serde_json::to_vec(v).map_err(|e| e.to_string())?),
            None => Bytes::new(),
        };
        let mut request = http::Request::new(http_body_util::Full::new(body));
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        *headers = self.body_headers.clone();
        if post.is_some() {
            *request.method_mut() = http::Method::POST;
        } else {
            headers.remove(CONTENT_TYPE);
        }
        Ok(request)
    }

    /// Sends one chat-completions request and measures it: [`Client::prepare`] then
    /// [`Client::send`]. Never panics, never errors: every failure is a record with
    /// `status = failed` and a [`FailureCode`].
    ///
    /// `scheduled_ns` is when the request was due (elapsed ns on `clock`); the record keeps
    /// it beside the actual `send_ns`. A streaming request whose server answers with a JSON
    /// body is parsed as non-streamed (warning `not_streamed`, no TTFT).
    pub async fn chat(
        &self,
        req: &ChatRequest,
        clock: &RunClock,
        scheduled_ns: u64,
    ) -> RequestRecord {
        let prepared = self.prepare(req);
        self.send(&prepared, clock, scheduled_ns).await
    }

    /// Serializes `req` for [`Client::send`]: the body, and the id header checked. Do it
    /// before the request's scheduled instant, so that a wave of sends does only the
    /// sending. An encoding problem is kept and reported by `send` as a failed
    /// record.
    pub fn prepare(&self, req: &ChatRequest) -> PreparedRequest {
        PreparedRequest {
            request_id: req.request_id.clone(),
            id_header: HeaderValue::from_str(&req.request_id)
                .map_err(|_| "the request id is not a valid header value".to_string()),
            body: req
                .body_bytes()
                .map(Bytes::from)
                .map_err(|e| format!("cannot encode body: {e}")),
            stream: req.stream,
            choices_requested: req.n,
        }
    }

    /// A prepared request's body and headers (its kind's, and its id), or why it cannot
    /// be sent; both transports' requests are built from them.
    fn body_and_headers(&self, p: &PreparedRequest) -> Result<(Bytes, HeaderMap), String> {
        if let Some(e) = &self.auth_error {
            return Err(e.clone());
        }
        let body = p.body.as_ref().map_err(Clone::clone)?;
        let id = p.id_header.as_ref().map_err(Clone::clone)?;
        let mut headers = if p.stream {
            self.stream_headers.clone()
        } else {
            self.body_headers.clone()
        };
        headers.insert("x-request-id", id.clone());
        Ok((body.clone(), headers))
    }

    fn build(&self, p: &PreparedRequest) -> Result<reqwest::Request, String> {
        let (body, headers) = self.body_and_headers(p)?;
        let mut request = reqwest::Request::new(reqwest::Method::POST, self.chat_url.clone());
        *request.headers_mut() = headers;
        *request.body_mut() = Some(reqwest::Body::from(body));
        Ok(request)
    }

    /// [`Client::build`] for the plain-`http` transport: origin-form path (the headers
    /// carry `Host`).
    fn build_h1(
        &self,
        p: &PreparedRequest,
    ) -> Result<http::Request<http_body_util::Full<Bytes>>, String> {
        let (body, headers) = self.body_and_headers(p)?;
        let mut request = http::Request::new(http_body_util::Full::new(body));
        *request.method_mut() = http::Method::POST;
        *request.uri_mut() = self.chat_path.clone();
        *request.headers_mut() = headers;
        Ok(request)
    }

    /// Sends a prepared request and measures it (see [`Client::chat`]). `send_ns` is taken
    /// just before the request is handed to the transport.
    pub async fn send(
        &self,
        prepared: &PreparedRequest,
        clock: &RunClock,
        scheduled_ns: u64,
    ) -> RequestRecord {
        let http = match &self.transport {
            Transport::H1(pool) => return self.send_h1(pool, prepared, clock, scheduled_ns).await,
            Transport::Reqwest(http) => http,
        };
        let mut retried = false;
        let (resp, head, deadline) = loop {
            let (request, head, deadline) =
                match self.begin(self.build(prepared), prepared, clock, scheduled_ns) {
                    Ok(begun) => begun,
                    Err(rec) => return *rec,
                };
            match tokio::time::timeout_at(deadline, http.execute(request)).await {
                Err(_) => {
                    let now = clock.elapsed_ns();
                    return failed(
                        head,
                        FailureCode::Timeout,
                        "no response head within request_timeout",
                        now,
                    );
                }
                Ok(Err(e)) => {
                    // A pooled connection the server already closed fails before any
                    // response head without being a connect error: the request never
                    // reached the server. Send it once more on a fresh connection.
                    if is_stale_connection(&e) && !retried {
                        retried = true;
                        continue;
                    }
                    let now = clock.elapsed_ns();
                    let code = if e.is_timeout() {
                        FailureCode::Timeout
                    } else if is_head_too_large(&e) {
                        FailureCode::HeadTooLarge
                    } else {
                        FailureCode::Connect
                    };
                    return failed(head, code, &describe(&e), now);
                }
                Ok(Ok(r)) => {
                    let mut head = head;
                    if let Some(w) = self
                        .connects
                        .claim(r.extensions(), clock.instant_at(head.send_ns))
                    {
                        head.connect_ns = Some(ns(w.waited));
                        head.connect_retransmit = w.retransmit;
                    }
                    break (http::Response::<reqwest::Body>::from(r), head, deadline);
                }
            }
        };
        let mut rec = self
            .read_response(prepared.stream, resp, head, clock, deadline)
            .await;
        if retried {
            rec.warnings.push(RecordWarning::RetriedStaleConnection);
        }
        rec
    }

    /// The start of one send: the request built (a build failure is a failed record), its
    /// `send_ns` taken now (in the head), and its deadline.
    fn begin<R>(
        &self,
        built: Result<R, String>,
        prepared: &PreparedRequest,
        clock: &RunClock,
        scheduled_ns: u64,
    ) -> Result<(R, RequestHead, TokioInstant), Box<RequestRecord>> {
        let request = built.map_err(|e| {
            let now = clock.elapsed_ns();
            let head = head_for(prepared, scheduled_ns, now);
            Box::new(failed(head, FailureCode::Connect, &e, now))
        })?;
        let send_ns = clock.elapsed_ns();
        let deadline = TokioInstant::from_std(
            clock.instant_at(send_ns.saturating_add(ns(self.config.request_timeout))),
        );
        Ok((request, head_for(prepared, scheduled_ns, send_ns), deadline))
    }

    /// [`Client::send`] over the plain-`http` transport ([`super::h1`]): the connection
    /// checked out of (or opened for) this request, its connect time recorded when the
    /// request waited on it. A reused connection that fails before a head (the peer had
    /// closed it) is retried once on a new connection, as a new send: its own `send_ns`
    /// and deadline, and the warning `retried_stale_connection`.
    async fn send_h1(
        &self,
        pool: &Arc<Pool>,
        prepared: &PreparedRequest,
        clock: &RunClock,
        scheduled_ns: u64,
    ) -> RequestRecord {
        let mut retried = false;
        let url = &self.chat_url;
        loop {
            let (request, mut head, deadline) =
                match self.begin(self.build_h1(prepared), prepared, clock, scheduled_ns) {
                    Ok(begun) => begun,
                    Err(rec) => return *rec,
                };
            let sent = tokio::time::timeout_at(deadline, pool.send(request, retried)).await;
            let ex = match sent {
                Ok(Ok(ex)) => ex,
                Ok(Err(SendError::Stale(_))) if !retried => {
                    retried = true;
                    continue;
                }
                Err(_) => {
                    let msg = "no response head within request_timeout";
                    return failed(head, FailureCode::Timeout, msg, clock.elapsed_ns());
                }
                Ok(Err(SendError::Connect(e))) => {
                    let msg = format!("error sending request for url ({url}): {e}");
                    return failed(head, FailureCode::Connect, &msg, clock.elapsed_ns());
                }
                Ok(Err(SendError::Http(e) | SendError::Stale(e))) => {
                    let code = if e.is_parse_too_large() {
                        FailureCode::HeadTooLarge
                    } else {
                        FailureCode::Connect
                    };
                    let msg = format!("error sending request for url ({url}): {}", describe(&e));
                    return failed(head, code, &msg, clock.elapsed_ns());
                }
            };
            if let Some(o) = ex.opened {
                let sent = clock.instant_at(head.send_ns);
                if o.end > sent {
                    let waited = o.end.saturating_duration_since(o.queued.max(sent));
                    head.connect_ns = Some(ns(waited));
                    head.connect_retransmit =
                        ns(o.end.saturating_duration_since(o.start)) >= CONNECT_RETRANSMIT_NS;
                }
            }
            let mut rec = self
                .read_response(prepared.stream, ex.response, head, clock, deadline)
                .await;
            if retried {
                rec.warnings.push(RecordWarning::RetriedStaleConnection);
            }
            return rec;
        }
    }

    async fn read_response<B>(
        &self,
        stream: bool,
        resp: http::Response<B>,
        mut head: RequestHead,
        clock: &RunClock,
        deadline: TokioInstant,
    ) -> RequestRecord
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        let headers_ns = clock.elapsed_ns();
        head.headers_ns = Some(headers_ns);
        let status = resp.status();
        head.http_status = Some(status.as_u16());

        if !status.is_success() {
            let text = read_error_body(resp, deadline).await;
            let now = clock.elapsed_ns();
            let msg = if text.is_empty() {
                format!("HTTP {}", status.as_u16())
            } else {
                format!("HTTP {}: {text}", status.as_u16())
            };
            return failed(head, FailureCode::HttpStatus, &msg, now);
        }

        let is_json = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| {
                ct.trim_start()
                    .to_ascii_lowercase()
                    .starts_with("application/json")
            });
        if stream && !is_json {
            self.read_stream(resp, head, clock, deadline).await
        } else {
            let mut acc = StreamAccumulator::new();
            if stream {
                acc.warn(RecordWarning::NotStreamed);
            }
            self.read_body(resp, head, acc, clock, deadline).await
        }
    }

    async fn read_stream<B>(
        &self,
        resp: http::Response<B>,
        mut head: RequestHead,
        clock: &RunClock,
        deadline: TokioInstant,
    ) -> RequestRecord
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        let headers_ns = head.headers_ns.unwrap_or(head.send_ns);
        // The clock is read as soon as each read completes, before any framing or parsing
        // (docs/measurement.md "Per request (client timing)"). When other streams are being read
        // too, the task then yields once ([`YieldOnce`]) before framing and parsing the first read
        // of a burst ([`BURST_NS`], the response head starting the first burst): when many
        // streams' reads complete together (a decode step of
        // 128 sequences), every stream gets its read stamped first and the parsing comes after, so
        // a stream's stamp does not wait behind the other streams' SSE and JSON work. A lone stream
        // does not yield (with two runtime workers the yield hands the task to the other worker and
        // costs ~0.1 ms per read). Figures: BENCHMARKS.md, client timing fidelity.
        let in_flight = self.streams_in_flight.enter();
        let mut body = std::pin::pin!(BodyDataStream::new(resp.into_body()));
        let mut framer = SseFramer::new(self.config.max_event_bytes);
        let mut stamps = ReadStamps::default();
        let mut acc = StreamAccumulator::new();
        // A read held over the stamp-first yield (reused for every such read).
        let mut held: Vec<u8> = Vec::new();
        let idle_ns = ns(self.config.idle_timeout);
        // One timer for both deadlines: the idle one (moved as reads arrive) and the
        // request's.
        let idle_at = |last: u64| {
            tokio::time::Instant::from_std(clock.instant_at(last.saturating_add(idle_ns)))
                .min(deadline)
        };
        let timer = tokio::time::sleep_until(idle_at(headers_ns));
        tokio::pin!(timer);

        // The timer is polled (registering this task's waker) only when it may have
        // elapsed or the waker changed: a pending read does not re-register it.
        let mut armed: Option<std::task::Waker> = None;
        let (end_ns, clean, done) = loop {
            match next_or_timer(&mut body, timer.as_mut(), &mut armed).await {
                Next::Item(item) => {
                    let arrival_ns = clock.elapsed_ns();
                    match item {
                        Some(Ok(read)) => {
                            // The response head counts as the first read: a body read that
                            // comes with it (a role chunk, or a whole response at saturation)
                            // is parsed at once, and the stream reads on to its first token
                            // instead of waiting a turn of every other stream first.
                            let prev = stamps.last_read_ns().unwrap_or(headers_ns);
                            let waited = arrival_ns.saturating_sub(prev) >= BURST_NS;
                            stamps.record(arrival_ns, read.len());
                            let fed = if waited && self.streams_in_flight.current() > 1 {
                                // The read is copied and released before the yield: a
                                // `Bytes` held across it keeps hyper's read buffer shared,
                                // so hyper's next read on the connection would allocate a
                                // new buffer instead of reusing it (one allocation per
                                // token at real intervals).
                                held.clear();
                                held.extend_from_slice(&read);
                                drop(read);
                                YieldOnce(false).await;
                                feed(&mut framer, &mut acc, &held, arrival_ns)
                            } else {
                                feed(&mut framer, &mut acc, &read, arrival_ns)
                            };
                            match fed {
                                Ok(Flow::Continue) => {}
                                Ok(Flow::Done) => break (clock.elapsed_ns(), true, true),
                                Ok(Flow::Failed) => break (clock.elapsed_ns(), true, false),
                                Err(e) => {
                                    let now = clock.elapsed_ns();
                                    let e = SseError::<B::Error>::from(e);
                                    acc.fail(e.failure_code(), &e.to_string());
                                    break (now, false, false);
                                }
                            }
                        }
                        Some(Err(e)) => {
                            let msg = format!("response body error: {}", describe(&e));
                            acc.fail(FailureCode::Disconnect, &msg);
                            break (arrival_ns, false, false);
                        }
                        None => break (arrival_ns, true, false),
                    }
                }
                Next::Timer => {
                    let now = clock.elapsed_ns();
                    let last = stamps.last_read_ns().unwrap_or(0).max(headers_ns);
                    if now.saturating_sub(last) >= idle_ns {
                        let msg = format!(
                            "no bytes for {} ms (idle_timeout)",
                            now.saturating_sub(last) / 1_000_000
                        );
                        acc.fail(FailureCode::IdleTimeout, &msg);
                        break (now, false, false);
                    }
                    if TokioInstant::now() >= deadline {
                        acc.fail(
                            FailureCode::Timeout,
                            "request_timeout passed while streaming",
                        );
                        break (now, false, false);
                    }
                    timer.as_mut().reset(idle_at(last));
                    armed = None;
                }
            }
        };
        if done {
            // Read the (usually already arrived) end of the body so the connection returns
            // to the pool; bounded, and after every timestamp was taken. What has already
            // arrived is read without the timer (the common case: the body's end came in
            // the read that carried `[DONE]`); only an end still on its way arms it.
            if !drain_ready(&mut body).await {
                timer
                    .as_mut()
                    .reset(TokioInstant::now() + Duration::from_millis(50));
                armed = None;
                while let Next::Item(Some(Ok(_))) =
                    next_or_timer(&mut body, timer.as_mut(), &mut armed).await
                {}
            }
            drop(in_flight);
            // The body's end wakes hyper's connection task, which puts the connection back
            // in the pool; let it run before this request returns, so that a caller's next
            // request finds the connection idle instead of opening a new one. The
            // connection task is runnable now, so a self-wake (behind it in the run queue)
            // is enough; `yield_now` would wait for the next I/O driver poll.
            YieldOnce(false).await;
        }
        head.first_byte_ns = stamps.first_read_ns();
        acc.finish(head, end_ns, clean)
    }

    async fn read_body<B>(
        &self,
        resp: http::Response<B>,
        mut head: RequestHead,
        mut acc: StreamAccumulator,
        clock: &RunClock,
        deadline: TokioInstant,
    ) -> RequestRecord
    where
        B: hyper::body::Body<Data = Bytes> + Send + 'static,
        B::Error: std::error::Error + Send + Sync + 'static,
    {
        let cap = self.config.max_event_bytes;
        let mut body: Vec<u8> = Vec::new();
        let mut reads = std::pin::pin!(BodyDataStream::new(resp.into_body()));
        loop {
            match tokio::time::timeout_at(deadline, reads.next()).await {
                Err(_) => {
                    acc.fail(
                        FailureCode::Timeout,
                        "request_timeout passed while reading the body",
                    );
                    return acc.finish(head, clock.elapsed_ns(), false);
                }
                Ok(Some(Err(e))) => {
                    acc.fail(
                        FailureCode::Disconnect,
                        &format!("response body error: {}", describe(&e)),
                    );
                    return acc.finish(head, clock.elapsed_ns(), false);
                }
                Ok(Some(Ok(chunk))) => {
                    if head.first_byte_ns.is_none() && !chunk.is_empty() {
                        head.first_byte_ns = Some(clock.elapsed_ns());
                    }
                    if body.len() + chunk.len() > cap {
                        let msg = format!("response body exceeds max_event_bytes ({cap} bytes)");
                        acc.fail(FailureCode::EventTooLarge, &msg);
                        return acc.finish(head, clock.elapsed_ns(), false);
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
            }
        }
        let end_ns = clock.elapsed_ns();
        match std::str::from_utf8(&body) {
            Ok(text) => {
                acc.on_body(text, end_ns);
            }
            Err(_) => acc.fail(FailureCode::InvalidResponse, "response body is not UTF-8"),
        }
        acc.finish(head, end_ns, true)
    }
}

fn head_for(req: &PreparedRequest, scheduled_ns: u64, send_ns: u64) -> RequestHead {
    RequestHead {
        request_id: req.request_id.clone(),
        scheduled_ns,
        send_ns,
        stream: req.stream,
        choices_requested: req.choices_requested,
        ..RequestHead::default()
    }
}

/// A failed record for a request that produced no response body to read.
fn failed(head: RequestHead, code: FailureCode, message: &str, end_ns: u64) -> RequestRecord {
    let mut rec = head.record();
    rec.end_ns = Some(end_ns);
    rec.failure_code = Some(code);
    rec.error = Some(sanitize_error(message));
    rec
}

/// `url`'s origin form, the request target of a request to an origin server: its path,
/// and its query if it has one.
fn origin_form(url: &reqwest::Url) -> Result<http::Uri, String> {
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    http::Uri::try_from(target).map_err(|e| e.to_string())
}

/// An auxiliary answer's body, at most [`MAX_AUX_BODY_BYTES`].
async fn read_aux_body<B>(body: B, url: &str) -> Result<Vec<u8>, ClientError>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::error::Error + 'static,
{
    let mut reads = std::pin::pin!(BodyDataStream::new(body));
    let mut bytes = Vec::new();
    while let Some(chunk) = reads.next().await {
        let chunk = chunk.map_err(|e| ClientError::Request {
            url: url.to_string(),
            reason: describe(&e),
        })?;
        if bytes.len() + chunk.len() > MAX_AUX_BODY_BYTES {
            return Err(ClientError::InvalidResponse {
                url: url.to_string(),
                reason: format!("body over {MAX_AUX_BODY_BYTES} bytes"),
            });
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// Reads at most 8 KiB of an error body, for at most 2 s (and never past the deadline).
async fn read_error_body<B: hyper::body::Body<Data = Bytes>>(
    resp: http::Response<B>,
    deadline: TokioInstant,
) -> String {
    let limit = deadline.min(TokioInstant::now() + Duration::from_secs(2));
    let mut body = Vec::new();
    let mut reads = std::pin::pin!(BodyDataStream::new(resp.into_body()));
    while body.len() < 8192 {
        match tokio::time::timeout_at(limit, reads.next()).await {
            Ok(Some(Ok(c))) => body.extend_from_slice(&c),
            _ => break,
        }
    }
    body.truncate(8192);
    error_body_text(&body)
}

/// Whether `e` is the failure of a reused connection that the peer had closed: a request
/// error that is neither a connect failure nor a timeout and produced no response head.
fn is_stale_connection(e: &reqwest::Error) -> bool {
    e.is_request()
        && !e.is_connect()
        && !e.is_timeout()
        && e.status().is_none()
        // The server answered, with a head too large to read: not a stale connection.
        && !is_head_too_large(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn c12a_streaming_body_requests_usage() {
        let req = ChatRequest {
            request_id: "r1".into(),
            model: "m".into(),
            messages: vec![json!({"role":"user","content":"hi"})],
            max_tokens: Some(8),
            stream: true,
            ..ChatRequest::default()
        };
        let body = serde_json::to_string(&req.body_json()).unwrap();
        assert!(
            body.contains(r#""stream":true,"stream_options":{"include_usage":true}"#),
            "{body}"
        );
        assert!(!body.contains("tools"));
        assert!(body.contains(r#""max_tokens":8"#));
        assert!(!body.contains("temperature"));
    }

    #[test]
    fn non_streaming_body_has_no_stream_options_and_extra_cannot_override() {
        let mut extra = Map::new();
        extra.insert("stream".into(), json!(true));
        extra.insert("tool_choice".into(), json!("auto"));
        let req = ChatRequest {
            model: "m".into(),
            tools: vec![json!({"type":"function"})],
            extra,
            ..ChatRequest::default()
        };
        let body = serde_json::to_string(&req.body_json()).unwrap();
        assert!(
            body.ends_with(r#""tool_choice":"auto","stream":false}"#),
            "{body}"
        );
        assert!(!body.contains("stream_options"));
        assert!(body.contains(r#""tools":[{"type":"function"}]"#));
    }

    #[test]
    fn error_body_text_takes_only_message_strings() {
        assert_eq!(
            error_body_text(br#"{"error":{"message":"model not found","code":404}}"#),
            "model not found"
        );
        assert_eq!(error_body_text(br#"{"error":"boom"}"#), "boom");
        assert_eq!(
            error_body_text(br#"{"detail":[{"input":"SECRET PROMPT"}]}"#),
            ""
        );
        assert_eq!(error_body_text(b"Bad Gateway\n"), "Bad Gateway");
    }

    #[test]
    fn config_debug_redacts_key() {
        let mut c = ClientConfig::new("http://127.0.0.1:1/v1");
        c.api_key = Some("sk-SECRET".into());
        assert!(!format!("{c:?}").contains("SECRET"));
    }

    #[test]
    fn invalid_base_url_is_rejected() {
        assert!(matches!(
            Client::new(ClientConfig::new("not a url")),
            Err(ClientError::InvalidBaseUrl { .. })
        ));
        assert!(matches!(
            Client::new(ClientConfig::new("ftp://x/v1")),
            Err(ClientError::InvalidBaseUrl { .. })
        ));
    }
}
