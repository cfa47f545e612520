//! The workspace's crate graph is the architecture (issue 14, docs/architecture.md): read
//! from `cargo metadata` (offline), the members are the ones listed here, and no pure crate
//! reaches — directly or through any chain of normal dependencies — an I/O or UI crate
//! (tokio, reqwest, hyper, axum, clap, nvml-wrapper, insta, indicatif) or a member of this
//! workspace that is not pure. A pure crate that gains such a dependency fails this test.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Every package of the workspace, by name.
const MEMBERS: &[&str] = &[
    "inferscope-attribution",
    "inferscope-bench",
    "inferscope-client",
    "inferscope-clock",
    "inferscope-fsio",
    "inferscope-gate",
    "inferscope-model",
    "inferscope-otlp",
    "inferscope-records",
    "inferscope-redact",
    "inferscope-render",
    "inferscope-serve",
    "inferscope-sim",
    "inferscope-stats",
    "inferscope-telemetry",
    "inferscope-timeline",
];

/// The pure crates: no network, no threads, no terminal, no file I/O of their own.
const PURE: &[&str] = &[
    "inferscope-attribution",
    "inferscope-clock",
    "inferscope-gate",
    "inferscope-model",
    "inferscope-redact",
    "inferscope-render",
    "inferscope-stats",
];

/// Crates a pure crate must never depend on, at any depth.
const FORBIDDEN: &[&str] = &[
    "tokio",
    "reqwest",
    "hyper",
    "axum",
    "clap",
    "nvml-wrapper",
    "insta",
    "indicatif",
];

/// The resolved graph of `cargo metadata`: package id → (name, ids of its normal
/// dependencies), and the names of the workspace members.
struct Graph {
    nodes: BTreeMap<String, (String, Vec<String>)>,
    members: BTreeSet<String>,
}

impl Graph {
    fn from_metadata(meta: &Value) -> Graph {
        let names: BTreeMap<&str, &str> = meta["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
            .collect();
        let name_of = |id: &str| names.get(id).map_or(id.to_string(), |n| n.to_string());
        let members = meta["workspace_members"]
            .as_array()
            .expect("workspace_members")
            .iter()
            .map(|id| name_of(id.as_str().unwrap()))
            .collect();
        let mut nodes = BTreeMap::new();
        for n in meta["resolve"]["nodes"].as_array().expect("resolve.nodes") {
            let deps = n["deps"]
                .as_array()
                .unwrap()
                .iter()
                // `kind` null is a normal dependency; "dev" and "build" are not part of
                // what the crate's library links.
                .filter(|d| {
                    d["dep_kinds"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|k| k["kind"].is_null())
                })
                .map(|d| d["pkg"].as_str().unwrap().to_string())
                .collect();
            let id = n["id"].as_str().unwrap();
            nodes.insert(id.to_string(), (name_of(id), deps));
        }
        Graph { nodes, members }
    }

    /// For each forbidden crate `pure` reaches: the chain of package names that leads there.
    fn violations(&self, pure: &str, pure_set: &[&str]) -> Vec<String> {
        let start = self
            .nodes
            .iter()
            .find(|(_, (name, _))| name == pure)
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| panic!("{pure} is not in the resolved graph"));
        let bad = |name: &str| {
            FORBIDDEN.contains(&name) || (self.members.contains(name) && !pure_set.contains(&name))
        };
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        let mut stack = vec![(start, vec![pure.to_string()])];
        while let Some((id, chain)) = stack.pop() {
            if !seen.insert(id.clone()) {
                continue;
            }
            let (_, deps) = &self.nodes[&id];
            for d in deps {
                let name = &self.nodes[d].0;
                let mut next = chain.clone();
                next.push(name.clone());
                if bad(name) {
                    out.push(next.join(" → "));
                } else {
                    stack.push((d.clone(), next));
                }
            }
        }
        out.sort();
        out
    }
}

/// The host's target triple (`rustc -vV`): the resolve is read for this platform only, so
/// no other platform's dependency has to be downloaded (the read is offline).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let out = Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("run rustc -vV");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .trim()
        .to_string()
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
        ])
        .arg(host_triple())
        .arg("--manifest-path")
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
        .output()
        .expect("run cargo metadata");
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

#[test]
fn the_workspace_members_are_the_expected_crates() {
    let g = Graph::from_metadata(&metadata());
    let want: BTreeSet<String> = MEMBERS.iter().map(|s| s.to_string()).collect();
    assert_eq!(g.members, want, "workspace members (left: cargo metadata)");
}

#[test]
fn no_pure_crate_reaches_an_io_crate_or_an_impure_member() {
    let g = Graph::from_metadata(&metadata());
    let found: Vec<String> = PURE.iter().flat_map(|p| g.violations(p, PURE)).collect();
    assert!(
        found.is_empty(),
        "pure crates with forbidden dependencies:\n{}",
        found.join("\n")
    );
}

/// The checker itself, on a synthetic graph: a forbidden crate two hops down and an impure
/// member are found with their chains; a dev-dependency is not followed.
#[test]
fn the_dependency_check_follows_normal_chains_only() {
    let pkg = |id: &str| serde_json::json!({"id": id, "name": id});
    let dep = |id: &str, kind: Value| serde_json::json!({"pkg": id, "dep_kinds": [{"kind": kind}]});
    let meta = serde_json::json!({
        "packages": [pkg("pure-a"), pkg("impure-b"), pkg("mid"), pkg("tokio"), pkg("insta")],
        "workspace_members": ["pure-a", "impure-b"],
        "resolve": {"nodes": [
            {"id": "pure-a", "deps": [
                dep("mid", Value::Null),
                dep("impure-b", Value::Null),
                dep("insta", Value::from("dev")),
            ]},
            {"id": "mid", "deps": [dep("tokio", Value::Null)]},
            {"id": "impure-b", "deps": []},
            {"id": "tokio", "deps": []},
            {"id": "insta", "deps": []},
        ]},
    });
    let g = Graph::from_metadata(&meta);
    assert_eq!(
        g.violations("pure-a", &["pure-a"]),
        vec![
            "pure-a → impure-b".to_string(),
            "pure-a → mid → tokio".to_string()
        ]
    );
    assert!(g.violations("mid", &["pure-a", "mid"]) == vec!["mid → tokio".to_string()]);
}
