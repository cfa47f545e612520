//! Every reference to the project's documentation resolves.
//!
//! Scans `crates/`, `src/`, `tests/` and `benchmarks/` (`.rs` files), `README.md` and
//! `docs/*.md`, and fails, naming `file:line`, on:
//!
//! - a reference to a page under `docs/` that does not exist, or one garbled into a section
//!   number (`docs/<page>.md–4.3`);
//! - a quoted section after a page, `docs/<page>.md "Section"` (also after `:` or `,`, or
//!   inside `(`), that is not the text of a heading of that page (a line starting with `#`,
//!   outside code fences; compared case-insensitively), or whose closing quote is not on the
//!   same line;
//! - in `.rs` files: a citation of a document that is not in this repository (the design
//!   notes, ADRs, the outside suite schema, anything under the shared notes directory);
//! - in `.rs` files: a field case id (`C07`) without its section in `docs/field-cases.md`.
//!
//! The banned spellings are assembled with `concat!` so this file does not cite them itself.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// Citations of documents that live outside the repository.
const OUTSIDE: [&str; 7] = [
    concat!("DESIGN", " §"),
    concat!("DESIGN", ".md"),
    concat!("SUITE_SCHEMA", ".md"),
    concat!("shared", "/"),
    concat!("rust-", "conventions"),
    concat!("cases/", "README.md"),
    concat!("reference", " §"),
];

/// The one file allowed to name an ADR: `src/offline/inferscope.rs` reads reports of the
/// inferscope project, and its message names that project's own ADR, not one of ours.
const ADR_ALLOWED: &str = "src/offline/inferscope.rs";

/// The headings of each page under `docs/`, lowercased, and the field case ids.
struct Docs {
    headings: BTreeMap<String, Vec<String>>,
    cases: Vec<String>,
}

impl Docs {
    fn from_pages(pages: &[(String, String)]) -> Docs {
        let mut headings: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, text) in pages {
            headings.insert(name.clone(), page_headings(text));
        }
        let cases: Vec<String> = headings
            .get("field-cases.md")
            .map(|hs| hs.iter().filter_map(|h| case_id(h, 0)).collect())
            .unwrap_or_default();
        Docs { headings, cases }
    }
}

/// Heading texts (without the `#`s), lowercased; lines inside ``` fences are skipped.
fn page_headings(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            out.push(line.trim_start_matches('#').trim().to_lowercase());
        }
    }
    out
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `C` and two digits starting at byte `at` of `s`, as a whole word: `Some("C07")`.
fn case_id(s: &str, at: usize) -> Option<String> {
    let b = s.as_bytes();
    let word = b.len() >= at + 3
        && (b[at] == b'C' || b[at] == b'c')
        && b[at + 1].is_ascii_digit()
        && b[at + 2].is_ascii_digit()
        && (at == 0 || !is_word_byte(b[at - 1]))
        && (b.len() == at + 3 || !is_word_byte(b[at + 3]));
    word.then(|| format!("C{}", &s[at + 1..at + 3]))
}

/// `ADR-0` followed by two digits.
fn cites_adr(line: &str) -> bool {
    let b = line.as_bytes();
    line.match_indices("ADR-0")
        .any(|(i, _)| b.len() >= i + 7 && b[i + 5].is_ascii_digit() && b[i + 6].is_ascii_digit())
}

/// The problems of one line of `file` (a path relative to the repository root).
fn check_line(file: &str, n: usize, line: &str, docs: &Docs, errors: &mut Vec<String>) {
    let at = |msg: String| format!("{file}:{n}: {msg}");
    let mut rest = line;
    while let Some(i) = rest.find("docs/") {
        let after = &rest[i + 5..];
        let name_len = after
            .bytes()
            .take_while(|&b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            .count();
        rest = &after[name_len..];
        if name_len == 0 || !rest.starts_with(".md") {
            continue;
        }
        let name = format!("{}.md", &after[..name_len]);
        rest = &rest[3..];
        let Some(headings) = docs.headings.get(&name) else {
            errors.push(at(format!("docs/{name} does not exist")));
            continue;
        };
        if rest.starts_with('–') {
            errors.push(at(format!("docs/{name} followed by a section number")));
            continue;
        }
        // A quoted section: `docs/<page>.md "…"`, also after `:` or `,` and inside `(`.
        let tail = rest.strip_prefix([':', ',']).unwrap_or(rest);
        let spaced = tail.trim_start();
        if spaced.len() == tail.len() {
            continue;
        }
        let Some(quoted) = spaced
            .strip_prefix("(\"")
            .or_else(|| spaced.strip_prefix('"'))
        else {
            continue;
        };
        match quoted.find('"') {
            None => errors.push(at(format!(
                "docs/{name}: section quote not closed on this line"
            ))),
            Some(end) => {
                let section = quoted[..end].trim().to_lowercase();
                if !headings.contains(&section) {
                    errors.push(at(format!(
                        "docs/{name} has no heading \"{}\"",
                        &quoted[..end]
                    )));
                }
                rest = &quoted[end + 1..];
            }
        }
    }
    if !file.ends_with(".rs") {
        return;
    }
    for outside in OUTSIDE {
        if line.contains(outside) {
            errors.push(at(format!(
                "cites {outside:?}, which is not in the repository"
            )));
        }
    }
    if cites_adr(line) && file != ADR_ALLOWED {
        errors.push(at(
            "cites an ADR, which is not in the repository".to_string()
        ));
    }
    for id in line
        .match_indices('C')
        .filter_map(|(i, _)| case_id(line, i))
    {
        if !docs.cases.contains(&id) {
            errors.push(at(format!(
                "field case {id} has no section in docs/field-cases.md"
            )));
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            if name != "target" && !name.starts_with('.') {
                rust_files(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_docs_reference_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = Vec::new();
    let mut files = vec![root.join("README.md")];
    for entry in fs::read_dir(root.join("docs")).expect("docs/").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") {
            let text = fs::read_to_string(entry.path()).expect("a docs page");
            pages.push((name, text));
            files.push(entry.path());
        }
    }
    let docs = Docs::from_pages(&pages);
    for dir in ["crates", "src", "tests", "benchmarks"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    let mut errors = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{rel}: {e}"));
        for (i, line) in text.lines().enumerate() {
            check_line(&rel, i + 1, line, &docs, &mut errors);
        }
    }
    assert!(files.len() > 100, "only {} files scanned", files.len());
    assert!(
        errors.is_empty(),
        "{} broken doc references:\n{}",
        errors.len(),
        errors.join("\n")
    );
}

#[test]
fn the_scanner_finds_missing_pages_and_sections() {
    let page = "# Guide\n\n## Setup\n\n```\n# Not a heading\n```\n\n## C07: a case\n".to_string();
    let docs = Docs::from_pages(&[
        ("guide.md".to_string(), page.clone()),
        ("field-cases.md".to_string(), page),
    ]);
    let lines = [
        concat!(
            "/// see docs/",
            "guide.md \"setup\" and docs/",
            "guide.md (fine)"
        ),
        concat!("/// see docs/", "missing.md"),
        concat!("/// see docs/", "guide.md \"Teardown\""),
        concat!("/// see docs/", "guide.md \"Not a heading\""),
        concat!("/// see docs/", "guide.md: \"Setup"),
        "/// field case C07 is known, C08 is not; C123 and XC08 are not case ids",
        concat!("// ", "ADR", "-013"),
    ];
    let mut errors = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        check_line("x.rs", i + 1, line, &docs, &mut errors);
    }
    let want = [
        concat!("x.rs:2: docs/", "missing.md does not exist"),
        concat!("x.rs:3: docs/", "guide.md has no heading \"Teardown\""),
        concat!("x.rs:4: docs/", "guide.md has no heading \"Not a heading\""),
        concat!(
            "x.rs:5: docs/",
            "guide.md: section quote not closed on this line"
        ),
        "x.rs:6: field case C08 has no section in docs/field-cases.md",
        "x.rs:7: cites an ADR, which is not in the repository",
    ];
    assert_eq!(errors, want);
    let mut allowed = Vec::new();
    check_line(ADR_ALLOWED, 1, lines[6], &docs, &mut allowed);
    assert!(allowed.is_empty(), "{allowed:?}");
}
