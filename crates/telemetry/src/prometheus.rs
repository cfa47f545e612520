//! A Prometheus server as a metrics source.
//!
//! Where engines run behind a cluster, the benchmark host cannot scrape each engine, but a
//! Prometheus server already does. With `[telemetry] prometheus = { url = "…", selector =
//! '{job="vllm"}' }` the runner asks that server, **after the run**, for the engine profile's
//! counter and gauge families over the run window, with PromQL range queries
//! (`/api/v1/query_range`, step = the metrics sampling period):
//!
//! - per family, `F{selector}` gives each series' value at every step, and
//!   `timestamp(F{selector})` the timestamp of the stored sample behind it, i.e. when
//!   Prometheus scraped it. The join keeps each stored sample once, at its own source
//!   timestamp (repeated evaluations of one scrape collapse), so the samples are the
//!   server's scrapes, not the query grid;
//! - a step where a series' newest sample is older than twice its scrape interval (or the
//!   step, whichever is larger) is **stale**; a step inside a series' span where it has no
//!   value at all (a staleness marker: the target was down) is **absent**. Both are counted
//!   per series and listed as gaps;
//! - the stored samples are mapped through the same engine profile as a direct scrape
//!   ([`super::profile::map_exposition`]: model selection by `model_name`/`model`, sums over
//!   shards and instances) into [`MetricsSample`]s: `elapsed_ns` is the newest source
//!   timestamp that contributed, `request_sent_ns` the oldest, so the engine's snapshot lies
//!   between them as for a direct scrape. Counter resets are tracked the same way (a
//!   decrease is a reset).
//!
//! The timeline goes to `samples/prometheus.jsonl` (same line format as `metrics.jsonl`)
//! and `sources.json` → `prometheus`, and the step-attribution join (docs/measurement.md) reads its counters
//! ([`super::TelemetryRun::counter_timeline`]).
//!
//! Prometheus stamps a scrape when it starts it, in whole milliseconds of its own wall
//! clock; the runner maps that onto the run clock through the reference instant
//! (`t_ms · 10⁶ − reference_instant_unix_ns`). Samples before the reference instant are
//! left out (counted in the notes). After the run the runner waits, up to `wait`, for a
//! scrape at or after the end of the run, so the last step has an end sample.
//!
//! A saved `query_range` response (what `curl …/api/v1/query_range` returns for a plain
//! selector, whose series carry `__name__`) is accepted as offline input to `trajectory`
//! ([`timeline_from_saved`]): there the timestamps are the query's evaluation times (each
//! value is the latest sample at or before it), which the timeline states.

use super::metrics::{MetricsTracker, build_client};
use super::profile::{EngineProfile, detect_profile, families, map_exposition};
use super::prom::{ExpositionFormat, parse_exposition};
use super::{MetricsTimeline, ScrapeGap, SourceStatus};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

/// Most points one `query_range` call may return per series (Prometheus refuses more than
/// 11,000); longer windows are queried in chunks.
const MAX_POINTS_PER_QUERY: u64 = 10_000;
/// Most gaps kept individually.
const MAX_GAPS: usize = 1000;

pub use super::prometheus_config::PrometheusConfig;

pub use inferscope_model::telemetry::{PrometheusInfo, SeriesInfo, TimestampBasis};

/// One series as read: stored samples `(unix ms, value)` in time order.
#[derive(Clone, Debug, PartialEq)]
struct RawSeries {
    name: String,
    /// The profile family it belongs to.
    family: String,
    counter: bool,
    labels: Vec<(String, String)>,
    points: Vec<(u64, f64)>,
    stale_steps: u64,
    absent_steps: u64,
    /// Stale and absent stretches: (first eval ms, last eval ms, kind).
    gaps: Vec<(u64, u64, &'static str)>,
}

/// Errors reading Prometheus answers (HTTP or JSON).
type R<T> = Result<T, String>;

/// Whether `s` is a label-matcher list PromQL accepts after a metric name: empty, or
/// `{` matchers `}` with matchers `name op "value"` (op `=`, `!=`, `=~`, `!~`), comma
/// separated, no `__name__` (the runner names the families). `Err` says what is wrong.
pub fn check_selector(s: &str) -> Result<(), String> {
    let t = s.trim();
    if t.is_empty() {
        return Ok(());
    }
    let inner = t
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .ok_or("a selector is label matchers in braces, e.g. {job=\"vllm\"}")?;
    let b = inner.as_bytes();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i == b.len() {
            return Ok(());
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let name = &inner[start..i];
        if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
            return Err(format!("expected a label name at {:?}", &inner[start..]));
        }
        if name == "__name__" {
            return Err(
                "the selector must not match `__name__`: the engine profile names the families"
                    .into(),
            );
        }
        skip_ws(&mut i);
        let op_len = if inner[i..].starts_with("=~")
            || inner[i..].starts_with("!~")
            || inner[i..].starts_with("!=")
        {
            2
        } else if inner[i..].starts_with('=') {
            1
        } else {
            return Err(format!("label `{name}`: expected =, !=, =~ or !~"));
        };
        i += op_len;
        skip_ws(&mut i);
        let q = *b
            .get(i)
            .ok_or(format!("label `{name}`: missing quoted value"))?;
        if q != b'"' && q != b'\'' && q != b'`' {
            return Err(format!("label `{name}`: the value must be quoted"));
        }
        i += 1;
        loop {
            match b.get(i) {
                None => return Err(format!("label `{name}`: unterminated value")),
                Some(b'\\') if q != b'`' => i += 2,
                Some(c) if *c == q => {
                    i += 1;
                    break;
                }
                Some(_) => i += 1,
            }
        }
        skip_ws(&mut i);
        match b.get(i) {
            None => return Ok(()),
            Some(b',') => i += 1,
            Some(_) => return Err(format!("expected `,` or `}}` after label `{name}`")),
        }
    }
}

/// The selector's matchers without braces (`job="vllm"`), empty when none.
fn matchers(selector: &str) -> &str {
    let t = selector.trim();
    t.strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .map(str::trim)
        .unwrap_or("")
}

/// `name{matchers}`.
fn select(name: &str, selector: &str) -> String {
    let m = matchers(selector);
    if m.is_empty() {
        name.to_string()
    } else {
        format!("{name}{{{m}}}")
    }
}

/// `{__name__=~"re",matchers}`.
fn select_re(name_re: &str, selector: &str) -> String {
    let m = matchers(selector);
    if m.is_empty() {
        format!("{{__name__=~\"{name_re}\"}}")
    } else {
        format!("{{__name__=~\"{name_re}\",{m}}}")
    }
}

/// Latest Prometheus timestamp accepted: 2100-01-01T00:00:00Z, unix ms. A later one is
/// absurd for a saved answer, and near `u64::MAX / 1e6` ms its ns value would wrap (issue
/// 30 item 9).
pub const MAX_UNIX_MS: u64 = 4_102_444_800_000;

/// Unix ms of a Prometheus timestamp (float seconds, millisecond resolution), within
/// `0..=MAX_UNIX_MS`.
fn ts_ms(v: &Value) -> Option<u64> {
    let f = match v {
        Value::Number(n) => n.as_f64()?,
        Value::String(s) => s.parse::<f64>().ok()?,
        _ => return None,
    };
    let ms = f * 1000.0;
    (f.is_finite() && f >= 0.0 && ms.round() <= MAX_UNIX_MS as f64).then(|| ms.round() as u64)
}

/// The largest sample value accepted: 2^53, past which a float no longer holds every
/// integer (a counter there would turn into a saturated or rounded token count).
const MAX_EXACT_VALUE: f64 = 9_007_199_254_740_992.0;

/// A sample value: Prometheus sends strings (`"42"`, `"NaN"`, `"+Inf"`).
fn value_f64(v: &Value) -> Option<f64> {
    match v {
        Value::String(s) => match s.as_str() {
            "+Inf" | "Inf" => Some(f64::INFINITY),
            "-Inf" => Some(f64::NEG_INFINITY),
            "NaN" => Some(f64::NAN),
            t => t.parse().ok(),
        },
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// One matrix series: labels (with `__name__` when present) and `(eval ms, value)` pairs.
type MatrixSeries = (BTreeMap<String, String>, Vec<(u64, f64)>);

/// Parses a `query_range` answer (`{"status":"success","data":{"resultType":"matrix",
/// "result":[{"metric":{…},"values":[[t,"v"],…]}]}}`).
fn parse_matrix(v: &Value) -> R<Vec<MatrixSeries>> {
    let status = v.get("status").and_then(Value::as_str).unwrap_or("");
    if status != "success" {
        let et = v.get("errorType").and_then(Value::as_str).unwrap_or("?");
        let e = v
            .get("error")
            .and_then(Value::as_str)
            .unwrap_or("no error text");
        return Err(format!("status {status:?} ({et}: {e})"));
    }
    let data = v.get("data").ok_or("no `data`")?;
    let rt = data.get("resultType").and_then(Value::as_str).unwrap_or("");
    if rt != "matrix" {
        return Err(format!(
            "resultType {rt:?}, expected \"matrix\" (a query_range answer)"
        ));
    }
    let result = data
        .get("result")
        .and_then(Value::as_array)
        .ok_or("no `data.result` array")?;
    let mut out = Vec::new();
    for (k, s) in result.iter().enumerate() {
        let labels: BTreeMap<String, String> = s
            .get("metric")
            .and_then(Value::as_object)
            .ok_or(format!("result[{k}] has no `metric` object"))?
            .iter()
            .filter_map(|(a, b)| b.as_str().map(|b| (a.clone(), b.to_string())))
            .collect();
        let values = s
            .get("values")
            .and_then(Value::as_array)
            .ok_or(format!("result[{k}] has no `values` array"))?;
        let mut pts = Vec::with_capacity(values.len());
        for (j, p) in values.iter().enumerate() {
            let pair = p.as_array().filter(|a| a.len() == 2).ok_or(format!(
                "result[{k}].values[{j}] is not a [time, \"value\"] pair"
            ))?;
            let t = ts_ms(&pair[0]).ok_or(format!(
                "result[{k}].values[{j}]: time is not a unix time in seconds between 0 and \
                 {} (2100-01-01)",
                MAX_UNIX_MS / 1000
            ))?;
            if let Some(&(prev, _)) = pts.last()
                && t <= prev
            {
                return Err(format!(
                    "result[{k}].values[{j}]: time {t} ms is not after the previous point's \
                     ({prev} ms): a query_range answer's points are in time order"
                ));
            }
            let val = value_f64(&pair[1])
                .ok_or(format!("result[{k}].values[{j}]: value is not a number"))?;
            if val.is_finite() && val.abs() > MAX_EXACT_VALUE {
                return Err(format!(
                    "result[{k}].values[{j}]: value {val:e} is past 2^53, the largest count a \
                     float holds exactly (no engine counts that far: a damaged answer)"
                ));
            }
            pts.push((t, val));
        }
        out.push((labels, pts));
    }
    Ok(out)
}

fn without_name(l: &BTreeMap<String, String>) -> Vec<(String, String)> {
    l.iter()
        .filter(|(k, _)| k.as_str() != "__name__")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn median_interval(points: &[(u64, f64)]) -> Option<u64> {
    let mut d: Vec<u64> = points
        .windows(2)
        .map(|w| w[1].0.saturating_sub(w[0].0))
        .collect();
    if d.is_empty() {
        return None;
    }
    d.sort_unstable();
    Some(d[d.len() / 2])
}

/// Joins a family's value and `timestamp()` answers into stored samples, with stale and
/// absent steps counted. `grid` is every evaluation time asked for (ms).
fn join_source(
    family: &str,
    counter: bool,
    name: &str,
    values: Vec<MatrixSeries>,
    stamps: Vec<MatrixSeries>,
    step_ms: u64,
    grid: &[u64],
) -> Vec<RawSeries> {
    let stamps: BTreeMap<Vec<(String, String)>, BTreeMap<u64, u64>> = stamps
        .into_iter()
        .map(|(l, pts)| {
            (
                without_name(&l),
                pts.into_iter()
                    .filter(|(_, v)| v.is_finite() && *v >= 0.0)
                    .map(|(t, v)| (t, (v * 1000.0).round() as u64))
                    .collect(),
            )
        })
        .collect();
    let mut out = Vec::new();
    for (l, pts) in values {
        let labels = without_name(&l);
        let Some(src) = stamps.get(&labels) else {
            continue;
        };
        // (eval ms, source ms, value)
        let evals: Vec<(u64, u64, f64)> = pts
            .iter()
            .filter_map(|(t, v)| src.get(t).map(|s| (*t, *s, *v)))
            .collect();
        let mut points: Vec<(u64, f64)> = Vec::new();
        for (_, s, v) in &evals {
            if points.last().is_none_or(|(ls, _)| s > ls) {
                points.push((*s, *v));
            }
        }
        let interval = median_interval(&points);
        let stale_after = 2 * interval.unwrap_or(step_ms).max(step_ms);
        let mut series = RawSeries {
            name: name.to_string(),
            family: family.to_string(),
            counter,
            labels,
            points,
            stale_steps: 0,
            absent_steps: 0,
            gaps: Vec::new(),
        };
        let present: BTreeMap<u64, u64> = evals.iter().map(|(t, s, _)| (*t, *s)).collect();
        if let (Some(first), Some(last)) = (present.keys().next(), present.keys().last()) {
            let mut open: Option<(u64, u64, &'static str)> = None;
            for &t in grid.iter().filter(|t| **t >= *first && **t <= *last) {
                let kind = match present.get(&t) {
                    None => Some("absent"),
                    Some(s) if t.saturating_sub(*s) > stale_after => Some("stale"),
                    Some(_) => None,
                };
                match kind {
                    Some("absent") => series.absent_steps += 1,
                    Some(_) => series.stale_steps += 1,
                    None => {}
                }
                open = match (open, kind) {
                    (Some((a, _, k0)), Some(k)) if k == k0 => Some((a, t, k0)),
                    (o, k) => {
                        if let Some(g) = o {
                            series.gaps.push(g);
                        }
                        k.map(|k| (t, t, k))
                    }
                };
            }
            if let Some(g) = open {
                series.gaps.push(g);
            }
        }
        out.push(series);
    }
    out
}

/// Escapes a label value for the text exposition.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// The text exposition of each series' newest sample at or before `now` (families in
/// name order, each typed once), and the oldest of those samples' times; `cursor` keeps
/// each series' position between calls for ascending `now`.
fn exposition_at(series: &[RawSeries], cursor: &mut [usize], now: u64) -> (String, u64) {
    let mut text = String::new();
    let mut oldest = now;
    let mut typed: Vec<&str> = Vec::new();
    let mut order: Vec<usize> = (0..series.len()).collect();
    order.sort_by(|a, b| series[*a].family.cmp(&series[*b].family));
    for i in order {
        let s = &series[i];
        while cursor[i] < s.points.len() && s.points[cursor[i]].0 <= now {
            cursor[i] += 1;
        }
        let Some(&(ts, v)) = cursor[i].checked_sub(1).map(|k| &s.points[k]) else {
            continue;
        };
        oldest = oldest.min(ts);
        if !typed.contains(&s.family.as_str()) {
            typed.push(&s.family);
            let kind = if s.counter { "counter" } else { "gauge" };
            let _ = writeln!(text, "# TYPE {} {kind}", s.family);
        }
        let name = if s.counter {
            format!("{}_total", s.family)
        } else {
            s.family.clone()
        };
        let labels: Vec<String> = s
            .labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect();
        let _ = writeln!(text, "{name}{{{}}} {v}", labels.join(","));
    }
    (text, oldest)
}

/// The stored series' scrape gaps (stale or absent steps) as the timeline's gaps, at most
/// [`MAX_GAPS`], those before the reference instant `reference_ns` left out.
fn push_scrape_gaps(series: &[RawSeries], reference_ns: u64, t: &mut MetricsTimeline) {
    for s in series {
        for (a, b, kind) in &s.gaps {
            if t.gaps.len() >= MAX_GAPS {
                break;
            }
            if let Some(at) = ms_after_reference(*a, reference_ns) {
                let what = if *kind == "stale" {
                    "newest sample older than twice the scrape interval"
                } else {
                    "no value (stale marker: target down or series gone)"
                };
                t.gaps.push(ScrapeGap {
                    elapsed_ns: at as u64,
                    reason: format!(
                        "{kind}: {}{{{}}} from {a} to {b} unix ms: {what}",
                        s.name,
                        s.labels
                            .iter()
                            .map(|(k, v)| format!("{k}=\"{v}\""))
                            .collect::<Vec<_>>()
                            .join(",")
                    ),
                });
            }
        }
    }
}

/// Nanoseconds from the reference instant `reference_ns` (unix ns) to `ms` (unix ms);
/// `None` before it.
fn ms_after_reference(ms: u64, reference_ns: u64) -> Option<u128> {
    (ms as u128 * 1_000_000).checked_sub(reference_ns as u128)
}

/// Builds the timeline from stored samples: one [`super::MetricsSample`] per distinct
/// timestamp, through the engine profile (module docs).
fn build_timeline(
    series: &[RawSeries],
    profile: EngineProfile,
    served_model: Option<&str>,
    reference_instant_unix_ns: u64,
    mut t: MetricsTimeline,
) -> MetricsTimeline {
    let mut times: Vec<u64> = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    times.sort_unstable();
    times.dedup();
    let ref_ms_ns = |ms: u64| ms_after_reference(ms, reference_instant_unix_ns);
    let mut before = 0u64;
    let mut tracker = MetricsTracker::new();
    let mut cursor = vec![0usize; series.len()];
    // Series present from the start (first sample within two intervals of the earliest
    // one: scraped at another phase) are waited for, so the first sums are not partial;
    // a series that appears later is new and counted from when it appears.
    let global_first = times.first().copied().unwrap_or(0);
    let ready_at = series
        .iter()
        .filter_map(|s| {
            let first = s.points.first()?.0;
            let slack = 2 * median_interval(&s.points).unwrap_or(0);
            (first <= global_first + slack).then_some(first)
        })
        .max()
        .unwrap_or(global_first);
    for &now in &times {
        let (text, oldest) = exposition_at(series, &mut cursor, now);
        if now < ready_at {
            continue;
        }
        let (Some(elapsed), Some(sent)) = (ref_ms_ns(now), ref_ms_ns(oldest)) else {
            before += 1;
            continue;
        };
        let expo = parse_exposition(&text, ExpositionFormat::PrometheusText);
        let scrape = t.samples.len() as u64 + 1;
        super::record_parse_errors(&mut t, scrape, elapsed as u64, &expo.errors, 100);
        let snap = map_exposition(&expo, profile, served_model);
        if snap.profile.is_some() {
            t.profile = snap.profile;
        }
        for (k, v) in &snap.mapping {
            t.mapping.insert(k.clone(), v.clone());
        }
        for n in &snap.notes {
            if t.notes.len() < 100 && !t.notes.contains(n) {
                t.notes.push(n.clone());
            }
        }
        t.samples
            .push(tracker.ingest(sent as u64, elapsed as u64, &snap));
    }
    if before > 0 {
        t.notes.push(format!(
            "{before} stored sample time(s) before the run's reference instant left out"
        ));
    }
    push_scrape_gaps(series, reference_instant_unix_ns, &mut t);
    t.counter_resets = tracker.resets();
    t.sample_count = t.samples.len() as u64;
    t.scrapes_ok = t.sample_count;
    if t.samples.is_empty() && matches!(t.status, SourceStatus::Ok) {
        t.status = SourceStatus::Unavailable {
            reason: if series.is_empty() {
                "no series matched the engine profile's families and the selector".into()
            } else {
                "no stored sample at or after the run's reference instant".into()
            },
        };
    }
    let info = t.prometheus.as_mut().expect("set by the caller");
    info.series = series
        .iter()
        .map(|s| SeriesInfo {
            name: s.name.clone(),
            labels: s.labels.iter().cloned().collect(),
            points: s.points.len() as u64,
            first_elapsed_ns: s
                .points
                .first()
                .and_then(|p| ref_ms_ns(p.0))
                .map(|v| v as u64),
            last_elapsed_ns: s
                .points
                .last()
                .and_then(|p| ref_ms_ns(p.0))
                .map(|v| v as u64),
            scrape_interval_ns: median_interval(&s.points).map(|ms| ms * 1_000_000),
            stale_steps: s.stale_steps,
            absent_steps: s.absent_steps,
        })
        .collect();
    info.stale_steps = series.iter().map(|s| s.stale_steps).sum();
    info.absent_steps = series.iter().map(|s| s.absent_steps).sum();
    t
}

fn empty_timeline(
    url: &str,
    profile: EngineProfile,
    served_model: Option<&str>,
    step_ns: u64,
    info: PrometheusInfo,
) -> MetricsTimeline {
    MetricsTimeline {
        status: SourceStatus::Ok,
        url: url.to_string(),
        profile_requested: profile,
        profile: None,
        served_model: served_model.map(str::to_string),
        period_ns: step_ns,
        timeout_ns: 0,
        scrapes_ok: 0,
        scrapes_failed: 0,
        scrapes_resent: 0,
        gaps: Vec::new(),
        parse_errors: 0,
        parse_error_lines: Vec::new(),
        counter_resets: BTreeMap::new(),
        mapping: BTreeMap::new(),
        notes: Vec::new(),
        block_size: None,
        sample_count: 0,
        dropped: 0,
        prometheus: Some(info),
        samples: Vec::new(),
    }
}

/// The HTTP side: one server, one client.
struct Api {
    client: reqwest::Client,
    base: String,
}

impl Api {
    async fn get(&self, path: &str, params: &[(&str, String)]) -> R<Value> {
        let url = reqwest::Url::parse_with_params(&format!("{}{path}", self.base), params)
            .map_err(|e| format!("bad Prometheus URL {}: {e}", self.base))?;
        let resp = self.client.get(url).send().await.map_err(|e| {
            format!(
                "{path}: request failed: {}",
                super::metrics::error_chain(&e)
            )
        })?;
        let status = resp.status();
        let body = resp
            .bytes()
            .await
            .map_err(|e| format!("{path}: reading the answer: {e}"))?;
        if body.len() > super::metrics::MAX_BODY_BYTES {
            return Err(format!(
                "{path}: answer larger than {} bytes",
                super::metrics::MAX_BODY_BYTES
            ));
        }
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("{path}: HTTP {status}, answer is not JSON: {e}"))?;
        Ok(v)
    }

    /// `query_range` over `[start, end]` (ms) at `step_ms`, in chunks of at most
    /// [`MAX_POINTS_PER_QUERY`] points; series merged by labels.
    async fn range(&self, query: &str, start: u64, end: u64, step_ms: u64) -> R<Vec<MatrixSeries>> {
        let mut merged: BTreeMap<BTreeMap<String, String>, Vec<(u64, f64)>> = BTreeMap::new();
        let mut from = start;
        loop {
            let to = end.min(from + step_ms * (MAX_POINTS_PER_QUERY - 1));
            let v = self
                .get(
                    "/api/v1/query_range",
                    &[
                        ("query", query.to_string()),
                        ("start", secs(from)),
                        ("end", secs(to)),
                        ("step", secs(step_ms)),
                    ],
                )
                .await?;
            for (l, pts) in parse_matrix(&v).map_err(|e| format!("query {query}: {e}"))? {
                merged.entry(l).or_default().extend(pts);
            }
            if to >= end {
                break;
            }
            from = to + step_ms;
        }
        Ok(merged
            .into_iter()
            .map(|(l, mut p)| {
                p.sort_by_key(|x| x.0);
                p.dedup_by_key(|x| x.0);
                (l, p)
            })
            .collect())
    }

    /// The metric names the server has for the selector, among the engines' prefixes.
    async fn engine_names(&self, selector: &str, at_ms: u64, window_ms: u64) -> R<Vec<String>> {
        let q = format!(
            "group by (__name__) (last_over_time({}[{}ms]))",
            select_re("(vllm|sglang|llamacpp):.+", selector),
            window_ms.max(1)
        );
        let v = self
            .get(
                "/api/v1/query",
                &[("query", q.clone()), ("time", secs(at_ms))],
            )
            .await?;
        let status = v.get("status").and_then(Value::as_str).unwrap_or("");
        if status != "success" {
            return Err(format!("query {q}: status {status:?}"));
        }
        Ok(v.pointer("/data/result")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.pointer("/metric/__name__").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default())
    }
}

fn secs(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Detects the engine from metric names (as [`detect_profile`] does for a scrape).
fn detect_from_names(names: &[String]) -> Option<EngineProfile> {
    let mut text = String::new();
    for n in names {
        let _ = writeln!(text, "{n} 0");
    }
    detect_profile(&parse_exposition(&text, ExpositionFormat::PrometheusText))
}

/// Reads every family of the profile over `[start, end]` ms.
async fn fetch(
    api: &Api,
    cfg: &PrometheusConfig,
    profile: EngineProfile,
    start: u64,
    end: u64,
    queries: &mut Vec<String>,
) -> R<Vec<RawSeries>> {
    let step_ms = (cfg.step.as_millis() as u64).max(1);
    let (counters, gauges) = families(profile).ok_or("no engine profile to read")?;
    let grid: Vec<u64> = (0..)
        .map(|k| start + k * step_ms)
        .take_while(|t| *t <= end)
        .collect();
    let mut out = Vec::new();
    let fams = counters
        .iter()
        .map(|f| (*f, true))
        .chain(gauges.iter().map(|g| (*g, false)));
    for (family, counter) in fams {
        let re = if counter {
            format!("{family}(_total)?")
        } else {
            family.to_string()
        };
        let vq = select_re(&re, &cfg.selector);
        queries.push(vq.clone());
        let values = api.range(&vq, start, end, step_ms).await?;
        if values.is_empty() {
            continue;
        }
        // The stored name: `F_total` when the server has it, else `F`.
        let total = format!("{family}_total");
        let name = if counter
            && values
                .iter()
                .any(|(l, _)| l.get("__name__") == Some(&total))
        {
            total
        } else {
            family.to_string()
        };
        let values: Vec<MatrixSeries> = values
            .into_iter()
            .filter(|(l, _)| l.get("__name__").map(String::as_str) == Some(name.as_str()))
            .collect();
        let tq = format!("timestamp({})", select(&name, &cfg.selector));
        queries.push(tq.clone());
        let stamps = api.range(&tq, start, end, step_ms).await?;
        out.extend(join_source(
            family, counter, &name, values, stamps, step_ms, &grid,
        ));
    }
    Ok(out)
}

async fn collect_async(
    cfg: &PrometheusConfig,
    reference_instant_unix_ns: u64,
    started_elapsed_ns: u64,
    stopped_elapsed_ns: u64,
    t: &mut MetricsTimeline,
) -> R<Vec<RawSeries>> {
    let client = build_client(cfg.timeout, &cfg.url)?;
    let api = Api {
        client,
        base: cfg.url.trim_end_matches('/').to_string(),
    };
    let step_ms = (cfg.step.as_millis() as u64).max(1);
    let ref_ms = reference_instant_unix_ns.div_ceil(1_000_000);
    let start = ((reference_instant_unix_ns + started_elapsed_ns) / 1_000_000)
        .saturating_sub(step_ms)
        .max(ref_ms);
    let run_end = (reference_instant_unix_ns + stopped_elapsed_ns).div_ceil(1_000_000);
    let profile = match cfg.profile {
        EngineProfile::Auto => {
            let names = api
                .engine_names(
                    &cfg.selector,
                    now_unix_ms(),
                    now_unix_ms().saturating_sub(start) + step_ms,
                )
                .await?;
            detect_from_names(&names).ok_or_else(|| {
                format!(
                    "auto: no vllm:, sglang: or llamacpp: series for selector {:?}",
                    cfg.selector
                )
            })?
        }
        p => p,
    };
    let waited = Instant::now();
    loop {
        let end = now_unix_ms().max(start);
        let mut queries = Vec::new();
        let series = fetch(&api, cfg, profile, start, end, &mut queries).await?;
        let info = t.prometheus.as_mut().expect("set by the caller");
        info.queries = queries;
        info.query_start_unix_ms = Some(start);
        info.query_end_unix_ms = Some(end);
        let behind: Vec<&RawSeries> = series
            .iter()
            .filter(|s| s.points.last().is_none_or(|p| p.0 < run_end))
            .collect();
        let timed_out = waited.elapsed() >= cfg.wait;
        if behind.is_empty() || timed_out {
            info.waited_ms = Some(waited.elapsed().as_millis() as u64);
            if !behind.is_empty() {
                t.notes.push(format!(
                    "{} series had no sample at or after the run's end after waiting {} ms \
                     (the last steps may lack an end sample): {}",
                    behind.len(),
                    cfg.wait.as_millis(),
                    behind
                        .iter()
                        .take(5)
                        .map(|s| s.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            return Ok(series);
        }
        tokio::time::sleep(cfg.step.max(Duration::from_millis(100))).await;
    }
}

/// Reads the run window from the server (module docs). Blocking: runs on its own thread
/// with its own runtime, so it may be called from inside an async context. Never fails:
/// an unreachable server or a bad answer makes the timeline `unavailable` with the reason.
pub fn collect(
    cfg: &PrometheusConfig,
    reference_instant_unix_ns: u64,
    started_elapsed_ns: u64,
    stopped_elapsed_ns: u64,
) -> MetricsTimeline {
    let step_ns = cfg.step.as_nanos() as u64;
    let info = PrometheusInfo::new(&cfg.selector, step_ns, TimestampBasis::Source);
    let mut t = empty_timeline(
        &cfg.url,
        cfg.profile,
        cfg.served_model.as_deref(),
        step_ns,
        info,
    );
    t.timeout_ns = cfg.timeout.as_nanos() as u64;
    let cfg2 = cfg.clone();
    let joined = std::thread::Builder::new()
        .name("telemetry-prometheus".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("tokio runtime: {e}"))?;
            rt.block_on(async {
                let r = collect_async(
                    &cfg2,
                    reference_instant_unix_ns,
                    started_elapsed_ns,
                    stopped_elapsed_ns,
                    &mut t,
                )
                .await;
                Ok::<_, String>((r, t))
            })
        })
        .map_err(|e| format!("could not start the Prometheus reader: {e}"))
        .and_then(|h| {
            h.join()
                .map_err(|_| "the Prometheus reader panicked".to_string())
        })
        .and_then(|r| r);
    match joined {
        Ok((Ok(series), t)) => {
            let served = t.served_model.clone();
            build_timeline(
                &series,
                cfg.profile,
                served.as_deref(),
                reference_instant_unix_ns,
                t,
            )
        }
        Ok((Err(reason), mut t)) => {
            t.scrapes_failed = 1;
            t.status = SourceStatus::Unavailable {
                reason: format!("Prometheus {}: {reason}", cfg.url),
            };
            t
        }
        Err(reason) => {
            let mut t = empty_timeline(
                &cfg.url,
                cfg.profile,
                cfg.served_model.as_deref(),
                step_ns,
                PrometheusInfo::new(&cfg.selector, step_ns, TimestampBasis::Source),
            );
            t.status = SourceStatus::Failed { reason };
            t
        }
    }
}

/// A saved `query_range` answer as offline input: the counter timeline, and the unix ns of
/// its first evaluation (used as the reference instant of the offline join).
#[derive(Debug)]
pub struct SavedRange {
    /// The timeline (timestamps: evaluation times).
    pub timeline: MetricsTimeline,
    /// Unix ns of the earliest evaluation time in the files.
    pub reference_instant_unix_ns: u64,
    /// Unix ns of the latest.
    pub end_unix_ns: u64,
}

/// Builds a counter timeline from saved `query_range` answers (`(label, JSON text)` per
/// file): series must carry `__name__` (a plain selector query, e.g.
/// `{__name__=~"vllm:.*",job="vllm"}`); names outside the profile are ignored and noted.
/// `Err` names the file and what is wrong.
pub fn timeline_from_saved(
    files: &[(String, String)],
    profile: EngineProfile,
    served_model: Option<&str>,
) -> R<SavedRange> {
    let mut all: Vec<(String, MatrixSeries)> = Vec::new();
    for (label, text) in files {
        let v: Value = serde_json::from_str(text).map_err(|e| format!("{label}: not JSON: {e}"))?;
        for s in parse_matrix(&v).map_err(|e| format!("{label}: {e}"))? {
            if !s.0.contains_key("__name__") {
                return Err(format!(
                    "{label}: a series has no `__name__` label (save the answer of a plain \
                     selector query, not of a function such as rate() or timestamp())"
                ));
            }
            all.push((label.clone(), s));
        }
    }
    let profile = match profile {
        EngineProfile::Auto => {
            let names: Vec<String> = all.iter().map(|(_, s)| s.0["__name__"].clone()).collect();
            detect_from_names(&names)
                .ok_or("auto: no vllm:, sglang: or llamacpp: series in the saved answers")?
        }
        p => p,
    };
    let (counters, gauges) = families(profile).ok_or("no engine profile")?;
    let first = all
        .iter()
        .flat_map(|(_, s)| s.1.first().map(|p| p.0))
        .min()
        .ok_or("the saved answers hold no sample")?;
    let last = all
        .iter()
        .flat_map(|(_, s)| s.1.last().map(|p| p.0))
        .max()
        .unwrap_or(first);
    let step_ms = all
        .iter()
        .filter_map(|(_, s)| median_interval(&s.1))
        .min()
        .unwrap_or(0);
    let mut ignored: Vec<String> = Vec::new();
    let mut series = Vec::new();
    for (_, (l, pts)) in all {
        let name = l["__name__"].clone();
        let fam = counters
            .iter()
            .find(|f| name == **f || name == format!("{f}_total"))
            .map(|f| (*f, true))
            .or_else(|| gauges.iter().find(|g| name == **g).map(|g| (*g, false)));
        let Some((family, counter)) = fam else {
            if !ignored.contains(&name) {
                ignored.push(name);
            }
            continue;
        };
        series.push(RawSeries {
            name,
            family: family.to_string(),
            counter,
            labels: without_name(&l),
            points: pts,
            stale_steps: 0,
            absent_steps: 0,
            gaps: Vec::new(),
        });
    }
    let reference = first * 1_000_000;
    let info = PrometheusInfo {
        query_start_unix_ms: Some(first),
        query_end_unix_ms: Some(last),
        queries: files.iter().map(|(l, _)| l.clone()).collect(),
        ..PrometheusInfo::new("", step_ms * 1_000_000, TimestampBasis::Evaluation)
    };
    let mut t = empty_timeline(
        "saved query_range answer",
        profile,
        served_model,
        step_ms * 1_000_000,
        info,
    );
    t.notes.push(
        "timestamps are query evaluation times: each value is the latest sample Prometheus \
         had at or before its time"
            .into(),
    );
    if !ignored.is_empty() {
        t.notes.push(format!(
            "series outside the {} profile ignored: {}",
            profile.name(),
            ignored.join(", ")
        ));
    }
    let t = build_timeline(&series, profile, served_model, reference, t);
    Ok(SavedRange {
        timeline: t,
        reference_instant_unix_ns: reference,
        end_unix_ns: last * 1_000_000,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Points out of time order, repeated times, and absurd times
    /// (past 2100, or far enough to wrap in ns) are refused, naming the point.
    #[test]
    fn saved_answers_with_disordered_or_absurd_times_are_refused() {
        let answer = |values: &str| {
            let text = format!(
                r#"{{"status":"success","data":{{"resultType":"matrix","result":[{{"metric":{{"__name__":"vllm:prompt_tokens_total"}},"values":[{values}]}}]}}}}"#
            );
            timeline_from_saved(&[("r.json".into(), text)], EngineProfile::Vllm, None)
        };
        for (values, says) in [
            (
                r#"[1760000001,"5"],[1760000000,"6"]"#,
                "not after the previous",
            ),
            (
                r#"[1760000000,"5"],[1760000000,"6"]"#,
                "not after the previous",
            ),
            (r#"[1e300,"5"]"#, "between 0 and"),
            (r#"[18446744073709.552,"5"]"#, "between 0 and"),
            (r#"[4102444800.001,"5"]"#, "between 0 and"),
            (r#"[-1,"5"]"#, "between 0 and"),
            // Values no engine counts to: they would saturate into a token delta.
            (r#"[1760000000,"1e300"]"#, "past 2^53"),
            (r#"[1760000000,"18446744073709551616"]"#, "past 2^53"),
            (r#"[1760000000,"9007199254740994"]"#, "past 2^53"),
        ] {
            let e = answer(values).unwrap_err();
            assert!(e.contains("r.json") && e.contains(says), "{values}: {e}");
        }
        assert!(answer(r#"[1760000000,"5"],[1760000000.2,"6"]"#).is_ok());
        assert!(answer(r#"[1760000000,"9007199254740992"]"#).is_ok());
    }

    #[test]
    fn selectors_are_checked() {
        assert!(check_selector("").is_ok());
        assert!(check_selector("{job=\"vllm\"}").is_ok());
        assert!(check_selector("{ job = \"vllm\" , instance=~'a.*', x!=`y` }").is_ok());
        assert!(check_selector("{}").is_ok());
        assert!(
            check_selector("job=\"vllm\"")
                .unwrap_err()
                .contains("braces")
        );
        assert!(check_selector("{job}").unwrap_err().contains("expected ="));
        assert!(check_selector("{job=vllm}").unwrap_err().contains("quoted"));
        assert!(
            check_selector("{job=\"vllm}")
                .unwrap_err()
                .contains("unterminated")
        );
        assert!(
            check_selector("{__name__=\"x\"}")
                .unwrap_err()
                .contains("__name__")
        );
        assert!(
            check_selector("{a=\"1\" b=\"2\"}")
                .unwrap_err()
                .contains("`,`")
        );
    }

    #[test]
    fn queries_merge_the_selector() {
        assert_eq!(select("x_total", "{job=\"v\"}"), "x_total{job=\"v\"}");
        assert_eq!(select("x_total", ""), "x_total");
        assert_eq!(
            select_re("a|b", "{job=\"v\"}"),
            "{__name__=~\"a|b\",job=\"v\"}"
        );
        assert_eq!(select_re("a|b", " "), "{__name__=~\"a|b\"}");
        assert_eq!(secs(1_700_000_000_123), "1700000000.123");
        assert_eq!(secs(5), "0.005");
    }

    fn m(labels: &[(&str, &str)], pts: &[(u64, f64)]) -> MatrixSeries {
        (
            labels
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            pts.to_vec(),
        )
    }

    /// Repeated evaluations of one scrape collapse to one stored sample at its source time;
    /// a step whose newest sample is too old is stale, a step without value is absent.
    #[test]
    fn join_keeps_source_timestamps_and_flags_staleness() {
        // Scrapes at 1000, 1200, 1400 ms; evaluations every 100 ms from 1000 to 2000; the
        // target stops after 1400 (values carried until 1700, then absent until 1800, then
        // back at 1900–2000 carrying the 1900 scrape).
        let grid: Vec<u64> = (0..=10).map(|k| 1000 + 100 * k).collect();
        let vals = m(
            &[("__name__", "x_total"), ("job", "v")],
            &[
                (1000, 1.0),
                (1100, 1.0),
                (1200, 5.0),
                (1300, 5.0),
                (1400, 9.0),
                (1500, 9.0),
                (1600, 9.0),
                (1700, 9.0),
                (1900, 12.0),
                (2000, 12.0),
            ],
        );
        let ts = m(
            &[("job", "v")],
            &[
                (1000, 1.0),
                (1100, 1.0),
                (1200, 1.2),
                (1300, 1.2),
                (1400, 1.4),
                (1500, 1.4),
                (1600, 1.4),
                (1700, 1.4),
                (1900, 1.9),
                (2000, 1.9),
            ],
        );
        let s = join_source("x", true, "x_total", vec![vals], vec![ts], 100, &grid);
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert_eq!(
            s.points,
            vec![(1000, 1.0), (1200, 5.0), (1400, 9.0), (1900, 12.0)]
        );
        assert_eq!(s.labels, vec![("job".to_string(), "v".to_string())]);
        // Median interval 200 ms → stale after 400 ms: 1700 lags 300 (fresh); absent 1800.
        assert_eq!(s.stale_steps, 0);
        assert_eq!(s.absent_steps, 1);
        assert_eq!(s.gaps, vec![(1800, 1800, "absent")]);
    }

    #[test]
    fn timeline_sums_series_and_brackets_their_timestamps() {
        // Two instances scraped 50 ms apart; the canonical sample at each distinct time
        // sums both newest values; request_sent_ns is the older contributor.
        let a = RawSeries {
            name: "vllm:prompt_tokens_total".into(),
            family: "vllm:prompt_tokens".into(),
            counter: true,
            labels: vec![
                ("instance".into(), "a".into()),
                ("model_name".into(), "m".into()),
            ],
            points: vec![(1000, 10.0), (1200, 30.0)],
            stale_steps: 0,
            absent_steps: 0,
            gaps: vec![],
        };
        let mut b = a.clone();
        b.labels[0].1 = "b".into();
        b.points = vec![(1050, 100.0), (1250, 100.0)];
        let info = PrometheusInfo::new("", 100_000_000, TimestampBasis::Source);
        let t0 = empty_timeline("u", EngineProfile::Vllm, Some("m"), 100_000_000, info);
        let t = build_timeline(&[a, b], EngineProfile::Vllm, Some("m"), 900 * 1_000_000, t0);
        let got: Vec<(u64, u64, Option<u64>)> = t
            .samples
            .iter()
            .map(|s| (s.request_sent_ns, s.elapsed_ns, s.counters.prompt_tokens))
            .collect();
        const MS: u64 = 1_000_000;
        assert_eq!(
            got,
            vec![
                (100 * MS, 150 * MS, Some(110)),
                (150 * MS, 300 * MS, Some(130)),
                (300 * MS, 350 * MS, Some(130)),
            ]
        );
        // Never scraped families stay absent (null), never 0.
        assert!(
            t.samples
                .iter()
                .all(|s| s.counters.prefix_cache_hits.is_none())
        );
        assert_eq!(t.prometheus.as_ref().unwrap().series.len(), 2);
    }
}
