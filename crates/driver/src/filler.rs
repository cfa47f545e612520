//! Seeded filler text (the context driver's prompts, and the blocks of a synthesized
//! Mooncake prompt): words of a vocabulary, sized in approximate tokens of 4 bytes. Pure.

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Built-in filler vocabulary used when a job names no filler file.
const WORDS: &[&str] = &[
    "the",
    "engine",
    "serves",
    "tokens",
    "cache",
    "prefix",
    "block",
    "latency",
    "request",
    "stream",
    "energy",
    "joule",
    "batch",
    "decode",
    "prefill",
    "kernel",
    "memory",
    "queue",
    "sample",
    "trace",
    "window",
    "counter",
    "model",
    "layer",
    "weight",
    "vector",
    "matrix",
    "attention",
    "context",
    "history",
    "agent",
    "tool",
    "step",
    "trajectory",
    "answer",
];

/// Bytes per approximate token for sizing filler.
pub const BYTES_PER_TOKEN: usize = 4;

/// A deterministic filler text of about `tokens × 4` bytes from `words` (or the built-in
/// vocabulary when empty), seeded by `seed`.
pub fn filler(seed: u64, tokens: usize, words: &[String]) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let target = tokens.saturating_mul(BYTES_PER_TOKEN);
    let mut out = String::with_capacity(target + 16);
    let mut sentence = 0usize;
    while out.len() < target {
        let w: &str = if words.is_empty() {
            WORDS.choose(&mut rng).copied().unwrap_or("token")
        } else {
            words
                .choose(&mut rng)
                .map(String::as_str)
                .unwrap_or("token")
        };
        out.push_str(w);
        sentence += 1;
        if sentence > rng.random_range(6..14) {
            out.push_str(". ");
            sentence = 0;
        } else {
            out.push(' ');
        }
    }
    out.truncate(target.max(1));
    out
}
