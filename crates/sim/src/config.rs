//! Simulator configuration: latency model, prefix cache, tool behaviour, faults and the
//! simulated power model (the `inferscope-bench sim` flags are `crate::cli::SimArgs`).
//!
//! Source: docs/architecture.md (the built-in simulator is the embedded default
//! endpoint and the test double). The latency model follows llm-d-inference-sim's
//! `per-token` calculator (docs/measurement.md): only uncached prompt
//! tokens cost prefill time.

use super::power::PowerModel;

/// Default served model name (`GET /v1/models`, the `model_name` metric label).
pub const DEFAULT_MODEL: &str = "inferscope-sim";
/// Default seed of every simulated random choice (output words, ITL jitter).
pub const DEFAULT_SEED: u64 = 0;
/// Default fixed part of TTFT, in milliseconds.
pub const DEFAULT_TTFT_BASE_MS: u64 = 20;
/// Default prefill cost per uncached prompt token, in microseconds.
pub const DEFAULT_PREFILL_US_PER_TOKEN: u64 = 20;
/// Default inter-token latency, in milliseconds.
pub const DEFAULT_ITL_MS: u64 = 5;
/// Default ITL jitter half-width, in milliseconds (uniform in ±jitter, seeded).
pub const DEFAULT_ITL_JITTER_MS: u64 = 1;
/// Default number of filler output tokens when the request sets no `max_tokens`.
pub const DEFAULT_OUTPUT_TOKENS: u32 = 16;
/// Default prefix-cache block size, in tokens (vLLM's default `--block-size`).
pub const DEFAULT_BLOCK_SIZE: u32 = 16;
/// Default prefix-cache capacity, in blocks (LRU eviction beyond it).
pub const DEFAULT_CACHE_CAPACITY_BLOCKS: u64 = 65_536;
/// Default number of tool calls a model-mode conversation gets before a final answer.
pub const DEFAULT_TOOL_TURNS: u32 = 2;
/// Default maximum number of concurrently running requests (vLLM `--max-num-seqs`);
/// requests beyond it wait and count in `vllm:num_requests_waiting`.
pub const DEFAULT_MAX_NUM_SEQS: u32 = 256;

/// Everything that shapes the simulator's behaviour.
///
/// Latency model (per request, from admission):
/// - TTFT = `ttft_base_ms` ms + `prefill_us_per_token` µs × (prompt tokens − cached tokens);
/// - each further token follows after `itl_ms` ms ± a seeded uniform jitter of
///   `itl_jitter_ms` ms (clamped at 0), so for the same seed and prompt the schedule repeats.
///
/// With every delay zero ([`SimConfig::zero_delay`]) the request path never sleeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimConfig {
    /// Served model name; requests naming another model get HTTP 404.
    pub model: String,
    /// Seed of the output words and ITL jitter (a request's own `seed` overrides it).
    pub seed: u64,
    /// Fixed TTFT part, ms.
    pub ttft_base_ms: u64,
    /// Prefill cost per uncached prompt token, µs.
    pub prefill_us_per_token: u64,
    /// Inter-token latency, ms.
    pub itl_ms: u64,
    /// ITL jitter half-width, ms (seeded uniform in ±jitter).
    pub itl_jitter_ms: u64,
    /// Filler tokens of a text answer (after its `Answer:` prefix); `max_tokens` /
    /// `max_completion_tokens` caps the whole answer (finish reason `length`).
    pub default_output_tokens: u32,
    /// Prefix-cache block size, tokens (≥ 1).
    pub block_size: u32,
    /// Prefix-cache capacity, blocks; 0 disables caching.
    pub cache_capacity_blocks: u64,
    /// Tool calls per user turn before a final text answer, when tools are offered.
    pub tool_turns: u32,
    /// Maximum concurrently running requests; 0 means unlimited.
    pub max_num_seqs: u32,
    /// Injected faults (all off by default).
    pub faults: FaultConfig,
    /// Simulated power model behind [`super::SimState::power_mw`].
    pub power: PowerModel,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            model: DEFAULT_MODEL.to_string(),
            seed: DEFAULT_SEED,
            ttft_base_ms: DEFAULT_TTFT_BASE_MS,
            prefill_us_per_token: DEFAULT_PREFILL_US_PER_TOKEN,
            itl_ms: DEFAULT_ITL_MS,
            itl_jitter_ms: DEFAULT_ITL_JITTER_MS,
            default_output_tokens: DEFAULT_OUTPUT_TOKENS,
            block_size: DEFAULT_BLOCK_SIZE,
            cache_capacity_blocks: DEFAULT_CACHE_CAPACITY_BLOCKS,
            tool_turns: DEFAULT_TOOL_TURNS,
            max_num_seqs: DEFAULT_MAX_NUM_SEQS,
            faults: FaultConfig::default(),
            power: PowerModel::default(),
        }
    }
}

impl SimConfig {
    /// The default configuration with every delay set to zero (TTFT base, prefill cost,
    /// ITL, jitter): the fastest simulator, used by throughput benchmarks and tests that
    /// only check shapes and counts.
    pub fn zero_delay() -> Self {
        Self {
            ttft_base_ms: 0,
            prefill_us_per_token: 0,
            itl_ms: 0,
            itl_jitter_ms: 0,
            ..Self::default()
        }
    }

    /// True when no latency term can produce a delay (faults aside).
    pub fn has_zero_delays(&self) -> bool {
        self.ttft_base_ms == 0
            && self.prefill_us_per_token == 0
            && self.itl_ms == 0
            && self.itl_jitter_ms == 0
    }
}

/// Faults injected on every Nth chat-completion request (N counted from 1 over all chat
/// requests the simulator received; a value of 0 turns that fault off).
///
/// A single request can also force faults with the `x-inferscope-sim-fault` header (see
/// [`super::fault::FAULT_HEADER`]). Fault shapes follow field cases C07 (error object after
/// HTTP 200), C30-style hostile servers (disconnect, slow first byte) and C02/C12 (missing
/// usage):
/// - `error_mid_stream`: after half the tokens, an OpenAI error object event
///   (`{"error":{...,"code":500}}`) then `data: [DONE]`; no finish chunk, no usage.
///   Non-streaming requests get HTTP 500 with the same error body.
/// - `disconnect`: after half the tokens the connection is dropped (no final chunk).
/// - slow first byte: the response (headers included) starts `slow_first_byte_ms` later.
/// - `no_usage`: no usage chunk even when `stream_options.include_usage` is true (and no
///   `usage` field in a non-streaming body).
/// - `no_done`: the stream ends cleanly after the finish (and usage) chunk without
///   `data: [DONE]`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultConfig {
    /// Every Nth request errors mid-stream (0 = off).
    pub error_mid_stream_every: u64,
    /// Every Nth request is disconnected mid-stream (0 = off).
    pub disconnect_every: u64,
    /// Every Nth request has a slow first byte (0 = off).
    pub slow_first_byte_every: u64,
    /// The slow-first-byte delay, ms.
    pub slow_first_byte_ms: u64,
    /// Every Nth request omits usage (0 = off).
    pub no_usage_every: u64,
    /// Every Nth request omits `data: [DONE]` (0 = off).
    pub no_done_every: u64,
    /// Every Nth `POST /tokenize` answers HTTP 503 (0 = off): a transient failure of the
    /// engine's token counter.
    pub tokenize_503_every: u64,
    /// Every `POST /tokenize` after the first N answers HTTP 503 (0 = off): a counter
    /// that stops answering after the preflight.
    pub tokenize_503_after: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_delay_has_zero_delays() {
        assert!(SimConfig::zero_delay().has_zero_delays());
        assert!(!SimConfig::default().has_zero_delays());
    }
}
