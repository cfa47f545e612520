//! Runs beyond one machine as reported: a shard's identity (`report.json`
//! `shard`) and a merged run's per-shard sections (`report.json` `merge`).
//!
//! A shard is one process with its own clock domain and anchor. Its identity names how
//! the work was divided (`partition`: whole jobs; `shard`: a share of each load job's
//! load), which share it ran (K of N), the fingerprint of the resolved suites and the
//! seeds, so `merge` can refuse shards that did not run the same thing. A merged run keeps
//! one section per shard (clock domain, anchor, power, attribution, own windows) and puts
//! every shard's times on one unix-aligned axis whose uncertainty it states.

use serde::{Deserialize, Serialize};

use super::attribution::RunAttributionSummary;
use super::capture::{CaptureReport, PowerReport};
use super::job::{JobEnergy, JobStatus};

/// How the work was divided among shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShardMode {
    /// `run --partition count:K/N | hash:K/N`: each shard runs whole jobs.
    Partition,
    /// `run --shard K/N`: each shard runs its share of every load job's load.
    Shard,
}

impl ShardMode {
    /// `partition` or `shard`.
    pub fn as_str(self) -> &'static str {
        match self {
            ShardMode::Partition => "partition",
            ShardMode::Shard => "shard",
        }
    }
}

/// How `--partition` assigns jobs (nextest's two kinds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PartitionKind {
    /// Round-robin over the selected job ids in sorted order.
    Count,
    /// XXH64 (seed 0) of the job id, modulo N.
    Hash,
}

impl PartitionKind {
    /// `count` or `hash`.
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionKind::Count => "count",
            PartitionKind::Hash => "hash",
        }
    }
}

/// One suite's seed and the seed this shard derived from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SuiteSeed {
    /// Suite name.
    pub suite: String,
    /// The suite's `seed`.
    pub seed: u64,
    /// The seed this shard's open-loop arrivals use (`--shard`: derived from `seed`, K
    /// and N; `--partition`: `seed` itself, jobs run as they would unsharded).
    pub shard_seed: u64,
}

/// `--start-at`: when the shard was told to send its first request, and how late it was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartAt {
    /// The requested instant, unix ns (the flag's seconds, fractional allowed).
    pub target_unix_ns: u64,
    /// When the wait ended: the anchor plus the run clock's elapsed ns at release.
    pub released_unix_ns: u64,
    /// `released − target`, ns; negative only by the clock's read error, positive when
    /// the instant had passed before the wait began.
    pub lag_ns: i64,
    /// The first request's send time on the same axis (anchor + `send_ns`); `null` when
    /// the shard sent none.
    pub first_request_unix_ns: Option<u64>,
    /// `first_request − target`, ns.
    pub first_request_lag_ns: Option<i64>,
    /// What the lag rests on, in words.
    pub basis: String,
    /// Bound of this host's own error, ns: the anchor's read bracket (the time between the
    /// monotonic and the wall-clock reads of the anchor). Another host's wall clock may be
    /// off by its clock-sync error on top; that is not measured here.
    pub uncertainty_ns: u64,
}

/// The load share one shard ran of one point of a load job (`run --shard K/N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointShare {
    /// 0-based point index.
    pub index: usize,
    /// Whether this shard ran the point (a share of 0 runs nothing and says so).
    pub runs: bool,
    /// The point's configured concurrency (the whole load), `null` for an uncapped open
    /// loop.
    pub configured_concurrency: Option<u32>,
    /// This shard's share of it.
    pub concurrency: Option<u32>,
    /// The configured arrival rate, units/s; `null` for a closed loop.
    pub configured_rate: Option<f64>,
    /// This shard's share of it.
    pub rate: Option<f64>,
    /// The configured unit count; `null` for a `duration_s` stop (each shard runs the
    /// whole duration).
    pub configured_units: Option<u64>,
    /// This shard's share of it.
    pub units: Option<u64>,
    /// Shards that run the point (those with a non-zero concurrency share).
    pub active_shards: u32,
    /// Unit `k` of this shard is unit `k · stride + offset` of the whole point, so the
    /// shards' trajectory ids are those of one unsharded run.
    pub index_stride: u64,
    /// See `index_stride`.
    pub index_offset: u64,
    /// Why the shard runs nothing at this point, `null` when it runs.
    pub note: Option<String>,
}

/// One load job's shares and effective gates (`run --shard K/N`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobShare {
    /// `suite::job`.
    pub job: String,
    /// The job's effective `[gates]` (suite merged with job), so a merge judges the
    /// merged figures with the same bounds.
    pub gates: crate::gate_spec::GateSpec,
    /// One share per point.
    pub points: Vec<PointShare>,
}

/// `report.json` `shard`: the identity of a shard run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardIdentity {
    /// `partition` or `shard`.
    pub mode: ShardMode,
    /// `count` or `hash` for a partition, `null` for `--shard`.
    pub partition: Option<PartitionKind>,
    /// This shard, counting from 1.
    pub k: u32,
    /// Shards in all.
    pub n: u32,
    /// `sha256:` of the resolved suites (suite texts and the flags that change what runs,
    /// before partitioning): equal for every shard of one run.
    pub suite_fingerprint: String,
    /// Every suite's seed and this shard's derived seed.
    pub seeds: Vec<SuiteSeed>,
    /// Every job the suites and `--filter` selected, before partitioning, in run order.
    pub selected_jobs: Vec<String>,
    /// The jobs this shard ran (its partition; with `--shard`, every load job and, on
    /// shard 1 only, the sequential jobs).
    pub jobs: Vec<String>,
    /// `--start-at` and the lag from it; `null` without the flag.
    pub start_at: Option<StartAt>,
    /// The anchor's read bracket on this host, ns (see [`StartAt::uncertainty_ns`]).
    pub anchor_read_ns: u64,
    /// `--shard`: each load job's shares.
    pub load: Vec<JobShare>,
}

/// How shards' times were put on one axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Alignment {
    /// `same_host` (one wall clock: only the anchors' read brackets) or `cross_host`
    /// (several wall clocks: their sync error is assumed, not measured).
    pub basis: String,
    /// Bound of the error of any one shard's placement on the merged axis, ns.
    pub uncertainty_ns: u64,
    /// One sentence for people.
    pub statement: String,
}

/// A window on the merged (unix-aligned) axis, ns from the merged anchor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlignedWindow {
    /// Start, ns.
    pub start_ns: u64,
    /// End, ns.
    pub end_ns: u64,
    /// `end − start`, ns (each end uncertain by the alignment's bound).
    pub duration_ns: u64,
}

/// One shard's own window of one job (its clock domain) and where it lies on the merged
/// axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardJobSection {
    /// `suite::job`.
    pub id: String,
    /// The shard's own status of the job.
    pub status: JobStatus,
    /// Start, ns in the shard's clock domain.
    pub start_ns: u64,
    /// End, ns in the shard's clock domain.
    pub end_ns: u64,
    /// `end − start`, ns: a duration within one shard.
    pub duration_ns: u64,
    /// The same window on the merged axis.
    pub aligned: AlignedWindow,
    /// Requests the shard made for the job.
    pub requests: u64,
    /// Trajectories the shard ran for the job.
    pub trajectories: u64,
    /// The shard's energy figures for the job (its own devices).
    pub energy: JobEnergy,
}

/// One shard of a merged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardSection {
    /// The shard, counting from 1.
    pub k: u32,
    /// Its run id.
    pub run_id: String,
    /// Its run directory inside the merged one (`shards/K`), kept verbatim.
    pub dir: String,
    /// Its clock domain: every `*_ns` of its own files is on this clock.
    pub clock_domain_id: String,
    /// Its anchor, unix ns.
    pub reference_instant_unix_ns: u64,
    /// `anchor − merged anchor`, ns: what its times were shifted by on the merged axis.
    pub offset_ns: u64,
    /// Its start, RFC 3339 UTC (display only).
    pub started_utc: String,
    /// `inferscope-bench <version>` that ran it.
    pub tool: String,
    /// Its run duration, ns (own clock).
    pub duration_ns: u64,
    /// Its run window on the merged axis.
    pub aligned: AlignedWindow,
    /// `--start-at` and its lag.
    pub start_at: Option<StartAt>,
    /// What supplied its power (its own devices).
    pub power: PowerReport,
    /// Its step-attribution condition (docs/measurement.md) and joins (per-step energy stays per shard).
    pub attribution: Option<RunAttributionSummary>,
    /// Its timeline capture.
    pub capture: CaptureReport,
    /// Whether Ctrl-C / SIGTERM ended it early.
    pub cancelled: bool,
    /// Its exit status.
    pub exit_status: i32,
    /// Its jobs.
    pub jobs: Vec<ShardJobSection>,
}

/// Trajectories in flight across all shards, counted on the merged axis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergedConcurrency {
    /// The most trajectories in flight at once over every shard.
    pub max_trajectories_in_flight: u32,
    /// The most within any single shard.
    pub max_in_one_shard: u32,
    /// One sentence for people.
    pub statement: String,
}

/// `report.json` `merge`: how a merged run was built and what each shard was.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeReport {
    /// `partition` or `shard`.
    pub mode: ShardMode,
    /// `count` or `hash` for partitions.
    pub partition: Option<PartitionKind>,
    /// Shards merged (every K of 1..=N exactly once).
    pub n: u32,
    /// The shards' common suite fingerprint.
    pub suite_fingerprint: String,
    /// The suites' seeds.
    pub seeds: Vec<SuiteSeed>,
    /// How the shards' times were aligned.
    pub alignment: Alignment,
    /// Where every shard was running, on the merged axis; `null` when the shards' runs do
    /// not overlap.
    pub all_running: Option<AlignedWindow>,
    /// Trajectories in flight across shards.
    pub concurrency: MergedConcurrency,
    /// What the merge did that a reader must know.
    pub notes: Vec<String>,
    /// One section per shard, by K.
    pub shards: Vec<ShardSection>,
}
