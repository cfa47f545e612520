//! The quality of the run's timeline capture and of its power series, as reported
//! (`report.json` `capture` and `power`): shared by a run and each shard of a merged one.

use serde::{Deserialize, Serialize};

use super::basis::PowerSource;

/// Capture quality (the timeline manifest's `quality`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quality {
    /// Every offered event was kept and every span closed.
    Complete,
    /// Something was lost, rejected, cancelled or left open; see the reasons.
    Partial,
    /// No usable timeline (no manifest: killed run, capture off, persistence failed).
    Unavailable,
}

impl Quality {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Quality::Complete => "complete",
            Quality::Partial => "partial",
            Quality::Unavailable => "unavailable",
        }
    }
}

/// Timeline capture summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CaptureReport {
    /// Whether capture was on.
    pub enabled: bool,
    /// The capture's quality; `null` when off.
    pub quality: Option<Quality>,
    /// Events kept.
    pub events: Option<u64>,
    /// Events dropped (overflow).
    pub dropped: Option<u64>,
    /// Events rejected by validation.
    pub rejected: Option<u64>,
    /// Relative path of the manifest when written.
    pub manifest: Option<String>,
    /// Bytes the runner wrote to disk during the measured window (`/proc/self/io`
    /// `write_bytes` delta); `null` when unreadable.
    pub window_write_bytes: Option<u64>,
    /// Persistence problem, if any (never changes job results or the exit status).
    pub diagnostic: Option<String>,
}

impl CaptureReport {
    /// `capture partial: K events dropped` when the capture dropped events (its bounds
    /// were reached), for the console and JUnit beside report.json's `partial`; `None`
    /// when nothing was dropped or capture was off.
    pub fn partial_line(&self) -> Option<String> {
        match self.dropped {
            // One fixed wording (also for K = 1), so CI logs can be searched for it.
            Some(k) if k > 0 => Some(format!("capture partial: {k} events dropped")),
            _ => None,
        }
    }
}

/// What supplied power for the run, from what was actually sampled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PowerReport {
    /// `nvml` only when an NVML device gave power readings, `simulated` for the built-in
    /// simulator's model; `null` without any power reading (then every energy figure is
    /// `null`, basis `unavailable`, with `reason`).
    pub source: Option<PowerSource>,
    /// Why there is no power source (NVML not loadable, no device, GPU sampling off, …);
    /// `null` with one.
    pub reason: Option<String>,
    /// Devices that gave power readings and enter the figures.
    pub devices: u32,
    /// `label: not attributable: reason` of every device that gave readings but is left
    /// out of every figure (a GPU in MIG mode: its power is the whole GPU's, shared with
    /// other instances); absent when none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_attributable: Vec<String>,
}

impl PowerReport {
    /// `power nvml`, `power simulated`, or `power unavailable (REASON)` for headers.
    pub fn describe(&self) -> String {
        match (self.source, &self.reason) {
            (Some(s), _) => format!("power {}", s.label()),
            (None, Some(r)) => format!("power unavailable ({r})"),
            (None, None) => "power unavailable".to_string(),
        }
    }
}
