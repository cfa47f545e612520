//! inferscope-bench: a benchmark runner for OpenAI-compatible LLM inference endpoints
//! (vLLM, SGLang, llama.cpp, anything OpenAI-compatible).
//!
//! It reads declarative TOML suites ([`suite`]), drives context, agentic and SWE jobs
//! against an endpoint or the built-in simulator ([`sim`]) with a streaming client
//! ([`client`]) and fixture tools ([`tools`]), records phase, request and tool spans on one
//! monotonic clock ([`clock`], [`timeline`]), samples GPU power, the engine's `/proc` and
//! its `/metrics` ([`telemetry`]), attributes energy and prefix-cache behaviour to each step
//! of each trajectory ([`attribution`], docs/measurement.md), and turns the results into pass/fail gates
//! ([`gate`]) with nextest-style output ([`render`]). Jobs can run under load —
//! trajectories in flight, seeded arrival rates, sweeps ([`runner::load`]) — be compared with saved
//! baselines ([`baseline`]), be exported as OTLP trace spans ([`otlp`]), and be divided
//! among shards on several machines and merged back ([`shard`]). Everything a
//! run reports is one typed model ([`model`]): every figure with its basis.
//!
//! Pure logic (parsing, statistics, attribution, gates) does no I/O; I/O lives at the edges
//! (`client`, `telemetry`, `timeline` persistence, `sim`, `runner`).

pub mod cli;
pub mod commands;
pub mod offline;
pub mod overhead;
pub mod reporter;

// The workspace crates (crates/*), under the paths the rest of the library and its users
// name them by: the driver (`inferscope-driver`) is `runner`, with its `tools`, `shard`,
// `baseline` and `run_dir`; the suite schema (`inferscope-suite`) is `suite`, with `grade`
// and `json`; the nextest harness (`inferscope-harness`) is `harness`.
pub use inferscope_attribution as attribution;
pub use inferscope_client as client;
pub use inferscope_clock as clock;
pub use inferscope_driver as runner;
pub use inferscope_driver::{baseline, run_dir, shard, tools};
pub use inferscope_fsio as fsio;
pub use inferscope_gate as gate;
pub use inferscope_harness as harness;
pub use inferscope_model as model;
pub use inferscope_model::stats;
pub use inferscope_otlp as otlp;
pub use inferscope_records as records;
pub use inferscope_redact as redact;
pub use inferscope_render as render;
pub use inferscope_report as report;
pub use inferscope_serve as serve;
pub use inferscope_sim as sim;
pub use inferscope_suite as suite;
pub use inferscope_suite::{grade, json};
pub use inferscope_telemetry as telemetry;
pub use inferscope_timeline as timeline;
