//! Output of the step-attribution join (docs/measurement.md): the report model's attribution types
//! ([`inferscope_model::attribution`]), re-exported where the join fills them in.

pub use inferscope_model::attribution::{
    AttributionOutcome, ConcurrencyCondition, DeviceRunEnergy, DropReason, DroppedStep, MarkerFlag,
    MarkerIssue, RunAttribution, SeriesProblem, SourceKind, SourceSamples, StepAttribution,
    StepDeviceEnergy, StepMetrics, TrajectoryAttribution, TrajectoryMetrics, TrajectoryOutcome,
    WithheldTrajectory, WithholdReason, in_flight_phrase,
};
pub use inferscope_model::basis::{EnergyBasis, PowerBasisLabel, PowerSource};
