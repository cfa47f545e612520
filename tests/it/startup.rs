//! A one-request run does not wait on what it does not get. Against an
//! endpoint without `/metrics` (every scrape a 404), a job's figures used to wait the whole
//! snapshot bound for a sample at or after its end (one scrape period + 250 ms); with a
//! long period that is seconds per job. Now the samplers are asked for a sample at the
//! job's end, and a source that never answered and failed again after the end is not
//! waited for.

use std::time::{Duration, Instant};

use crate::support::{self, Hostile, Received, Reply};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_request_run_does_not_wait_a_scrape_period_for_a_missing_metrics_endpoint() {
    let server = Hostile::start("m", |_r: &Received| Reply::Ok("one two three".into()));
    let tmp = tempfile::tempdir().unwrap();
    let suite = support::write(
        tmp.path(),
        "one.toml",
        &format!(
            "name = \"one\"\nendpoint = \"{}\"\nmodel = \"m\"\n\n[telemetry]\nmetrics_period_ms = 5000\n\n\
             [[jobs]]\nname = \"request\"\nkind = \"context\"\nsizes = [16]\nmax_tokens = 8\n",
            server.base_url()
        ),
    );
    let started = Instant::now();
    let o = support::run_suite(&suite, None, &tmp.path().join("run")).await;
    let took = started.elapsed();
    assert_eq!(o.exit_status, 0, "{}", support::console(&o.report));
    assert!(
        took < Duration::from_millis(2500),
        "a 5 s scrape period is not waited for: the run took {took:?}"
    );
}
