//! Thread placement shared by the benchmarks that pin their threads (`client_fidelity`,
//! `timeline_insert`): included with `#[path = "pin.rs"] mod pin;`.

/// Pins the calling thread to `cpu`, if given (Linux; elsewhere a no-op). A CPU the
/// machine does not have leaves the thread where it is.
pub fn pin_current_thread(cpu: Option<usize>) {
    let Some(cpu) = cpu else {
        return;
    };
    #[cfg(target_os = "linux")]
    // SAFETY: a zeroed cpu_set_t is a valid empty set; sched_setaffinity(0) targets this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = cpu;
}
