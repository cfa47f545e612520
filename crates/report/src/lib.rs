//! Report assembly, pure: what turns a job's plain figures into the report model's parts
//! (docs/architecture.md). No I/O, no async runtime, no printing: every line it makes is
//! returned for the caller to print.
//!
//! - [`curve`]: a load point's summary (statistics, goodput, energy per output token) and
//!   the curve's console table;
//! - [`energy`]: device energy over windows, the jobs' energy figures and the run's
//!   attribution summary;
//! - [`table`]: the per-step console tables of a run's trajectories;
//! - [`baseline`]: a job's figures with their spread, and the comparison with a baseline's;
//! - [`records`]: what a job's drivers recorded of its steps and trajectories;
//! - [`job`]: a job's report from plain inputs ([`job::JobInput`]); [`run`]: the run's;
//! - [`status`]: the one rule that gives a job its status, for a run's jobs and for the
//!   jobs `merge` rebuilds from shards.

pub mod baseline;
pub mod curve;
pub mod energy;
pub mod job;
pub mod records;
pub mod run;
pub mod status;
pub mod table;

// The workspace crates this crate reads, under the names its modules use.
use inferscope_attribution as attribution;
use inferscope_gate as gate;
use inferscope_model as model;
use inferscope_model::stats;
