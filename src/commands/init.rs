//! `init ENDPOINT [--model NAME] [--api-key-env VAR] [--out PATH] [--force]`: writes a
//! commented starter suite for an endpoint, which `check` accepts and `run` runs.
//!
//! It asks the endpoint for its models (`GET {ENDPOINT}/models`, the preflight's request)
//! and picks one: `--model` when it is listed, else the only model, else the first listed
//! (stderr names the others). Failures are the preflight's, with the same causes and
//! hints (`runner::execute::preflight_error`). The file is written only when nothing is
//! at `--out` (`--force` replaces it), through a temporary file renamed into place.
//! No secret is written or printed: `--api-key-env` names the variable, and the suite
//! holds that name (`api_key_env`), never its value.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use crate::cli::InitArgs;
use crate::client::{Client, ClientConfig};
use crate::model::exit::ExitCode;
use crate::model::request::redact_known;

/// How long `init` waits for the model list (the preflight's bound).
const LIST_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `init`: exit 0 written, 2 bad input (endpoint URL, variable, an existing file
/// without `--force`, a file that cannot be written), 96 the endpoint did not answer with
/// a model list that serves the model.
pub async fn command(args: InitArgs) -> i32 {
    match init(&args).await {
        Ok(()) => ExitCode::OK,
        Err((code, message)) => {
            eprintln!("error: {message}");
            code
        }
    }
}

type Failure = (i32, String);

fn bad(message: String) -> Failure {
    (ExitCode::BAD_INPUT, message)
}

async fn init(args: &InitArgs) -> Result<(), Failure> {
    let endpoint = crate::suite::normalize_endpoint(&args.endpoint)
        .map_err(|m| bad(format!("ENDPOINT {m}")))?;
    let api_key = api_key_from_env(args.api_key_env.as_deref())?;
    refuse_existing(&args.out, args.force)?;

    let secrets: Vec<&str> = api_key.iter().map(String::as_str).collect();
    let mut config = ClientConfig::new(endpoint.clone());
    config.api_key = api_key.clone();
    config.request_timeout = LIST_TIMEOUT;
    let client = Client::new(config).map_err(|e| bad(format!("ENDPOINT `{endpoint}`: {e}")))?;
    let answer = tokio::time::timeout(LIST_TIMEOUT, client.list_models())
        .await
        .map_err(|_| None)
        .and_then(|r| r.map_err(Some));
    let setup = |answer, model: &str| {
        crate::runner::execute::preflight_error(
            &endpoint,
            model,
            false,
            args.api_key_env.as_deref(),
            answer,
            &secrets,
        )
    };
    let listed = match answer {
        Ok(models) => models,
        Err(e) => {
            let err = setup(Err(e), "").expect("a failed listing is a setup error");
            return Err((
                ExitCode::SETUP_ERROR,
                format!(
                    "{} ({}); nothing was written",
                    err.message,
                    err.cause.as_str()
                ),
            ));
        }
    };
    let model = match &args.model {
        Some(m) => {
            if let Some(err) = setup(Ok(listed.clone()), m) {
                return Err((
                    ExitCode::SETUP_ERROR,
                    format!("{}; nothing was written", err.message),
                ));
            }
            m.clone()
        }
        None => first_listed_model(&endpoint, &listed, &secrets)?,
    };
    let name = suite_name(&args.out);
    let text = starter_suite(&StarterSuite {
        name: &name,
        endpoint: &endpoint,
        model: &model,
        api_key_env: args.api_key_env.as_deref(),
        listed: listed.len(),
        out: &args.out,
    });
    write_suite(&args.out, &text, args.force)?;
    println!(
        "wrote {} for {endpoint}, model `{model}` ({} listed)",
        args.out.display(),
        plural(listed.len(), "model")
    );
    println!(
        "next: inferscope-bench check {0} && inferscope-bench run {0}",
        args.out.display()
    );
    Ok(())
}

/// The API key held by the variable `--api-key-env` names: `None` without the option; an
/// error when the name is not a variable name (the value is never shown: a key pasted in
/// place of the name is a secret) or the variable is unset or empty.
fn api_key_from_env(api_key_env: Option<&str>) -> Result<Option<String>, Failure> {
    match api_key_env {
        None => Ok(None),
        // The value is not shown: a key pasted in place of the name is a secret.
        Some(var) if !is_env_name(var) => Err(bad(
            "--api-key-env: not an environment variable name (letters, digits and `_`, \
             not starting with a digit; the value is not shown); name the variable that \
             holds the key, never the key"
                .to_string(),
        )),
        Some(var) => match std::env::var(var) {
            Ok(v) if !v.is_empty() => Ok(Some(v)),
            _ => Err(bad(format!(
                "--api-key-env {var}: the variable is not set (init sends its value to list \
                 the endpoint's models; the suite will hold only its name)"
            ))),
        },
    }
}

/// The model a suite is written for when `--model` is not given: the first the endpoint
/// lists (a note names the others), unless it lists none or the id holds the API key.
fn first_listed_model(
    endpoint: &str,
    listed: &[String],
    secrets: &[&str],
) -> Result<String, Failure> {
    let Some(first) = listed.first() else {
        return Err((
            ExitCode::SETUP_ERROR,
            format!(
                "{endpoint} lists no model (GET {endpoint}/models answered an empty \
                 list); pass --model NAME; nothing was written"
            ),
        ));
    };
    if redact_known(first, secrets) != *first {
        return Err((
            ExitCode::SETUP_ERROR,
            "the endpoint's first model id holds the API key; pass --model NAME; \
             nothing was written"
                .to_string(),
        ));
    }
    if listed.len() > 1 {
        let others: Vec<String> = listed[1..]
            .iter()
            .map(|m| redact_known(m, secrets))
            .collect();
        eprintln!(
            "note: {endpoint} lists {} models; using the first, `{first}` (the others: \
             {}); pass --model NAME to choose another",
            listed.len(),
            others.join(", ")
        );
    }
    Ok(first.clone())
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// `NAME` is a variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_name(s: &str) -> bool {
    let mut c = s.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

fn refuse_existing(out: &Path, force: bool) -> Result<(), Failure> {
    match std::fs::symlink_metadata(out) {
        Ok(m) if m.is_dir() => Err(bad(format!(
            "--out {}: a directory; name the suite file to write",
            out.display()
        ))),
        Ok(_) if !force => Err(bad(format!(
            "{} exists; pass --force to replace it (nothing was sent or written)",
            out.display()
        ))),
        _ => Ok(()),
    }
}

/// The suite's name: the file stem with every character a job id does not allow
/// replaced by `_` (`starter` for `starter.toml`).
fn suite_name(out: &Path) -> String {
    let stem = out
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "starter".to_string()
    } else {
        name
    }
}

/// Writes `text` to `out` through a temporary file in its directory, renamed into place:
/// never over an existing file unless `force` (checked again at the rename).
fn write_suite(out: &Path, text: &str, force: bool) -> Result<(), Failure> {
    let fail = |e: &dyn std::fmt::Display| bad(format!("writing {}: {e}", out.display()));
    let dir = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => Path::new(".").to_path_buf(),
    };
    std::fs::create_dir_all(&dir).map_err(|e| fail(&e))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".init")
        .tempfile_in(&dir)
        .map_err(|e| fail(&e))?;
    tmp.write_all(text.as_bytes()).map_err(|e| fail(&e))?;
    tmp.as_file().sync_all().map_err(|e| fail(&e))?;
    let persisted = if force {
        tmp.persist(out).map(|_| ())
    } else {
        tmp.persist_noclobber(out).map(|_| ())
    };
    persisted.map_err(|e| {
        if e.error.kind() == std::io::ErrorKind::AlreadyExists {
            bad(format!(
                "{} exists; pass --force to replace it (nothing was written)",
                out.display()
            ))
        } else {
            fail(&e.error)
        }
    })
}

/// What the starter suite is written for.
pub struct StarterSuite<'a> {
    /// The suite's name.
    pub name: &'a str,
    /// The normalized base URL.
    pub endpoint: &'a str,
    /// The model.
    pub model: &'a str,
    /// The API-key variable's name, when one was given.
    pub api_key_env: Option<&'a str>,
    /// How many models the endpoint listed.
    pub listed: usize,
    /// Where the suite is written (for the comments' commands).
    pub out: &'a Path,
}

/// A TOML basic string of `s` (JSON's escapes are a subset of TOML's).
fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// The starter suite's text: a context sweep and a scripted trajectory, with a comment on
/// every key and the commands that check and run it.
pub fn starter_suite(s: &StarterSuite<'_>) -> String {
    let out = s.out.display();
    let api_key = match s.api_key_env {
        Some(v) => format!(
            "# The API key is read from this environment variable at run time; the key itself\n\
             # never belongs in a suite.\n\
             api_key_env = {}\n",
            toml_str(v)
        ),
        None => "# If the server needs an API key, name the environment variable that holds it\n\
                 # (never the key itself):\n\
                 # api_key_env = \"OPENAI_API_KEY\"\n"
            .to_string(),
    };
    format!(
        r#"# A starter suite written by `inferscope-bench init` for {endpoint_c}
# (the endpoint listed {listed}). Every key: docs/suite.md of the
# inferscope-bench repository.
#
#   inferscope-bench check {out}      # validate it; sends nothing
#   inferscope-bench run {out}        # run it; exit 0 when every job's gates pass
#
# Figures come with their basis: TTFT and ITL are client timing, token counts are what the
# server reports in `usage`, energy is measured only where NVML gives power readings.
name = {name}
description = "Starter suite: a context sweep and a scripted agent trajectory"
endpoint = {endpoint}
model = {model}
{api_key}# The /metrics profile: "auto", "vllm", "sglang" or "llamacpp".
engine = "auto"
# Seeds the prompts' filler text, so every run sends the same prompts.
seed = 1

[telemetry]
# Power (NVML, when present) and the engine's /proc every 50 ms; /metrics every 200 ms.
sample_period_ms = 50
metrics_period_ms = 200

# Suite-wide gates: a job fails (and `run` exits 100) when one is not met.
[gates]
ttft_ms = {{ p99 = 5000.0 }}     # time to first token, ms, 99th percentile
max_error_rate = 0.0           # any failed request fails its job

# TTFT against prompt length. With shared_prefix, the second repeat of each size starts
# with the first's prompt, so a server with a prefix cache answers it faster.
[[jobs]]
name = "context"
kind = "context"
sizes = [256, 1024]            # prompt sizes, tokens (estimated as 4 bytes a token)
repeat = 2
shared_prefix = true
max_tokens = 16

# A fixed agent trajectory: each script entry is one LLM call whose answer is replaced by
# the scripted tool call; the tool's result is appended and one final call follows. The
# history grows every step, so later steps should hit the prefix cache. The requests carry
# `tools` and tool messages: a server without tool calling enabled may answer HTTP 400
# (vLLM: --enable-auto-tool-choice --tool-call-parser NAME; llama-server: --jinja); then
# enable it, or delete this job and the [[tools]] table.
[[tools]]
name = "get_weather"
description = "Current weather for a city"
parameters = {{ type = "object", properties = {{ city = {{ type = "string" }} }}, required = ["city"] }}
latency_ms = 5
default_text = '{{"error": "unknown city"}}'
[[tools.responses]]
when = {{ city = "Oslo" }}
text = '{{"city": "Oslo", "temperature_c": 4, "sky": "overcast"}}'
[[tools.responses]]
when = {{ city = "Lima" }}
text = '{{"city": "Lima", "temperature_c": 19, "sky": "clear"}}'

[[jobs]]
name = "trajectory"
kind = "agentic"
mode = "scripted"
system = "You are a helpful assistant. Use the tool results you are given."
task = "Compare the weather in Oslo and Lima in one sentence."
tools = ["get_weather"]
max_tokens = 32
[[jobs.script]]
tool = "get_weather"
arguments = {{ city = "Oslo" }}
[[jobs.script]]
tool = "get_weather"
arguments = {{ city = "Lima" }}
"#,
        endpoint_c = s.endpoint.replace(['\n', '\r'], " "),
        listed = plural(s.listed, "model"),
        name = toml_str(s.name),
        endpoint = toml_str(s.endpoint),
        model = toml_str(s.model),
    )
}
