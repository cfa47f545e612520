//! Where a context job's prompt tokens are counted, and prompts built to an exact
//! count of them.
//!
//! - [`Counter`]: a Hugging Face `tokenizer.json` (the `tokenizers` crate, pure Rust
//!   regexes), or the engine's own `POST /tokenize`, in the first shape it answers
//!   ([`TokenizeShape::detect`]): vLLM's chat form (`{"model", "messages"}`: the whole
//!   templated prompt is counted, so no overhead is added and a template whose count does
//!   not add up token by token is still exact), vLLM and SGLang's `{"model", "prompt"}`
//!   (`count`), llama-server's `{"content"}` (`tokens`).
//! - [`exact_filler`]: seeded filler text of exactly N tokens by a counter: the longest
//!   whole-word prefix of the filler with at most N tokens (a binary search over word ends,
//!   so each prefix is counted as it would be sent, never decoded and re-encoded), then
//!   single-token pads up to N. When no pad lands exactly (a tokenizer that merges every
//!   pad), the text has fewer tokens and the count says so.
//! - [`PromptTokens`]: a counter and the chat template's overhead, measured once in the
//!   preflight ([`measure_overhead`]): a context job's `sizes` are then the prompt tokens
//!   the server reports (`usage.prompt_tokens`), template included.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::client::Client;
use crate::filler::filler;

/// Largest tokenizer.json read, bytes (real ones are 2–20 MB).
pub const MAX_TOKENIZER_BYTES: u64 = 64 * 1024 * 1024;

/// Counts the tokens of a text.
pub trait CountTokens: Sync {
    /// The token count of `text` (no special tokens added).
    fn count(&self, text: &str) -> impl Future<Output = Result<usize, String>> + Send;
}

/// The request shape of an engine's `POST /tokenize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizeShape {
    /// vLLM: `{"model", "messages": [one user message], "add_generation_prompt": true}` →
    /// `count`: the text is counted inside the chat template, as the chat request sends it.
    OpenAiChat,
    /// vLLM / SGLang: `{"model", "prompt", "add_special_tokens": false}` → `count`.
    OpenAiServer,
    /// llama.cpp's llama-server: `{"content", "add_special": false}` → `tokens`.
    LlamaServer,
}

impl TokenizeShape {
    /// The body asking for the tokens of `text`.
    pub fn body(self, model: &str, text: &str) -> Value {
        match self {
            Self::OpenAiChat => json!({
                "model": model,
                "messages": [{"role": "user", "content": text}],
                "add_generation_prompt": true
            }),
            Self::OpenAiServer => {
                json!({"model": model, "prompt": text, "add_special_tokens": false})
            }
            Self::LlamaServer => json!({"content": text, "add_special": false}),
        }
    }

    /// The count an answer gives: `count`, else the length of `tokens`.
    pub fn count_of(answer: &Value) -> Option<usize> {
        answer
            .get("count")
            .and_then(Value::as_u64)
            .map(|n| n as usize)
            .or_else(|| answer.get("tokens").and_then(Value::as_array).map(Vec::len))
    }

    /// The shape `client`'s engine answers with a count above 0 for a two-word text (an
    /// engine can answer another shape with no tokens: llama-server reads a missing
    /// `content` as empty): vLLM's chat form, its prompt form, then llama-server's; the
    /// error names every refusal.
    pub async fn detect(client: &Client, model: &str) -> Result<TokenizeShape, String> {
        let mut refusals = Vec::new();
        for shape in [Self::OpenAiChat, Self::OpenAiServer, Self::LlamaServer] {
            match client
                .post_root_json("/tokenize", &shape.body(model, "hello world"))
                .await
            {
                Ok(v) if Self::count_of(&v).is_some_and(|n| n > 0) => return Ok(shape),
                Ok(_) => refusals.push(format!("{shape:?}: no tokens counted")),
                Err(e) => refusals.push(format!("{shape:?}: {e}")),
            }
        }
        Err(format!(
            "POST /tokenize answered neither shape ({})",
            refusals.join("; ")
        ))
    }
}

/// A token counter of a run: a tokenizer file or the engine's endpoint.
#[derive(Clone)]
pub enum Counter {
    /// A loaded `tokenizer.json`.
    File(Arc<tokenizers::Tokenizer>),
    /// The engine's `POST /tokenize`.
    Endpoint {
        /// The suite's client (its base URL, key and timeouts), boxed: a client is large
        /// and a counter is moved around by value.
        client: Box<Client>,
        /// The model named in vLLM-shaped bodies.
        model: String,
        /// The detected shape.
        shape: TokenizeShape,
    },
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Counter::File(_) => f.write_str("Counter::File"),
            Counter::Endpoint { shape, .. } => write!(f, "Counter::Endpoint({shape:?})"),
        }
    }
}

impl Counter {
    /// Loads a tokenizer.json (bounded read, no symlink followed).
    pub fn from_file(path: &Path) -> Result<Counter, String> {
        let bytes = crate::fsio::read(path, MAX_TOKENIZER_BYTES)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let t = tokenizers::Tokenizer::from_bytes(&bytes)
            .map_err(|e| format!("{}: not a tokenizer.json: {e}", path.display()))?;
        Ok(Counter::File(Arc::new(t)))
    }
}

impl CountTokens for Counter {
    async fn count(&self, text: &str) -> Result<usize, String> {
        match self {
            Counter::File(t) => t
                .encode_fast(text, false)
                .map(|e| e.len())
                .map_err(|e| format!("tokenizer: {e}")),
            Counter::Endpoint {
                client,
                model,
                shape,
            } => {
                let body = shape.body(model, text);
                let v = retry_transient(TOKENIZE_ATTEMPTS, || {
                    client.post_root_json("/tokenize", &body)
                })
                .await
                .map_err(|e| e.to_string())?;
                TokenizeShape::count_of(&v)
                    .ok_or_else(|| "POST /tokenize: no `count` or `tokens` in the answer".into())
            }
        }
    }
}

/// Tries of one `POST /tokenize` (it is idempotent): a pooled connection the engine closed
/// as the request went out, or an engine busy for a moment, must not change a prompt.
pub const TOKENIZE_ATTEMPTS: u32 = 3;

/// Whether `e` may pass on a second try: a transport error, a timeout, HTTP 429 or 5xx.
fn is_transient(e: &crate::client::ClientError) -> bool {
    use crate::client::ClientError as E;
    match e {
        E::Request { .. } | E::Timeout { .. } => true,
        E::HttpStatus { status, .. } => *status == 429 || *status >= 500,
        _ => false,
    }
}

/// `f()` until it succeeds, fails for good ([`is_transient`] false) or `attempts` tries
/// are spent (25 ms, then 50 ms, ... between them); the last error.
async fn retry_transient<T, F, Fut>(
    attempts: u32,
    mut f: F,
) -> Result<T, crate::client::ClientError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, crate::client::ClientError>>,
{
    let mut tries = 1u32;
    loop {
        match f().await {
            Err(e) if tries < attempts.max(1) && is_transient(&e) => {
                tokio::time::sleep(std::time::Duration::from_millis(25 << (tries - 1))).await;
                tries += 1;
            }
            r => return r,
        }
    }
}

/// Pads appended one at a time to close the last gap, each one token in common
/// tokenizers (a word after a space, a full stop).
const PADS: [&str; 4] = [" a", ".", " the", "a"];

/// Seeded filler of exactly `tokens` tokens by `c` where it can be built (see the module
/// docs): the text and its count (`< tokens` only when no pad fitted).
pub async fn exact_filler<C: CountTokens>(
    c: &C,
    seed: u64,
    tokens: usize,
    words: &[String],
) -> Result<(String, usize), String> {
    exact_filler_after(c, "", seed, tokens, words).await
}

/// `prefix` followed by seeded filler, the whole exactly `tokens` tokens by `c` where it
/// can be built (counted as one text, so a boundary that merges tokens is counted): the
/// text (starting with `prefix`) and its count. A trajectory replay grows each
/// prompt from the previous one this way, so the prefix is byte-identical.
pub async fn exact_filler_after<C: CountTokens>(
    c: &C,
    prefix: &str,
    seed: u64,
    tokens: usize,
    words: &[String],
) -> Result<(String, usize), String> {
    let count = async |t: &str| c.count(&format!("{prefix}{t}")).await;
    let base = if prefix.is_empty() {
        0
    } else {
        count("").await?
    };
    if tokens <= base {
        return Ok((prefix.to_string(), base));
    }
    let want = tokens - base;
    // A filler long enough to hold `tokens`: 8 bytes a token, doubled while short.
    let mut scale = 2usize;
    let text = loop {
        let t = filler(seed, want.saturating_mul(scale), words);
        let n = count(&t).await?;
        if n <= base {
            return Err("the token counter counts no token in a filler text".into());
        }
        if n >= tokens || scale >= 64 {
            break t;
        }
        scale *= 2;
    };
    // Word ends: the cut points (a prefix never ends inside a word).
    let mut cuts: Vec<usize> = text
        .char_indices()
        .filter(|&(_, ch)| ch == ' ')
        .map(|(i, _)| i)
        .collect();
    cuts.push(text.len());
    // The longest cut with at most `tokens` tokens (counts grow with the text).
    let (mut lo, mut hi) = (0usize, cuts.len());
    let mut best = (String::new(), base);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let part = &text[..cuts[mid]];
        let n = count(part).await?;
        if n <= tokens {
            best = (part.to_string(), n);
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    let (mut out, mut n) = best;
    let mut budget = (tokens - n) * 2 + 8;
    'pad: while n < tokens && budget > 0 {
        for pad in PADS {
            budget = budget.saturating_sub(1);
            let candidate = format!("{out}{pad}");
            let m = count(&candidate).await?;
            if m <= tokens && candidate.len() > out.len() && m >= n {
                out = candidate;
                n = m;
                continue 'pad;
            }
        }
        break;
    }
    Ok((format!("{prefix}{out}"), n))
}

/// The prompts of one job whose exact size could not be built because the counter failed
/// (after its retries): shared by the job's requests, stated in a note at its end.
#[derive(Debug, Clone, Default)]
pub struct CountFailures(Arc<std::sync::Mutex<(u64, Option<String>)>>);

impl CountFailures {
    /// Records one failed prompt and its error (the first error is kept).
    pub fn record(&self, err: &str) {
        let mut g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        g.0 += 1;
        g.1.get_or_insert_with(|| err.to_string());
    }

    /// Failed prompts so far.
    pub fn count(&self) -> u64 {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).0
    }

    /// The job's note, when a prompt failed.
    pub fn note(&self) -> Option<String> {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let first = g.1.as_deref()?;
        Some(format!(
            "prompt sizes: the token counter failed on {} prompt(s) (first: {first}); each was \
             sent as bytes/4 filler of its size, so the server's count differs from the size \
             asked (prompt_tokens_diff_max)",
            g.0
        ))
    }
}

/// A suite's token counter and its chat template's overhead.
#[derive(Debug, Clone)]
pub struct PromptTokens {
    /// The counter.
    pub counter: Counter,
    /// Prompt tokens the server adds around one user message (template, generation
    /// prompt, BOS), measured in the preflight.
    pub overhead: usize,
    /// What the report names as the basis (`tokenizer.json`, `engine /tokenize`).
    pub label: &'static str,
}

impl PromptTokens {
    /// One user message's content for a prompt of `size` reported tokens: exact filler of
    /// `size − overhead` tokens (at least 1), and the prompt tokens it is expected to give.
    pub async fn content(
        &self,
        seed: u64,
        size: usize,
        words: &[String],
    ) -> Result<(String, u64), String> {
        let want = size.saturating_sub(self.overhead).max(1);
        let (text, n) = exact_filler(&self.counter, seed, want, words).await?;
        Ok((text, (n + self.overhead) as u64))
    }
}

/// A request the server reported no output tokens for gets its estimate from
/// the suite's counter (method `tokenizer`) instead of bytes/4; never presented as usage
/// (`completion_tokens` stays `null`). Requests with usage, without any estimate, with more
/// than one choice (only choice 0's output is kept), or whose count fails keep theirs.
pub async fn refine_estimate<C: CountTokens>(c: &C, r: &mut crate::client::RequestRecord) {
    use crate::model::basis::{EstimateMethod, TokenEstimate};
    if r.completion_tokens.is_some()
        || r.completion_tokens_estimate.is_none()
        || r.choices.len() > 1
    {
        return;
    }
    let o = &r.output;
    let mut text = String::with_capacity(o.reasoning.len() + o.text.len());
    text.push_str(&o.reasoning);
    text.push_str(&o.text);
    for call in &o.tool_calls {
        text.push_str(&call.name);
        text.push_str(&call.arguments);
    }
    if let Ok(n) = c.count(&text).await {
        r.completion_tokens_estimate = Some(TokenEstimate {
            tokens: n as u64,
            method: EstimateMethod::Tokenizer,
        });
    }
}

/// The chat template's overhead from one measured request: `reported` prompt tokens of a
/// user message whose content counted `content` tokens. `None` without a report, or when
/// the server reported fewer tokens than the content has (a counter that is not the
/// engine's).
pub fn overhead_of(reported: Option<u64>, content: usize) -> Option<usize> {
    let r = usize::try_from(reported?).ok()?;
    r.checked_sub(content)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Counts like the simulator: ceil(bytes / 4).
    struct Bytes4;
    impl CountTokens for Bytes4 {
        async fn count(&self, text: &str) -> Result<usize, String> {
            Ok(text.len().div_ceil(4))
        }
    }

    /// Counts whitespace-separated words and every `.` as its own token.
    struct Words;
    impl CountTokens for Words {
        async fn count(&self, text: &str) -> Result<usize, String> {
            Ok(text.split_whitespace().count() + text.matches('.').count())
        }
    }

    #[tokio::test]
    async fn exact_filler_hits_every_size_with_two_counters() {
        for size in [1usize, 2, 7, 128, 512, 2048, 3001] {
            let (t, n) = exact_filler(&Bytes4, 9, size, &[]).await.unwrap();
            assert_eq!(n, size, "bytes/4 at {size}");
            assert_eq!(t.len().div_ceil(4), size);
            let (t, n) = exact_filler(&Words, 9, size, &[]).await.unwrap();
            assert_eq!(n, size, "words at {size}");
            assert_eq!(Words.count(&t).await.unwrap(), size);
        }
    }

    /// Counts nothing (an engine that read another request shape as an empty text).
    struct Nothing;
    impl CountTokens for Nothing {
        async fn count(&self, _: &str) -> Result<usize, String> {
            Ok(0)
        }
    }

    #[tokio::test]
    async fn a_counter_that_counts_nothing_is_refused() {
        let e = exact_filler(&Nothing, 1, 32, &[]).await.unwrap_err();
        assert!(e.contains("counts no token"), "{e}");
    }

    #[tokio::test]
    async fn exact_filler_is_deterministic_and_seeded() {
        let a = exact_filler(&Words, 1, 300, &[]).await.unwrap();
        let b = exact_filler(&Words, 1, 300, &[]).await.unwrap();
        let c = exact_filler(&Words, 2, 300, &[]).await.unwrap();
        assert_eq!(a, b);
        assert_ne!(a.0, c.0);
    }

    #[tokio::test]
    async fn a_real_bpe_tokenizer_gets_exact_counts() {
        let t = tokenizers::Tokenizer::from_bytes(tiny_bpe_json()).unwrap();
        let c = Counter::File(Arc::new(t));
        for size in [16usize, 128, 512] {
            let (text, n) = exact_filler(&c, 3, size, &[]).await.unwrap();
            assert_eq!(n, size);
            assert_eq!(c.count(&text).await.unwrap(), size);
        }
    }

    #[tokio::test]
    async fn without_usage_the_estimate_is_the_tokenizers_and_never_usage() {
        use crate::model::basis::{EstimateMethod, TokenEstimate};
        let mut r = crate::client::RequestRecord::new("r", 0, 0, true);
        r.output.text = "one two three four five".into();
        r.completion_tokens_estimate = Some(TokenEstimate {
            tokens: 6,
            method: EstimateMethod::Utf8BytesDiv4,
        });
        refine_estimate(&Words, &mut r).await;
        assert_eq!(
            r.completion_tokens_estimate,
            Some(TokenEstimate {
                tokens: 5,
                method: EstimateMethod::Tokenizer
            })
        );
        assert_eq!(r.completion_tokens, None);
        // A server count is kept as it is, with no estimate beside it.
        let mut u = crate::client::RequestRecord::new("u", 0, 0, true);
        u.output.text = "one two".into();
        u.completion_tokens = Some(2);
        refine_estimate(&Words, &mut u).await;
        assert_eq!(u.completion_tokens_estimate, None);
    }

    #[test]
    fn overhead_is_the_reported_remainder() {
        assert_eq!(overhead_of(Some(40), 24), Some(16));
        assert_eq!(overhead_of(None, 24), None);
        assert_eq!(overhead_of(Some(10), 24), None);
    }

    #[test]
    fn tokenize_answers_of_both_engines_are_read() {
        assert_eq!(
            TokenizeShape::count_of(&json!({"count": 5, "tokens": [1]})),
            Some(5)
        );
        assert_eq!(
            TokenizeShape::count_of(&json!({"tokens": [1, 2, 3]})),
            Some(3)
        );
        assert_eq!(TokenizeShape::count_of(&json!({"error": "x"})), None);
        let v = TokenizeShape::LlamaServer.body("m", "hi");
        assert_eq!(v, json!({"content": "hi", "add_special": false}));
        let v = TokenizeShape::OpenAiServer.body("m", "hi");
        assert_eq!(v["prompt"], "hi");
        let v = TokenizeShape::OpenAiChat.body("m", "hi");
        assert_eq!(v["messages"], json!([{"role": "user", "content": "hi"}]));
    }

    /// A byte-level BPE tokenizer.json over the 256 byte symbols with a few merges (enough
    /// that words are several tokens and pads merge with their neighbours).
    pub(crate) fn tiny_bpe_json() -> &'static [u8] {
        static JSON: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
        JSON.get_or_init(|| {
            let alphabet = tokenizers::pre_tokenizers::byte_level::ByteLevel::alphabet();
            let mut symbols: Vec<String> = alphabet.into_iter().map(|c| c.to_string()).collect();
            symbols.sort();
            let merges = [
                ("t", "h"),
                ("th", "e"),
                ("Ġ", "the"),
                ("e", "r"),
                ("Ġ", "a"),
            ];
            let mut vocab = serde_json::Map::new();
            for (i, s) in symbols.iter().enumerate() {
                vocab.insert(s.clone(), json!(i));
            }
            for (a, b) in merges {
                let n = vocab.len();
                vocab.insert(format!("{a}{b}"), json!(n));
            }
            let merges: Vec<String> = merges.iter().map(|(a, b)| format!("{a} {b}")).collect();
            serde_json::to_vec(&json!({
                "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
                "normalizer": null,
                "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false,
                                  "trim_offsets": true, "use_regex": true},
                "post_processor": null,
                "decoder": {"type": "ByteLevel", "add_prefix_space": true,
                            "trim_offsets": true, "use_regex": true},
                "model": {"type": "BPE", "dropout": null, "unk_token": null,
                          "continuing_subword_prefix": null, "end_of_word_suffix": null,
                          "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
                          "vocab": vocab, "merges": merges}
            }))
            .unwrap()
        })
    }
}
