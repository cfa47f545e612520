//! Defects found by the fresh review of issues 29, 30 and 34 (on the built binary): an
//! endpoint URL whose query or fragment carries a key, and tampered shard directories
//! that `merge` still accepted.

use crate::support;

use std::path::Path;

use serde_json::Value;
use support::{describe, run};

/// Issue 30 item 2 (a key in the URL's query): an endpoint URL with a query or fragment
/// was accepted, requested as `…/v1?api-key=K/models`, and echoed whole on the console,
/// in `report.json` and JUnit. It is refused (exit 2, nothing sent), from the flag and
/// from the suite, and neither the error nor the suite snippet shows the query.
#[test]
fn an_endpoint_url_with_a_query_or_fragment_is_refused_and_never_echoed() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let trip = support::Tripwire::new();
    let base = trip.base_url();
    support::write(
        cwd,
        "s.toml",
        "name = \"s\"\nmodel = \"m\"\n[[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [16]\n",
    );
    for url in [
        format!("{base}?api-key=QSECRET1"),
        format!("{base}/?sig=QSECRET2&x=1"),
        format!("{base}#QSECRET3"),
        format!("http://u:QSECRET4@{}/v1?key=QSECRET5", trip.addr),
    ] {
        let out = cwd.join("out");
        let junit = cwd.join("j.xml");
        let o = run(
            cwd,
            &[
                "run",
                "s.toml",
                "--endpoint",
                &url,
                "--out",
                out.to_str().unwrap(),
                "--junit",
                junit.to_str().unwrap(),
            ],
        );
        let all = describe(&o);
        assert_eq!(o.status.code(), Some(2), "{url}: {all}");
        assert!(!all.contains("QSECRET"), "{url}: {all}");
        assert!(!out.exists() && !junit.exists(), "{url}: {all}");

        // The same URL in the suite: `check` refuses it; error and snippet hide the query.
        let text = format!(
            "name = \"t\"\nendpoint = \"{url}\"\nmodel = \"m\"\n\
             [[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [16]\n"
        );
        support::write(cwd, "t.toml", &text);
        let o = run(cwd, &["check", "t.toml"]);
        let all = describe(&o);
        assert_eq!(o.status.code(), Some(2), "{url}: {all}");
        assert!(!all.contains("QSECRET"), "{url}: {all}");
        assert!(all.contains("endpoint"), "{url}: {all}");
    }
    assert_eq!(trip.accepted(), 0, "nothing is sent");
    // A plain base URL (trailing slash) is still accepted by `check`.
    support::write(
        cwd,
        "ok.toml",
        &format!(
            "name = \"ok\"\nendpoint = \"{base}/\"\nmodel = \"m\"\n\
             [[jobs]]\nname = \"a\"\nkind = \"context\"\nsizes = [16]\n"
        ),
    );
    let o = run(cwd, &["check", "ok.toml"]);
    assert_eq!(o.status.code(), Some(0), "{}", describe(&o));
}
