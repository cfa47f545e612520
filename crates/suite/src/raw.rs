//! The suite file as written: serde structs mirroring docs/suite.md, every table
//! with `deny_unknown_fields`. Defaults are applied and cross-references checked in
//! `validate`, which turns these into the public [`super::Suite`].

use std::collections::BTreeMap;

use serde::Deserialize;

use super::load_spec::Arrival;
use super::model::{AgenticMode, EngineProfile, GpuMode, JobKindName};
use crate::gate::spec::{GateSpec, OverheadSpec};
use crate::grade::RawCheck;

/// Top level of a suite file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSuite {
    pub name: Option<String>,
    pub description: Option<String>,
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub capture_timeline: Option<bool>,
    pub seed: Option<u64>,
    pub engine: Option<EngineProfile>,
    pub request_timeout_s: Option<f64>,
    pub idle_timeout_s: Option<f64>,
    pub max_event_bytes: Option<u64>,
    pub fixtures_dir: Option<String>,
    pub extra_body: Option<toml::Table>,
    pub tokenizer: Option<String>,
    pub telemetry: Option<RawTelemetry>,
    pub gates: Option<GateSpec>,
    pub overhead: Option<OverheadSpec>,
    #[serde(default)]
    pub tools: Vec<RawTool>,
    pub jobs: Vec<RawJob>,
}

/// `[telemetry]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTelemetry {
    pub sample_period_ms: Option<u64>,
    pub metrics_period_ms: Option<u64>,
    pub metrics_url: Option<String>,
    pub metrics: Option<bool>,
    pub engine_pid: Option<u32>,
    pub include_descendants: Option<bool>,
    pub gpu: Option<GpuMode>,
    pub gpu_devices: Option<Vec<toml::Value>>,
    pub prometheus: Option<RawPrometheus>,
}

/// `[telemetry] prometheus = { url, selector, wait_s }`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPrometheus {
    pub url: Option<String>,
    pub selector: Option<String>,
    pub wait_s: Option<f64>,
}

/// `[[tools]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTool {
    pub name: String,
    pub description: Option<String>,
    pub parameters: Option<toml::Table>,
    pub latency_ms: Option<u64>,
    pub response_file: Option<String>,
    pub read_root: Option<String>,
    pub path_argument: Option<String>,
    pub responses: Option<Vec<RawResponse>>,
    pub default_text: Option<String>,
    pub default_file: Option<String>,
}

/// `[[tools.responses]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawResponse {
    pub when: toml::Table,
    pub text: Option<String>,
    pub file: Option<String>,
}

/// `[[jobs]]`: one flat struct for all kinds; which keys a kind accepts is
/// [`common_job_keys`] plus [`kind_job_keys`] (plus [`load_job_keys`] for the kinds in
/// [`load_kinds`]), enforced by the key walker.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawJob {
    pub name: String,
    pub kind: JobKindName,
    pub description: Option<String>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    pub n: Option<u32>,
    pub output_tokens: Option<u32>,
    pub repeat: Option<u32>,
    pub gates: Option<GateSpec>,
    #[serde(default)]
    pub checks: Vec<RawCheck>,
    // agentic
    pub mode: Option<AgenticMode>,
    pub system: Option<String>,
    pub task: Option<String>,
    pub tools: Option<Vec<String>>,
    pub max_steps: Option<u32>,
    pub max_repeated_tool_calls: Option<u32>,
    pub tool_choice: Option<toml::Value>,
    pub script: Option<Vec<RawScriptStep>>,
    pub replay: Option<RawReplay>,
    // context
    pub sizes: Option<Vec<u64>>,
    pub shared_prefix: Option<bool>,
    pub filler: Option<String>,
    pub dataset: Option<RawDataset>,
    // swe
    pub command: Option<Vec<String>>,
    pub timeout_s: Option<f64>,
    pub env: Option<BTreeMap<String, String>>,
    // load (agentic and context)
    pub concurrency: Option<u32>,
    pub rate: Option<f64>,
    pub arrival: Option<Arrival>,
    pub duration_s: Option<f64>,
    pub count: Option<u64>,
    pub warmup: Option<u64>,
    pub aggregation: Option<super::load_spec::Aggregation>,
    pub sweep: Option<RawSweep>,
}

/// `dataset = { path, format, block_tokens, length_scale, template_bytes, time_scale, turns }` of
/// a context job.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDataset {
    pub path: String,
    pub format: crate::dataset::DatasetFormat,
    pub block_tokens: Option<u64>,
    pub length_scale: Option<f64>,
    pub template_bytes: Option<[u32; 2]>,
    pub time_scale: Option<f64>,
    pub turns: Option<crate::dataset::Turns>,
}

/// `replay = { run, trajectory }` of an agentic job.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReplay {
    pub run: String,
    pub trajectory: String,
}

/// `sweep = { concurrency = [..] }` or `sweep = { rate = [..] }` of a job.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSweep {
    pub concurrency: Option<Vec<u32>>,
    pub rate: Option<Vec<f64>>,
}

/// `[[jobs.script]]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScriptStep {
    pub tool: String,
    #[serde(default)]
    pub arguments: toml::Table,
}

/// Keys every job kind accepts.
pub(crate) fn common_job_keys() -> &'static [&'static str] {
    &[
        "name",
        "kind",
        "description",
        "max_tokens",
        "temperature",
        "repeat",
        "gates",
        "checks",
    ]
}

/// Keys only jobs of `kind` accept.
pub(crate) fn kind_job_keys(kind: JobKindName) -> &'static [&'static str] {
    match kind {
        JobKindName::Agentic => &[
            "mode",
            "system",
            "task",
            "tools",
            "max_steps",
            "max_repeated_tool_calls",
            "tool_choice",
            "script",
            "replay",
        ],
        JobKindName::Context => &["sizes", "shared_prefix", "filler", "dataset"],
        JobKindName::Swe => &["command", "timeout_s", "env"],
    }
}

/// Request keys: settings of the chat requests the tool itself sends,
/// accepted by the kinds in [`load_kinds`] (an SWE harness sends its own requests).
pub(crate) fn request_job_keys() -> &'static [&'static str] {
    &["n", "output_tokens"]
}

/// Load keys: accepted by the kinds in [`load_kinds`].
pub(crate) fn load_job_keys() -> &'static [&'static str] {
    &[
        "concurrency",
        "rate",
        "arrival",
        "duration_s",
        "count",
        "warmup",
        "aggregation",
        "sweep",
    ]
}

/// The job kinds that run under load (agentic trajectories, context requests); an SWE
/// harness drives the endpoint itself.
pub(crate) fn load_kinds() -> &'static [JobKindName] {
    &[JobKindName::Agentic, JobKindName::Context]
}
