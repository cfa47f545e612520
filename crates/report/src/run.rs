//! The run's report: its jobs' reports and the run-level figures over the whole measured
//! window (the power report, the attribution summary with the whole-run energy, the
//! telemetry summary and the job totals), from plain inputs ([`RunFacts`]).

use crate::energy::RunEnergy;
use crate::model::telemetry::TelemetrySummary;
use crate::model::{
    CaptureReport, EndpointReport, JobReport, REPORT_SCHEMA, RunReport, SummaryReport,
};
use crate::stats::PERCENTILE_METHOD;

/// What a run's report states besides its jobs: its identity, its clock, its endpoints and
/// its telemetry summary.
#[derive(Debug, Clone)]
pub struct RunFacts {
    /// The run id.
    pub run_id: String,
    /// `inferscope-bench <version>`.
    pub tool: String,
    /// Run start, RFC 3339 UTC.
    pub started_utc: String,
    /// The run clock's reference instant, unix ns.
    pub reference_instant_unix_ns: u64,
    /// The run clock's domain id.
    pub clock_domain_id: String,
    /// The run's end, ns from the reference instant.
    pub end_ns: u64,
    /// Ctrl-C / SIGTERM cut the run short.
    pub cancelled: bool,
    /// One per suite, in suite order.
    pub endpoints: Vec<EndpointReport>,
    /// The telemetry summary, when telemetry ran.
    pub telemetry: Option<TelemetrySummary>,
}

/// The run's report from its facts, its jobs' reports (in job order) and the run's energy
/// join. The capture section is filled in when the artifacts are written.
pub fn run_report(facts: RunFacts, jobs: Vec<JobReport>, run: &RunEnergy) -> RunReport {
    RunReport {
        schema: REPORT_SCHEMA.into(),
        run_id: facts.run_id,
        tool: facts.tool,
        started_utc: facts.started_utc,
        reference_instant_unix_ns: facts.reference_instant_unix_ns,
        clock_domain_id: facts.clock_domain_id,
        percentile_method: PERCENTILE_METHOD.into(),
        cancelled: facts.cancelled,
        endpoint: facts.endpoints.first().cloned(),
        endpoints: facts.endpoints,
        capture: CaptureReport::default(),
        power: run.power().clone(),
        telemetry: facts.telemetry,
        attribution: run.summary(),
        summary: SummaryReport::of(&jobs, facts.end_ns, facts.cancelled),
        jobs,
        shard: None,
        merge: None,
        requests_file: None,
    }
}
