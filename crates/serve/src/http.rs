//! The HTTP layer on hyper: the accept loop, a small router (method and path segments),
//! the authentication guard, handlers and security headers (docs/security.md).
//!
//! Order of checks for every request: (1) the guard — every path except the public
//! page shell (`/`, `/app.js`, `/style.css`, which carry no run data) and `/health`
//! needs `Authorization: Bearer <token>`; a missing or wrong token is answered 401 before
//! any routing or filesystem access; (2) the request target's size; (3) the route's own
//! query keys ([`super::query`]) and the `run_id` syntax; only then (4) the store, on a
//! blocking thread.
//!
//! Routing: a path matches a route segment by segment; a `{run_id}` or `{artifact}`
//! segment is percent-decoded once (an invalid escape stays as written; text that is not
//! UTF-8 after decoding is a malformed path). A route answers `GET` and `HEAD` (hyper
//! sends no body for `HEAD`); another method on a route's path is 405 with
//! `allow: GET,HEAD` and an empty body; a path no route matches is the one 404 body.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, StatusCode};
use serde::Serialize;

use crate::telemetry::{MetricsSample, PowerSample, ProcSample};

use super::admit::{Admission, PeerKey, Slot};
use super::api::{self, ApiError};
use super::assets;
use super::auth::Token;
use super::query::{Query, QueryError};
use super::runs::{
    MAX_LIST_REPORT_BYTES, MAX_REPORT_BYTES, ReportState, RunDir, RunStore, SampleFile,
    SamplesState, StoreError, TimelineState, is_valid_run_id,
};
use super::view;

/// Longest request target (path and query) accepted, bytes.
pub const MAX_TARGET_BYTES: usize = 4096;
/// The `Content-Security-Policy` of every response.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
frame-ancestors 'none'";

/// Run-detail, timeline, samples and artifact requests worked on at once at most (each
/// may read up to tens of MiB on a blocking thread).
pub const MAX_CONCURRENT_READS: usize = 4;
/// Listing requests (`/v1/runs`) worked on at once at most: their own lane, so a flood of
/// detail requests never starves the listing.
pub const MAX_CONCURRENT_LIST_READS: usize = 2;
/// Requests waiting for a lane at most; one more is answered 503 `busy` at once.
pub const MAX_QUEUED_READS: usize = 64;
/// How long a request waits for its lane before it is answered 503 `busy`.
pub const READ_QUEUE_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection must deliver a whole request head within this long of the server
/// starting to wait for one — after accept, and again after each response (the
/// keep-alive idle timeout) — or it is closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection is closed after this long, whatever it is doing (a client that never
/// reads its responses cannot hold one).
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(300);
/// Open connections at most (lowered to the process's file-descriptor limit less a
/// reserve); a connection over the cap is closed at once.
pub const MAX_CONNECTIONS: usize = 1024;
/// Connections not yet authenticated from one peer (an IPv4 address or an IPv6 /64) at
/// most; one more is closed at once ([`super::admit`]).
pub const MAX_CONNECTIONS_PER_PEER: usize = 32;
/// Connection slots kept for peers that have sent the token before ([`super::admit`]): at
/// most `max_connections − AUTH_RESERVE` connections are unauthenticated.
pub const AUTH_RESERVE: usize = 64;
/// A response write that makes no progress for this long (the client stopped reading)
/// closes the connection ([`super::stall`]).
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(5);
/// File descriptors kept free of connections (store reads, the listener, the runtime).
pub const FD_RESERVE: u64 = 64;
/// Bytes of a connection's read buffer (the request head) at most.
pub const MAX_HEAD_BYTES: usize = 16 << 10;
/// How long a stopping server waits for open connections to finish.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// The connection and timeout bounds of one server ([`Default`]: the constants above).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeLimits {
    /// [`MAX_CONNECTIONS`].
    pub max_connections: usize,
    /// [`HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// [`CONNECTION_LIFETIME`].
    pub connection_lifetime: Duration,
    /// [`MAX_CONNECTIONS_PER_PEER`].
    pub max_connections_per_peer: usize,
    /// [`AUTH_RESERVE`] (at most half of `max_connections`).
    pub auth_reserve: usize,
    /// [`WRITE_STALL_TIMEOUT`].
    pub write_stall_timeout: Duration,
}

impl Default for ServeLimits {
    fn default() -> Self {
        Self {
            max_connections: MAX_CONNECTIONS,
            header_read_timeout: HEADER_READ_TIMEOUT,
            connection_lifetime: CONNECTION_LIFETIME,
            max_connections_per_peer: MAX_CONNECTIONS_PER_PEER,
            auth_reserve: AUTH_RESERVE,
            write_stall_timeout: WRITE_STALL_TIMEOUT,
        }
    }
}

/// One lane of blocking store work: a semaphore around `spawn_blocking` with a bounded
/// queue in front of it.
#[derive(Clone)]
struct Lane {
    permits: Arc<tokio::sync::Semaphore>,
    waiting: Arc<std::sync::atomic::AtomicUsize>,
}

impl Lane {
    fn new(n: usize) -> Self {
        Self {
            permits: Arc::new(tokio::sync::Semaphore::new(n)),
            waiting: Arc::new(std::sync::atomic::AtomicUsize::new(0)),
        }
    }
}

#[derive(Clone)]
struct AppState {
    store: RunStore,
    token: Arc<Token>,
    reads: Lane,
    list_reads: Lane,
}

/// Paths served without a token: the page shell (no run data) and the health check.
fn is_public(path: &str) -> bool {
    matches!(path, "/" | "/app.js" | "/style.css" | "/health")
}

/// Every answer is whole (bounded pages), so one body type serves.
type Response = hyper::Response<Full<Bytes>>;

/// A response with `status`, an optional `content-type` and `body`.
fn respond(status: StatusCode, content_type: Option<&'static str>, body: Bytes) -> Response {
    let mut r = hyper::Response::new(Full::new(body));
    *r.status_mut() = status;
    if let Some(ct) = content_type {
        r.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    r
}

fn json<T: Serialize>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => respond(status, Some("application/json"), bytes.into()),
        Err(_) => error(ApiError::new(
            500,
            "internal",
            "response could not be encoded",
        )),
    }
}

fn error(e: ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = respond(
        status,
        Some("application/json"),
        e.body().to_string().into(),
    );
    if e.status == 401 {
        r.headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    r
}

fn query_error(e: QueryError) -> ApiError {
    ApiError::new(400, e.code(), e.to_string())
}

fn store_error(e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound => ApiError::not_found(),
        StoreError::RootUnavailable => {
            ApiError::new(503, "runs_root_unavailable", "the runs root is unavailable")
        }
    }
}

/// One connection's hold on its slot ([`super::admit`]); gives the slot back when the
/// connection ends.
struct Ticket {
    admission: Arc<Mutex<Admission>>,
    peer: PeerKey,
    slot: Mutex<Slot>,
}

impl Ticket {
    /// Records that the connection sent the valid token; whether it may be served (a
    /// reserve connection without the token may not).
    fn check(&self, authenticated: bool) -> bool {
        let mut slot = self.slot.lock().unwrap_or_else(|p| p.into_inner());
        if authenticated && *slot != Slot::Authenticated {
            let mut a = self.admission.lock().unwrap_or_else(|p| p.into_inner());
            *slot = a.authenticate(self.peer, *slot);
        }
        *slot != Slot::Reserve
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let slot = *self.slot.lock().unwrap_or_else(|p| p.into_inner());
        let mut a = self.admission.lock().unwrap_or_else(|p| p.into_inner());
        a.release(self.peer, slot);
    }
}

/// The answer to a request on a reserve connection without the token: 503 `busy`, and
/// the connection closes.
fn reserve_refusal() -> Response {
    let mut r = busy();
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// The guard, then the route, then the security headers on whatever the answer is.
async fn guard(st: AppState, ticket: &Ticket, req: Request<Incoming>) -> Response {
    let public = is_public(req.uri().path()) && matches!(*req.method(), Method::GET | Method::HEAD);
    let authenticated = st.token.accepts(
        req.headers()
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes),
    );
    let mut resp = if !ticket.check(authenticated) {
        reserve_refusal()
    } else if !public && !authenticated {
        error(ApiError::unauthorized())
    } else if req
        .uri()
        .path_and_query()
        .is_some_and(|pq| pq.as_str().len() > MAX_TARGET_BYTES)
    {
        error(ApiError::new(
            400,
            "input_too_large",
            "request target too long",
        ))
    } else {
        dispatch(st, &req).await
    };
    let h = resp.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    resp
}

fn busy() -> Response {
    let mut r = error(ApiError::new(
        503,
        "busy",
        "too many requests are being worked on; retry shortly",
    ));
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// Runs blocking store work off the async threads, at most [`MAX_CONCURRENT_READS`] at a
/// time, with at most [`MAX_QUEUED_READS`] waiting ([`READ_QUEUE_TIMEOUT`] each); beyond
/// that the answer is 503 `busy`.
async fn blocking<F>(st: &AppState, f: F) -> Response
where
    F: FnOnce() -> Result<Response, ApiError> + Send + 'static,
{
    run_in_lane(&st.reads, f).await
}

async fn run_in_lane<F>(lane: &Lane, f: F) -> Response
where
    F: FnOnce() -> Result<Response, ApiError> + Send + 'static,
{
    use std::sync::atomic::Ordering;
    if lane.waiting.fetch_add(1, Ordering::SeqCst) >= MAX_QUEUED_READS {
        lane.waiting.fetch_sub(1, Ordering::SeqCst);
        return busy();
    }
    let permit =
        tokio::time::timeout(READ_QUEUE_TIMEOUT, lane.permits.clone().acquire_owned()).await;
    lane.waiting.fetch_sub(1, Ordering::SeqCst);
    let _permit = match permit {
        Ok(Ok(p)) => p,
        Ok(Err(_)) => return error(ApiError::new(500, "internal", "internal error")),
        Err(_) => return busy(),
    };
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => error(e),
        Err(_) => error(ApiError::new(500, "internal", "internal error")),
    }
}

/// The routes, by path segments (`{run_id}`/`{artifact}`: one raw, non-empty segment).
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    Index,
    AppJs,
    StyleCss,
    Health,
    ListRuns,
    RunDetail(&'a str),
    Timeline,
    Samples,
    Charts,
    Artifact(&'a str, &'a str),
}

impl<'a> Route<'a> {
    /// The route `path` names, if any (pure).
    fn of(path: &'a str) -> Option<Self> {
        let rest = path.strip_prefix('/')?;
        let segs: Vec<&str> = rest.split('/').collect();
        Some(match segs.as_slice() {
            [""] => Route::Index,
            ["app.js"] => Route::AppJs,
            ["style.css"] => Route::StyleCss,
            ["health"] => Route::Health,
            ["v1", "runs"] => Route::ListRuns,
            ["v1", "runs", id] if !id.is_empty() => Route::RunDetail(id),
            ["v1", "benchmark-timeline"] => Route::Timeline,
            ["v1", "samples"] => Route::Samples,
            ["v1", "charts"] => Route::Charts,
            ["runs", id, name] if !name.is_empty() => Route::Artifact(id, name),
            _ => return None,
        })
    }
}

/// Percent-decodes a path segment once: `%XX` with two hex digits is a byte, anything else
/// stays as written; `None` when the bytes are not UTF-8 (pure).
fn decode_segment(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: Option<&u8>| c.and_then(|c| (*c as char).to_digit(16));
        match (b[i], hex(b.get(i + 1)), hex(b.get(i + 2))) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Routes `req` (past the guard) to its handler.
async fn dispatch(st: AppState, req: &Request<Incoming>) -> Response {
    let Some(route) = Route::of(req.uri().path()) else {
        return error(ApiError::not_found());
    };
    if !matches!(*req.method(), Method::GET | Method::HEAD) {
        let mut r = respond(StatusCode::METHOD_NOT_ALLOWED, None, Bytes::new());
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET,HEAD"));
        return r;
    }
    let raw = req.uri().query();
    match route {
        Route::Index => static_asset("text/html; charset=utf-8", assets::INDEX_HTML),
        Route::AppJs => static_asset("text/javascript; charset=utf-8", assets::APP_JS),
        Route::StyleCss => static_asset("text/css; charset=utf-8", assets::STYLE_CSS),
        Route::Health => json(StatusCode::OK, &serde_json::json!({ "status": "ok" })),
        Route::ListRuns => list_runs(st, raw).await,
        Route::RunDetail(id) => run_detail(st, decode_segment(id), raw).await,
        Route::Timeline => timeline(st, raw).await,
        Route::Samples => samples(st, raw).await,
        Route::Charts => charts(st, raw).await,
        Route::Artifact(id, name) => {
            let both = decode_segment(id).zip(decode_segment(name));
            artifact(st, both, raw).await
        }
    }
}

fn run_id_param(p: Option<String>) -> Result<String, ApiError> {
    let Some(id) = p else {
        return Err(ApiError::new(400, "bad_path", "malformed path"));
    };
    if !is_valid_run_id(&id) {
        return Err(ApiError::new(
            400,
            "invalid_run_id",
            "run_id fails its syntax [A-Za-z0-9][A-Za-z0-9_.:-]{0,127}",
        ));
    }
    Ok(id)
}

fn run_id_query(q: &Query) -> Result<String, ApiError> {
    let id = q.required("run_id").map_err(query_error)?;
    if !is_valid_run_id(id) {
        return Err(query_error(QueryError::InvalidValue(
            "run_id",
            "fails its syntax",
        )));
    }
    Ok(id.to_string())
}

/// A run's report and its timeline, the timeline checked against the report's run id
/// when the report is readable (blocking I/O).
///
/// A run without `report.json` (its last artifact) is incomplete: its timeline is
/// `unavailable` (`run_incomplete`), never served as a run's.
fn report_and_timeline(dir: &RunDir) -> (ReportState, TimelineState) {
    let report = dir.report(MAX_REPORT_BYTES);
    let owner = match &report {
        ReportState::Ok(r) => Some(r.run_id.clone()),
        ReportState::Missing => {
            return (report, TimelineState::Unavailable("run_incomplete"));
        }
        ReportState::Fault(_) => None,
    };
    let timeline = dir.timeline(owner.as_deref());
    (report, timeline)
}

fn static_asset(ct: &'static str, body: &'static str) -> Response {
    respond(
        StatusCode::OK,
        Some(ct),
        Bytes::from_static(body.as_bytes()),
    )
}

async fn list_runs(st: AppState, raw: Option<&str>) -> Response {
    let parsed = Query::parse(raw, &["after", "limit"]).and_then(|q| {
        let limit = q.u64_in("limit", api::DEFAULT_LIST_LIMIT, 1, api::MAX_LIST_LIMIT)?;
        let after = q.get("after").map(str::to_string);
        if after.as_deref().is_some_and(|a| !is_valid_run_id(a)) {
            return Err(QueryError::InvalidValue("after", "fails the run_id syntax"));
        }
        Ok((after, limit))
    });
    let (after, limit) = match parsed {
        Ok(v) => v,
        Err(e) => return error(query_error(e)),
    };
    let lane = st.list_reads.clone();
    run_in_lane(&lane, move || {
        let page = st
            .store
            .list(after.as_deref(), limit as usize)
            .map_err(store_error)?;
        let mut runs = Vec::with_capacity(page.run_ids.len());
        for id in &page.run_ids {
            let Ok(dir) = st.store.resolve(id) else {
                continue;
            };
            let report = dir.report(MAX_LIST_REPORT_BYTES);
            runs.push(api::list_item(id, &report, dir.has_manifest()));
        }
        let body = api::RunList {
            schema: api::RUN_LIST_SCHEMA,
            next_after: if page.more {
                page.run_ids.last().cloned()
            } else {
                None
            },
            runs,
            scan_truncated: page.scan_truncated,
        };
        Ok(json(StatusCode::OK, &body))
    })
    .await
}

/// Everything the detail needs from one run directory (blocking).
/// What `GET /runs/{id}` reads from a run directory, kept whole for callers that need
/// more of it than the [`view::RunDetail`] (the static page's bundle).
pub(crate) struct DetailInputs {
    pub report: ReportState,
    pub timeline: TimelineState,
    pub samples: SamplesState,
    pub times: view::LaneTimes,
}

impl DetailInputs {
    /// Reads the report, the verified timeline, the sample sources and their lane times
    /// (blocking I/O).
    pub(crate) fn load(dir: &RunDir) -> Self {
        let (mut report, timeline) = report_and_timeline(dir);
        // A load job's captured requests: their records (TTFT marks) from requests.jsonl.
        if let (ReportState::Ok(r), TimelineState::Ok(t)) = (&mut report, &timeline)
            && r.jobs.iter().any(|j| j.load.is_some())
        {
            let ids: std::collections::HashSet<&str> = t
                .events
                .iter()
                .filter_map(|e| e.request_id.as_deref())
                .collect();
            if !ids.is_empty() {
                let _ = dir.load_requests_in(r, &ids);
            }
        }
        let samples = dir.samples_sources();
        let times = match &samples {
            SamplesState::Ok(s) => {
                view::LaneTimes::of_files(super::runs::read_lane_files(dir, s), s)
            }
            _ => view::LaneTimes::default(),
        };
        DetailInputs {
            report,
            timeline,
            samples,
            times,
        }
    }

    /// The run's detail view (pure).
    pub(crate) fn detail(&self, run_id: &str) -> view::RunDetail {
        view::run_detail(
            run_id,
            &self.report,
            &self.timeline,
            &self.samples,
            &self.times,
        )
    }
}

pub(crate) fn load_detail(dir: &RunDir) -> view::RunDetail {
    DetailInputs::load(dir).detail(&dir.run_id)
}

async fn run_detail(st: AppState, p: Option<String>, raw: Option<&str>) -> Response {
    let id = match run_id_param(p) {
        Ok(id) => id,
        Err(e) => return error(e),
    };
    let jobs_after = match Query::parse(raw, &["jobs_after"])
        .and_then(|q| q.u64_in("jobs_after", 0, 0, u64::MAX))
    {
        Ok(a) => a,
        Err(e) => return error(query_error(e)),
    };
    let gate = st.clone();
    blocking(&gate, move || {
        let dir = st.store.resolve(&id).map_err(store_error)?;
        Ok(json(
            StatusCode::OK,
            &api::detail_page(load_detail(&dir), jobs_after),
        ))
    })
    .await
}

async fn timeline(st: AppState, raw: Option<&str>) -> Response {
    let parsed = Query::parse(raw, &["run_id", "after_seq", "limit"])
        .map_err(query_error)
        .and_then(|q| {
            let id = run_id_query(&q)?;
            let after = q.u64_in("after_seq", 0, 0, u64::MAX).map_err(query_error)?;
            let limit = q
                .u64_in("limit", api::DEFAULT_PAGE_EVENTS, 1, api::MAX_PAGE_EVENTS)
                .map_err(query_error)?;
            Ok((id, after, limit))
        });
    let (id, after, limit) = match parsed {
        Ok(v) => v,
        Err(e) => return error(e),
    };
    let gate = st.clone();
    blocking(&gate, move || {
        let dir = st.store.resolve(&id).map_err(store_error)?;
        match report_and_timeline(&dir).1 {
            TimelineState::Ok(t) => Ok(json(
                StatusCode::OK,
                &api::timeline_page(&id, &t, after, limit),
            )),
            TimelineState::Unavailable(reason) => Ok(json(
                StatusCode::OK,
                &api::TimelineUnavailable {
                    schema: api::TIMELINE_PAGE_SCHEMA,
                    run_id: id.clone(),
                    state: "unavailable",
                    reason,
                },
            )),
            TimelineState::Integrity(items, _) => Err(ApiError::integrity("the timeline", items)),
        }
    })
    .await
}

/// `GET /v1/charts?run_id=`: the run's charts (from `report.json` only), within one
/// answer's byte budget.
async fn charts(st: AppState, raw: Option<&str>) -> Response {
    let id = match Query::parse(raw, &["run_id"])
        .map_err(query_error)
        .and_then(|q| run_id_query(&q))
    {
        Ok(id) => id,
        Err(e) => return error(e),
    };
    let gate = st.clone();
    blocking(&gate, move || {
        let dir = st.store.resolve(&id).map_err(store_error)?;
        let charts = super::charts::charts_of(&dir.report(MAX_REPORT_BYTES));
        Ok(json(
            StatusCode::OK,
            &super::charts::charts_page(
                &id,
                charts,
                api::MAX_RESPONSE_BYTES - api::ENVELOPE_RESERVE,
            ),
        ))
    })
    .await
}

fn sample_page_of<T: Serialize + Clone + serde::de::DeserializeOwned>(
    dir: &RunDir,
    file: SampleFile,
    after: u64,
    limit: u64,
    domain: Option<String>,
    aligned: Option<bool>,
) -> Result<Response, ApiError> {
    let all: Vec<T> = dir.samples(file).map_err(|f| {
        ApiError::integrity(
            file.artifact(),
            vec![super::runs::IntegrityItem::whole(f.code())],
        )
    })?;
    Ok(json(
        StatusCode::OK,
        &api::samples_page(
            &dir.run_id,
            file.source(),
            &all,
            after,
            limit,
            domain,
            aligned,
        ),
    ))
}

async fn samples(st: AppState, raw: Option<&str>) -> Response {
    let parsed = Query::parse(raw, &["run_id", "source", "after", "limit"])
        .map_err(query_error)
        .and_then(|q| {
            let id = run_id_query(&q)?;
            let file = SampleFile::from_source(q.required("source").map_err(query_error)?)
                .ok_or_else(|| {
                    query_error(QueryError::InvalidValue(
                        "source",
                        "one of power, proc, metrics",
                    ))
                })?;
            let after = q.u64_in("after", 0, 0, u64::MAX).map_err(query_error)?;
            let limit = q
                .u64_in("limit", api::DEFAULT_PAGE_SAMPLES, 1, api::MAX_PAGE_SAMPLES)
                .map_err(query_error)?;
            Ok((id, file, after, limit))
        });
    let (id, file, after, limit) = match parsed {
        Ok(v) => v,
        Err(e) => return error(e),
    };
    let gate = st.clone();
    blocking(&gate, move || {
        let dir = st.store.resolve(&id).map_err(store_error)?;
        let source = file.source();
        let sources = match dir.samples_sources() {
            SamplesState::Ok(s) => s,
            SamplesState::Missing => {
                return Ok(json(
                    StatusCode::OK,
                    &api::samples_unavailable(&id, source, "no_samples"),
                ));
            }
            SamplesState::Fault(f) => {
                return Err(ApiError::integrity(
                    "samples/sources.json",
                    vec![super::runs::IntegrityItem::whole(f.code())],
                ));
            }
        };
        let configured = match file {
            SampleFile::Power => sources.power.is_some(),
            SampleFile::Proc => sources.proc.is_some(),
            SampleFile::Metrics => sources.metrics.is_some(),
        };
        if !configured {
            return Ok(json(
                StatusCode::OK,
                &api::samples_unavailable(&id, source, "source_not_configured"),
            ));
        }
        let run_domain = match dir.report(MAX_REPORT_BYTES) {
            ReportState::Ok(r) => Some(r.clock_domain_id),
            _ => None,
        };
        let aligned = run_domain.map(|d| d == sources.clock_domain_id);
        let domain = Some(view::clock_domain_label(&sources.clock_domain_id));
        match file {
            SampleFile::Power => {
                sample_page_of::<PowerSample>(&dir, file, after, limit, domain, aligned)
            }
            SampleFile::Proc => {
                sample_page_of::<ProcSample>(&dir, file, after, limit, domain, aligned)
            }
            SampleFile::Metrics => {
                sample_page_of::<MetricsSample>(&dir, file, after, limit, domain, aligned)
            }
        }
    })
    .await
}

/// Verified timeline artifacts for download (`GET /runs/{run_id}/timeline.jsonl` and
/// `/runs/{run_id}/manifest.json`): the exact bytes, after verification and an ownership
/// check, re-checked against the verified manifest. Any other name is 404.
async fn artifact(st: AppState, p: Option<(String, String)>, raw: Option<&str>) -> Response {
    let Some((id, name)) = p else {
        return error(ApiError::not_found());
    };
    let events = match name.as_str() {
        "timeline.jsonl" => true,
        "manifest.json" => false,
        _ => return error(ApiError::not_found()),
    };
    if !is_valid_run_id(&id) {
        return error(ApiError::not_found());
    }
    let keys: &[&str] = if events { &["after_seq", "limit"] } else { &[] };
    let (after, limit) = match Query::parse(raw, keys).and_then(|q| {
        Ok((
            q.u64_in("after_seq", 0, 0, u64::MAX)?,
            q.u64_in("limit", api::MAX_PAGE_EVENTS, 1, api::MAX_PAGE_EVENTS)?,
        ))
    }) {
        Ok(v) => v,
        Err(e) => return error(query_error(e)),
    };
    let gate = st.clone();
    blocking(&gate, move || {
        let dir = st.store.resolve(&id).map_err(store_error)?;
        let t = match report_and_timeline(&dir).1 {
            TimelineState::Ok(t) => t,
            TimelineState::Unavailable(_) => return Err(ApiError::not_found()),
            TimelineState::Integrity(items, _) => {
                return Err(ApiError::integrity("the timeline", items));
            }
        };
        let bytes = dir
            .verified_artifact(&t.manifest, events)
            .map_err(|i| ApiError::integrity("the timeline", vec![i]))?;
        if !events {
            return Ok(respond(
                StatusCode::OK,
                Some("application/json"),
                bytes.into(),
            ));
        }
        let page = api::raw_events_page(&bytes, &t.events, after, limit);
        let mut r = respond(
            StatusCode::OK,
            Some("application/x-ndjson"),
            page.bytes.into(),
        );
        let h = r.headers_mut();
        h.insert(
            "x-inferscope-event-count",
            HeaderValue::from(t.events.len() as u64),
        );
        if let Some(n) = page.next_after_seq {
            h.insert("x-inferscope-next-after-seq", HeaderValue::from(n));
        }
        Ok(r)
    })
    .await
}

/// The state the handlers share: the store, the token, the two read lanes.
fn app_state(store: RunStore, token: Token) -> AppState {
    AppState {
        store,
        token: Arc::new(token),
        reads: Lane::new(MAX_CONCURRENT_READS),
        list_reads: Lane::new(MAX_CONCURRENT_LIST_READS),
    }
}

/// A server bound to its address, not yet serving.
pub struct BoundServer {
    listener: tokio::net::TcpListener,
    store: RunStore,
    app: AppState,
    limits: ServeLimits,
}

/// Raises the soft file-descriptor limit towards the hard one (at most 65,536) and returns
/// the soft limit in force (`None` when unknown).
pub fn raise_fd_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid out pointer / value.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        let want = lim.rlim_max.min(65_536);
        if lim.rlim_cur < want {
            let new = libc::rlimit {
                rlim_cur: want,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &new) == 0 {
                lim.rlim_cur = want;
            }
        }
    }
    Some(lim.rlim_cur)
}

/// The connection cap for `limits` under the file-descriptor limit `fd_limit` (pure): the
/// configured cap, lowered to `fd_limit − FD_RESERVE` (at least 1).
pub fn connection_cap(limits: &ServeLimits, fd_limit: Option<u64>) -> usize {
    match fd_limit {
        Some(n) => limits
            .max_connections
            .min(usize::try_from(n.saturating_sub(FD_RESERVE)).unwrap_or(usize::MAX))
            .max(1),
        None => limits.max_connections,
    }
}

impl BoundServer {
    /// Binds `addr` (port 0 picks a free port) with the default [`ServeLimits`]. Touches
    /// nothing under the runs root.
    pub async fn bind(
        runs_root: std::path::PathBuf,
        token: Token,
        addr: SocketAddr,
    ) -> std::io::Result<Self> {
        Self::bind_with(runs_root, token, addr, ServeLimits::default()).await
    }

    /// [`BoundServer::bind`] with explicit limits.
    pub async fn bind_with(
        runs_root: std::path::PathBuf,
        token: Token,
        addr: SocketAddr,
        limits: ServeLimits,
    ) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let store = RunStore::new(runs_root);
        let app = app_state(store.clone(), token);
        let limits = ServeLimits {
            max_connections: connection_cap(&limits, raise_fd_limit()),
            ..limits
        };
        Ok(Self {
            listener,
            store,
            app,
            limits,
        })
    }

    /// The bound address.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The store (for [`RunStore::fs_operations`] in tests).
    pub fn store(&self) -> RunStore {
        self.store.clone()
    }

    /// The limits in force (the connection cap after the file-descriptor limit).
    pub fn limits(&self) -> ServeLimits {
        self.limits
    }

    /// Serves until `shutdown` completes: HTTP/1 only, each connection under the
    /// header-read / idle timeout, the write-stall timeout and the lifetime bound, at
    /// most `limits.max_connections` at once, admitted by [`super::admit`] (per-peer cap,
    /// authenticated reserve; a connection refused is closed at once). On shutdown no new
    /// connection is accepted and open ones get [`SHUTDOWN_GRACE`] to finish.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        use hyper_util::rt::{TokioIo, TokioTimer};
        let BoundServer {
            listener,
            app,
            limits,
            ..
        } = self;
        let admission = Arc::new(Mutex::new(Admission::new(
            limits.max_connections,
            limits.max_connections_per_peer,
            limits.auth_reserve,
        )));
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(limits.header_read_timeout)
            .max_buf_size(MAX_HEAD_BYTES)
            .keep_alive(true);
        tokio::pin!(shutdown);
        loop {
            let (stream, peer) = tokio::select! {
                _ = &mut shutdown => break,
                r = listener.accept() => match r {
                    Ok(c) => c,
                    Err(_) => {
                        // EMFILE and friends: back off instead of spinning.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                },
            };
            let peer = PeerKey::of(peer.ip());
            let admitted = admission
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .admit(peer);
            let Some(slot) = admitted else {
                drop(stream);
                continue;
            };
            let ticket = Arc::new(Ticket {
                admission: admission.clone(),
                peer,
                slot: Mutex::new(slot),
            });
            let _ = stream.set_nodelay(true);
            let app = app.clone();
            let held = ticket.clone();
            let service = hyper::service::service_fn(move |req| {
                let (app, ticket) = (app.clone(), ticket.clone());
                async move { Ok::<_, std::convert::Infallible>(guard(app, &ticket, req).await) }
            });
            let io = super::stall::StallGuard::new(stream, limits.write_stall_timeout);
            let conn = builder.serve_connection(TokioIo::new(io), service);
            let conn = graceful.watch(conn);
            let lifetime = limits.connection_lifetime;
            tokio::spawn(async move {
                let _ = tokio::time::timeout(lifetime, conn).await;
                drop(held);
            });
        }
        drop(listener);
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_match_whole_segments() {
        assert_eq!(Route::of("/"), Some(Route::Index));
        assert_eq!(Route::of("/v1/runs"), Some(Route::ListRuns));
        assert_eq!(Route::of("/v1/runs/r1"), Some(Route::RunDetail("r1")));
        assert_eq!(Route::of("/v1/charts"), Some(Route::Charts));
        assert_eq!(Route::of("/v1/runs/a%2Fb"), Some(Route::RunDetail("a%2Fb")));
        assert_eq!(
            Route::of("/runs/r1/manifest.json"),
            Some(Route::Artifact("r1", "manifest.json"))
        );
        for p in [
            "",
            "//",
            "/v1/runs/",
            "/v1/runs/r1/",
            "/app.js/",
            "/runs/r1/",
            "/runs/r1/../../x",
            "/runs/r1",
            "/v1",
            "/health/x",
            "/V1/runs",
        ] {
            assert_eq!(Route::of(p), None, "{p}");
        }
    }

    #[test]
    fn segments_decode_once_and_keep_bad_escapes() {
        assert_eq!(decode_segment("a%2Fb").as_deref(), Some("a/b"));
        assert_eq!(decode_segment("%252e").as_deref(), Some("%2e"));
        assert_eq!(decode_segment("%zz%4").as_deref(), Some("%zz%4"));
        assert_eq!(decode_segment("r1%00").as_deref(), Some("r1\0"));
        assert_eq!(decode_segment("%ff"), None);
    }
}
