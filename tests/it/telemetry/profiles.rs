use inferscope_bench::telemetry::profile::detect_profile;
use inferscope_bench::telemetry::prom::{ExpositionFormat, parse_exposition};
use inferscope_bench::telemetry::{
    CounterId, EngineProfile, MetricsTracker, counter_increase, map_exposition,
};
use std::path::Path;

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/metrics")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn parse(name: &str) -> inferscope_bench::telemetry::Exposition {
    let e = parse_exposition(&fixture(name), ExpositionFormat::PrometheusText);
    assert!(e.errors.is_empty(), "{name}: {:?}", e.errors);
    e
}

#[test]
fn vllm_sums_engine_counters_of_the_served_model_and_keeps_gauges_per_engine() {
    let e = parse("vllm_two_models_dp.prom");
    let s = map_exposition(&e, EngineProfile::Vllm, Some("served"));
    assert_eq!(s.profile, Some(EngineProfile::Vllm));
    assert_eq!(s.counter(CounterId::PromptTokens), Some(3000));
    assert_eq!(s.counter(CounterId::GenerationTokens), Some(700));
    assert_eq!(s.counter(CounterId::PrefixCacheQueries), Some(3000));
    assert_eq!(s.counter(CounterId::PrefixCacheHits), Some(768));
    // Gauges of two data-parallel engines are two readings, never their sum (issue 13 item
    // 6: 0.25 + 0.5 used to read 0.75): null as one value, kept per engine.
    assert_eq!(s.gauge("requests_running"), None);
    assert_eq!(s.gauge("kv_cache_usage"), None);
    let per = |g: &str| s.gauge_engines[g].clone();
    assert_eq!(
        per("kv_cache_usage"),
        [
            ("engine=\"0\"".to_string(), Some(0.25)),
            ("engine=\"1\"".to_string(), Some(0.5))
        ]
        .into_iter()
        .collect()
    );
    assert_eq!(per("requests_running")["engine=\"1\""], Some(2.0));
    assert_eq!(per("requests_waiting")["engine=\"1\""], Some(3.0));
    // The histogram named *_total is never read as a counter.
    assert!(e.counter("vllm:iteration_tokens_total").is_none());

    let other = map_exposition(&e, EngineProfile::Vllm, Some("other"));
    assert_eq!(other.counter(CounterId::PromptTokens), Some(99999));

    // A model that is not served: null with a note, never 0.
    let none = map_exposition(&e, EngineProfile::Vllm, Some("absent"));
    assert_eq!(none.counter(CounterId::PromptTokens), None);
    assert_eq!(none.gauge("requests_running"), None);
    assert!(none.notes.iter().any(|n| n.contains("no series for model")));

    // No served model named and several models present: refuse to sum.
    let amb = map_exposition(&e, EngineProfile::Vllm, None);
    assert_eq!(amb.counter(CounterId::PromptTokens), None);
}

#[test]
fn sim_profile_reads_vllm_names() {
    let e = parse("sim_scrape_1.prom");
    let s = map_exposition(&e, EngineProfile::Sim, Some("sim-model"));
    assert_eq!(s.counter(CounterId::PromptTokens), Some(250));
    assert_eq!(s.counter(CounterId::GenerationTokens), Some(52));
    assert_eq!(s.counter(CounterId::PrefixCacheQueries), Some(250));
    assert_eq!(s.counter(CounterId::PrefixCacheHits), Some(96));
    assert_eq!(s.gauge("kv_cache_usage"), Some(0.25));
}

#[test]
fn sglang_counters_and_gauges_deduplicated_over_tp_rank() {
    let e = parse("sglang.prom");
    assert_eq!(detect_profile(&e), Some(EngineProfile::Sglang));
    let s = map_exposition(&e, EngineProfile::Auto, Some("qwen"));
    assert_eq!(s.profile, Some(EngineProfile::Sglang));
    assert_eq!(s.counter(CounterId::PromptTokens), Some(1200));
    assert_eq!(s.counter(CounterId::GenerationTokens), Some(345));
    // Queries are the prompt tokens; hits are the cached_tokens counter.
    assert_eq!(s.counter(CounterId::PrefixCacheQueries), Some(1200));
    assert_eq!(s.counter(CounterId::PrefixCacheHits), Some(800));
    // tp_rank duplicates are not double counted.
    assert_eq!(s.gauge("requests_running"), Some(2.0));
    assert_eq!(s.gauge("requests_waiting"), Some(1.0));
    assert_eq!(s.gauge("kv_cache_usage"), Some(0.25));
    // The hit-rate gauge is kept as a gauge, never a counter.
    assert_eq!(s.gauge("cache_hit_rate"), Some(0.5));
    assert_eq!(s.mapping["prefix_cache_hits"], "sglang:cached_tokens");
}

#[test]
fn sglang_declared_counter_without_series_is_null_not_zero() {
    let e = parse("sglang_no_hit_yet.prom");
    let s = map_exposition(&e, EngineProfile::Sglang, Some("qwen"));
    // `# TYPE sglang:cached_tokens_total counter` with no series: nothing was counted, so
    // the counter is missing, never 0.
    assert_eq!(s.counter(CounterId::PrefixCacheHits), None);
    assert!(
        s.notes
            .iter()
            .any(|n| n.contains("declared but exposes no series")),
        "{:?}",
        s.notes
    );
    assert_eq!(s.counter(CounterId::PrefixCacheQueries), Some(40));
    // Gauges not exposed: absent, not 0.
    assert_eq!(s.gauge("requests_running"), None);
}

#[test]
fn llamacpp_prompt_tokens_include_cached_and_cached_are_hits() {
    let e = parse("llamacpp.prom");
    assert_eq!(detect_profile(&e), Some(EngineProfile::Llamacpp));
    // No model label on llama.cpp series: included whatever the served model.
    let s = map_exposition(&e, EngineProfile::Llamacpp, Some("tiny"));
    assert_eq!(s.counter(CounterId::PromptTokens), Some(1818 + 1830));
    assert_eq!(s.counter(CounterId::GenerationTokens), Some(16));
    assert_eq!(s.counter(CounterId::PrefixCacheQueries), Some(1818 + 1830));
    assert_eq!(s.counter(CounterId::PrefixCacheHits), Some(1830));
    assert_eq!(s.gauge("requests_running"), Some(1.0));
    assert_eq!(s.gauge("requests_waiting"), Some(2.0));
    assert_eq!(s.gauge("kv_cache_usage"), None);
    assert_eq!(
        s.mapping["prompt_tokens"],
        "llamacpp:prompt_tokens + llamacpp:prompt_tokens_cached"
    );
}

#[test]
fn llamacpp_without_cached_counter_has_no_cache_figures() {
    let e = parse("llamacpp_without_cached_counter.prom");
    let s = map_exposition(&e, EngineProfile::Auto, None);
    assert_eq!(s.counter(CounterId::PromptTokens), Some(500));
    assert!(s.notes.iter().any(|n| n.contains("fallback")));
    assert_eq!(s.counter(CounterId::PrefixCacheQueries), None);
    assert_eq!(s.counter(CounterId::PrefixCacheHits), None);
    assert_eq!(s.gauge("requests_running"), Some(0.0));
}

#[test]
fn auto_with_no_known_engine_gives_nulls() {
    let e = parse_exposition(
        "# TYPE foo counter\nfoo_total 3\n",
        ExpositionFormat::PrometheusText,
    );
    let s = map_exposition(&e, EngineProfile::Auto, None);
    assert_eq!(s.profile, None);
    assert!(CounterId::ALL.iter().all(|id| s.counter(*id).is_none()));
}

#[test]
fn non_finite_values_are_null_and_flagged() {
    let e = parse("vllm_nonfinite_gauge.prom");
    let s = map_exposition(&e, EngineProfile::Vllm, Some("m"));
    assert_eq!(s.counter(CounterId::PromptTokens), Some(10));
    assert_eq!(s.counter(CounterId::GenerationTokens), None);
    assert_eq!(s.gauge("requests_running"), None);
    assert_eq!(s.gauge("kv_cache_usage"), None);
    for n in ["generation_tokens", "requests_running", "kv_cache_usage"] {
        assert!(s.non_finite.iter().any(|x| x == n), "{n} not flagged");
    }
}

/// C15: 10000, 10500, 300, 800 with `_created` changing between the 2nd and 3rd scrape →
/// increase 1300, counter_resets = 1; with only 10000 → 800: ≥ 800, lower_bound.
#[test]
fn c15_counter_reset_between_scrapes() {
    let mut tracker = MetricsTracker::new();
    let samples: Vec<_> = (1..=4)
        .map(|i| {
            let e = parse(&format!("c15_scrape_{i}.prom"));
            let snap = map_exposition(&e, EngineProfile::Vllm, Some("m"));
            let t = i as u64 * 10_000_000_000;
            tracker.ingest(t - 1_000_000, t, &snap)
        })
        .collect();
    let values: Vec<_> = samples.iter().map(|s| s.counters.prompt_tokens).collect();
    assert_eq!(values, vec![Some(10000), Some(10500), Some(300), Some(800)]);
    let flags: Vec<_> = samples.iter().map(|s| s.resets.prompt_tokens).collect();
    assert_eq!(flags, vec![false, false, true, false]);
    assert_eq!(tracker.resets()["prompt_tokens"], 1);
    let inc = counter_increase(
        samples
            .iter()
            .map(|s| (s.counters.prompt_tokens, s.resets.prompt_tokens)),
    );
    assert_eq!(inc.increase, Some(1300));
    assert_eq!(inc.counter_resets, 1);

    // Two scrapes only: reset detected, ≥ 800, lower bound; never −9200 or a wrapped value.
    let two = counter_increase([
        (samples[0].counters.prompt_tokens, false),
        (samples[3].counters.prompt_tokens, false),
    ]);
    assert_eq!(two.increase, Some(800));
    assert_eq!(two.counter_resets, 1);
    assert!(two.lower_bound);
}

#[test]
fn created_change_alone_flags_a_reset() {
    // The value grows past its old level after a restart; only `_created` reveals the reset.
    let a = "# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{model_name=\"m\"} 100\nvllm:prompt_tokens_created{model_name=\"m\"} 1.0e9\n# EOF\n";
    let b = "# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{model_name=\"m\"} 150\nvllm:prompt_tokens_created{model_name=\"m\"} 2.0e9\n# EOF\n";
    let mut tracker = MetricsTracker::new();
    let mut out = Vec::new();
    for (i, t) in [a, b].iter().enumerate() {
        let e = parse_exposition(t, ExpositionFormat::OpenMetrics);
        let s = map_exposition(&e, EngineProfile::Vllm, Some("m"));
        out.push(tracker.ingest(i as u64, i as u64 + 1, &s));
    }
    assert!(out[1].resets.prompt_tokens);
    let inc = counter_increase(
        out.iter()
            .map(|s| (s.counters.prompt_tokens, s.resets.prompt_tokens)),
    );
    assert_eq!(inc.increase, Some(150));
    assert!(inc.lower_bound);
}

// ---- Real vLLM 0.32: captures of its CPU build, unedited ----

/// vLLM 0.32 answers `text/plain; version=1.0.0` (also to an OpenMetrics Accept), and the body
/// is the classic text format: read as such, every line parses.
#[test]
fn vllm_0_32_text_plain_version_1_0_0_reads_as_classic_text() {
    use inferscope_bench::telemetry::format_from_content_type;
    for ct in [
        "text/plain; version=1.0.0; charset=utf-8",
        "text/plain;version=1.0.0",
    ] {
        assert_eq!(
            format_from_content_type(Some(ct)),
            ExpositionFormat::PrometheusText,
            "{ct}"
        );
    }
    for name in [
        "vllm_0_32_cpu_b32_during_request.prom",
        "vllm_0_32_cpu_b128_after_probe.prom",
    ] {
        let e = parse(name);
        assert!(e.counter("vllm:prompt_tokens").is_some(), "{name}");
        assert!(
            e.counter("vllm:prompt_tokens_by_source").is_some(),
            "{name}"
        );
    }
}

/// One engine's gauges are kept under its `engine` label (`engine="0"`), never under `""`,
/// in the snapshot and in the report's per-engine gauge summary.
#[test]
fn vllm_0_32_gauges_are_kept_under_their_engine_label() {
    use inferscope_bench::telemetry::MetricsTracker;
    use inferscope_bench::telemetry::summary::gauge_summaries;
    let e = parse("vllm_0_32_cpu_b32_during_request.prom");
    let s = map_exposition(&e, EngineProfile::Vllm, Some("smollm2"));
    let key = "engine=\"0\"";
    assert_eq!(s.gauge("requests_running"), Some(1.0));
    assert_eq!(s.gauge_engines["requests_running"][key], Some(1.0));
    assert_eq!(s.gauge_engines["kv_cache_usage"].len(), 1);
    assert!(s.gauge_engines["kv_cache_usage"].contains_key(key));
    let sample = MetricsTracker::new().ingest(0, 1, &s);
    let g = gauge_summaries(&[sample]);
    let running = &g["requests_running"];
    assert_eq!(
        running.engines.keys().collect::<Vec<_>>(),
        vec![key],
        "{running:?}"
    );
    assert_eq!(running.engines[key].max, Some(1.0));
    assert_eq!(running.max, Some(1.0));
}

/// The block size comes from `vllm:cache_config_info{block_size}`, with its source in the
/// mapping.
#[test]
fn vllm_0_32_block_size_from_cache_config_info() {
    for (name, b) in [
        ("vllm_0_32_cpu_b32_during_request.prom", 32),
        ("vllm_0_32_cpu_b128_after_probe.prom", 128),
    ] {
        let s = map_exposition(&parse(name), EngineProfile::Auto, Some("smollm2"));
        assert_eq!(s.block_size, Some(b), "{name}");
        assert_eq!(
            s.mapping["block_size"], "vllm:cache_config_info{block_size}",
            "{name}"
        );
    }
    // Engines that disagree: unknown, noted; an engine without the family: unknown, silent.
    let text = "# TYPE vllm:cache_config_info gauge\n\
                vllm:cache_config_info{block_size=\"16\",engine=\"0\"} 1.0\n\
                vllm:cache_config_info{block_size=\"32\",engine=\"1\"} 1.0\n";
    let s = map_exposition(
        &parse_exposition(text, ExpositionFormat::PrometheusText),
        EngineProfile::Vllm,
        None,
    );
    assert_eq!(s.block_size, None);
    assert!(
        s.notes.iter().any(|n| n.contains("block size unknown")),
        "{:?}",
        s.notes
    );
    let s = map_exposition(
        &parse("vllm_two_models_dp.prom"),
        EngineProfile::Vllm,
        Some("served"),
    );
    assert_eq!(s.block_size, None);
    assert!(!s.mapping.contains_key("block_size"));
}

/// vLLM 0.32's `prompt_tokens_by_source` and `prompt_tokens_cached` are counted when prefill
/// ends, like `prompt_tokens`; `prefix_cache_queries`/`hits` when the request is scheduled.
/// Mid-request the scheduling-time queries (25872) ran ahead of the prompt tokens (22662):
/// the prefill-time pair gives a hit rate whose numerator and denominator land in the same
/// scrape as the prompt tokens.
#[test]
fn vllm_0_32_cache_figures_read_the_prefill_time_families() {
    let s = map_exposition(
        &parse("vllm_0_32_cpu_b32_during_request.prom"),
        EngineProfile::Auto,
        Some("smollm2"),
    );
    assert_eq!(s.counter(CounterId::PromptTokens), Some(22662));
    assert_eq!(s.counter(CounterId::PrefixCacheQueries), Some(22662));
    assert_eq!(s.counter(CounterId::PrefixCacheHits), Some(8288));
    assert_eq!(
        s.mapping["prefix_cache_queries"],
        "vllm:prompt_tokens_by_source"
    );
    assert_eq!(s.mapping["prefix_cache_hits"], "vllm:prompt_tokens_cached");
    assert!(
        !s.notes.iter().any(|n| n.contains("fallback")),
        "{:?}",
        s.notes
    );
    // A vLLM without them: the scheduling-time families, not noted as a fallback; the
    // deprecated `gpu_` families still are (C13).
    let old = map_exposition(
        &parse("vllm_two_models_dp.prom"),
        EngineProfile::Vllm,
        Some("served"),
    );
    assert_eq!(
        old.mapping["prefix_cache_queries"],
        "vllm:prefix_cache_queries"
    );
    assert_eq!(old.mapping["prefix_cache_hits"], "vllm:prefix_cache_hits");
    assert!(
        !old.notes.iter().any(|n| n.contains("fallback")),
        "{:?}",
        old.notes
    );
}
