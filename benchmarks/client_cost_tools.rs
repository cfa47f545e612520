//! The two processes `benchmarks/client_cost_edges.py` runs beside the product:
//! a scripted mock and the anchor's bare reference client, each as its own process, so the
//! product (`inferscope-bench run`) and the bare client are measured the same way (whole
//! process CPU and peak RSS from `wait4`). Built by `cargo bench --bench client_cost_tools
//! --no-run`.
//!
//! - `serve PORT BACKLOG TTFT_MS ITL_MS TOKENS`: a raw HTTP/1.1 keep-alive server in vLLM's
//!   stream shape (role-only chunk with the head, then one content chunk per token, the
//!   first TTFT_MS after the request body was read and each next one ITL_MS later on
//!   absolute deadlines, a finish chunk, a usage-only chunk and `data: [DONE]`), its listen
//!   backlog BACKLOG (capped by the kernel's `somaxconn`), one runtime worker. `GET
//!   …/models` answers a one-model list (`m`); `GET /slip` answers the server's own timer
//!   slip since the last `/slip` (`{"chunks":N,"p50_ms":…,"p99_ms":…,"max_ms":…}`: each
//!   content chunk's write start minus its due time) and resets it; anything else that is
//!   not a POST gets 404.
//! - `once URL`: one streamed chat request on a current-thread runtime; exit 0 when the
//!   stream ended with `[DONE]`.
//! - `paced URL C N`: N streamed requests, C at a time (closed loop), on a current-thread
//!   runtime; prints `ok=K failed=F ttft_p50_ms=… ttft_p99_ms=…`.
//! - `hyper-paced URL C N [READ_BUF]`: the same client on hyper's HTTP/1.1 connection API
//!   instead of reqwest (one connection per worker, plain http only), hyper's adaptive read
//!   buffer or, with READ_BUF, an exact one (which also caps the response head at READ_BUF
//!   bytes); prints `ok=K failed=F`. The floor of a stream's memory on hyper (issue 33).
//!
//! The bare client is `reference_chat` of `client_fidelity` (reqwest, the clock read per
//! read before any parsing, content events found by a byte search; no SSE library, no
//! JSON, no record).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};

#[path = "mock_http.rs"]
mod mock_http;
#[path = "reference_scan.rs"]
mod reference_scan;

fn usage() -> ! {
    eprintln!(
        "usage: client_cost_tools serve PORT BACKLOG TTFT_MS ITL_MS TOKENS | once URL | paced URL C N | hyper-paced URL C N [READ_BUF]"
    );
    std::process::exit(2)
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize) -> T {
    args.get(i)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| usage())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `cargo bench` runs every bench target with `--bench`: nothing to do then.
    match args.get(1).map(String::as_str) {
        Some("serve") => serve(
            arg(&args, 2),
            arg(&args, 3),
            arg(&args, 4),
            arg(&args, 5),
            arg(&args, 6),
        ),
        Some("once") => std::process::exit(once(&args.get(2).cloned().unwrap_or_else(|| usage()))),
        Some("paced") => paced(
            &args.get(2).cloned().unwrap_or_else(|| usage()),
            arg(&args, 3),
            arg(&args, 4),
        ),
        Some("hyper-paced") => hyper_paced(
            &args.get(2).cloned().unwrap_or_else(|| usage()),
            arg(&args, 3),
            arg(&args, 4),
            args.get(5).map_or(0, |_| arg(&args, 5)),
        ),
        Some("--bench") | None => {}
        _ => usage(),
    }
}

// ---------------------------------------------------------------------------------------
// The mock.

fn sse(data: &str) -> Vec<u8> {
    let payload = format!("data: {data}\n\n");
    let mut v = format!("{:x}\r\n", payload.len()).into_bytes();
    v.extend_from_slice(payload.as_bytes());
    v.extend_from_slice(b"\r\n");
    v
}

fn chunk(delta: &str, finish: &str) -> String {
    format!(
        "{{\"id\":\"chatcmpl-cc\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\
         \"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":{finish}}}]}}"
    )
}

struct Mock {
    ttft: Duration,
    itl: Duration,
    first: Vec<u8>,
    frames: Vec<Vec<u8>>,
    tail: Vec<u8>,
    /// Slip of each content chunk since the last `/slip`, ns.
    slip: Mutex<Vec<u64>>,
}

fn serve(port: u16, backlog: u32, ttft_ms: u64, itl_ms: u64, tokens: usize) {
    let mut first = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
        cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
        .to_vec();
    first.extend(sse(&chunk(r#"{"role":"assistant","content":""}"#, "null")));
    let frames = (0..tokens)
        .map(|k| sse(&chunk(&format!(r#"{{"content":"t{k} "}}"#), "null")))
        .collect();
    let mut tail = sse(&chunk("{}", "\"length\""));
    tail.extend(sse(&format!(
        "{{\"id\":\"chatcmpl-cc\",\"object\":\"chat.completion.chunk\",\"created\":0,\
         \"model\":\"m\",\"choices\":[],\"usage\":{{\"prompt_tokens\":12,\
         \"completion_tokens\":{tokens},\"total_tokens\":{}}}}}",
        12 + tokens
    )));
    tail.extend(sse("[DONE]"));
    tail.extend_from_slice(b"0\r\n\r\n");
    let mock = Arc::new(Mock {
        ttft: Duration::from_millis(ttft_ms),
        itl: Duration::from_millis(itl_ms),
        first,
        frames,
        tail,
        slip: Mutex::new(Vec::new()),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async move {
        let socket = TcpSocket::new_v4().expect("socket");
        socket.set_reuseaddr(true).expect("reuseaddr");
        socket
            .bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .expect("bind");
        let listener = socket.listen(backlog).expect("listen");
        println!("listening on {}", listener.local_addr().expect("addr"));
        loop {
            let Ok((sock, _)) = listener.accept().await else {
                continue;
            };
            let m = Arc::clone(&mock);
            tokio::spawn(async move { m.conn(sock).await });
        }
    });
}

fn percentile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i] as f64 / 1e6
}

impl Mock {
    async fn conn(&self, mut sock: TcpStream) {
        let _ = sock.set_nodelay(true);
        let mut buf: Vec<u8> = Vec::with_capacity(4096);
        let mut tmp = [0u8; 4096];
        loop {
            let Some((head, len)) = mock_http::read_request(&mut sock, &mut buf, &mut tmp).await
            else {
                return;
            };
            let head = head.to_ascii_lowercase();
            let body_read = Instant::now();
            buf.drain(..len);
            let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
            if !head.starts_with("post ") {
                let (status, body) = if path.ends_with("/models") {
                    (
                        "200 OK",
                        r#"{"object":"list","data":[{"id":"m","object":"model"}]}"#.to_string(),
                    )
                } else if path == "/slip" {
                    let mut s = std::mem::take(&mut *self.slip.lock().unwrap());
                    s.sort_unstable();
                    (
                        "200 OK",
                        format!(
                            r#"{{"chunks":{},"p50_ms":{:.3},"p99_ms":{:.3},"max_ms":{:.3}}}"#,
                            s.len(),
                            percentile(&s, 0.5),
                            percentile(&s, 0.99),
                            s.last().map_or(0.0, |&v| v as f64 / 1e6)
                        ),
                    )
                } else {
                    ("404 Not Found", "{}".to_string())
                };
                let resp = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                if sock.write_all(resp.as_bytes()).await.is_err() {
                    return;
                }
                continue;
            }
            if self.ttft.is_zero() && self.itl.is_zero() {
                let mut all = self.first.clone();
                for f in &self.frames {
                    all.extend_from_slice(f);
                }
                all.extend_from_slice(&self.tail);
                if sock.write_all(&all).await.is_err() {
                    return;
                }
                continue;
            }
            if sock.write_all(&self.first).await.is_err() {
                return;
            }
            let mut slips = Vec::with_capacity(self.frames.len());
            for (k, frame) in self.frames.iter().enumerate() {
                let due = body_read + self.ttft + self.itl * k as u32;
                tokio::time::sleep_until(tokio::time::Instant::from_std(due)).await;
                slips.push(u64::try_from(due.elapsed().as_nanos()).unwrap_or(u64::MAX));
                if sock.write_all(frame).await.is_err() {
                    return;
                }
            }
            self.slip.lock().unwrap().extend(slips);
            if sock.write_all(&self.tail).await.is_err() {
                return;
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// The bare client.

const BODY: &str = r#"{"model":"m","messages":[{"role":"user","content":"Stream 64 tokens."}],"max_tokens":64,"stream":true,"stream_options":{"include_usage":true}}"#;

/// One request: TTFT (ms from send to the first content read), or `None` on failure.
async fn bare_chat(http: &reqwest::Client, url: &str) -> Option<f64> {
    let send = Instant::now();
    let resp = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(BODY)
        .send()
        .await
        .ok()?;
    first_token_ms(resp.bytes_stream(), send).await
}

/// Reads a streamed body to its end, each read stamped against `send` before the anchor's
/// byte search: the first content token's time in ms, or `None` on a failed read or a
/// stream without `[DONE]`.
async fn first_token_ms<E>(
    reads: impl futures_util::Stream<Item = Result<bytes::Bytes, E>>,
    send: Instant,
) -> Option<f64> {
    let mut reads = std::pin::pin!(reads);
    let mut pending: Vec<u8> = Vec::with_capacity(1024);
    let mut stamps: Vec<u64> = Vec::with_capacity(64);
    let mut done = false;
    while let Some(item) = reads.next().await {
        let t = u64::try_from(send.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let bytes = item.ok()?;
        done |= reference_scan::scan_read(&mut pending, &bytes, t, &mut stamps);
    }
    (done && !stamps.is_empty()).then(|| stamps[0] as f64 / 1e6)
}

fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .tls_certs_only(std::iter::empty())
        .pool_max_idle_per_host(usize::MAX)
        .build()
        .expect("client")
}

fn chat_url(base: &str) -> String {
    format!("{}/chat/completions", base.trim_end_matches('/'))
}

fn once(base: &str) -> i32 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let http = http_client();
        match bare_chat(&http, &chat_url(base)).await {
            Some(_) => 0,
            None => 1,
        }
    })
}

fn paced(base: &str, c: usize, n: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (ok, failed, mut ttft) = rt.block_on(async {
        let http = http_client();
        let url = chat_url(base);
        let queue = Arc::new(Mutex::new((0..n).collect::<VecDeque<_>>()));
        let workers = (0..c.max(1)).map(|_| {
            let (http, url, queue) = (http.clone(), url.clone(), Arc::clone(&queue));
            async move {
                let mut out = Vec::new();
                while queue.lock().unwrap().pop_front().is_some() {
                    out.push(bare_chat(&http, &url).await);
                }
                out
            }
        });
        let all: Vec<Option<f64>> = futures_util::future::join_all(workers)
            .await
            .into_iter()
            .flatten()
            .collect();
        let ok: Vec<f64> = all.iter().flatten().copied().collect();
        (ok.len(), all.len() - ok.len(), ok)
    });
    ttft.sort_by(f64::total_cmp);
    let p = |q: f64| {
        ttft.get(((ttft.len().max(1) - 1) as f64 * q).round() as usize)
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!(
        "ok={ok} failed={failed} ttft_p50_ms={:.3} ttft_p99_ms={:.3} ttft_max_ms={:.3}",
        p(0.5),
        p(0.99),
        p(1.0)
    );
}

/// One request of the hyper-API bare client: [`bare_chat`] on a connection of its own.
async fn hyper_chat(
    sender: &mut hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>,
    host: &str,
    path: &str,
) -> Option<f64> {
    let send = Instant::now();
    let req = hyper::Request::post(path)
        .header("host", host)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            BODY.as_bytes(),
        )))
        .ok()?;
    sender.ready().await.ok()?;
    let resp = sender.send_request(req).await.ok()?;
    first_token_ms(http_body_util::BodyDataStream::new(resp.into_body()), send).await
}

/// `hyper-paced`: N requests, C at a time, each worker on one connection of its own.
fn hyper_paced(base: &str, c: usize, n: usize, read_buf: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let rest = base.trim_start_matches("http://");
    let (host, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    let path = format!("/{}/chat/completions", prefix.trim_end_matches('/'));
    let host = host.to_string();
    let (ok, failed) = rt.block_on(async {
        let queue = Arc::new(Mutex::new((0..n).collect::<VecDeque<_>>()));
        let workers = (0..c.max(1)).map(|_| {
            let (queue, host, path) = (Arc::clone(&queue), host.clone(), path.clone());
            async move {
                let stream = TcpStream::connect(&host).await.ok()?;
                stream.set_nodelay(true).ok()?;
                let mut b = hyper::client::conn::http1::Builder::new();
                if read_buf > 0 {
                    b.read_buf_exact_size(Some(read_buf));
                }
                let (mut sender, conn) = b
                    .handshake(hyper_util::rt::TokioIo::new(stream))
                    .await
                    .ok()?;
                tokio::spawn(conn);
                let mut out = Vec::new();
                while queue.lock().unwrap().pop_front().is_some() {
                    out.push(hyper_chat(&mut sender, &host, &path).await);
                }
                Some(out)
            }
        });
        let all: Vec<Option<f64>> = futures_util::future::join_all(workers)
            .await
            .into_iter()
            .flatten()
            .flatten()
            .collect();
        let ok = all.iter().flatten().count();
        (ok, all.len() - ok)
    });
    println!("ok={ok} failed={failed}");
}
