//! [`InFlight`]: a count of work in flight with its high-water mark, shared by the
//! streaming client (streams being read, `http.rs`) and the load executor (requests in
//! flight at a load point, `crate::load::exec`).

use std::sync::atomic::{AtomicU32, Ordering};

/// A counter of work in flight with its high-water mark. For the load executor: the
/// achieved concurrency of requests, which can be lower than that of units (an agentic
/// unit runs tools between its requests). For the client: the streams being read now.
#[derive(Debug, Default)]
pub struct InFlight {
    now: AtomicU32,
    max: AtomicU32,
}

/// Decrements its [`InFlight`] when dropped.
#[derive(Debug)]
pub struct InFlightGuard<'a>(&'a InFlight);

impl InFlight {
    /// One more in flight until the guard drops.
    pub fn enter(&self) -> InFlightGuard<'_> {
        let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.max.fetch_max(n, Ordering::SeqCst);
        InFlightGuard(self)
    }
    /// The most in flight at once so far.
    pub fn max(&self) -> u32 {
        self.max.load(Ordering::SeqCst)
    }
    /// In flight now.
    pub fn current(&self) -> u32 {
        self.now.load(Ordering::SeqCst)
    }
}

impl Drop for InFlightGuard<'_> {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}
