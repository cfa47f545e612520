//! The built-in OpenAI-compatible simulator: the embedded default endpoint and the
//! project's test double (docs/architecture.md). It never stands in for a
//! measurement of a real engine: every consumer labels its figures `simulated`.
//!
//! What it does:
//! - `GET /v1/models` (OpenAI list), `POST /v1/chat/completions` (stream and non-stream,
//!   vLLM's shape: [`stream`]), `GET /metrics` (vLLM V1 names: [`metrics`]), `GET /health`;
//! - a deterministic ChatML-like rendering and 4-byte tokenizer ([`prompt`]), a 16-token
//!   block-hash prefix cache with LRU eviction ([`cache`]), reported as
//!   `usage.prompt_tokens_details.cached_tokens`;
//! - a seeded latency model: TTFT = base + per-token cost × uncached prompt tokens, ITL
//!   with seeded jitter ([`config::SimConfig`], [`generate`]);
//! - deterministic tool calls and final answers that quote the last tool result
//!   ([`generate`]);
//! - fault injection, every Nth request or per request by header ([`fault`]);
//! - a simulated power model and energy counter for attribution without a GPU ([`power`]).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use inferscope_bench::sim::{SimConfig, spawn};
//! let sim = spawn(SimConfig::default(), "127.0.0.1:0".parse().unwrap()).await?;
//! println!("{}", sim.base_url()); // http://127.0.0.1:PORT/v1
//! sim.shutdown().await;
//! # Ok(()) }
//! ```

pub mod cache;
pub mod config;
pub mod fault;
pub mod generate;
pub mod metrics;
pub mod power;
pub mod prompt;
mod request;
mod server;
mod state;
mod stream;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

pub use config::{FaultConfig, SimConfig};
pub use fault::{FAULT_HEADER, Faults};
pub use metrics::MetricsSnapshot;
pub use power::PowerModel;
pub use state::SimState;

/// How long [`SimHandle::shutdown`] waits for open connections before aborting them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// A running simulator, served on a thread of its own (`inferscope-sim`, a current-thread
/// runtime), so that its work never takes turns with the client it serves: a real engine
/// is another process, and the client's runtime worker (one in a `run`) reads its streams
/// as it would a real engine's. Dropping the handle shuts the server down gracefully in the
/// background; [`SimHandle::shutdown`] waits for that.
#[derive(Debug)]
pub struct SimHandle {
    addr: SocketAddr,
    state: Arc<SimState>,
    shutdown: Option<oneshot::Sender<()>>,
    /// Ends the server's thread at once (its runtime, and every connection, dropped).
    abort: Option<oneshot::Sender<()>>,
    done: Option<oneshot::Receiver<std::io::Result<()>>>,
}

impl SimHandle {
    /// The bound socket address (the real port when bound to port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// OpenAI base URL, `http://IP:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Prometheus endpoint, `http://IP:PORT/metrics`.
    pub fn metrics_url(&self) -> String {
        format!("http://{}/metrics", self.addr)
    }

    /// The shared state (power, energy, counters).
    pub fn state(&self) -> Arc<SimState> {
        self.state.clone()
    }

    /// Stops accepting, lets open requests finish for up to 5 s, then aborts the rest.
    pub async fn shutdown(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(mut done) = self.done.take()
            && tokio::time::timeout(SHUTDOWN_GRACE, &mut done)
                .await
                .is_err()
        {
            if let Some(abort) = self.abort.take() {
                let _ = abort.send(());
            }
            let _ = done.await;
        }
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// Binds `bind` (use `127.0.0.1:0` for a free port) and serves the simulator on a thread
/// of its own ([`SimHandle`]). Errors: the bind error, or the thread's.
pub async fn spawn(cfg: SimConfig, bind: SocketAddr) -> std::io::Result<SimHandle> {
    let listener = std::net::TcpListener::bind(bind)?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let state = Arc::new(SimState::new(cfg));
    let (tx, rx) = oneshot::channel::<()>();
    let (abort_tx, abort_rx) = oneshot::channel::<()>();
    let (done_tx, done_rx) = oneshot::channel();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let st = state.clone();
    std::thread::Builder::new()
        .name("inferscope-sim".into())
        .spawn(move || {
            let result = runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                // A dropped abort sender (the handle dropped without `shutdown`) is no
                // abort: the graceful stop goes on.
                let aborted = async {
                    if abort_rx.await.is_err() {
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    r = accept_loop(listener, st, rx) => r,
                    () = aborted => Ok(()),
                }
            });
            // Dropping the runtime cancels every connection still open.
            drop(runtime);
            let _ = done_tx.send(result);
        })?;
    Ok(SimHandle {
        addr,
        state,
        shutdown: Some(tx),
        abort: Some(abort_tx),
        done: Some(done_rx),
    })
}

/// Serves HTTP/1.1 connections on `listener` until `stop` fires (or its sender is
/// dropped), then stops accepting and waits for the open connections: in-flight requests
/// finish, idle keep-alive connections close ([`SimHandle::shutdown`] bounds the wait).
async fn accept_loop(
    listener: tokio::net::TcpListener,
    state: Arc<SimState>,
    stop: oneshot::Receiver<()>,
) -> std::io::Result<()> {
    use hyper_util::rt::TokioIo;
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let builder = hyper::server::conn::http1::Builder::new();
    tokio::pin!(stop);
    loop {
        let stream = tokio::select! {
            _ = &mut stop => break,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                Err(e) if is_connection_error(&e) => continue,
                Err(_) => {
                    // EMFILE and friends: back off instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // Small SSE frames must not wait for Nagle.
        let _ = stream.set_nodelay(true);
        let st = state.clone();
        let service = hyper::service::service_fn(move |req| {
            let st = st.clone();
            async move { Ok::<_, std::convert::Infallible>(server::handle(st, req).await) }
        });
        let conn = graceful.watch(builder.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            let _ = conn.await;
        });
    }
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// An accept error that concerns one connection only (the listener is fine).
fn is_connection_error(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionRefused | ConnectionAborted | ConnectionReset
    )
}

/// `inferscope-bench sim`: serves until Ctrl-C, after printing the listening URL.
/// Errors: bind failure or a failure to listen for Ctrl-C.
// Boxed at the crate's edge: an unboxed `impl Future` would be compiled again in every
// crate that polls it (docs/architecture.md "Build cost").
pub fn serve(
    config: SimConfig,
    addr: std::net::SocketAddr,
) -> futures_util::future::BoxFuture<'static, std::io::Result<()>> {
    Box::pin(serve_inner(config, addr))
}

async fn serve_inner(config: SimConfig, addr: std::net::SocketAddr) -> std::io::Result<()> {
    let handle = spawn(config, addr).await?;
    println!(
        "inferscope-bench sim: simulated endpoint listening on {} (model {}, metrics {})",
        handle.base_url(),
        handle.state().config().model,
        handle.metrics_url()
    );
    tokio::signal::ctrl_c().await?;
    handle.shutdown().await;
    Ok(())
}
