//! `inferscope-bench serve`: a read-only, authenticated API over retained run directories
//! and one packaged page (docs/artifacts.md "The dashboard API"; requirement ids R009–R011,
//! T003–T004 in docs/artifacts.md "Requirement ids"; docs/dashboard.md).
//!
//! ```text
//! inferscope-bench serve --runs target/inferscope/runs [--bind 127.0.0.1:8787] [--token-file FILE]
//! ```
//!
//! Routes (all `GET`; JSON unless noted):
//!
//! | route | auth | answer |
//! |---|---|---|
//! | `/health` | no | `{"status":"ok"}` |
//! | `/`, `/app.js`, `/style.css` | no | the page shell (no run data); it asks for the token |
//! | `/v1/runs?after=&limit=` | yes | [`api::RunList`], ascending run id, `limit` 1..=100 (50) |
//! | `/v1/runs/{run_id}?jobs_after=0` | yes | [`api::DetailPage`]: the [`view::RunDetail`] (verdicts, capture quality, lanes, gaps) with the jobs that fit 1 MiB (≤ 100, `jobs_next_after`; a job too large alone is served summarised) |
//! | `/v1/benchmark-timeline?run_id=&after_seq=0&limit=500` | yes | [`api::TimelinePage`] (≤ 1,000 events, ≤ 1 MiB, `next_after_seq`), [`api::TimelineUnavailable`], or 422 |
//! | `/v1/samples?run_id=&source=power\|proc\|metrics&after=0&limit=2000` | yes | [`api::SamplesPage`] (≤ 5,000 samples, ≤ 1 MiB, `next_after`) |
//! | `/v1/charts?run_id=` | yes | [`charts::ChartsPage`]: the run's charts (load-sweep curves, trajectory step bars, baseline pairs) as SVG element trees, ≤ 1 MiB, with a note per chart left out |
//! | `/runs/{run_id}/timeline.jsonl?after_seq=0&limit=1000` | yes | the verified events file's exact lines, ≤ 1,000 and ≤ 1 MiB a page (`x-inferscope-next-after-seq` header while more follow; field case C29) |
//! | `/runs/{run_id}/manifest.json` | yes | the verified manifest's exact bytes |
//!
//! Errors are typed JSON ([`api::ApiError`]): 400 for unknown or duplicate query keys,
//! bad limits, bad ids and oversized input; 401 without a valid token (before any
//! filesystem access); 404 with one body for every unknown run or path; 422 for an
//! artifact that fails verification; 503 when the runs root itself is unavailable.
//!
//! The page shell is public because a browser cannot attach a bearer header to a
//! navigation: the page takes the token from the URL fragment (`/#token=…`, never sent
//! to the server, removed from the address bar at once) or a password field, keeps it
//! for the tab, and sends it as `Authorization: Bearer` on every API call.
//!
//! Nothing served holds a prompt, response or tool payload: events follow the closed
//! timeline contract, the detail is a curated view of `report.json` (no requests, notes or
//! grading reasons), samples are numeric. Clock-domain ids are shown as fingerprints, and
//! metrics URLs and GPU UUIDs are left out (R011).

pub mod admit;
pub mod api;
pub mod assets;
pub mod auth;
pub mod charts;
pub mod html;
mod http;
pub mod query;
pub mod runs;
mod stall;
pub mod view;

// The workspace crates, under the paths the modules name them by (`crate::model::…`).
use inferscope_fsio as fsio;
use inferscope_gate as gate;
use inferscope_model as model;
use inferscope_records as records;
use inferscope_telemetry as telemetry;
use inferscope_timeline as timeline;

use inferscope_model::exit::ExitCode;

use std::net::SocketAddr;
use std::path::PathBuf;

pub use auth::{TOKEN_ENV, Token, TokenError};
pub use http::{
    AUTH_RESERVE, BoundServer, CONNECTION_LIFETIME, CSP, HEADER_READ_TIMEOUT,
    MAX_CONCURRENT_LIST_READS, MAX_CONCURRENT_READS, MAX_CONNECTIONS, MAX_CONNECTIONS_PER_PEER,
    MAX_HEAD_BYTES, MAX_QUEUED_READS, MAX_TARGET_BYTES, READ_QUEUE_TIMEOUT, ServeLimits,
    WRITE_STALL_TIMEOUT, connection_cap,
};
pub use runs::{RunDir, RunStore, is_valid_run_id};

/// The default `--bind`: loopback only.
pub const DEFAULT_BIND: &str = "127.0.0.1:8787";

/// What `serve` serves, and where (the flags: `cli::ServeArgs`).
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The runs root: each direct subdirectory is one run, addressed by its name.
    pub runs: PathBuf,
    /// Address to listen on.
    pub bind: SocketAddr,
    /// File holding the API token (`None`: the INFERSCOPE_TOKEN environment variable).
    pub token_file: Option<PathBuf>,
}

/// Runs `serve` until Ctrl-C or SIGTERM. Prints `listening on http://ADDR/` first (tests
/// read it). Exit status: 0 after a clean stop, 2 for a bad token or an address that
/// cannot be bound.
// Boxed at the crate's edge: an unboxed `impl Future` would be compiled again in every
// crate that polls it (docs/architecture.md "Build cost").
pub fn run(args: ServeConfig) -> futures_util::future::BoxFuture<'static, i32> {
    Box::pin(run_inner(args))
}

async fn run_inner(args: ServeConfig) -> i32 {
    let env = std::env::var(TOKEN_ENV).ok();
    let token = match Token::load(args.token_file.as_deref(), env.as_deref()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::BAD_INPUT;
        }
    };
    if !args.bind.ip().is_loopback() {
        eprintln!(
            "warning: --bind {} is not a loopback address: anyone who can reach it and holds \
             the token can read these runs' timelines",
            args.bind
        );
    }
    let server = match BoundServer::bind(args.runs.clone(), token, args.bind).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", args.bind);
            return ExitCode::BAD_INPUT;
        }
    };
    let addr = match server.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::BAD_INPUT;
        }
    };
    // A closed stdout (a supervisor that read the first line) must not stop the server.
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "listening on http://{addr}/ (runs root: {})",
            args.runs.display()
        );
        let _ = writeln!(
            out,
            "open http://{addr}/#token=<your token> in a browser, or enter the token in the page"
        );
        let _ = out.flush();
    }
    let shutdown = async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = async {
                match term.as_mut() {
                    Some(t) => { t.recv().await; }
                    None => std::future::pending::<()>().await,
                }
            } => {}
        }
    };
    match server.serve(shutdown).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: serve: {e}");
            1
        }
    }
}
