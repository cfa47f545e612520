//! What one `run` invocation is given: the resolved suites and flags ([`RunOptions`]) and
//! the inputs beyond them ([`RunExtras`]), the capture sink among them ([`SinkChoice`]).

use std::path::PathBuf;

use crate::events;
use crate::suite::ResolvedSuite;

/// Options of one `run` invocation (already resolved from suites and flags).
pub struct RunOptions {
    /// Resolved suites, in command-line order.
    pub suites: Vec<ResolvedSuite>,
    /// `--out DIR`: artifacts go exactly here; default `target/inferscope/runs/<run_id>`.
    pub out: Option<PathBuf>,
    /// Capture sink override for the overhead command's negative controls.
    pub sink_override: Option<SinkChoice>,
}

/// Inputs of a run beyond [`RunOptions`] : kept apart so existing callers of
/// [`run`](crate::run) are unchanged.
#[derive(Debug, Clone, Default)]
pub struct RunExtras {
    /// `--baseline NAME`: compare every job with it and feed `[gates] regression_pct`.
    pub baseline: Option<crate::baseline::Baseline>,
    /// `--partition`, `--shard`, `--start-at`: this run as one shard of several.
    pub shard: Option<crate::shard::ShardRun>,
    /// Where the run's events go ([`events`]): the console, JSON-lines and JUnit
    /// reporters; none by default.
    pub events: events::EventSink,
}

/// Which capture sink a run uses: the real one, or a negative control (overhead command).
#[derive(Debug, Clone)]
pub enum SinkChoice {
    /// The real bounded, non-blocking sink.
    Timeline,
    /// NEGATIVE CONTROL: blocks on every insert.
    Blocking,
    /// NEGATIVE CONTROL: writes and fsyncs every event to this file.
    DiskWrite(PathBuf),
}
