//! The simulator's engine counters and their Prometheus text exposition (format 0.0.4),
//! with vLLM V1 names (docs/telemetry.md "Engine counters and profiles"; field case C13 shape).
//!
//! When counters move (documented, vLLM-like per step rather than at completion):
//! - `vllm:prefix_cache_queries_total` / `vllm:prefix_cache_hits_total` (tokens, as vLLM
//!   V1 counts them): at admission, + prompt tokens / + cached tokens;
//! - `vllm:prompt_tokens_total` (full prompt incl. cached, V1 semantics): when the first
//!   token is sent;
//! - `vllm:generation_tokens_total`: as each batch of tokens is sent (per token when the
//!   ITL is non-zero);
//! - `vllm:request_success_total{finished_reason}`: when a request ends: `stop` (also tool
//!   calls), `length`, or `abort` (fault injected, or the client went away).
//!
//! Every series carries `engine="0"` and `model_name`; counters also expose `_created`
//! gauges as Python's prometheus_client does. The simulated power and energy appear as
//! `inferscope_sim:power_milliwatts` and `inferscope_sim:energy_millijoules_total`,
//! labelled simulated in their HELP text.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Live counters (relaxed atomics; each value is independently exact).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub prompt_tokens: AtomicU64,
    pub generation_tokens: AtomicU64,
    pub prefix_cache_queries: AtomicU64,
    pub prefix_cache_hits: AtomicU64,
    pub success_stop: AtomicU64,
    pub success_length: AtomicU64,
    pub success_abort: AtomicU64,
    pub running: AtomicU64,
    pub waiting: AtomicU64,
    pub kv_blocks_in_use: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Relaxed);
    }

    pub(crate) fn sub(c: &AtomicU64, n: u64) {
        // Saturating decrement; the guards never underflow, but a gauge must not wrap.
        let _ = c.fetch_update(Relaxed, Relaxed, |v| Some(v.saturating_sub(n)));
    }
}

/// A point-in-time copy of the simulator's engine metrics.
#[derive(Clone, Debug, PartialEq)]
pub struct MetricsSnapshot {
    /// Served model name (the `model_name` label).
    pub model_name: String,
    /// `vllm:prompt_tokens_total`, tokens (cached included).
    pub prompt_tokens_total: u64,
    /// `vllm:generation_tokens_total`, tokens.
    pub generation_tokens_total: u64,
    /// `vllm:prefix_cache_queries_total`, tokens.
    pub prefix_cache_queries_total: u64,
    /// `vllm:prefix_cache_hits_total`, tokens.
    pub prefix_cache_hits_total: u64,
    /// `vllm:request_success_total{finished_reason="stop"}`, requests.
    pub request_success_stop: u64,
    /// `vllm:request_success_total{finished_reason="length"}`, requests.
    pub request_success_length: u64,
    /// `vllm:request_success_total{finished_reason="abort"}`, requests.
    pub request_success_abort: u64,
    /// `vllm:num_requests_running`, requests.
    pub num_requests_running: u64,
    /// `vllm:num_requests_waiting`, requests.
    pub num_requests_waiting: u64,
    /// KV blocks held by running requests (prompt + planned output), blocks.
    pub kv_blocks_in_use: u64,
    /// Capacity, blocks (`num_gpu_blocks`).
    pub kv_capacity_blocks: u64,
    /// Block size, tokens.
    pub block_size: u32,
    /// Simulated board power, mW.
    pub power_mw: u64,
    /// Simulated cumulative energy, mJ.
    pub energy_mj: u64,
    /// Unix time the counters were created, seconds (the `_created` gauges).
    pub created_unix_s: f64,
}

impl MetricsSnapshot {
    /// `vllm:kv_cache_usage_perc`: blocks in use / capacity, in 0..=1 (0 when the
    /// capacity is 0).
    pub fn kv_cache_usage_perc(&self) -> f64 {
        if self.kv_capacity_blocks == 0 {
            return 0.0;
        }
        (self.kv_blocks_in_use as f64 / self.kv_capacity_blocks as f64).clamp(0.0, 1.0)
    }

    /// All `vllm:request_success_total` series summed, requests.
    pub fn request_success_total(&self) -> u64 {
        self.request_success_stop + self.request_success_length + self.request_success_abort
    }

    /// The Prometheus text exposition (format 0.0.4) of this snapshot.
    pub fn render_prometheus(&self) -> String {
        let mut out = String::with_capacity(4096);
        let model = escape_label(&self.model_name);
        let labels = format!("engine=\"0\",model_name=\"{model}\"");
        let counters: [(&str, &str, u64); 4] = [
            (
                "vllm:prompt_tokens",
                "Number of prefill tokens processed.",
                self.prompt_tokens_total,
            ),
            (
                "vllm:generation_tokens",
                "Number of generation tokens processed.",
                self.generation_tokens_total,
            ),
            (
                "vllm:prefix_cache_queries",
                "Prefix cache queries, in terms of number of queried tokens.",
                self.prefix_cache_queries_total,
            ),
            (
                "vllm:prefix_cache_hits",
                "Prefix cache hits, in terms of number of cached tokens.",
                self.prefix_cache_hits_total,
            ),
        ];
        for (name, help, v) in counters {
            counter(&mut out, name, help, &labels, v, self.created_unix_s);
        }
        let name = "vllm:request_success";
        let help = "Count of successfully processed requests.";
        let _ = writeln!(out, "# HELP {name}_total {help}");
        let _ = writeln!(out, "# TYPE {name}_total counter");
        for (reason, v) in [
            ("abort", self.request_success_abort),
            ("length", self.request_success_length),
            ("stop", self.request_success_stop),
        ] {
            let _ = writeln!(
                out,
                "{name}_total{{engine=\"0\",finished_reason=\"{reason}\",model_name=\"{model}\"}} {v}.0"
            );
        }
        let _ = writeln!(out, "# HELP {name}_created {help}");
        let _ = writeln!(out, "# TYPE {name}_created gauge");
        for reason in ["abort", "length", "stop"] {
            let _ = writeln!(
                out,
                "{name}_created{{engine=\"0\",finished_reason=\"{reason}\",model_name=\"{model}\"}} {:?}",
                self.created_unix_s
            );
        }
        gauge(
            &mut out,
            "vllm:num_requests_running",
            "Number of requests in model execution batches.",
            &labels,
            &format!("{}.0", self.num_requests_running),
        );
        gauge(
            &mut out,
            "vllm:num_requests_waiting",
            "Number of requests waiting to be processed.",
            &labels,
            &format!("{}.0", self.num_requests_waiting),
        );
        gauge(
            &mut out,
            "vllm:kv_cache_usage_perc",
            "KV-cache usage. 1 means 100 percent usage.",
            &labels,
            &format!("{:?}", self.kv_cache_usage_perc()),
        );
        let info_labels = format!(
            "block_size=\"{}\",enable_prefix_caching=\"{}\",engine=\"0\",model_name=\"{model}\",num_gpu_blocks=\"{}\"",
            self.block_size,
            if self.kv_capacity_blocks > 0 {
                "True"
            } else {
                "False"
            },
            self.kv_capacity_blocks
        );
        gauge(
            &mut out,
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            &info_labels,
            "1.0",
        );
        gauge(
            &mut out,
            "inferscope_sim:power_milliwatts",
            "Simulated board power in milliwatts (simulated, not measured).",
            &labels,
            &format!("{}.0", self.power_mw),
        );
        let _ = writeln!(
            out,
            "# HELP inferscope_sim:energy_millijoules_total Simulated cumulative energy in millijoules (simulated, not measured)."
        );
        let _ = writeln!(
            out,
            "# TYPE inferscope_sim:energy_millijoules_total counter"
        );
        let _ = writeln!(
            out,
            "inferscope_sim:energy_millijoules_total{{{labels}}} {}.0",
            self.energy_mj
        );
        out
    }
}

fn counter(out: &mut String, name: &str, help: &str, labels: &str, v: u64, created: f64) {
    let _ = writeln!(out, "# HELP {name}_total {help}");
    let _ = writeln!(out, "# TYPE {name}_total counter");
    let _ = writeln!(out, "{name}_total{{{labels}}} {v}.0");
    let _ = writeln!(out, "# HELP {name}_created {help}");
    let _ = writeln!(out, "# TYPE {name}_created gauge");
    let _ = writeln!(out, "{name}_created{{{labels}}} {created:?}");
}

fn gauge(out: &mut String, name: &str, help: &str, labels: &str, v: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
    let _ = writeln!(out, "{name}{{{labels}}} {v}");
}

/// Escapes a label value per the text format (backslash, double quote, newline).
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap() -> MetricsSnapshot {
        MetricsSnapshot {
            model_name: "m\"x".into(),
            prompt_tokens_total: 100,
            generation_tokens_total: 20,
            prefix_cache_queries_total: 100,
            prefix_cache_hits_total: 64,
            request_success_stop: 2,
            request_success_length: 1,
            request_success_abort: 0,
            num_requests_running: 1,
            num_requests_waiting: 0,
            kv_blocks_in_use: 16384,
            kv_capacity_blocks: 65536,
            block_size: 16,
            power_mw: 60_000,
            energy_mj: 1234,
            created_unix_s: 1.75e9,
        }
    }

    #[test]
    fn exposition_lines() {
        let s = snap();
        assert_eq!(s.kv_cache_usage_perc(), 0.25);
        assert_eq!(s.request_success_total(), 3);
        let text = s.render_prometheus();
        for line in [
            "# TYPE vllm:prompt_tokens_total counter",
            "vllm:prompt_tokens_total{engine=\"0\",model_name=\"m\\\"x\"} 100.0",
            "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"m\\\"x\"} 64.0",
            "# TYPE vllm:prefix_cache_hits_created gauge",
            "vllm:request_success_total{engine=\"0\",finished_reason=\"stop\",model_name=\"m\\\"x\"} 2.0",
            "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\\\"x\"} 0.25",
            "# TYPE vllm:num_requests_waiting gauge",
            "vllm:num_requests_running{engine=\"0\",model_name=\"m\\\"x\"} 1.0",
            "inferscope_sim:energy_millijoules_total{engine=\"0\",model_name=\"m\\\"x\"} 1234.0",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}\n{text}");
        }
        // Every sample line belongs to a family declared by a TYPE line before it.
        let mut declared = Vec::new();
        for l in text.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                declared.push(rest.split(' ').next().unwrap().to_string());
            } else if !l.starts_with('#') {
                let name = l.split(['{', ' ']).next().unwrap();
                assert_eq!(declared.last().map(String::as_str), Some(name), "{l}");
            }
        }
    }

    #[test]
    fn zero_capacity_usage_is_zero() {
        let s = MetricsSnapshot {
            kv_capacity_blocks: 0,
            ..snap()
        };
        assert_eq!(s.kv_cache_usage_perc(), 0.0);
    }
}
