//! Load: trajectories and requests in flight, arrival rates and sweeps.
//!
//! - [`spec`]: a job's validated load settings ([`LoadSpec`]) and its points;
//! - [`arrival`]: seeded open-loop arrival schedules (Poisson, constant);
//! - [`exec`]: the closed/open-loop executor over abstract units and time (pure scheduling,
//!   tested with a mock executor on tokio's paused clock);
//! - [`curve`]: per-point statistics (latency from send *and* from schedule, field case
//!   C24), goodput against the job's gates, energy per output token, the console table;
//! - [`record`]: what a load run records and reports (`jobs[].load`, `jobs[].sweep`);
//! - [`drive`]: the I/O edge that runs agentic and context units against the endpoint.
//!
//! The joins per load point and the window energy live with the run's other energy
//! figures in [`crate::energy`]; the report types in [`crate::model::load`].
//!
//! With more than one trajectory in flight, per-step energy is an apportionment
//! (docs/measurement.md "The wall: controlled concurrency only"): the runner declares each point's
//! concurrency to the step-attribution join, which then labels every step `apportioned`, never
//! `measured`. The curve's energy per output token is a different figure: device energy over the
//! whole point window.

pub mod arrival;
pub use inferscope_report::curve;
pub mod drive;
pub mod exec;
pub mod record;
pub mod units;

/// The load settings are the suite schema's ([`crate::suite::load_spec`]); the driver reads them.
pub use crate::suite::load_spec as spec;
pub use curve::{
    GoodputCriteria, PointSummary, goodput_criteria, render_curve, summarize_point, warmup_flags,
};
pub use record::{LoadReport, LoadRun, PointRecord, SweepReport, load_report, sweep_report};
pub use spec::{Arrival, LoadPoint, LoadSpec, LoopMode, Stop, Sweep, point_seed};
