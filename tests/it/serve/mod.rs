//! API tests of `inferscope-bench serve` (issue 7 "Done when"; docs/artifacts.md; field case C29):
//! raw request targets over TCP (no client normalisation), authentication before any
//! filesystem access, strict query keys, bounded stable pagination, ownership between
//! runs, typed unavailable / not-found / integrity answers, and no payload ever served.

mod fixtures;
use crate::support;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use fixtures::copy_dir;
use inferscope_bench::serve::{RunStore, ServeLimits};
use sha2::{Digest, Sha256};
use support::{cancelled_with_not_run, report_html};

const TOKEN: &str = "test-token-0123456789abcdef";
const SECRET: &[u8] = b"SECRET-BYTES-8d1e0f";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> PathBuf {
    repo().join("fixtures/runs").join(name)
}

/// A server on a loopback port, on its own runtime thread; stopped on drop.
struct TestServer {
    addr: SocketAddr,
    store: RunStore,
    _serve: support::ServeThread,
}

impl TestServer {
    fn start(root: &Path) -> Self {
        let serve = support::ServeThread::start(root, TOKEN, ServeLimits::default());
        Self {
            addr: serve.addr,
            store: serve.store.clone(),
            _serve: serve,
        }
    }

    /// Sends `target` byte for byte as the request target of a GET.
    fn raw(&self, target: &[u8], token: Option<&str>) -> Resp {
        raw_request(self.addr, target, token)
    }

    fn get(&self, target: &str) -> Resp {
        self.raw(target.as_bytes(), Some(TOKEN))
    }

    fn json(&self, target: &str) -> (u16, serde_json::Value) {
        let r = self.get(target);
        let v = serde_json::from_slice(&r.body).unwrap_or_else(|e| {
            panic!(
                "{target}: not JSON ({e}): {}",
                String::from_utf8_lossy(&r.body)
            )
        });
        (r.status, v)
    }
}

#[derive(Debug)]
struct Resp {
    status: u16,
    head: String,
    body: Vec<u8>,
}

fn raw_request(addr: SocketAddr, target: &[u8], token: Option<&str>) -> Resp {
    method_request(addr, "GET", target, token)
}

/// `raw_request` with another method.
fn method_request(addr: SocketAddr, method: &str, target: &[u8], token: Option<&str>) -> Resp {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut req = Vec::new();
    req.extend_from_slice(method.as_bytes());
    req.push(b' ');
    req.extend_from_slice(target);
    req.extend_from_slice(b" HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
    if let Some(t) = token {
        req.extend_from_slice(format!("Authorization: Bearer {t}\r\n").as_bytes());
    }
    req.extend_from_slice(b"\r\n");
    s.write_all(&req).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no response head: {:?}", String::from_utf8_lossy(&buf)));
    let head = String::from_utf8_lossy(&buf[..split]).to_string();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap();
    let mut body = buf[split + 4..].to_vec();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        body = dechunk(&body);
    }
    Resp { status, head, body }
}

fn dechunk(mut b: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let nl = b.windows(2).position(|w| w == b"\r\n").unwrap();
        let n = usize::from_str_radix(std::str::from_utf8(&b[..nl]).unwrap().trim(), 16).unwrap();
        if n == 0 {
            return out;
        }
        out.extend_from_slice(&b[nl + 2..nl + 2 + n]);
        b = &b[nl + 4 + n..];
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The C29 tree: `data/runs/r1` (a real verified run), `data/runs/r1/leak.jsonl →.
/// ./../outside/secret.txt`, `data/outside/secret.txt`, and a sibling `data/runs-old`.
fn c29_tree() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let root = data.join("runs");
    copy_dir(&fixture("complete"), &root.join("r1"));
    std::fs::create_dir_all(data.join("outside")).unwrap();
    std::fs::write(data.join("outside/secret.txt"), SECRET).unwrap();
    std::os::unix::fs::symlink("../../outside/secret.txt", root.join("r1/leak.jsonl")).unwrap();
    copy_dir(&fixture("cancelled"), &data.join("runs-old/r1"));
    std::fs::write(data.join("runs-old/r1/secret.txt"), SECRET).unwrap();
    (tmp, root)
}

#[test]
fn c29_raw_targets_are_rejected_and_never_leak() {
    let (_tmp, root) = c29_tree();
    let srv = TestServer::start(&root);
    let targets: &[&[u8]] = &[
        b"/runs/r1/../../outside/secret.txt",
        b"/runs/r1/%2e%2e/%2e%2e/outside/secret.txt",
        b"/runs/r1/%252e%252e/manifest.json",
        b"/runs/r1/..%2f..%2foutside%2fsecret.txt",
        b"/runs/r1/..\\..\\outside\\secret.txt",
        b"/runs/r1/timeline.jsonl%00.txt",
        b"/runs/r1/leak.jsonl",
        b"//outside/secret.txt",
        // The same ideas against the JSON API and the sibling directory.
        b"/v1/runs/..%2f..%2foutside",
        b"/v1/runs/%2e%2e",
        b"/v1/runs/%252e%252e",
        b"/v1/runs/r1%00",
        b"/v1/runs/..%5c..%5coutside",
        b"/v1/runs/%2Fetc%2Fpasswd",
        b"/v1/runs/..%2fruns-old%2fr1",
        b"/v1/benchmark-timeline?run_id=../runs-old/r1",
        b"/v1/benchmark-timeline?run_id=..%2fruns-old%2fr1",
        b"/v1/benchmark-timeline?run_id=%252e%252e",
        b"/v1/benchmark-timeline?run_id=r1%00",
        b"/v1/benchmark-timeline?run_id=%2Fetc%2Fpasswd",
        b"/v1/benchmark-timeline?run_id=r1%5c..%5c..",
        b"/v1/samples?run_id=..&source=power",
        b"/runs/..%2fruns-old%2fr1/timeline.jsonl",
        b"/runs/r1/secret.txt",
        b"/runs-old/r1/secret.txt",
    ];
    for t in targets {
        let shown = String::from_utf8_lossy(t);
        let r = srv.raw(t, Some(TOKEN));
        assert!(
            (400..500).contains(&r.status),
            "{shown} → {} {:?}",
            r.status,
            r.head
        );
        assert!(!contains(&r.body, SECRET), "{shown} leaked the secret");
    }
    // Unauthenticated: 401 for every one of them, and the store was never touched.
    let before = srv.store.fs_operations();
    for t in targets {
        let r = srv.raw(t, None);
        assert_eq!(
            r.status,
            401,
            "{} without token",
            String::from_utf8_lossy(t)
        );
        assert!(
            r.head
                .to_ascii_lowercase()
                .contains("www-authenticate: bearer")
        );
    }
    assert_eq!(
        srv.store.fs_operations(),
        before,
        "a refused request reached the filesystem"
    );

    // The one legitimate artifact: 200, and its SHA-256 is the manifest's.
    let r = srv.get("/runs/r1/timeline.jsonl");
    assert_eq!(r.status, 200);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("r1/timeline/manifest.json")).unwrap())
            .unwrap();
    assert_eq!(
        hex::encode(Sha256::digest(&r.body)),
        manifest["events"]["sha256"].as_str().unwrap()
    );
    assert_eq!(
        r.body.len() as u64,
        manifest["events"]["byte_length"].as_u64().unwrap()
    );
    let r = srv.get("/runs/r1/manifest.json");
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        std::fs::read(root.join("r1/timeline/manifest.json")).unwrap()
    );
}

#[test]
fn a_symlinked_timeline_or_run_is_refused_not_followed() {
    let (tmp, root) = c29_tree();
    // r2: its timeline/ is a symlink to another run's timeline (outside the root).
    copy_dir(&fixture("complete"), &root.join("r2"));
    std::fs::remove_dir_all(root.join("r2/timeline")).unwrap();
    std::os::unix::fs::symlink(
        tmp.path().join("data/runs-old/r1/timeline"),
        root.join("r2/timeline"),
    )
    .unwrap();
    // r3: the run directory itself is a symlink (to the sibling root).
    std::os::unix::fs::symlink(tmp.path().join("data/runs-old/r1"), root.join("r3")).unwrap();
    // r4: events.jsonl is a symlink to the secret.
    copy_dir(&fixture("complete"), &root.join("r4"));
    std::fs::remove_file(root.join("r4/timeline/events.jsonl")).unwrap();
    std::os::unix::fs::symlink(
        tmp.path().join("data/outside/secret.txt"),
        root.join("r4/timeline/events.jsonl"),
    )
    .unwrap();
    let srv = TestServer::start(&root);
    let (s, v) = srv.json("/v1/benchmark-timeline?run_id=r2");
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["error"]["code"], "integrity_error");
    assert_eq!(v["error"]["issues"][0]["code"], "symlink");
    let (s, v) = srv.json("/v1/benchmark-timeline?run_id=r3");
    assert_eq!(s, 404, "{v}");
    let (s, v) = srv.json("/v1/benchmark-timeline?run_id=r4");
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["error"]["issues"][0]["code"], "symlink");
    for t in [
        "/runs/r2/timeline.jsonl",
        "/runs/r3/timeline.jsonl",
        "/runs/r4/timeline.jsonl",
    ] {
        let r = srv.get(t);
        assert!((400..500).contains(&r.status), "{t}: {}", r.status);
        assert!(!contains(&r.body, SECRET));
    }
    let (_, list) = srv.json("/v1/runs");
    let ids: Vec<&str> = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["r1", "r2", "r4"],
        "a symlinked run directory is not listed"
    );
}

#[test]
fn auth_comes_before_any_filesystem_access() {
    let tmp = tempfile::tempdir().unwrap();
    let srv = TestServer::start(&tmp.path().join("does-not-exist"));
    for t in [
        "/v1/runs",
        "/v1/runs/r1",
        "/v1/benchmark-timeline?run_id=r1",
        "/v1/samples?run_id=r1&source=power",
        "/v1/charts?run_id=r1",
        "/runs/r1/timeline.jsonl",
        "/nope",
        "/v1/runs?limit=0",
    ] {
        assert_eq!(srv.raw(t.as_bytes(), None).status, 401, "{t}");
        assert_eq!(
            srv.raw(t.as_bytes(), Some("wrong-token-0123456789")).status,
            401,
            "{t}"
        );
        let r = raw_request(srv.addr, t.as_bytes(), None);
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["error"]["code"], "unauthorized");
    }
    // A token in the query string is not a credential.
    assert_eq!(
        srv.raw(format!("/v1/runs?token={TOKEN}").as_bytes(), None)
            .status,
        401
    );
    assert_eq!(
        srv.store.fs_operations(),
        0,
        "an unauthenticated request touched the filesystem"
    );
    // Public: the health check and the page shell (no run data).
    assert_eq!(srv.raw(b"/health", None).status, 200);
    let page = srv.raw(b"/", None);
    assert_eq!(page.status, 200);
    assert!(page.head.contains("content-security-policy"));
    assert_eq!(srv.raw(b"/app.js", None).status, 200);
    assert_eq!(srv.store.fs_operations(), 0);
    // With the token the missing root is a typed 503, disclosing no path.
    let (s, v) = srv.json("/v1/runs");
    assert_eq!(s, 503);
    assert_eq!(v["error"]["code"], "runs_root_unavailable");
    assert!(!v.to_string().contains("does-not-exist"));
}

#[test]
fn query_keys_limits_and_ids_are_strict_and_checked_before_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("complete"), &tmp.path().join("r1"));
    let srv = TestServer::start(tmp.path());
    let cases: &[(&str, &str)] = &[
        (
            "/v1/benchmark-timeline?run_id=r1&run_id=r2",
            "duplicate_query_key",
        ),
        (
            "/v1/benchmark-timeline?run_id=r1&run%5Fid=r1",
            "duplicate_query_key",
        ),
        (
            "/v1/benchmark-timeline?run_id=r1&limit=5&limit=6",
            "duplicate_query_key",
        ),
        (
            "/v1/benchmark-timeline?run_id=r1&path=/etc/passwd",
            "unknown_query_key",
        ),
        (
            "/v1/benchmark-timeline?run_id=r1&after=0",
            "unknown_query_key",
        ),
        ("/v1/benchmark-timeline?limit=5", "missing_query_key"),
        ("/v1/benchmark-timeline?run_id=r1&limit=0", "invalid_limit"),
        (
            "/v1/benchmark-timeline?run_id=r1&limit=1001",
            "invalid_limit",
        ),
        ("/v1/benchmark-timeline?run_id=r1&limit=-1", "invalid_limit"),
        (
            "/v1/benchmark-timeline?run_id=r1&limit=ten",
            "invalid_limit",
        ),
        (
            "/v1/benchmark-timeline?run_id=r1&after_seq=-3",
            "invalid_query_value",
        ),
        ("/v1/benchmark-timeline?run_id=../r1", "invalid_run_id"),
        ("/v1/benchmark-timeline?run_id=r1&&limit=5", "bad_query"),
        ("/v1/benchmark-timeline?run_id", "bad_query"),
        ("/v1/benchmark-timeline?run_id=%zz", "bad_query"),
        ("/v1/runs?limit=101", "invalid_limit"),
        ("/v1/runs?after=../x", "invalid_query_value"),
        ("/v1/runs?sort=name", "unknown_query_key"),
        ("/v1/runs/r1?x=1", "unknown_query_key"),
        ("/v1/runs/.hidden", "invalid_run_id"),
        ("/v1/samples?run_id=r1&source=gpu", "invalid_query_value"),
        ("/v1/samples?run_id=r1", "missing_query_key"),
        (
            "/v1/samples?run_id=r1&source=power&limit=5001",
            "invalid_limit",
        ),
    ];
    let before = srv.store.fs_operations();
    for (t, code) in cases {
        let (s, v) = srv.json(t);
        assert_eq!(s, 400, "{t}: {v}");
        assert_eq!(v["error"]["code"], *code, "{t}: {v}");
        assert!(v["error"]["message"].is_string());
    }
    let long = format!("/v1/benchmark-timeline?run_id=r1&x={}", "a".repeat(3000));
    let (s, v) = srv.json(&long);
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (400, Some("input_too_large"))
    );
    let longer = format!("/v1/runs/{}", "a".repeat(5000));
    let (s, v) = srv.json(&longer);
    assert_eq!(
        (s, v["error"]["code"].as_str()),
        (400, Some("input_too_large"))
    );
    assert_eq!(
        srv.store.fs_operations(),
        before,
        "a refused query reached the store"
    );
}

#[test]
fn timeline_pages_are_bounded_stable_and_complete() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("complete"), &tmp.path().join("r1"));
    let srv = TestServer::start(tmp.path());
    let manifest: serde_json::Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("r1/timeline/manifest.json")).unwrap(),
    )
    .unwrap();
    let count = manifest["event_count"].as_u64().unwrap();
    let (s, all) = srv.json("/v1/benchmark-timeline?run_id=r1&after_seq=0&limit=1000");
    assert_eq!(s, 200);
    assert_eq!(all["events"].as_array().unwrap().len() as u64, count);
    assert!(all["next_after_seq"].is_null());
    assert_eq!(all["quality"], "complete");
    // Default limit is 500 and the defaults apply without the keys.
    let (_, dflt) = srv.json("/v1/benchmark-timeline?run_id=r1");
    assert_eq!(dflt["limit"], 500);
    // Pages of 7 chain without gaps or repeats, and a repeated request is byte-identical.
    let mut seqs = Vec::new();
    let mut after = 0u64;
    loop {
        let t = format!("/v1/benchmark-timeline?run_id=r1&after_seq={after}&limit=7");
        let a = srv.get(&t);
        let b = srv.get(&t);
        assert_eq!(a.body, b.body, "page after {after} is not stable");
        let v: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        let ev = v["events"].as_array().unwrap();
        assert!(ev.len() <= 7);
        assert!(a.body.len() <= 1 << 20);
        seqs.extend(ev.iter().map(|e| e["seq"].as_u64().unwrap()));
        match v["next_after_seq"].as_u64() {
            Some(n) => {
                assert_eq!(Some(n), ev.last().and_then(|e| e["seq"].as_u64()));
                after = n;
            }
            None => break,
        }
    }
    let expected: Vec<u64> = all["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, expected);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    // Past the end: empty, no cursor.
    let (_, end) = srv.json(&format!(
        "/v1/benchmark-timeline?run_id=r1&after_seq={}",
        u64::MAX
    ));
    assert_eq!(end["events"].as_array().unwrap().len(), 0);
    assert!(end["next_after_seq"].is_null());
}

#[test]
fn unavailable_unknown_and_corrupt_runs_get_typed_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    copy_dir(&fixture("complete"), &root.join("no-timeline"));
    std::fs::remove_dir_all(root.join("no-timeline/timeline")).unwrap();
    copy_dir(&fixture("complete"), &root.join("flipped"));
    let ev = root.join("flipped/timeline/events.jsonl");
    let mut bytes = std::fs::read(&ev).unwrap();
    let i = bytes.iter().position(|&b| b == b'"').unwrap();
    bytes[i + 1] ^= 0x01;
    std::fs::write(&ev, &bytes).unwrap();
    copy_dir(&fixture("complete"), &root.join("truncated"));
    let ev = root.join("truncated/timeline/events.jsonl");
    let bytes = std::fs::read(&ev).unwrap();
    std::fs::write(&ev, &bytes[..bytes.len() - 10]).unwrap();
    copy_dir(&fixture("complete"), &root.join("schema"));
    let mp = root.join("schema/timeline/manifest.json");
    let m = std::fs::read_to_string(&mp).unwrap().replace(
        "inferscope-bench.timeline/v2",
        "inferscope-bench.timeline/v9",
    );
    std::fs::write(&mp, m).unwrap();
    // dup-seq: a line repeated, with the manifest's count, length and hash recomputed so
    // only the event checks can catch it.
    copy_dir(&fixture("complete"), &root.join("dup-seq"));
    let ev = root.join("dup-seq/timeline/events.jsonl");
    let text = std::fs::read_to_string(&ev).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut forged: Vec<&str> = lines[..3].to_vec();
    forged.push(lines[2]);
    forged.extend_from_slice(&lines[3..]);
    let forged = forged.join("\n") + "\n";
    std::fs::write(&ev, &forged).unwrap();
    let mp = root.join("dup-seq/timeline/manifest.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&mp).unwrap()).unwrap();
    m["event_count"] = serde_json::json!(lines.len() + 1);
    m["events"]["byte_length"] = serde_json::json!(forged.len());
    m["events"]["sha256"] = serde_json::json!(hex::encode(Sha256::digest(forged.as_bytes())));
    std::fs::write(&mp, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let srv = TestServer::start(root);

    let (s, v) = srv.json("/v1/benchmark-timeline?run_id=dup-seq");
    assert_eq!(s, 422, "{v}");
    let codes: Vec<&str> = v["error"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"duplicate_seq"), "{codes:?}");

    let (s, v) = srv.json("/v1/benchmark-timeline?run_id=no-timeline");
    assert_eq!(s, 200);
    assert_eq!(v["state"], "unavailable");
    assert_eq!(v["reason"], "no_timeline");
    let (_, d) = srv.json("/v1/runs/no-timeline");
    assert_eq!(d["timeline"]["state"], "unavailable");

    for (run, code) in [
        ("flipped", "hash_mismatch"),
        ("truncated", "length_mismatch"),
        ("schema", "unknown_schema"),
    ] {
        let (s, v) = srv.json(&format!("/v1/benchmark-timeline?run_id={run}"));
        assert_eq!(s, 422, "{run}: {v}");
        assert_eq!(v["error"]["code"], "integrity_error");
        let codes: Vec<&str> = v["error"]["issues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["code"].as_str().unwrap())
            .collect();
        assert!(codes.contains(&code), "{run}: {codes:?}");
        assert!(v.get("events").is_none());
        let r = srv.get(&format!("/runs/{run}/timeline.jsonl"));
        assert_eq!(r.status, 422, "{run} artifact");
        let (s, d) = srv.json(&format!("/v1/runs/{run}"));
        assert_eq!(s, 200);
        assert_eq!(d["timeline"]["state"], "integrity_error");
        assert!(
            d["gaps"]
                .as_array()
                .unwrap()
                .iter()
                .any(|g| g["kind"] == "integrity_error")
        );
    }

    // Unknown runs and names: one body, nothing about the filesystem.
    let bodies: Vec<Vec<u8>> = [
        "/v1/runs/nope",
        "/v1/benchmark-timeline?run_id=nope",
        "/v1/samples?run_id=nope&source=power",
        "/v1/charts?run_id=nope",
        "/runs/nope/timeline.jsonl",
        "/runs/no-timeline/report.json",
        "/runs/no-timeline/timeline.jsonl",
        "/v2/anything",
    ]
    .iter()
    .map(|t| {
        let r = srv.get(t);
        assert_eq!(r.status, 404, "{t}");
        r.body
    })
    .collect();
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "404 bodies differ");
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&bodies[0]).unwrap(),
        serde_json::json!({"error": {"status": 404, "code": "not_found", "message": "not found", "issues": []}})
    );
}

#[test]
fn run_a_cannot_reach_run_b() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    copy_dir(&fixture("complete"), &root.join("A"));
    copy_dir(&fixture("cancelled"), &root.join("B"));
    // A2: a copy of A whose timeline was replaced by B's (a valid artifact of another run).
    copy_dir(&fixture("complete"), &root.join("A2"));
    std::fs::remove_dir_all(root.join("A2/timeline")).unwrap();
    copy_dir(&root.join("B/timeline"), &root.join("A2/timeline"));
    let srv = TestServer::start(root);
    let b_manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("B/timeline/manifest.json")).unwrap())
            .unwrap();
    let b_timeline = b_manifest["timeline_id"].as_str().unwrap();

    let (s, a) = srv.json("/v1/benchmark-timeline?run_id=A&limit=1000");
    assert_eq!(s, 200);
    assert!(!a.to_string().contains(b_timeline));
    let (s, v) = srv.json("/v1/benchmark-timeline?run_id=A2");
    assert_eq!(s, 422, "{v}");
    assert_eq!(v["error"]["issues"][0]["code"], "run_id_mismatch");
    assert!(!v.to_string().contains(b_timeline));
    assert_eq!(srv.get("/runs/A2/timeline.jsonl").status, 422);
    for t in [
        "/v1/benchmark-timeline?run_id=A/../B",
        "/v1/benchmark-timeline?run_id=A%2F..%2FB",
        "/v1/runs/A%2F..%2FB",
        "/runs/A/..%2FB%2Ftimeline%2Fevents.jsonl",
        "/runs/A/..%2F..%2FB/timeline.jsonl",
    ] {
        let r = srv.get(t);
        assert!((400..500).contains(&r.status), "{t}: {}", r.status);
        assert!(!contains(&r.body, b_timeline.as_bytes()), "{t}");
    }
    let (_, detail) = srv.json("/v1/runs/A");
    assert!(!detail.to_string().contains(b_timeline));
    assert_eq!(detail["timeline"]["state"], "ok");
}

#[test]
fn listing_is_bounded_sorted_and_paginated() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for name in ["r-c", "r-a", "r-e", "r-b", "r-d"] {
        std::fs::create_dir_all(root.join(name)).unwrap();
    }
    copy_dir(&fixture("complete"), &root.join("r-f"));
    std::fs::create_dir_all(root.join(".hidden")).unwrap();
    std::fs::create_dir_all(root.join("has space")).unwrap();
    std::fs::write(root.join("a-file"), b"x").unwrap();
    std::os::unix::fs::symlink(root.join("r-a"), root.join("r-link")).unwrap();
    let srv = TestServer::start(root);
    let mut ids = Vec::new();
    let mut next: Option<String> = None;
    let mut pages = 0;
    loop {
        let t = match &next {
            Some(a) => format!("/v1/runs?limit=2&after={a}"),
            None => "/v1/runs?limit=2".to_string(),
        };
        let (s, v) = srv.json(&t);
        assert_eq!(s, 200);
        let runs = v["runs"].as_array().unwrap();
        assert!(runs.len() <= 2);
        ids.extend(
            runs.iter()
                .map(|r| r["run_id"].as_str().unwrap().to_string()),
        );
        pages += 1;
        match v["next_after"].as_str() {
            Some(a) => next = Some(a.to_string()),
            None => break,
        }
    }
    assert_eq!(ids, ["r-a", "r-b", "r-c", "r-d", "r-e", "r-f"]);
    assert_eq!(pages, 3);
    let (_, v) = srv.json("/v1/runs");
    let f = &v["runs"].as_array().unwrap()[5];
    assert_eq!(f["report_state"], "ok");
    assert_eq!(f["capture_quality"], "complete");
    assert_eq!(f["timeline_present"], true);
    let a = &v["runs"].as_array().unwrap()[0];
    assert_eq!(a["report_state"], "missing");
    assert!(a["capture_quality"].is_null());
}

#[test]
fn samples_are_paged_and_alignment_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    for f in ["complete", "no-telemetry", "clock-misaligned"] {
        copy_dir(&fixture(f), &tmp.path().join(f));
    }
    let srv = TestServer::start(tmp.path());
    let lines = std::fs::read_to_string(tmp.path().join("complete/samples/gpu.jsonl"))
        .unwrap()
        .lines()
        .count();
    let mut got = 0usize;
    let mut after = 0u64;
    loop {
        let (s, v) = srv.json(&format!(
            "/v1/samples?run_id=complete&source=power&after={after}&limit=40"
        ));
        assert_eq!(s, 200, "{v}");
        assert_eq!(v["aligned"], true);
        assert_eq!(v["total"].as_u64().unwrap() as usize, lines);
        let n = v["samples"].as_array().unwrap().len();
        assert!(n <= 40);
        got += n;
        match v["next_after"].as_u64() {
            Some(a) => {
                assert_eq!(a, after + n as u64);
                after = a;
            }
            None => break,
        }
    }
    assert_eq!(got, lines);
    let (_, v) = srv.json("/v1/samples?run_id=no-telemetry&source=power");
    assert_eq!(
        (v["state"].as_str(), v["reason"].as_str()),
        (Some("unavailable"), Some("source_not_configured"))
    );
    let (_, v) = srv.json("/v1/samples?run_id=clock-misaligned&source=power");
    assert_eq!(v["aligned"], false);
    let (_, d) = srv.json("/v1/runs/clock-misaligned");
    assert_eq!(d["telemetry"]["aligned"], false);
    assert!(
        d["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["kind"] == "clock_domain_mismatch")
    );
    let (_, d) = srv.json("/v1/runs/no-telemetry");
    assert_eq!(d["telemetry"]["state"], "unavailable");
    assert!(
        d["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["kind"] == "telemetry_unavailable")
    );
}

#[test]
/// No payload and no URL is served. The clock-domain id is served as `report.json` has it
/// (issue 18: one id on the page and in the report), and nothing else names the host.
fn nothing_served_holds_a_payload_or_a_url() {
    let tmp = tempfile::tempdir().unwrap();
    for f in [
        "complete",
        "cancelled",
        "overflowed",
        "no-telemetry",
        "clock-misaligned",
    ] {
        copy_dir(&fixture(f), &tmp.path().join(f));
    }
    let srv = TestServer::start(tmp.path());
    let suite = std::fs::read_to_string(repo().join("suites/agentic.toml")).unwrap();
    let mut forbidden: Vec<String> = vec![
        "You are a code reviewer".into(),
        "You are a careful assistant".into(),
        "Review the repository".into(),
        "http://127.0.0.1".into(),
        "\"messages\"".into(),
        "\"content\"".into(),
        "\"arguments\"".into(),
    ];
    // Tool fixture contents (what the tools returned to the model).
    for f in [
        "tools/weather_oslo.json",
        "tools/search_results.json",
        "repo/README.md",
    ] {
        if let Ok(text) = std::fs::read_to_string(repo().join("fixtures").join(f))
            && let Some(line) = text.lines().find(|l| l.trim().len() > 12)
        {
            forbidden.push(line.trim().chars().take(40).collect());
        }
    }
    assert!(suite.contains("You are a code reviewer"));
    for f in [
        "complete",
        "cancelled",
        "overflowed",
        "no-telemetry",
        "clock-misaligned",
    ] {
        for t in [
            format!("/v1/runs/{f}"),
            format!("/v1/benchmark-timeline?run_id={f}&limit=1000"),
            format!("/v1/samples?run_id={f}&source=power"),
            format!("/v1/samples?run_id={f}&source=metrics"),
            "/v1/runs".to_string(),
        ] {
            let r = srv.get(&t);
            let text = String::from_utf8_lossy(&r.body);
            for bad in &forbidden {
                assert!(!text.contains(bad.as_str()), "{t} contains {bad:?}");
            }
            // The host appears only inside the run's own clock-domain ids.
            let domains = [
                "report.json",
                "timeline/manifest.json",
                "samples/sources.json",
            ]
            .iter()
            .filter_map(|a| std::fs::read(fixture(f).join(a)).ok())
            .filter_map(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .filter_map(|v| v["clock_domain_id"].as_str().map(str::to_string))
            .collect::<Vec<_>>();
            let mut rest = text.to_string();
            for d in &domains {
                rest = rest.replace(d.as_str(), "");
            }
            assert!(
                !rest.contains("mono:"),
                "{t}: a clock domain of no artifact"
            );
        }
    }
}

#[test]
fn the_binary_serves_with_a_token_and_refuses_to_start_without() {
    let bin = env!("CARGO_BIN_EXE_inferscope-bench");
    let out = std::process::Command::new(bin)
        .args(["serve", "--runs", "fixtures/runs", "--bind", "127.0.0.1:0"])
        .env_remove("INFERSCOPE_TOKEN")
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("INFERSCOPE_TOKEN"));
    let tmp = tempfile::tempdir().unwrap();
    let tok = tmp.path().join("token");
    std::fs::write(&tok, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&tok, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let mut child = std::process::Command::new(bin)
        .args([
            "serve",
            "--runs",
            "fixtures/runs",
            "--bind",
            "127.0.0.1:0",
            "--token-file",
        ])
        .arg(&tok)
        .current_dir(repo())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let addr: SocketAddr = line
        .trim()
        .strip_prefix("listening on http://")
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("first line: {line:?}"))
        .parse()
        .unwrap();
    let health = raw_request(addr, b"/health", None);
    let list = raw_request(addr, b"/v1/runs", Some(TOKEN));
    let denied = raw_request(addr, b"/v1/runs", None);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(health.status, 200);
    assert_eq!(list.status, 200);
    assert_eq!(denied.status, 401);
    let v: serde_json::Value = serde_json::from_slice(&list.body).unwrap();
    let ids: Vec<&str> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "cancelled",
            "clock-misaligned",
            "complete",
            "no-telemetry",
            "overflowed"
        ]
    );
}

#[test]
fn report_html_is_one_self_contained_file() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("report.html");
    report_html(Path::new("fixtures/runs/overflowed"), &out);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(html.contains("<script type=\"application/json\" id=\"inferscope-data\">"));
    assert!(!html.contains("src=\"app.js\"") && !html.contains("href=\"style.css\""));
    let no_ns = html.replace("\"http://www.w3.org/2000/svg\"", "SVG_NS");
    assert!(!no_ns.contains("http://") && !no_ns.contains("https://"));
    assert!(html.contains("Content-Security-Policy"));
    let start = html.find("id=\"inferscope-data\">").unwrap() + "id=\"inferscope-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    assert_eq!(data["mode"], "static");
    assert_eq!(data["detail"]["timeline"]["quality"], "partial");
    assert!(
        data["detail"]["timeline"]["dropped_count"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert!(!data["events"].as_array().unwrap().is_empty());
    assert!(!html[start..end].contains('<'));
}

/// `GET /v1/charts?run_id=` serves a run's charts as SVG element trees
/// (the page builds them), drawn from report.json; strict query, typed errors; a run
/// without a report has a note, no chart.
#[test]
fn charts_route_serves_the_runs_charts_as_element_trees() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&fixture("complete"), &tmp.path().join("complete"));
    std::fs::create_dir_all(tmp.path().join("empty")).unwrap();
    let srv = TestServer::start(tmp.path());
    let (s, v) = srv.json("/v1/charts?run_id=complete");
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["schema"], "inferscope-bench.serve.charts/v1");
    assert_eq!(v["run_id"], "complete");
    let charts = v["charts"].as_array().unwrap();
    assert_eq!(charts.len(), 1, "{v}");
    assert_eq!(charts[0]["kind"], "trajectory");
    assert_eq!(charts[0]["job"], "agentic::repo_tour");
    let svg = &charts[0]["svg"];
    assert_eq!(svg["tag"], "svg");
    let attrs: Vec<(String, String)> = serde_json::from_value(svg["attrs"].clone()).unwrap();
    assert!(attrs.contains(&("data-chart-kind".into(), "trajectory".into())));
    let kinds: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["sweep", "baseline"]);
    let (s, v) = srv.json("/v1/charts?run_id=empty");
    assert_eq!(s, 200, "{v}");
    assert!(v["charts"].as_array().unwrap().is_empty());
    assert_eq!(v["notes"][0]["kind"], "report");
    for (t, code) in [
        ("/v1/charts", "missing_query_key"),
        ("/v1/charts?run_id=complete&x=1", "unknown_query_key"),
        ("/v1/charts?run_id=../complete", "invalid_run_id"),
    ] {
        let (s, v) = srv.json(t);
        assert_eq!(s, 400, "{t}: {v}");
        assert_eq!(v["error"]["code"], code, "{t}");
    }
    assert_eq!(srv.raw(b"/v1/charts?run_id=complete", None).status, 401);
}

/// The static report draws its charts into the file as inline SVG: no script library,
/// no URL, report text escaped (a hostile job name stays text).
#[test]
fn report_html_draws_its_charts_inline_and_escaped() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    copy_dir(&fixture("complete"), &run);
    let p = run.join("report.json");
    let mut r: serde_json::Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
    r["jobs"][0]["id"] = "agentic::</svg><script>alert(1)</script>&\"".into();
    std::fs::write(&p, serde_json::to_vec(&r).unwrap()).unwrap();
    let out = tmp.path().join("report.html");
    report_html(&run, &out);
    let html = std::fs::read_to_string(&out).unwrap();
    let start = html.find("<div id=\"charts\"").unwrap();
    let end = start + html[start..].find("</div>").unwrap();
    let charts = &html[start..end];
    assert!(charts.contains("data-source=\"report\""));
    assert_eq!(
        charts
            .matches("<svg class=\"chart\" data-chart-kind=\"trajectory\"")
            .count(),
        1
    );
    assert!(charts.contains(
        "data-job=\"agentic::&lt;/svg&gt;&lt;script&gt;alert(1)&lt;/script&gt;&amp;&quot;\""
    ));
    assert!(!charts.contains("<script"));
    assert_eq!(charts.matches("<p class=\"chart-note\"").count(), 2);
    // Still exactly the two inline scripts the CSP allows, and nothing fetched.
    assert_eq!(html.matches("<script").count(), 2);
    let no_ns = html.replace("\"http://www.w3.org/2000/svg\"", "SVG_NS");
    assert!(!no_ns.contains("http://") && !no_ns.contains("https://"));
    assert!(!charts.contains("href"));
}

#[test]
fn not_run_jobs_are_carried_by_the_listing_and_the_detail() {
    let tmp = tempfile::tempdir().unwrap();
    cancelled_with_not_run(&tmp.path().join("cut"), 4);
    // A report written before `summary.not_run` existed reads as 0 not run.
    copy_dir(&fixture("cancelled"), &tmp.path().join("old"));
    let srv = TestServer::start(tmp.path());

    let (s, list) = srv.json("/v1/runs");
    assert_eq!(s, 200, "{list}");
    let row = |id: &str| {
        list["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["run_id"] == id)
            .unwrap()
            .clone()
    };
    let cut = row("cut");
    assert_eq!(cut["cancelled"], true);
    assert_eq!(cut["jobs"], 1, "jobs run: not-run jobs are not counted");
    assert_eq!(cut["passed"], 0);
    // The fixture's job was cut short by the signal: cancelled, not failed.
    assert_eq!(cut["failed"], 0);
    assert_eq!(cut["jobs_cancelled"], 1, "{cut}");
    assert_eq!(cut["not_run"], 4, "{cut}");
    assert_eq!(row("old")["not_run"], 0);

    let (s, d) = srv.json("/v1/runs/cut");
    assert_eq!(s, 200, "{d}");
    let sum = &d["report"]["summary"];
    assert_eq!(
        (
            &sum["jobs"],
            &sum["passed"],
            &sum["cancelled"],
            &sum["not_run"]
        ),
        (&1.into(), &0.into(), &1.into(), &4.into()),
        "{sum}"
    );
    let statuses: Vec<&str> = d["report"]["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["cancelled", "not_run", "not_run", "not_run", "not_run"]
    );
    // The timeline of the run is served as before.
    let (s, v) = srv.json("/v1/benchmark-timeline?run_id=cut");
    assert_eq!(s, 200, "{v}");
}

#[test]
fn static_html_report_carries_not_run() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("cut");
    cancelled_with_not_run(&run, 2);
    let out = tmp.path().join("report.html");
    report_html(&run, &out);
    let html = std::fs::read_to_string(&out).unwrap();
    let start = html.find("id=\"inferscope-data\">").unwrap() + "id=\"inferscope-data\">".len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    assert_eq!(data["detail"]["report"]["summary"]["not_run"], 2);
    // The page's script marks not-run jobs without the failure mark.
    assert!(html.contains("○ not run"));
}

/// Methods: every route answers GET and HEAD (HEAD: the same head, no body); another
/// method is 405 with `allow: GET,HEAD` after the guard (401 without a token, even on a
/// public path), and an unknown path is the one 404 body whatever the method. Every
/// answer carries the security headers.
#[test]
fn methods_head_and_405_keep_the_guard_and_the_headers() {
    let (_tmp, root) = c29_tree();
    let srv = TestServer::start(&root);
    let head = method_request(srv.addr, "HEAD", b"/v1/runs", Some(TOKEN));
    let get = srv.get("/v1/runs");
    assert_eq!((head.status, get.status), (200, 200));
    assert!(head.body.is_empty());
    let length = |r: &Resp| {
        r.head
            .to_ascii_lowercase()
            .lines()
            .find_map(|l| l.strip_prefix("content-length: ").map(str::to_string))
    };
    assert_eq!(length(&head), length(&get));
    assert_eq!(method_request(srv.addr, "HEAD", b"/", None).status, 200);
    for (method, target) in [
        ("POST", "/v1/runs"),
        ("DELETE", "/runs/r1/timeline.jsonl"),
        ("PUT", "/health"),
    ] {
        let r = method_request(srv.addr, method, target.as_bytes(), Some(TOKEN));
        assert_eq!(r.status, 405, "{method} {target}");
        assert!(
            r.head.to_ascii_lowercase().contains("allow: get,head"),
            "{:?}",
            r.head
        );
        assert!(r.body.is_empty());
        let denied = method_request(srv.addr, method, target.as_bytes(), None);
        assert_eq!(denied.status, 401, "{method} {target} without token");
    }
    let r = method_request(srv.addr, "POST", b"/v2/anything", Some(TOKEN));
    assert_eq!(r.status, 404);
    assert_eq!(r.body, srv.get("/v1/runs/nope").body);
    for r in [
        head,
        get,
        r,
        method_request(srv.addr, "POST", b"/health", None),
    ] {
        let h = r.head.to_ascii_lowercase();
        for want in [
            "x-content-type-options: nosniff",
            "cache-control: no-store",
            "referrer-policy: no-referrer",
            "x-frame-options: deny",
            "content-security-policy: default-src 'none'",
        ] {
            assert!(h.contains(want), "{want} missing: {h}");
        }
    }
}
