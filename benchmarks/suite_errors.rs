//! Cost of reporting a suite's errors (issue 30 item 5: 4,000 unknown keys took 21.6 s
//! and 8,000 over 90 s, every error copying and masking the whole file). Not a timed
//! test.
//!
//! Run: `cargo bench -p inferscope-suite --bench suite_errors`.
//!
//! For N in 1,000, 2,000, 4,000 and 8,000: a suite of one job and N unknown top-level
//! keys (`unknown_key_00001 = 1`, …) is parsed with every error kept
//! ([`inferscope_suite::parse_all`]), and every error is rendered as `check` prints it
//! (its one-line form and its masked source snippet). Each N is measured 5 times; the
//! best and the median wall time are printed with the time per error, which stays flat
//! when the cost is linear. In bench mode it exits 1 when the median for 8,000 errors
//! is 1 s or more; in test mode (`cargo test --benches`) it runs N = 200 once and checks
//! only that every error was reported (timing is never asserted in a test).

use std::path::Path;
use std::time::{Duration, Instant};

/// A suite with `n` unknown top-level keys and one valid job.
fn suite(n: usize) -> String {
    let mut s = String::from("name = \"bench\"\nmodel = \"m\"\n");
    for i in 0..n {
        s.push_str(&format!("unknown_key_{i:05} = {i}\n"));
    }
    s.push_str("[[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [1]\n");
    s
}

/// Parses `text` and renders every error; the number of errors and the bytes rendered.
fn report(text: &str) -> (usize, usize) {
    let errors = match inferscope_suite::parse_all(text, Path::new("bench.toml")) {
        Ok(_) => panic!("the suite has errors"),
        Err(e) => e,
    };
    let bytes = errors
        .iter()
        .map(|e| e.to_string().len() + e.snippet(false).map_or(0, |s| s.len()))
        .sum();
    (errors.len(), bytes)
}

fn main() -> std::process::ExitCode {
    let bench = std::env::args().any(|a| a == "--bench");
    if !bench {
        let (n, bytes) = report(&suite(200));
        assert_eq!(n, 200);
        assert!(bytes > 0);
        return std::process::ExitCode::SUCCESS;
    }
    let mut median_8000 = Duration::ZERO;
    println!("errors  file_bytes  best_ms  median_ms  us_per_error");
    for n in [1000, 2000, 4000, 8000] {
        let text = suite(n);
        let mut times: Vec<Duration> = (0..5)
            .map(|_| {
                let t0 = Instant::now();
                let (got, _) = std::hint::black_box(report(&text));
                let took = t0.elapsed();
                assert_eq!(got, n);
                took
            })
            .collect();
        times.sort();
        let median = times[2];
        println!(
            "{n:>6}  {:>10}  {:>7.1}  {:>9.1}  {:>12.1}",
            text.len(),
            times[0].as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e3,
            median.as_secs_f64() * 1e6 / n as f64
        );
        if n == 8000 {
            median_8000 = median;
        }
    }
    if median_8000 >= Duration::from_secs(1) {
        eprintln!("FAIL: 8,000 errors took {median_8000:?} (goal: under 1 s)");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
