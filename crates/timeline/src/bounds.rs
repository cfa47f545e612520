//! The one place that holds the capture bounds: 10,000 events, 2 KiB per serialized event,
//! 8 MiB of events in all, a 16 KiB manifest (docs/artifacts.md "Timeline capture rules").
//!
//! The defaults are also the ceilings: a [`Bounds`] may be made tighter (tests do that to
//! reach the limits cheaply) but never looser, so the reader can use the same constants as
//! hard limits on untrusted input.

use serde::{Deserialize, Serialize};

/// Default and maximum number of events kept by one sink (10,000; docs/artifacts.md
/// "Timeline capture rules").
pub const MAX_EVENTS: u32 = 10_000;
/// Default and maximum size of one serialized event, in bytes, without its trailing
/// newline (docs/artifacts.md "Timeline capture rules": 2 KiB).
pub const MAX_EVENT_BYTES: u32 = 2 * 1024;
/// Default and maximum total size of the serialized events, in bytes, newlines
/// included: exactly the byte length of `timeline/events.jsonl` (8 MiB).
pub const MAX_TOTAL_BYTES: u32 = 8 * 1024 * 1024;
/// Default and maximum size of `timeline/manifest.json`, in bytes (16 KiB).
pub const MAX_MANIFEST_BYTES: u32 = 16 * 1024;

// The reader's limits (one table in `fsio::limits`) are these capture bounds.
const _: () = assert!(MAX_MANIFEST_BYTES as u64 == inferscope_fsio::limits::MANIFEST_BYTES);
const _: () = assert!(MAX_TOTAL_BYTES as u64 == inferscope_fsio::limits::EVENTS_BYTES);

/// Capture bounds of one sink, recorded in the manifest.
///
/// Every field is a count or a size in bytes; each must be at least 1 and at most the
/// matching `MAX_*` constant of this module (see [`Bounds::validate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bounds {
    /// Events kept at most (count).
    pub max_events: u32,
    /// Bytes of one serialized event line at most, newline excluded.
    pub max_event_bytes: u32,
    /// Bytes of all serialized event lines at most, newlines included.
    pub max_total_bytes: u32,
    /// Bytes of the manifest file at most.
    pub max_manifest_bytes: u32,
}

impl Default for Bounds {
    fn default() -> Self {
        Self {
            max_events: MAX_EVENTS,
            max_event_bytes: MAX_EVENT_BYTES,
            max_total_bytes: MAX_TOTAL_BYTES,
            max_manifest_bytes: MAX_MANIFEST_BYTES,
        }
    }
}

impl Bounds {
    /// Checks that every bound is in `1..=MAX_*`.
    ///
    /// Errors: the name of the first field out of range.
    pub fn validate(&self) -> Result<(), &'static str> {
        let checks = [
            ("max_events", self.max_events, MAX_EVENTS),
            ("max_event_bytes", self.max_event_bytes, MAX_EVENT_BYTES),
            ("max_total_bytes", self.max_total_bytes, MAX_TOTAL_BYTES),
            (
                "max_manifest_bytes",
                self.max_manifest_bytes,
                MAX_MANIFEST_BYTES,
            ),
        ];
        for (name, value, ceiling) in checks {
            if value == 0 || value > ceiling {
                return Err(name);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_prd_bounds() {
        let b = Bounds::default();
        assert_eq!(b.max_events, 10_000);
        assert_eq!(b.max_event_bytes, 2048);
        assert_eq!(b.max_total_bytes, 8_388_608);
        assert_eq!(b.max_manifest_bytes, 16_384);
        assert_eq!(b.validate(), Ok(()));
    }

    #[test]
    fn looser_or_zero_bounds_are_refused() {
        let b = Bounds {
            max_events: MAX_EVENTS + 1,
            ..Bounds::default()
        };
        assert_eq!(b.validate(), Err("max_events"));
        let b = Bounds {
            max_total_bytes: 0,
            ..Bounds::default()
        };
        assert_eq!(b.validate(), Err("max_total_bytes"));
    }
}
