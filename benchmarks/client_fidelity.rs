//! Client timing fidelity and cost (issue 2 "Speed"): how far the product's streaming
//! client ([`inferscope_bench::client::Client::chat`]) is from server-stamped truth, at
//! concurrency 1 and 128, against a loopback SSE server with a 50 ms TTFT and a 10 ms
//! inter-token interval, 64 output tokens. Method of `ref/client-anchor-figures.md`.
//!
//! Run with `cargo bench --bench client_fidelity` (release). Environment:
//! `FIDELITY_CONCURRENCY` (default `1,128`), `FIDELITY_REQUESTS_C1` (requests at
//! concurrency 1, default 30), `FIDELITY_ROUNDS` (requests per worker at concurrency > 1,
//! default 4), `FIDELITY_TTFT_MS` / `FIDELITY_ITL_MS` (default 50 / 10),
//! `FIDELITY_TOKENS` (default 64), `FIDELITY_CLIENT_WORKERS` (tokio workers of the client,
//! default 1; the server always has its own single worker). Without `--bench` (`cargo
//! test --benches`) it is a short smoke run (concurrency 1 and 8, T = 5 ms, I = 1 ms, 8
//! tokens) that fails only when a request fails: timing is never asserted.
//!
//! # Server
//! A raw HTTP/1.1 keep-alive server in vLLM's stream shape: response head and a role-only
//! chunk as soon as the request body is read, then one content chunk per token, the first
//! at body-read + T and each next one I later (absolute deadlines, so the schedule does
//! not drift), then a finish chunk, a usage-only chunk (`choices: []`) and `data: [DONE]`.
//! Each SSE event is one HTTP chunk written with one `write_all`.
//!
//! # Truth and error (one process, one clock)
//! Client and server share one [`RunClock`] (one `Instant` origin), so their stamps are
//! directly comparable. Per request (matched by the `X-Request-ID` header the client
//! sends) the server stamps `body_read_ns` (the request body fully read) and, per content
//! chunk, `handoff_ns[k]` (its `write_all` + `flush` into the socket returned).
//! - Server truth TTFT = `handoff_ns[0] − body_read_ns` (what the server did).
//! - Client TTFT = `ttft_ns − send_ns` of the record (from just before the request is
//!   handed to reqwest to the arrival of the read that completed the first content event).
//! - **TTFT error = client TTFT − server truth TTFT**, exactly as the anchor figures
//!   define it. With one clock it splits into two legs, both ≥ 0 by causality:
//!   request leg `body_read_ns − send_ns` (client write, loopback, server read) and
//!   response leg `ttft_ns − handoff_ns[0]` (loopback, client read, SSE framing wake-up).
//! - **ITL gap error** = client gap `itl_ns[k]` − server gap `handoff_ns[k+1] −
//!   handoff_ns[k]`, per gap; reported as p50/p99 of |error|.
//! - The server's own timer slip (server gap − nominal I) is printed too: it is not client
//!   error (the anchor notes that the server's timer slips on a busy machine), and the
//!   comparison is always against the stamped times, never the nominal T and I.
//!
//! Connections are warmed first (one short request per worker, all concurrently), and the
//! number of connections the server accepted during the measured window is printed (0 =
//! no connect inside any TTFT). Client CPU is the sum of utime+stime of the client
//! runtime's threads (`/proc/self/task/*/stat`, threads named `fid-client`), over the
//! measured window.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use inferscope_bench::client::{ChatRequest, Client, ClientConfig, RequestRecord};
use inferscope_bench::clock::RunClock;
use inferscope_bench::stats::percentile;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Warm-up requests carry this `X-Request-ID` prefix; the server answers them at once
/// (T = I = 0, 2 tokens) and keeps no truth for them.
const WARM_PREFIX: &str = "warm-";

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// What the server stamped for one request.
#[derive(Debug, Default, Clone)]
struct Truth {
    body_read_ns: u64,
    handoff_ns: Vec<u64>,
}

#[derive(Clone)]
struct Server {
    clock: RunClock,
    ttft_ns: u64,
    itl_ns: u64,
    tokens: usize,
    truth: Arc<Mutex<HashMap<String, Truth>>>,
    accepted: Arc<AtomicUsize>,
}

fn chunk_frame(payload: &str) -> Vec<u8> {
    let mut v = format!("{:x}\r\n", payload.len()).into_bytes();
    v.extend_from_slice(payload.as_bytes());
    v.extend_from_slice(b"\r\n");
    v
}

fn sse(data: &str) -> Vec<u8> {
    chunk_frame(&format!("data: {data}\n\n"))
}

fn chunk_json(delta: serde_json::Value, finish: Option<&str>) -> String {
    json!({"id": "chatcmpl-fid", "object": "chat.completion.chunk", "created": 0,
           "model": "fid", "choices": [{"index": 0, "delta": delta, "logprobs": null,
           "finish_reason": finish}]})
    .to_string()
}

impl Server {
    async fn serve(self, listener: TcpListener) {
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                continue;
            };
            self.accepted.fetch_add(1, Ordering::Relaxed);
            let s = self.clone();
            tokio::spawn(async move { s.conn(sock).await });
        }
    }

    /// One keep-alive connection: requests in sequence until the client closes.
    async fn conn(self, mut sock: TcpStream) {
        let _ = sock.set_nodelay(true);
        let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
        let mut tmp = vec![0u8; 16 * 1024];
        loop {
            // Read one request head + body.
            let head_end = loop {
                if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break p + 4;
                }
                match sock.read(&mut tmp).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&tmp[..n]),
                }
            };
            let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
            let header = |name: &str| -> Option<String> {
                head.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case(name)
                        .then(|| v.trim().to_string())
                })
            };
            let len: usize = header("content-length")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            while buf.len() < head_end + len {
                match sock.read(&mut tmp).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&tmp[..n]),
                }
            }
            let body_read_ns = self.clock.elapsed_ns();
            buf.drain(..head_end + len);
            let request_id = header("x-request-id").unwrap_or_default();
            let warm = request_id.starts_with(WARM_PREFIX);
            let (ttft, itl, tokens) = if warm {
                (0, 0, 2)
            } else {
                (self.ttft_ns, self.itl_ns, self.tokens)
            };

            let mut first = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                  cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
                .to_vec();
            first.extend(sse(&chunk_json(
                json!({"role": "assistant", "content": ""}),
                None,
            )));
            if sock.write_all(&first).await.is_err() {
                return;
            }
            let mut handoff = Vec::with_capacity(tokens);
            let origin = self.clock.origin();
            for k in 0..tokens {
                let due = body_read_ns + ttft + itl * k as u64;
                tokio::time::sleep_until(tokio::time::Instant::from_std(
                    origin + Duration::from_nanos(due),
                ))
                .await;
                let frame = sse(&chunk_json(json!({"content": format!("t{k} ")}), None));
                if sock.write_all(&frame).await.is_err() || sock.flush().await.is_err() {
                    return;
                }
                handoff.push(self.clock.elapsed_ns());
            }
            let mut tail = sse(&chunk_json(json!({}), Some("length")));
            tail.extend(sse(
                &json!({"id": "chatcmpl-fid", "object": "chat.completion.chunk",
                "created": 0, "model": "fid", "choices": [],
                "usage": {"prompt_tokens": 12, "completion_tokens": tokens,
                          "total_tokens": 12 + tokens}})
                .to_string(),
            ));
            tail.extend(sse("[DONE]"));
            tail.extend_from_slice(b"0\r\n\r\n");
            if sock.write_all(&tail).await.is_err() {
                return;
            }
            if !warm {
                self.truth.lock().unwrap().insert(
                    request_id,
                    Truth {
                        body_read_ns,
                        handoff_ns: handoff,
                    },
                );
            }
        }
    }
}

/// utime+stime ticks of this process's threads whose name starts with `prefix`.
fn thread_ticks(prefix: &str) -> Option<u64> {
    let mut total = 0u64;
    for e in std::fs::read_dir("/proc/self/task").ok()? {
        let path = e.ok()?.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if !comm.trim_end().starts_with(prefix) {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("stat")).ok()?;
        // Fields after the `(comm)`: state is field 3; utime 14, stime 15 (1-based).
        let rest = &stat[stat.rfind(')')? + 2..];
        let f: Vec<&str> = rest.split_whitespace().collect();
        total += f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    }
    Some(total)
}

fn clk_tck() -> f64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

fn request(id: String) -> ChatRequest {
    ChatRequest {
        request_id: id,
        model: "fid".into(),
        messages: vec![json!({"role": "user", "content": "Stream 64 tokens."})],
        max_tokens: Some(64),
        stream: true,
        ..ChatRequest::default()
    }
}

struct Outcome {
    records: Vec<RequestRecord>,
    window_s: f64,
    new_connections: usize,
    client_cpu_s: Option<f64>,
}

async fn run_level(
    client: Arc<Client>,
    clock: RunClock,
    concurrency: usize,
    per_worker: usize,
    accepted: Arc<AtomicUsize>,
) -> Outcome {
    // Warm one connection per worker through the client under test's own pool, all at
    // once so each opens its own connection: a short stream (the server skips T and I).
    let mut warm = Vec::new();
    for w in 0..concurrency {
        let c = client.clone();
        let clock = clock.clone();
        warm.push(tokio::spawn(async move {
            let req = request(format!("{WARM_PREFIX}{concurrency}-{w}"));
            c.chat(&req, &clock, clock.elapsed_ns()).await
        }));
    }
    for h in warm {
        let _ = h.await;
    }
    let accepted_before = accepted.load(Ordering::Relaxed);
    let ticks_before = thread_ticks("fid-client");
    let start = clock.elapsed_ns();
    let mut handles = Vec::new();
    for w in 0..concurrency {
        let c = client.clone();
        let clock = clock.clone();
        handles.push(tokio::spawn(async move {
            let mut out = Vec::with_capacity(per_worker);
            for i in 0..per_worker {
                let req = request(format!("c{concurrency}-w{w}-r{i}"));
                let now = clock.elapsed_ns();
                out.push(c.chat(&req, &clock, now).await);
            }
            out
        }));
    }
    let mut records = Vec::new();
    for h in handles {
        records.extend(h.await.unwrap());
    }
    let end = clock.elapsed_ns();
    let ticks_after = thread_ticks("fid-client");
    Outcome {
        records,
        window_s: (end - start) as f64 / 1e9,
        new_connections: accepted.load(Ordering::Relaxed) - accepted_before,
        client_cpu_s: match (ticks_before, ticks_after) {
            (Some(a), Some(b)) => Some((b - a) as f64 / clk_tck()),
            _ => None,
        },
    }
}

fn p(v: &[f64], q: f64) -> f64 {
    percentile(v, q).unwrap_or(f64::NAN)
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let levels: Vec<usize> = std::env::var("FIDELITY_CONCURRENCY")
        .unwrap_or_else(|_| "1,128".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .filter(|&c| c > 0)
        .collect();
    // `cargo bench` passes `--bench`; without it (`cargo test --benches`) a short smoke run
    // checks only that every request succeeds with the server's token count.
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let (levels, d_c1, d_rounds, d_ttft, d_itl, d_tokens) = if bench_mode {
        (levels, 30, 4, 50, 10, 64)
    } else {
        (vec![1, 8], 2, 1, 5, 1, 8)
    };
    let requests_c1 = env_u64("FIDELITY_REQUESTS_C1", d_c1).max(1) as usize;
    let rounds = env_u64("FIDELITY_ROUNDS", d_rounds).max(1) as usize;
    let ttft_ms = env_u64("FIDELITY_TTFT_MS", d_ttft);
    let itl_ms = env_u64("FIDELITY_ITL_MS", d_itl);
    let tokens = env_u64("FIDELITY_TOKENS", d_tokens).max(2) as usize;
    let client_workers = env_u64("FIDELITY_CLIENT_WORKERS", 1).max(1) as usize;

    let clock = RunClock::start();
    let truth = Arc::new(Mutex::new(HashMap::new()));
    let accepted = Arc::new(AtomicUsize::new(0));
    let server = Server {
        clock: clock.clone(),
        ttft_ns: ttft_ms * 1_000_000,
        itl_ns: itl_ms * 1_000_000,
        tokens,
        truth: truth.clone(),
        accepted: accepted.clone(),
    };
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("fid-server")
        .enable_all()
        .build()
        .unwrap();
    server_rt.spawn(async move {
        let listener = TcpListener::from_std(std_listener).unwrap();
        server.serve(listener).await;
    });

    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(client_workers)
        .thread_name("fid-client")
        .enable_all()
        .build()
        .unwrap();
    let base = format!("http://{addr}/v1");
    let mut cfg = ClientConfig::new(base);
    cfg.max_connections = levels.iter().copied().max().unwrap_or(1).max(1);
    let client = Arc::new(Client::new(cfg).expect("client"));

    println!(
        "client_fidelity: T = {ttft_ms} ms, I = {itl_ms} ms, {tokens} tokens, client tokio \
         workers {client_workers}, server 1 worker, loopback HTTP/1.1, warm connections{}",
        if bench_mode {
            ""
        } else {
            " (smoke run without --bench: not a measurement)"
        }
    );
    println!(
        "| concurrency | requests | TTFT error p50 / p99 (ms) | request leg p50 / p99 (ms) | \
         response leg p50 / p99 (ms) | ITL gap |error| p50 / p99 (ms) | server gap slip p99 (ms) \
         | req/s | client CPU s / 1000 req | client CPU % of a core | new conns in window |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut all_ok = true;
    let mut tails = Vec::new();
    for &c in &levels {
        let per_worker = if c == 1 { requests_c1 } else { rounds };
        let out = client_rt.block_on(run_level(
            client.clone(),
            clock.clone(),
            c,
            per_worker,
            accepted.clone(),
        ));
        let truth = truth.lock().unwrap().clone();
        let mut ttft_err = Vec::new();
        let mut req_leg = Vec::new();
        let mut resp_leg = Vec::new();
        let mut gap_err = Vec::new();
        let mut slip = Vec::new();
        let mut failed = 0usize;
        for r in &out.records {
            let Some(t) = truth.get(&r.request_id) else {
                failed += 1;
                continue;
            };
            let (Some(ttft_ns), true) = (r.ttft_ns, r.is_success()) else {
                failed += 1;
                continue;
            };
            if r.itl_ns.len() + 1 != t.handoff_ns.len() {
                failed += 1;
                continue;
            }
            let ms = |ns: i128| ns as f64 / 1e6;
            let client_ttft = ttft_ns as i128 - r.send_ns as i128;
            let server_ttft = t.handoff_ns[0] as i128 - t.body_read_ns as i128;
            ttft_err.push(ms(client_ttft - server_ttft));
            req_leg.push(ms(t.body_read_ns as i128 - r.send_ns as i128));
            resp_leg.push(ms(ttft_ns as i128 - t.handoff_ns[0] as i128));
            for (k, &client_gap) in r.itl_ns.iter().enumerate() {
                let server_gap = t.handoff_ns[k + 1] as i128 - t.handoff_ns[k] as i128;
                gap_err.push(ms(client_gap as i128 - server_gap).abs());
                slip.push(ms(server_gap - (itl_ms as i128 * 1_000_000)).abs());
            }
        }
        if failed > 0 {
            all_ok = false;
        }
        let n = out.records.len();
        let cpu = out.client_cpu_s;
        println!(
            "| {c} | {n}{} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} \
             | {:.1} | {} | {} | {} |",
            if failed > 0 {
                format!(" ({failed} FAILED)")
            } else {
                String::new()
            },
            p(&ttft_err, 0.5),
            p(&ttft_err, 0.99),
            p(&req_leg, 0.5),
            p(&req_leg, 0.99),
            p(&resp_leg, 0.5),
            p(&resp_leg, 0.99),
            p(&gap_err, 0.5),
            p(&gap_err, 0.99),
            p(&slip, 0.99),
            n as f64 / out.window_s,
            cpu.map(|s| format!("{:.2}", s * 1000.0 / n as f64))
                .unwrap_or_else(|| "n/a".into()),
            cpu.map(|s| format!("{:.1}", 100.0 * s / out.window_s))
                .unwrap_or_else(|| "n/a".into()),
            out.new_connections,
        );
        let over = |v: &[f64]| v.iter().filter(|&&e| e > 1.0).count();
        let max = |v: &[f64]| v.iter().copied().fold(f64::NAN, f64::max);
        tails.push(format!(
            "c={c}: TTFT error > 1 ms in {} of {} requests (max {:.3} ms); ITL gap |error| > 1 ms \
             in {} of {} gaps (max {:.3} ms)",
            over(&ttft_err),
            ttft_err.len(),
            max(&ttft_err),
            over(&gap_err),
            gap_err.len(),
            max(&gap_err),
        ));
    }
    for t in &tails {
        println!("{t}");
    }
    client_rt.shutdown_timeout(Duration::from_secs(1));
    server_rt.shutdown_timeout(Duration::from_secs(1));
    if !all_ok {
        eprintln!("client_fidelity: some requests failed or were incomplete");
        std::process::exit(1);
    }
}
