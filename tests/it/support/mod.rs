//! Shared helpers of the binary-level integration tests (`baseline`, `cli`, `hostile`,
//! `load`, `offline`, `otlp`, `secrets`, `sigint`, and `serve`/`browser` for the run
//! fixtures): the built binary, temporary suites, a
//! scripted loopback HTTP/1.1 server that speaks vLLM's SSE shape and misbehaves on chosen
//! requests, and artifact readers.
//!
//! Every server here binds 127.0.0.1:0 and is stopped when its handle drops. Timing bounds
//! in the tests that use these helpers are generous (a loaded 2-core machine).
#![allow(dead_code)]

pub mod http;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use inferscope_bench::runner::{self, RunOptions, RunOutcome};
use inferscope_bench::suite::{self, RunOverrides};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Path of the built `inferscope-bench` binary.
pub fn bin_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_inferscope-bench"))
}

/// The repository root (where `suites/` and `fixtures/` live).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A `std::process::Command` for the binary, run in `cwd`, with `CI=true` (no progress
/// bar) and no inherited `INFERSCOPE_*`/proxy surprises.
pub fn command(cwd: &Path) -> std::process::Command {
    let mut c = std::process::Command::new(bin_path());
    c.current_dir(cwd)
        .env("CI", "true")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy");
    c
}

/// Runs the binary to completion in `cwd` with `args`.
pub fn run(cwd: &Path, args: &[&str]) -> Output {
    command(cwd)
        .args(args)
        .output()
        .expect("start inferscope-bench")
}

/// [`run`] off the async workers (`spawn_blocking`), so servers on the test's own runtime
/// (an in-process simulator, a collector) keep serving while the binary runs.
pub async fn run_async(cwd: &Path, args: &[&str]) -> Output {
    let mut c = command(cwd);
    c.args(args);
    tokio::task::spawn_blocking(move || c.output().expect("start inferscope-bench"))
        .await
        .unwrap()
}

/// Runs the suite at `path` in-process with the runner (its jobs matching `filter`, when
/// given), writing the run to `out`: quiet, no progress bar, never cancelled.
pub async fn run_suite(path: &Path, filter: Option<&str>, out: &Path) -> RunOutcome {
    let s = suite::load(path).unwrap_or_else(|e| panic!("{e}"));
    let resolved = suite::resolve(
        &s,
        &RunOverrides {
            filter: filter.map(str::to_string),
            ..RunOverrides::default()
        },
    );
    runner::run(
        RunOptions {
            suites: vec![resolved],
            out: Some(out.to_path_buf()),
            sink_override: None,
        },
        Arc::new(AtomicBool::new(false)),
    )
    .await
}

/// Stdout and stderr of an output, for assertion messages.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `code, stdout, stderr` rendered for a failed assertion.
pub fn describe(o: &Output) -> String {
    let (out, err) = text(o);
    format!(
        "exit {:?}\n--- stdout ---\n{out}\n--- stderr ---\n{err}",
        o.status.code()
    )
}

/// Writes `text` as `dir/name` (creating parents) and returns the path.
pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&p, text).unwrap();
    p
}

/// Runs the repository's `suite` (`suites/load.toml`) on the simulator with the timeline
/// captured into `out`; asserts exit 0 and returns its `report.json`.
pub fn captured_run(suite: &str, out: &Path) -> Value {
    let o = run(
        &repo(),
        &[
            "run",
            suite,
            "--capture-timeline",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
    report(out)
}

/// Reads `run_dir/report.json`, with each job's `requests` (which report.json schema v3
/// keeps in `requests.jsonl`) read back through the product's checked reader and put in
/// place as the typed records' JSON, so tests can look at them as one document.
pub fn report(run_dir: &Path) -> Value {
    let p = run_dir.join("report.json");
    let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut v: Value = serde_json::from_str(&t).unwrap();
    if !v["requests_file"].is_null() {
        let typed = inferscope_bench::commands::read_report_with_requests(run_dir)
            .unwrap_or_else(|e| panic!("{e}"));
        for (j, tj) in v["jobs"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .zip(&typed.jobs)
        {
            j["requests"] = serde_json::to_value(&tj.requests).unwrap();
        }
    }
    v
}

/// The job `id` of a report.
pub fn job<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|j| j["id"] == id)
        .unwrap_or_else(|| panic!("no job {id} in report"))
}

/// Every line of `run_dir/timeline/events.jsonl`, parsed.
pub fn events(run_dir: &Path) -> Vec<Value> {
    let t = std::fs::read_to_string(run_dir.join("timeline/events.jsonl")).unwrap();
    t.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Every regular file under `dir` (recursively), with its bytes.
pub fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                out.push((e.path(), std::fs::read(e.path()).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Relative paths of every file under `dir`, sorted.
pub fn tree(dir: &Path) -> Vec<String> {
    files_under(dir)
        .into_iter()
        .map(|(p, _)| p.strip_prefix(dir).unwrap().to_string_lossy().into_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------
// The scripted hostile server.
// ---------------------------------------------------------------------------------------

/// What the server answers to one chat-completions request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A well-formed vLLM-shape stream: role chunk, one content chunk per word of the
    /// text, finish chunk, usage chunk, `[DONE]`; each event split over two writes.
    Ok(String),
    /// One tool call (`name`, JSON `arguments` text), then finish `tool_calls`, usage, `[DONE]`.
    ToolCall(String, String),
    /// Several tool calls in one turn (`name`, `arguments`), indices 0.., then finish
    /// `tool_calls`, usage, `[DONE]`.
    ToolCalls(Vec<(String, String)>),
    /// These `data:` payloads verbatim (one SSE event each), then the end of the body; no
    /// `[DONE]` unless one of them is it.
    Events(Vec<String>),
    /// Two content chunks, then `data: {"error":{"message":MSG,...}}` and `[DONE]` (C07 A).
    ErrorMidStream(String),
    /// Two content chunks, then the socket closes inside the chunked body.
    Disconnect,
    /// A role chunk, then one `data:` line of this many bytes without an event end.
    Oversized(usize),
    /// Nothing at all (not even the response head) for this long, then [`Reply::Ok`].
    SlowHead(Duration, String),
    /// The response head, then silence for this long, then [`Reply::Ok`].
    SlowBody(Duration, String),
    /// The response head, then the body after this long, then [`Reply::Ok`].
    /// (Same as `SlowBody`; named for readability where the delay is within limits.)
    SlowFirstByte(Duration, String),
    /// An HTTP error status with `{"error":{"message":MSG}}`.
    Status(u16, String),
    /// Like [`Reply::Ok`] but with no `usage` chunk (a server that ignores
    /// `stream_options.include_usage`), the content chunks 5 ms apart.
    NoUsage(String),
}

/// What the server answers to `GET /v1/models`.
#[derive(Clone, Debug)]
pub enum ModelsReply {
    /// `{"object":"list","data":[{"id":…},…]}` with these ids.
    List(Vec<String>),
    /// This HTTP status with `{"error":{"message":MSG}}`.
    Status(u16, String),
}

/// One request the server read.
#[derive(Clone, Debug)]
pub struct Received {
    /// `GET`, `POST`, …
    pub method: String,
    /// Request target.
    pub path: String,
    /// Headers, names lowercased.
    pub headers: BTreeMap<String, String>,
    /// Body text.
    pub body: String,
}

impl Received {
    /// The `x-request-id` header (empty when absent).
    pub fn request_id(&self) -> &str {
        self.headers
            .get("x-request-id")
            .map(String::as_str)
            .unwrap_or("")
    }
}

type Chooser = dyn Fn(&Received) -> Reply + Send + Sync;

/// A running hostile server; stops when dropped.
pub struct Hostile {
    /// The listening address.
    pub addr: SocketAddr,
    /// Connections accepted so far.
    pub connections: Arc<AtomicUsize>,
    /// Requests read so far, in order.
    pub received: Arc<Mutex<Vec<Received>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hostile {
    /// Starts a server on 127.0.0.1:0 (own thread, own runtime) that serves `GET
    /// /v1/models` with `model` listed and answers each chat request with `choose(request)`.
    pub fn start(
        model: &str,
        choose: impl Fn(&Received) -> Reply + Send + Sync + 'static,
    ) -> Hostile {
        Hostile::start_with_models(ModelsReply::List(vec![model.to_string()]), choose)
    }

    /// [`Hostile::start`] with the `/v1/models` answer given.
    pub fn start_with_models(
        models: ModelsReply,
        choose: impl Fn(&Received) -> Reply + Send + Sync + 'static,
    ) -> Hostile {
        let std_listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        std_listener.set_nonblocking(true).unwrap();
        let addr = std_listener.local_addr().unwrap();
        let connections = Arc::new(AtomicUsize::new(0));
        let received = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (c, r) = (connections.clone(), received.clone());
        let model = models;
        let choose: Arc<Chooser> = Arc::new(choose);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = TcpListener::from_std(std_listener).unwrap();
                let accept = async {
                    loop {
                        let Ok((sock, _)) = listener.accept().await else {
                            continue;
                        };
                        c.fetch_add(1, Ordering::SeqCst);
                        tokio::spawn(serve_conn(sock, model.clone(), choose.clone(), r.clone()));
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = rx => {}
                }
            });
            rt.shutdown_timeout(Duration::from_millis(100));
        });
        Hostile {
            addr,
            connections,
            received,
            stop: Some(tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Every request read so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// Chat requests read so far.
    pub fn chat_requests(&self) -> Vec<Received> {
        self.received
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .cloned()
            .collect()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn read_request(sock: &mut TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 16384];
    let head_end = loop {
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
        match sock.read(&mut tmp).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or("").split(' ');
    let method = first.next().unwrap_or("").to_string();
    let path = first.next().unwrap_or("").to_string();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            Some((k.trim().to_ascii_lowercase(), v.trim().to_string()))
        })
        .collect();
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while buf.len() < head_end + len {
        match sock.read(&mut tmp).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&tmp[..n]),
        }
    }
    Some(Received {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&buf[head_end..head_end + len]).into_owned(),
    })
}

const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                        cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\
                        connection: close\r\n\r\n";

async fn put(sock: &mut TcpStream, bytes: &[u8]) -> bool {
    sock.write_all(bytes).await.is_ok() && sock.flush().await.is_ok()
}

/// Writes `s` as one HTTP/1.1 chunk.
async fn chunk(sock: &mut TcpStream, s: &str) -> bool {
    let mut v = format!("{:x}\r\n", s.len()).into_bytes();
    v.extend_from_slice(s.as_bytes());
    v.extend_from_slice(b"\r\n");
    put(sock, &v).await
}

/// Writes one SSE event split over two HTTP chunks with a short pause between them, so
/// the client sees the event completed by a second read (C04 over the network).
async fn event_split(sock: &mut TcpStream, data: &str) -> bool {
    let ev = format!("data: {data}\n\n");
    let mid = ev.len() / 2;
    let mid = (0..=mid)
        .rev()
        .find(|&i| ev.is_char_boundary(i))
        .unwrap_or(0);
    if !chunk(sock, &ev[..mid]).await {
        return false;
    }
    tokio::time::sleep(Duration::from_millis(1)).await;
    chunk(sock, &ev[mid..]).await
}

fn chunk_json(id: &str, delta: Value, finish: Option<&str>) -> String {
    json!({
        "id": id, "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]
    })
    .to_string()
}

fn usage_json(id: &str, prompt: u64, completion: u64) -> String {
    json!({
        "id": id, "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": 0}}
    })
    .to_string()
}

async fn ok_stream(sock: &mut TcpStream, text: &str, prompt_bytes: usize) {
    let id = "chatcmpl-hostile";
    if !event_split(
        sock,
        &chunk_json(id, json!({"role": "assistant", "content": ""}), None),
    )
    .await
    {
        return;
    }
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    for w in &words {
        if !event_split(sock, &chunk_json(id, json!({"content": w}), None)).await {
            return;
        }
    }
    let _ = event_split(sock, &chunk_json(id, json!({}), Some("stop"))).await;
    let _ = event_split(
        sock,
        &usage_json(id, (prompt_bytes as u64).div_ceil(4), words.len() as u64),
    )
    .await;
    let _ = chunk(sock, "data: [DONE]\n\n").await;
    let _ = put(sock, b"0\r\n\r\n").await;
}

/// A tool-call turn: each call's name first (with an id), then its arguments as a second
/// delta, then finish `tool_calls`, usage and `[DONE]`.
async fn tool_calls(sock: &mut TcpStream, calls: &[(String, String)]) {
    let id = "chatcmpl-hostile";
    if !put(sock, SSE_HEAD.as_bytes()).await {
        return;
    }
    for (i, (name, args)) in calls.iter().enumerate() {
        let start = json!({"role": "assistant", "content": null, "tool_calls": [
            {"index": i, "id": format!("call_h{i}"), "type": "function",
             "function": {"name": name, "arguments": ""}}]});
        let delta = json!({"tool_calls": [{"index": i, "function": {"arguments": args}}]});
        // Split reads for ordinary turns; a flood of calls is written whole (fast).
        let ok = if calls.len() <= 16 {
            event_split(sock, &chunk_json(id, start, None)).await
                && event_split(sock, &chunk_json(id, delta, None)).await
        } else {
            let two = format!(
                "data: {}\n\ndata: {}\n\n",
                chunk_json(id, start, None),
                chunk_json(id, delta, None)
            );
            chunk(sock, &two).await
        };
        if !ok {
            return;
        }
    }
    let _ = event_split(sock, &chunk_json(id, json!({}), Some("tool_calls"))).await;
    let _ = event_split(sock, &usage_json(id, 10, 5)).await;
    let _ = chunk(sock, "data: [DONE]\n\n").await;
    let _ = put(sock, b"0\r\n\r\n").await;
}

async fn serve_conn(
    mut sock: TcpStream,
    models: ModelsReply,
    choose: Arc<Chooser>,
    received: Arc<Mutex<Vec<Received>>>,
) {
    let _ = sock.set_nodelay(true);
    let Some(req) = read_request(&mut sock).await else {
        return;
    };
    received.lock().unwrap().push(req.clone());
    if req.method == "GET" && req.path.ends_with("/models") {
        let (status, body) = match &models {
            ModelsReply::List(ids) => {
                let data: Vec<Value> = ids
                    .iter()
                    .map(|id| json!({"id": id, "object": "model"}))
                    .collect();
                (
                    "200 OK".to_string(),
                    json!({"object": "list", "data": data}).to_string(),
                )
            }
            ModelsReply::Status(code, msg) => (
                format!("{code} Error"),
                json!({"error": {"message": msg, "code": code}}).to_string(),
            ),
        };
        let resp = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = put(&mut sock, resp.as_bytes()).await;
        let _ = sock.shutdown().await;
        return;
    }
    if !(req.method == "POST" && req.path.ends_with("/chat/completions")) {
        let _ = put(
            &mut sock,
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        )
        .await;
        return;
    }
    let prompt_bytes = req.body.len();
    let id = "chatcmpl-hostile";
    match choose(&req) {
        Reply::Ok(text) => {
            if put(&mut sock, SSE_HEAD.as_bytes()).await {
                ok_stream(&mut sock, &text, prompt_bytes).await;
            }
        }
        Reply::NoUsage(text) => {
            if put(&mut sock, SSE_HEAD.as_bytes()).await {
                let _ = event_split(
                    &mut sock,
                    &chunk_json(id, json!({"role": "assistant", "content": ""}), None),
                )
                .await;
                for w in text.split_inclusive(' ') {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    if !event_split(&mut sock, &chunk_json(id, json!({"content": w}), None)).await {
                        return;
                    }
                }
                let _ = event_split(&mut sock, &chunk_json(id, json!({}), Some("stop"))).await;
                let _ = chunk(&mut sock, "data: [DONE]\n\n").await;
                let _ = put(&mut sock, b"0\r\n\r\n").await;
            }
        }
        Reply::ToolCall(name, args) => tool_calls(&mut sock, &[(name, args)]).await,
        Reply::ToolCalls(calls) => tool_calls(&mut sock, &calls).await,
        Reply::Events(payloads) => {
            if !put(&mut sock, SSE_HEAD.as_bytes()).await {
                return;
            }
            for p in &payloads {
                if !chunk(&mut sock, &format!("data: {p}\n\n")).await {
                    return;
                }
            }
            let _ = put(&mut sock, b"0\r\n\r\n").await;
        }
        Reply::ErrorMidStream(msg) => {
            if !put(&mut sock, SSE_HEAD.as_bytes()).await {
                return;
            }
            let _ = event_split(
                &mut sock,
                &chunk_json(id, json!({"role": "assistant", "content": ""}), None),
            )
            .await;
            let _ = event_split(
                &mut sock,
                &chunk_json(id, json!({"content": "partial "}), None),
            )
            .await;
            let _ = event_split(
                &mut sock,
                &chunk_json(id, json!({"content": "answer "}), None),
            )
            .await;
            let err = json!({"error": {"message": msg, "type": "InternalServerError",
                                       "param": null, "code": 500}});
            let _ = event_split(&mut sock, &err.to_string()).await;
            let _ = chunk(&mut sock, "data: [DONE]\n\n").await;
            let _ = put(&mut sock, b"0\r\n\r\n").await;
        }
        Reply::Disconnect => {
            if !put(&mut sock, SSE_HEAD.as_bytes()).await {
                return;
            }
            let _ = event_split(
                &mut sock,
                &chunk_json(id, json!({"role": "assistant", "content": ""}), None),
            )
            .await;
            let _ = event_split(&mut sock, &chunk_json(id, json!({"content": "cut "}), None)).await;
            let _ = event_split(&mut sock, &chunk_json(id, json!({"content": "off "}), None)).await;
            // Half an HTTP chunk, then a hard close: a truncated chunked body.
            let _ = put(&mut sock, b"40\r\ndata: {\"choi").await;
            tokio::time::sleep(Duration::from_millis(5)).await;
            // Close: the chunk terminator never follows.
            drop(sock);
            return;
        }
        Reply::Oversized(n) => {
            if !put(&mut sock, SSE_HEAD.as_bytes()).await {
                return;
            }
            let _ = event_split(
                &mut sock,
                &chunk_json(id, json!({"role": "assistant", "content": ""}), None),
            )
            .await;
            let _ = chunk(
                &mut sock,
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"",
            )
            .await;
            let block = "x".repeat(8192);
            let mut sent = 0;
            while sent < n {
                if !chunk(&mut sock, &block).await {
                    return;
                }
                sent += block.len();
            }
            let _ = chunk(&mut sock, "\"}}]}\n\n").await;
            let _ = chunk(&mut sock, "data: [DONE]\n\n").await;
            let _ = put(&mut sock, b"0\r\n\r\n").await;
        }
        Reply::SlowHead(d, text) => {
            tokio::time::sleep(d).await;
            if put(&mut sock, SSE_HEAD.as_bytes()).await {
                ok_stream(&mut sock, &text, prompt_bytes).await;
            }
        }
        Reply::SlowBody(d, text) | Reply::SlowFirstByte(d, text) => {
            if !put(&mut sock, SSE_HEAD.as_bytes()).await {
                return;
            }
            tokio::time::sleep(d).await;
            ok_stream(&mut sock, &text, prompt_bytes).await;
        }
        Reply::Status(code, msg) => {
            let body = json!({"error": {"message": msg, "type": "BadRequestError", "code": code}})
                .to_string();
            let resp = format!(
                "HTTP/1.1 {code} Error\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = put(&mut sock, resp.as_bytes()).await;
        }
    }
    let _ = sock.shutdown().await;
}

/// A plain loopback listener that counts connection attempts and never answers.
pub struct Tripwire {
    /// The listening address.
    pub addr: SocketAddr,
    listener: std::net::TcpListener,
}

impl Tripwire {
    /// Binds 127.0.0.1:0 (non-blocking, so [`Tripwire::accepted`] never waits).
    pub fn new() -> Tripwire {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        Tripwire {
            addr: listener.local_addr().unwrap(),
            listener,
        }
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Connections waiting in the backlog (accepted now; a connect that completed the TCP
    /// handshake is counted even if the client gave up).
    pub fn accepted(&self) -> usize {
        let mut n = 0;
        while self.listener.accept().is_ok() {
            n += 1;
        }
        n
    }
}

impl Default for Tripwire {
    fn default() -> Self {
        Self::new()
    }
}

/// Copies the tree `from` to `to` (directories and regular files), creating `to`.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = e.file_type().unwrap();
        if t.is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else if t.is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A copy (at `to`) of the `fixtures/runs/cancelled` run whose report also holds `extra`
/// jobs the cancellation stopped before they started (`status: "not_run"`,
/// `summary.not_run`), as the runner writes them: no stats, verdicts, grading,
/// trajectories or requests. Only `report.json` changes; the timeline is untouched.
pub fn cancelled_with_not_run(to: &Path, extra: usize) {
    copy_dir(&repo().join("fixtures/runs/cancelled"), to);
    let rp = to.join("report.json");
    let records = inferscope_bench::commands::read_report_with_requests(to).unwrap();
    let mut r: Value = serde_json::from_slice(&std::fs::read(&rp).unwrap()).unwrap();
    let mut j = r["jobs"][0].clone();
    j["status"] = "not_run".into();
    j["duration_ns"] = 0.into();
    j["stats"] = Value::Null;
    j["grade_pass_rate"] = Value::Null;
    for k in ["verdicts", "grading", "failure_codes", "trajectories"] {
        j[k] = json!([]);
    }
    j["notes"] = json!(["not run: cancelled before start"]);
    for i in 0..extra {
        j["id"] = format!("agentic::later{i}").into();
        r["jobs"].as_array_mut().unwrap().push(j.clone());
    }
    r["summary"]["not_run"] = extra.into();
    // The records file names the jobs: written again for the new job list (the jobs
    // added never ran, so they have no records), then report.json last.
    let mut typed: inferscope_bench::model::RunReport = serde_json::from_value(r).unwrap();
    for (j, old) in typed.jobs.iter_mut().zip(records.jobs) {
        j.requests = old.requests;
    }
    inferscope_bench::records::write_report_records(to, &mut typed).unwrap();
    std::fs::write(&rp, typed.to_json()).unwrap();
}

/// Runs `inferscope-bench report RUN_DIR --format html --output OUT` in the repository
/// root (so relative fixture paths work); panics with stderr unless it exits 0.
pub fn report_html(run_dir: &Path, out: &Path) {
    let st = std::process::Command::new(bin_path())
        .arg("report")
        .arg(run_dir)
        .args(["--format", "html", "--output"])
        .arg(out)
        .current_dir(repo())
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
}

/// `inferscope-bench sim` started on a free loopback port: the child (stdout taken) and the
/// base URL it announced on its first line.
pub fn spawn_sim(cwd: &Path, extra: &[&str]) -> (std::process::Child, String) {
    use std::io::BufRead;
    let mut sim = command(cwd)
        .args(["sim", "--port", "0"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(sim.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:") && w.ends_with("/v1"))
        .unwrap_or_else(|| panic!("no URL in {first:?}"))
        .to_string();
    (sim, url)
}

/// The console text of a finished run (job blocks, tables, summary), as the human
/// reporter writes it.
#[allow(dead_code)]
pub fn console(report: &inferscope_bench::model::RunReport) -> String {
    let mut out = Vec::new();
    inferscope_bench::reporter::write_report(
        &mut out,
        report,
        inferscope_bench::render::Style::PLAIN,
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

/// The cached Python environment `.ci/run` installs the independent validators into
/// (PyPI, pinned): `opentelemetry-proto` (the official OTLP protobuf definitions) with
/// `protobuf`, and `xmlschema`; and the Jenkins `junit-10.xsd` taken from pytest's sdist.
pub const PY_VALIDATORS_VENV: &str = ".cache/inferscope-bench/venv-py-validators-1";
/// Where `.ci/run` keeps `junit-10.xsd` (from `pytest==9.2.0`'s sdist).
pub const JUNIT_XSD: &str = ".cache/inferscope-bench/junit-10.xsd";

/// The validators' Python and the XSD: `INFERSCOPE_PY_VALIDATORS` (a python executable)
/// and `INFERSCOPE_JUNIT_XSD`, else the paths `.ci/run` installs under `$HOME`. `None`
/// (the caller skips, saying so) only when they are absent and
/// `INFERSCOPE_REQUIRE_PY_VALIDATORS` is unset; with it (`.ci/run` sets it) a missing one
/// fails the test.
pub fn py_validators(test: &str) -> Option<(PathBuf, PathBuf)> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let python = std::env::var_os("INFERSCOPE_PY_VALIDATORS")
        .map(PathBuf::from)
        .or_else(|| {
            home.as_ref()
                .map(|h| h.join(PY_VALIDATORS_VENV).join("bin/python"))
        })
        .filter(|p| p.is_file());
    let xsd = std::env::var_os("INFERSCOPE_JUNIT_XSD")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(JUNIT_XSD)))
        .filter(|p| p.is_file());
    match (python, xsd) {
        (Some(p), Some(x)) => Some((p, x)),
        _ => {
            assert!(
                std::env::var("INFERSCOPE_REQUIRE_PY_VALIDATORS").as_deref() != Ok("1"),
                "{test}: INFERSCOPE_REQUIRE_PY_VALIDATORS=1 but the Python validators are not \
                 installed (.ci/run installs them into ~/{PY_VALIDATORS_VENV} and \
                 ~/{JUNIT_XSD})"
            );
            eprintln!(
                "SKIP: {test}: the Python validators are not installed (run .ci/run, or set \
                 INFERSCOPE_PY_VALIDATORS and INFERSCOPE_JUNIT_XSD)"
            );
            None
        }
    }
}

/// Runs `python -c SCRIPT ARGS...`; returns (exit code, stdout, stderr).
pub fn python(python: &Path, script: &str, args: &[&Path]) -> (i32, String, String) {
    let o = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `serve` on a loopback port with `limits`, on its own runtime thread (two workers);
/// stopped and joined on drop. `store` is the server's run store.
pub struct ServeThread {
    /// The bound address.
    pub addr: SocketAddr,
    /// The server's run store (what it indexed).
    pub store: inferscope_bench::serve::RunStore,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServeThread {
    /// Serves `root` with bearer token `token`.
    pub fn start(root: &Path, token: &str, limits: inferscope_bench::serve::ServeLimits) -> Self {
        use inferscope_bench::serve::{BoundServer, Token};
        let root = root.to_path_buf();
        let token = Token::new(token).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let srv =
                    BoundServer::bind_with(root, token, "127.0.0.1:0".parse().unwrap(), limits)
                        .await
                        .unwrap();
                tx.send((srv.local_addr().unwrap(), srv.store())).unwrap();
                srv.serve(async {
                    let _ = stop_rx.await;
                })
                .await
                .unwrap();
            });
        });
        let (addr, store) = rx.recv_timeout(Duration::from_secs(30)).unwrap();
        Self {
            addr,
            store,
            stop: Some(stop_tx),
            thread: Some(thread),
        }
    }
}

impl Drop for ServeThread {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
