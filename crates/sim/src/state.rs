//! The simulator's shared state ([`SimState`]): configuration, prefix cache, engine
//! counters and power meter, shared by the request handlers and the embedding process.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::Semaphore;

use super::cache::PrefixCache;
use super::config::SimConfig;
use super::metrics::{Counters, MetricsSnapshot};
use super::power::EnergyMeter;

/// The simulator's shared state: configuration, prefix cache, engine counters and the
/// simulated power meter. Shared by the router's handlers and readable by the embedding
/// process (power and energy reads are lock-free).
#[derive(Debug)]
pub struct SimState {
    cfg: SimConfig,
    cache: Mutex<PrefixCache>,
    pub(crate) counters: Counters,
    pub(crate) meter: EnergyMeter,
    pub(crate) seqs: Option<Arc<Semaphore>>,
    requests: AtomicU64,
    tokenize_calls: AtomicU64,
    pub(crate) created_unix_s: f64,
}

impl SimState {
    /// Fresh state (empty cache, zero counters, idle power, zero energy) for `cfg`.
    pub fn new(cfg: SimConfig) -> Self {
        let created_unix_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let seqs =
            (cfg.max_num_seqs > 0).then(|| Arc::new(Semaphore::new(cfg.max_num_seqs as usize)));
        Self {
            cache: Mutex::new(PrefixCache::new(
                cfg.block_size.max(1) as usize,
                cfg.cache_capacity_blocks,
            )),
            counters: Counters::default(),
            meter: EnergyMeter::new(cfg.power),
            seqs,
            requests: AtomicU64::new(0),
            tokenize_calls: AtomicU64::new(0),
            created_unix_s,
            cfg,
        }
    }

    /// The configuration this simulator runs with.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    /// Simulated board power now, milliwatts (see [`crate::power`]; lock-free).
    pub fn power_mw(&self) -> u64 {
        self.meter.power_mw()
    }

    /// Simulated cumulative energy since this state was created, millijoules; monotonic,
    /// integrated exactly from the power model (see [`crate::power`]; lock-free).
    pub fn energy_mj(&self) -> u64 {
        self.meter.energy_mj()
    }

    /// Counts one `POST /tokenize` and says whether the fault rules
    /// ([`FaultConfig::tokenize_503_every`], [`FaultConfig::tokenize_503_after`]) fail it.
    pub(crate) fn tokenize_fails(&self) -> bool {
        let n = self.tokenize_calls.fetch_add(1, Relaxed) + 1;
        let f = &self.cfg.faults;
        (f.tokenize_503_every != 0 && n.is_multiple_of(f.tokenize_503_every))
            || (f.tokenize_503_after != 0 && n > f.tokenize_503_after)
    }

    /// Chat-completion requests received so far (including rejected ones).
    pub fn requests_received(&self) -> u64 {
        self.requests.load(Relaxed)
    }

    /// Empties the prefix cache (the engine counters keep counting). The runner does this
    /// at the start of every job on the built-in simulator, so each job starts cold, as it
    /// does alone against a fresh simulator (the harness's trials, `snapshot`).
    pub fn clear_prefix_cache(&self) {
        let mut c = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        *c = PrefixCache::new(
            self.cfg.block_size.max(1) as usize,
            self.cfg.cache_capacity_blocks,
        );
    }

    /// Blocks currently held by the prefix cache.
    pub fn cached_blocks(&self) -> usize {
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len_blocks()
    }

    /// A copy of the engine metrics now.
    pub fn metrics(&self) -> MetricsSnapshot {
        let c = &self.counters;
        MetricsSnapshot {
            model_name: self.cfg.model.clone(),
            prompt_tokens_total: c.prompt_tokens.load(Relaxed),
            generation_tokens_total: c.generation_tokens.load(Relaxed),
            prefix_cache_queries_total: c.prefix_cache_queries.load(Relaxed),
            prefix_cache_hits_total: c.prefix_cache_hits.load(Relaxed),
            request_success_stop: c.success_stop.load(Relaxed),
            request_success_length: c.success_length.load(Relaxed),
            request_success_abort: c.success_abort.load(Relaxed),
            num_requests_running: c.running.load(Relaxed),
            num_requests_waiting: c.waiting.load(Relaxed),
            kv_blocks_in_use: c.kv_blocks_in_use.load(Relaxed),
            kv_capacity_blocks: self.cfg.cache_capacity_blocks,
            block_size: self.cfg.block_size,
            power_mw: self.power_mw(),
            energy_mj: self.energy_mj(),
            created_unix_s: self.created_unix_s,
        }
    }

    /// The `/metrics` body (Prometheus text format 0.0.4).
    pub fn render_metrics(&self) -> String {
        self.metrics().render_prometheus()
    }

    pub(crate) fn next_request_number(&self) -> u64 {
        self.requests.fetch_add(1, Relaxed) + 1
    }

    pub(crate) fn lookup_and_insert(&self, hashes: &[u64], prompt_tokens: usize) -> usize {
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .lookup_and_insert(hashes, prompt_tokens)
    }
}
