//! Client timing fidelity and cost (issue 2 "Speed"): how far the product's streaming
//! client ([`inferscope_bench::client::Client::chat`]) is from server-stamped truth, at
//! concurrency 1 and 128, against a loopback SSE server with a 50 ms TTFT and a 10 ms
//! inter-token interval, 64 output tokens. Method of docs/measurement.md.
//!
//! Run with `cargo bench --bench client_fidelity` (release). Environment:
//! `FIDELITY_CONCURRENCY` (default `1,128`), `FIDELITY_REQUESTS_C1` (requests at
//! concurrency 1, default 30), `FIDELITY_ROUNDS` (requests per worker at concurrency > 1,
//! default 4), `FIDELITY_TTFT_MS` / `FIDELITY_ITL_MS` (default 50 / 10),
//! `FIDELITY_TOKENS` (default 64), `FIDELITY_CLIENT_WORKERS` (tokio workers of the client,
//! default 1; the server always has its own single worker), `FIDELITY_CLIENTS` (which
//! clients run at each level, in order; default `product,reference`),
//! `FIDELITY_PIN_SERVER` / `FIDELITY_PIN_CLIENT` (a CPU index each, or `none`; default 0
//! and 1, see "Machine set-up"), `FIDELITY_IDLE_LATENCY_US` (the CPU-latency request held
//! during the run, µs, or `none`; default 0), `FIDELITY_TRUTH` (`start`, the default, or
//! `end`: which server stamp is the truth), `FIDELITY_FLOOR_SAMPLES` (gaps of the
//! machine-floor measurement, default 1000; 0 skips it), `FIDELITY_DUMP=PREFIX` (write
//! every token's server stamps and client stamp to `PREFIX.CLIENT.cC.csv`, and the clock's
//! origin as CLOCK_MONOTONIC ns to `PREFIX.origin`, to line the stamps up with a trace
//! taken with `perf … -k CLOCK_MONOTONIC`), `FIDELITY_PREPARE` (`ahead`, the default: each
//! product worker serializes its next request while the current one is in flight, with
//! `Client::prepare` / `Client::send`; `inline`: `Client::chat` when it is due). Without
//! `--bench` (`cargo test --benches`) it is a short smoke run (concurrency 1 and 8,
//! T = 5 ms, I = 1 ms, 8 tokens, no floor, no pinning, no CPU-latency request) that fails
//! only when a request fails: timing is never asserted.
//!
//! # Machine set-up
//! The target describes a client and a server that do not take CPU time from each other,
//! as on a serving host where the engine has its own cores. On a 2-vCPU VM two things
//! break that unless the run prevents them, and both show in the per-level `scheduler`
//! line (from `/proc/self/task/*/schedstat` and `…/sched`) and the `steal` column:
//! - **Co-location.** Left to itself, the kernel wakes the client on the CPU of the
//!   server that woke it (and this VM's kernel packs tasks onto few vCPUs), so at
//!   concurrency 128 the client sits runnable behind the server's write burst: 350–440 ms
//!   of run-queue wait per ~3 s window. Pinning the server to CPU 0 and the client to
//!   CPU 1 removes it (1–14 ms).
//! - **Halted vCPUs.** An idle vCPU halts (a VM exit); waking it takes the host
//!   milliseconds now and then, before the guest's scheduler even sees the wake-up. A
//!   held CPU-latency request of 0 µs (`/dev/cpu_dma_latency`, root only) makes idle CPUs
//!   poll instead. Without root the run says the request was not held and goes on.
//!
//! The header line prints the placement, the cpuidle driver/governor and the request;
//! `FIDELITY_PIN_SERVER=none FIDELITY_PIN_CLIENT=none FIDELITY_IDLE_LATENCY_US=none`
//! measures the machine as it comes.
//!
//! # Cost
//! Every level also prints the client's cost: CPU per 1000 requests (the client runtime's
//! threads' time on a CPU from `schedstat`, ns resolution; `utime + stime` ticks where the
//! kernel has no schedstat), heap allocations per request on those threads (a counting
//! global allocator), req/s, and the closed loop's **send lag**: from the moment a
//! request was due (its worker's previous request ended) to `send_ns` (handed to the HTTP
//! stack) and to the server's read of its body. With `FIDELITY_TTFT_MS=0
//! FIDELITY_ITL_MS=0` the server writes each whole response at once (an engine at
//! saturation: every chunk is ready), so the level measures the client at saturation; the
//! token timings of such a level measure read batching, not fidelity.
//!
//! # Clients
//! - `product`: [`inferscope_bench::client::Client::chat`], the client the tool runs.
//! - `reference`: the anchor's bare Rust client rebuilt in this file ([`reference_chat`]):
//!   reqwest, the clock read per read before any parsing, content events found by a byte
//!   search; no SSE library, no JSON, no record. It runs on the same runtime against the
//!   same server in the same process run, so the two rows are directly comparable.
//! - The **machine floor** ([`socket_floor`]): two plain threads and one loopback socket,
//!   a byte every I ms; the gap error it shows is the machine's own wake-up noise (no HTTP,
//!   no runtime), which no client on this machine can go below.

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
//! chunk, `handoff_ns[k]` (just before its `write_all` began) and `written_ns[k]` (its
//! `write_all` + `flush` returned). The chunk becomes readable between the two.
//! `handoff_ns` is the truth: `written_ns` is late whenever the server is preempted on
//! its way out of the write (by the very client the write woke), and the run counts
//! the tokens the client stamped before the truth in use, a causality check: 0 with
//! `handoff_ns`, hundreds to thousands per level with `written_ns` (`FIDELITY_TRUTH=end`).
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
//! measured window. Steal is the hypervisor's share of the window (`/proc/stat`), and
//! each level's `scheduler` line gives the client's and the server's time on a CPU,
//! time runnable but waiting, migrations and involuntary switches over the window.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;

#[path = "mock_http.rs"]
mod mock_http;
#[path = "pin.rs"]
mod pin;
#[path = "reference_scan.rs"]
mod reference_scan;
use inferscope_bench::client::{ChatRequest, Client, ClientConfig, RequestRecord};
use inferscope_bench::clock::RunClock;
use inferscope_bench::stats::percentile;
use inferscope_bench::telemetry::proc;
use pin::pin_current_thread;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// Heap allocations (alloc, alloc_zeroed, realloc) made on the client runtime's threads.
static CLIENT_ALLOCS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Set on the client runtime's threads (`on_thread_start`).
    static IS_CLIENT: Cell<bool> = const { Cell::new(false) };
}

/// Counts the client threads' allocations, then delegates to `System`.
struct Counting;

fn count_alloc() {
    if IS_CLIENT.try_with(Cell::get).unwrap_or(false) {
        CLIENT_ALLOCS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every call is passed to `System` unchanged; the counter is an atomic and the
// flag a const-initialized thread-local `Cell` (no allocation, no destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_alloc();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_alloc();
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_alloc();
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Warm-up requests carry this `X-Request-ID` prefix; the server answers them with 2
/// tokens, the first after [`WARM_TTFT_NS`] and no gap, and keeps no truth for them.
const WARM_PREFIX: &str = "warm-";

/// TTFT of a warm-up request: long enough that all of a level's warm-up requests are in
/// flight together, so each opens its own connection (no connect inside a measured TTFT).
const WARM_TTFT_NS: u64 = 30_000_000;

/// Env `var`: `none` gives `None`, any other value must parse as `T` (else a panic that
/// names the variable and says what was `expected`); unset gives `default`.
fn env_or_none<T: std::str::FromStr>(var: &str, expected: &str, default: Option<T>) -> Option<T> {
    match std::env::var(var) {
        Ok(v) if v.trim() == "none" => None,
        Ok(v) => Some(
            v.trim()
                .parse()
                .unwrap_or_else(|_| panic!("{var}={v:?}: expected {expected} or `none`")),
        ),
        Err(_) => default,
    }
}

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
    /// Per content chunk: just before its `write_all` into the socket began.
    handoff_ns: Vec<u64>,
    /// Per content chunk: when its `write_all` + `flush` returned.
    written_ns: Vec<u64>,
}

#[derive(Clone)]
struct Server {
    clock: RunClock,
    ttft_ns: u64,
    itl_ns: u64,
    tokens: usize,
    truth: Arc<Mutex<HashMap<String, Truth>>>,
    accepted: Arc<AtomicUsize>,
    /// Token `k`'s SSE event as one HTTP chunk, rendered once.
    frames: Arc<Vec<Vec<u8>>>,
    /// Finish chunk, usage-only chunk, `[DONE]` and the last HTTP chunk, rendered once.
    tail: Arc<Vec<u8>>,
}

/// A token's SSE event (`"content":"t{k} "`) as one HTTP chunk.
fn token_frame(k: usize) -> Vec<u8> {
    sse(&chunk_json(json!({"content": format!("t{k} ")}), None))
}

/// The end of a response of `tokens` tokens: a finish chunk, a usage-only chunk
/// (`choices: []`), `data: [DONE]`, the last HTTP chunk.
fn tail_bytes(tokens: usize) -> Vec<u8> {
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
    tail
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
            let Some((head, len)) = mock_http::read_request(&mut sock, &mut buf, &mut tmp).await
            else {
                return;
            };
            let header = |name: &str| -> Option<String> {
                head.lines().find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim()
                        .eq_ignore_ascii_case(name)
                        .then(|| v.trim().to_string())
                })
            };
            let body_read_ns = self.clock.elapsed_ns();
            buf.drain(..len);
            let request_id = header("x-request-id").unwrap_or_default();
            let warm = request_id.starts_with(WARM_PREFIX);
            let (ttft, itl, tokens) = if warm {
                (WARM_TTFT_NS, 0, 2)
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
            if !warm && ttft == 0 && itl == 0 {
                // T = I = 0: every chunk is ready at once (an engine at saturation), so the
                // whole response goes out in one write; each token's truth is that write.
                let at = self.clock.elapsed_ns();
                self.truth.lock().unwrap().insert(
                    request_id,
                    Truth {
                        body_read_ns,
                        handoff_ns: vec![at; tokens],
                        written_ns: vec![at; tokens],
                    },
                );
                for frame in self.frames.iter().take(tokens) {
                    first.extend_from_slice(frame);
                }
                first.extend_from_slice(&self.tail);
                if sock.write_all(&first).await.is_err() {
                    return;
                }
                continue;
            }
            if sock.write_all(&first).await.is_err() {
                return;
            }
            let mut handoff = Vec::with_capacity(tokens);
            let mut written = Vec::with_capacity(tokens);
            let origin = self.clock.origin();
            for k in 0..tokens {
                let due = body_read_ns + ttft + itl * k as u64;
                tokio::time::sleep_until(tokio::time::Instant::from_std(
                    origin + Duration::from_nanos(due),
                ))
                .await;
                let frame = &self.frames[k];
                handoff.push(self.clock.elapsed_ns());
                if sock.write_all(frame).await.is_err() || sock.flush().await.is_err() {
                    return;
                }
                written.push(self.clock.elapsed_ns());
            }
            // Kept before the tail goes out: the client cannot finish (it waits for
            // `[DONE]`) before the truth of its request is stored, so a level's snapshot
            // never misses its last request.
            if !warm {
                self.truth.lock().unwrap().insert(
                    request_id,
                    Truth {
                        body_read_ns,
                        handoff_ns: handoff,
                        written_ns: written,
                    },
                );
            }
            let tail = if warm {
                tail_bytes(tokens)
            } else {
                self.tail.to_vec()
            };
            if sock.write_all(&tail).await.is_err() {
                return;
            }
        }
    }
}

/// Scheduler counters summed over this process's threads whose name starts with `prefix`:
/// from `/proc/self/task/*/schedstat`, time on a CPU and time runnable but waiting on a
/// run queue (ns; see the kernel's Documentation/scheduler/sched-stats.rst), and from
/// `…/sched`, the migrations between CPUs and the involuntary context switches.
#[derive(Debug, Default, Clone, Copy)]
struct SchedCounters {
    run_ns: u64,
    wait_ns: u64,
    migrations: u64,
    involuntary: u64,
}

impl SchedCounters {
    /// `None` when `/proc/self/task` cannot be read, no thread matches, or a matching
    /// thread lacks one of the four values (a kernel without schedstat or sched files).
    fn read(prefix: &str) -> Option<Self> {
        let threads = threads_named(prefix)?;
        let mut total = SchedCounters::default();
        for path in &threads {
            let schedstat = std::fs::read_to_string(path.join("schedstat")).ok()?;
            let mut f = schedstat.split_whitespace().map(|v| v.parse::<u64>().ok());
            total.run_ns += f.next()??;
            total.wait_ns += f.next()??;
            let sched = std::fs::read_to_string(path.join("sched")).ok()?;
            let field = |name: &str| {
                sched.lines().find_map(|line| {
                    let (k, v) = line.split_once(':')?;
                    (k.trim() == name).then(|| v.trim().parse::<u64>().ok())?
                })
            };
            total.migrations += field("se.nr_migrations")?;
            total.involuntary += field("nr_involuntary_switches")?;
        }
        (!threads.is_empty()).then_some(total)
    }

    /// Counters over a window: `after − before`, `None` if either is.
    fn over(before: Option<Self>, after: Option<Self>) -> Option<Self> {
        let (b, a) = (before?, after?);
        Some(SchedCounters {
            run_ns: a.run_ns.saturating_sub(b.run_ns),
            wait_ns: a.wait_ns.saturating_sub(b.wait_ns),
            migrations: a.migrations.saturating_sub(b.migrations),
            involuntary: a.involuntary.saturating_sub(b.involuntary),
        })
    }
}

/// Steal ticks (jiffies) of all CPUs together: time the hypervisor ran something else
/// while this VM's vCPUs wanted to run (`/proc/stat`, first `cpu` line, 8th value; see
/// proc(5)). `None` where the file or the field is missing.
fn steal_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    line.strip_prefix("cpu ")?
        .split_whitespace()
        .nth(7)?
        .parse()
        .ok()
}

/// The `/proc/self/task/TID` folders of this process's threads whose name (`comm`) starts
/// with `prefix`; `None` when `/proc/self/task` cannot be listed.
fn threads_named(prefix: &str) -> Option<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc/self/task").ok()? {
        let path = e.ok()?.path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if comm.trim_end().starts_with(prefix) {
            out.push(path);
        }
    }
    Some(out)
}

/// Seconds between two readings of a jiffies counter, `None` if either reading (or the
/// tick rate) is.
fn ticks_over(before: Option<u64>, after: Option<u64>) -> Option<f64> {
    Some(after?.saturating_sub(before?) as f64 / proc::clk_tck()? as f64)
}

/// utime+stime ticks (jiffies) of this process's threads whose name starts with `prefix`,
/// each thread's `stat` parsed by the tool's own `/proc` parser.
fn thread_ticks(prefix: &str) -> Option<u64> {
    let mut total = 0u64;
    for path in threads_named(prefix)? {
        let stat = proc::parse_stat(&std::fs::read_to_string(path.join("stat")).ok()?).ok()?;
        total += stat.utime + stat.stime;
    }
    Some(total)
}

/// Where the server's and the client's threads run (see "Machine set-up" in the module
/// docs): a CPU index each, or `None` for wherever the kernel puts them.
#[derive(Clone, Copy, Debug)]
struct Placement {
    server_cpu: Option<usize>,
    client_cpu: Option<usize>,
}

impl Placement {
    /// `FIDELITY_PIN_SERVER` / `FIDELITY_PIN_CLIENT`: a CPU index, or `none`. Unset: CPU 0
    /// and CPU 1 in a measurement on a machine with at least 2 CPUs, else `none`.
    fn from_env(bench_mode: bool) -> Self {
        let two_cpus =
            bench_mode && std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2);
        let cpu = |var: &str, default: usize| {
            env_or_none(var, "a CPU index", two_cpus.then_some(default))
        };
        Placement {
            server_cpu: cpu("FIDELITY_PIN_SERVER", 0),
            client_cpu: cpu("FIDELITY_PIN_CLIENT", 1),
        }
    }
}

fn show_cpu(cpu: Option<usize>) -> String {
    cpu.map_or_else(|| "any".into(), |c| format!("CPU {c}"))
}

/// A held PM QoS CPU-latency request (`/dev/cpu_dma_latency`, see the kernel's
/// Documentation/power/pm_qos_interface.rst): while the file stays open, cpuidle picks
/// no idle state with an exit latency above the value, so with 0 an idle CPU polls
/// instead of halting. Dropping it releases the request.
struct IdleLatency {
    _file: Option<std::fs::File>,
    /// What is in effect, for the header line.
    status: String,
}

impl IdleLatency {
    /// `FIDELITY_IDLE_LATENCY_US`: µs, or `none`. Unset: 0 in a measurement, `none` in a
    /// smoke run. Failing to open the file (not root, no such device) is reported in
    /// `status`, not fatal: the run goes on with the machine's idle states.
    fn from_env(bench_mode: bool) -> Self {
        use std::io::Write;
        let us: Option<i32> =
            env_or_none("FIDELITY_IDLE_LATENCY_US", "µs", bench_mode.then_some(0));
        let Some(us) = us else {
            return IdleLatency {
                _file: None,
                status: "not requested".into(),
            };
        };
        let held = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/cpu_dma_latency")
            .and_then(|mut f| f.write_all(&us.to_ne_bytes()).map(|_| f));
        match held {
            Ok(f) => IdleLatency {
                _file: Some(f),
                status: format!("held at {us} µs"),
            },
            Err(e) => IdleLatency {
                _file: None,
                status: format!("{us} µs requested but not held ({e})"),
            },
        }
    }
}

/// The cpuidle driver and governor (`/sys/devices/system/cpu/cpuidle`), e.g.
/// `haltpoll/haltpoll`; `unknown` where absent.
fn cpuidle() -> String {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/sys/devices/system/cpu/cpuidle/{f}"))
            .map(|s| s.trim().to_string())
            .ok()
    };
    match (
        read("current_driver"),
        read("current_governor").or_else(|| read("current_governor_ro")),
    ) {
        (Some(d), Some(g)) => format!("{d}/{g}"),
        (Some(d), None) => d,
        _ => "unknown".into(),
    }
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

/// Which client a measured level drives.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Under {
    /// The product's client, [`Client::chat`].
    Product,
    /// The anchor's bare reference client, rebuilt here ([`reference_chat`]).
    Reference,
}

impl Under {
    fn name(self) -> &'static str {
        match self {
            Under::Product => "product",
            Under::Reference => "reference",
        }
    }
}

/// What a client observed for one request, on the shared clock (elapsed ns).
struct Obs {
    request_id: String,
    /// When the request was due: the end of the worker's previous request (closed loop),
    /// or the level's start.
    scheduled_ns: u64,
    send_ns: u64,
    /// Arrival stamp of each content token, in order.
    stamps: Vec<u64>,
    ok: bool,
}

impl Obs {
    fn from_record(r: &RequestRecord) -> Self {
        let mut stamps = Vec::with_capacity(r.itl_ns.len() + 1);
        if let Some(first) = r.ttft_ns {
            let mut at = first;
            stamps.push(at);
            for gap in &r.itl_ns {
                at += gap;
                stamps.push(at);
            }
        }
        Obs {
            request_id: r.request_id.clone(),
            scheduled_ns: r.scheduled_ns,
            send_ns: r.send_ns,
            stamps,
            ok: r.is_success(),
        }
    }
}

/// The anchor's "~250-line Rust client", rebuilt as the in-run comparison: reqwest on the
/// same runtime, `bytes_stream()`, the clock read as each read completes and before any
/// parsing, content events found by a byte search (a `"content":"…"` member that is not
/// empty; the role-only chunk carries `"content":""`). No SSE library, no JSON parse, no
/// record: the least a streaming client can do. `ok` = the stream ended after `[DONE]`.
async fn reference_chat(http: &reqwest::Client, url: &str, id: String, clock: &RunClock) -> Obs {
    let scheduled_ns = clock.elapsed_ns();
    let body = serde_json::to_vec(&request(id.clone()).body_json()).expect("body");
    let send_ns = clock.elapsed_ns();
    let mut obs = Obs {
        request_id: id.clone(),
        scheduled_ns,
        send_ns,
        stamps: Vec::with_capacity(64),
        ok: false,
    };
    let sent = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "text/event-stream")
        .header("x-request-id", id)
        .body(body)
        .send()
        .await;
    let Ok(resp) = sent else { return obs };
    let mut reads = std::pin::pin!(resp.bytes_stream());
    let mut pending: Vec<u8> = Vec::with_capacity(1024);
    let mut done = false;
    while let Some(item) = reads.next().await {
        let t = clock.elapsed_ns();
        let Ok(bytes) = item else { return obs };
        done |= reference_scan::scan_read(&mut pending, &bytes, t, &mut obs.stamps);
    }
    obs.ok = done;
    obs
}

struct Outcome {
    obs: Vec<Obs>,
    window_s: f64,
    new_connections: usize,
    client_cpu_s: Option<f64>,
    /// Heap allocations made on the client runtime's threads during the window.
    client_allocs: u64,
    /// CPU time the hypervisor stole from this VM's vCPUs during the window, s.
    steal_s: Option<f64>,
    /// The client runtime's and the server's scheduler counters over the window.
    client_sched: Option<SchedCounters>,
    server_sched: Option<SchedCounters>,
}

/// The two clients under test, each with its own connection pool.
struct Clients {
    product: Arc<Client>,
    reference: reqwest::Client,
    reference_url: String,
}

async fn one_request(clients: &Clients, under: Under, id: String, clock: &RunClock) -> Obs {
    match under {
        Under::Product => {
            let now = clock.elapsed_ns();
            Obs::from_record(&clients.product.chat(&request(id), clock, now).await)
        }
        Under::Reference => {
            reference_chat(&clients.reference, &clients.reference_url, id, clock).await
        }
    }
}

/// Whether the product's workers serialize each next request while the current one is
/// in flight (`FIDELITY_PREPARE=ahead`, the default: the send path then does only the
/// sending) or when it is due (`inline`: `Client::chat`).
fn prepare_ahead() -> bool {
    std::env::var("FIDELITY_PREPARE").as_deref() != Ok("inline")
}

/// One closed-loop worker: `n` requests back to back, each due when the previous ended.
async fn worker(clients: &Clients, under: Under, ids: Vec<String>, clock: &RunClock) -> Vec<Obs> {
    let mut out = Vec::with_capacity(ids.len());
    if under == Under::Product && prepare_ahead() {
        let product = &clients.product;
        let mut ids = ids.into_iter();
        let mut next = ids.next().map(|id| product.prepare(&request(id)));
        while let Some(current) = next.take() {
            let scheduled = clock.elapsed_ns();
            // The send runs first (up to its first wait: the request handed to the HTTP
            // stack); the next request is serialized while this one is in flight.
            let (rec, prepared) =
                futures_util::join!(product.send(&current, clock, scheduled), async {
                    ids.next().map(|id| product.prepare(&request(id)))
                });
            out.push(Obs::from_record(&rec));
            next = prepared;
        }
        return out;
    }
    for id in ids {
        out.push(one_request(clients, under, id, clock).await);
    }
    out
}

async fn run_level(
    clients: Arc<Clients>,
    under: Under,
    clock: RunClock,
    concurrency: usize,
    per_worker: usize,
    accepted: Arc<AtomicUsize>,
) -> Outcome {
    // Warm one connection per worker through the client under test's own pool, all at
    // once so each opens its own connection: a short stream (the server skips T and I).
    let tag = under.name();
    let mut warm = Vec::new();
    for w in 0..concurrency {
        let clients = clients.clone();
        let clock = clock.clone();
        warm.push(tokio::spawn(async move {
            let id = format!("{WARM_PREFIX}{tag}-{concurrency}-{w}");
            one_request(&clients, under, id, &clock).await
        }));
    }
    for h in warm {
        let _ = h.await;
    }
    let accepted_before = accepted.load(Ordering::Relaxed);
    let ticks_before = thread_ticks("fid-client");
    let allocs_before = CLIENT_ALLOCS.load(Ordering::Relaxed);
    let steal_before = steal_ticks();
    let client_sched_before = SchedCounters::read("fid-client");
    let server_sched_before = SchedCounters::read("fid-server");
    let start = clock.elapsed_ns();
    let mut handles = Vec::new();
    for w in 0..concurrency {
        let clients = clients.clone();
        let clock = clock.clone();
        handles.push(tokio::spawn(async move {
            let ids = (0..per_worker)
                .map(|i| format!("{tag}-c{concurrency}-w{w}-r{i}"))
                .collect();
            worker(&clients, under, ids, &clock).await
        }));
    }
    let mut obs = Vec::new();
    for h in handles {
        obs.extend(h.await.unwrap());
    }
    let end = clock.elapsed_ns();
    let ticks_after = thread_ticks("fid-client");
    let client_allocs = CLIENT_ALLOCS.load(Ordering::Relaxed) - allocs_before;
    let steal_after = steal_ticks();
    let client_sched = SchedCounters::over(client_sched_before, SchedCounters::read("fid-client"));
    let server_sched = SchedCounters::over(server_sched_before, SchedCounters::read("fid-server"));
    Outcome {
        obs,
        window_s: (end - start) as f64 / 1e9,
        new_connections: accepted.load(Ordering::Relaxed) - accepted_before,
        // CPU from schedstat's ns counter where the kernel has it, else utime+stime ticks.
        client_cpu_s: client_sched
            .map(|c| c.run_ns as f64 / 1e9)
            .or_else(|| ticks_over(ticks_before, ticks_after)),
        client_allocs,
        steal_s: ticks_over(steal_before, steal_after),
        client_sched,
        server_sched,
    }
}

fn p(v: &[f64], q: f64) -> f64 {
    percentile(v, q).unwrap_or(f64::NAN)
}

/// Errors of one level, ms; see the module docs for the definitions.
struct Measured {
    ttft_err: Vec<f64>,
    req_leg: Vec<f64>,
    resp_leg: Vec<f64>,
    gap_err: Vec<f64>,
    slip: Vec<f64>,
    /// Per content chunk: how long the server's `write_all` + `flush` took (written −
    /// handoff), ms: the spread between the two possible truths.
    write: Vec<f64>,
    /// Content chunks the client stamped more than 1 ms after the truth in use.
    late: usize,
    /// Content chunks the client stamped before the truth in use (a causality violation:
    /// the truth is late, not the client early).
    before_truth: usize,
    /// Requests that failed, or whose token count differs from the server's.
    failed: usize,
    /// Client send lag: `send_ns − scheduled_ns` (the request was due when the worker's
    /// previous one ended), ms.
    send_lag: Vec<f64>,
    /// Due to read by the server: `body_read_ns − scheduled_ns`, ms (the send lag plus the
    /// request's way through the HTTP stack, loopback and the server's read).
    due_to_read: Vec<f64>,
}

/// Compares each observation with the server's truth. With `FIDELITY_DUMP=PREFIX` it also
/// writes `PREFIX.CLIENT.cC.csv`: `request_id,k,handoff_ns,written_ns,stamp_ns` per
/// content token.
fn measure(
    obs: &[Obs],
    truth: &HashMap<String, Truth>,
    itl_ms: u64,
    c: usize,
    under: Under,
) -> Measured {
    let mut m = Measured {
        ttft_err: Vec::new(),
        req_leg: Vec::new(),
        resp_leg: Vec::new(),
        gap_err: Vec::new(),
        slip: Vec::new(),
        write: Vec::new(),
        before_truth: 0,
        late: 0,
        failed: 0,
        send_lag: Vec::new(),
        due_to_read: Vec::new(),
    };
    let truth_end = std::env::var("FIDELITY_TRUTH").as_deref() == Ok("end");
    let mut dump = std::env::var("FIDELITY_DUMP").ok().map(|prefix| {
        let path = format!("{prefix}.{}.c{c}.csv", under.name());
        std::io::BufWriter::new(std::fs::File::create(path).expect("dump file"))
    });
    let ms = |ns: i128| ns as f64 / 1e6;
    for o in obs {
        let Some(t) = truth.get(&o.request_id) else {
            m.failed += 1;
            continue;
        };
        if !o.ok || o.stamps.len() != t.handoff_ns.len() || o.stamps.is_empty() {
            m.failed += 1;
            continue;
        }
        m.send_lag
            .push(ms(o.send_ns as i128 - o.scheduled_ns as i128));
        m.due_to_read
            .push(ms(t.body_read_ns as i128 - o.scheduled_ns as i128));
        let at: &[u64] = if truth_end {
            &t.written_ns
        } else {
            &t.handoff_ns
        };
        for (s, h) in o.stamps.iter().zip(at) {
            m.before_truth += usize::from(s < h);
            m.late += usize::from(*s > h + 1_000_000);
        }
        for (h, w) in t.handoff_ns.iter().zip(&t.written_ns) {
            m.write.push(ms(*w as i128 - *h as i128));
        }
        let client_ttft = o.stamps[0] as i128 - o.send_ns as i128;
        let server_ttft = at[0] as i128 - t.body_read_ns as i128;
        m.ttft_err.push(ms(client_ttft - server_ttft));
        m.req_leg
            .push(ms(t.body_read_ns as i128 - o.send_ns as i128));
        m.resp_leg.push(ms(o.stamps[0] as i128 - at[0] as i128));
        for k in 1..o.stamps.len() {
            let client_gap = o.stamps[k] as i128 - o.stamps[k - 1] as i128;
            let server_gap = at[k] as i128 - at[k - 1] as i128;
            m.gap_err.push(ms(client_gap - server_gap).abs());
            m.slip
                .push(ms(server_gap - (itl_ms as i128 * 1_000_000)).abs());
        }
        if let Some(d) = dump.as_mut() {
            use std::io::Write;
            let rows = t.handoff_ns.iter().zip(&t.written_ns).zip(&o.stamps);
            for (k, ((h, w), s)) in rows.enumerate() {
                let _ = writeln!(d, "{},{k},{h},{w},{s}", o.request_id);
            }
        }
    }
    m
}

/// The machine's own floor, no HTTP and no runtime: one thread writes one byte into a
/// loopback TCP socket every `period`, stamping after `write` returns; another blocks in
/// `read` on the other end and stamps when it returns. Pinned like the benchmark's server
/// (writer) and client (reader) threads. Returns |read gap − write gap| per gap, ms.
fn socket_floor(samples: usize, period: Duration, place: Placement) -> Vec<f64> {
    use std::io::{Read, Write};
    let clock = RunClock::start();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mut rx = std::net::TcpStream::connect(listener.local_addr().unwrap()).expect("connect");
    let (mut tx, _) = listener.accept().expect("accept");
    tx.set_nodelay(true).unwrap();
    let wclock = clock.clone();
    let writer = std::thread::spawn(move || {
        pin_current_thread(place.server_cpu);
        let mut stamps = Vec::with_capacity(samples);
        let origin = std::time::Instant::now();
        for k in 1..=samples {
            let due = origin + period * k as u32;
            std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
            tx.write_all(b"x").expect("write");
            stamps.push(wclock.elapsed_ns());
        }
        stamps
    });
    let rclock = clock.clone();
    let reader = std::thread::spawn(move || {
        pin_current_thread(place.client_cpu);
        let mut stamps = Vec::with_capacity(samples);
        let mut b = [0u8; 1];
        for _ in 0..samples {
            rx.read_exact(&mut b).expect("read");
            stamps.push(rclock.elapsed_ns());
        }
        stamps
    });
    let w = writer.join().unwrap();
    let r = reader.join().unwrap();
    (1..samples)
        .map(|k| {
            let err = (r[k] as i128 - r[k - 1] as i128) - (w[k] as i128 - w[k - 1] as i128);
            err.abs() as f64 / 1e6
        })
        .collect()
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

    let place = Placement::from_env(bench_mode);
    let idle = IdleLatency::from_env(bench_mode);
    let clock = RunClock::start();
    if let Ok(prefix) = std::env::var("FIDELITY_DUMP") {
        // The clock's origin on CLOCK_MONOTONIC (what `Instant` reads on Linux), so the
        // dump's stamps can be lined up with a trace taken with `perf -k CLOCK_MONOTONIC`.
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid timespec for clock_gettime to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        let now = ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64;
        let origin = now - clock.elapsed_ns();
        std::fs::write(format!("{prefix}.origin"), format!("{origin}\n")).expect("dump origin");
    }
    let truth = Arc::new(Mutex::new(HashMap::new()));
    let accepted = Arc::new(AtomicUsize::new(0));
    let server = Server {
        clock: clock.clone(),
        ttft_ns: ttft_ms * 1_000_000,
        itl_ns: itl_ms * 1_000_000,
        tokens,
        truth: truth.clone(),
        accepted: accepted.clone(),
        frames: Arc::new((0..tokens).map(token_frame).collect()),
        tail: Arc::new(tail_bytes(tokens)),
    };
    let std_listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    std_listener.set_nonblocking(true).unwrap();
    let addr = std_listener.local_addr().unwrap();
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("fid-server")
        .on_thread_start(move || pin_current_thread(place.server_cpu))
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
        .on_thread_start(move || {
            IS_CLIENT.with(|c| c.set(true));
            pin_current_thread(place.client_cpu)
        })
        .enable_all()
        .build()
        .unwrap();
    let base = format!("http://{addr}/v1");
    let max_conns = levels.iter().copied().max().unwrap_or(1).max(1);
    let mut cfg = ClientConfig::new(base.clone());
    cfg.max_connections = max_conns;
    let reference = reqwest::Client::builder()
        .no_proxy()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(max_conns)
        .build()
        .expect("reference client");
    let clients = Arc::new(Clients {
        product: Arc::new(Client::new(cfg).expect("client")),
        reference,
        reference_url: format!("{base}/chat/completions"),
    });
    let unders: Vec<Under> = std::env::var("FIDELITY_CLIENTS")
        .unwrap_or_else(|_| "product,reference".into())
        .split(',')
        .filter_map(|s| match s.trim() {
            "product" => Some(Under::Product),
            "reference" => Some(Under::Reference),
            _ => None,
        })
        .collect();

    println!(
        "client_fidelity: T = {ttft_ms} ms, I = {itl_ms} ms, {tokens} tokens, client tokio \
         workers {client_workers}, server 1 worker, loopback HTTP/1.1, warm connections, \
         server on {}, client on {}, idle CPUs: cpuidle {}, CPU-latency request {}{}",
        show_cpu(place.server_cpu),
        show_cpu(place.client_cpu),
        cpuidle(),
        idle.status,
        if bench_mode {
            ""
        } else {
            " (smoke run without --bench: not a measurement)"
        }
    );
    println!(
        "| client | concurrency | requests | TTFT error p50 / p99 (ms) | request leg p50 / p99 (ms) | \
         response leg p50 / p99 (ms) | ITL gap |error| p50 / p99 (ms) | server gap slip p99 (ms) \
         | req/s | client CPU s / 1000 req | client CPU % of a core | allocations / req \
         | send lag p50 / p99 (ms) | due → server read p50 / p99 (ms) | new conns in window \
         | steal in window (ms) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut all_ok = true;
    let mut tails = Vec::new();
    for &c in &levels {
        let per_worker = if c == 1 { requests_c1 } else { rounds };
        for &under in &unders {
            let out = client_rt.block_on(run_level(
                clients.clone(),
                under,
                clock.clone(),
                c,
                per_worker,
                accepted.clone(),
            ));
            let truth = truth.lock().unwrap().clone();
            let m = measure(&out.obs, &truth, itl_ms, c, under);
            all_ok &= m.failed == 0;
            let n = out.obs.len();
            let cpu = out.client_cpu_s;
            println!(
                "| {} | {c} | {n}{} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} \
                 | {:.3} | {:.1} | {} | {} | {:.0} | {:.3} / {:.3} | {:.3} / {:.3} | {} | {} |",
                under.name(),
                if m.failed > 0 {
                    format!(" ({} FAILED)", m.failed)
                } else {
                    String::new()
                },
                p(&m.ttft_err, 0.5),
                p(&m.ttft_err, 0.99),
                p(&m.req_leg, 0.5),
                p(&m.req_leg, 0.99),
                p(&m.resp_leg, 0.5),
                p(&m.resp_leg, 0.99),
                p(&m.gap_err, 0.5),
                p(&m.gap_err, 0.99),
                p(&m.slip, 0.99),
                n as f64 / out.window_s,
                cpu.map(|s| format!("{:.3}", s * 1000.0 / n as f64))
                    .unwrap_or_else(|| "n/a".into()),
                cpu.map(|s| format!("{:.1}", 100.0 * s / out.window_s))
                    .unwrap_or_else(|| "n/a".into()),
                out.client_allocs as f64 / n as f64,
                p(&m.send_lag, 0.5),
                p(&m.send_lag, 0.99),
                p(&m.due_to_read, 0.5),
                p(&m.due_to_read, 0.99),
                out.new_connections,
                out.steal_s
                    .map(|s| format!("{:.0}", s * 1000.0))
                    .unwrap_or_else(|| "n/a".into()),
            );
            let sched = |c: Option<SchedCounters>| match c {
                Some(c) => format!(
                    "on CPU {:.0} ms, runnable but waiting {:.0} ms, {} migrations, {} \
                     involuntary switches",
                    c.run_ns as f64 / 1e6,
                    c.wait_ns as f64 / 1e6,
                    c.migrations,
                    c.involuntary
                ),
                None => "n/a (no schedstat)".to_string(),
            };
            tails.push(format!(
                "{} c={c} scheduler: client threads {}; server thread {}",
                under.name(),
                sched(out.client_sched),
                sched(out.server_sched),
            ));
            let over = |v: &[f64]| v.iter().filter(|&&e| e > 1.0).count();
            let max = |v: &[f64]| v.iter().copied().fold(f64::NAN, f64::max);
            tails.push(format!(
                "{} c={c}: TTFT error > 1 ms in {} of {} requests (max {:.3} ms); ITL gap \
                 |error| > 1 ms in {} of {} gaps (max {:.3} ms); server write p99 {:.3} / \
                 max {:.3} ms; client stamp before truth: {} tokens, over 1 ms after: {}",
                under.name(),
                over(&m.ttft_err),
                m.ttft_err.len(),
                max(&m.ttft_err),
                over(&m.gap_err),
                m.gap_err.len(),
                max(&m.gap_err),
                p(&m.write, 0.99),
                max(&m.write),
                m.before_truth,
                m.late,
            ));
        }
    }
    for t in &tails {
        println!("{t}");
    }
    let floor_samples = env_u64("FIDELITY_FLOOR_SAMPLES", if bench_mode { 1000 } else { 0 });
    if floor_samples >= 2 {
        let g = socket_floor(
            floor_samples as usize,
            Duration::from_millis(itl_ms.max(1)),
            place,
        );
        println!(
            "machine floor (raw loopback socket, blocking threads, {} gaps of {itl_ms} ms, same \
             pinning): gap |error| p50 {:.3} / p99 {:.3} / max {:.3} ms; > 1 ms in {}",
            g.len(),
            p(&g, 0.5),
            p(&g, 0.99),
            g.iter().copied().fold(f64::NAN, f64::max),
            g.iter().filter(|&&e| e > 1.0).count(),
        );
    }
    client_rt.shutdown_timeout(Duration::from_secs(1));
    server_rt.shutdown_timeout(Duration::from_secs(1));
    if !all_ok {
        eprintln!("client_fidelity: some requests failed or were incomplete");
        std::process::exit(1);
    }
}
