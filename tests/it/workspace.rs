//! The workspace's crate graph is the architecture (docs/architecture.md): read
//! from `cargo metadata` (offline), the members are the ones listed here, and no pure crate
//! reaches — directly or through any chain of normal dependencies — an I/O or UI crate
//! (tokio, reqwest, hyper, axum, clap, nvml-wrapper, insta, indicatif) or a member of this
//! workspace that is not pure. A pure crate that gains such a dependency fails this test.
//! The harness crate (what a user's repository adds for `harness = false` trials) reaches
//! neither axum, the dashboard crate, clap nor the `inferscope-bench` package, except
//! through the edges `HARNESS_ALLOWED` names.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Every package of the workspace, by name.
const MEMBERS: &[&str] = &[
    "inferscope-attribution",
    "inferscope-bench",
    "inferscope-client",
    "inferscope-clock",
    "inferscope-driver",
    "inferscope-fsio",
    "inferscope-gate",
    "inferscope-harness",
    "inferscope-model",
    "inferscope-otlp",
    "inferscope-records",
    "inferscope-redact",
    "inferscope-render",
    "inferscope-report",
    "inferscope-serve",
    "inferscope-sim",
    "inferscope-suite",
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
    "inferscope-report",
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
        self.chains_to(pure, |name| {
            FORBIDDEN.contains(&name) || (self.members.contains(name) && !pure_set.contains(&name))
        })
    }

    /// Every chain of normal dependencies from `from` to a crate for which `bad` holds (the
    /// walk does not go past a bad crate), as `a → b → c`, sorted.
    fn chains_to(&self, from: &str, bad: impl Fn(&str) -> bool) -> Vec<String> {
        let start = self
            .nodes
            .iter()
            .find(|(_, (name, _))| name == from)
            .map(|(id, _)| id.clone())
            .unwrap_or_else(|| panic!("{from} is not in the resolved graph"));
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        let mut stack = vec![(start, vec![from.to_string()])];
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

/// What a user's repository that runs its suites as nextest trials
/// (`inferscope-harness`, `harness = false`) must not pull in, at any depth: the web
/// framework, the dashboard, the CLI's argument parser, the CLI package itself.
const HARNESS_FORBIDDEN: &[&str] = &["axum", "inferscope-serve", "clap", "inferscope-bench"];

/// The known edges into [`HARNESS_FORBIDDEN`], by their last hop (`parent → crate`), each
/// with the reason it is allowed. Nothing else may lead there.
const HARNESS_ALLOWED: &[(&str, &str, &str)] = &[
    // libtest-mimic, the libtest protocol nextest drives (`--list`, `--exact`, filters),
    // parses those arguments with clap; this is not the CLI's clap surface (src/cli).
    (
        "libtest-mimic",
        "clap",
        "libtest-mimic's own libtest argument parser",
    ),
];

/// The chains that end in an edge no allowance names, and the allowances (`parent →
/// crate`) no chain ends in.
fn unexpected_and_stale(
    chains: &[String],
    allowed: &[(&str, &str, &str)],
) -> (Vec<String>, Vec<String>) {
    let last_hop = |c: &str| {
        let hops: Vec<&str> = c.split(" → ").collect();
        (
            hops[hops.len() - 2].to_string(),
            hops[hops.len() - 1].to_string(),
        )
    };
    let unexpected = chains
        .iter()
        .filter(|c| {
            let (a, b) = last_hop(c);
            !allowed.iter().any(|(p, d, _)| *p == a && *d == b)
        })
        .cloned()
        .collect();
    let stale = allowed
        .iter()
        .filter(|(p, d, _)| {
            !chains
                .iter()
                .any(|c| last_hop(c) == (p.to_string(), d.to_string()))
        })
        .map(|(p, d, why)| format!("{p} → {d} ({why})"))
        .collect();
    (unexpected, stale)
}

/// The harness crate reaches none of [`HARNESS_FORBIDDEN`] except through the edges
/// [`HARNESS_ALLOWED`] names, and every allowed edge is still there (a stale allowance
/// would let the edge come back unnoticed).
#[test]
fn the_harness_crate_reaches_no_cli_dashboard_or_web_framework() {
    let g = Graph::from_metadata(&metadata());
    let chains = g.chains_to("inferscope-harness", |n| HARNESS_FORBIDDEN.contains(&n));
    let (unexpected, stale) = unexpected_and_stale(&chains, HARNESS_ALLOWED);
    assert!(
        unexpected.is_empty(),
        "inferscope-harness reaches what a user's test target must not pull in:\n{}",
        unexpected.join("\n")
    );
    assert!(
        stale.is_empty(),
        "allowances with no such edge any more (remove them from HARNESS_ALLOWED): {stale:?}"
    );
}

/// The allowance check on synthetic chains: an allowed last hop passes, the same crate
/// reached through another parent does not, an allowance nothing uses is stale.
#[test]
fn harness_allowances_match_the_last_hop_only() {
    let chains = vec![
        "h → d → sim → axum".to_string(),
        "h → d → other → axum".to_string(),
    ];
    let allowed = [("sim", "axum", "why"), ("mimic", "clap", "why")];
    let (unexpected, stale) = unexpected_and_stale(&chains, &allowed);
    assert_eq!(unexpected, vec!["h → d → other → axum".to_string()]);
    assert_eq!(stale, vec!["mimic → clap (why)".to_string()]);
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

/// No member reaches a web framework: the simulator and the dashboard serve HTTP on hyper
/// with routers of their own, so axum is in no build of the product.
#[test]
fn no_member_reaches_axum() {
    let g = Graph::from_metadata(&metadata());
    let found: Vec<String> = MEMBERS
        .iter()
        .flat_map(|m| g.chains_to(m, |n| n == "axum"))
        .collect();
    assert!(found.is_empty(), "axum is back:\n{}", found.join("\n"));
}
