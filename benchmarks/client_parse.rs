//! The client's per-response parsing cost, without a network: one streamed
//! response of 64 tokens in vLLM's shape (role chunk, one content chunk per token, finish
//! chunk, usage-only chunk, `[DONE]`), one SSE event per read as hyper hands them over,
//! through the product's framer and accumulator into a finished record — against the
//! anchor's bare reference client's work on the same reads (a byte search for content
//! events, no SSE parsing, no JSON, no record). Not a timed test.
//!
//! Run: `cargo bench --bench client_parse`. The difference between the two is what the
//! product's parsing adds per request on top of the HTTP stack both share; the whole-client
//! figures (CPU per 1000 requests against a loopback server) are `client_fidelity`'s.

use bytes::Bytes;
use divan::Bencher;
use inferscope_bench::client::sse::{SseFramer, feed};
use inferscope_bench::client::{Flow, RequestHead, StreamAccumulator};
use serde_json::json;

#[path = "reference_scan.rs"]
mod reference_scan;

fn main() {
    divan::main();
}

fn chunk(delta: serde_json::Value, finish: Option<&str>) -> String {
    json!({"id": "chatcmpl-fid", "object": "chat.completion.chunk", "created": 0,
           "model": "fid", "choices": [{"index": 0, "delta": delta, "logprobs": null,
           "finish_reason": finish}]})
    .to_string()
}

/// The reads of one 64-token response, one SSE event each.
fn reads() -> Vec<Bytes> {
    let mut events = vec![chunk(json!({"role": "assistant", "content": ""}), None)];
    events.extend((0..64).map(|k| chunk(json!({"content": format!("t{k} ")}), None)));
    events.push(chunk(json!({}), Some("length")));
    events.push(
        json!({"id": "chatcmpl-fid", "object": "chat.completion.chunk", "created": 0,
               "model": "fid", "choices": [],
               "usage": {"prompt_tokens": 12, "completion_tokens": 64, "total_tokens": 76}})
        .to_string(),
    );
    events.push("[DONE]".into());
    events
        .into_iter()
        .map(|e| Bytes::from(format!("data: {e}\n\n")))
        .collect()
}

/// The product: framer + accumulator + record, as `Client::send` does per response.
#[divan::bench]
fn product(b: Bencher) {
    let reads = reads();
    b.bench(|| {
        let mut framer = SseFramer::new(16 << 20);
        let mut acc = StreamAccumulator::new();
        for (i, read) in reads.iter().enumerate() {
            match feed(&mut framer, &mut acc, read, i as u64) {
                Ok(Flow::Continue) => {}
                _ => break,
            }
        }
        let head = RequestHead {
            request_id: "r".into(),
            stream: true,
            ..RequestHead::default()
        };
        acc.finish(head, reads.len() as u64, true)
    });
}

/// The bare reference client's per-read work (`client_fidelity::reference_chat`).
#[divan::bench]
fn reference(b: Bencher) {
    let reads = reads();
    b.bench(|| {
        let mut pending: Vec<u8> = Vec::with_capacity(1024);
        let mut stamps: Vec<u64> = Vec::with_capacity(64);
        let mut done = false;
        for (t, read) in reads.iter().enumerate() {
            done |= reference_scan::scan_read(&mut pending, read, t as u64, &mut stamps);
        }
        (stamps, done)
    });
}
