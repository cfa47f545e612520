//! SWE driver: an opaque external harness command with a timeout (docs/suite.md).
//!
//! The harness gets a `harness` span and never invented per-turn timings. It runs in its
//! own process group; on timeout the whole group is killed (SIGKILL to `-pgid`). The
//! environment carries `INFERSCOPE_ENDPOINT`, `INFERSCOPE_MODEL` and
//! `INFERSCOPE_STEPS_FILE`; step markers the harness writes there (docs/measurement.md JSONL) are read
//! back with integer-nanosecond parsing and joined like the runner's own steps.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;

/// Bytes of harness stdout kept for grading (the rest is discarded, counted).
pub const MAX_STDOUT_BYTES: usize = 1 << 20;

/// Settings of one harness run.
#[derive(Debug, Clone)]
pub struct SwePlan {
    /// argv (first element is the program).
    pub command: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Extra environment.
    pub env: BTreeMap<String, String>,
    /// Kill the process group after this long.
    pub timeout: Duration,
    /// Endpoint base URL exported as `INFERSCOPE_ENDPOINT`.
    pub endpoint: String,
    /// Model exported as `INFERSCOPE_MODEL`.
    pub model: String,
    /// API key exported as `OPENAI_API_KEY` when the suite names one.
    pub api_key: Option<String>,
    /// Path exported as `INFERSCOPE_STEPS_FILE`.
    pub steps_file: PathBuf,
}

/// What the harness did.
#[derive(Debug, Clone)]
pub struct SweOutcome {
    /// Exit code (`None` when killed by a signal or never started).
    pub exit_code: Option<i32>,
    /// Whether the timeout fired and the group was killed.
    pub timed_out: bool,
    /// Start failure text (program missing, …).
    pub spawn_error: Option<String>,
    /// Captured stdout (≤ [`MAX_STDOUT_BYTES`]).
    pub stdout: String,
    /// What was read from `INFERSCOPE_STEPS_FILE` (set by the runner after the harness).
    pub steps_file: Option<StepsFileReport>,
}

/// What was read from an SWE harness's steps file: the report model's.
pub use crate::model::StepsFileReport;

/// Runs the harness to completion or timeout.
pub async fn run_harness(plan: &SwePlan) -> SweOutcome {
    let Some((prog, args)) = plan.command.split_first() else {
        return SweOutcome {
            exit_code: None,
            timed_out: false,
            spawn_error: Some("empty command".into()),
            stdout: String::new(),
            steps_file: None,
        };
    };
    let mut cmd = tokio::process::Command::new(prog);
    cmd.args(args)
        .current_dir(&plan.cwd)
        .envs(&plan.env)
        .env("INFERSCOPE_ENDPOINT", &plan.endpoint)
        .env("INFERSCOPE_MODEL", &plan.model)
        .env("INFERSCOPE_STEPS_FILE", &plan.steps_file)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(k) = &plan.api_key {
        cmd.env("OPENAI_API_KEY", k);
    }
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return SweOutcome {
                exit_code: None,
                timed_out: false,
                spawn_error: Some(format!("cannot start `{prog}`: {e}")),
                stdout: String::new(),
                steps_file: None,
            };
        }
    };
    let pid = child.id();
    let mut stdout_pipe = child.stdout.take();
    let reader = tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(p) = stdout_pipe.as_mut() {
            let mut chunk = [0u8; 8192];
            loop {
                match p.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let room = MAX_STDOUT_BYTES.saturating_sub(buf.len());
                        buf.extend_from_slice(&chunk[..n.min(room)]);
                    }
                }
            }
        }
        buf
    });
    let (exit_code, timed_out) = match tokio::time::timeout(plan.timeout, child.wait()).await {
        Ok(Ok(status)) => (status.code(), false),
        Ok(Err(_)) => (None, false),
        Err(_) => {
            if let Some(pid) = pid {
                kill_group(pid);
            }
            let _ = child.wait().await;
            (None, true)
        }
    };
    let stdout = match tokio::time::timeout(Duration::from_secs(5), reader).await {
        Ok(Ok(b)) => String::from_utf8_lossy(&b).into_owned(),
        _ => String::new(),
    };
    SweOutcome {
        exit_code,
        timed_out,
        spawn_error: None,
        stdout,
        steps_file: None,
    }
}

fn kill_group(pid: u32) {
    // SAFETY: kill(2) with a negative pid signals the process group we created with
    // `process_group(0)` (pgid == child pid); it has no memory-safety preconditions.
    unsafe {
        libc::kill(-(pid as i32), libc::SIGKILL);
    }
}

/// Resolves a harness argv element: a relative path that exists under `root` becomes
/// absolute; other arguments pass through.
pub fn resolve_arg(root: &Path, arg: &str) -> String {
    let p = root.join(arg);
    if !Path::new(arg).is_absolute() && p.exists() {
        p.to_string_lossy().into_owned()
    } else {
        arg.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(cmd: &[&str], timeout_ms: u64) -> SwePlan {
        SwePlan {
            command: cmd.iter().map(|s| s.to_string()).collect(),
            cwd: std::env::temp_dir(),
            env: BTreeMap::new(),
            timeout: Duration::from_millis(timeout_ms),
            endpoint: "http://127.0.0.1:9/v1".into(),
            model: "m".into(),
            api_key: None,
            steps_file: std::env::temp_dir().join("steps-test.jsonl"),
        }
    }

    #[tokio::test]
    async fn exports_environment_and_captures_stdout() {
        let o = run_harness(&plan(
            &["sh", "-c", "echo $INFERSCOPE_MODEL $INFERSCOPE_ENDPOINT"],
            10_000,
        ))
        .await;
        assert_eq!(o.exit_code, Some(0));
        assert_eq!(o.stdout.trim(), "m http://127.0.0.1:9/v1");
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_process_group() {
        // The child spawns a grandchild that would outlive a plain kill of the child.
        let marker = std::env::temp_dir().join(format!("swe-grandchild-{}", std::process::id()));
        let _ = std::fs::remove_file(&marker);
        let script = format!("(sleep 3; touch {}) & sleep 30", marker.display());
        let o = run_harness(&plan(&["sh", "-c", &script], 300)).await;
        assert!(o.timed_out);
        assert_eq!(o.exit_code, None);
        tokio::time::sleep(Duration::from_millis(3500)).await;
        assert!(!marker.exists(), "grandchild survived the group kill");
    }

    #[tokio::test]
    async fn missing_program_is_a_spawn_error() {
        let o = run_harness(&plan(&["/nonexistent/prog"], 1000)).await;
        assert!(o.spawn_error.is_some());
    }
}
