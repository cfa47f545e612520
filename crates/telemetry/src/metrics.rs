//! Engine `/metrics` sampling: scrape over HTTP, parse ([`super::prom`]), map through an engine
//! profile ([`super::profile`]) and track counters across scrapes ([`super::counters`]).
//!
//! A failed scrape (connect error, timeout, non-2xx, oversized body) is a counted gap with its
//! reason — never a zero sample. Each sample records when the request was sent and when the
//! response was complete; the engine took its snapshot somewhere in between.

use super::counters::CounterTracker;
use super::profile::{CanonicalSnapshot, CounterId};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Canonical counter values of one scrape (tokens); `None` = not exposed or not finite.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterValues {
    /// Prompt tokens (cached included).
    pub prompt_tokens: Option<u64>,
    /// Generated tokens.
    pub generation_tokens: Option<u64>,
    /// Prefix-cache queries, tokens.
    pub prefix_cache_queries: Option<u64>,
    /// Prefix-cache hits, tokens.
    pub prefix_cache_hits: Option<u64>,
}

impl CounterValues {
    /// The value of one counter.
    pub fn get(&self, id: CounterId) -> Option<u64> {
        match id {
            CounterId::PromptTokens => self.prompt_tokens,
            CounterId::GenerationTokens => self.generation_tokens,
            CounterId::PrefixCacheQueries => self.prefix_cache_queries,
            CounterId::PrefixCacheHits => self.prefix_cache_hits,
        }
    }

    fn set(&mut self, id: CounterId, v: Option<u64>) {
        match id {
            CounterId::PromptTokens => self.prompt_tokens = v,
            CounterId::GenerationTokens => self.generation_tokens = v,
            CounterId::PrefixCacheQueries => self.prefix_cache_queries = v,
            CounterId::PrefixCacheHits => self.prefix_cache_hits = v,
        }
    }
}

/// Per-counter reset flags of one sample: `true` when the interval ending at this sample
/// contains a counter reset (value decreased or `_created` changed, C15).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResetFlags {
    /// `prompt_tokens` reset.
    pub prompt_tokens: bool,
    /// `generation_tokens` reset.
    pub generation_tokens: bool,
    /// `prefix_cache_queries` reset.
    pub prefix_cache_queries: bool,
    /// `prefix_cache_hits` reset.
    pub prefix_cache_hits: bool,
}

impl ResetFlags {
    /// The flag of one counter.
    pub fn get(&self, id: CounterId) -> bool {
        match id {
            CounterId::PromptTokens => self.prompt_tokens,
            CounterId::GenerationTokens => self.generation_tokens,
            CounterId::PrefixCacheQueries => self.prefix_cache_queries,
            CounterId::PrefixCacheHits => self.prefix_cache_hits,
        }
    }

    fn set(&mut self, id: CounterId, v: bool) {
        match id {
            CounterId::PromptTokens => self.prompt_tokens = v,
            CounterId::GenerationTokens => self.generation_tokens = v,
            CounterId::PrefixCacheQueries => self.prefix_cache_queries = v,
            CounterId::PrefixCacheHits => self.prefix_cache_hits = v,
        }
    }
}

/// One successful scrape (a line of `samples/metrics.jsonl`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsSample {
    /// When the response was fully read, ns from the reference instant (the engine's snapshot
    /// is at or before this).
    pub elapsed_ns: u64,
    /// When the request was sent, ns (the snapshot is at or after this).
    pub request_sent_ns: u64,
    /// Canonical counters.
    pub counters: CounterValues,
    /// Reset flags of the interval ending here.
    pub resets: ResetFlags,
    /// Canonical gauges (`requests_running`, `requests_waiting`, `kv_cache_usage`, and for
    /// SGLang `cache_hit_rate`); `null` when absent or non-finite, and `null` when several
    /// engines expose the gauge (see `gauge_engines`: never a sum across engines).
    pub gauges: BTreeMap<String, Option<f64>>,
    /// Gauges exposed by more than one engine (data-parallel ranks): gauge → engine key
    /// (the series' labels other than the model's, e.g. `engine="1"`) → value. Empty (and
    /// absent in older files) when every gauge came from one engine.
    #[serde(default)]
    pub gauge_engines: BTreeMap<String, BTreeMap<String, Option<f64>>>,
    /// Names whose exposed value was NaN/±Inf (or a negative counter): written as `null`
    /// above, flagged here (C17).
    pub non_finite: Vec<String>,
}

/// Turns canonical snapshots into samples, tracking counter resets across scrapes. Pure.
#[derive(Debug, Default)]
pub struct MetricsTracker {
    trackers: [CounterTracker; 4],
}

impl MetricsTracker {
    /// A tracker that has seen nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ingests one scrape's snapshot, stamped `(request_sent_ns, elapsed_ns)`.
    pub fn ingest(
        &mut self,
        request_sent_ns: u64,
        elapsed_ns: u64,
        snap: &CanonicalSnapshot,
    ) -> MetricsSample {
        let mut counters = CounterValues::default();
        let mut resets = ResetFlags::default();
        for id in CounterId::ALL {
            let r = &snap.counters[id as usize];
            counters.set(id, r.value);
            resets.set(id, self.trackers[id as usize].observe(r.value, &r.created));
        }
        MetricsSample {
            elapsed_ns,
            request_sent_ns,
            counters,
            resets,
            gauges: snap.gauges.clone(),
            gauge_engines: snap.gauge_engines.clone(),
            non_finite: snap.non_finite.clone(),
        }
    }

    /// Resets seen per canonical counter (name → count).
    pub fn resets(&self) -> BTreeMap<String, u32> {
        CounterId::ALL
            .iter()
            .map(|id| (id.name().to_string(), self.trackers[*id as usize].resets()))
            .collect()
    }
}

/// The largest scrape body accepted, bytes.
pub const MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// The `Accept` header sent: 0.0.4 text preferred, OpenMetrics accepted.
pub const ACCEPT: &str =
    "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1";

/// Builds the scrape client for `url`: short timeouts, no proxy (the engine is scraped
/// directly). For a plain `http://` URL no certificate store is loaded
/// (the platform verifier reads every system CA certificate when the client is built, a
/// few ms and MiB a client that never does TLS has no use for).
pub(crate) fn build_client(
    timeout: std::time::Duration,
    url: &str,
) -> Result<reqwest::Client, String> {
    // reqwest is built with `rustls-no-provider`: a provider must be installed before a
    // client is built. Installing twice is harmless (the second call returns Err).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut b = reqwest::Client::builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .no_proxy();
    if is_plain_http(url) {
        b = b.tls_certs_only(std::iter::empty());
    }
    b.build().map_err(|e| format!("http client: {e}"))
}

/// Whether `url` is plain `http://` (case-insensitive scheme).
pub(crate) fn is_plain_http(url: &str) -> bool {
    url.get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"))
}

/// One scrape's answer.
#[derive(Debug)]
pub(crate) struct Scraped {
    /// The body, UTF-8.
    pub body: String,
    /// The `Content-Type` header, when sent.
    pub content_type: Option<String>,
    /// Whether the GET was sent a second time on a new connection: the pooled connection
    /// it first went out on had been closed by the engine (an idle keep-alive timeout met
    /// the next scrape) and no answer came back on it.
    pub resent: bool,
}

/// One scrape, or the reason it failed.
///
/// A scrape is an idempotent GET. When it goes out on a pooled connection the engine has
/// just closed (uvicorn closes a connection idle for 5 s; the sampler's runtime is not
/// driven between scrapes, so the close is seen only when the next scrape uses it), it
/// fails with no response head and no connect error. It is then sent once more, on a new
/// connection, as Go's HTTP client (Prometheus's own scraper) does for idempotent requests.
pub(crate) async fn scrape(client: &reqwest::Client, url: &str) -> Result<Scraped, String> {
    let mut resent = false;
    let mut resp = loop {
        match client
            .get(url)
            .header(reqwest::header::ACCEPT, ACCEPT)
            .send()
            .await
        {
            Ok(r) => break r,
            Err(e) if !resent && is_closed_before_answer(&e) => resent = true,
            Err(e) => return Err(format!("request failed: {}", error_chain(&e))),
        }
    };
    let status = resp.status();
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    let ct = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut body: Vec<u8> = Vec::new();
    while let Some(chunk) = resp
        .chunk()
        .await
        .map_err(|e| format!("reading body: {}", error_chain(&e)))?
    {
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(format!("body larger than {MAX_BODY_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    let body = String::from_utf8(body).map_err(|_| "body is not UTF-8".to_string())?;
    Ok(Scraped {
        body,
        content_type: ct,
        resent,
    })
}

/// Whether `e` is a request that got no response head on a connection that was open: not
/// a connect failure, not a timeout, no status.
fn is_closed_before_answer(e: &reqwest::Error) -> bool {
    e.is_request() && !e.is_connect() && !e.is_timeout() && e.status().is_none()
}

/// `e: source: source…` on one line (reqwest's own text omits the cause, e.g. "connection
/// refused" or "operation timed out").
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        cur = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::time::Duration;

    /// The runtime a metrics sampler thread scrapes on: one thread, driven only while a
    /// scrape runs.
    fn sampler_runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    /// A scrape the server never finishes fails with a reason that says it timed out,
    /// whether the server is silent or stops after the response head: the vLLM check
    /// (`scripts/check_vllm_report.py`) tells such a gap (a starved server) from a defect
    /// by these words.
    #[test]
    fn a_scrape_past_its_timeout_says_it_timed_out() {
        for head in [
            &b""[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nvllm:x 1\n",
        ] {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let url = format!("http://{}/metrics", l.local_addr().unwrap());
            let server = std::thread::spawn(move || {
                let (mut s, _) = l.accept().unwrap();
                let mut buf = [0u8; 1024];
                let _ = s.read(&mut buf);
                s.write_all(head).unwrap();
                // Held open past the client's timeout, then dropped.
                let _ = s.read(&mut buf);
            });
            let rt = sampler_runtime();
            let client = build_client(Duration::from_millis(200), &url).unwrap();
            let err = rt.block_on(scrape(&client, &url)).unwrap_err();
            assert!(err.contains("timed out"), "{err}");
            drop(client);
            drop(rt);
            server.join().unwrap();
        }
    }

    /// Reads one request head from `s` (up to its blank line).
    fn read_head(s: &mut std::net::TcpStream) -> bool {
        let mut head = Vec::new();
        let mut b = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match s.read(&mut b) {
                Ok(1) => head.push(b[0]),
                _ => return false,
            }
        }
        true
    }

    /// A server that answers the first scrape on a keep-alive connection, then closes that
    /// connection after reading the next request without answering it (an idle timeout
    /// meeting the request). The request's next connection is answered, or, with
    /// `close_twice`, closed the same way.
    fn closing_server(close_twice: bool) -> (String, std::thread::JoinHandle<()>) {
        const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\
                           content-length: 10\r\n\r\nvllm:x 1\n\n";
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/metrics", l.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            assert!(read_head(&mut s));
            s.write_all(OK).unwrap();
            assert!(read_head(&mut s));
            drop(s);
            let (mut s, _) = l.accept().unwrap();
            assert!(read_head(&mut s));
            if !close_twice {
                s.write_all(OK).unwrap();
                // Held until the client goes.
                let _ = read_head(&mut s);
            }
        });
        (url, server)
    }

    /// A scrape whose pooled connection the engine closed goes out once more on a new
    /// connection and is counted as resent; a second close is a failed scrape.
    #[test]
    fn a_scrape_on_a_connection_the_engine_closed_is_sent_once_more() {
        for close_twice in [false, true] {
            let (url, server) = closing_server(close_twice);
            let rt = sampler_runtime();
            let client = build_client(Duration::from_secs(5), &url).unwrap();
            let first = rt.block_on(scrape(&client, &url)).unwrap();
            assert_eq!((first.body.as_str(), first.resent), ("vllm:x 1\n\n", false));
            let second = rt.block_on(scrape(&client, &url));
            match second {
                Ok(s) => {
                    assert!(!close_twice, "{s:?}");
                    assert!(s.resent);
                    assert_eq!(s.content_type.as_deref(), Some("text/plain"));
                }
                Err(e) => {
                    assert!(close_twice, "{e}");
                    assert!(e.starts_with("request failed"), "{e}");
                    assert!(!e.contains("timed out"), "{e}");
                }
            }
            drop(client);
            drop(rt);
            server.join().unwrap();
        }
    }
}
