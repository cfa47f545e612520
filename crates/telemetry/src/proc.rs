//! `/proc/<pid>` sampling of the engine process (docs/samples.md), optionally over its descendants
//! (docs/telemetry.md "`/proc` sampling": vLLM V1 runs API server, EngineCore and workers as
//! separate processes).
//!
//! Read per process: `VmRSS` (kB → bytes) and `Threads` from `/proc/<pid>/status`; `utime`
//! and `stime` (fields 14 and 15, clock ticks = jiffies, kept raw) from `/proc/<pid>/stat`,
//! parsed after the **last** `)` because `comm` may contain spaces and parentheses
//! (`proc_pid_stat(5)`). Conversion to seconds happens at the report edge with [`clk_tck`].
//! The parsers are pure; [`read_process`] and [`ProcReader`] do the I/O.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One `/proc` sample (a line of `samples/proc.jsonl`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcSample {
    /// ns from the run's reference instant.
    pub elapsed_ns: u64,
    /// Resident set size summed over the sampled processes, bytes (`VmRSS` kB × 1024); `None`
    /// when no process reported one (kernel threads, zombies).
    pub rss_bytes: Option<u64>,
    /// Threads summed over the sampled processes.
    pub threads: Option<u64>,
    /// User-mode CPU time summed over the sampled processes, jiffies (clock ticks).
    pub utime_jiffies: Option<u64>,
    /// Kernel-mode CPU time summed over the sampled processes, jiffies.
    pub stime_jiffies: Option<u64>,
    /// Processes summed (1 without descendants). When a descendant exits its CPU time leaves
    /// the sum, so summed jiffies may decrease when this count changes.
    pub process_count: u32,
}

/// The fields used from `/proc/<pid>/stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatFields {
    /// Field 3, process state (`R`, `S`, `Z`, …).
    pub state: char,
    /// Field 4, parent pid.
    pub ppid: u32,
    /// Field 14, user-mode time, jiffies.
    pub utime: u64,
    /// Field 15, kernel-mode time, jiffies.
    pub stime: u64,
    /// Field 20, number of threads.
    pub num_threads: u64,
    /// Field 22, start time after boot, jiffies (detects pid reuse).
    pub starttime: u64,
}

/// Parses `/proc/<pid>/stat` text. Fields are counted after the last `)` (field 3 onwards),
/// so a `comm` such as `(a) (b c)` is handled. Errors name the missing field.
pub fn parse_stat(text: &str) -> Result<StatFields, String> {
    let close = text.rfind(')').ok_or("no ')' closing comm")?;
    let rest: Vec<&str> = text[close + 1..].split_whitespace().collect();
    // rest[0] = field 3
    let field = |n: usize| -> Result<&str, String> {
        rest.get(n - 3)
            .copied()
            .ok_or_else(|| format!("stat has no field {n}"))
    };
    let num = |n: usize| -> Result<u64, String> {
        field(n)?
            .parse::<u64>()
            .map_err(|_| format!("stat field {n} is not an integer"))
    };
    Ok(StatFields {
        state: field(3)?.chars().next().ok_or("empty state")?,
        ppid: u32::try_from(num(4)?).map_err(|_| "ppid out of range")?,
        utime: num(14)?,
        stime: num(15)?,
        num_threads: num(20)?,
        starttime: num(22)?,
    })
}

/// The fields used from `/proc/<pid>/status`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct StatusFields {
    /// `VmRSS` converted from kB to bytes; absent for kernel threads and zombies.
    pub rss_bytes: Option<u64>,
    /// `Threads`.
    pub threads: Option<u64>,
}

/// Parses `/proc/<pid>/status` text (`VmRSS:  1234 kB`, `Threads:  7`).
pub fn parse_status(text: &str) -> StatusFields {
    let mut out = StatusFields::default();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("VmRSS:") {
            let mut it = v.split_whitespace();
            let n = it.next().and_then(|n| n.parse::<u64>().ok());
            let unit = it.next().unwrap_or("kB");
            let mult = match unit {
                "kB" | "KB" | "kb" => 1024,
                "mB" | "MB" => 1024 * 1024,
                _ => 1024,
            };
            out.rss_bytes = n.map(|n| n.saturating_mul(mult));
        } else if let Some(v) = line.strip_prefix("Threads:") {
            out.threads = v.trim().parse::<u64>().ok();
        }
    }
    out
}

/// `sysconf(_SC_CLK_TCK)`: jiffies per second for converting `utime`/`stime` at the report
/// edge (docs/samples.md). `None` if the call fails.
pub fn clk_tck() -> Option<u64> {
    // SAFETY: sysconf has no preconditions and only reads a configuration value.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (v > 0).then_some(v as u64)
}

/// The descendants of `root` (not including it) in a `(pid, ppid)` table, breadth-first,
/// sorted. Pure.
pub fn descendants(root: u32, table: &[(u32, u32)]) -> Vec<u32> {
    let mut children: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    for &(pid, ppid) in table {
        if pid != ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut seen = BTreeSet::new();
    let mut queue = vec![root];
    while let Some(p) = queue.pop() {
        if let Some(cs) = children.get(&p) {
            for &c in cs {
                if c != root && seen.insert(c) {
                    queue.push(c);
                }
            }
        }
    }
    seen.into_iter().collect()
}

/// Why a process could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcError {
    /// The pid no longer exists (ENOENT / ESRCH).
    Vanished,
    /// Any other failure (permission, malformed file).
    Other(String),
}

fn read_file(path: &Path) -> Result<String, ProcError> {
    std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ProcError::Vanished,
        _ if e.raw_os_error() == Some(libc::ESRCH) => ProcError::Vanished,
        _ => ProcError::Other(format!("{}: {e}", path.display())),
    })
}

/// Reads `stat` and `status` of one process under `proc_root` (normally `/proc`).
pub fn read_process(proc_root: &Path, pid: u32) -> Result<(StatFields, StatusFields), ProcError> {
    let dir = proc_root.join(pid.to_string());
    let stat = read_file(&dir.join("stat"))?;
    let stat = parse_stat(&stat).map_err(ProcError::Other)?;
    let status = read_file(&dir.join("status"))?;
    Ok((stat, parse_status(&status)))
}

/// Reads `(pid, ppid)` of every process under `proc_root`.
fn process_table(proc_root: &Path) -> Vec<(u32, u32)> {
    let Ok(rd) = std::fs::read_dir(proc_root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if let Ok(text) = std::fs::read_to_string(e.path().join("stat"))
            && let Ok(f) = parse_stat(&text)
        {
            out.push((pid, f.ppid));
        }
    }
    out
}

/// Outcome of one [`ProcReader::sample`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProcOutcome {
    /// A sample was taken.
    Sample(ProcSample),
    /// The root process is gone (vanished, zombie, or its pid was reused); the reason.
    Ended(String),
    /// A transient read failure; the reason.
    Error(String),
}

/// Stateful reader for one root pid: remembers the root's start time so a reused pid ends the
/// source instead of silently sampling another process.
#[derive(Debug)]
pub struct ProcReader {
    proc_root: PathBuf,
    pid: u32,
    include_descendants: bool,
    starttime: Option<u64>,
}

impl ProcReader {
    /// A reader of `pid` under `/proc`.
    pub fn new(pid: u32, include_descendants: bool) -> Self {
        Self::with_root(PathBuf::from("/proc"), pid, include_descendants)
    }

    /// A reader under another proc root (tests).
    pub fn with_root(proc_root: PathBuf, pid: u32, include_descendants: bool) -> Self {
        Self {
            proc_root,
            pid,
            include_descendants,
            starttime: None,
        }
    }

    /// Takes one sample stamped `elapsed_ns`.
    pub fn sample(&mut self, elapsed_ns: u64) -> ProcOutcome {
        let (stat, status) = match read_process(&self.proc_root, self.pid) {
            Ok(v) => v,
            Err(ProcError::Vanished) => {
                return ProcOutcome::Ended(format!("pid {} vanished", self.pid));
            }
            Err(ProcError::Other(e)) => return ProcOutcome::Error(e),
        };
        if matches!(stat.state, 'Z' | 'X' | 'x') {
            return ProcOutcome::Ended(format!("pid {} exited (state {})", self.pid, stat.state));
        }
        match self.starttime {
            None => self.starttime = Some(stat.starttime),
            Some(t) if t != stat.starttime => {
                return ProcOutcome::Ended(format!(
                    "pid {} was reused by another process",
                    self.pid
                ));
            }
            _ => {}
        }
        let mut acc = Acc::default();
        acc.add(&stat, &status);
        if self.include_descendants {
            let table = process_table(&self.proc_root);
            for child in descendants(self.pid, &table) {
                if let Ok((st, stt)) = read_process(&self.proc_root, child)
                    && !matches!(st.state, 'Z' | 'X' | 'x')
                {
                    acc.add(&st, &stt);
                }
            }
        }
        ProcOutcome::Sample(ProcSample {
            elapsed_ns,
            rss_bytes: acc.rss,
            threads: acc.threads,
            utime_jiffies: acc.utime,
            stime_jiffies: acc.stime,
            process_count: acc.count,
        })
    }
}

#[derive(Default)]
struct Acc {
    rss: Option<u64>,
    threads: Option<u64>,
    utime: Option<u64>,
    stime: Option<u64>,
    count: u32,
}

fn add_opt(a: &mut Option<u64>, v: Option<u64>) {
    if let Some(v) = v {
        *a = Some(a.unwrap_or(0).saturating_add(v));
    }
}

impl Acc {
    fn add(&mut self, st: &StatFields, stt: &StatusFields) {
        add_opt(&mut self.rss, stt.rss_bytes);
        add_opt(&mut self.threads, stt.threads.or(Some(st.num_threads)));
        add_opt(&mut self.utime, Some(st.utime));
        add_opt(&mut self.stime, Some(st.stime));
        self.count += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_with_parens_and_spaces_in_comm() {
        // fields: pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt
        // cmajflt utime stime cutime cstime priority nice num_threads itrealvalue starttime …
        let text = "4242 (vllm (Engine) core) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    1234 567 0 0 20 0 9 0 98765 123456 789 18446744073709551615";
        let f = parse_stat(text).unwrap();
        assert_eq!(f.state, 'S');
        assert_eq!(f.ppid, 1);
        assert_eq!(f.utime, 1234);
        assert_eq!(f.stime, 567);
        assert_eq!(f.num_threads, 9);
        assert_eq!(f.starttime, 98765);
    }

    #[test]
    fn status_rss_in_bytes() {
        let s = parse_status("Name:\tx\nVmRSS:\t   2048 kB\nThreads:\t12\n");
        assert_eq!(s.rss_bytes, Some(2048 * 1024));
        assert_eq!(s.threads, Some(12));
        assert_eq!(
            parse_status("Name:\tkthreadd\nThreads:\t1\n").rss_bytes,
            None
        );
    }

    #[test]
    fn descendants_walk_the_tree() {
        let table = [(1, 0), (10, 1), (11, 10), (12, 10), (13, 11), (20, 1)];
        assert_eq!(descendants(10, &table), vec![11, 12, 13]);
        assert_eq!(descendants(13, &table), Vec::<u32>::new());
    }

    #[test]
    fn fake_proc_root_vanish_and_reuse() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("77");
        std::fs::create_dir(&p).unwrap();
        let stat =
            |start: u64| format!("77 (x) S 1 1 1 0 -1 0 0 0 0 0 5 6 0 0 20 0 3 0 {start} 0 0");
        std::fs::write(p.join("stat"), stat(100)).unwrap();
        std::fs::write(p.join("status"), "VmRSS: 10 kB\nThreads: 3\n").unwrap();
        let mut r = ProcReader::with_root(dir.path().to_path_buf(), 77, false);
        match r.sample(1) {
            ProcOutcome::Sample(s) => {
                assert_eq!(s.rss_bytes, Some(10240));
                assert_eq!(s.utime_jiffies, Some(5));
                assert_eq!(s.stime_jiffies, Some(6));
                assert_eq!(s.threads, Some(3));
            }
            o => panic!("{o:?}"),
        }
        std::fs::write(p.join("stat"), stat(200)).unwrap();
        assert!(matches!(r.sample(2), ProcOutcome::Ended(m) if m.contains("reused")));
        std::fs::remove_dir_all(&p).unwrap();
        assert!(matches!(r.sample(3), ProcOutcome::Ended(m) if m.contains("vanished")));
    }
}
