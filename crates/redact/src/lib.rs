//! Redaction and bounded excerpts for every message the product prints (issue 15 item 5):
//! URL userinfo (`http://user:pw@host` → `http://***@host`), values under secret-looking
//! keys (`api_key`, `token`, `password`, `secret`, `authorization`, …), and bad values cut
//! to [`EXCERPT_CHARS`] characters with an ellipsis and their full size. Pure; no I/O.

use std::borrow::Cow;

/// Characters of a bad value echoed in a message at most.
pub const EXCERPT_CHARS: usize = 80;

/// Byte ranges of the userinfo of every `scheme://userinfo@` in `s` (pure).
fn userinfo_ranges(s: &str) -> Vec<std::ops::Range<usize>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = s[from..].find("://") {
        let start = from + i + 3;
        // The authority ends at the first `/`, `?`, `#`, whitespace or quote.
        let end = b[start..]
            .iter()
            .position(|&c| {
                matches!(c, b'/' | b'?' | b'#' | b'"' | b'\'' | b'`' | b'>' | b'<')
                    || c.is_ascii_whitespace()
            })
            .map_or(b.len(), |p| start + p);
        if let Some(at) = s[start..end].rfind('@') {
            out.push(start..start + at);
        }
        from = end.max(start);
    }
    out
}

/// `s` with the userinfo of every URL in it replaced by `***` (pure).
pub fn urls(s: &str) -> Cow<'_, str> {
    let ranges = userinfo_ranges(s);
    if ranges.is_empty() {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for r in ranges {
        out.push_str(&s[last..r.start]);
        out.push_str("***");
        last = r.end;
    }
    out.push_str(&s[last..]);
    Cow::Owned(out)
}

/// Whether a key names a secret: it contains `api_key`, `apikey`, `token`, `password`,
/// `passwd`, `secret`, `authorization`, `credential`, `bearer`, `private_key` or `cookie`
/// (case-insensitive, `-` read as `_`). A key ending in `_env` names an environment
/// variable, not its value, and is not a secret.
pub fn is_secret_key(key: &str) -> bool {
    let k = key
        .trim()
        .trim_matches(['"', '\''])
        .to_ascii_lowercase()
        .replace('-', "_");
    if k.ends_with("_env") {
        return false;
    }
    // Token counts (`max_tokens`, `prompt_tokens`, …) and `tokenizer` name no secret.
    let mut k = k;
    for count in [
        "max_tokens",
        "min_tokens",
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "cached_tokens",
        "reasoning_tokens",
        "output_tokens",
        "input_tokens",
        "tokenizer",
    ] {
        k = k.replace(count, "");
    }
    [
        "api_key",
        "apikey",
        "token",
        "password",
        "passwd",
        "secret",
        "authorization",
        "credential",
        "bearer",
        "private_key",
        "cookie",
    ]
    .iter()
    .any(|w| k.contains(w))
}

/// Overwrites `bytes[r]` with `*`, keeping every other byte where it was.
fn mask(bytes: &mut [u8], r: std::ops::Range<usize>) {
    for b in &mut bytes[r] {
        if *b != b'\n' {
            *b = b'*';
        }
    }
}

/// The value part of a `key = value` line starting at byte `line_start` of `text`: the
/// key and the byte range of the value (to the end of the line), when the line has one.
fn key_value(text: &str, line_start: usize) -> Option<(&str, std::ops::Range<usize>)> {
    let end = text[line_start..]
        .find('\n')
        .map_or(text.len(), |i| line_start + i);
    let line = &text[line_start..end];
    let eq = line.find('=')?;
    let key = line[..eq].trim();
    if key.is_empty() || key.starts_with('#') || key.starts_with('[') {
        return None;
    }
    let vstart = line_start + eq + 1;
    let lead = text[vstart..end].len() - text[vstart..end].trim_start().len();
    Some((key, vstart + lead..end))
}

/// The suite text as shown in a diagnostic's source snippet: the same bytes at the same
/// offsets (so spans and positions stay exact), with URL userinfo and the values of
/// secret-looking keys overwritten by `*`, and the values on the line holding byte
/// `unknown_at` (an unknown key's line) and on the context lines either side of it
/// overwritten too (pure).
pub fn mask_source(text: &str, unknown_at: Option<usize>) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for r in userinfo_ranges(text) {
        mask(&mut bytes, r);
    }
    let mut start = 0;
    while start < text.len() {
        if let Some((key, v)) = key_value(text, start) {
            // The last dotted segment names the value (`a.b.token = …`).
            let leaf = key.rsplit('.').next().unwrap_or(key);
            if is_secret_key(leaf) || key.split('.').any(is_secret_key) {
                mask(&mut bytes, v);
            }
        }
        start = text[start..]
            .find('\n')
            .map_or(text.len(), |i| start + i + 1);
    }
    if let Some(at) = unknown_at.filter(|&a| a <= text.len()) {
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let prev = text[..line_start.saturating_sub(1)]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let next = text[line_start..]
            .find('\n')
            .map(|i| line_start + i + 1)
            .filter(|&n| n < text.len());
        let mut starts = vec![line_start];
        if line_start > 0 {
            starts.push(prev);
        }
        starts.extend(next);
        for st in starts {
            if let Some((_, v)) = key_value(text, st) {
                mask(&mut bytes, v);
            }
        }
    }
    // Only ASCII bytes inside valid UTF-8 runs were replaced by ASCII, or whole multi-byte
    // characters within a masked range; a masked range may split a character at its ends
    // only where the range itself was cut mid-character, which `key_value` and the URL
    // scan never do (they cut at ASCII delimiters).
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// At most [`EXCERPT_CHARS`] characters of `s` (control characters shown escaped), with
/// `… (N bytes)` when cut (pure).
pub fn excerpt(s: &str) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n >= EXCERPT_CHARS {
            out.push_str(&format!("… ({} bytes)", s.len()));
            return out;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Characters of free message text kept at most ([`excerpt_long`]).
pub const MESSAGE_CHARS: usize = 2000;

/// At most [`MESSAGE_CHARS`] characters of `s`, with `… (N bytes)` when cut (pure).
pub fn excerpt_long(s: &str) -> String {
    match s.char_indices().nth(MESSAGE_CHARS) {
        None => s.to_string(),
        Some((i, _)) => format!("{}… ({} bytes)", &s[..i], s.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn userinfo_is_redacted_everywhere() {
        assert_eq!(
            urls("POST http://u:PW@h:1/v1/traces: refused"),
            "POST http://***@h:1/v1/traces: refused"
        );
        assert_eq!(
            urls("a https://tok@x b http://y/z@q"),
            "a https://***@x b http://y/z@q"
        );
        assert_eq!(urls("no url here"), "no url here");
        assert_eq!(
            urls("(http://a:b@c) and http://d:e@f"),
            "(http://***@c) and http://***@f"
        );
    }

    #[test]
    fn secret_keys() {
        for k in [
            "api_key",
            "API-KEY",
            "token",
            "my_token_thing",
            "password",
            "db.secret",
            "Authorization",
            "\"apikey\"",
        ] {
            assert!(is_secret_key(k), "{k}");
        }
        // Token counts are not secrets (break-it review: `check` masked `max_tokens = **`);
        // a secret word beside one still is.
        assert!(is_secret_key("max_tokens_token"));
        for k in [
            "api_key_env",
            "model",
            "engine",
            "name",
            "max_tokens",
            "jobs[0].max_tokens",
            "prompt_tokens",
            "tokenizer",
        ] {
            assert!(!is_secret_key(k), "{k}");
        }
    }

    #[test]
    fn masked_source_keeps_offsets() {
        let t = "api_key_env = \"K\"\nname = \"x\"\nendpoint = \"http://user:hunter2@h/v1\"\nmodel = \"m\"\ntoken = \"sk-1\"\nfoo = \"sk-ZZ\"\n";
        let at = t.find("foo").unwrap();
        let m = mask_source(t, Some(at));
        assert_eq!(m.len(), t.len());
        assert!(
            !m.contains("hunter2") && !m.contains("sk-1") && !m.contains("sk-ZZ"),
            "{m}"
        );
        assert!(m.contains("api_key_env = \"K\""), "{m}");
        assert!(m.contains("http://") && m.contains("@h/v1"), "{m}");
        assert_eq!(m.find("foo"), t.find("foo"));
    }

    #[test]
    fn excerpts_are_bounded() {
        let long = "A".repeat(5_000_000);
        let e = excerpt(&long);
        assert!(
            e.chars().count() < 110 && e.ends_with("(5000000 bytes)"),
            "{e}"
        );
        assert_eq!(excerpt("short"), "short");
        assert_eq!(excerpt("a\nb"), "a\\nb");
    }
}
