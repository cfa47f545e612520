//! The run's one monotonic clock and its wall-clock anchor.
//!
//! Source: docs/samples.md "The clock" and docs/artifacts.md "report.json" (the report
//! carries the anchor as `reference_instant_unix_ns`). At run start one monotonic
//! [`Instant`] and one `SystemTime` reading are taken in the same statement sequence;
//! every timestamp in the product is then `elapsed_ns: u64` from that instant, and a
//! unix-epoch time is derived as `reference_instant_unix_ns + elapsed_ns` (field case
//! C22: a wall-clock step during the run never bends a duration).
//!
//! Values from different clock domains are never subtracted; each run has its own
//! `clock_domain_id`.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The reference instant of one run, shared (cheaply cloned) by every sampler,
/// the client, the drivers and the timeline sink.
#[derive(Clone, Debug)]
pub struct RunClock {
    origin: Instant,
    reference_instant_unix_ns: u64,
    clock_domain_id: Arc<str>,
    anchor_read_ns: u64,
}

impl RunClock {
    /// Takes the monotonic reference instant and the wall-clock anchor together.
    ///
    /// The clock domain id is `mono:<host>:<pid>:<anchor ns>`: unique per process
    /// and run, so two runs' `elapsed_ns` values are never mistaken as comparable.
    pub fn start() -> Self {
        let origin = Instant::now();
        let wall = SystemTime::now();
        // The anchor's read bracket: the wall clock was read within this many ns after the
        // reference instant (the bound of this host's own anchor error).
        let anchor_read_ns = u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let reference_instant_unix_ns = wall
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
            .unwrap_or(0);
        let host = hostname();
        let clock_domain_id: Arc<str> = format!(
            "mono:{host}:{}:{reference_instant_unix_ns}",
            std::process::id()
        )
        .into();
        Self {
            origin,
            reference_instant_unix_ns,
            clock_domain_id,
            anchor_read_ns,
        }
    }

    /// How long after the reference instant the wall clock was read for the anchor, ns:
    /// the anchor is exact to within this on this host's wall clock (0 for a clock made by
    /// [`RunClock::with_anchor`]).
    pub fn anchor_read_ns(&self) -> u64 {
        self.anchor_read_ns
    }

    /// A clock with a given anchor, for deterministic tests and offline joins.
    pub fn with_anchor(origin: Instant, reference_instant_unix_ns: u64, domain: &str) -> Self {
        Self {
            origin,
            reference_instant_unix_ns,
            clock_domain_id: domain.into(),
            anchor_read_ns: 0,
        }
    }

    /// The monotonic reference instant itself.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// The monotonic instant `elapsed_ns` nanoseconds after the reference instant: a
    /// deadline on the run clock (`tokio::time::Instant::from_std` of it for
    /// `tokio::time::sleep_until` / `timeout_at`; this crate stays free of tokio).
    pub fn instant_at(&self, elapsed_ns: u64) -> Instant {
        self.origin + Duration::from_nanos(elapsed_ns)
    }

    /// Nanoseconds since the reference instant, now (monotonic).
    #[inline]
    pub fn elapsed_ns(&self) -> u64 {
        self.elapsed_ns_at(Instant::now())
    }

    /// Nanoseconds from the reference instant to `t`; 0 for an instant before it
    /// (saturating, never negative).
    #[inline]
    pub fn elapsed_ns_at(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.origin).as_nanos()).unwrap_or(u64::MAX)
    }

    /// Unix-epoch nanoseconds of the reference instant (the step-attribution anchor (docs/measurement.md)).
    pub fn reference_instant_unix_ns(&self) -> u64 {
        self.reference_instant_unix_ns
    }

    /// Unix-epoch nanoseconds of an `elapsed_ns` value: `anchor + elapsed_ns`.
    #[inline]
    pub fn unix_ns(&self, elapsed_ns: u64) -> u64 {
        self.reference_instant_unix_ns.saturating_add(elapsed_ns)
    }

    /// The clock domain id of this run (see [`RunClock::start`]).
    pub fn clock_domain_id(&self) -> &str {
        &self.clock_domain_id
    }

    /// RFC 3339 UTC text (nanosecond precision) for an `elapsed_ns` value, for display.
    pub fn wall_time_utc(&self, elapsed_ns: u64) -> String {
        unix_ns_to_rfc3339(self.unix_ns(elapsed_ns))
    }
}

/// Formats unix-epoch nanoseconds as RFC 3339 UTC with nanoseconds, e.g.
/// `2024-09-10T20:26:40.100000000Z`.
pub fn unix_ns_to_rfc3339(unix_ns: u64) -> String {
    let secs = (unix_ns / 1_000_000_000) as i64;
    let nanos = (unix_ns % 1_000_000_000) as u32;
    match chrono::DateTime::from_timestamp(secs, nanos) {
        Some(dt) => dt.format("%Y-%m-%dT%H:%M:%S%.9fZ").to_string(),
        None => String::from("invalid"),
    }
}

/// The runner host a clock-domain id names (`mono:<host>:<pid>:<anchor>`); `None` for an
/// id of another form (a merged run's `merged:…`, a test's).
pub fn domain_host(clock_domain_id: &str) -> Option<&str> {
    let mut it = clock_domain_id.split(':');
    match (it.next(), it.next()) {
        (Some("mono"), Some(h)) if !h.is_empty() => Some(h),
        _ => None,
    }
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c22_unix_times_derive_from_anchor_not_wall_clock() {
        // wall0 = 1726000000.000000000 s, mono0 = origin. Request at +100 ms, [DONE] at +850 ms.
        let origin = Instant::now();
        let clock = RunClock::with_anchor(origin, 1_726_000_000_000_000_000, "test");
        let start = clock.elapsed_ns_at(origin + Duration::from_millis(100));
        let end = clock.elapsed_ns_at(origin + Duration::from_millis(850));
        assert_eq!(end - start, 750_000_000);
        assert_eq!(clock.unix_ns(start), 1_726_000_000_100_000_000);
        assert_eq!(clock.unix_ns(end), 1_726_000_000_850_000_000);
        assert_eq!(clock.wall_time_utc(start), "2024-09-10T20:26:40.100000000Z");
    }

    #[test]
    fn elapsed_before_origin_saturates_to_zero() {
        let origin = Instant::now() + Duration::from_secs(5);
        let clock = RunClock::with_anchor(origin, 0, "t");
        assert_eq!(clock.elapsed_ns(), 0);
    }

    #[test]
    fn domain_id_names_process() {
        let c = RunClock::start();
        assert!(c.clock_domain_id().starts_with("mono:"));
        assert!(c.reference_instant_unix_ns() > 1_600_000_000_000_000_000);
    }
}
