//! The module graph (issue 14): which top-level modules of the library — and of each
//! workspace crate under crates/ — import which,
//! read from the sources (`crate::X` paths outside comments, `use crate::{X, Y}` groups
//! included). The graph is one-way: any edge that lies on an import cycle fails.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The top-level module a source file belongs to (`src/x.rs` and `src/x/**` → `x`);
/// `None` for the crate roots.
fn module_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (!matches!(name, "lib" | "main")).then(|| name.to_string())
}

/// Every top-level module named after `crate::` in `text`, comments left out.
fn imports(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        let mut rest = code;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                group[..end]
                    .split(',')
                    .map(|n| n.trim().split("::").next().unwrap_or("").trim())
                    .collect()
            } else {
                let end = rest
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(rest.len());
                vec![&rest[..end]]
            };
            for n in names {
                if modules.contains(n) {
                    out.insert(n.to_string());
                }
            }
        }
    }
    out
}

fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `module → modules it imports`, self-edges left out.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rs_files(src, &mut files);
    let modules: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_of(f.strip_prefix(src).unwrap()))
        .collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for f in &files {
        let Some(m) = module_of(f.strip_prefix(src).unwrap()) else {
            continue;
        };
        let text = std::fs::read_to_string(f).unwrap();
        for to in imports(&text, &modules) {
            if to != m {
                g.get_mut(&m).unwrap().insert(to);
            }
        }
    }
    g
}

fn reaches(g: &BTreeMap<String, BTreeSet<String>>, from: &str, to: &str) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from.to_string()];
    while let Some(n) = stack.pop() {
        if n == to {
            return true;
        }
        if seen.insert(n.clone()) {
            stack.extend(g[&n].iter().cloned());
        }
    }
    false
}

/// Edges `a → b` where `b` reaches `a` again.
fn cycle_edges(g: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<(String, String)> {
    g.iter()
        .flat_map(|(a, tos)| tos.iter().map(move |b| (a.clone(), b.clone())))
        .filter(|(a, b)| reaches(g, b, a))
        .collect()
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let g = graph(&src);
    let found: Vec<String> = cycle_edges(&g)
        .iter()
        .map(|(a, b)| format!("{a} → {b}"))
        .collect();
    assert!(
        found.is_empty(),
        "import edges that close a cycle (the direction must be one-way):\n{}",
        found.join("\n")
    );
}

/// Inside every workspace crate (crates/*/src) no import cycle at all between its
/// top-level modules: the crates were cut along one-way edges and stay so.
#[test]
fn no_import_cycle_inside_any_workspace_crate() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates");
    let mut seen = 0;
    let mut found = Vec::new();
    for e in std::fs::read_dir(&crates).unwrap() {
        let src = e.unwrap().path().join("src");
        if !src.is_dir() {
            continue;
        }
        seen += 1;
        for (a, b) in cycle_edges(&graph(&src)) {
            found.push(format!("{}: {a} → {b}", src.display()));
        }
    }
    assert!(
        seen >= 6,
        "expected the workspace crates under {}",
        crates.display()
    );
    assert!(
        found.is_empty(),
        "import edges that close a cycle inside a crate:\n{}",
        found.join("\n")
    );
}

/// The checker itself: a two-module cycle is found, a one-way pair is not, grouped and
/// inline paths count, comments do not.
#[test]
fn the_cycle_check_sees_grouped_inline_and_ignores_comments() {
    let dir = tempfile::tempdir().unwrap();
    let w = |p: &str, t: &str| {
        let f = dir.path().join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, t).unwrap();
    };
    w("lib.rs", "pub mod a; pub mod b; pub mod c;");
    w("a.rs", "use crate::{b::X, c};\n");
    w("b/mod.rs", "fn f() { crate::a::g() }\n");
    w("c.rs", "// crate::a is only mentioned\n");
    let g = graph(dir.path());
    let found = cycle_edges(&g);
    let want: BTreeSet<(String, String)> = [("a", "b"), ("b", "a")]
        .iter()
        .map(|(x, y)| (x.to_string(), y.to_string()))
        .collect();
    assert_eq!(found, want);
    assert!(g["a"].contains("c") && g["c"].is_empty());
}

/// No file outside `src/cli/` and `src/main.rs` names clap: flags are parsed in `cli` and
/// handed on as plain config (or, for a command's own flags, read by its file under
/// `commands/`).

#[test]
fn clap_stays_in_cli() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rs_files(&src, &mut files);
    let mut found = BTreeSet::new();
    for f in &files {
        let rel = f
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if rel.starts_with("cli/") || rel == "main.rs" {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let uses_clap = text.lines().any(|l| {
            let code = l.split("//").next().unwrap_or("");
            code.contains("use clap")
                || [
                    "clap::Args",
                    "clap::Parser",
                    "clap::ValueEnum",
                    "clap::Subcommand",
                    "clap::value_parser",
                ]
                .iter()
                .any(|t| code.contains(t))
        });
        if uses_clap {
            found.insert(rel);
        }
    }
    assert!(found.is_empty(), "clap outside src/cli/: {found:?}");
}
