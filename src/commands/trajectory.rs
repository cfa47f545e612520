//! `trajectory (--samples DIR | --prometheus-range FILE... | --inferscope-report FILE)
//! --steps FILE`: the offline step-attribution join (see `crate::offline`).

use std::path::{Path, PathBuf};

/// Runs `trajectory`: exit 0 on success, 2 on unreadable input.
pub fn command(
    samples: Option<PathBuf>,
    prometheus_range: Vec<PathBuf>,
    engine: &str,
    model: Option<String>,
    // The report and the devices whose power to keep (`--gpu-devices`).
    inferscope_report: Option<(PathBuf, Option<Vec<u32>>)>,
    steps: &Path,
    out: Option<&Path>,
) -> i32 {
    let src = match (samples, inferscope_report) {
        (Some(dir), _) => crate::offline::OfflineSource::Samples(dir),
        (None, Some((f, devices))) => crate::offline::OfflineSource::InferscopeReport(f, devices),
        (None, None) => crate::offline::OfflineSource::PrometheusRange {
            files: prometheus_range,
            profile: crate::telemetry::EngineProfile::parse(engine)
                .unwrap_or(crate::telemetry::EngineProfile::Auto),
            model,
        },
    };
    crate::offline::command(&src, steps, out)
}
