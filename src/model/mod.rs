//! The report model: every type `report.json` is made of, and the vocabulary every output
//! uses (issue 13). A leaf module: it uses nothing of the crate outside itself and depends
//! only on `serde` and `serde_json`, so it can become its own crate.
//!
//! - [`run`]: [`RunReport`] (`report.json`, schema [`REPORT_SCHEMA`]), endpoints, capture,
//!   power source, totals.
//! - [`job`]: [`JobReport`] with [`JobStatus`] (`pass`, `fail`, `cancelled`, `not_run`,
//!   `setup_error`), [`SetupError`], grading, [`JobEnergy`].
//! - [`step`]: ONE step shape, [`StepReport`], inside [`TrajectoryReport`]; [`StepKind`],
//!   [`StepStatus`], [`StopReason`], [`ToolErrorCode`].
//! - [`request`]: [`RequestRecord`] and the one [`FailureCode`] set.
//! - [`basis`] and [`figure`]: [`Basis`], [`TokenSource`], [`EnergyBasis`],
//!   [`PowerSource`], and [`Figure`] — a value with its basis, side by side.
//! - [`gate`]: [`Verdict`] (with the basis of its figure).
//! - [`stats`]: percentiles and [`JobStats`].
//! - [`attribution`]: the step-attribution figures (docs/measurement.md).
//! - [`load`], [`baseline`], [`telemetry`]: the curve, comparisons, sampler summaries.
//! - [`shard`]: a shard's identity and a merged run's per-shard sections (issue 17).
//!
//! Every `Option` serializes as `null`, never skipped; maps are `BTreeMap`s and objects
//! are structs, so the JSON order never depends on serde_json's `preserve_order`, and a
//! report read and written again is byte-for-byte the same ([`RunReport::to_json`]).

pub mod attribution;
pub mod baseline;
pub mod basis;
pub mod figure;
pub mod gate;
pub mod job;
pub mod load;
pub mod records;
pub mod request;
pub mod run;
pub mod shard;
pub mod stats;
pub mod step;
pub mod telemetry;

pub use attribution::{
    AttributionGroup, AttributionOutcome, ConcurrencyCondition, RunAttribution,
    RunAttributionSummary, StepAttribution, StepMetrics, TrajectoryAttribution, TrajectoryMetrics,
    TrajectoryOutcome,
};
pub use basis::{
    Basis, EnergyBasis, EstimateMethod, PowerBasis, PowerBasisLabel, PowerSource, TokenEstimate,
    TokenSource,
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
pub use stats::{JobStats, Summary};
pub use step::{
    NO_STEP_ENERGY, StepKind, StepReport, StepStatus, StopReason, ToolErrorCode, TrajectoryReport,
};

#[cfg(test)]
mod tests {
    /// The model is a leaf: it names nothing of the crate outside `crate::model`, and no
    /// crate but `serde` and `serde_json` (it is to become its own workspace crate).
    #[test]
    fn the_model_is_a_leaf_module() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/model");
        let modules: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .filter_map(|e| {
                let p = e.ok()?.path();
                Some(p.file_stem()?.to_str()?.to_string())
            })
            .collect();
        let mut files = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            files += 1;
            // This check's own module names the crates it looks for: leave it out.
            let text = match p.file_name().and_then(|n| n.to_str()) {
                Some("mod.rs") => text.split("#[cfg(test)]").next().unwrap_or("").to_string(),
                _ => text,
            };
            for (i, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                for (at, _) in code.match_indices("crate::") {
                    assert!(
                        code[at..].starts_with("crate::model"),
                        "{}:{}: {line}",
                        p.display(),
                        i + 1
                    );
                }
                let t = code.trim_start();
                if let Some(rest) = t
                    .strip_prefix("use ")
                    .or_else(|| t.strip_prefix("pub use "))
                {
                    let root = rest.split("::").next().unwrap_or("");
                    let external = root.chars().next().is_some_and(char::is_lowercase)
                        && ![
                            "std",
                            "core",
                            "serde",
                            "serde_json",
                            "super",
                            "self",
                            "crate",
                        ]
                        .contains(&root)
                        && !modules.iter().any(|m| m == root);
                    assert!(!external, "{}:{}: uses `{root}`", p.display(), i + 1);
                }
                for dep in [
                    "tokio::",
                    "reqwest::",
                    "axum::",
                    "clap::",
                    "nvml_wrapper::",
                    "insta::",
                ] {
                    assert!(!code.contains(dep), "{}:{}: {line}", p.display(), i + 1);
                }
            }
        }
        assert!(files >= 10);
    }
}
