//! Engine metric profiles: map one parsed exposition to the canonical counters and gauges
//! (pure, no I/O).
//!
//! Canonical counters (tokens, monotonic, integer): `prompt_tokens`, `generation_tokens`,
//! `prefix_cache_queries`, `prefix_cache_hits`. Canonical gauges (floats): `requests_running`,
//! `requests_waiting`, `kv_cache_usage` (fraction 0–1). Source:
//! docs/telemetry.md "Engine counters and profiles"; field case C13.
//!
//! | canonical | vllm / sim | sglang | llamacpp |
//! |---|---|---|---|
//! | `prompt_tokens` | `vllm:prompt_tokens` (counter; includes cached tokens) | `sglang:prompt_tokens` (counter, at request finish) | `llamacpp:prompt_tokens` + `llamacpp:prompt_tokens_cached` (the first *excludes* cached tokens; without the cached family: processed tokens only, noted) |
//! | `generation_tokens` | `vllm:generation_tokens` | `sglang:generation_tokens` | `llamacpp:tokens_predicted` |
//! | `prefix_cache_queries` | `vllm:prompt_tokens_by_source` (vLLM ≥ 0.32, summed over sources; counted when prefill ends, like `prompt_tokens`), else `vllm:prefix_cache_queries` (tokens, counted at scheduling), else deprecated `vllm:gpu_prefix_cache_queries` | `sglang:prompt_tokens` (derived: every prompt token of a finished request was looked up) | `llamacpp:prompt_tokens` + `llamacpp:prompt_tokens_cached` |
//! | `prefix_cache_hits` | `vllm:prompt_tokens_cached` (vLLM ≥ 0.32, counted when prefill ends), else `vllm:prefix_cache_hits` (tokens, counted at scheduling), else deprecated `vllm:gpu_prefix_cache_hits` | `sglang:cached_tokens` (counter) | `llamacpp:prompt_tokens_cached` |
//! | `requests_running` | `vllm:num_requests_running` | `sglang:num_running_reqs` | `llamacpp:requests_processing` |
//! | `requests_waiting` | `vllm:num_requests_waiting` | `sglang:num_queue_reqs` | `llamacpp:requests_deferred` |
//! | `kv_cache_usage` | `vllm:kv_cache_usage_perc`, else `vllm:gpu_cache_usage_perc` | `sglang:token_usage` | `llamacpp:kv_cache_usage_ratio` (older builds only) |
//!
//! What is and is not a counter: `sglang:cache_hit_rate` is a **gauge** computed by the
//! scheduler and cannot be differenced, so it never feeds a canonical counter (it is kept as
//! the extra gauge `cache_hit_rate`); SGLang's only prefix-cache counter is
//! `sglang:cached_tokens_total`. llama.cpp has no prefix-cache *query* counter; the queries are
//! the logical prompt tokens (processed + cached), per the llama.cpp source's help text
//! "Number of prompt tokens processed, excluding cached tokens". `vllm:iteration_tokens_total`
//! is a histogram, never a counter. The deprecated vLLM `gpu_prefix_cache_*` families are read
//! only when the new `prefix_cache_*` family is not declared at all (C13).
//!
//! Series selection: a family's series are summed only over the served model's label set —
//! series whose `model_name` (or `model`) label equals the served model; series without a model
//! label are included only when no series of that family has one. Shard labels (`engine`,
//! `dp_rank`, …) are summed over. SGLang scheduler series that differ only in `tp_rank` are
//! de-duplicated (the largest value is kept) before summing.
//!
//! A counter family that is declared (`# TYPE`) but has no series at all reads as `None`
//! (noted): client libraries declare a labelled counter before its first increment (SGLang's
//! `cached_tokens_total` appears only after the first hit), and nothing counted is missing,
//! never 0. A family absent from the exposition
//! reads as `None`, as does one whose series all belong to other models (noted).

use super::prom::{Exposition, MetricFamily, MetricType};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Names of the four canonical counters, in their fixed order (index = [`CounterId`] as usize).
pub const CANONICAL_COUNTERS: [&str; 4] = [
    "prompt_tokens",
    "generation_tokens",
    "prefix_cache_queries",
    "prefix_cache_hits",
];

/// One canonical counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterId {
    /// Prompt tokens (logical prompt length, cached tokens included), tokens.
    PromptTokens = 0,
    /// Generated tokens, tokens.
    GenerationTokens = 1,
    /// Prefix-cache lookups, in tokens.
    PrefixCacheQueries = 2,
    /// Prefix-cache hits, in tokens.
    PrefixCacheHits = 3,
}

impl CounterId {
    /// All four, in canonical order.
    pub const ALL: [CounterId; 4] = [
        CounterId::PromptTokens,
        CounterId::GenerationTokens,
        CounterId::PrefixCacheQueries,
        CounterId::PrefixCacheHits,
    ];

    /// The canonical name (`"prompt_tokens"`, …).
    pub fn name(self) -> &'static str {
        CANONICAL_COUNTERS[self as usize]
    }
}

/// An engine profile, or `auto` detection. Serialized as `"vllm"`, `"sglang"`, `"llamacpp"`,
/// `"sim"`, `"auto"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineProfile {
    /// vLLM V1 names (`vllm:` prefix; labels `model_name`, `engine`).
    Vllm,
    /// SGLang names (`sglang:` prefix; labels `model_name`, `tp_rank`, …).
    Sglang,
    /// llama.cpp `llama-server --metrics` (`llamacpp:` prefix, no labels).
    Llamacpp,
    /// The built-in simulator: vLLM names with a `model_name` label only.
    Sim,
    /// Detect from the family names present (see [`detect_profile`]).
    Auto,
}

impl EngineProfile {
    /// Parses `vllm`, `sglang`, `llamacpp` (or `llama.cpp`, `llama-cpp`), `sim`, `auto`.
    pub fn parse(s: &str) -> Option<EngineProfile> {
        match s.to_ascii_lowercase().as_str() {
            "vllm" => Some(EngineProfile::Vllm),
            "sglang" => Some(EngineProfile::Sglang),
            "llamacpp" | "llama.cpp" | "llama-cpp" => Some(EngineProfile::Llamacpp),
            "sim" | "simulator" => Some(EngineProfile::Sim),
            "auto" => Some(EngineProfile::Auto),
            _ => None,
        }
    }

    /// The lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            EngineProfile::Vllm => "vllm",
            EngineProfile::Sglang => "sglang",
            EngineProfile::Llamacpp => "llamacpp",
            EngineProfile::Sim => "sim",
            EngineProfile::Auto => "auto",
        }
    }
}

/// Detects the engine from the family names: the prefix (`vllm:`, `sglang:`, `llamacpp:`) with
/// the most families. `None` when none is present. The simulator is indistinguishable from vLLM
/// by names and detects as [`EngineProfile::Vllm`] (same mapping).
pub fn detect_profile(expo: &Exposition) -> Option<EngineProfile> {
    let mut counts = [0usize; 3];
    for f in &expo.families {
        if f.name.starts_with("vllm:") {
            counts[0] += 1;
        } else if f.name.starts_with("sglang:") {
            counts[1] += 1;
        } else if f.name.starts_with("llamacpp:") {
            counts[2] += 1;
        }
    }
    let (i, n) = counts
        .iter()
        .enumerate()
        .max_by_key(|(i, n)| (**n, usize::MAX - *i))?;
    if *n == 0 {
        return None;
    }
    Some(
        [
            EngineProfile::Vllm,
            EngineProfile::Sglang,
            EngineProfile::Llamacpp,
        ][i],
    )
}

struct ProfileSpec {
    /// Per canonical counter: alternatives in priority order; each alternative is a list of
    /// counter families summed. An alternative is chosen when all its families are declared.
    counters: [&'static [&'static [&'static str]]; 4],
    /// Per canonical counter: the index of its first *fallback* alternative (one that is
    /// noted when used); the alternatives before it are equally good readings (vLLM 0.32's
    /// prefill-time families before the scheduling-time ones that older releases have).
    fallback_from: [usize; 4],
    /// The gauge family and label that carry the KV-cache block size, in tokens.
    block_size: Option<(&'static str, &'static str)>,
    /// Per canonical gauge name: gauge family alternatives in priority order.
    gauges: &'static [(&'static str, &'static [&'static str])],
    /// Labels whose values are de-duplicated (max) rather than summed.
    dedupe_labels: &'static [&'static str],
}

const VLLM: ProfileSpec = ProfileSpec {
    counters: [
        &[&["vllm:prompt_tokens"]],
        &[&["vllm:generation_tokens"]],
        &[
            &["vllm:prompt_tokens_by_source"],
            &["vllm:prefix_cache_queries"],
            &["vllm:gpu_prefix_cache_queries"],
        ],
        &[
            &["vllm:prompt_tokens_cached"],
            &["vllm:prefix_cache_hits"],
            &["vllm:gpu_prefix_cache_hits"],
        ],
    ],
    fallback_from: [1, 1, 2, 2],
    block_size: Some(("vllm:cache_config_info", "block_size")),
    gauges: &[
        ("requests_running", &["vllm:num_requests_running"]),
        ("requests_waiting", &["vllm:num_requests_waiting"]),
        (
            "kv_cache_usage",
            &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
        ),
    ],
    dedupe_labels: &[],
};

const SGLANG: ProfileSpec = ProfileSpec {
    counters: [
        &[&["sglang:prompt_tokens"]],
        &[&["sglang:generation_tokens"]],
        &[&["sglang:prompt_tokens"]],
        &[&["sglang:cached_tokens"]],
    ],
    fallback_from: [1, 1, 1, 1],
    block_size: None,
    gauges: &[
        ("requests_running", &["sglang:num_running_reqs"]),
        ("requests_waiting", &["sglang:num_queue_reqs"]),
        ("kv_cache_usage", &["sglang:token_usage"]),
        ("cache_hit_rate", &["sglang:cache_hit_rate"]),
    ],
    dedupe_labels: &["tp_rank"],
};

const LLAMACPP: ProfileSpec = ProfileSpec {
    counters: [
        &[
            &["llamacpp:prompt_tokens", "llamacpp:prompt_tokens_cached"],
            &["llamacpp:prompt_tokens"],
        ],
        &[&["llamacpp:tokens_predicted"]],
        &[&["llamacpp:prompt_tokens", "llamacpp:prompt_tokens_cached"]],
        &[&["llamacpp:prompt_tokens_cached"]],
    ],
    fallback_from: [1, 1, 1, 1],
    block_size: None,
    gauges: &[
        ("requests_running", &["llamacpp:requests_processing"]),
        ("requests_waiting", &["llamacpp:requests_deferred"]),
        ("kv_cache_usage", &["llamacpp:kv_cache_usage_ratio"]),
    ],
    dedupe_labels: &[],
};

fn spec(p: EngineProfile) -> Option<&'static ProfileSpec> {
    match p {
        EngineProfile::Vllm | EngineProfile::Sim => Some(&VLLM),
        EngineProfile::Sglang => Some(&SGLANG),
        EngineProfile::Llamacpp => Some(&LLAMACPP),
        EngineProfile::Auto => None,
    }
}

/// The metric families one profile reads: counter families (as declared, without the
/// `_total` sample suffix) and gauge families, each once, in profile order. `None` for
/// [`EngineProfile::Auto`] (detect first).
pub fn families(p: EngineProfile) -> Option<(Vec<&'static str>, Vec<&'static str>)> {
    let spec = spec(p)?;
    let mut counters: Vec<&'static str> = Vec::new();
    for alts in spec.counters {
        for alt in alts.iter() {
            for f in alt.iter() {
                if !counters.contains(f) {
                    counters.push(f);
                }
            }
        }
    }
    let mut gauges: Vec<&'static str> = Vec::new();
    for (_, fams) in spec.gauges {
        for f in fams.iter() {
            if !gauges.contains(f) {
                gauges.push(f);
            }
        }
    }
    Some((counters, gauges))
}

/// Signature of a counter's `_created` samples (series key → value bits), used as a reset
/// signal across scrapes. Empty when the engine exposes no `_created`.
pub type CreatedSignature = Vec<(String, u64)>;

/// One canonical counter read from one scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct CounterReading {
    /// Summed value over the served model's series; `None` when not exposed or not finite.
    pub value: Option<u64>,
    /// `_created` signature of the series summed (reset signal).
    pub created: CreatedSignature,
}

/// The canonical view of one scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct CanonicalSnapshot {
    /// The profile applied (after `auto` detection); `None` when detection found no engine.
    pub profile: Option<EngineProfile>,
    /// Indexed by [`CounterId`].
    pub counters: [CounterReading; 4],
    /// Gauge name → value. A gauge that is absent is `None`; a non-finite value is `None` and
    /// its name is listed in `non_finite`. A gauge exposed by several engines (data-parallel
    /// ranks: series that differ in labels other than the model's) is `None` here — never
    /// their sum — and kept per engine in `gauge_engines`.
    pub gauges: BTreeMap<String, Option<f64>>,
    /// Gauge name → engine key (the series' other labels, e.g. `engine="1"`) → value, for
    /// gauges exposed by more than one engine, and for a gauge of one engine whose series
    /// carries such labels (vLLM's `engine="0"`): kept under its engine, never under `""`.
    pub gauge_engines: BTreeMap<String, BTreeMap<String, Option<f64>>>,
    /// The KV-cache block size in tokens (vLLM: the `block_size` label of
    /// `vllm:cache_config_info`); `None` when the engine does not expose it, or when its
    /// engines disagree (noted). A prefix-cache hit reuses whole blocks only.
    pub block_size: Option<u64>,
    /// Names (canonical counter or gauge) whose exposed value was NaN/±Inf/negative (C17).
    pub non_finite: Vec<String>,
    /// Canonical name → the formula used, e.g. `"llamacpp:prompt_tokens + llamacpp:prompt_tokens_cached"`.
    pub mapping: BTreeMap<String, String>,
    /// Remarks (deprecated family used, model filter excluded everything, …).
    pub notes: Vec<String>,
}

impl CanonicalSnapshot {
    /// The value of one canonical counter.
    pub fn counter(&self, id: CounterId) -> Option<u64> {
        self.counters[id as usize].value
    }

    /// The value of one gauge (`None` when absent or non-finite).
    pub fn gauge(&self, name: &str) -> Option<f64> {
        self.gauges.get(name).copied().flatten()
    }
}

fn model_label(labels: &[(String, String)]) -> Option<&str> {
    labels
        .iter()
        .find(|(k, _)| k == "model_name" || k == "model")
        .map(|(_, v)| v.as_str())
}

/// Selects the value samples of a family that belong to the served model (see module docs).
/// Returns `(kept samples, note)`.
fn select_series<'a>(
    fam: &'a MetricFamily,
    served_model: Option<&str>,
    value_filter: impl Fn(&str) -> bool,
) -> (Vec<&'a super::prom::MetricSample>, Option<String>) {
    let cand: Vec<_> = fam
        .samples
        .iter()
        .filter(|s| value_filter(&s.suffix))
        .collect();
    let models: std::collections::BTreeSet<&str> =
        cand.iter().filter_map(|s| model_label(&s.labels)).collect();
    if models.is_empty() {
        return (cand, None);
    }
    let chosen = match served_model {
        Some(m) => m.to_string(),
        None if models.len() == 1 => models.iter().next().unwrap().to_string(),
        None => {
            return (
                Vec::new(),
                Some(format!(
                    "{}: several models ({}) and no served model given; not summed",
                    fam.name,
                    models.iter().copied().collect::<Vec<_>>().join(", ")
                )),
            );
        }
    };
    let kept: Vec<_> = cand
        .into_iter()
        .filter(|s| model_label(&s.labels) == Some(chosen.as_str()))
        .collect();
    let note = kept.is_empty().then(|| {
        format!(
            "{}: no series for model {chosen:?} (seen: {})",
            fam.name,
            models.iter().copied().collect::<Vec<_>>().join(", ")
        )
    });
    (kept, note)
}

fn series_key(labels: &[(String, String)], drop: &[&str]) -> String {
    let mut l: Vec<_> = labels
        .iter()
        .filter(|(k, _)| !drop.contains(&k.as_str()))
        .collect();
    l.sort();
    l.iter()
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Sums values over series after de-duplicating on `dedupe` labels (max per group).
fn sum_dedup(samples: &[&super::prom::MetricSample], dedupe: &[&str]) -> f64 {
    let mut groups: BTreeMap<String, f64> = BTreeMap::new();
    for s in samples {
        let k = series_key(&s.labels, dedupe);
        let e = groups.entry(k).or_insert(f64::NEG_INFINITY);
        // NaN must propagate: max() would swallow it.
        if s.value.is_nan() || e.is_nan() {
            *e = f64::NAN;
        } else if s.value > *e {
            *e = s.value;
        }
    }
    groups.values().sum()
}

/// Maps an exposition through a profile. `Auto` detects with [`detect_profile`]; when nothing is
/// detected every value is `None` and a note says so. `served_model` selects series by their
/// `model_name`/`model` label (see module docs). Pure.
pub fn map_exposition(
    expo: &Exposition,
    profile: EngineProfile,
    served_model: Option<&str>,
) -> CanonicalSnapshot {
    let mut snap = CanonicalSnapshot {
        profile: None,
        counters: std::array::from_fn(|_| CounterReading {
            value: None,
            created: Vec::new(),
        }),
        gauges: BTreeMap::new(),
        gauge_engines: BTreeMap::new(),
        block_size: None,
        non_finite: Vec::new(),
        mapping: BTreeMap::new(),
        notes: Vec::new(),
    };
    let effective = match profile {
        EngineProfile::Auto => match detect_profile(expo) {
            Some(p) => p,
            None => {
                snap.notes
                    .push("auto: no vllm:, sglang: or llamacpp: families found".into());
                return snap;
            }
        },
        p => p,
    };
    snap.profile = Some(effective);
    let spec = spec(effective).expect("non-auto profile has a spec");

    for id in CounterId::ALL {
        read_counter(expo, spec, id, served_model, &mut snap);
    }
    for (gname, fams) in spec.gauges {
        read_gauge(expo, spec, gname, fams, served_model, &mut snap);
    }
    if let Some((family, label)) = spec.block_size {
        read_block_size(expo, family, label, &mut snap);
    }
    snap
}

/// Reads canonical counter `id` into `snap`: the first alternative of `spec` whose
/// families are all declared, summed over the served model's series (with the mapping, a
/// fallback note and the `_created` signature); left `None` with a note or a non-finite
/// mark when a family has no usable value.
fn read_counter(
    expo: &Exposition,
    spec: &ProfileSpec,
    id: CounterId,
    served_model: Option<&str>,
    snap: &mut CanonicalSnapshot,
) {
    let alternatives = spec.counters[id as usize];
    let chosen = alternatives
        .iter()
        .enumerate()
        .find(|(_, alt)| alt.iter().all(|f| expo.counter(f).is_some()));
    let Some((alt_idx, alt)) = chosen else {
        return;
    };
    snap.mapping.insert(id.name().to_string(), alt.join(" + "));
    if alt_idx >= spec.fallback_from[id as usize] {
        snap.notes.push(format!(
            "{}: using fallback {} ({} not exposed)",
            id.name(),
            alt.join(" + "),
            alternatives[..spec.fallback_from[id as usize]]
                .iter()
                .map(|a| a.join(" + "))
                .collect::<Vec<_>>()
                .join(" or ")
        ));
    }
    let mut total: u64 = 0;
    let mut ok = true;
    let mut created: CreatedSignature = Vec::new();
    for fname in alt.iter() {
        let fam = expo.counter(fname).expect("checked above");
        let is_counter = fam.metric_type == MetricType::Counter;
        let (vals, note) =
            select_series(fam, served_model, |suf| suf.is_empty() || suf == "_total");
        if let Some(n) = note {
            snap.notes.push(n);
            ok = false;
            break;
        }
        if !is_counter {
            snap.notes.push(format!(
                "{fname}: no # TYPE line; read as a counter by name"
            ));
        }
        if vals.is_empty() {
            // Declared (`# TYPE`) but no series: nothing was counted, so the counter is
            // missing (null), never 0.
            snap.notes.push(format!(
                "{fname}: declared but exposes no series; {} is null",
                id.name()
            ));
            ok = false;
            break;
        }
        let v = sum_dedup(&vals, spec.dedupe_labels);
        if !v.is_finite() || v < 0.0 {
            snap.non_finite.push(id.name().to_string());
            ok = false;
            break;
        }
        if v.fract() != 0.0 {
            snap.notes
                .push(format!("{fname}: non-integral counter value {v}; floored"));
        }
        total = total.saturating_add(v.floor() as u64);
        let (cr, _) = select_series(fam, served_model, |suf| suf == "_created");
        for s in cr {
            created.push((
                format!("{}|{}", fam.name, series_key(&s.labels, &[])),
                s.value.to_bits(),
            ));
        }
    }
    if ok {
        created.sort();
        snap.counters[id as usize] = CounterReading {
            value: Some(total),
            created,
        };
    }
}

/// Reads gauge `gname` into `snap` from the first of `fams` the exposition declares: one
/// value per engine, never summed across engines (a single engine's value in `gauges`; with
/// several, `None` there and each engine's value in `gauge_engines`); `None` when the
/// series cannot be selected.
fn read_gauge(
    expo: &Exposition,
    spec: &ProfileSpec,
    gname: &str,
    fams: &[&str],
    served_model: Option<&str>,
    snap: &mut CanonicalSnapshot,
) {
    let Some(fam) = fams.iter().find_map(|f| expo.gauge(f)) else {
        return;
    };
    snap.mapping.insert(gname.to_string(), fam.name.clone());
    let (vals, note) = select_series(fam, served_model, |suf| suf.is_empty());
    if let Some(n) = note {
        snap.notes.push(n);
        snap.gauges.insert(gname.to_string(), None);
        return;
    }
    if vals.is_empty() {
        snap.gauges.insert(gname.to_string(), None);
        return;
    }
    // One value per engine (labels other than the model's and the de-duplicated ones;
    // the largest of duplicates), never summed across engines: 0.25 and 0.5 of two
    // data-parallel engines are two readings, not 0.75.
    let mut drop: Vec<&str> = vec!["model_name", "model"];
    drop.extend(spec.dedupe_labels);
    let mut engines: BTreeMap<String, Vec<&super::prom::MetricSample>> = BTreeMap::new();
    for s in &vals {
        engines
            .entry(series_key(&s.labels, &drop))
            .or_default()
            .push(s);
    }
    let mut values: BTreeMap<String, Option<f64>> = BTreeMap::new();
    for (engine, samples) in engines {
        let v = sum_dedup(&samples, spec.dedupe_labels);
        if !v.is_finite() && !snap.non_finite.iter().any(|n| n == gname) {
            snap.non_finite.push(gname.to_string());
        }
        values.insert(engine, v.is_finite().then_some(v));
    }
    if values.len() == 1 {
        let (engine, v) = values.into_iter().next().expect("one engine");
        snap.gauges.insert(gname.to_string(), v);
        if !engine.is_empty() {
            let one = BTreeMap::from([(engine, v)]);
            snap.gauge_engines.insert(gname.to_string(), one);
        }
    } else {
        snap.gauges.insert(gname.to_string(), None);
        snap.gauge_engines.insert(gname.to_string(), values);
    }
}

/// Reads the KV-cache block size from the `label` of gauge `family` (every engine's
/// series); the mapping names where it came from. Engines that disagree, or a value that is
/// not a positive integer, leave it `None` with a note.
fn read_block_size(expo: &Exposition, family: &str, label: &str, snap: &mut CanonicalSnapshot) {
    let Some(fam) = expo.gauge(family) else {
        return;
    };
    let values: std::collections::BTreeSet<&str> =
        fam.samples.iter().filter_map(|s| s.label(label)).collect();
    let parsed: Vec<Option<u64>> = values
        .iter()
        .map(|v| v.parse::<u64>().ok().filter(|b| *b > 0))
        .collect();
    match parsed.as_slice() {
        [] => {}
        [Some(b)] => {
            snap.block_size = Some(*b);
            snap.mapping
                .insert("block_size".into(), format!("{family}{{{label}}}"));
        }
        _ => snap.notes.push(format!(
            "{family}: {label} {} is not one positive integer; block size unknown",
            values.iter().copied().collect::<Vec<_>>().join(", ")
        )),
    }
}
