//! The I/O edge of the overhead command: process CPU time, peak RSS, GPU memory of the
//! runner process, and the per-run figures read from a run's report.
//!
//! Scope: overhead runs are in-process (each a full [`crate::runner::run`] inside this
//! process), so every process figure covers the whole runner — drivers, client, capture,
//! samplers and, when the suite is simulated, the in-process simulator too.

use crate::model::RunReport;
use crate::stats::percentile;

use super::analysis::GpuReading;

/// CPU time of this process, user + system over all threads, ns (`getrusage(2)`
/// `RUSAGE_SELF`); `None` when the call fails.
pub fn process_cpu_ns() -> Option<u64> {
    // SAFETY: getrusage writes into the zeroed struct we pass; no other invariant.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return None;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Some(tv(ru.ru_utime) + tv(ru.ru_stime))
}

/// Resets this process's peak-RSS high-water mark (`VmHWM`) by writing `5` to
/// `/proc/self/clear_refs` (Linux ≥ 4.0, proc(5)). Returns whether it worked.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `VmHWM` of `/proc/self/status` text, bytes (the file gives kB). Pure.
pub fn parse_vm_hwm(status: &str) -> Option<u64> {
    status.lines().find_map(|l| {
        let rest = l.strip_prefix("VmHWM:")?;
        let kb: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    })
}

/// This process's peak RSS since start or the last [`reset_peak_rss`], bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .as_deref()
        .and_then(parse_vm_hwm)
}

/// One entry of an NVML process list: PID and used GPU memory (`None` when NVML does
/// not report it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuProcess {
    /// PID as NVML reports it (the host PID namespace's).
    pub pid: u32,
    /// Used GPU memory, bytes.
    pub used_bytes: Option<u64>,
}

/// The GPU memory `pid` holds according to process lists `procs` (all devices). Pure.
///
/// - `pid` listed with memory → the sum of its entries;
/// - `pid` listed without a memory figure → unavailable;
/// - `pid` not listed and no listed PID visible to us (`pid_visible` false for all, and
///   the list non-empty) → unavailable: NVML reports PIDs of another PID namespace (a
///   container), so absence proves nothing;
/// - otherwise → measured 0.
pub fn gpu_bytes_for_pid(
    pid: u32,
    procs: &[GpuProcess],
    pid_visible: impl Fn(u32) -> bool,
) -> GpuReading {
    let mine: Vec<&GpuProcess> = procs.iter().filter(|p| p.pid == pid).collect();
    if !mine.is_empty() {
        let mut sum = 0u64;
        for p in mine {
            match p.used_bytes {
                Some(b) => sum += b,
                None => {
                    return GpuReading::Unavailable {
                        reason: "NVML lists the runner process without a memory figure".into(),
                    };
                }
            }
        }
        return GpuReading::Measured { bytes: sum };
    }
    if !procs.is_empty() && !procs.iter().any(|p| pid_visible(p.pid)) {
        return GpuReading::Unavailable {
            reason: "NVML process PIDs are from another PID namespace".into(),
        };
    }
    GpuReading::Measured { bytes: 0 }
}

/// The GPU memory this process holds on every NVIDIA device (NVML compute and graphics
/// process lists); unavailable without NVML, without a device, or when a list query
/// fails (e.g. `NotSupported`) — never 0 in those cases.
pub fn runner_gpu_bytes() -> GpuReading {
    use nvml_wrapper::enums::device::UsedGpuMemory;
    let nvml = match crate::telemetry::power::nvml::handle() {
        Ok(n) => n,
        Err(reason) => return GpuReading::Unavailable { reason },
    };
    let count = match nvml.device_count() {
        Ok(0) => {
            return GpuReading::Unavailable {
                reason: "NVML reports no device".into(),
            };
        }
        Ok(n) => n,
        Err(e) => {
            return GpuReading::Unavailable {
                reason: format!("NVML device count: {e}"),
            };
        }
    };
    let mut procs = Vec::new();
    for i in 0..count {
        let dev = match nvml.device_by_index(i) {
            Ok(d) => d,
            Err(e) => {
                return GpuReading::Unavailable {
                    reason: format!("NVML device {i}: {e}"),
                };
            }
        };
        for list in [
            dev.running_compute_processes(),
            dev.running_graphics_processes(),
        ] {
            match list {
                Ok(ps) => procs.extend(ps.into_iter().map(|p| GpuProcess {
                    pid: p.pid,
                    used_bytes: match p.used_gpu_memory {
                        UsedGpuMemory::Used(b) => Some(b),
                        UsedGpuMemory::Unavailable => None,
                    },
                })),
                Err(e) => {
                    return GpuReading::Unavailable {
                        reason: format!("NVML process list of device {i}: {e}"),
                    };
                }
            }
        }
    }
    gpu_bytes_for_pid(std::process::id(), &procs, |p| {
        std::path::Path::new(&format!("/proc/{p}")).exists()
    })
}

/// Workload figures of one run, read from its report (pure): successful and failed
/// requests, the sum of job durations (ns), throughput (requests/s), the E2E p50 (ms)
/// over successful requests and each successful request's E2E by id.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadFigures {
    /// Successful requests.
    pub ok: u64,
    /// Failed requests.
    pub failed: u64,
    /// Σ job `duration_ns`.
    pub workload_ns: u64,
    /// `ok / workload_ns`, requests/s.
    pub throughput_rps: Option<f64>,
    /// E2E p50, ms.
    pub e2e_p50_ms: Option<f64>,
    /// E2E of each successful request by request id, ms, in request order.
    pub request_e2e_ms: Vec<(String, f64)>,
}

/// Computes [`WorkloadFigures`] from `report` (pure).
pub fn workload_figures(report: &RunReport) -> WorkloadFigures {
    let mut ok = 0u64;
    let mut failed = 0u64;
    let mut e2e = Vec::new();
    let mut request_e2e_ms = Vec::new();
    let mut workload_ns = 0u64;
    for j in &report.jobs {
        workload_ns += j.duration_ns;
        for r in &j.requests {
            if r.is_success() {
                ok += 1;
                if let Some(v) = r.e2e_ms() {
                    e2e.push(v);
                    request_e2e_ms.push((r.request_id.clone(), v));
                }
            } else {
                failed += 1;
            }
        }
    }
    let throughput_rps =
        (ok > 0 && workload_ns > 0).then(|| ok as f64 / (workload_ns as f64 / 1e9));
    WorkloadFigures {
        ok,
        failed,
        workload_ns,
        throughput_rps,
        e2e_p50_ms: percentile(&e2e, 0.5),
        request_e2e_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vm_hwm_is_parsed_in_bytes() {
        let t = "Name:\tx\nVmPeak:\t  2000 kB\nVmHWM:\t    1234 kB\nVmRSS:\t 1000 kB\n";
        assert_eq!(parse_vm_hwm(t), Some(1234 * 1024));
        assert_eq!(parse_vm_hwm("VmRSS: 1 kB\n"), None);
    }

    #[test]
    fn gpu_reading_rules() {
        let p = |pid, b| GpuProcess { pid, used_bytes: b };
        // Listed: the sum of its entries (two devices).
        assert_eq!(
            gpu_bytes_for_pid(7, &[p(7, Some(10)), p(9, Some(5)), p(7, Some(3))], |_| true),
            GpuReading::Measured { bytes: 13 }
        );
        // Listed without a figure: unavailable, not 0.
        assert!(matches!(
            gpu_bytes_for_pid(7, &[p(7, None)], |_| true),
            GpuReading::Unavailable { .. }
        ));
        // Not listed, others visible: measured 0.
        assert_eq!(
            gpu_bytes_for_pid(7, &[p(9, Some(5))], |_| true),
            GpuReading::Measured { bytes: 0 }
        );
        // Empty lists: measured 0 (no process holds GPU memory).
        assert_eq!(
            gpu_bytes_for_pid(7, &[], |_| false),
            GpuReading::Measured { bytes: 0 }
        );
        // Not listed and no listed PID visible: another PID namespace → unavailable.
        assert!(matches!(
            gpu_bytes_for_pid(7, &[p(4242, Some(5))], |_| false),
            GpuReading::Unavailable { .. }
        ));
    }

    #[test]
    fn cpu_and_rss_readings_exist_on_linux() {
        let a = process_cpu_ns().expect("getrusage");
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = process_cpu_ns().unwrap();
        assert!(b >= a);
        assert!(peak_rss_bytes().is_some_and(|v| v > 0));
    }
}
