//! The flags of `serve`, handed on as [`crate::serve::ServeConfig`].

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::serve::{DEFAULT_BIND, ServeConfig};

/// Arguments of `serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// The runs root: each direct subdirectory is one run, addressed by its name
    /// (default layout: `target/inferscope/runs`).
    #[arg(long, value_name = "DIR")]
    pub runs: PathBuf,
    /// Address to listen on (loopback by default; port 0 picks a free port).
    #[arg(long, default_value = DEFAULT_BIND)]
    pub bind: SocketAddr,
    /// File holding the API token (default: the INFERSCOPE_TOKEN environment variable).
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

impl ServeArgs {
    /// The plain configuration `serve::run` takes.
    pub fn into_config(self) -> ServeConfig {
        ServeConfig {
            runs: self.runs,
            bind: self.bind,
            token_file: self.token_file,
        }
    }
}
