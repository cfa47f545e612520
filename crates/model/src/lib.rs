//! The report model: every type `report.json` is made of, and the vocabulary every output
//! uses. A leaf crate of the workspace (`inferscope-model`): it depends on no
//! other crate of the workspace and only on `serde`, `serde_json` and
//! `serde_path_to_error` (tests/it/workspace.rs holds it to that).
//!
//! - [`run`]: [`RunReport`] (`report.json`, schema [`REPORT_SCHEMA`]), endpoints, capture,
//!   power source, totals.
//! - [`job`]: [`JobReport`] with [`JobStatus`] (`pass`, `fail`, `cancelled`, `not_run`,
//!   `setup_error`), [`SetupError`], grading, [`JobEnergy`].
//! - [`step`]: ONE step shape, [`StepReport`], inside [`TrajectoryReport`]; [`StepKind`],
//!   [`StepStatus`], [`StopReason`], [`ToolErrorCode`].
//! - [`request`]: [`RequestRecord`] and the one [`FailureCode`] set.
//! - [`basis`] and [`figure`]: [`Basis`], [`TokenSource`], [`TokenCount`], [`EnergyBasis`],
//!   [`PowerSource`], and [`Figure`] — a value with its basis, side by side.
//! - [`gate`]: [`Verdict`] (with the basis of its figure).
//! - [`stats`]: percentiles and [`JobStats`].
//! - [`attribution`]: the step-attribution figures (docs/measurement.md).
//! - [`load`], [`baseline`], [`telemetry`]: the curve, comparisons, sampler summaries.
//! - [`shard`]: a shard's identity and a merged run's per-shard sections.
//!
//! Every `Option` serializes as `null`, never skipped; maps are `BTreeMap`s and objects
//! are structs, so the JSON order never depends on serde_json's `preserve_order`, and a
//! report read and written again is byte-for-byte the same ([`RunReport::to_json`]).

pub mod attribution;
pub mod baseline;
pub mod basis;
pub mod capture;
pub mod compact;
pub mod exit;
pub mod figure;
pub mod gate;
pub mod gate_spec;
pub mod job;
pub mod load;
pub mod records;
pub mod request;
pub mod run;
pub mod shard;
pub mod stats;
pub mod step;
pub mod step_kind;
pub mod streaming;
pub mod telemetry;

pub use attribution::{
    AttributionGroup, AttributionOutcome, ConcurrencyCondition, RunAttribution,
    RunAttributionSummary, StepAttribution, StepMetrics, TrajectoryAttribution, TrajectoryMetrics,
    TrajectoryOutcome,
};
pub use basis::{
    Basis, EnergyBasis, EstimateMethod, PowerBasis, PowerBasisLabel, PowerSource, TokenCount,
    TokenEstimate, TokenSource,
};
pub use figure::{Figure, basis_text, tokens_per_joule};
pub use gate::{Comparison, Outcome, Verdict};
pub use job::{
    FailureCount, GradingCheck, HarnessReport, JobEnergy, JobKind, JobReport, JobStatus,
    SetupCause, SetupError, StepsFileReport,
};
pub use request::{FailureCode, RequestRecord, RequestStatus};
pub use run::{
    CaptureReport, EndpointReport, PowerReport, Quality, REPORT_SCHEMA, ReportError, RequestsFile,
    RunReport, SummaryReport,
};
pub use shard::{MergeReport, ShardIdentity, ShardMode, ShardSection};
pub use stats::{JobStats, Summary, SummaryBound};
pub use step::{
    NO_STEP_ENERGY, StepKind, StepReport, StepStatus, StopReason, ToolErrorCode, TrajectoryReport,
};
