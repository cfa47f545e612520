//! `inferscope-bench sim` flags, turned into the simulator's plain
//! [`SimConfig`](crate::sim::SimConfig) and a socket address at the edge (the simulator
//! itself knows no clap).

use std::net::IpAddr;

use crate::sim::PowerModel;
use crate::sim::config::*;

/// Arguments of `inferscope-bench sim` (flatten into the CLI's subcommand).
///
/// Every latency figure is an integer in the unit its name says; defaults are the
/// `DEFAULT_*` constants of this module.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct SimArgs {
    /// IP address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: IpAddr,
    /// TCP port to listen on (0 picks a free port).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Served model name.
    #[arg(long, default_value_t = DEFAULT_MODEL.to_string())]
    pub model: String,
    /// Seed of output words and ITL jitter.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Fixed TTFT part, milliseconds.
    #[arg(long = "ttft-ms", default_value_t = DEFAULT_TTFT_BASE_MS)]
    pub ttft_ms: u64,
    /// Prefill cost per uncached prompt token, microseconds.
    #[arg(long, default_value_t = DEFAULT_PREFILL_US_PER_TOKEN)]
    pub prefill_us_per_token: u64,
    /// Inter-token latency, milliseconds.
    #[arg(long, default_value_t = DEFAULT_ITL_MS)]
    pub itl_ms: u64,
    /// ITL jitter half-width, milliseconds.
    #[arg(long, default_value_t = DEFAULT_ITL_JITTER_MS)]
    pub itl_jitter_ms: u64,
    /// Filler output tokens when a request sets no max_tokens.
    #[arg(long, default_value_t = DEFAULT_OUTPUT_TOKENS)]
    pub output_tokens: u32,
    /// Prefix-cache block size, tokens.
    #[arg(long, default_value_t = DEFAULT_BLOCK_SIZE,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub block_size: u32,
    /// Prefix-cache capacity, blocks (0 disables caching).
    #[arg(long, default_value_t = DEFAULT_CACHE_CAPACITY_BLOCKS)]
    pub cache_capacity_blocks: u64,
    /// Tool calls per user turn before a final answer.
    #[arg(long, default_value_t = DEFAULT_TOOL_TURNS)]
    pub tool_turns: u32,
    /// Maximum concurrently running requests (0 = unlimited).
    #[arg(long, default_value_t = DEFAULT_MAX_NUM_SEQS)]
    pub max_num_seqs: u32,
    /// Every Nth request sends an error object mid-stream (0 = off).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fault_error_mid_stream_every: u64,
    /// Every Nth request is disconnected mid-stream (0 = off).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fault_disconnect_every: u64,
    /// Delay before the first response byte, milliseconds (applied to every Nth request,
    /// see --fault-slow-first-byte-every; every request when that is not given).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub slow_first_byte_ms: u64,
    /// Apply --slow-first-byte-ms to every Nth request only.
    #[arg(long, value_name = "N")]
    pub fault_slow_first_byte_every: Option<u64>,
    /// Every Nth request omits the usage chunk (0 = off).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fault_no_usage_every: u64,
    /// Every Nth request omits `data: [DONE]` (0 = off).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fault_no_done_every: u64,
    /// Every Nth `POST /tokenize` answers HTTP 503 (0 = off).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fault_tokenize_503_every: u64,
    /// Every `POST /tokenize` after the first N answers HTTP 503 (0 = off).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fault_tokenize_503_after: u64,
}

impl SimArgs {
    /// The [`SimConfig`] these arguments describe (power model at its defaults).
    pub fn to_config(&self) -> SimConfig {
        let slow_every = match (self.slow_first_byte_ms, self.fault_slow_first_byte_every) {
            (0, _) => 0,
            (_, Some(n)) => n,
            (_, None) => 1,
        };
        SimConfig {
            model: self.model.clone(),
            seed: self.seed,
            ttft_base_ms: self.ttft_ms,
            prefill_us_per_token: self.prefill_us_per_token,
            itl_ms: self.itl_ms,
            itl_jitter_ms: self.itl_jitter_ms,
            default_output_tokens: self.output_tokens,
            block_size: self.block_size.max(1),
            cache_capacity_blocks: self.cache_capacity_blocks,
            tool_turns: self.tool_turns,
            max_num_seqs: self.max_num_seqs,
            faults: FaultConfig {
                error_mid_stream_every: self.fault_error_mid_stream_every,
                disconnect_every: self.fault_disconnect_every,
                slow_first_byte_every: slow_every,
                slow_first_byte_ms: self.slow_first_byte_ms,
                no_usage_every: self.fault_no_usage_every,
                no_done_every: self.fault_no_done_every,
                tokenize_503_every: self.fault_tokenize_503_every,
                tokenize_503_after: self.fault_tokenize_503_after,
            },
            power: PowerModel::default(),
        }
    }

    /// The socket address `--bind` and `--port` name.
    pub fn socket_addr(&self) -> std::net::SocketAddr {
        std::net::SocketAddr::new(self.bind, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        sim: SimArgs,
    }

    #[test]
    fn cli_defaults_match_config_defaults() {
        let cli = Cli::try_parse_from(["sim"]).unwrap();
        assert_eq!(cli.sim.port, 8000);
        assert_eq!(cli.sim.bind.to_string(), "127.0.0.1");
        assert_eq!(cli.sim.to_config(), SimConfig::default());
    }

    #[test]
    fn cli_flags_reach_config() {
        let cli = Cli::try_parse_from([
            "sim",
            "--port",
            "0",
            "--model",
            "m",
            "--seed",
            "7",
            "--ttft-ms",
            "50",
            "--itl-ms",
            "10",
            "--itl-jitter-ms",
            "0",
            "--output-tokens",
            "3",
            "--tool-turns",
            "1",
            "--fault-error-mid-stream-every",
            "3",
            "--fault-disconnect-every",
            "5",
            "--slow-first-byte-ms",
            "250",
        ])
        .unwrap();
        let cfg = cli.sim.to_config();
        assert_eq!(cfg.model, "m");
        assert_eq!(cfg.seed, 7);
        assert_eq!(cfg.ttft_base_ms, 50);
        assert_eq!(cfg.itl_ms, 10);
        assert_eq!(cfg.itl_jitter_ms, 0);
        assert_eq!(cfg.default_output_tokens, 3);
        assert_eq!(cfg.tool_turns, 1);
        assert_eq!(cfg.faults.error_mid_stream_every, 3);
        assert_eq!(cfg.faults.disconnect_every, 5);
        assert_eq!(cfg.faults.slow_first_byte_ms, 250);
        assert_eq!(cfg.faults.slow_first_byte_every, 1);
        assert_eq!(cli.sim.socket_addr().port(), 0);
    }

    #[test]
    fn block_size_zero_is_rejected() {
        assert!(Cli::try_parse_from(["sim", "--block-size", "0"]).is_err());
    }
}
