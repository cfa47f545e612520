//! Beyond one machine: dividing a run among shards, merging shard runs, and
//! the Kubernetes manifests that run them.
//!
//! - [`Partition`] (`--partition count:K/N | hash:K/N`, nextest's syntax and semantics):
//!   whole jobs per shard;
//! - [`ShardSpec`] (`--shard K/N`): each load job's concurrency, rate and unit count
//!   split among N shards ([`split_point`]), with a per-shard seed ([`shard_seed`]);
//! - [`fingerprint`]: the hash of the resolved suites every shard of one run shares;
//! - [`merge`]: one run directory from N shard run directories;
//! - [`k8s`]: an Indexed Job and a merge Job.
//!
//! Pure logic here; `commands` and the runner do the I/O.

use std::str::FromStr;

use sha2::{Digest, Sha256};

use crate::model::shard::{
    PartitionKind, PointShare, ShardIdentity, ShardMode, StartAt, SuiteSeed,
};
use crate::stats::mix64;
use crate::suite::load_spec::{LoadPoint, Stop};
use crate::suite::{EndpointSetting, ResolvedSuite};

/// Default assumed bound of the wall-clock offset between two hosts, ms (NTP-synced
/// hosts on one network usually agree to a few ms; `merge --host-clock-offset-ms`
/// changes it).
pub const DEFAULT_HOST_OFFSET_MS: f64 = 10.0;

/// `K/N` with `1 ≤ K ≤ N`, parsed from `flag`'s value (`--partition`'s after the kind).
fn parse_k_of_n(flag: &str, text: &str, kn: &str, example: &str) -> Result<(u32, u32), String> {
    let bad = |why: &str| format!("{flag} {text:?}: {why} (expected {example})");
    let (k, n) = kn
        .split_once('/')
        .ok_or_else(|| bad("no `/` between K and N"))?;
    let k: u32 = k
        .trim()
        .parse()
        .map_err(|_| bad("K is not a whole number"))?;
    let n: u32 = n
        .trim()
        .parse()
        .map_err(|_| bad("N is not a whole number"))?;
    if n == 0 {
        return Err(bad("N must be at least 1"));
    }
    if k == 0 || k > n {
        return Err(bad("K must be between 1 and N"));
    }
    Ok((k, n))
}

/// `--partition count:K/N` or `hash:K/N`: shard K (from 1) of N of the selected jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// `count` or `hash`.
    pub kind: PartitionKind,
    /// This shard, from 1.
    pub k: u32,
    /// Shards in all.
    pub n: u32,
}

impl FromStr for Partition {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let example = "count:K/N or hash:K/N with 1 <= K <= N, e.g. hash:1/3";
        let (kind, rest) = s
            .split_once(':')
            .ok_or_else(|| format!("--partition {s:?}: no kind (expected {example})"))?;
        let kind = match kind {
            "count" => PartitionKind::Count,
            "hash" => PartitionKind::Hash,
            other => {
                return Err(format!(
                    "--partition {s:?}: unknown kind {other:?} (expected {example})"
                ));
            }
        };
        let (k, n) = parse_k_of_n("--partition", s, rest, example)?;
        Ok(Partition { kind, k, n })
    }
}

/// XXH64 (seed 0) of a job id's UTF-8 bytes: the stable hash of `hash:K/N` (specified,
/// independent of the Rust version, host and run).
pub fn job_hash(id: &str) -> u64 {
    xxhash_rust::xxh64::xxh64(id.as_bytes(), 0)
}

impl Partition {
    /// Which of `ids` (the selected jobs, any order) this shard runs, in the order given.
    ///
    /// - `count:K/N`: the ids sorted (byte order), then dealt round-robin: the i-th
    ///   (0-based) goes to shard `i mod N + 1`;
    /// - `hash:K/N`: an id goes to shard `job_hash(id) mod N + 1`, whatever else is
    ///   selected.
    pub fn selects(&self, ids: &[&str]) -> Vec<bool> {
        match self.kind {
            PartitionKind::Hash => ids
                .iter()
                .map(|id| job_hash(id) % u64::from(self.n) == u64::from(self.k - 1))
                .collect(),
            PartitionKind::Count => {
                let mut sorted: Vec<&str> = ids.to_vec();
                sorted.sort_unstable();
                ids.iter()
                    .map(|id| {
                        let i = sorted.binary_search(id).unwrap_or(0);
                        i as u64 % u64::from(self.n) == u64::from(self.k - 1)
                    })
                    .collect()
            }
        }
    }

    /// `hash:K/N`.
    pub fn describe(&self) -> String {
        format!("{}:{}/{}", self.kind.as_str(), self.k, self.n)
    }
}

/// Keeps in `suites` only the jobs `partition` gives this shard (after `--filter`, as in
/// nextest: the partition applies to what the filters selected).
pub fn apply_partition(suites: &mut [ResolvedSuite], partition: &Partition) {
    let ids: Vec<String> = suites
        .iter()
        .flat_map(|s| s.jobs.iter().map(|j| j.job.id.clone()))
        .collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let keep = partition.selects(&refs);
    let mut i = 0;
    for s in suites.iter_mut() {
        s.jobs.retain(|_| {
            let k = keep[i];
            i += 1;
            k
        });
    }
}

/// `--shard K/N`: this shard's share of every load job's load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardSpec {
    /// This shard, from 1.
    pub k: u32,
    /// Shards in all.
    pub n: u32,
}

impl FromStr for ShardSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (k, n) = parse_k_of_n("--shard", s, s, "K/N with 1 <= K <= N, e.g. 2/4")?;
        Ok(ShardSpec { k, n })
    }
}

/// Shard `k`'s (from 1) share of `total` among `n`: `⌊total / n⌋`, plus one for the first
/// `total mod n` shards. The shares of 1..=n sum to `total`.
pub fn share(total: u64, n: u32, k: u32) -> u64 {
    let n = u64::from(n.max(1));
    let k = u64::from(k.max(1));
    total / n + u64::from(k <= total % n)
}

/// The seed of shard K of N derived from a suite seed: the suite seed itself for N = 1
/// (`--shard 1/1` runs what an unsharded run runs), else splitmix64 of
/// `seed XOR (K · 0x9E3779B97F4A7C15) XOR (N · 0xC2B2AE3D27D4EB4F)`. Shards' open-loop
/// arrivals are then independent streams, never N copies of one schedule.
pub fn shard_seed(seed: u64, k: u32, n: u32) -> u64 {
    if n <= 1 {
        return seed;
    }
    let z = seed
        ^ u64::from(k).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ u64::from(n).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    mix64(z.wrapping_add(0x9E37_79B9_7F4A_7C15))
}

/// Shard `s`'s share of one load point and the point it runs (documented rule):
///
/// - **concurrency** (closed loop, or an open loop's cap) `C`: [`share`]`(C, N, K)`. The
///   shards with a non-zero share are the *active* ones, `A = min(C, N)` (all N for an
///   uncapped open loop); a shard with a share of 0 runs nothing at the point;
/// - **rate** `R` (open loop): `R / A` for each active shard;
/// - **count** `U`: [`share`]`(U, A, K)` for each active shard (a share of 0 units also
///   runs nothing); a `duration_s` stop is not split: every active shard runs the whole
///   duration at its share of the concurrency and rate;
/// - unit `k` of shard K is unit `k · A + (K − 1)` of the point, so the union of the
///   shards' trajectories has the ids, and context prompts, of one unsharded run;
/// - warm-up (`warmup` requests per point) is per shard: each shard's client warms its
///   own connections.
pub fn split_point(point: &LoadPoint, s: ShardSpec) -> (LoadPoint, PointShare) {
    let n = s.n.max(1);
    let active = match point.concurrency {
        Some(c) => c.min(n),
        None => n,
    };
    let conc = point
        .concurrency
        .map(|c| share(u64::from(c), n, s.k) as u32);
    let is_active = s.k <= active && active > 0;
    let rate = point.rate.map(|r| {
        if is_active {
            r / f64::from(active)
        } else {
            0.0
        }
    });
    let (stop, units, configured_units) = match point.stop {
        Stop::Count(u) => {
            let mine = if is_active { share(u, active, s.k) } else { 0 };
            (Stop::Count(mine), Some(mine), Some(u))
        }
        Stop::Duration(d) => (Stop::Duration(d), None, None),
    };
    let runs = is_active && units != Some(0);
    let note = (!runs).then(|| {
        let why = if !is_active {
            format!(
                "its share of concurrency {} is 0 ({} of {n} shards run this point)",
                point.concurrency.unwrap_or(1),
                active
            )
        } else {
            format!(
                "its share of the {} units is 0",
                configured_units.unwrap_or(0)
            )
        };
        format!(
            "shard {}/{n} runs nothing at point {} ({}): {why}",
            s.k,
            point.index,
            point.label()
        )
    });
    let shared = LoadPoint {
        concurrency: conc,
        rate,
        stop,
        ..point.clone()
    };
    let p = PointShare {
        index: point.index,
        runs,
        configured_concurrency: point.concurrency,
        concurrency: conc,
        configured_rate: point.rate,
        rate,
        configured_units,
        units,
        active_shards: active,
        index_stride: u64::from(active.max(1)),
        index_offset: u64::from(s.k - 1),
        note,
    };
    (shared, p)
}

/// The fingerprint of the resolved suites: `sha256:` + hex of a canonical text made of,
/// per suite in order, its name, the SHA-256 of its file's text, the effective endpoint
/// (or `simulated`), model and capture setting, the `--filter` pattern and the selected
/// job ids (before any partition). Paths are left out, so shards on other hosts with the
/// same files agree.
pub fn fingerprint(suites: &[ResolvedSuite]) -> String {
    let mut h = Sha256::new();
    for s in suites {
        let text = hex::encode(Sha256::digest(s.suite.text().as_bytes()));
        let endpoint = match &s.endpoint.value {
            EndpointSetting::Simulated => "simulated".to_string(),
            EndpointSetting::Url(u) => u.clone(),
        };
        let jobs: Vec<&str> = s.jobs.iter().map(|j| j.job.id.as_str()).collect();
        let line = serde_json::json!({
            "suite": s.suite.name,
            "text_sha256": text,
            "endpoint": endpoint,
            "model": s.model.value,
            "capture_timeline": s.capture_timeline.value,
            "filter": s.filter,
            "jobs": jobs,
        });
        h.update(line.to_string().as_bytes());
        h.update(b"\n");
    }
    format!("sha256:{}", hex::encode(h.finalize()))
}

/// `--start-at UNIX_TS` (seconds since the epoch, fractional allowed: `1767225600.25`)
/// as unix ns, parsed exactly as decimal digits (no float rounding; digits past the
/// ninth decimal are refused).
///
/// Errors: not `SECONDS[.FRACTION]`, zero, or more than 24 h from `now_unix_ns` (a typo
/// must not park a shard for a year).
pub fn parse_start_at(text: &str, now_unix_ns: u64) -> Result<u64, String> {
    let t = text.trim();
    let bad = |why: &str| format!("--start-at {text:?}: {why}");
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || (!frac.is_empty() && !digits(frac)) || (t.contains('.') && frac.is_empty()) {
        return Err(bad(
            "not a number of seconds since the epoch (SECONDS[.FRACTION])",
        ));
    }
    if frac.len() > 9 {
        return Err(bad("more than 9 decimals (nanoseconds are the finest)"));
    }
    let secs: u64 = int.parse().map_err(|_| bad("too large"))?;
    let nanos: u64 = format!("{frac:0<9}")
        .parse()
        .map_err(|_| bad("bad fraction"))?;
    let ns = secs
        .checked_mul(1_000_000_000)
        .and_then(|v| v.checked_add(nanos))
        .ok_or_else(|| bad("too large"))?;
    if ns == 0 {
        return Err(bad("must be after the epoch"));
    }
    const DAY_NS: u64 = 86_400 * 1_000_000_000;
    if ns > now_unix_ns.saturating_add(DAY_NS) {
        return Err(bad(&format!(
            "more than 24 h from now (now is {}.{:09})",
            now_unix_ns / 1_000_000_000,
            now_unix_ns % 1_000_000_000
        )));
    }
    Ok(ns)
}

/// What `run` was told about sharding, resolved before any request.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardRun {
    /// The identity `report.json` records (`start_at`, `anchor_read_ns` and `load` are
    /// filled in by the run).
    pub identity: ShardIdentity,
    /// `--shard K/N`: the load split.
    pub spec: Option<ShardSpec>,
    /// `--start-at`, unix ns.
    pub start_at_unix_ns: Option<u64>,
}

/// Resolves `--partition`, `--shard` and `--start-at` for `run` over the already
/// resolved (and `--filter`ed) `suites`, keeping only this shard's jobs:
///
/// - `--partition KIND:K/N`: the partition's jobs ([`apply_partition`]); it may select
///   none (the shard then runs nothing and exits 0, so every K has its run directory);
/// - `--shard K/N`: every load job, and the sequential jobs on shard 1 only;
/// - `--start-at` alone runs as `--shard 1/1` (which runs what an unsharded run runs).
///
/// `None` without any of the three flags. Errors name the flag (exit 2).
pub fn plan(
    partition: Option<Partition>,
    spec: Option<ShardSpec>,
    start_at: Option<&str>,
    suites: &mut [ResolvedSuite],
    now_unix_ns: u64,
) -> Result<Option<ShardRun>, String> {
    if partition.is_none() && spec.is_none() && start_at.is_none() {
        return Ok(None);
    }
    if partition.is_some() && spec.is_some() {
        return Err(
            "--partition and --shard: give one (whole jobs, or a share of the load)".into(),
        );
    }
    let start_at_unix_ns = start_at
        .map(|t| parse_start_at(t, now_unix_ns))
        .transpose()?;
    let suite_fingerprint = fingerprint(suites);
    let selected_jobs: Vec<String> = suites
        .iter()
        .flat_map(|s| s.jobs.iter().map(|j| j.job.id.clone()))
        .collect();
    let spec = match (partition, spec) {
        (None, None) => Some(ShardSpec { k: 1, n: 1 }),
        (_, s) => s,
    };
    let (mode, kind, k, n) = match (partition, spec) {
        (Some(p), _) => {
            apply_partition(suites, &p);
            (ShardMode::Partition, Some(p.kind), p.k, p.n)
        }
        (None, Some(s)) => {
            for rs in suites.iter_mut() {
                rs.jobs.retain(|j| j.job.load.is_some() || s.k == 1);
            }
            (ShardMode::Shard, None, s.k, s.n)
        }
        (None, None) => unreachable!("one of the two is set above"),
    };
    let seeds = suites
        .iter()
        .map(|s| SuiteSeed {
            suite: s.suite.name.clone(),
            seed: s.suite.seed,
            shard_seed: match mode {
                ShardMode::Partition => s.suite.seed,
                ShardMode::Shard => shard_seed(s.suite.seed, k, n),
            },
        })
        .collect();
    let jobs = suites
        .iter()
        .flat_map(|s| s.jobs.iter().map(|j| j.job.id.clone()))
        .collect();
    Ok(Some(ShardRun {
        identity: ShardIdentity {
            mode,
            partition: kind,
            k,
            n,
            suite_fingerprint,
            seeds,
            selected_jobs,
            jobs,
            start_at: None,
            anchor_read_ns: 0,
            load: Vec::new(),
        },
        spec: if mode == ShardMode::Shard { spec } else { None },
        start_at_unix_ns,
    }))
}

/// The console line under `Starting`: which shard, how many of the selected jobs, the
/// fingerprint's first 12 hex digits, and the start instant.
pub fn describe_run(r: &ShardRun) -> String {
    let id = &r.identity;
    let what = match (id.mode, id.partition) {
        (ShardMode::Partition, Some(k)) => format!(
            "partition {}:{}/{} runs {} of {} selected jobs",
            k.as_str(),
            id.k,
            id.n,
            id.jobs.len(),
            id.selected_jobs.len()
        ),
        _ => format!(
            "shard {}/{} runs its share of every load job's load ({} of {} selected jobs)",
            id.k,
            id.n,
            id.jobs.len(),
            id.selected_jobs.len()
        ),
    };
    let fp = id.suite_fingerprint.trim_start_matches("sha256:");
    let mut line = format!("    Sharding {what} · suites {}", &fp[..fp.len().min(12)]);
    if let Some(t) = r.start_at_unix_ns {
        line.push_str(&format!(
            " · first request at {}",
            crate::clock::unix_ns_to_rfc3339(t)
        ));
    }
    line
}

/// The `--start-at` record of a run anchored at `anchor` that was released at
/// `released_ns` (run clock) and sent its first request at `first_send_ns`.
pub fn start_at_record(
    target_unix_ns: u64,
    anchor: u64,
    anchor_read_ns: u64,
    released_ns: u64,
    first_send_ns: Option<u64>,
) -> StartAt {
    let lag = |unix: u64| {
        (i128::from(unix) - i128::from(target_unix_ns))
            .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    };
    let released_unix_ns = anchor.saturating_add(released_ns);
    let first = first_send_ns.map(|s| anchor.saturating_add(s));
    StartAt {
        target_unix_ns,
        released_unix_ns,
        lag_ns: lag(released_unix_ns),
        first_request_unix_ns: first,
        first_request_lag_ns: first.map(lag),
        basis: "this host's wall clock through the run's anchor (anchor + monotonic elapsed \
                time); another host's wall clock differs by its clock-sync error, not \
                measured here"
            .into(),
        uncertainty_ns: anchor_read_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::load_spec::Arrival;

    #[test]
    fn partition_parses_nextest_syntax_and_refuses_the_rest() {
        assert_eq!(
            "hash:2/3".parse::<Partition>(),
            Ok(Partition {
                kind: PartitionKind::Hash,
                k: 2,
                n: 3
            })
        );
        assert_eq!(
            "count:1/1".parse::<Partition>().unwrap().describe(),
            "count:1/1"
        );
        for bad in [
            "hash:0/3",
            "hash:4/3",
            "hash:1/0",
            "slice:1/2",
            "1/2",
            "hash:a/2",
            "hash:1",
        ] {
            let e = bad.parse::<Partition>().unwrap_err();
            assert!(e.starts_with("--partition "), "{e}");
        }
        assert!(
            "3/2"
                .parse::<ShardSpec>()
                .unwrap_err()
                .contains("between 1 and N")
        );
        assert_eq!("2/4".parse::<ShardSpec>(), Ok(ShardSpec { k: 2, n: 4 }));
    }

    /// XXH64 reference values (seed 0): the algorithm is specified, so these never change.
    #[test]
    fn job_hash_is_xxh64_seed_0() {
        assert_eq!(job_hash(""), 0xEF46_DB37_51D8_E999);
        assert_eq!(job_hash("a"), 0xD24E_C4F1_A98C_6E5B);
    }

    #[test]
    fn every_partition_kind_covers_every_job_exactly_once() {
        let ids: Vec<String> = (0..37).map(|i| format!("s{}::job{i}", i % 3)).collect();
        let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
        for kind in [PartitionKind::Count, PartitionKind::Hash] {
            for n in 1..=5 {
                let mut seen = vec![0u32; ids.len()];
                for k in 1..=n {
                    let p = Partition { kind, k, n };
                    for (i, s) in p.selects(&refs).into_iter().enumerate() {
                        seen[i] += u32::from(s);
                    }
                }
                assert!(seen.iter().all(|&c| c == 1), "{kind:?} n={n}: {seen:?}");
            }
        }
        // count: round-robin over the sorted ids, whatever order they come in.
        let p = Partition {
            kind: PartitionKind::Count,
            k: 1,
            n: 2,
        };
        assert_eq!(p.selects(&["c", "a", "b"]), vec![true, true, false]);
    }

    #[test]
    fn shares_sum_to_the_total_with_remainders_first() {
        assert_eq!(
            (1..=4).map(|k| share(10, 4, k)).collect::<Vec<_>>(),
            [3, 3, 2, 2]
        );
        assert_eq!(
            (1..=4).map(|k| share(1, 4, k)).collect::<Vec<_>>(),
            [1, 0, 0, 0]
        );
        for total in 0..50u64 {
            for n in 1..=7u32 {
                assert_eq!((1..=n).map(|k| share(total, n, k)).sum::<u64>(), total);
            }
        }
    }

    fn point(concurrency: Option<u32>, rate: Option<f64>, stop: Stop) -> LoadPoint {
        LoadPoint {
            index: 0,
            concurrency,
            rate,
            arrival: Arrival::Poisson,
            stop,
            warmup: 2,
        }
    }

    #[test]
    fn split_sums_to_the_load_and_indices_interleave_to_one_run() {
        // Closed loop 4 in flight, 16 units over 4 shards: 1 in flight and 4 units each.
        let p = point(Some(4), None, Stop::Count(16));
        let mut indices = Vec::new();
        let (mut conc, mut units) = (0, 0);
        for k in 1..=4 {
            let (lp, s) = split_point(&p, ShardSpec { k, n: 4 });
            conc += lp.concurrency.unwrap();
            units += s.units.unwrap();
            indices.extend((0..s.units.unwrap()).map(|i| i * s.index_stride + s.index_offset));
        }
        assert_eq!((conc, units), (4, 16));
        indices.sort_unstable();
        assert_eq!(indices, (0..16).collect::<Vec<_>>());

        // One in flight cannot be split: shard 1 runs it all, the others run nothing.
        let p = point(Some(1), None, Stop::Count(16));
        let (lp, s) = split_point(&p, ShardSpec { k: 1, n: 4 });
        assert_eq!((lp.concurrency, s.units, s.runs), (Some(1), Some(16), true));
        let (_, s) = split_point(&p, ShardSpec { k: 3, n: 4 });
        assert!(!s.runs);
        assert!(
            s.note
                .unwrap()
                .contains("shard 3/4 runs nothing at point 0")
        );

        // Open loop: 20/s capped at 8 over 4 shards, 40 units: 5/s, cap 2, 10 units each.
        let p = point(Some(8), Some(20.0), Stop::Count(40));
        let (lp, s) = split_point(&p, ShardSpec { k: 4, n: 4 });
        assert_eq!(
            (lp.concurrency, lp.rate, s.units),
            (Some(2), Some(5.0), Some(10))
        );
        // Uncapped open loop, 3 units over 4 shards: the 4th runs nothing.
        let p = point(None, Some(9.0), Stop::Count(3));
        let (lp, s) = split_point(&p, ShardSpec { k: 4, n: 4 });
        assert!(!s.runs && lp.rate == Some(2.25), "{s:?}");
        // A duration is not split.
        let p = point(Some(2), None, Stop::Duration(5));
        let (lp, s) = split_point(&p, ShardSpec { k: 2, n: 2 });
        assert_eq!((lp.stop, s.units), (Stop::Duration(5), None));
    }

    #[test]
    fn shard_seeds_are_derived_and_one_of_one_is_the_suite_seed() {
        assert_eq!(shard_seed(5, 1, 1), 5);
        let s: Vec<u64> = (1..=4).map(|k| shard_seed(5, k, 4)).collect();
        for i in 0..4 {
            for j in 0..i {
                assert_ne!(s[i], s[j]);
            }
        }
        assert_eq!(s[0], shard_seed(5, 1, 4), "deterministic");
        assert_ne!(shard_seed(5, 1, 4), shard_seed(5, 1, 3));
    }

    #[test]
    fn start_at_takes_fractional_seconds_and_refuses_nonsense() {
        let now = 1_700_000_000_000_000_000u64;
        assert_eq!(
            parse_start_at("1700000000.25", now),
            Ok(1_700_000_000_250_000_000)
        );
        for bad in [
            "x",
            "-1",
            "0",
            "inf",
            "NaN",
            "1e30",
            "1800000000",
            "1.",
            "1.0000000001",
        ] {
            assert!(
                parse_start_at(bad, now)
                    .unwrap_err()
                    .starts_with("--start-at"),
                "{bad}"
            );
        }
    }
}
