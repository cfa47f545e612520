//! Chat requests to a plain-`http` endpoint: HTTP/1.1 connections on hyper's connection
//! API, pooled here instead of in reqwest's client.
//!
//! Why (issue 33, BENCHMARKS.md "Client cost at the edges"): reqwest's pool can only be
//! filled by sending requests (a warm pool of c = 1024 was 1,024 boxed request futures of
//! several KiB, alive together until their connections were up: the run's peak memory),
//! and each request passes its layers (tower services, boxed futures, the pool's
//! checkout). A bare client on this API took 17.5 KiB a stream at c = 1024 where the same
//! client on reqwest took 26.7, and 15–25 % less CPU per paced request. A warm pool here
//! is connections opened, not requests sent.
//!
//! hyper's read buffer keeps its adaptive sizing (8 KiB, growing): an exact size would
//! also cap the response head at that size (hyper's `read_buf_exact_size`), and 1 KiB
//! (14.2 KiB a stream) would fail heads that gateways make longer than that.
//!
//! What it keeps of reqwest's behaviour: connections are reused most recently used first,
//! at most `max_idle` are kept idle, and one idle longer than `idle_timeout` or closed by
//! the peer is dropped at checkout; connects go through the [`ConnectLog`]'s slots
//! ([`crate::connect::MAX_CONNECTS_IN_FLIGHT`]) and counters. `https` endpoints stay on
//! reqwest (rustls).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::body::{Body, Frame, SizeHint};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use super::connect::ConnectLog;

/// The sending half of one pooled connection.
pub(crate) type Sender = SendRequest<Full<Bytes>>;

/// Why a connection could not be opened.
#[derive(Debug)]
pub(crate) enum ConnectError {
    /// Name resolution or the TCP connect failed.
    Tcp(std::io::Error),
    /// hyper's handshake failed (it does no I/O for HTTP/1: practically never).
    Handshake(hyper::Error),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Tcp(e) => write!(f, "tcp connect error: {e}"),
            ConnectError::Handshake(e) => write!(f, "http/1.1 handshake: {e}"),
        }
    }
}

/// A connection opened for a request: when its connect began and ended.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Opened {
    /// When the request asked for it (before any wait for a connect slot).
    pub queued: Instant,
    pub start: Instant,
    pub end: Instant,
}

struct Idle {
    sender: Sender,
    since: Instant,
}

/// The idle connections to one endpoint.
pub(crate) struct Pool {
    /// `host:port` to connect to.
    authority: String,
    idle: Mutex<Vec<Idle>>,
    max_idle: usize,
    idle_timeout: Duration,
    log: Arc<ConnectLog>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("authority", &self.authority)
            .field("idle", &self.idle_count())
            .finish_non_exhaustive()
    }
}

impl Pool {
    pub(crate) fn new(
        authority: String,
        max_idle: usize,
        idle_timeout: Duration,
        log: Arc<ConnectLog>,
    ) -> Self {
        Self {
            authority,
            idle: Mutex::new(Vec::new()),
            max_idle: max_idle.max(1),
            idle_timeout,
            log,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Idle connections held now.
    pub(crate) fn idle_count(&self) -> usize {
        self.lock().len()
    }

    /// Whether an idle connection may still be used: the peer has not closed it and it has
    /// not idled past `idle_timeout`.
    fn usable(&self, i: &Idle) -> bool {
        !i.sender.is_closed() && i.since.elapsed() < self.idle_timeout
    }

    /// The most recently used [usable](Pool::usable) idle connection; the others met on
    /// the way are dropped.
    fn take_idle(&self) -> Option<Sender> {
        let mut idle = self.lock();
        while let Some(i) = idle.pop() {
            if self.usable(&i) {
                return Some(i.sender);
            }
        }
        None
    }

    /// Hands a connection back after its exchange (the response body read to its end).
    pub(crate) fn put(&self, sender: Sender) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.lock();
        if idle.len() < self.max_idle {
            idle.push(Idle {
                sender,
                since: Instant::now(),
            });
        }
    }

    /// Opens a connection: waits for a connect slot, connects, and runs the connection
    /// on a task of its own (it ends when the peer closes it or its sender is dropped).
    pub(crate) async fn open(&self) -> Result<(Sender, Opened), ConnectError> {
        let queued = Instant::now();
        let slot = self.log.slot().await;
        let start = Instant::now();
        let tcp = TcpStream::connect(self.authority.as_str())
            .await
            .map_err(ConnectError::Tcp)?;
        let end = Instant::now();
        drop(slot);
        let _ = tcp.set_nodelay(true);
        let (sender, conn) = http1::Builder::new()
            .handshake(TokioIo::new(tcp))
            .await
            .map_err(ConnectError::Handshake)?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        self.log.count_opened(start, end);
        Ok((sender, Opened { queued, start, end }))
    }

    /// A connection ready to send on: an idle one (`None`), else a new one (its opening).
    /// An idle connection is ready at once unless its last exchange is still winding down
    /// (its task has not yet seen the end); one that closes meanwhile, or is not ready
    /// within [`READY_WAIT`] (a request body a peer stopped reading), is dropped.
    pub(crate) async fn checkout(&self) -> Result<(Sender, Option<Opened>), ConnectError> {
        while let Some(mut sender) = self.take_idle() {
            if let Ok(Ok(())) = tokio::time::timeout(READY_WAIT, sender.ready()).await {
                return Ok((sender, None));
            }
        }
        let (sender, opened) = self.open().await?;
        Ok((sender, Some(opened)))
    }

    /// Opens connections until `n` are idle (at most `n` opened; the idle ones the peer
    /// closed or that idled too long are dropped first), all of them bounded by `limit`: a
    /// warm pool is connections, not requests. The `i`-th connect starts no earlier than
    /// `i / 32` [`WARM_START_GAP`]s in (32 = [`crate::connect::MAX_CONNECTS_IN_FLIGHT`],
    /// whose slots still bound the connects in progress), so one that waits out a dropped
    /// SYN holds its slot alone and the others go on. Returns (opened, failed); a connect
    /// still going at `limit`, or not started by then, failed.
    pub(crate) async fn warm(&self, n: usize, limit: Duration) -> (u64, u64) {
        let idle = {
            let mut idle = self.lock();
            idle.retain(|i| self.usable(i));
            idle.len()
        };
        let want = n.min(self.max_idle).saturating_sub(idle);
        let t0 = tokio::time::Instant::now();
        let deadline = t0 + limit;
        let per_gap = crate::connect::MAX_CONNECTS_IN_FLIGHT;
        let opened = futures_util::future::join_all((0..want).map(|i| async move {
            let start = t0 + WARM_START_GAP * u32::try_from(i / per_gap).unwrap_or(u32::MAX);
            tokio::time::timeout_at(deadline, async {
                tokio::time::sleep_until(start).await;
                self.open().await
            })
            .await
        }))
        .await;
        let mut ok = 0;
        for (sender, _) in opened.into_iter().flatten().flatten() {
            self.put(sender);
            ok += 1;
        }
        (ok, want as u64 - ok)
    }

    /// Hands a connection back once it is ready for the next request, from a task of its
    /// own (at most [`READY_WAIT`]): for a response body dropped before its end (hyper
    /// drains what has already arrived and closes the connection otherwise).
    fn put_when_ready(self: Arc<Self>, mut sender: Sender) {
        if sender.is_ready() {
            self.put(sender);
        } else if !sender.is_closed()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(async move {
                if let Ok(Ok(())) = tokio::time::timeout(READY_WAIT, sender.ready()).await {
                    self.put(sender);
                }
            });
        }
    }
}

/// How long a pooled connection may take to become ready for its next request.
const READY_WAIT: Duration = Duration::from_millis(100);

/// How much later each further 32 of a warm pool's connects start: at most 32 new
/// connects a millisecond (a floor of ~32 ms for 1,024; tokio's timer rounds up, so 1,024
/// took 101–116 ms on the edge bench's mock). A connect completes when the server's kernel
/// queues the connection, before its accept loop takes it: unpaced, a client on one thread
/// opened 1,024 connections faster than a mock accepting on a core of its own drained a
/// listen backlog of 128 (34–128 SYNs dropped, a 2.1–4.1 s warm-up, in 3 of 3 runs; paced:
/// 0 drops). A slower accept loop can still overflow a small backlog: the warm-up's
/// retransmits are counted (`WarmPool::retransmits`).
const WARM_START_GAP: Duration = Duration::from_millis(1);

/// Why [`Pool::send`] got no response head.
#[derive(Debug)]
pub(crate) enum SendError {
    /// No connection could be opened.
    Connect(ConnectError),
    /// A reused connection failed before a response head (most often the peer had closed
    /// it while it was idle): the caller may send once more on a new connection.
    Stale(hyper::Error),
    /// The exchange failed on a new connection, or with a head too large to read.
    Http(hyper::Error),
}

/// A response head, its body tied to the connection it came over.
pub(crate) struct Exchange {
    pub response: http::Response<PooledBody>,
    /// The connection's opening when it was opened for this request.
    pub opened: Option<Opened>,
}

impl Pool {
    /// Sends `request` on an idle connection (or a new one; always a new one when
    /// `fresh`) and waits for the response head.
    pub(crate) async fn send(
        self: &Arc<Self>,
        request: http::Request<Full<Bytes>>,
        fresh: bool,
    ) -> Result<Exchange, SendError> {
        let (mut sender, opened) = if fresh {
            let (sender, opened) = self.open().await.map_err(SendError::Connect)?;
            (sender, Some(opened))
        } else {
            self.checkout().await.map_err(SendError::Connect)?
        };
        match sender.send_request(request).await {
            Ok(resp) => {
                let (parts, body) = resp.into_parts();
                let body = PooledBody {
                    body,
                    back: Some((sender, Arc::clone(self))),
                };
                Ok(Exchange {
                    response: http::Response::from_parts(parts, body),
                    opened,
                })
            }
            Err(e) if opened.is_none() && !e.is_parse_too_large() => Err(SendError::Stale(e)),
            Err(e) => Err(SendError::Http(e)),
        }
    }
}

/// A response body that hands its connection back to the pool once read to its end, or,
/// dropped before, once hyper has drained what already arrived ([`Pool::put_when_ready`];
/// a body still streaming closes its connection).
pub(crate) struct PooledBody {
    body: Incoming,
    back: Option<(Sender, Arc<Pool>)>,
}

impl Drop for PooledBody {
    fn drop(&mut self) {
        if let Some((sender, pool)) = self.back.take() {
            pool.put_when_ready(sender);
        }
    }
}

impl Body for PooledBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(None) = polled
            && let Some((sender, pool)) = self.back.take()
        {
            pool.put(sender);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
