//! The flags of `init`.

use std::path::PathBuf;

use clap::Args;

/// Where `init` writes the suite unless `--out` says otherwise: the current directory, not
/// `suites/`, whose every `*.toml` the nextest harness runs as trials (a starter names a
/// server that may not be running then).
pub const DEFAULT_INIT_OUT: &str = "starter.toml";

/// Arguments of `init`.
#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// Base URL of the OpenAI-compatible server, ending in `/v1`
    /// (e.g. `http://127.0.0.1:8000/v1`).
    #[arg(value_name = "ENDPOINT")]
    pub endpoint: String,
    /// The model the suite uses (default: the endpoint's only model, or the first it
    /// lists, named on stderr with the others).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The environment variable holding the API key: `init` sends its value to list the
    /// models and writes only the variable's name into the suite (`api_key_env`).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// Where to write the suite (parent directories are created).
    #[arg(long, value_name = "PATH", default_value = DEFAULT_INIT_OUT)]
    pub out: PathBuf,
    /// Replace the file at `--out` when it exists (without it, `init` refuses and sends
    /// nothing).
    #[arg(long)]
    pub force: bool,
}
