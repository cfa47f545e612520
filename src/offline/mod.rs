//! Evidence from elsewhere as input to the offline step-attribution join
//! (`inferscope-bench trajectory`, docs/measurement.md): a run's `samples/` directory (or any tool's, written to
//! `docs/samples.md`), saved Prometheus `query_range` answers
//! ([`crate::telemetry::prometheus::timeline_from_saved`]), or the public inferscope
//! project's report JSON ([`inferscope`]). Each becomes the same sampled timelines
//! ([`TelemetryRun`]) and goes through the same join as a run's own samples.

pub mod inferscope;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::attribution as attr;
use crate::model::exit::ExitCode;
use crate::runner::energy;
use crate::telemetry::{EngineProfile, TelemetryRun, prometheus};

/// Where the offline join's timelines come from.
#[derive(Debug, Clone)]
pub enum OfflineSource {
    /// A `samples/` directory (or the run directory holding it).
    Samples(PathBuf),
    /// Saved `query_range` answers, with the profile naming the families and the served
    /// model selecting series.
    PrometheusRange {
        /// The JSON files.
        files: Vec<PathBuf>,
        /// Engine profile (`auto` detects from the names).
        profile: EngineProfile,
        /// Served model for `model_name` selection.
        model: Option<String>,
    },
    /// An inferscope report JSON, with the devices whose power to keep (`None`: all).
    InferscopeReport(PathBuf, Option<Vec<u32>>),
}

/// The timelines of a source, the anchor to map step markers with (`None` withholds),
/// and notes on what was read. `Err` is a message naming the file.
pub fn load(src: &OfflineSource) -> Result<(TelemetryRun, Option<u64>, Vec<String>), String> {
    // Through the bounded reader (no symlink, FIFO or device; at most the size limit).
    let read = |p: &Path| {
        let bytes = crate::fsio::read(p, crate::fsio::limits::SAMPLES_FILE_BYTES)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", p.display()))
    };
    match src {
        OfflineSource::Samples(dir) => {
            let t =
                TelemetryRun::read_samples(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            let anchor = Some(t.reference_instant_unix_ns);
            Ok((t, anchor, Vec::new()))
        }
        OfflineSource::InferscopeReport(p, devices) => {
            let e = inferscope::parse_devices(&read(p)?, devices.as_deref())
                .map_err(|m| format!("{}: {m}", p.display()))?;
            Ok((e.telemetry, e.anchor, e.notes))
        }
        OfflineSource::PrometheusRange {
            files,
            profile,
            model,
        } => {
            let mut texts = Vec::new();
            for f in files {
                texts.push((f.display().to_string(), read(f)?));
            }
            let s = prometheus::timeline_from_saved(&texts, *profile, model.as_deref())?;
            let mut notes = s.timeline.notes.clone();
            notes.insert(
                0,
                format!(
                    "counters: {} saved query_range answer(s), profile {}",
                    files.len(),
                    s.timeline.profile.unwrap_or(*profile).name()
                ),
            );
            let t = TelemetryRun {
                clock_domain_id: "prometheus-query-range".into(),
                reference_instant_unix_ns: s.reference_instant_unix_ns,
                started_elapsed_ns: 0,
                stopped_elapsed_ns: s.end_unix_ns - s.reference_instant_unix_ns,
                proc: None,
                power: None,
                metrics: None,
                prometheus: Some(s.timeline),
            };
            Ok((t, Some(s.reference_instant_unix_ns), notes))
        }
    }
}

/// The step-attribution join (docs/measurement.md) of `markers` with a source's timelines (one trajectory in flight).
pub fn join(
    t: &TelemetryRun,
    anchor: Option<u64>,
    markers: &[attr::StepMarker],
) -> attr::RunAttribution {
    let mut input = energy::attribution_input(t, 1);
    input.reference_instant_unix_ns = anchor;
    attr::attribute_run(&input, Some(markers), &BTreeMap::new())
}

/// `inferscope-bench trajectory (--samples DIR | --prometheus-range FILE… |
/// --inferscope-report FILE) --steps FILE [--out FILE]`: exit 0 on success, 2 on unreadable
/// input.
pub fn command(src: &OfflineSource, steps: &Path, out: Option<&Path>) -> i32 {
    let file = match crate::run_dir::read_step_markers(steps) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("error: {}: {e}", steps.display());
            return ExitCode::BAD_INPUT;
        }
    };
    // Every rejected line is bad input, named by file and line; a half-written last line
    // (a driver killed mid-write) is left out and said so, the records before it kept.
    let shown = steps.display().to_string();
    if file.rejected_count > 0 {
        for p in file.problems(&shown) {
            eprintln!("error: {p}");
        }
        return ExitCode::BAD_INPUT;
    }
    for p in file.problems(&shown) {
        eprintln!("warning: {p}");
    }
    let (t, anchor, mut notes) = match load(src) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::BAD_INPUT;
        }
    };
    notes.extend(energy::not_attributable_devices(&t));
    let run = join(&t, anchor, &file.markers);
    for n in &notes {
        println!("note: {n}");
    }
    for o in &run.trajectories {
        println!("{}", attr::render_outcome(o).trim_end());
    }
    // Each marker the step-attribution rules (docs/measurement.md) dropped, by its line in the file.
    for o in &run.trajectories {
        let dropped = match o {
            attr::TrajectoryOutcome::Attributed(t) => &t.dropped_steps,
            attr::TrajectoryOutcome::Withheld(w) => &w.dropped_steps,
        };
        for d in dropped {
            for l in file.lines_of(d.step_id, d.t_start_unix_ns, d.t_end_unix_ns) {
                println!(
                    "note: {shown}:{l}: step {} dropped from attribution ({})",
                    d.step_id,
                    d.reason.label()
                );
            }
        }
    }
    if let Some(p) = out {
        let json = match serde_json::to_vec_pretty(&run) {
            Ok(j) => j,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::ERROR;
            }
        };
        if let Err(e) = std::fs::write(p, json) {
            eprintln!("error: {}: {e}", p.display());
            return ExitCode::BAD_INPUT;
        }
        println!("wrote {}", p.display());
    }
    0
}
