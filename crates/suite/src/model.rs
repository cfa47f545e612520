//! The loaded suite: defaults applied, paths resolved, cross-references checked.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::load_spec::LoadSpec;
use crate::gate::spec::{GateSpec, OverheadSpec};
use crate::grade::Check;

/// Default model name when the built-in simulator is the endpoint.
pub const SIM_MODEL: &str = "inferscope-sim";
/// Default per-request timeout, seconds (`request_timeout_s`).
pub const DEFAULT_REQUEST_TIMEOUT_S: f64 = 120.0;
/// Default idle-stream timeout, seconds (`idle_timeout_s`); SSE comments reset it.
pub const DEFAULT_IDLE_TIMEOUT_S: f64 = 30.0;
/// Default largest accepted SSE event, bytes (`max_event_bytes`, field case C30: 16 MiB).
pub const DEFAULT_MAX_EVENT_BYTES: u64 = 16 * 1024 * 1024;
/// Default /proc and GPU sampling period, ms (docs/samples.md).
pub const DEFAULT_SAMPLE_PERIOD_MS: u64 = 50;
/// Default `/metrics` scrape period, ms: on vLLM every step whose tail (end − first token)
/// spans one period had prompt and cache deltas equal to usage at 50, 100 and 200 ms, and a
/// scrape costs its API server about 7 ms of CPU; 100 ms halves the 50 ms cost and resolved
/// every step of the measured runs (docs/measurement.md, "Counter deltas of short steps").
pub const DEFAULT_METRICS_PERIOD_MS: u64 = 100;
/// Most choices per LLM call a job may ask for (`n`): OpenAI's own limit.
pub const MAX_CHOICES: u32 = 128;

/// Default `max_tokens` per LLM call.
pub const DEFAULT_MAX_TOKENS: u32 = 64;
/// Default `max_steps` (LLM calls) of an agentic job.
pub const DEFAULT_MAX_STEPS: u32 = 8;
/// Default number of identical consecutive tool calls that stop an agentic loop.
pub const DEFAULT_MAX_REPEATED_TOOL_CALLS: u32 = 3;
/// Default SWE harness timeout, seconds.
pub const DEFAULT_SWE_TIMEOUT_S: f64 = 300.0;
/// Largest context-job prompt size, approximate tokens (`sizes`): 10,000,000 tokens is a
/// 40 MB filler prompt, above any served context window; larger values would only fail
/// the in-memory filler allocation.
pub const MAX_PROMPT_TOKENS: u32 = 10_000_000;
/// Decimal digits reserved for each counter the runner writes into a step id (10, the
/// width of `u32::MAX`): `repeat`, `count` and prompt sizes are `u32` in the suite, and a
/// point or unit index past 4,294,967,295 would need that many sweep values or requests in
/// one point. An id that still overflowed would be rejected by the timeline
/// (`invalid_case_id`, a visible `partial` capture), never written.
const COUNTER_DIGITS: usize = u32::MAX.ilog10() as usize + 1;
/// Longest text the runner appends to a job id (`suite::job`) to form an id the timeline
/// receives, bytes (48): a load-sweep context request id
/// `{job_id}.tp{point}.{k}.s{size}.r{r}` with every counter at [`COUNTER_DIGITS`]; every
/// other shape (`#{r}`, `#p{point}.{k}/s{size}r{r}`, `.t{r}.llm{n}`, `.t0.s{size}.r{r}`,
/// …) is shorter.
pub const MAX_ID_SUFFIX_LEN: usize = ".tp".len()
    + COUNTER_DIGITS
    + ".".len()
    + COUNTER_DIGITS
    + ".s".len()
    + COUNTER_DIGITS
    + ".r".len()
    + COUNTER_DIGITS;
/// Longest job id `suite::job`, bytes (80): the timeline's
/// [`MAX_ID_LEN`](crate::timeline::ids::MAX_ID_LEN) less [`MAX_ID_SUFFIX_LEN`], so every
/// case id and request id built from it passes the timeline's id checks (a longer one
/// would be rejected as `invalid_case_id` and turn the timeline partial), and the
/// snapshot file `<job id>.snap.new` stays far below file-name limits. Suite loading
/// refuses a suite `name` or `jobs[i].name` that makes a longer id.
pub const MAX_JOB_ID_LEN: usize = crate::timeline::ids::MAX_ID_LEN - MAX_ID_SUFFIX_LEN;
/// Environment variables the SWE driver always exports; a job's `env` may not set them.
pub const RESERVED_SWE_ENV: [&str; 3] = [
    "INFERSCOPE_ENDPOINT",
    "INFERSCOPE_MODEL",
    "INFERSCOPE_STEPS_FILE",
];

/// Metric profile of the endpoint (`engine`): which `/metrics` names and usage fields to
/// read (docs/architecture.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineProfile {
    /// Detect from `/metrics` names.
    #[default]
    Auto,
    /// vLLM V1 (`vllm:*`).
    Vllm,
    /// SGLang (`sglang:*`).
    Sglang,
    /// llama.cpp `llama-server` (`llamacpp:*`, `timings.cache_n`).
    Llamacpp,
    /// The built-in simulator (vLLM names).
    Sim,
}

impl EngineProfile {
    /// The name used in suites.
    pub fn as_str(self) -> &'static str {
        match self {
            EngineProfile::Auto => "auto",
            EngineProfile::Vllm => "vllm",
            EngineProfile::Sglang => "sglang",
            EngineProfile::Llamacpp => "llamacpp",
            EngineProfile::Sim => "sim",
        }
    }
}

/// `telemetry.gpu`: sample GPUs through NVML when available, or never.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GpuMode {
    /// Sample when NVML and a device are present; otherwise the source is unavailable.
    #[default]
    Auto,
    /// Do not sample GPUs.
    Off,
}

impl GpuMode {
    /// The name used in suites.
    pub fn as_str(self) -> &'static str {
        match self {
            GpuMode::Auto => "auto",
            GpuMode::Off => "off",
        }
    }
}

/// `jobs.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JobKindName {
    /// LLM calls interleaved with fixture-tool calls.
    Agentic,
    /// Long-prompt sweeps.
    Context,
    /// An external harness process.
    Swe,
}

impl JobKindName {
    /// The name used in suites and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            JobKindName::Agentic => "agentic",
            JobKindName::Context => "context",
            JobKindName::Swe => "swe",
        }
    }

    /// All kinds, in schema order.
    pub const ALL: [JobKindName; 3] =
        [JobKindName::Agentic, JobKindName::Context, JobKindName::Swe];
}

/// `jobs.mode` of an agentic job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AgenticMode {
    /// The model chooses tool calls; loop to a final answer or `max_steps`.
    Model,
    /// A fixed trajectory (`[[jobs.script]]`), then one final graded LLM call.
    Scripted,
    /// A recorded trajectory's shape (`replay = { run, trajectory }`): prompts
    /// synthesized to the recorded sizes, fixed outputs, tools as sleeps.
    Replay,
}

impl AgenticMode {
    /// The name used in suites.
    pub fn as_str(self) -> &'static str {
        match self {
            AgenticMode::Model => "model",
            AgenticMode::Scripted => "scripted",
            AgenticMode::Replay => "replay",
        }
    }
}

/// `[telemetry]` with defaults applied.
#[derive(Debug, Clone, PartialEq)]
pub struct Telemetry {
    /// /proc and GPU sampling period, ms (default 50).
    pub sample_period_ms: u64,
    /// `/metrics` scrape period, ms (default 200).
    pub metrics_period_ms: u64,
    /// Explicit `/metrics` URL; `None` = derived from the endpoint
    /// ([`super::metrics_url_for`]).
    pub metrics_url: Option<String>,
    /// Whether to scrape `/metrics` (default true).
    pub metrics: bool,
    /// Engine process to sample under /proc; `None` = no /proc sampling.
    pub engine_pid: Option<u32>,
    /// Include the engine's descendant processes (vLLM runs several).
    pub include_descendants: bool,
    /// GPU sampling mode (default auto).
    pub gpu: GpuMode,
    /// GPUs the run may sample and attribute, by NVML index or UUID; `None` = the
    /// environment's `CUDA_VISIBLE_DEVICES`, else every device
    /// ([`crate::telemetry::gpu`]).
    pub gpu_devices: Option<Vec<crate::telemetry::GpuSelector>>,
    /// A Prometheus server to read the engine counters from after the run.
    pub prometheus: Option<PrometheusSource>,
}

/// `[telemetry] prometheus = { url = "...", selector = '{job="vllm"}' }`.
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusSource {
    /// Base URL of the Prometheus server (no trailing `/`).
    pub url: String,
    /// Label matchers in braces; empty for none.
    pub selector: String,
    /// Longest wait after the run for a scrape past its end, s (default 10).
    pub wait_s: f64,
}

/// Default `telemetry.prometheus.wait_s`.
pub const DEFAULT_PROMETHEUS_WAIT_S: f64 = 10.0;

/// A fixture tool declared in `[[tools]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// `[a-z][a-z0-9_]{0,63}`, unique in the suite.
    pub name: String,
    /// Shown to the model (default empty).
    pub description: String,
    /// JSON-schema object of the arguments (`{"type":"object",...}`); default
    /// `{"type":"object","properties":{}}`.
    pub parameters: serde_json::Value,
    /// Simulated execution time, awaited by the driver (default 0).
    pub latency: Duration,
    /// Where the tool's output comes from.
    pub source: ToolSource,
}

/// The response source of a fixture tool (exactly one per tool).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolSource {
    /// `response_file`: the same content for every call.
    File(PathBuf),
    /// `read_root` + `path_argument`: returns the file named by that argument under
    /// `root` (sandboxed: `..`, absolute paths and escaping symlinks are tool errors).
    ReadRoot {
        /// The directory under the fixtures root.
        root: PathBuf,
        /// The argument that names the file.
        path_argument: String,
    },
    /// `[[tools.responses]]`: the first entry whose `when` equals the arguments
    /// (parsed-JSON equality), else `default`, else a `no_matching_response` tool error.
    Table {
        /// Entries in file order.
        responses: Vec<ToolResponse>,
        /// `default_text` / `default_file`.
        default: Option<ResponseBody>,
    },
}

/// One row of a response table.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolResponse {
    /// The arguments this row answers (a JSON object).
    pub when: serde_json::Value,
    /// The content returned.
    pub body: ResponseBody,
}

/// Inline text or a file under the fixtures root.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseBody {
    /// Inline text.
    Text(String),
    /// A file (checked to exist at load, read when the tool registry is built).
    File(PathBuf),
}

/// A job of a suite.
#[derive(Debug, Clone)]
pub struct Job {
    /// `[A-Za-z0-9_.-]+`, unique in the suite.
    pub name: String,
    /// `"{suite}::{job}"`, the id used in output, reports and `--filter`.
    pub id: String,
    /// Position of the job in the file (0-based).
    pub index: usize,
    /// Free text.
    pub description: Option<String>,
    /// `max_tokens` per LLM call (default 64).
    pub max_tokens: u32,
    /// Sampling temperature (default 0.0).
    pub temperature: f64,
    /// `output_tokens` (agentic and context jobs): every request asks for exactly
    /// this many output tokens per choice (`max_tokens` = this, plus the engines'
    /// `ignore_eos` / `min_tokens`); `None` = the `max_tokens` cap only.
    pub output_tokens: Option<u32>,
    /// Choices per LLM call (`n`, 1..=[`MAX_CHOICES`]; agentic and context jobs): `None`
    /// sends no `n` (one choice). With more than one, each choice is measured on its own
    /// and choice 0 drives the trajectory and is graded.
    pub n: Option<u32>,
    /// Trajectories (agentic), sweeps (context) or runs (swe); default 1.
    pub repeat: u32,
    /// The job's own `[jobs.gates]` (not merged; see [`super::Suite::gates_for`]); passes
    /// [`crate::gate::validate_spec`], so the merged gates do too.
    pub gates: GateSpec,
    /// Grading checks, all must pass.
    pub checks: Vec<Check>,
    /// Kind-specific settings.
    pub kind: JobKind,
    /// Load settings (`concurrency`, `rate`, `arrival`, `duration_s`, `count`, `warmup`,
    /// `sweep`; agentic and context jobs); `None` = the sequential drivers, one trajectory
    /// in flight (see `load`).
    pub load: Option<LoadSpec>,
}

impl Job {
    /// The job's kind name.
    pub fn kind_name(&self) -> JobKindName {
        match self.kind {
            JobKind::Agentic(_) => JobKindName::Agentic,
            JobKind::Context(_) => JobKindName::Context,
            JobKind::Swe(_) => JobKindName::Swe,
        }
    }
}

/// Kind-specific job settings.
#[derive(Debug, Clone, PartialEq)]
pub enum JobKind {
    /// `kind = "agentic"`.
    Agentic(AgenticJob),
    /// `kind = "context"`.
    Context(ContextJob),
    /// `kind = "swe"`.
    Swe(SweJob),
}

/// Settings of an agentic job.
#[derive(Debug, Clone, PartialEq)]
pub struct AgenticJob {
    /// Model-driven or scripted.
    pub mode: AgenticMode,
    /// System prompt, if any.
    pub system: Option<String>,
    /// The user message.
    pub task: String,
    /// Tools offered to the model, each declared in `[[tools]]`.
    pub tools: Vec<String>,
    /// LLM calls at most (default 8).
    pub max_steps: u32,
    /// Identical consecutive tool calls (parsed-JSON equality) that stop the loop with
    /// `stop_reason = repeated_tool_call` (default 3).
    pub max_repeated_tool_calls: u32,
    /// OpenAI `tool_choice` per LLM call (model mode): entry `n` for the n-th call, the
    /// last entry for every later one (`["required", "auto"]`: a tool call first, then the
    /// model's choice); empty = not sent (the engine's default).
    pub tool_choice: Vec<String>,
    /// The fixed trajectory (scripted mode only; empty in model mode).
    pub script: Vec<ScriptStep>,
    /// The recorded trajectory (replay mode only).
    pub replay: Option<ReplaySource>,
}

/// `replay = { run, trajectory }` of an agentic job: where the shape was read, and the
/// shape (read when the suite is loaded, so bad input stops the run before any request).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySource {
    /// The run directory (resolved against the suite file's directory).
    pub run: std::path::PathBuf,
    /// The recorded trajectory's shape.
    pub shape: std::sync::Arc<crate::replay::TrajectoryShape>,
}

/// One scripted tool call.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptStep {
    /// Tool name (declared and listed in the job's `tools`).
    pub tool: String,
    /// Arguments as a JSON object, valid against the tool's parameters.
    pub arguments: serde_json::Value,
}

/// Settings of a context job.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextJob {
    /// Prompt sizes in approximate tokens (4 bytes per token), each ≥ 1.
    pub sizes: Vec<u32>,
    /// With `repeat > 1`, repeats reuse the same prompt (default false).
    pub shared_prefix: bool,
    /// Filler source under the fixtures root; `None` = built-in filler.
    pub filler: Option<PathBuf>,
    /// `dataset`: the prompts of a file instead of `sizes` (then empty).
    pub dataset: Option<Dataset>,
}

impl ContextJob {
    /// Requests of one pass: one per size, or one per dataset entry.
    pub fn units_per_repeat(&self) -> usize {
        self.dataset
            .as_ref()
            .map_or(self.sizes.len(), |d| d.entries.len())
    }
}

/// Default `dataset.block_tokens`: the Mooncake traces' block size.
pub const DEFAULT_BLOCK_TOKENS: u32 = 512;
/// Largest dataset file read, bytes.
pub const MAX_DATASET_BYTES: u64 = 256 * 1024 * 1024;

/// A context job's `dataset`, read and checked at load.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// The file (under the fixtures root).
    pub path: PathBuf,
    /// `format`.
    pub format: crate::dataset::DatasetFormat,
    /// `block_tokens` (Mooncake; default 512): tokens per hash id.
    pub block_tokens: u32,
    /// `length_scale` (default 1): every prompt and output length is multiplied by it
    /// (Mooncake prompts keep their block structure: blocks scale too).
    pub length_scale: f64,
    /// `template_bytes = [head, tail]` (Mooncake; default `[0, 0]`): the chat template's
    /// bytes before and after the prompt's content (the simulator's are `[17, 33]`). A
    /// synthesized prompt's content is then `4 × length − head − tail` bytes and block 0
    /// carries the head, so the engine's token blocks fall on the trace's blocks.
    pub template_bytes: [u32; 2],
    /// `time_scale` (Mooncake): requests arrive open loop at their recorded `timestamp`
    /// (ms from the first) multiplied by it; `None` = file order, closed loop or `rate`.
    pub time_scale: Option<f64>,
    /// `turns` (ShareGPT; default `first`): the first `human` turn of each conversation, or
    /// every one as a request carrying the turns before it (a multi-turn session).
    pub turns: crate::dataset::Turns,
    /// The entries, in file order.
    pub entries: Arc<Vec<crate::dataset::DatasetEntry>>,
}

/// `round(v × scale)`, at least 1 (a float past `u64::MAX` saturates).
pub fn scaled_length(v: u64, scale: f64) -> u64 {
    ((v as f64 * scale).round() as u64).max(1)
}

impl Dataset {
    /// A Mooncake block's tokens, scaled: `round(block_tokens × length_scale)`, at least 1.
    pub fn block_size(&self) -> u64 {
        scaled_length(u64::from(self.block_tokens), self.length_scale)
    }

    /// The prompt tokens a Mooncake entry of `input_tokens` over `k` hash ids asks for:
    /// its length scaled, kept within its `k` blocks (`((k − 1) × b, k × b]` for the
    /// scaled block `b`) and at least what puts the chat template's tail in the last block
    /// (and head and tail in a single one), so the first `k − 1` blocks stay whole.
    pub fn block_prompt_tokens(&self, input_tokens: u64, k: u64) -> u64 {
        let b = self.block_size();
        let [head, tail] = self.template_bytes.map(u64::from);
        let full = (k.max(1) - 1).saturating_mul(b);
        let least = full
            .saturating_add(tail.div_ceil(4).max(1))
            .max((head + tail).div_ceil(4));
        scaled_length(input_tokens, self.length_scale)
            .max(least)
            .min(k.max(1).saturating_mul(b))
    }

    /// An entry's fixed output length, scaled by `length_scale`.
    pub fn output_tokens(&self, recorded: u32) -> u64 {
        scaled_length(u64::from(recorded), self.length_scale)
    }

    /// Every entry's prompt and output lengths, as sent (scaled), are at most
    /// [`MAX_PROMPT_TOKENS`]: the prompt is built in memory, and a larger length is an
    /// allocation failure at run time, not a benchmark. The first entry past it, as
    /// `file:line: field …` (`file` names the file).
    pub fn check_lengths(&self, file: &str) -> Result<(), String> {
        use crate::dataset::{DatasetFormat, DatasetPrompt};
        let cap = u64::from(MAX_PROMPT_TOKENS);
        // `512` as recorded, or `512 × length_scale 1000 → 512000` as sent.
        let sent_as = |n: u64, sent: u64| {
            if self.length_scale == 1.0 && sent == n {
                n.to_string()
            } else {
                format!("{n} × length_scale {} → {sent}", self.length_scale)
            }
        };
        for e in self.entries.iter() {
            if let DatasetPrompt::Blocks {
                input_tokens,
                hash_ids,
            } = &e.prompt
            {
                let sent = self.block_prompt_tokens(*input_tokens, hash_ids.len() as u64);
                if sent > cap {
                    return Err(format!(
                        "{file}:{}: field `input_length`: {} prompt tokens; a prompt size must \
                         be at most {MAX_PROMPT_TOKENS} tokens",
                        e.line,
                        sent_as(*input_tokens, sent)
                    ));
                }
            }
            if let Some(t) = e.output_tokens {
                let sent = self.output_tokens(t);
                if sent > cap {
                    let (field, basis) = match self.format {
                        DatasetFormat::Jsonl => ("output_tokens", ""),
                        DatasetFormat::Sharegpt => ("conversations", " (a reply's bytes / 4)"),
                        DatasetFormat::Mooncake => ("output_length", ""),
                    };
                    return Err(format!(
                        "{file}:{}: field `{field}`: {} output tokens{basis}; an output length \
                         must be at most {MAX_PROMPT_TOKENS} tokens",
                        e.line,
                        sent_as(u64::from(t), sent)
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Settings of a SWE job.
#[derive(Debug, Clone, PartialEq)]
pub struct SweJob {
    /// argv, non-empty; relative paths are relative to `cwd`.
    pub command: Vec<String>,
    /// Working directory: the project root (the fixtures root's parent).
    pub cwd: PathBuf,
    /// Harness timeout (default 300 s); on timeout the process group is killed.
    pub timeout: Duration,
    /// Extra environment (never the reserved `INFERSCOPE_*` names).
    pub env: BTreeMap<String, String>,
}

/// `tokenizer`: where a context job's prompt tokens are counted, so that its
/// `sizes` are the prompt tokens the server reports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum TokenizerSource {
    /// `"bytes"` (the default): 4 bytes a token, an estimate; the report states the
    /// difference the server measured.
    #[default]
    Bytes,
    /// `"endpoint"`: the engine's own `POST /tokenize` (vLLM and SGLang's shape or
    /// llama-server's, detected in the preflight).
    Endpoint,
    /// A Hugging Face `tokenizer.json` file (any other value: its path, relative to the
    /// suite file's directory; for `run --tokenizer`, to the working directory).
    File(PathBuf),
}

impl TokenizerSource {
    /// Parses a `tokenizer` value; a path must name an existing regular file, not a
    /// symlink (the bounded reader never follows one: accepting it here would only fail
    /// the run's setup).
    pub fn parse(value: &str, base: &std::path::Path) -> Result<Self, String> {
        match value {
            "bytes" => Ok(Self::Bytes),
            "endpoint" => Ok(Self::Endpoint),
            "" => Err("`tokenizer` is empty: `bytes`, `endpoint` or a tokenizer.json path".into()),
            p => {
                let path = base.join(p);
                let kind = std::fs::symlink_metadata(&path).map(|m| m.file_type());
                match kind {
                    Ok(t) if t.is_file() => Ok(Self::File(path)),
                    Ok(t) if t.is_symlink() => Err(format!(
                        "`tokenizer`: {} is a symlink (symlinks are not followed: name the \
                         file itself)",
                        path.display()
                    )),
                    _ => Err(format!(
                        "`tokenizer`: {} is not a file (`bytes`, `endpoint` or a \
                         tokenizer.json path)",
                        path.display()
                    )),
                }
            }
        }
    }

    /// The basis named in reports: `bytes/4 estimate`, `engine /tokenize`, `tokenizer.json`.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Bytes => "bytes/4 estimate",
            Self::Endpoint => "engine /tokenize",
            Self::File(_) => "tokenizer.json",
        }
    }
}

/// A loaded, validated suite (docs/suite.md) with defaults applied.
#[derive(Debug, Clone)]
pub struct Suite {
    /// `name`, default the file stem.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// The suite file as given.
    pub file: PathBuf,
    /// The fixtures root (absolute): `fixtures_dir`, else `<suite dir>/fixtures`, else
    /// `<suite dir>/../fixtures` when only that one exists.
    pub fixtures_root: PathBuf,
    /// The fixtures root's parent: cwd of SWE harnesses.
    pub project_root: PathBuf,
    /// Endpoint base URL (`…/v1`, no trailing slash); `None` = built-in simulator.
    pub endpoint: Option<String>,
    /// Model as written; the effective one is in [`super::ResolvedSuite`].
    pub model: Option<String>,
    /// Name of the env var holding the API key (never the key).
    pub api_key_env: Option<String>,
    /// `capture_timeline` as written (default false); `--capture-timeline` overrides.
    pub capture_timeline: bool,
    /// Seed of filler, simulator and arrivals (default 0).
    pub seed: u64,
    /// Metric profile (default auto).
    pub engine: EngineProfile,
    /// Per-request timeout (default 120 s).
    pub request_timeout: Duration,
    /// Idle-stream timeout (default 30 s).
    pub idle_timeout: Duration,
    /// Largest accepted SSE event, bytes (default 16 MiB, field case C30).
    pub max_event_bytes: u64,
    /// `tokenizer`: where prompt tokens are counted (default the bytes/4
    /// estimate); `run --tokenizer` overrides it.
    pub tokenizer: TokenizerSource,
    /// `[extra_body]`: members added to every chat request body, after the
    /// product's own (never `model`, `messages`, `tools`, `stream`, `stream_options`).
    pub extra_body: serde_json::Map<String, serde_json::Value>,
    /// `[telemetry]` with defaults.
    pub telemetry: Telemetry,
    /// Suite-wide `[gates]` (empty when absent); passes [`crate::gate::validate_spec`].
    pub gates: GateSpec,
    /// `[overhead]` budgets (docs/suite.md "`[overhead]`" defaults when absent); passes
    /// [`crate::gate::validate_overhead`].
    pub overhead: OverheadSpec,
    /// Fixture tools.
    pub tools: Vec<ToolSpec>,
    /// Jobs in file order (at least one).
    pub jobs: Vec<Job>,
    pub(crate) explicit: BTreeSet<String>,
    /// Dotted keys a command-line flag set after loading (`run --engine-pid`, ...).
    pub(crate) flagged: BTreeSet<String>,
    pub(crate) text: Arc<str>,
    pub(crate) api_key_env_span: Option<Range<usize>>,
}

impl Suite {
    /// Whether the key at dotted `path` (e.g. `seed`, `telemetry.gpu`,
    /// `jobs[0].max_steps`) was written in the file (vs. a default).
    pub fn is_set(&self, path: &str) -> bool {
        self.explicit.contains(path)
    }

    /// Records that a command-line flag set the key at dotted `path` (`--dry-run` then
    /// names `flag` as its source).
    pub fn set_by_flag(&mut self, path: &str) {
        self.flagged.insert(path.to_string());
    }

    /// Whether a command-line flag set the key at dotted `path`.
    pub fn is_flagged(&self, path: &str) -> bool {
        self.flagged.contains(path)
    }

    /// The job's gates merged over the suite's, field by field
    /// ([`GateSpec::merged_with`]).
    pub fn gates_for(&self, job: &Job) -> GateSpec {
        self.gates.merged_with(&job.gates)
    }

    /// The declared tool named `name`.
    pub fn tool(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// The suite file's text as loaded (a shard manifest records its SHA-256, so shards
    /// prove they ran the same suite).
    pub fn text(&self) -> &str {
        &self.text
    }
}
