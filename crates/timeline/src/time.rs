//! Time sources of a sink: the run's monotonic clock, or a settable clock for tests.

use std::sync::atomic::{AtomicU64, Ordering};

use inferscope_clock::RunClock;

/// A monotonic time source for a sink: `elapsed_ns` from the run's reference instant,
/// plus the anchor and clock domain written into the artifact (docs/samples.md "The clock";
/// tests inject a settable clock).
pub trait TimeSource: Send + Sync {
    /// Nanoseconds since the reference instant, now.
    fn elapsed_ns(&self) -> u64;
    /// Unix-epoch nanoseconds of the reference instant.
    fn reference_instant_unix_ns(&self) -> u64;
    /// The clock domain id (must satisfy [`super::ids::is_valid_id`]).
    fn clock_domain_id(&self) -> &str;
}

impl TimeSource for RunClock {
    #[inline]
    fn elapsed_ns(&self) -> u64 {
        RunClock::elapsed_ns(self)
    }
    fn reference_instant_unix_ns(&self) -> u64 {
        RunClock::reference_instant_unix_ns(self)
    }
    fn clock_domain_id(&self) -> &str {
        RunClock::clock_domain_id(self)
    }
}

/// A settable clock for deterministic tests and replays: `elapsed_ns` is whatever was
/// last [`set`](ManualClock::set) (ns), the anchor and domain are fixed.
#[derive(Debug)]
pub struct ManualClock {
    now: AtomicU64,
    anchor_unix_ns: u64,
    domain: String,
}

impl ManualClock {
    /// A clock reading 0 ns, anchored at `anchor_unix_ns`, in clock domain `domain`.
    pub fn new(anchor_unix_ns: u64, domain: &str) -> Self {
        Self {
            now: AtomicU64::new(0),
            anchor_unix_ns,
            domain: domain.to_string(),
        }
    }
    /// Sets the reading (ns since the reference instant); may go backwards (to test
    /// clock-regression rejection).
    pub fn set(&self, elapsed_ns: u64) {
        self.now.store(elapsed_ns, Ordering::SeqCst);
    }
    /// Advances the reading by `ns`.
    pub fn advance(&self, ns: u64) {
        self.now.fetch_add(ns, Ordering::SeqCst);
    }
}

impl TimeSource for ManualClock {
    fn elapsed_ns(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
    fn reference_instant_unix_ns(&self) -> u64 {
        self.anchor_unix_ns
    }
    fn clock_domain_id(&self) -> &str {
        &self.domain
    }
}
