//! The load pipeline: TOML with spans → secret scan → unknown-key walk → serde types →
//! semantic validation. Every problem of a file is reported in one pass: the key walk
//! reports every unknown or misplaced key; serde runs on the document without them, and
//! again without each value it refused, until it succeeds or a required key is missing;
//! semantic validation then reports one problem per top-level key, tool and job. A TOML
//! syntax error or a literal secret stops the pipeline at that stage.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use toml::de::{DeTable, DeValue};

use super::ctx::Ctx;
use super::doc::{DocIndex, parent_of};
use super::error::{LineStarts, SuiteError, SuiteErrorKind};
use super::fields::did_you_mean;
use super::model::Suite;
use super::raw::RawSuite;
use super::{keys, validate};

/// Most serde passes over one file (each removes the value the previous one refused).
const MAX_SERDE_PASSES: usize = 64;

/// Parses and validates `text` as the suite file `origin`; see [`super::parse`]. Every
/// problem found, in pipeline order (the first is what the staged pipeline reported
/// first); never an empty `Err`.
pub(crate) fn parse(text: &str, origin: &Path) -> Result<Suite, Vec<SuiteError>> {
    let file = origin.to_path_buf();
    let shared: Arc<str> = Arc::from(text);
    let doc = match DeTable::parse(text) {
        Ok(d) => d,
        Err(e) => {
            // toml gives no span for its recursion limit on deep dotted keys: point at the
            // most deeply nested line instead of 1:1.
            let span = e.span().unwrap_or_else(|| deepest_line(text));
            return Err(vec![SuiteError::located(
                file,
                &shared,
                span,
                SuiteErrorKind::Syntax,
                None,
                format!("invalid TOML: {}", e.message().trim()),
            )]);
        }
    };
    let ctx = Ctx {
        file,
        lines: LineStarts::of(&shared),
        text: shared,
        index: DocIndex::build(doc.get_ref()),
    };
    let mut errors = keys::check(doc.get_ref(), &ctx);
    if errors.iter().any(|e| e.kind() == SuiteErrorKind::Secret) {
        return Err(errors);
    }
    let mut pruned = doc;
    let mut at: Vec<usize> = errors
        .iter()
        .filter_map(|e| e.location().map(|l| l.offset))
        .collect();
    at.sort_unstable();
    at.dedup();
    prune_all(pruned.get_mut(), &at, &mut vec![false; at.len()]);
    let mut raw = None;
    // Paths of the values a pass removed after reporting them: their absence is not
    // reported again (a refused `kind` is not also a missing `kind`).
    let mut removed_paths: Vec<String> = Vec::new();
    for _ in 0..MAX_SERDE_PASSES {
        match RawSuite::deserialize(toml::de::Deserializer::from(pruned.clone())) {
            Ok(r) => {
                raw = Some(r);
                break;
            }
            Err(e) => {
                let se = serde_error(&e, &ctx);
                let at = se.location().map(|l| l.offset);
                let missing = se.kind() == SuiteErrorKind::MissingField;
                let path = se.path().map(str::to_string);
                let echo = missing && path.as_ref().is_some_and(|p| removed_paths.contains(p));
                // The key walk names unknown keys itself: serde's view of one is not repeated.
                if !echo && !errors.iter().any(|x| x.location().map(|l| l.offset) == at) {
                    errors.push(se);
                }
                let removed = e.span().is_some_and(|s| prune(pruned.get_mut(), s.start));
                if removed && let Some(p) = path {
                    removed_paths.push(p);
                }
                if missing || !removed {
                    break;
                }
            }
        }
    }
    if let Some(raw) = raw {
        match validate::validate(raw, &ctx, origin) {
            Ok(suite) if errors.is_empty() => return Ok(suite),
            Ok(_) => {}
            Err(more) => errors.extend(
                more.into_iter()
                    .filter(|e| !echoes_removed(e.path(), &removed_paths)),
            ),
        }
    }
    Err(errors)
}

/// Whether a validation error at `path` only repeats a value already reported and
/// removed: the same path, or the table that directly held it (`jobs[1]` for a refused
/// `jobs[1].mode`, `gates.ttft_ms` for a refused `gates.ttft_ms.p99`). A refused array
/// element removed its whole array ([`prune`]), so it counts as the array (`jobs[0]` for a
/// refused `jobs[0].sizes[0]`: not also "has no `sizes`") (pure).
fn echoes_removed(path: Option<&str>, removed: &[String]) -> bool {
    let Some(p) = path else { return false };
    removed.iter().any(|r| {
        let mut r = r.as_str();
        while let Some(i) = r.rfind('[').filter(|_| r.ends_with(']')) {
            r = &r[..i];
        }
        r == p
            || r.strip_prefix(p)
                .and_then(|rest| rest.strip_prefix('.'))
                .is_some_and(|leaf| !leaf.contains(['.', '[']))
    })
}

/// Removes from `t` the innermost table entry whose key or value holds byte `at` (an
/// array's element cannot be removed alone: the array's entry goes); whether one went.
/// Every nested table is searched: an array of tables' own span need not cover its
/// elements.
fn prune(t: &mut DeTable<'_>, at: usize) -> bool {
    let holds = |s: Range<usize>| s.start <= at && at < s.end.max(s.start + 1);
    let mut hit = None;
    for (k, v) in t.iter_mut() {
        let here = holds(k.span()) || holds(v.span());
        let inner = match v.get_mut() {
            DeValue::Table(c) => prune(c, at),
            DeValue::Array(a) => a.iter_mut().any(|e| match e.get_mut() {
                DeValue::Table(c) => prune(c, at),
                _ => false,
            }),
            _ => false,
        };
        if inner {
            return true;
        }
        if here {
            hit = Some(k.clone());
            break;
        }
    }
    hit.is_some_and(|k| t.remove(&k).is_some())
}

/// [`prune`] for every offset of `at` (sorted) in one walk of the document (one
/// walk per error made 8,000 errors cost 8,000 walks): each offset removes the
/// innermost entry whose key or value holds it, found in a nested table first; `done`
/// marks the offsets already used (one entry each).
fn prune_all(t: &mut DeTable<'_>, at: &[usize], done: &mut [bool]) {
    let mut gone = Vec::new();
    for (k, v) in t.iter_mut() {
        match v.get_mut() {
            DeValue::Table(c) => prune_all(c, at, done),
            DeValue::Array(a) => {
                for e in a.iter_mut() {
                    if let DeValue::Table(c) = e.get_mut() {
                        prune_all(c, at, done);
                    }
                }
            }
            _ => {}
        }
        let mut hit = false;
        for s in [k.span(), v.span()] {
            let lo = at.partition_point(|&a| a < s.start);
            let hi = at.partition_point(|&a| a < s.end.max(s.start + 1));
            for d in &mut done[lo..hi] {
                hit |= !*d;
                *d = true;
            }
        }
        if hit {
            gone.push(k.clone());
        }
    }
    for k in gone {
        t.remove(&k);
    }
}

/// The start of the first line with the most nesting (dots, brackets and braces outside
/// strings), for errors without a span (pure).
fn deepest_line(text: &str) -> Range<usize> {
    let mut best = (0usize, 0usize);
    let mut start = 0usize;
    for line in text.split_inclusive('\n') {
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        for c in line.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '#') => break,
                (None, '.' | '[' | '{') => depth += 1,
                _ => {}
            }
        }
        if depth > best.0 {
            let indent = line.len() - line.trim_start().len();
            best = (depth, start + indent);
        }
        start += line.len();
    }
    best.1..best.1 + 1
}

/// Maps a serde/toml deserialization error to a located [`SuiteError`] with the dotted
/// path of the offending value.
fn serde_error(e: &toml::de::Error, ctx: &Ctx) -> SuiteError {
    let span = e.span().unwrap_or(0..0);
    let path = ctx.index.path_at(&span).map(str::to_string);
    // A string value is never quoted back (it may be a key pasted in the wrong place):
    // `invalid type: a string (31 characters), expected …`.
    let msg = crate::redact::serde_strings(e.message().trim());
    let msg = msg.as_ref();
    let where_ = |p: &Option<String>| match p.as_deref() {
        None | Some("") => "the top level".to_string(),
        Some(p) => format!("`{p}`"),
    };
    if let Some(field) = backticked_after(msg, "missing field ") {
        if field == "jobs" && path.is_none() {
            return ctx
                .err(
                    span,
                    SuiteErrorKind::MissingField,
                    Some("jobs".into()),
                    "a suite needs at least one `[[jobs]]` table".into(),
                )
                .with_label("no jobs");
        }
        let full = match path.as_deref() {
            None | Some("") => field.to_string(),
            Some(p) => format!("{p}.{field}"),
        };
        return ctx.err(
            span,
            SuiteErrorKind::MissingField,
            Some(full),
            format!("missing required key `{field}` in {}", where_(&path)),
        );
    }
    if let Some(variant) = backticked_after(msg, "unknown variant ") {
        let expected = backticked_list(msg.split_once("expected").map_or("", |x| x.1));
        let hint =
            did_you_mean(variant, expected.iter().copied()).map(|s| format!("did you mean `{s}`?"));
        return ctx
            .err(
                span,
                SuiteErrorKind::InvalidValue,
                path.clone(),
                format!(
                    "invalid value for {}: `{variant}` is not one of {}",
                    where_(&path),
                    expected
                        .iter()
                        .map(|s| format!("`{s}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_hint(hint)
            .with_label("unknown value");
    }
    if let Some(field) = backticked_after(msg, "unknown field ") {
        // The key walker reports these first; kept for tables it does not model.
        let expected = backticked_list(msg.split_once("expected").map_or("", |x| x.1));
        let hint =
            did_you_mean(field, expected.iter().copied()).map(|s| format!("did you mean `{s}`?"));
        let table = path.as_deref().map(parent_of).unwrap_or("");
        return ctx
            .err(
                span,
                SuiteErrorKind::UnknownField,
                path.clone(),
                format!(
                    "unknown field `{field}` in {}",
                    where_(&Some(table.to_string()))
                ),
            )
            .with_hint(hint);
    }
    ctx.err(
        span,
        SuiteErrorKind::WrongType,
        path.clone(),
        format!("wrong type for {}: {}", where_(&path), friendly_types(msg)),
    )
}

/// The first backticked word after `prefix` in `msg`.
fn backticked_after<'a>(msg: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = &msg[msg.find(prefix)? + prefix.len()..];
    let rest = rest.strip_prefix('`')?;
    Some(&rest[..rest.find('`')?])
}

/// All backticked words in `s`.
fn backticked_list(s: &str) -> Vec<&str> {
    s.split('`').skip(1).step_by(2).collect()
}

/// serde's Rust type names in plain words (no internal struct names).
fn friendly_types(msg: &str) -> String {
    let mut out = msg.to_string();
    for (from, to) in [
        ("expected u64", "expected a non-negative integer"),
        ("expected u32", "expected a non-negative integer"),
        ("expected u16", "expected a non-negative integer"),
        ("expected i64", "expected an integer"),
        ("expected f64", "expected a number"),
        ("expected a sequence", "expected an array"),
        ("expected a map", "expected a table"),
        ("wanted string or table", "expected a string"),
        ("invalid type: map", "invalid type: table"),
        ("invalid type: sequence", "invalid type: array"),
    ] {
        out = out.replace(from, to);
    }
    // `expected struct RawTelemetry` → `expected a table`.
    if let Some(i) = out.find("expected struct ") {
        let rest = &out[i + "expected struct ".len()..];
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        out = format!("{}expected a table{}", &out[..i], &rest[end..]);
    }
    out
}
