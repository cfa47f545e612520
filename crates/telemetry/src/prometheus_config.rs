//! `[telemetry] prometheus` as the sampler needs it: a type of its own, so the crate root
//! can name it without depending on the Prometheus source itself.

use std::time::Duration;

use super::profile::EngineProfile;

/// `[telemetry] prometheus` as the sampler needs it.
#[derive(Clone, Debug, PartialEq)]
pub struct PrometheusConfig {
    /// Base URL of the server, e.g. `http://127.0.0.1:9090` (the API paths are appended).
    pub url: String,
    /// Label matchers in braces, e.g. `{job="vllm"}`; empty for none.
    pub selector: String,
    /// Engine profile naming the families (`Auto` detects from the names the server has).
    pub profile: EngineProfile,
    /// Served model, for series selection by `model_name`/`model`.
    pub served_model: Option<String>,
    /// Query step: the metrics sampling period.
    pub step: Duration,
    /// Longest wait after the run for a scrape at or after its end.
    pub wait: Duration,
    /// Per-request timeout.
    pub timeout: Duration,
}
