//! A one-request run does not wait on what it does not get. Against an
//! endpoint without `/metrics` (every scrape a 404), a job's figures used to wait the whole
//! snapshot bound for a sample at or after its end (one scrape period + 250 ms); with a
//! long period that is seconds per job. Now the samplers are asked for a sample at the
//! job's end, and a source that never answered and failed again after the end is not
//! waited for.

use std::time::{Duration, Instant};

use crate::support::{self, Hostile, Received, Reply};

/// A suite of one context job of `repeat` requests against `server`, scraping its
/// `/metrics` every `period_ms`.
fn requests_suite(
    dir: &std::path::Path,
    server: &Hostile,
    period_ms: u64,
    repeat: u32,
) -> std::path::PathBuf {
    support::write(
        dir,
        "requests.toml",
        &format!(
            "name = \"requests\"\nendpoint = \"{}\"\nmodel = \"m\"\n\n[telemetry]\n\
             metrics_period_ms = {period_ms}\n\n[[jobs]]\nname = \"requests\"\nkind = \"context\"\n\
             sizes = [16]\nmax_tokens = 8\nrepeat = {repeat}\n",
            server.base_url()
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_request_run_does_not_wait_a_scrape_period_for_a_missing_metrics_endpoint() {
    let server = Hostile::start("m", |_r: &Received| Reply::Ok("one two three".into()));
    let tmp = tempfile::tempdir().unwrap();
    let suite = requests_suite(tmp.path(), &server, 5000, 1);
    let started = Instant::now();
    let o = support::run_suite(&suite, None, &tmp.path().join("run")).await;
    let took = started.elapsed();
    assert_eq!(o.exit_status, 0, "{}", support::console(&o.report));
    assert!(
        took < Duration::from_millis(2500),
        "a 5 s scrape period is not waited for: the run took {took:?}"
    );
}

/// An endpoint that answers every `/metrics` scrape with 404 is asked three times, not
/// every period for the whole run: the source ends as unavailable with the reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_without_metrics_is_scraped_three_times_then_left_alone() {
    let server = Hostile::start("m", |_r: &Received| Reply::Ok("one two three".into()));
    let tmp = tempfile::tempdir().unwrap();
    // 40 requests one at a time against a 10 ms scrape period: the old scraper asked
    // /metrics every 10 ms for the whole run, dozens of times.
    let suite = requests_suite(tmp.path(), &server, 10, 40);
    let o = support::run_suite(&suite, None, &tmp.path().join("run")).await;
    assert_eq!(o.exit_status, 0, "{}", support::console(&o.report));
    let m = o
        .report
        .telemetry
        .as_ref()
        .and_then(|t| t.metrics.as_ref())
        .expect("a metrics source");
    assert_eq!((m.scrapes_ok, m.scrapes_failed), (0, 3), "{m:?}");
    let reason = match &m.status {
        inferscope_bench::model::telemetry::SourceStatus::Unavailable { reason } => reason,
        other => panic!("status {other:?}"),
    };
    assert!(
        reason.contains("serves no /metrics") && reason.contains("HTTP 404"),
        "{reason}"
    );
    let scrapes = server
        .received()
        .iter()
        .filter(|r| r.path.contains("metrics"))
        .count();
    assert_eq!(scrapes, 3, "scrapes the server saw");
}
