//! BENCHMARKS.md is a reference, not a notebook: at most 300 lines, one
//! table of current figures where every row names its basis, a method section that
//! exists, a command whose scripts and benchmarks exist, a machine the page describes and
//! a date; and every quoted reference to one of its sections (`BENCHMARKS.md "Client
//! cost"`) in the code, scripts and docs names a heading it has.
//!
//! What it cannot check is the figure itself: no test asserts a wall-clock figure.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::support;

const MAX_LINES: usize = 300;
const COLUMNS: [&str; 7] = [
    "figure",
    "value",
    "basis",
    "method",
    "command",
    "machine, load",
    "date",
];

fn benchmarks_md() -> String {
    fs::read_to_string(support::repo().join("BENCHMARKS.md")).unwrap()
}

/// Heading texts of a Markdown page (outside ``` fences), without the `#`s.
fn headings(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(line.trim_start_matches('#').trim().to_string());
        }
    }
    out
}

/// GitHub's anchor of a heading: lowercased, punctuation other than `-` and `_` dropped,
/// spaces made `-`.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The cells of a table row, split at unescaped `|`.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                out.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

/// The rows of the table under `## Current figures`: header first.
fn current_table(text: &str) -> Vec<Vec<String>> {
    let section = text
        .split("\n## Current figures\n")
        .nth(1)
        .expect("a `## Current figures` section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|---"))
        .map(cells)
        .collect()
}

/// The `[[bench]]` names of the root package and every crate.
fn bench_names() -> BTreeSet<String> {
    let root = support::repo();
    let mut manifests = vec![root.join("Cargo.toml")];
    for e in fs::read_dir(root.join("crates")).unwrap().flatten() {
        manifests.push(e.path().join("Cargo.toml"));
    }
    let mut names = BTreeSet::new();
    for m in manifests {
        let Ok(text) = fs::read_to_string(&m) else {
            continue;
        };
        let mut in_bench = false;
        for line in text.lines() {
            let line = line.trim();
            if line.starts_with('[') {
                in_bench = line == "[[bench]]";
            } else if in_bench && let Some(v) = line.strip_prefix("name = ") {
                names.insert(v.trim_matches('"').to_string());
            }
        }
    }
    names
}

/// The problems of one row's command cell: a `--bench NAME` that no manifest declares, a
/// `benchmarks/…` or `scripts/…` path that does not exist.
fn command_problems(command: &str, benches: &BTreeSet<String>) -> Vec<String> {
    let mut out = Vec::new();
    let words: Vec<&str> = command
        .split(|c: char| c.is_whitespace() || c == '`' || c == '(' || c == ')' || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    for (i, w) in words.iter().enumerate() {
        if *w == "--bench"
            && let Some(name) = words.get(i + 1)
            && !benches.contains(*name)
        {
            out.push(format!("no [[bench]] named {name}"));
        }
        if (w.starts_with("benchmarks/") || w.starts_with("scripts/"))
            && !support::repo().join(w).exists()
        {
            out.push(format!("{w} does not exist"));
        }
    }
    out
}

#[test]
fn benchmarks_md_is_one_table_of_current_figures_each_reproducible() {
    let text = benchmarks_md();
    let lines = text.lines().count();
    assert!(
        lines <= MAX_LINES,
        "BENCHMARKS.md has {lines} lines (at most {MAX_LINES})"
    );

    let heads = headings(&text);
    let anchors: BTreeSet<String> = heads.iter().map(|h| slug(h)).collect();
    let machines: Vec<String> = text
        .split("\n## Machines\n")
        .nth(1)
        .expect("a `## Machines` section")
        .lines()
        .filter_map(|l| l.strip_prefix("- **")?.split("**").next())
        .map(str::to_string)
        .collect();
    assert!(!machines.is_empty(), "no machine under `## Machines`");
    let benches = bench_names();
    assert!(benches.contains("client_fidelity"), "{benches:?}");

    let table = current_table(&text);
    assert_eq!(table[0], COLUMNS, "the current figures' columns");
    assert!(table.len() > 10, "only {} rows", table.len() - 1);
    let mut problems = Vec::new();
    let mut command = String::new();
    for row in &table[1..] {
        let at = |m: String| format!("row `{}`: {m}", row[0]);
        if row.len() != COLUMNS.len() {
            problems.push(at(format!("{} cells, not {}", row.len(), COLUMNS.len())));
            continue;
        }
        for (name, cell) in COLUMNS.iter().zip(row) {
            if cell.is_empty() {
                problems.push(at(format!("empty {name}")));
            }
        }
        match row[3].split("](#").nth(1).and_then(|r| r.split(')').next()) {
            Some(a) if anchors.contains(a) => {}
            _ => problems.push(at(format!("method {} links to no section", row[3]))),
        }
        if row[4] != "as above" {
            command = row[4].clone();
            if !command.contains('`') {
                problems.push(at("the command is not written as code".to_string()));
            }
        }
        if command.is_empty() {
            problems.push(at("`as above` with no row above".to_string()));
        }
        problems.extend(command_problems(&command, &benches).into_iter().map(&at));
        if !machines.iter().any(|m| row[5].starts_with(m.as_str())) {
            problems.push(at(format!("machine {} is not one of {machines:?}", row[5])));
        }
        let d = row[6].as_bytes();
        let date = d.len() == 10
            && d.iter().enumerate().all(|(i, b)| {
                if i == 4 || i == 7 {
                    *b == b'-'
                } else {
                    b.is_ascii_digit()
                }
            });
        if !date {
            problems.push(at(format!("date {} is not YYYY-MM-DD", row[6])));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        heads.iter().any(|h| h.starts_with("Real GPU")),
        "the Real GPU notice is gone"
    );
}

fn files(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            if name != "target" && !name.starts_with('.') {
                files(&p, exts, out);
            }
        } else if exts.iter().any(|x| name.ends_with(x)) {
            out.push(p);
        }
    }
}

/// The quoted sections after `BENCHMARKS.md` or `BENCHMARKS` on a line (`BENCHMARKS.md
/// "Client cost"`, `BENCHMARKS.md, "Client cost"`, `BENCHMARKS "Real GPU"`).
fn quoted_sections(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in line.match_indices("BENCHMARKS") {
        let rest = &line[i + "BENCHMARKS".len()..];
        let rest = rest.strip_prefix(".md").unwrap_or(rest);
        let rest = rest.strip_prefix(',').unwrap_or(rest);
        let Some(q) = rest.strip_prefix(" \"") else {
            continue;
        };
        if let Some(end) = q.find('"') {
            out.push(q[..end].to_string());
        }
    }
    out
}

#[test]
fn every_quoted_benchmarks_section_exists() {
    let heads: Vec<String> = headings(&benchmarks_md())
        .iter()
        .map(|h| h.to_lowercase())
        .collect();
    let root = support::repo();
    let mut paths = vec![root.join("README.md")];
    for dir in [
        "crates",
        "src",
        "tests",
        "benchmarks",
        "scripts",
        "docs",
        ".ci",
    ] {
        files(
            &root.join(dir),
            &[".rs", ".md", ".sh", ".py", "run"],
            &mut paths,
        );
    }
    let mut checked = 0;
    let mut problems = Vec::new();
    for p in &paths {
        let text = fs::read_to_string(p).unwrap_or_default();
        for (n, line) in text.lines().enumerate() {
            for s in quoted_sections(line) {
                checked += 1;
                let s = s.to_lowercase();
                if !heads.iter().any(|h| h.starts_with(&s)) {
                    problems.push(format!(
                        "{}:{}: BENCHMARKS.md has no section \"{s}\"",
                        p.strip_prefix(&root).unwrap().display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(checked >= 4, "only {checked} references found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checks_find_what_they_look_for() {
    assert_eq!(
        slug("Real GPU — not yet measured"),
        "real-gpu--not-yet-measured"
    );
    assert_eq!(
        slug("A real model: SmolLM2-135M-Instruct"),
        "a-real-model-smollm2-135m-instruct"
    );
    assert_eq!(cells("| a \\| b | `c` |"), ["a | b", "`c`"]);
    assert_eq!(
        // Spelled in pieces so that the scan of this file does not read it as a reference.
        quoted_sections(concat!(
            "see BENCH",
            "MARKS.md \"Client cost\" and BENCH",
            "MARKS, \"x\" and BENCH",
            "MARKS \"Real GPU\""
        )),
        ["Client cost", "x", "Real GPU"]
    );
    let benches = BTreeSet::from(["attribution".to_string()]);
    assert!(command_problems("`cargo bench --bench attribution`", &benches).is_empty());
    assert_eq!(
        command_problems(
            "`cargo bench --bench nope` then `bash benchmarks/nope.sh`",
            &benches
        ),
        [
            "no [[bench]] named nope",
            "benchmarks/nope.sh does not exist"
        ]
    );
}
