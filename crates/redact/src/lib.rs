//! Redaction and bounded excerpts for every message the product prints (issue 15 item 5):
//! URL userinfo (`http://user:pw@host` → `http://***@host`), values under secret-looking
//! keys (`api_key`, `token`, `password`, `secret`, `authorization`, …), and bad values cut
//! to [`EXCERPT_CHARS`] characters with an ellipsis and their full size. Pure; no I/O.

use std::borrow::Cow;

/// Characters of a bad value echoed in a message at most.
pub const EXCERPT_CHARS: usize = 80;

/// The length of `s`'s leading `scheme://` when `s` starts with one (a letter, then
/// letters, digits, `+`, `-` or `.`), else 0 (pure).
fn scheme_len(s: &str) -> usize {
    let Some(i) = s.find("://") else { return 0 };
    let scheme = &s[..i];
    let ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if ok { i + 3 } else { 0 }
}

/// Whether `c` ends a URL in free text.
fn ends_url(c: u8) -> bool {
    matches!(c, b'"' | b'\'' | b'`' | b'>' | b'<' | b'(' | b')') || c.is_ascii_whitespace()
}

/// Byte ranges of the userinfo of every URL in `s` (pure).
///
/// A URL is a run of text, from the last whitespace, quote, bracket or parenthesis
/// before a `://` to the first after it; its userinfo is everything before the *last*
/// `@` in it, after its `scheme://` when it starts with a well-formed one (else from its
/// start: `user:pa://ss@host` hides `user:pa` too). A password may hold an unencoded
/// `/`, `?` or `#` (issue 30 item 2): stopping at the first of those, as the authority
/// does in a well-formed URL, would leave such a password shown. A query holding `@` is
/// redacted with it (the safe side).
fn userinfo_ranges(s: &str) -> Vec<std::ops::Range<usize>> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = s[from..].find("://") {
        let sep = from + i;
        let start = b[from..sep]
            .iter()
            .rposition(|&c| ends_url(c))
            .map_or(from, |p| from + p + 1);
        let end = b[sep..]
            .iter()
            .position(|&c| ends_url(c))
            .map_or(b.len(), |p| sep + p);
        if let Some(at) = s[start..end].rfind('@') {
            let user = start + scheme_len(&s[start..end]).min(at);
            out.push(user..start + at);
        }
        from = end.max(sep + 3);
    }
    out
}

/// One URL value (a whole endpoint setting, not free text) with everything before its
/// last `@` after a well-formed `scheme://` (or from the start, without one) shown as
/// `***`: whatever the value holds (a space, a quote, a bad scheme), no password in it is
/// shown (issue 30 item 2; pure).
pub fn url_value(s: &str) -> Cow<'_, str> {
    let Some(at) = s.rfind('@') else {
        return Cow::Borrowed(s);
    };
    let start = scheme_len(s).min(at);
    Cow::Owned(format!("{}***{}", &s[..start], &s[at..]))
}

/// One URL value for messages (pure): [`url_value`], and its query or fragment (from the
/// first `?` or `#` after its last `@`) shown as `?…` or `#…`: a key often rides there
/// (`?api-key=`, `?sig=`).
pub fn url_shown(s: &str) -> String {
    let r = url_value(s);
    let from = r.rfind('@').unwrap_or(0);
    match r[from..].find(['?', '#']) {
        Some(i) => format!("{}…", &r[..=from + i]),
        None => r.into_owned(),
    }
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

/// Prefixes of well-known API keys and tokens (OpenAI, Anthropic, Hugging Face, GitHub,
/// GitLab, Slack, AWS, Google, JWTs).
const CREDENTIAL_PREFIXES: [&str; 14] = [
    "sk-",
    "sk_",
    "rk_",
    "pk_",
    "hf_",
    "ghp_",
    "gho_",
    "ghs_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
];

/// Whether `word` (a run without whitespace, quotes or `=`) looks like a credential: a
/// known key prefix followed by 8 or more characters, a JWT (`eyJ…` with two dots), or a
/// run of 16 or more letters and digits holding both (a random key; model names, paths
/// and versions split into shorter runs at `-`, `_`, `.`, `/`) (pure).
pub fn looks_like_credential(word: &str) -> bool {
    let w = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    let prefixed = CREDENTIAL_PREFIXES
        .iter()
        .any(|p| w.strip_prefix(p).is_some_and(|rest| rest.len() >= 8));
    let jwt = w.starts_with("eyJ") && w.matches('.').count() == 2 && w.len() >= 24;
    let random = w.split(|c: char| !c.is_ascii_alphanumeric()).any(|run| {
        run.len() >= 16
            && run.bytes().any(|b| b.is_ascii_digit())
            && run.bytes().any(|b| b.is_ascii_alphabetic())
    });
    prefixed || jwt || random
}

/// Byte ranges of the credential-looking words of `text` ([`looks_like_credential`];
/// words split at whitespace, quotes, `=`, `,`, brackets and braces) (pure).
fn credential_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let split = |c: char| {
        c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '=' | ',' | '[' | ']' | '{' | '}')
    };
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (split(c), start) {
            (true, Some(s)) => {
                if looks_like_credential(&text[s..i]) {
                    out.push(s..i);
                }
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    out
}

/// Whether a line is a continuation of a multi-line value (not `key = value`, not a
/// `[table]` header, not a comment, not blank).
fn is_continuation(line: &str) -> bool {
    let t = line.trim();
    !(t.is_empty() || t.starts_with('#') || t.starts_with('['))
}

/// Lines of `text` as `(start, end)` byte offsets, the newline excluded.
fn line_spans(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let line = (start, end);
        start = end + 1;
        Some(line)
    })
}

/// The lines of suite text a diagnostic's source snippet shows (a few whole lines, so
/// the cost is that of the snippet, never of the file), the same bytes at the same
/// offsets (so spans and positions stay exact), with `*` over: URL userinfo; the values
/// of secret-looking keys; whatever a value holds before its last `@`; an `…_env` value
/// that is no environment variable name (a key pasted in its place); every
/// credential-looking word ([`looks_like_credential`]); and, with `unknown` (the snippet
/// of an unknown key), every value and every continuation line of a multi-line value
/// (pure).
pub fn mask_source(text: &str, unknown: bool) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for r in userinfo_ranges(text)
        .into_iter()
        .chain(credential_ranges(text))
    {
        mask(&mut bytes, r);
    }
    for (start, end) in line_spans(text) {
        let Some((key, v)) = key_value(text, start) else {
            if unknown && is_continuation(&text[start..end]) {
                mask(&mut bytes, start..end);
            }
            continue;
        };
        // The last dotted segment names the value (`a.b.token = …`).
        let leaf = key.rsplit('.').next().unwrap_or(key);
        let value = text[v.clone()].trim_matches(['"', '\'', ' ']);
        let bad_env_name =
            leaf.ends_with("_env") && !value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if unknown || bad_env_name || is_secret_key(leaf) || key.split('.').any(is_secret_key) {
            mask(&mut bytes, v);
        } else {
            let raw = &text[v.clone()];
            let last_at = raw.rfind('@');
            if let Some(at) = last_at {
                let inner = raw.trim_start_matches(['"', '\'']);
                let quote = v.end - v.start - inner.len();
                let from = (quote + scheme_len(inner)).min(at);
                mask(&mut bytes, v.start + from..v.start + at);
            }
            // A URL value with an escape (`\u0040` is `@`, `\u003F` is `?`) or a line
            // continuation: whatever follows its scheme may be userinfo or a query.
            if raw.contains("://") && raw.contains('\\') {
                let inner = raw.trim_start_matches(['"', '\'']);
                let from = v.start + (raw.len() - inner.len()) + scheme_len(inner);
                let end = v.start + raw.trim_end_matches(['"', '\'', ' ']).len();
                if from < end {
                    mask(&mut bytes, from..end);
                }
            }
            // A URL value's query or fragment (a key rides there: `?api-key=`, `?sig=`).
            if raw.contains("://")
                && let Some(q) = raw[last_at.unwrap_or(0)..].find(['?', '#'])
            {
                let from = v.start + last_at.unwrap_or(0) + q + 1;
                let end = v.start + raw.trim_end_matches(['"', '\'', ' ']).len();
                if from < end {
                    mask(&mut bytes, from..end);
                }
            }
        }
    }
    // Only ASCII bytes inside valid UTF-8 runs were replaced by ASCII, or whole multi-byte
    // characters within a masked range; a masked range may split a character at its ends
    // only where the range itself was cut mid-character, which `key_value` and the scans
    // never do (they cut at ASCII delimiters).
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
            urls("a https://tok@x b http://y/z"),
            "a https://***@x b http://y/z"
        );
        assert_eq!(urls("no url here"), "no url here");
        assert_eq!(
            urls("(http://a:b@c) and http://d:e@f"),
            "(http://***@c) and http://***@f"
        );
    }

    /// Issue 30 item 2: a password holding an unencoded `/`, `?` or `#` is redacted too.
    #[test]
    fn userinfo_ends_at_the_last_at_sign() {
        for (url, shown) in [
            ("http://user:PW/x@host/v1", "http://***@host/v1"),
            ("http://user:P?W@host", "http://***@host"),
            ("http://user:P#W@host:8000/v1", "http://***@host:8000/v1"),
            ("see 'http://u:a/b?c#d@h' now", "see 'http://***@h' now"),
            ("at user:PW://x@h now", "at ***@h now"),
        ] {
            assert_eq!(urls(url), shown);
            assert!(!mask_source(url, false).contains("PW"), "{url}");
        }
        for (value, shown) in [
            ("http://user:pa ss@host", "http://***@host"),
            ("http://user:pa\"ss@host/v1", "http://***@host/v1"),
            ("htp://user:pw@host", "htp://***@host"),
            ("user:pw@host", "***@host"),
            ("user:PW://x@host", "***@host"),
            ("http://host/v1", "http://host/v1"),
        ] {
            assert_eq!(url_value(value), shown);
        }
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
        let m = mask_source(t, false);
        assert_eq!(m.len(), t.len());
        assert!(!m.contains("hunter2") && !m.contains("sk-1"), "{m}");
        assert!(m.contains("sk-ZZ") && m.contains("model = \"m\""), "{m}");
        assert!(m.contains("http://") && m.contains("@h/v1"), "{m}");
        let m = mask_source(t, true);
        assert_eq!(m.len(), t.len());
        assert!(
            !m.contains("hunter2") && !m.contains("sk-1") && !m.contains("sk-ZZ"),
            "{m}"
        );
        assert!(m.contains("api_key_env = "), "{m}");
        assert_eq!(m.find("foo"), t.find("foo"));
    }

    /// Issue 30 item 4: a key pasted as an `…_env` value, credential-looking words anywhere,
    /// and the continuation lines of an unknown key's multi-line value are never shown.
    #[test]
    fn credential_like_values_are_masked() {
        let t = "api_key_env = \"sk-proj-Zx81kQ2mP0aL\"\nmodel_env = \"MODEL\"\nx = \"ghp_0123456789abcdefXYZ\"\nm = \"meta-llama/Llama-3.1-8B-Instruct\"\nprompt = \"a@b c\"\n";
        let m = mask_source(t, false);
        assert_eq!(m.len(), t.len());
        for secret in ["sk-proj", "Zx81kQ2mP0aL", "ghp_0123", "a@b"] {
            assert!(!m.contains(secret), "{secret}: {m}");
        }
        assert!(
            m.contains("\"MODEL\"") && m.contains("Llama-3.1-8B-Instruct"),
            "{m}"
        );
        let t = "nope = \"\"\"\nline one of the key\nline two\n\"\"\"\n[x]\n# note\n";
        let m = mask_source(t, true);
        assert!(!m.contains("line one") && !m.contains("line two"), "{m}");
        assert!(m.contains("[x]") && m.contains("# note"), "{m}");
        for w in [
            "sk-abcdefgh12",
            "eyJhbGciOi.eyJzdWIiOiIx.abc",
            "A1b2C3d4E5f6G7h8",
        ] {
            assert!(looks_like_credential(w), "{w}");
        }
        for w in [
            "gpt-4o-mini",
            "Qwen2.5-7B-Instruct-AWQ",
            "/v1/chat/completions",
            "1234567890123456",
        ] {
            assert!(!looks_like_credential(w), "{w}");
        }
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
