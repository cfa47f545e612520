//! The parsed TOML document with spans: dotted field paths ↔ byte spans.
//!
//! Built once from `toml::de::DeTable` so that every later error (serde type errors,
//! semantic validation) is reported at the exact key or value with its dotted path.

use std::ops::Range;

use toml::de::{DeTable, DeValue};

/// One key (or array element) of the document.
#[derive(Debug, Clone)]
struct Entry {
    path: String,
    key: Range<usize>,
    value: Range<usize>,
}

/// Every key and array element of a suite document, with spans.
#[derive(Debug, Default)]
pub(crate) struct DocIndex {
    entries: Vec<Entry>,
}

impl DocIndex {
    /// Indexes `root` recursively.
    pub(crate) fn build(root: &DeTable<'_>) -> Self {
        let mut idx = DocIndex::default();
        idx.table("", root);
        idx
    }

    fn table(&mut self, prefix: &str, t: &DeTable<'_>) {
        for (k, v) in t.iter() {
            let path = join(prefix, k.get_ref());
            self.entries.push(Entry {
                path: path.clone(),
                key: k.span(),
                value: v.span(),
            });
            self.value(&path, v.get_ref());
        }
    }

    fn value(&mut self, path: &str, v: &DeValue<'_>) {
        match v {
            DeValue::Table(t) => self.table(path, t),
            DeValue::Array(a) => {
                for (i, e) in a.iter().enumerate() {
                    let p = format!("{path}[{i}]");
                    self.entries.push(Entry {
                        path: p.clone(),
                        key: e.span(),
                        value: e.span(),
                    });
                    self.value(&p, e.get_ref());
                }
            }
            _ => {}
        }
    }

    /// Every dotted path present in the file.
    pub(crate) fn paths(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.path.as_str())
    }

    /// Span of the key at `path` (the header for an array-of-tables element).
    pub(crate) fn key_span(&self, path: &str) -> Option<Range<usize>> {
        self.entries
            .iter()
            .find(|e| e.path == path)
            .map(|e| e.key.clone())
    }

    /// Span of the value at `path` (the header for a table defined by a header).
    pub(crate) fn value_span(&self, path: &str) -> Option<Range<usize>> {
        self.entries
            .iter()
            .find(|e| e.path == path)
            .map(|e| e.value.clone())
    }

    /// The most specific path whose key or value span contains `span.start` (on equal
    /// spans, the deeper path: `jobs[0]` rather than `jobs` for a `[[jobs]]` header).
    /// `None` for an empty span at offset 0, which toml uses for the root table.
    pub(crate) fn path_at(&self, span: &Range<usize>) -> Option<&str> {
        if span.is_empty() && span.start == 0 {
            return None;
        }
        let at = span.start;
        let within = |r: &Range<usize>| r.start <= at && at < r.end.max(r.start + 1);
        let mut best: Option<(usize, &Entry)> = None;
        for e in &self.entries {
            let len = if within(&e.key) {
                e.key.len()
            } else if within(&e.value) {
                e.value.len()
            } else {
                continue;
            };
            // Entries are pushed parent first, so `<=` keeps the deepest on ties.
            if best.is_none_or(|(l, _)| len <= l) {
                best = Some((len, e));
            }
        }
        best.map(|(_, e)| e.path.as_str())
    }
}

/// `prefix.key`, quoting keys that are not bare TOML keys.
pub(crate) fn join(prefix: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    };
    if prefix.is_empty() {
        key
    } else {
        format!("{prefix}.{key}")
    }
}

/// The parent table path of a dotted path (`jobs[0].max_steps` → `jobs[0]`; a top-level
/// key → empty).
pub(crate) fn parent_of(path: &str) -> &str {
    match path.rfind('.') {
        Some(i) => &path[..i],
        None => "",
    }
}

/// Tables of an array value (`[[jobs]]` or `jobs = [{...}]`) with their index; elements
/// that are not tables are skipped (serde reports them as wrong types).
pub(crate) fn array_tables<'a, 'i>(v: &'a DeValue<'i>) -> Vec<(usize, &'a DeTable<'i>)> {
    match v {
        DeValue::Array(a) => a
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match e.get_ref() {
                DeValue::Table(t) => Some((i, t)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The entries of a table sorted by position in the file (the map is sorted by key).
pub(crate) fn sorted_entries<'a, 'i>(
    t: &'a DeTable<'i>,
) -> Vec<(
    &'a serde_spanned::Spanned<std::borrow::Cow<'i, str>>,
    &'a serde_spanned::Spanned<DeValue<'i>>,
)> {
    let mut v: Vec<_> = t.iter().collect();
    v.sort_by_key(|(k, _)| k.span().start);
    v
}

/// The string value of `key` in `t`, if it is a string.
pub(crate) fn str_of<'a>(t: &'a DeTable<'_>, key: &str) -> Option<&'a str> {
    match t.get(key).map(|v| v.get_ref()) {
        Some(DeValue::String(s)) => Some(s.as_ref()),
        _ => None,
    }
}
