//! Bounded property tests of every parser of untrusted input (issue 15 "Fuzzing"): the
//! SSE framer (through its public entry point, `SseFramer::push`), the Prometheus /
//! OpenMetrics parser, the step-marker reader, the timeline reader and the suite loader.
//! Each runs a fixed, small number of cases so CI time stays at seconds; a failing case
//! is kept by proptest under `proptest-regressions/fuzz.txt` and replayed first.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use proptest::prelude::*;

use inferscope_bench::attribution::parse_marker_file;
use inferscope_bench::client::sse::SseFramer;
use inferscope_bench::telemetry::prom::{ExpositionFormat, parse_exposition};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Bytes biased towards the syntax of the parser under test.
fn bytes_from(alphabet: &'static [&'static [u8]], max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(alphabet).prop_map(|s| s.to_vec()),
            1 => prop::collection::vec(any::<u8>(), 0..4),
        ],
        0..max,
    )
    .prop_map(|parts| parts.concat())
}

const SSE: &[&[u8]] = &[
    b"data: ",
    b"data:",
    b"event: x",
    b": c",
    b"\n",
    b"\r\n",
    b"\r",
    b"{\"a\":1}",
    b"[DONE]",
    b"\xef\xbb\xbf",
    b"id: 1",
    b"retry: 5",
    b"x",
];
const PROM: &[&[u8]] = &[
    b"# TYPE ",
    b"# HELP ",
    b"counter",
    b"gauge",
    b"histogram",
    b"vllm:prompt_tokens_total",
    b"{",
    b"}",
    b"=\"",
    b"\"",
    b",",
    b" ",
    b"1",
    b"-2.5e3",
    b"+Inf",
    b"NaN",
    b"\n",
    b"_bucket",
    b"le",
    b"# EOF",
    b" # {a=\"b\"} 1",
    b"\\",
];
const MARK: &[&[u8]] = &[
    b"{\"step_id\":",
    b"1",
    b"18446744073709551615",
    b"18446744073709551616",
    b"1.5",
    b"-1",
    b",\"kind\":\"llm_call\"",
    b",\"kind\":\"tool\"",
    b",\"t_start_unix_ns\":",
    b",\"t_end_unix_ns\":",
    b"}",
    b"\n",
    b"\r\n",
    b" ",
    b"\xef\xbb\xbf",
    b"\xff",
];

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        max_shrink_iters: 256,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// SSE: never panics; every dispatched event is within the cap; how the stream is cut
    /// into reads never changes the events.
    #[test]
    fn sse_framer_is_total_and_cut_invariant(
        stream in bytes_from(SSE, 64),
        cuts in prop::collection::vec(0usize..512, 0..8),
    ) {
        let cap = 256;
        // Every dispatched event as (event type, data), in order.
        let push = |f: &mut SseFramer, bytes: &[u8], out: &mut Vec<(Option<String>, String)>| {
            f.push(bytes, |ev| {
                out.push((ev.event_type.map(str::to_string), ev.data.to_string()));
                ControlFlow::Continue(())
            })
        };
        let whole = {
            let mut s = SseFramer::new(cap);
            let mut out = Vec::new();
            let r = push(&mut s, &stream, &mut out);
            (r.is_ok(), out)
        };
        let mut s = SseFramer::new(cap);
        let mut out = Vec::new();
        let mut ok = true;
        let mut pos = 0;
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(stream.len())).collect();
        cuts.sort_unstable();
        cuts.push(stream.len());
        for c in cuts {
            if c < pos { continue; }
            let r = push(&mut s, &stream[pos..c], &mut out);
            pos = c;
            if r.is_err() { ok = false; break; }
        }
        for (_, data) in &out {
            prop_assert!(data.len() <= cap);
        }
        if ok && whole.0 {
            prop_assert_eq!(out, whole.1);
        }
    }

    /// Prometheus text / OpenMetrics: never panics; errors name real lines.
    #[test]
    fn prometheus_parser_is_total(body in bytes_from(PROM, 96), om in any::<bool>()) {
        let text = String::from_utf8_lossy(&body);
        let fmt = if om { ExpositionFormat::OpenMetrics } else { ExpositionFormat::PrometheusText };
        let e = parse_exposition(&text, fmt);
        let lines = text.split('\n').count();
        for err in &e.errors {
            prop_assert!(err.line >= 1 && err.line <= lines, "line {} of {}", err.line, lines);
        }
    }

    /// Markers: never panics; every non-blank line is a marker, a rejected line or the
    /// truncated tail; lines ascend; a valid file cut anywhere keeps every complete record.
    #[test]
    fn marker_reader_loses_nothing(body in bytes_from(MARK, 64), cut in 0usize..2000) {
        let f = parse_marker_file(&body);
        let body_nobom = body.strip_prefix(b"\xef\xbb\xbf".as_slice()).unwrap_or(&body);
        let nonblank = body_nobom
            .split(|&b| b == b'\n')
            .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
            .count();
        prop_assert_eq!(
            f.markers.len() + f.rejected_count + usize::from(f.truncated_tail.is_some()),
            nonblank
        );
        prop_assert!(f.lines.windows(2).all(|w| w[0] < w[1]));

        let good: String = (1..=5)
            .map(|i| format!(
                "{{\"step_id\":{i},\"kind\":\"tool\",\"t_start_unix_ns\":{},\"t_end_unix_ns\":{}}}\n",
                i * 10, i * 10 + 5
            ))
            .collect();
        let cut = cut.min(good.len());
        let f = parse_marker_file(&good.as_bytes()[..cut]);
        let complete = good[..cut].matches('\n').count();
        prop_assert!(f.markers.len() >= complete);
        prop_assert_eq!(f.rejected_count, 0);
    }
}

fn fixture_run(dir: &Path) {
    let from = repo().join("fixtures/runs/complete");
    for rel in [
        "report.json",
        "timeline/manifest.json",
        "timeline/events.jsonl",
    ] {
        let to = dir.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(from.join(rel), to).unwrap();
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// Timeline reader: any mutation of a verified run's events or manifest (byte flips,
    /// truncation, insertion) is answered with a status, never a panic, and a changed
    /// events file is never `ok`.
    #[test]
    fn timeline_reader_is_total(
        which in 0usize..2,
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        fixture_run(tmp.path());
        let rel = ["timeline/events.jsonl", "timeline/manifest.json"][which];
        let p = tmp.path().join(rel);
        let orig = std::fs::read(&p).unwrap();
        let mut b = orig.clone();
        for (i, v) in &flips {
            let i = i.index(b.len());
            b[i] = *v;
        }
        if let Some(c) = cut {
            b.truncate(c.index(b.len() + 1));
        }
        std::fs::write(&p, &b).unwrap();
        let r = inferscope_bench::timeline::verify_run(tmp.path());
        let code = r.exit_code();
        prop_assert!(matches!(code, 0..=2));
        if which == 0 && b != orig {
            prop_assert_ne!(code, 0, "a changed events file verified ok");
        }
    }

    /// Suite loader: mutations of a real suite never panic; every error is located (or
    /// one of the kinds without a position) and its text stays bounded.
    #[test]
    fn suite_loader_is_total_and_locates(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        use inferscope_bench::suite::SuiteErrorKind as K;
        let path = repo().join("suites/context.toml");
        let mut b = std::fs::read(&path).unwrap();
        for (i, v) in &flips {
            let i = i.index(b.len());
            b[i] = *v;
        }
        if let Some(c) = cut {
            b.truncate(c.index(b.len() + 1));
        }
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("suites/context.toml");
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(&f, &b).unwrap();
        if let Err(e) = inferscope_bench::suite::load(&f) {
            let located = e.location().is_some();
            prop_assert!(
                located || matches!(e.kind(), K::Io | K::Duplicate | K::EnvVar | K::Fixture),
                "unlocated {:?}: {}", e.kind(), e
            );
            prop_assert!(e.to_string().len() < 8192);
            prop_assert!(e.render(false).len() < 16384);
        }
    }
}

/// Delimiters a password may hold unencoded, as TOML basic-string text.
const PW_PARTS: &[&str] = &["/", "?", "#", " ", "\\\"", "@", ":", "x", "%", "'", "&"];

proptest! {
    #![proptest_config(config(64))]

    /// Issue 30 items 2, 4 and 5: an endpoint or `metrics_url` whose password holds any
    /// mix of delimiters, behind any scheme, among up to 300 unknown keys and a multi-line
    /// value under an unknown key: every error is located, the URL is refused as one
    /// with credentials, and no message, snippet or rendering shows the password or the
    /// continuation line.
    #[test]
    fn suite_errors_never_show_credentials(
        parts in prop::collection::vec(prop::sample::select(PW_PARTS), 0..6),
        scheme in prop::sample::select(&["http://", "https://", "htp://", "", "http:/"][..]),
        metrics in any::<bool>(),
        unknown in 0usize..300,
        multiline in any::<bool>(),
    ) {
        let url = format!("{scheme}user:PWQ{}SECRETZ@127.0.0.1:9/v1", parts.concat());
        let mut text = String::from("name = \"x\"\nmodel = \"m\"\n");
        if !metrics {
            text.push_str(&format!("endpoint = \"{url}\"\n"));
        }
        for i in 0..unknown {
            text.push_str(&format!("unknown_{i} = {i}\n"));
        }
        if multiline {
            text.push_str("mystery = \"\"\"\nCONT SECRETZ line\n\"\"\"\n");
        }
        if metrics {
            text.push_str(&format!("[telemetry]\nmetrics_url = \"{url}\"\n"));
        }
        text.push_str("[[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [1]\n");
        let errors = match inferscope_bench::suite::parse_all(&text, Path::new("f.toml")) {
            Ok(_) => return Err(TestCaseError::fail("a suite with a credential URL loaded")),
            Err(e) => e,
        };
        prop_assert!(errors.len() > unknown + usize::from(multiline));
        prop_assert!(errors.iter().any(|e| e.message().contains("credentials")));
        for e in &errors {
            prop_assert!(e.location().is_some(), "unlocated: {}", e);
            let shown = format!(
                "{e}\n{}\n{}",
                e.snippet(false).unwrap_or_default(),
                e.render(false)
            );
            prop_assert!(
                !shown.contains("PWQ") && !shown.contains("SECRETZ"),
                "shown: {}", shown
            );
        }
    }
}
