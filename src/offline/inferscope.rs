//! The public inferscope project's report JSON as offline input to the step-attribution join (docs/measurement.md).
//!
//! inferscope (`is-report`'s `Report`, and the `ResourceReport` of its sample-only mode)
//! writes its raw timelines beside the derived figures. The join reads, and needs, only:
//!
//! - `reference_instant_unix_ns` (u64, optional): the unix-ns anchor of the reports'
//!   `elapsed_ns` clock. Absent (a report written before its docs/measurement.md) → every trajectory is
//!   withheld (`no_anchor`), never joined against a guessed anchor;
//! - `gpu_timeline.samples[]`: `{elapsed_ns, device_index, power_draw_milliwatts, …}` —
//!   NVML `power_usage()` readings, so basis `averaged_1s` (a 1 s trailing average on
//!   Ampere and newer); a 0 mW reading is absence (as our own sampler treats it); one lane
//!   per `device_index`;
//! - `kvcache_timeline.samples[]`: `{elapsed_ns, hits, queries}` — cumulative prefix-cache
//!   counters → `prefix_cache_hits`, `prefix_cache_queries`;
//! - `phase_timeline.samples[]`: `{elapsed_ns, prompt_tokens, generation_tokens, …}` →
//!   `prompt_tokens`, `generation_tokens`.
//!
//! Every other field is ignored. The counters carry no restart signal, so a decrease is
//! an unflagged regression and withholds the trajectory (inferscope's own rule), never a
//! guessed reset. The run window is the span of all samples. Samples must be in time order
//! per timeline; `elapsed_ns` values must be JSON integers.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::telemetry::{
    CounterValues, EngineProfile, MetricsSample, MetricsTimeline, PowerBasis, PowerDevice,
    PowerDeviceKind, PowerSample, PowerTimeline, ResetFlags, SourceStatus, TelemetryRun,
};

/// A JSON integer ≥ 0 at `obj.key`; `Err` names `path.key` and what was found.
fn u64_field(obj: &Value, path: &str, key: &str) -> Result<u64, String> {
    match obj.get(key) {
        None => Err(format!("{path}.{key} is missing")),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| format!("{path}.{key} must be a non-negative JSON integer, found {v}")),
    }
}

/// Like [`u64_field`], `None` when absent or `null`.
fn opt_u64_field(obj: &Value, path: &str, key: &str) -> Result<Option<u64>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(_) => u64_field(obj, path, key).map(Some),
    }
}

/// `report.<name>.samples` as an array with its path, `None` when the timeline is absent
/// or `null`.
fn samples<'a>(report: &'a Value, name: &str) -> Result<Option<(&'a [Value], u64)>, String> {
    match report.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(t) => {
            let arr = t
                .get("samples")
                .and_then(Value::as_array)
                .ok_or_else(|| format!("{name}.samples must be an array"))?;
            let period = opt_u64_field(t, name, "sample_period_ns")?.unwrap_or(0);
            Ok(Some((arr.as_slice(), period)))
        }
    }
}

/// One counter timeline as read: `(elapsed_ns, a, b)` rows and the period.
type CounterRows = Option<(Vec<(u64, u64, u64)>, u64)>;

struct GpuSample {
    elapsed_ns: u64,
    device_index: u32,
    power_draw_milliwatts: Option<u64>,
    memory_used_bytes: Option<u64>,
    utilization_percent: Option<u32>,
}

/// An inferscope report turned into the join's sampled timelines.
#[derive(Debug)]
pub struct InferscopeEvidence {
    /// The timelines (`reference_instant_unix_ns` is 0 when the report has none).
    pub telemetry: TelemetryRun,
    /// The report's anchor; `None` withholds the join.
    pub anchor: Option<u64>,
    /// What was read, for the output.
    pub notes: Vec<String>,
}

fn sorted(label: &str, times: impl Iterator<Item = u64>) -> Result<(), String> {
    let mut prev = 0u64;
    for (i, t) in times.enumerate() {
        if t < prev {
            return Err(format!(
                "{label}.samples[{i}]: elapsed_ns {t} goes back in time (previous {prev})"
            ));
        }
        prev = t;
    }
    Ok(())
}

/// Keeps the samples of `devices` (the `device_index` values the run used, as
/// `gpu_devices` selects them for a live run) and says so; without a filter a report of
/// several devices is summed over all of them, and a note says that too (idle
/// devices of a TP=2 run on a 4-GPU host added 20.7 % to a step's energy).
/// `Err` names a listed device the report has no sample of.
fn select_devices(
    g: Vec<GpuSample>,
    devices: Option<&[u32]>,
    notes: &mut Vec<String>,
) -> Result<Vec<GpuSample>, String> {
    let mut present: Vec<u32> = g.iter().map(|s| s.device_index).collect();
    present.sort_unstable();
    present.dedup();
    let list = |d: &[u32]| d.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    let Some(keep) = devices else {
        if present.len() > 1 {
            notes.push(format!(
                "power: summed over every device of gpu_timeline ({}); --gpu-devices keeps \
                 only the devices the run used",
                list(&present)
            ));
        }
        return Ok(g);
    };
    if let Some(d) = keep.iter().find(|d| !present.contains(d)) {
        return Err(format!(
            "--gpu-devices {d}: gpu_timeline has no sample of device_index {d} (devices \
             present: {})",
            list(&present)
        ));
    }
    let left: Vec<u32> = present
        .iter()
        .copied()
        .filter(|d| !keep.contains(d))
        .collect();
    notes.push(format!(
        "power: devices {} kept (--gpu-devices); {} left out",
        list(keep),
        if left.is_empty() {
            "none".to_string()
        } else {
            list(&left)
        }
    ));
    Ok(g.into_iter()
        .filter(|s| keep.contains(&s.device_index))
        .collect())
}

/// Parses an inferscope report (JSON text) into timelines, every device summed. `Err`
/// names the field.
pub fn parse(text: &str) -> Result<InferscopeEvidence, String> {
    parse_devices(text, None)
}

/// [`parse`] with only the power samples of `devices` (`device_index` values) kept.
pub fn parse_devices(text: &str, devices: Option<&[u32]>) -> Result<InferscopeEvidence, String> {
    let r: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    if !r.is_object() {
        return Err("not an inferscope report: the top level is not a JSON object".into());
    }
    let anchor = opt_u64_field(&r, "report", "reference_instant_unix_ns")?;
    let gpu = gpu_samples(&r)?;
    let kv = counter_rows(&r, "kvcache_timeline", ["hits", "queries"])?;
    let phase = counter_rows(&r, "phase_timeline", ["prompt_tokens", "generation_tokens"])?;
    if gpu.is_none() && kv.is_none() && phase.is_none() {
        return Err(
            "no gpu_timeline, kvcache_timeline or phase_timeline: the report holds no timeline to join"
                .into(),
        );
    }
    let mut notes = Vec::new();
    let mut times: Vec<u64> = Vec::new();
    let gpu = match gpu {
        Some((g, period)) => Some((select_devices(g, devices, &mut notes)?, period)),
        None if devices.is_some() => {
            return Err("--gpu-devices: the report has no gpu_timeline".into());
        }
        None => None,
    };
    let power = match &gpu {
        None => None,
        Some((g, period)) => Some(power_timeline(g, *period, &mut notes, &mut times)?),
    };
    let metrics = metrics_timeline(&kv, &phase, &mut notes, &mut times)?;
    if anchor.is_none() {
        notes.push(
            "the report has no reference_instant_unix_ns (written before inferscope's ADR-013): \
             step markers cannot be placed on its clock"
                .into(),
        );
    }
    let start = times.iter().copied().min().unwrap_or(0);
    let end = times.iter().copied().max().unwrap_or(0);
    Ok(InferscopeEvidence {
        telemetry: TelemetryRun {
            clock_domain_id: "inferscope-report".into(),
            reference_instant_unix_ns: anchor.unwrap_or(0),
            started_elapsed_ns: start,
            stopped_elapsed_ns: end,
            proc: None,
            power,
            metrics,
            prometheus: None,
        },
        anchor,
        notes,
    })
}

/// The samples of the report's `gpu_timeline` with its period; `None` without one.
fn gpu_samples(r: &Value) -> Result<Option<(Vec<GpuSample>, u64)>, String> {
    let Some((arr, period)) = samples(r, "gpu_timeline")? else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(arr.len());
    for (i, v) in arr.iter().enumerate() {
        let at = format!("gpu_timeline.samples[{i}]");
        let index = u64_field(v, &at, "device_index")?;
        out.push(GpuSample {
            elapsed_ns: u64_field(v, &at, "elapsed_ns")?,
            device_index: u32::try_from(index)
                .map_err(|_| format!("{at}.device_index {index} is out of range"))?,
            power_draw_milliwatts: opt_u64_field(v, &at, "power_draw_milliwatts")?,
            memory_used_bytes: opt_u64_field(v, &at, "memory_used_bytes")?,
            utilization_percent: opt_u64_field(v, &at, "utilization_percent")?
                .map(|u| u.min(100) as u32),
        });
    }
    Ok(Some((out, period)))
}

/// The rows `(elapsed_ns, keys[0], keys[1])` of the report's counter timeline `name`, with
/// its period; `None` without one.
fn counter_rows(r: &Value, name: &str, keys: [&str; 2]) -> Result<CounterRows, String> {
    let Some((arr, period)) = samples(r, name)? else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(arr.len());
    for (i, v) in arr.iter().enumerate() {
        let at = format!("{name}.samples[{i}]");
        out.push((
            u64_field(v, &at, "elapsed_ns")?,
            u64_field(v, &at, keys[0])?,
            u64_field(v, &at, keys[1])?,
        ));
    }
    Ok(Some((out, period)))
}

/// The power timeline of the GPU samples `g` (NVML `power_usage()`, basis averaged_1s),
/// one device per `device_index`, with its energy computed; each device's samples must be
/// in time order. Adds the sample times to `times` and a note on the source.
fn power_timeline(
    g: &[GpuSample],
    period: u64,
    notes: &mut Vec<String>,
    times: &mut Vec<u64>,
) -> Result<PowerTimeline, String> {
    let mut devices: Vec<u32> = g.iter().map(|s| s.device_index).collect();
    devices.sort_unstable();
    devices.dedup();
    for d in &devices {
        sorted(
            &format!("gpu_timeline (device {d})"),
            g.iter()
                .filter(|s| s.device_index == *d)
                .map(|s| s.elapsed_ns),
        )?;
    }
    times.extend(g.iter().map(|s| s.elapsed_ns));
    let id = |index: u32| devices.iter().position(|d| *d == index).unwrap_or(0) as u32;
    let samples: Vec<PowerSample> = g
        .iter()
        .map(|s| {
            let mw = s.power_draw_milliwatts.filter(|p| *p > 0);
            PowerSample {
                elapsed_ns: s.elapsed_ns,
                device: id(s.device_index),
                power_mw: mw,
                power_basis: mw.map(|_| PowerBasis::Averaged1s),
                energy_mj: None,
                energy_epoch: None,
                memory_used_bytes: s.memory_used_bytes,
                utilization_gpu_pct: s.utilization_percent,
                utilization_memory_pct: None,
            }
        })
        .collect();
    notes.push(format!(
        "power: gpu_timeline, {} sample(s) on {} device(s), NVML power_usage() (basis averaged_1s)",
        samples.len(),
        devices.len()
    ));
    let mut t = PowerTimeline {
        gpu_status: Some(SourceStatus::Ok),
        period_ns: period,
        devices: devices
            .iter()
            .enumerate()
            .map(|(k, index)| PowerDevice {
                index: Some(*index),
                ..PowerDevice::plain(
                    k as u32,
                    PowerDeviceKind::Nvml,
                    format!("gpu{index}"),
                    Some(PowerBasis::Averaged1s),
                )
            })
            .collect(),
        sample_count: samples.len() as u64,
        dropped: 0,
        gpu_notes: Vec::new(),
        samples,
    };
    t.compute_energy();
    Ok(t)
}

/// The counter timeline of the prefix-cache (`kv`) and token (`phase`) rows: one sample per
/// distinct `elapsed_ns`, each with the counters read then; `None` without either. Each
/// timeline must be in time order. Adds the sample times to `times` and a note per source.
fn metrics_timeline(
    kv: &CounterRows,
    phase: &CounterRows,
    notes: &mut Vec<String>,
    times: &mut Vec<u64>,
) -> Result<Option<MetricsTimeline>, String> {
    let mut by_time: BTreeMap<u64, CounterValues> = BTreeMap::new();
    let mut period = 0u64;
    type Set = fn(&mut CounterValues, u64, u64);
    let timelines: [(&CounterRows, &str, &str, Set); 2] = [
        (
            kv,
            "prefix cache",
            "kvcache_timeline (hits, queries)",
            |c, a, b| {
                c.prefix_cache_hits = Some(a);
                c.prefix_cache_queries = Some(b);
            },
        ),
        (
            phase,
            "tokens",
            "phase_timeline (prompt_tokens, generation_tokens)",
            |c, a, b| {
                c.prompt_tokens = Some(a);
                c.generation_tokens = Some(b);
            },
        ),
    ];
    for (rows, what, source, set) in timelines {
        let Some((rows, p)) = rows else { continue };
        let name = source.split(' ').next().unwrap_or(source);
        sorted(name, rows.iter().map(|s| s.0))?;
        for (t, a, b) in rows {
            set(by_time.entry(*t).or_default(), *a, *b);
        }
        period = period.max(*p);
        notes.push(format!("{what}: {source}, {} sample(s)", rows.len()));
    }
    times.extend(by_time.keys().copied());
    Ok((kv.is_some() || phase.is_some()).then(|| {
        let samples: Vec<MetricsSample> = by_time
            .into_iter()
            .map(|(t, counters)| MetricsSample {
                elapsed_ns: t,
                request_sent_ns: t,
                counters,
                resets: ResetFlags::default(),
                gauges: BTreeMap::new(),
                gauge_engines: BTreeMap::new(),
                non_finite: Vec::new(),
            })
            .collect();
        MetricsTimeline {
            status: SourceStatus::Ok,
            url: "inferscope report".into(),
            profile_requested: EngineProfile::Vllm,
            profile: None,
            served_model: None,
            period_ns: period,
            timeout_ns: 0,
            scrapes_ok: samples.len() as u64,
            scrapes_failed: 0,
            scrapes_resent: 0,
            gaps: Vec::new(),
            parse_errors: 0,
            parse_error_lines: Vec::new(),
            counter_resets: BTreeMap::new(),
            mapping: BTreeMap::new(),
            notes: vec![
                "counters from an inferscope report: no restart signal, so a decrease withholds"
                    .into(),
            ],
            block_size: None,
            sample_count: samples.len() as u64,
            dropped: 0,
            prometheus: None,
            samples,
        }
    }))
}
