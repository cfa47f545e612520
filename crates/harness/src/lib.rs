//! The nextest harness: every job of `suites/*.toml` as a libtest-mimic trial named
//! `suite::job` (docs/architecture.md "The harness crate").
//!
//! A trial runs its one job through [`runner::run`] (own tokio runtime, quiet,
//! artifacts in a temporary directory kept on failure) and passes when the job passes:
//! every gate verdict passes or is skipped, grading passes, at least one request
//! succeeded. A failure's message lists the failing verdicts, each naming figure, value,
//! bound and basis (`ttft_ms.p99 = 25.852 ms > bound 0.001 ms (client timing)`). On
//! success the trial then asserts the job's redacted trajectory report
//! ([`snapshot::redacted_job_report`]) with `insta::assert_snapshot!` into the
//! snapshots directory, file `<suite>__<job>.snap`; `cargo insta review` shows what
//! changed, and under `CI=true` a changed or missing snapshot fails (insta writes nothing
//! in CI unless `INSTA_UPDATE` says otherwise).
//!
//! Trials are always `Trial::test` (nextest rejects `Trial::bench` listings). Listing
//! (`--list`) only parses the suite files. Options come from the environment, never from
//! extra flags (libtest-mimic's argument parser rejects unknown flags):
//!
//! | variable | meaning | default |
//! |---|---|---|
//! | `INFERSCOPE_SUITES` | directory of `*.toml` suites | `<project>/suites` |
//! | `INFERSCOPE_ENDPOINT` | endpoint base URL for every suite (like `run --endpoint`) | the suite's, else the built-in simulator |
//! | `INFERSCOPE_MODEL` | model name (like `run --model`) | the suite's |
//! | `INFERSCOPE_SNAPSHOTS` | snapshots directory, or `off` | `<project>/snapshots`, for simulated runs only |
//! | `INFERSCOPE_OUT` | keep every trial's run directory under this directory | temporary, kept only on failure |
//!
//! A suite that names a real engine (`engine = "vllm" | "sglang" | "llamacpp"`) but no
//! endpoint cannot run on the simulator: without `INFERSCOPE_ENDPOINT` its trials are
//! listed as ignored (`cargo nextest run --run-ignored all` runs them, and they fail
//! saying the endpoint is missing). Snapshots are taken by default only for trials
//! served by the built-in simulator (deterministic for a fixed seed); set
//! `INFERSCOPE_SNAPSHOTS` to snapshot real-endpoint trials too. With `cargo test` the
//! trials run one at a time unless `--test-threads` says otherwise; under nextest the
//! repository's `.config/nextest.toml` puts `binary(suites)` in a one-at-a-time test
//! group.
//!
//! # Use from your own repository
//!
//! This crate depends on the driver and the suite schema only: not on the CLI (clap),
//! the dashboard (serve) or the `inferscope-bench` package.
//!
//! ```toml
//! # Cargo.toml
//! [dev-dependencies]
//! inferscope-harness = "0.1"
//!
//! [[test]]
//! name = "suites"
//! path = "benchmarks/suites.rs"
//! harness = false
//! ```
//!
//! ```no_run
//! // benchmarks/suites.rs: suites in ./suites, snapshots in ./snapshots
//! fn main() -> std::process::ExitCode {
//!     inferscope_harness::main_for_suites(env!("CARGO_MANIFEST_DIR"))
//! }
//! ```
//!
//! then `cargo nextest run --test suites` (or `cargo test --test suites`) and
//! `cargo insta review`.

pub mod snapshot;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use libtest_mimic::{Arguments, Failed, Trial};

// The workspace crates the harness drives, under the names its modules use.
use inferscope_driver as runner;
use inferscope_model as model;
use inferscope_records as records;
use inferscope_suite as suite;

use runner::RunOptions;
use suite::{EndpointSetting, EngineProfile, RunOverrides, Suite};

pub use snapshot::{
    SnapshotWrite, redacted_job_report, snap_file_text, snap_header, snapshot_body, snapshot_name,
};

/// Where the harness takes suites, endpoint and snapshots from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HarnessConfig {
    /// Directory whose `*.toml` files are the suites (not recursive).
    pub suites_dir: PathBuf,
    /// Endpoint override for every suite (`INFERSCOPE_ENDPOINT`).
    pub endpoint: Option<String>,
    /// Model override (`INFERSCOPE_MODEL`).
    pub model: Option<String>,
    /// Snapshots directory; `None` disables snapshots.
    pub snapshot_dir: Option<PathBuf>,
    /// Whether to snapshot trials against a real endpoint too (default only simulated).
    pub snapshot_real_endpoints: bool,
    /// Keep each trial's run directory under this directory (`<dir>/<suite>__<job>`).
    pub out_dir: Option<PathBuf>,
}

impl HarnessConfig {
    /// The configuration for project root `root` (suites in `root/suites`, snapshots in
    /// `root/snapshots`) with the `INFERSCOPE_*` environment variables of the module
    /// docs applied through `env` (pass `|k| std::env::var(k).ok()`).
    pub fn from_env_with(root: &Path, env: impl Fn(&str) -> Option<String>) -> HarnessConfig {
        let non_empty = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let snapshots = non_empty("INFERSCOPE_SNAPSHOTS");
        let (snapshot_dir, snapshot_real_endpoints) = match snapshots.as_deref() {
            Some("off") | Some("0") | Some("false") => (None, false),
            Some(dir) => (Some(PathBuf::from(dir)), true),
            None => (Some(root.join("snapshots")), false),
        };
        HarnessConfig {
            suites_dir: non_empty("INFERSCOPE_SUITES")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("suites")),
            endpoint: non_empty("INFERSCOPE_ENDPOINT"),
            model: non_empty("INFERSCOPE_MODEL"),
            snapshot_dir,
            snapshot_real_endpoints,
            out_dir: non_empty("INFERSCOPE_OUT").map(PathBuf::from),
        }
    }

    /// [`HarnessConfig::from_env_with`] on the process environment.
    pub fn from_env(root: &Path) -> HarnessConfig {
        Self::from_env_with(root, |k| std::env::var(k).ok())
    }
}

/// Whether `suite` needs a real endpoint: it names a real engine's metrics profile but
/// no endpoint, so the built-in simulator cannot stand in for it.
pub fn needs_real_endpoint(suite: &Suite) -> bool {
    suite.endpoint.is_none()
        && matches!(
            suite.engine,
            EngineProfile::Vllm | EngineProfile::Sglang | EngineProfile::Llamacpp
        )
}

/// The suite files of `dir` (`*.toml`, sorted by name).
///
/// Errors: the directory cannot be read.
pub fn suite_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
        .collect();
    v.sort();
    Ok(v)
}

/// The trials of every job of every suite in `cfg.suites_dir`, named by job id
/// (`suite::job`). A suite that does not load becomes one failing trial
/// `<file stem>::load` carrying the located error; an unreadable directory one failing
/// trial `suites::load`.
pub fn trials(cfg: &HarnessConfig) -> Vec<Trial> {
    let files = match suite_files(&cfg.suites_dir) {
        Ok(f) => f,
        Err(e) => {
            let msg = format!("cannot read {}: {e}", cfg.suites_dir.display());
            return vec![Trial::test("suites::load", move || Err(msg.into()))];
        }
    };
    let mut out = Vec::new();
    for file in files {
        let suite = match suite::load(&file) {
            Ok(s) => s,
            Err(e) => {
                let stem = file
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let msg = e.to_string();
                out.push(Trial::test(
                    format!("{stem}::load"),
                    move || Err(msg.into()),
                ));
                continue;
            }
        };
        let ignored = cfg.endpoint.is_none() && needs_real_endpoint(&suite);
        for job in &suite.jobs {
            let cfg = cfg.clone();
            let file = file.clone();
            let id = job.id.clone();
            out.push(
                Trial::test(job.id.clone(), move || run_trial(&cfg, &file, &id))
                    .with_ignored_flag(ignored),
            );
        }
    }
    out
}

/// A finished trial run: the job's report and where its run directory is.
pub struct TrialRun {
    /// The run's report.
    pub report: crate::model::RunReport,
    /// The run directory (temporary unless `out_dir` was set).
    pub run_dir: PathBuf,
    /// Whether the endpoint was the built-in simulator.
    pub simulated: bool,
    tmp: Option<tempfile::TempDir>,
}

impl TrialRun {
    /// Keeps a temporary run directory on disk (for a failure message) and returns it.
    pub fn keep(&mut self) -> PathBuf {
        if let Some(t) = self.tmp.take() {
            let _ = t.keep();
        }
        self.run_dir.clone()
    }
}

/// Runs job `job_id` of the suite file `file` alone (the built-in simulator when no
/// endpoint is configured), in a fresh tokio runtime on the calling thread.
///
/// Errors (as text): the suite does not load (bad gate bounds included), the job does not
/// exist, a flag is invalid, the API key variable is unset, the runtime cannot start.
pub fn run_job(cfg: &HarnessConfig, file: &Path, job_id: &str) -> Result<TrialRun, String> {
    let suite = suite::load(file).map_err(|e| e.to_string())?;
    if cfg.endpoint.is_none() && needs_real_endpoint(&suite) {
        return Err(format!(
            "{}: the suite names engine `{}` but no endpoint: set INFERSCOPE_ENDPOINT",
            file.display(),
            suite.engine.as_str()
        ));
    }
    let overrides = RunOverrides {
        endpoint: cfg.endpoint.clone(),
        model: cfg.model.clone(),
        capture_timeline: false,
        filter: Some(job_id.to_string()),
    };
    overrides
        .validate()
        .map_err(|e| format!("INFERSCOPE_ENDPOINT/INFERSCOPE_MODEL: {e}"))?;
    let mut resolved = suite::resolve(&suite, &overrides);
    resolved.jobs.retain(|j| j.job.id == job_id);
    if resolved.jobs.is_empty() {
        return Err(format!("{}: no job `{job_id}`", file.display()));
    }
    resolved
        .check_endpoint_settings()
        .map_err(|e| e.to_string())?;
    let simulated = matches!(resolved.endpoint.value, EndpointSetting::Simulated);
    let (run_dir, tmp) = match &cfg.out_dir {
        Some(d) => {
            // The trial's own directory under INFERSCOPE_OUT: a previous run of this trial
            // is replaced, never mixed with this one (its timeline would outlive it).
            let dir = d.join(snapshot_name(job_id));
            if dir.join("report.json").is_file() {
                std::fs::remove_dir_all(&dir)
                    .map_err(|e| format!("{}: removing the previous run: {e}", dir.display()))?;
            }
            (dir, None)
        }
        None => {
            let t = tempfile::Builder::new()
                .prefix("inferscope-trial-")
                .tempdir()
                .map_err(|e| format!("temporary run directory: {e}"))?;
            (t.path().join("run"), Some(t))
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let outcome = rt.block_on(runner::run_with(
        RunOptions {
            suites: vec![resolved],
            out: Some(run_dir.clone()),
            sink_override: None,
        },
        Arc::new(AtomicBool::new(false)),
        runner::RunExtras {
            events: runner::events::EventSink::new(vec![Box::new(StderrDiagnostics)]),
            ..Default::default()
        },
    ));
    rt.shutdown_background();
    Ok(TrialRun {
        report: outcome.report,
        run_dir,
        simulated,
        tmp,
    })
}

/// A trial's diagnostics (a capture that could not start, artifacts that could not be
/// written) on stderr, where the test harness shows a failing trial's output.
struct StderrDiagnostics;

impl runner::events::Reporter for StderrDiagnostics {
    fn on_event(&mut self, event: &runner::events::RunEvent) {
        if let Some(line) = event.diagnostic() {
            eprintln!("{line}");
        }
    }
}

/// The failure message of a job that did not pass: one line per failing verdict
/// (figure, value, bound, basis), failed grading check, failed-request summary or note.
pub fn failure_message(report: &crate::model::RunReport, job_id: &str) -> Option<String> {
    let job = report.jobs.iter().find(|j| j.id == job_id)?;
    if job.status == crate::model::JobStatus::Pass {
        return None;
    }
    let word = match job.status {
        crate::model::JobStatus::Fail => "failed".to_string(),
        other => other.as_str().replace('_', " "),
    };
    let mut lines = vec![format!("{job_id} {word}:")];
    lines.extend(job.failure_lines().into_iter().map(|l| format!("  {l}")));
    Some(lines.join("\n"))
}

fn run_trial(cfg: &HarnessConfig, file: &Path, job_id: &str) -> Result<(), Failed> {
    let mut run = run_job(cfg, file, job_id)?;
    if !run.report.jobs.iter().any(|j| j.id == job_id) {
        let dir = run.keep();
        return Err(format!(
            "{job_id}: the run has no report for the job (run directory {})",
            dir.display()
        )
        .into());
    }
    if let Some(msg) = failure_message(&run.report, job_id) {
        let dir = run.keep();
        return Err(format!("{msg}\n  run directory: {}", dir.display()).into());
    }
    let snapshot_dir = cfg
        .snapshot_dir
        .as_ref()
        .filter(|_| run.simulated || cfg.snapshot_real_endpoints);
    if let Some(dir) = snapshot_dir {
        // A load job's records and unit lines are in requests.jsonl (streamed as its units
        // ended): the snapshot counts them from there.
        let mut with_records = run.report.clone();
        if let Err(e) = crate::records::read_into(&run.run_dir, &mut with_records) {
            let kept = run.keep();
            return Err(format!("{job_id}: {e}\n  run directory: {}", kept.display()).into());
        }
        let body = snapshot_body(&with_records, job_id)
            .ok_or_else(|| format!("{job_id}: no report to snapshot"))?;
        assert_snapshot(dir, job_id, &body);
    }
    Ok(())
}

/// Asserts `body` as the insta snapshot `<dir>/<snapshot_name(job_id)>.snap` (panics on
/// a mismatch, as insta does; libtest-mimic reports the panic as the trial's failure).
/// Settings are thread-local, so they are bound here, inside the trial.
pub fn assert_snapshot(dir: &Path, job_id: &str, body: &str) {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(dir);
    settings.set_prepend_module_to_snapshot(false);
    let (_, description, _) = snapshot::snap_header(job_id);
    settings.set_description(description);
    let name = snapshot_name(job_id);
    settings.bind(|| {
        insta::assert_snapshot!(name.as_str(), body);
    });
}

/// The harness entry point for a `[[test]] harness = false` target: parses the
/// libtest arguments (`--list`, `--exact`, filters, `--ignored`, … — nextest's protocol),
/// builds [`trials`] from [`HarnessConfig::from_env`]`(project_root)`, runs them one at a
/// time unless `--test-threads` says otherwise, and returns the exit code (101 when a
/// trial failed).
pub fn main_for_suites(project_root: impl AsRef<Path>) -> ExitCode {
    main_with(HarnessConfig::from_env(project_root.as_ref()))
}

/// [`main_for_suites`] with an explicit configuration.
pub fn main_with(cfg: HarnessConfig) -> ExitCode {
    let mut args = Arguments::from_args();
    if args.test_threads.is_none() {
        // Timing gates are measurements: never run two trials at once by default.
        args.test_threads = Some(1);
    }
    libtest_mimic::run(&args, trials(&cfg)).exit_code()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_from_env() {
        let root = Path::new("/p");
        let c = HarnessConfig::from_env_with(root, |_| None);
        assert_eq!(c.suites_dir, Path::new("/p/suites"));
        assert_eq!(c.snapshot_dir.as_deref(), Some(Path::new("/p/snapshots")));
        assert!(!c.snapshot_real_endpoints);
        assert_eq!(c.endpoint, None);
        let c = HarnessConfig::from_env_with(root, |k| match k {
            "INFERSCOPE_SUITES" => Some("/s".into()),
            "INFERSCOPE_ENDPOINT" => Some("http://127.0.0.1:8000/v1".into()),
            "INFERSCOPE_MODEL" => Some("m".into()),
            "INFERSCOPE_SNAPSHOTS" => Some("off".into()),
            "INFERSCOPE_OUT" => Some("".into()),
            _ => None,
        });
        assert_eq!(c.suites_dir, Path::new("/s"));
        assert_eq!(c.endpoint.as_deref(), Some("http://127.0.0.1:8000/v1"));
        assert_eq!(c.model.as_deref(), Some("m"));
        assert_eq!(c.snapshot_dir, None);
        assert_eq!(c.out_dir, None);
    }
}
