//! Throughput of the built-in simulator: streamed chat completions per second at
//! concurrency 32 with every simulated delay zero ("Speed": at least 2,000
//! streamed requests/s on 2 cores). Client and server share the machine, as in CI.
//!
//! Each request is a full SSE stream (role chunk, 17 content chunks, finish chunk, usage
//! chunk, `[DONE]`) read to the end by reqwest over loopback HTTP/1.1; a request counts
//! only when its body ends with `data: [DONE]`. Run with `cargo bench --bench
//! sim_throughput`; `SIM_THROUGHPUT_SECS` (default 3) sets the measured window and
//! `SIM_THROUGHPUT_CONCURRENCY` (default 32) the number of concurrent clients.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use inferscope_bench::sim::{SimConfig, spawn};

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

async fn worker(
    client: reqwest::Client,
    url: String,
    body: bytes::Bytes,
    stop: Arc<AtomicBool>,
    counting: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
) {
    while !stop.load(Relaxed) {
        let res = client
            .post(&url)
            .header("content-type", "application/json")
            .body(body.clone())
            .send()
            .await;
        let good = match res {
            Ok(r) if r.status().is_success() => match r.bytes().await {
                Ok(b) => b.ends_with(b"data: [DONE]\n\n"),
                Err(_) => false,
            },
            _ => false,
        };
        if counting.load(Relaxed) {
            if good {
                ok.fetch_add(1, Relaxed);
            } else {
                failed.fetch_add(1, Relaxed);
            }
        }
    }
}

#[tokio::main]
async fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let secs = env_or("SIM_THROUGHPUT_SECS", 3).max(1);
    let concurrency = env_or("SIM_THROUGHPUT_CONCURRENCY", 32).max(1);
    let sim = spawn(SimConfig::zero_delay(), "127.0.0.1:0".parse().unwrap())
        .await
        .expect("bind the simulator");
    let url = format!("{}/chat/completions", sim.base_url());
    let body = bytes::Bytes::from(
        serde_json::to_vec(&serde_json::json!({
            "model": "inferscope-sim",
            "messages": [
                {"role": "system", "content": "You are a benchmark."},
                {"role": "user", "content": "Stream a short answer."}
            ],
            "stream": true,
            "stream_options": {"include_usage": true}
        }))
        .unwrap(),
    );
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency as usize)
        .tcp_nodelay(true)
        .build()
        .expect("build the HTTP client");
    let stop = Arc::new(AtomicBool::new(false));
    let counting = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        tasks.push(tokio::spawn(worker(
            client.clone(),
            url.clone(),
            body.clone(),
            stop.clone(),
            counting.clone(),
            ok.clone(),
            failed.clone(),
        )));
    }
    // Warm-up: open the connections and fill the pool.
    tokio::time::sleep(Duration::from_millis(300)).await;
    counting.store(true, Relaxed);
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    counting.store(false, Relaxed);
    let elapsed = t0.elapsed();
    let n = ok.load(Relaxed);
    let bad = failed.load(Relaxed);
    stop.store(true, Relaxed);
    for t in tasks {
        let _ = t.await;
    }
    let state = sim.state();
    sim.shutdown().await;
    let rps = n as f64 / elapsed.as_secs_f64();
    println!(
        "sim_throughput: {rps:.0} streamed requests/s (concurrency {concurrency}, {:.2} s, {n} ok, {bad} failed, zero delays; {} requests served in all)",
        elapsed.as_secs_f64(),
        state.requests_received()
    );
    if bad > 0 || n == 0 {
        std::process::exit(1);
    }
}
