//! Connections as a phase of their own.
//!
//! reqwest opens connections inside `execute`, so a request that has to open one pays the
//! connect (and TLS handshake) inside its TTFT, and a dropped SYN (a server's full listen
//! backlog) adds Linux's 1 s SYN retransmission timeout there unannounced. This module
//! makes it visible:
//!
//! - [`ConnectTimer`], a tower layer around reqwest's connector
//!   (`ClientBuilder::connector_layer`): every connection reqwest opens is timed from the
//!   connector's call (name resolution for a host name, TCP connect, TLS handshake for
//!   `https`) to the connection being ready, and logged under its local address (hyper-util's
//!   `HttpInfo`, which reqwest also puts into each response's extensions).
//! - [`ConnectLog::take`]: the first request whose response came over a logged connection
//!   claims it; the time that request waited on it is the overlap of the connect with the
//!   request's wait (from the later of its send and the connect's start to the connect's
//!   end; `None` when the connection was ready before the request was sent: a warm pool, or
//!   a connection opened for another request).
//! - Counters over the client's life ([`ConnectCounts`]): connections opened, and those that
//!   took [`CONNECT_RETRANSMIT_NS`] or more.
//!
//! The hot path (a request on a kept-alive connection) reads one atomic: the log's map is
//! locked only while a connection opened since is still unclaimed.

use std::collections::HashMap;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper_util::client::legacy::connect::{Connection, HttpInfo};

pub use inferscope_model::request::CONNECT_RETRANSMIT_NS;

/// Connects a client keeps in progress at once: the rest wait for a
/// slot, so opening many connections together (a warm pool at c = 1024, an open loop's
/// burst) never puts more SYNs in flight than a server's listen backlog (128 by default on
/// Linux, `somaxconn` caps it) can take while its accept loop catches up. A request's
/// `connect_ns` includes its wait for a slot; the retransmit test does not.
pub const MAX_CONNECTS_IN_FLIGHT: usize = 32;

/// One connection's opening, on the monotonic clock.
#[derive(Clone, Copy, Debug)]
struct Opened {
    /// When the connector was called (before the wait for a connect slot).
    queued: Instant,
    /// When the connect itself began.
    start: Instant,
    end: Instant,
}

/// Connections a client opened: the unclaimed ones by local address, and counters.
#[derive(Debug)]
pub struct ConnectLog {
    open: Mutex<HashMap<SocketAddr, Opened>>,
    /// [`MAX_CONNECTS_IN_FLIGHT`] slots.
    slots: Arc<tokio::sync::Semaphore>,
    /// Connects called and not finished (waiting for a slot or connecting).
    in_progress: AtomicUsize,
    /// Entries in `open` (read without the lock on every request).
    unclaimed: AtomicUsize,
    opened: AtomicU64,
    slow: AtomicU64,
}

/// What a client's connector did so far (counters only grow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectCounts {
    /// Connections opened.
    pub opened: u64,
    /// Of those, the ones whose opening took [`CONNECT_RETRANSMIT_NS`] or more.
    pub retransmits: u64,
}

impl ConnectCounts {
    /// `self − earlier`, counter by counter (a window's counts).
    pub fn since(self, earlier: ConnectCounts) -> ConnectCounts {
        ConnectCounts {
            opened: self.opened.saturating_sub(earlier.opened),
            retransmits: self.retransmits.saturating_sub(earlier.retransmits),
        }
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Default for ConnectLog {
    fn default() -> Self {
        Self {
            open: Mutex::default(),
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTS_IN_FLIGHT)),
            in_progress: AtomicUsize::new(0),
            unclaimed: AtomicUsize::new(0),
            opened: AtomicU64::new(0),
            slow: AtomicU64::new(0),
        }
    }
}

/// How long a request waited on its connection, and whether that connect was a dropped
/// SYN waited out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConnectWait {
    /// From the later of the send and the connector's call to the connection being ready.
    pub waited: Duration,
    /// The connect itself (after its slot) took [`CONNECT_RETRANSMIT_NS`] or more.
    pub retransmit: bool,
}

impl ConnectLog {
    /// Logs a connection opened from `start` to `end` whose local address is `local`
    /// (its connector called at `start`: no wait for a slot).
    pub fn opened(&self, local: SocketAddr, start: Instant, end: Instant) {
        self.opened_after(local, start, start, end);
    }

    /// [`ConnectLog::opened`] of a connect called at `queued` that got its slot at `start`.
    pub fn opened_after(&self, local: SocketAddr, queued: Instant, start: Instant, end: Instant) {
        self.count_opened(start, end);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.insert(local, Opened { queued, start, end }).is_none() {
            self.unclaimed.fetch_add(1, Ordering::Release);
        }
    }

    /// Claims the connection of `local` for a request sent at `sent`: how long the request
    /// waited on its opening (see the module docs), `None` when the connection is not
    /// logged (already claimed, or opened before [`ConnectLog::forget`]) or was ready
    /// before `sent`.
    pub fn take(&self, local: SocketAddr, sent: Instant) -> Option<ConnectWait> {
        if self.unclaimed.load(Ordering::Acquire) == 0 {
            return None;
        }
        let o = {
            let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
            let o = open.remove(&local)?;
            self.unclaimed.fetch_sub(1, Ordering::Release);
            o
        };
        (o.end > sent).then(|| ConnectWait {
            waited: o.end.saturating_duration_since(o.queued.max(sent)),
            retransmit: ns(o.end.saturating_duration_since(o.start)) >= CONNECT_RETRANSMIT_NS,
        })
    }

    /// Counts a connection opened from `start` to `end` whose opening needs no claim (the
    /// request that waited for it knows so itself: [`crate::h1`]).
    pub(crate) fn count_opened(&self, start: Instant, end: Instant) {
        self.opened.fetch_add(1, Ordering::Relaxed);
        if ns(end.saturating_duration_since(start)) >= CONNECT_RETRANSMIT_NS {
            self.slow.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Waits for one of the [`MAX_CONNECTS_IN_FLIGHT`] connect slots (held until dropped).
    pub(crate) async fn slot(&self) -> Option<tokio::sync::OwnedSemaphorePermit> {
        Arc::clone(&self.slots).acquire_owned().await.ok()
    }

    /// Connects called and not finished yet.
    pub fn in_progress(&self) -> usize {
        self.in_progress.load(Ordering::Acquire)
    }

    /// [`ConnectLog::take`] for a response with these `extensions` (the connection's local
    /// address from `HttpInfo`); one atomic read when no connection is unclaimed.
    pub fn claim(&self, extensions: &http::Extensions, sent: Instant) -> Option<ConnectWait> {
        if self.unclaimed.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.take(Self::local_addr(extensions)?, sent)
    }

    /// Forgets every unclaimed connection (after a warm pool was opened: its connections
    /// were opened before the measured window and no request waited on them).
    pub fn forget(&self) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        open.clear();
        self.unclaimed.store(0, Ordering::Release);
    }

    /// The counters so far.
    pub fn counts(&self) -> ConnectCounts {
        ConnectCounts {
            opened: self.opened.load(Ordering::Relaxed),
            retransmits: self.slow.load(Ordering::Relaxed),
        }
    }

    /// The local address a response came over (hyper-util's `HttpInfo`), when known.
    pub fn local_addr(extensions: &http::Extensions) -> Option<SocketAddr> {
        extensions.get::<HttpInfo>().map(HttpInfo::local_addr)
    }
}

/// The tower layer that times reqwest's connector into a [`ConnectLog`].
#[derive(Clone, Debug)]
pub struct ConnectTimer(pub Arc<ConnectLog>);

impl<S> tower_layer::Layer<S> for ConnectTimer {
    type Service = Timed<S>;
    fn layer(&self, inner: S) -> Timed<S> {
        Timed {
            inner,
            log: Arc::clone(&self.0),
        }
    }
}

/// A connector service whose connections are logged ([`ConnectTimer`]).
#[derive(Clone, Debug)]
pub struct Timed<S> {
    inner: S,
    log: Arc<ConnectLog>,
}

impl<S, R> tower_service::Service<R> for Timed<S>
where
    S: tower_service::Service<R>,
    S::Response: Connection + Send + 'static,
    S::Error: Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        let queued = Instant::now();
        // The connector's future does nothing until polled: the connect begins once a
        // slot is free.
        let fut = self.inner.call(req);
        let log = Arc::clone(&self.log);
        log.in_progress.fetch_add(1, Ordering::AcqRel);
        Box::pin(async move {
            struct Done<'a>(&'a ConnectLog);
            impl Drop for Done<'_> {
                fn drop(&mut self) {
                    self.0.in_progress.fetch_sub(1, Ordering::AcqRel);
                }
            }
            let _done = Done(&log);
            let _slot = Arc::clone(&log.slots).acquire_owned().await.ok();
            let start = Instant::now();
            let conn = fut.await?;
            let end = Instant::now();
            let mut extras = http::Extensions::new();
            conn.connected().get_extras(&mut extras);
            if let Some(local) = ConnectLog::local_addr(&extras) {
                log.opened_after(local, queued, start, end);
            }
            Ok(conn)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    #[test]
    fn the_first_request_claims_the_wait_and_only_the_wait() {
        let log = ConnectLog::default();
        let t0 = Instant::now();
        let ms = Duration::from_millis;
        log.opened(addr(1), t0, t0 + ms(1000));
        log.opened(addr(2), t0, t0 + ms(3));
        log.opened(addr(3), t0 + ms(5), t0 + ms(7));
        // Sent before the connect began: the whole connect.
        let wait = |ms_: u64, retransmit| {
            Some(ConnectWait {
                waited: ms(ms_),
                retransmit,
            })
        };
        assert_eq!(log.take(addr(1), t0), wait(1000, true));
        // Claimed once: the next request on it opened nothing.
        assert_eq!(log.take(addr(1), t0), None);
        // Sent after the connect began: only the part it waited.
        assert_eq!(log.take(addr(3), t0 + ms(6)), wait(1, false));
        // Ready before the request was sent: no wait.
        assert_eq!(log.take(addr(2), t0 + ms(4)), None);
        assert_eq!(
            log.counts(),
            ConnectCounts {
                opened: 3,
                retransmits: 1
            }
        );
        log.opened(addr(4), t0, t0 + ms(1));
        log.forget();
        assert_eq!(log.take(addr(4), t0), None);
        // A wait for a connect slot is part of the request's wait, not of the connect:
        // queued 0, connecting from 950 ms to 1000 ms is no retransmit.
        log.opened_after(addr(5), t0, t0 + ms(950), t0 + ms(1000));
        assert_eq!(log.take(addr(5), t0), wait(1000, false));
    }
}
