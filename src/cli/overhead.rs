//! `inferscope-bench overhead` flags, turned into the plain
//! [`OverheadRequest`](crate::overhead::OverheadRequest) at the edge.

use std::path::PathBuf;

use crate::overhead::{NegativeControl, OverheadRequest};

/// The negative controls of `--negative-control`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum NegativeControlArg {
    /// Capture-on runs use [`crate::timeline::BlockingSink`] (2 ms stall per insert).
    BlockingSink,
    /// Capture-on runs use [`crate::timeline::DiskWriteSink`] (write + fsync per event).
    DiskWriteSink,
}

/// Arguments of `overhead`.
#[derive(Debug, Clone, clap::Args)]
pub struct OverheadArgs {
    /// The suite file whose jobs are the workload.
    pub suite: PathBuf,
    /// Number of capture-off/capture-on pairs (default: the suite's `[overhead] pairs`, 5).
    #[arg(long)]
    pub pairs: Option<u32>,
    /// Replace the capture sink of the capture-on runs by a deliberately bad one; the
    /// verdict must then be `fail` (exit 100).
    #[arg(long, value_enum)]
    pub negative_control: Option<NegativeControlArg>,
    /// Endpoint base URL; overrides the suite's.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model name; overrides the suite's.
    #[arg(long)]
    pub model: Option<String>,
    /// Only jobs whose id contains this text (or matches this `*` glob).
    #[arg(long)]
    pub filter: Option<String>,
    /// Keep every run directory and write `overhead.json` here (default: a temporary
    /// directory under `target/inferscope/overhead/`, removed at the end).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

impl OverheadArgs {
    /// The request these flags describe.
    pub fn into_request(self) -> OverheadRequest {
        OverheadRequest {
            suite: self.suite,
            pairs: self.pairs,
            negative_control: self.negative_control.map(|c| match c {
                NegativeControlArg::BlockingSink => NegativeControl::BlockingSink,
                NegativeControlArg::DiskWriteSink => NegativeControl::DiskWriteSink,
            }),
            endpoint: self.endpoint,
            model: self.model,
            filter: self.filter,
            out: self.out,
        }
    }
}
