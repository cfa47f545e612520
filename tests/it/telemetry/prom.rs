use inferscope_bench::telemetry::prom::{
    ExpositionFormat, MetricType, format_from_content_type, parse_exposition,
};
use inferscope_bench::telemetry::{CounterId, EngineProfile, map_exposition};
use std::path::Path;

fn fixture(name: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/metrics")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn model_m(labels: &[(String, String)]) -> bool {
    labels.iter().any(|(k, v)| k == "model_name" && v == "m")
}

#[test]
fn format_is_chosen_from_content_type() {
    assert_eq!(
        format_from_content_type(Some(
            "application/openmetrics-text; version=1.0.0; charset=utf-8"
        )),
        ExpositionFormat::OpenMetrics
    );
    assert_eq!(
        format_from_content_type(Some("text/plain; version=0.0.4; charset=utf-8")),
        ExpositionFormat::PrometheusText
    );
    assert_eq!(
        format_from_content_type(None),
        ExpositionFormat::PrometheusText
    );
}

/// C13: both expositions give queries 4096, hits 1024, ratio 0.25; `_created` never added; the
/// deprecated family ignored; `# EOF` accepted; the counter found as `x` or `x_total`.
#[test]
fn c13_total_created_openmetrics_and_deprecated_families() {
    let a = parse_exposition(
        &fixture("c13_prometheus_0_0_4.prom"),
        format_from_content_type(Some("text/plain; version=0.0.4")),
    );
    let b = parse_exposition(
        &fixture("c13_openmetrics_1_0_0.prom"),
        format_from_content_type(Some("application/openmetrics-text; version=1.0.0")),
    );
    assert_eq!(a.format, ExpositionFormat::PrometheusText);
    assert_eq!(b.format, ExpositionFormat::OpenMetrics);
    assert!(a.errors.is_empty() && b.errors.is_empty());
    assert!(!a.eof);
    assert!(b.eof);
    for expo in [&a, &b] {
        // Found under either spelling.
        for name in [
            "vllm:prefix_cache_queries",
            "vllm:prefix_cache_queries_total",
        ] {
            let f = expo.counter(name).expect(name);
            assert_eq!(f.metric_type, MetricType::Counter);
            assert_eq!(f.base_name(), "vllm:prefix_cache_queries");
            let values: Vec<f64> = f
                .samples
                .iter()
                .filter(|s| s.is_counter_value())
                .map(|s| s.value)
                .collect();
            assert_eq!(values, vec![4096.0]);
            let created: Vec<f64> = f
                .samples
                .iter()
                .filter(|s| s.suffix == "_created")
                .map(|s| s.value)
                .collect();
            assert_eq!(created, vec![1.75e9]);
        }
        // The 0.0.4 `_created` gauge family is folded into its counter, not a gauge of its own.
        assert!(expo.gauge("vllm:prefix_cache_queries_created").is_none());
        let snap = map_exposition(expo, EngineProfile::Vllm, Some("m"));
        let q = snap.counter(CounterId::PrefixCacheQueries).unwrap();
        let h = snap.counter(CounterId::PrefixCacheHits).unwrap();
        assert_eq!((q, h), (4096, 1024));
        assert_eq!(h as f64 / q as f64, 0.25);
        assert_eq!(snap.mapping["prefix_cache_hits"], "vllm:prefix_cache_hits");
        // Not exposed here at all: null, not 0.
        assert_eq!(snap.counter(CounterId::PromptTokens), None);
        assert_eq!(snap.counter(CounterId::GenerationTokens), None);
    }
}

#[test]
fn c13_deprecated_family_used_only_when_new_one_is_absent() {
    let text = "# TYPE vllm:gpu_prefix_cache_hits_total counter\n\
                vllm:gpu_prefix_cache_hits_total{model_name=\"m\"} 77.0\n\
                # TYPE vllm:gpu_prefix_cache_queries_total counter\n\
                vllm:gpu_prefix_cache_queries_total{model_name=\"m\"} 100.0\n";
    let e = parse_exposition(text, ExpositionFormat::PrometheusText);
    let snap = map_exposition(&e, EngineProfile::Vllm, Some("m"));
    assert_eq!(snap.counter(CounterId::PrefixCacheHits), Some(77));
    assert_eq!(snap.counter(CounterId::PrefixCacheQueries), Some(100));
    assert!(snap.notes.iter().any(|n| n.contains("fallback")));
}

/// C17: every line parses; mean 1.375 s; the +Inf bucket equals `_count`; NaN/±Inf values.
#[test]
fn c17_non_finite_values_and_inf_buckets() {
    let e = parse_exposition(
        &fixture("c17_nonfinite_histogram.prom"),
        ExpositionFormat::PrometheusText,
    );
    assert!(e.errors.is_empty(), "{:?}", e.errors);
    let h = e
        .histogram("vllm:e2e_request_latency_seconds", model_m)
        .unwrap();
    assert_eq!(h.mean(), Some(1.375));
    assert_eq!(h.count, 4);
    assert_eq!(h.overflow_count(), Some(4));
    assert_eq!(h.buckets, vec![(0.3, 0), (1.0, 3), (f64::INFINITY, 4)]);
    let g = e.gauge("x_gauge").unwrap();
    let v: Vec<f64> = g.samples.iter().map(|s| s.value).collect();
    assert!(v[0].is_nan());
    assert_eq!(&v[1..], &[f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY]);

    let e2 = parse_exposition(
        &fixture("c17_le_inf_spelling.prom"),
        ExpositionFormat::PrometheusText,
    );
    let h2 = e2.histogram("h_seconds", |_| true).unwrap();
    assert_eq!(h2.overflow_count(), Some(4));
    assert_eq!(h2.overflow_count(), Some(h2.count));
    assert_eq!(h2.mean(), Some(1.375));
}

/// C18: the window's mean is exact (12 ms); p99 is "≤ 0.3 s", bucket-limited, with the
/// interpolation (0.297 s) labelled as an artifact.
#[test]
fn c18_bucket_limited_quantile() {
    let start = parse_exposition(
        &fixture("c18_queue_time_start.prom"),
        ExpositionFormat::PrometheusText,
    );
    let end = parse_exposition(
        &fixture("c18_queue_time_end.prom"),
        ExpositionFormat::PrometheusText,
    );
    let h0 = start
        .histogram("vllm:request_queue_time_seconds", model_m)
        .unwrap();
    let h1 = end
        .histogram("vllm:request_queue_time_seconds", model_m)
        .unwrap();
    let d = h1.delta(&h0).unwrap();
    assert_eq!(d.count, 1000);
    assert_eq!(d.sum, 12.0);
    assert_eq!(d.mean(), Some(0.012));
    let p99 = d.quantile(0.99).unwrap();
    assert!(p99.bucket_limited);
    assert_eq!(p99.upper_bound, Some(0.3));
    assert_eq!(p99.lower_bound, 0.0);
    assert_eq!(p99.display("s"), "≤ 0.3 s");
    let interp = p99.interpolated.unwrap();
    assert!((interp - 0.297).abs() < 1e-12, "{interp}");
    // A reset (decrease) makes the delta unavailable rather than negative.
    assert!(h0.delta(&h1).is_none());
}

#[test]
fn quantile_in_overflow_bucket_has_no_upper_bound() {
    let e = parse_exposition(
        &fixture("c17_nonfinite_histogram.prom"),
        ExpositionFormat::PrometheusText,
    );
    let h = e
        .histogram("vllm:e2e_request_latency_seconds", model_m)
        .unwrap();
    let p99 = h.quantile(0.99).unwrap();
    assert_eq!(p99.upper_bound, None);
    assert_eq!(p99.lower_bound, 1.0);
    assert_eq!(p99.display("s"), "> 1 s");
    let p50 = h.quantile(0.5).unwrap();
    assert_eq!(p50.upper_bound, Some(1.0));
    assert_eq!(p50.display("s"), "≤ 1 s");
}
