//! The module graph: which modules of the library — and of each workspace crate under
//! crates/ — use which, read from the sources. Every module (each `.rs` file, at every
//! depth) is a node. A path in code that starts with `crate::`, `super::`, `self::` or the
//! name of a child module declared with `mod` is an edge to the module it names, whether it
//! sits in a `use` (groups included) or inline in an expression or a type. Comments and
//! string literals are left out. `mod x;` and `pub use` re-exports are structure, not
//! edges; a path that goes through a `use` or a `pub use` (a crate root re-exporting its
//! modules' items) is followed to the module that defines the item, and so is a name a
//! glob (`use super::*;`) brings in; a `pub(…) use` whose name the same scope's code calls is
//! a use too. `#[cfg(test)]` modules are left out: tests are not the architecture. The graph
//! is one-way: any cycle fails, printed as `a → b → a`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module's path inside its crate, `[]` for the crate root.
type ModPath = Vec<String>;

/// `module → modules it uses`, by display name (`a::b`, `crate` for the root).
type Graph = BTreeMap<String, BTreeSet<String>>;

/// The source cut into tokens: identifiers, `::`, and single punctuation characters, with
/// comments, string, char and number literals left out.
fn tokens(text: &str) -> Vec<String> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == Some('*') {
            i = skip_block_comment(&c, i);
        } else if ch == '"' {
            i = skip_string(&c, i + 1);
        } else if ch == '\'' {
            i = skip_char_or_lifetime(&c, i);
        } else if ch.is_ascii_digit() {
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let word: String = c[start..i].iter().collect();
            match raw_or_prefixed_string(&c, i, &word) {
                Some(end) => i = end,
                None => out.push(word),
            }
        } else if ch == ':' && next == Some(':') {
            out.push("::".to_string());
            i += 2;
        } else {
            out.push(ch.to_string());
            i += 1;
        }
    }
    out
}

/// The index after a (nested) block comment opening at `i`.
fn skip_block_comment(c: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            i += 1;
        }
    }
    i
}

/// The index after the closing quote of a string whose body starts at `i`.
fn skip_string(c: &[char], mut i: usize) -> usize {
    while i < c.len() && c[i] != '"' {
        i += if c[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

/// The index after a char literal (`'x'`, `'\n'`) or after the quote of a lifetime (`'a`).
fn skip_char_or_lifetime(c: &[char], i: usize) -> usize {
    if c.get(i + 1) == Some(&'\\') {
        let mut j = i + 3;
        while j < c.len() && c[j] != '\'' {
            j += 1;
        }
        j + 1
    } else if c.get(i + 2) == Some(&'\'') {
        i + 3
    } else {
        i + 1
    }
}

/// When `word` (ending at `i`) prefixes a string literal (`b"…"`, `r#"…"#`, `br"…"`), the
/// index after that literal; `r#ident` raw identifiers and plain words give `None`.
fn raw_or_prefixed_string(c: &[char], i: usize, word: &str) -> Option<usize> {
    if !matches!(word, "r" | "b" | "br" | "c" | "cr") {
        return None;
    }
    if c.get(i) == Some(&'"') {
        if word.contains('r') {
            let end = (i + 1..c.len()).find(|&j| c[j] == '"')?;
            return Some(end + 1);
        }
        return Some(skip_string(c, i + 1));
    }
    let hashes = c[i..].iter().take_while(|&&x| x == '#').count();
    if !word.contains('r') || hashes == 0 || c.get(i + hashes) != Some(&'"') {
        return None;
    }
    let close: Vec<char> = std::iter::once('"')
        .chain(std::iter::repeat_n('#', hashes))
        .collect();
    let body = i + hashes + 1;
    let end = (body..c.len()).find(|&j| c[j..].starts_with(&close))?;
    Some(end + close.len())
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// One name a `use` brings into `scope`: `path` names it, `name` binds it (`None` for a
/// glob, `path` then names the module whose items come in).
#[derive(Debug, Clone)]
struct Use {
    scope: ModPath,
    path: ModPath,
    name: Option<String>,
    public: bool,
}

/// What one file says about modules, read from its tokens. Scopes are inline module paths
/// relative to the file (`[]` for the file's own module, `["tests"]` inside `mod tests {`).
#[derive(Debug, Default)]
struct FileFacts {
    /// `(scope, name, inline)` for each `mod name;` or `mod name { … }`.
    mods: Vec<(ModPath, String, bool)>,
    uses: Vec<Use>,
    /// `(scope, path)` for each path outside `use` items whose head is followed by `::`.
    paths: Vec<(ModPath, ModPath)>,
    /// `(scope, name)` of each item the file defines (fn, struct, enum, …).
    items: Vec<(ModPath, String)>,
    /// `(scope, identifier)` for each name the code names outside `use` items: a name a
    /// `pub(…) use` binds is a dependency too when code of the same scope calls it.
    names: Vec<(ModPath, String)>,
}

const ITEM_KEYWORDS: [&str; 8] = [
    "fn", "struct", "enum", "trait", "type", "const", "static", "union",
];

fn file_facts(text: &str) -> FileFacts {
    let t = tokens(text);
    let at = |j: usize| t.get(j).map(String::as_str).unwrap_or("");
    let mut facts = FileFacts::default();
    let mut depth = 0usize;
    // Inline modules open here: name, brace depth, and whether it is `#[cfg(test)]`.
    let mut inline: Vec<(String, usize, bool)> = Vec::new();
    let mut i = 0;
    while i < t.len() {
        let scope: ModPath = inline.iter().map(|(n, _, _)| n.clone()).collect();
        // Test modules are not the architecture: what they import is left out.
        let in_test = inline.iter().any(|(_, _, test)| *test);
        match at(i) {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d, _)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if is_ident(at(i + 1)) && matches!(at(i + 2), "{" | ";") => {
                let name = at(i + 1).to_string();
                let is_inline = at(i + 2) == "{";
                let cfg_test = i >= 7 && t[i - 7..i].join("") == "#[cfg(test)]";
                if !in_test {
                    facts.mods.push((scope, name.clone(), is_inline));
                }
                if is_inline {
                    inline.push((name, depth, in_test || cfg_test));
                    depth += 1;
                }
                i += 3;
                continue;
            }
            "use" => {
                let public = is_public(&t, i);
                let mut leaves = Vec::new();
                i = use_tree(&t, i + 1, Vec::new(), &mut leaves);
                if in_test {
                    leaves.clear();
                }
                for (path, name) in leaves {
                    facts.uses.push(Use {
                        scope: scope.clone(),
                        path,
                        name,
                        public,
                    });
                }
                continue;
            }
            _ if in_test => {}
            "macro_rules" if at(i + 1) == "!" && is_ident(at(i + 2)) => {
                facts.items.push((scope, at(i + 2).to_string()));
            }
            k if ITEM_KEYWORDS.contains(&k) && is_ident(at(i + 1)) => {
                facts.items.push((scope, at(i + 1).to_string()));
            }
            "$" if at(i + 1) == "crate" && at(i + 2) == "::" => {
                // `$crate::x` in a macro names this crate's root, as `crate::x` does.
                i += 1;
                continue;
            }
            w if is_ident(w) && at(i + 1) == "::" && (i == 0 || at(i - 1) != "::") => {
                let mut path = vec![w.to_string()];
                let mut j = i + 1;
                while at(j) == "::" && is_ident(at(j + 1)) {
                    path.push(at(j + 1).to_string());
                    j += 2;
                }
                facts.paths.push((scope, path));
                i = j;
                continue;
            }
            w if is_ident(w) => {
                facts.names.push((scope, w.to_string()));
            }
            _ => {}
        }
        i += 1;
    }
    facts
}

/// Whether the `use` at `i` carries a visibility (`pub`, `pub(crate)`, `pub(super)`): a
/// re-export.
fn is_public(t: &[String], i: usize) -> bool {
    match i.checked_sub(1).map(|j| t[j].as_str()) {
        Some("pub") => true,
        Some(")") => {
            let open = (0..i - 1).rev().find(|&j| t[j] == "(");
            open.is_some_and(|j| j > 0 && t[j - 1] == "pub")
        }
        _ => false,
    }
}

/// Reads the use tree starting at `i` under `prefix` into `out` as `(path, bound name)`
/// leaves; returns the index after it (after the `;` at the top level).
fn use_tree(
    t: &[String],
    mut i: usize,
    prefix: ModPath,
    out: &mut Vec<(ModPath, Option<String>)>,
) -> usize {
    let mut segs = prefix;
    while i < t.len() {
        match t[i].as_str() {
            "{" => {
                i += 1;
                while i < t.len() && t[i] != "}" {
                    i = use_tree(t, i, segs.clone(), out);
                    if t.get(i).is_some_and(|x| x == ",") {
                        i += 1;
                    }
                }
                return i + 1 + usize::from(t.get(i + 1).is_some_and(|x| x == ";"));
            }
            "*" => {
                out.push((segs, None));
                return end_of_leaf(t, i + 1);
            }
            "::" => i += 1,
            w if is_ident(w) => {
                segs.push(w.to_string());
                i += 1;
                if t.get(i).is_some_and(|x| x == "::") {
                    continue;
                }
                if segs.last().is_some_and(|s| s == "self") {
                    segs.pop();
                }
                let name = if t.get(i).is_some_and(|x| x == "as") {
                    i += 1;
                    t.get(i).cloned()
                } else {
                    segs.last().cloned()
                };
                out.push((segs, name));
                return end_of_leaf(t, i);
            }
            _ => return i + 1,
        }
    }
    i
}

/// Past the rest of a use leaf: up to a `,` or `}` of the enclosing group, or past the `;`.
fn end_of_leaf(t: &[String], mut i: usize) -> usize {
    while i < t.len() && !matches!(t[i].as_str(), "," | "}" | ";") {
        i += 1;
    }
    i + usize::from(t.get(i).is_some_and(|x| x == ";"))
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module a source file defines: `lib.rs`/`main.rs` → the root, `a/mod.rs` and `a.rs`
/// → `a`, `a/b.rs` → `a::b`.
fn module_of(rel: &Path) -> ModPath {
    let mut parts: ModPath = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    let at_top = parts.is_empty();
    if !(stem == "mod" || at_top && matches!(stem, "lib" | "main")) {
        parts.push(stem.to_string());
    }
    parts
}

fn display(m: &[String]) -> String {
    if m.is_empty() {
        "crate".to_string()
    } else {
        m.join("::")
    }
}

/// One crate's modules: which file each (inline modules included) lives in, and what each
/// scope defines and imports.
struct Crate {
    /// Every module path → the file module it lives in (itself, for a file).
    modules: BTreeMap<ModPath, ModPath>,
    /// Every scope → its `mod` children, defined items and `use`s.
    children: BTreeMap<ModPath, BTreeSet<String>>,
    items: BTreeMap<ModPath, BTreeSet<String>>,
    uses: BTreeMap<ModPath, Vec<Use>>,
    /// Each file module → `(scope, path)` of its inline paths.
    paths: BTreeMap<ModPath, Vec<(ModPath, ModPath)>>,
    /// Every scope → the identifiers its code names outside `use` items.
    names: BTreeMap<ModPath, BTreeSet<String>>,
}

impl Crate {
    fn read(src: &Path) -> Crate {
        let mut files = Vec::new();
        rs_files(src, &mut files);
        let mut c = Crate {
            modules: BTreeMap::new(),
            children: BTreeMap::new(),
            items: BTreeMap::new(),
            uses: BTreeMap::new(),
            paths: BTreeMap::new(),
            names: BTreeMap::new(),
        };
        for f in &files {
            let file = module_of(f.strip_prefix(src).unwrap());
            c.modules.insert(file.clone(), file.clone());
            let facts = file_facts(&std::fs::read_to_string(f).unwrap());
            let full = |scope: &ModPath| [file.clone(), scope.clone()].concat();
            for (scope, name, inline) in facts.mods {
                let mut child = full(&scope);
                c.children
                    .entry(child.clone())
                    .or_default()
                    .insert(name.clone());
                child.push(name);
                if inline {
                    c.modules.insert(child, file.clone());
                }
            }
            for (scope, name) in facts.items {
                c.items.entry(full(&scope)).or_default().insert(name);
            }
            for mut u in facts.uses {
                u.scope = full(&u.scope);
                c.uses.entry(u.scope.clone()).or_default().push(u);
            }
            let paths = facts.paths.into_iter().map(|(s, p)| (full(&s), p));
            c.paths.entry(file.clone()).or_default().extend(paths);
            for (scope, name) in facts.names {
                c.names.entry(full(&scope)).or_default().insert(name);
            }
        }
        c
    }

    /// The module a path used in `scope` names, `None` when it leaves the crate.
    fn resolve(&self, scope: &[String], path: &[String], fuel: usize) -> Option<ModPath> {
        let head = path.first()?.as_str();
        let (start, rest): (ModPath, &[String]) = match head {
            "crate" => (Vec::new(), &path[1..]),
            "self" => (scope.to_vec(), &path[1..]),
            "super" => {
                let ups = path.iter().take_while(|s| *s == "super").count();
                let start = scope[..scope.len().checked_sub(ups)?].to_vec();
                (start, &path[ups..])
            }
            name if self.children.get(scope).is_some_and(|c| c.contains(name)) => {
                (scope.to_vec(), path)
            }
            // A name a `use` of this scope binds (`use x::Kind as K;` … `K::A`), or one a
            // glob brings in (`use super::*;` … `sibling::f()`).
            name => {
                let uses = self.uses.get(scope).map(Vec::as_slice).unwrap_or(&[]);
                let Some(u) = uses.iter().find(|u| u.name.as_deref() == Some(name)) else {
                    return self.through_glob(uses, path, fuel);
                };
                if fuel == 0 || u.path.len() == 1 && u.path[0] == name {
                    return None;
                }
                let path = [u.path.as_slice(), &path[1..]].concat();
                return self.resolve(&u.scope, &path, fuel - 1);
            }
        };
        self.walk(start, rest, fuel)
    }

    /// `path`, whose head no `use` of its scope binds by name, through the scope's glob
    /// imports: the first glob whose module has the head as a child module, an item or a
    /// name of its own `use`s.
    fn through_glob(&self, uses: &[Use], path: &[String], fuel: usize) -> Option<ModPath> {
        let head = path.first()?;
        if fuel == 0 {
            return None;
        }
        for u in uses.iter().filter(|u| u.name.is_none()) {
            let Some(from) = self.resolve(&u.scope, &u.path, fuel - 1) else {
                continue;
            };
            let child = self.children.get(&from).is_some_and(|c| c.contains(head));
            let item = self.items.get(&from).is_some_and(|i| i.contains(head));
            let named = self
                .uses
                .get(&from)
                .is_some_and(|us| us.iter().any(|u| u.name.as_ref() == Some(head)));
            if child || item || named {
                return self.walk(from, path, fuel - 1);
            }
        }
        None
    }

    /// Follows `rest` down from module `cur`; a name that is not a module is an item of
    /// `cur`, and when `cur` imports it (`use`, `pub use`, a glob) rather than defining
    /// it, the path is followed to where it comes from.
    fn walk(&self, mut cur: ModPath, rest: &[String], fuel: usize) -> Option<ModPath> {
        for (j, seg) in rest.iter().enumerate() {
            if seg == "super" {
                cur.pop();
                continue;
            }
            let mut next = cur.clone();
            next.push(seg.clone());
            if self.modules.contains_key(&next) {
                cur = next;
                continue;
            }
            let defined = self.items.get(&cur).is_some_and(|i| i.contains(seg));
            if fuel == 0 || defined {
                return Some(cur);
            }
            let uses = self.uses.get(&cur).map(Vec::as_slice).unwrap_or(&[]);
            if let Some(u) = uses.iter().find(|u| u.name.as_ref() == Some(seg)) {
                let path = [u.path.as_slice(), &rest[j + 1..]].concat();
                return self.resolve(&u.scope, &path, fuel - 1);
            }
            for u in uses.iter().filter(|u| u.name.is_none()) {
                let Some(from) = self.resolve(&u.scope, &u.path, fuel - 1) else {
                    continue;
                };
                let has = |m: &ModPath| {
                    self.items.get(m).is_some_and(|i| i.contains(seg))
                        || self
                            .uses
                            .get(m)
                            .is_some_and(|us| us.iter().any(|u| u.name.as_ref() == Some(seg)))
                };
                if has(&from) {
                    return self.walk(from, &rest[j..], fuel - 1);
                }
            }
            return Some(cur);
        }
        Some(cur)
    }

    /// `file module → file modules it uses`: every inline path and every private `use`,
    /// resolved; `pub use` re-exports and `mod` declarations are left out.
    fn graph(&self) -> Graph {
        const FUEL: usize = 16;
        let mut g: Graph = BTreeMap::new();
        for file in self.modules.values() {
            g.entry(display(file)).or_default();
        }
        let mut edge = |from: &ModPath, scope: &[String], path: &[String]| {
            let to = self.resolve(scope, path, FUEL);
            if let Some(to) = to.and_then(|m| self.modules.get(&m))
                && to != from
            {
                g.get_mut(&display(from)).unwrap().insert(display(to));
            }
        };
        for (file, paths) in &self.paths {
            for (scope, path) in paths {
                edge(file, scope, path);
            }
        }
        for (scope, uses) in &self.uses {
            let file = &self.modules[scope];
            // A re-export is structure; one that code of its scope also calls is a use.
            let names = self.names.get(scope);
            let called = |u: &Use| {
                u.name
                    .as_ref()
                    .is_some_and(|n| names.is_some_and(|ns| ns.contains(n)))
            };
            for u in uses.iter().filter(|u| !u.public || called(u)) {
                edge(file, scope, &u.path);
            }
        }
        g
    }
}

fn graph(src: &Path) -> Graph {
    Crate::read(src).graph()
}

/// One cycle through each strongly connected group of modules, as `a → b → a`.
fn cycles(g: &Graph) -> Vec<String> {
    let mut out = Vec::new();
    let mut done: BTreeSet<&String> = BTreeSet::new();
    for start in g.keys() {
        if done.contains(start) {
            continue;
        }
        let group: BTreeSet<&String> = g
            .keys()
            .filter(|n| reach(g, start, n).is_some() && reach(g, n, start).is_some())
            .collect();
        done.extend(group.iter().copied());
        if group.len() < 2 {
            continue;
        }
        let first = g[start].iter().find(|n| group.contains(n)).unwrap();
        let mut path = reach(g, first, start).unwrap();
        path.insert(0, start.clone());
        let mut line = path.join(" → ");
        if group.len() + 1 > path.len() {
            let all: Vec<&str> = group.iter().map(|n| n.as_str()).collect();
            line += &format!("  (all of: {})", all.join(", "));
        }
        out.push(line);
    }
    out
}

/// The shortest path `from → … → to` (both ends included), if there is one.
fn reach(g: &Graph, from: &String, to: &String) -> Option<Vec<String>> {
    let mut prev: BTreeMap<&String, &String> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    while let Some(n) = queue.pop_front() {
        if n == to {
            let mut path = vec![n.clone()];
            let mut at = n;
            while let Some(p) = prev.get(at) {
                path.push((*p).clone());
                at = p;
            }
            path.reverse();
            return Some(path);
        }
        for m in &g[n] {
            if seen.insert(m) {
                prev.insert(m, n);
                queue.push_back(m);
            }
        }
    }
    None
}

/// Every source dir checked: the root package's `src/` and each `crates/*/src`.
fn source_dirs() -> Vec<(String, PathBuf)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = vec![("src".to_string(), root.join("src"))];
    for e in std::fs::read_dir(root.join("crates")).unwrap() {
        let src = e.unwrap().path().join("src");
        if src.is_dir() {
            let name = src.strip_prefix(root).unwrap().to_string_lossy();
            dirs.push((name.replace('\\', "/"), src));
        }
    }
    dirs.sort();
    dirs
}

#[test]
fn no_import_cycle_between_modules_of_any_crate() {
    let dirs = source_dirs();
    assert!(dirs.len() >= 7, "expected the workspace crates: {dirs:?}");
    let mut found = Vec::new();
    for (name, src) in &dirs {
        let g = graph(src);
        found.extend(cycles(&g).into_iter().map(|c| format!("{name}: {c}")));
    }
    assert!(
        found.is_empty(),
        "import cycles between modules (the direction must be one-way):\n{}",
        found.join("\n")
    );
}

/// Writes the files `(path, text)` under a fresh temp dir and returns its graph's cycles.
fn planted(files: &[(&str, &str)]) -> (Graph, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    for (p, t) in files {
        let f = dir.path().join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, t).unwrap();
    }
    let g = graph(dir.path());
    let c = cycles(&g);
    (g, c)
}

/// The checker itself: a two-module cycle is found, a one-way pair is not, grouped and
/// inline paths count, comments do not.
#[test]
fn the_cycle_check_sees_grouped_inline_and_ignores_comments() {
    let (g, found) = planted(&[
        ("lib.rs", "pub mod a; pub mod b; pub mod c;"),
        ("a.rs", "use crate::{b::X, c};\n"),
        ("b/mod.rs", "fn f() { crate::a::g() }\n"),
        (
            "c.rs",
            "// crate::a is only mentioned\n/* crate::b */ const S: &str = \"crate::a\";\n",
        ),
    ]);
    assert_eq!(found, ["a → b → a"]);
    assert!(g["a"].contains("c") && g["c"].is_empty(), "{g:?}");
}

/// Siblings that call each other through `super::` close a cycle.
#[test]
fn the_cycle_check_sees_sibling_calls_through_super() {
    let (_, found) = planted(&[
        ("lib.rs", "mod m;"),
        ("m/mod.rs", "mod a;\nmod b;\n"),
        ("m/a.rs", "pub fn g() {}\nfn h() { super::b::f() }\n"),
        ("m/b.rs", "pub fn f() {}\nfn k() { super::a::g(); }\n"),
    ]);
    assert_eq!(found, ["m::a → m::b → m::a"]);
    let (_, found) = planted(&[
        ("lib.rs", "mod m;\n"),
        ("m/mod.rs", "mod x;\nmod b;\n"),
        ("m/x/mod.rs", "mod a;\n"),
        ("m/x/a.rs", "pub fn g() {}\nuse super::super::b::f;\n"),
        (
            "m/b.rs",
            "pub fn f() {}\nfn k() { self::super::x::a::g(); }\n",
        ),
    ]);
    assert_eq!(
        found,
        ["m::b → m::x::a → m::b"],
        "deeper super:: chains and self::"
    );
}

/// A child that uses an item its parent file defines, while the parent calls into the
/// child by its bare name, closes a cycle; so does the same through a `use`.
#[test]
fn the_cycle_check_sees_a_child_sharing_its_parents_item() {
    let (_, found) = planted(&[
        ("lib.rs", "pub mod v;"),
        (
            "v/mod.rs",
            "mod child;\npub struct Ctx;\npub fn go(c: &Ctx) { child::run(c) }\n",
        ),
        ("v/child.rs", "use super::Ctx;\npub fn run(_: &Ctx) {}\n"),
    ]);
    assert_eq!(found, ["v → v::child → v"]);
    let (_, found) = planted(&[
        ("lib.rs", "pub mod v;"),
        ("v/mod.rs", "mod child;\nuse child::run;\npub struct Ctx;\n"),
        ("v/child.rs", "pub fn run(_: &super::Ctx) {}\n"),
    ]);
    assert_eq!(found, ["v → v::child → v"], "a bare child path in a use");
}

/// A sibling named through a glob of the parent (`use super::*;` … `b::f()`), and a name a
/// `pub(crate) use` binds that the file's own code calls, are uses: each closes its cycle.
#[test]
fn the_cycle_check_sees_names_through_globs_and_called_re_exports() {
    let (_, found) = planted(&[
        ("lib.rs", "pub mod m;"),
        (
            "m/mod.rs",
            "mod a;
mod b;
",
        ),
        (
            "m/a.rs",
            "use super::*;
pub fn g() { b::f() }
",
        ),
        (
            "m/b.rs",
            "pub fn f() { super::a::g() }
",
        ),
    ]);
    assert_eq!(found, ["m::a → m::b → m::a"], "a sibling through a glob");
    let (_, found) = planted(&[
        ("lib.rs", "pub mod m;"),
        (
            "m/mod.rs",
            "mod a;
mod b;
",
        ),
        (
            "m/a.rs",
            "pub(crate) use super::b::f;
pub fn g() { f() }
",
        ),
        (
            "m/b.rs",
            "pub fn f() { super::a::g() }
",
        ),
    ]);
    assert_eq!(found, ["m::a → m::b → m::a"], "a called pub(crate) use");
    let (_, found) = planted(&[
        ("lib.rs", "pub mod m;"),
        (
            "m/mod.rs",
            "mod a;
mod b;
",
        ),
        (
            "m/a.rs",
            "pub(crate) use super::b::f;
pub fn g() {}
",
        ),
        (
            "m/b.rs",
            "pub fn f() { super::a::g() }
",
        ),
    ]);
    assert!(found.is_empty(), "a re-export only: {found:?}");
    let (_, found) = planted(&[
        ("lib.rs", "pub mod m;"),
        (
            "m/mod.rs",
            "mod a;\npub struct X;\n#[cfg(test)]\nmod tests { use super::*; fn t() { a::g(); } }\n",
        ),
        ("m/a.rs", "pub fn g() -> super::X { super::X }\n"),
    ]);
    assert!(
        found.is_empty(),
        "a test module is not the architecture: {found:?}"
    );
}

/// One-way pairs, paths in comments and strings, a test module using its parent, and a
/// parent (or crate root) that only re-exports its children's items are not cycles: a
/// path through a re-export reaches the module that defines the item.
#[test]
fn the_cycle_check_ignores_one_way_pairs_and_re_exports() {
    let (g, found) = planted(&[
        (
            "lib.rs",
            "mod a;\nmod b;\nmod v;\npub use a::{A, Also as Other};\npub use v::*;\n",
        ),
        (
            "a.rs",
            "pub struct A;\npub struct Also;\n// crate::b::B\n#[cfg(test)]\nmod tests { use super::*; }\n",
        ),
        (
            "b.rs",
            "pub struct B;\nconst S: &str = \"crate::v::X\";\nfn f() -> crate::Other { crate::A; crate::run(); todo!() }\n",
        ),
        (
            "v/mod.rs",
            "mod ctx;\nmod child;\npub use ctx::Ctx;\npub use child::run;\n",
        ),
        ("v/ctx.rs", "pub struct Ctx;\n"),
        (
            "v/child.rs",
            "use super::Ctx;\npub fn run(_: &Ctx) { crate::A; }\n",
        ),
    ]);
    assert!(found.is_empty(), "{found:?}\n{g:?}");
    let set = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
    assert_eq!(g["a"], set(&[]), "{g:?}");
    assert_eq!(g["b"], set(&["a", "v::child"]), "{g:?}");
    assert_eq!(g["v::child"], set(&["a", "v::ctx"]), "{g:?}");
    assert!(g["crate"].is_empty() && g["v"].is_empty(), "{g:?}");
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
