//! Redaction and bounded excerpts for every message the product prints:
//! URL userinfo (`http://user:pw@host` → `http://***@host`), values under secret-looking
//! keys (`api_key`, `token`, `password`, `secret`, `authorization`, …) at a line's start,
//! inside inline tables and after a secret flag in an array, credential-looking words, and
//! bad values cut to [`EXCERPT_CHARS`] characters with an ellipsis and their full size; a
//! message about suite lines hides what their snippet masks ([`mask_message`]) and never
//! quotes a serde string value ([`serde_strings`]). Pure; no I/O.

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
/// `/`, `?` or `#`: stopping at the first of those, as the authority
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
/// shown (pure).
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
        if k.contains(count) {
            k = k.replace(count, "");
        }
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
    // The shortest credential is a 3-byte prefix and 8 more.
    if w.len() < 11 {
        return false;
    }
    let prefixed = CREDENTIAL_PREFIXES
        .iter()
        .any(|p| w.strip_prefix(p).is_some_and(|rest| rest.len() >= 8));
    let jwt = w.starts_with("eyJ") && w.matches('.').count() == 2 && w.len() >= 24;
    let random = || {
        w.split(|c: char| !c.is_ascii_alphanumeric()).any(|run| {
            run.len() >= 16
                && run.bytes().any(|b| b.is_ascii_digit())
                && run.bytes().any(|b| b.is_ascii_alphabetic())
        })
    };
    prefixed || jwt || (w.len() >= 16 && random())
}

/// Byte ranges of the credential-looking words of `text` ([`looks_like_credential`], and
/// the word after `Bearer` or `Basic`: `Authorization: Bearer abc`; words split at whitespace,
/// quotes, `=`, `,`, brackets and braces) (pure).
fn credential_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let split = |c: char| {
        c.is_whitespace() || matches!(c, '"' | '\'' | '`' | '=' | ',' | '[' | ']' | '{' | '}')
    };
    let mut out = Vec::new();
    let mut start = None;
    let mut after_bearer = false;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (split(c), start) {
            (true, Some(s)) => {
                let word = &text[s..i];
                if after_bearer || looks_like_credential(word) {
                    out.push(s..i);
                }
                let w = word.trim_matches(|c: char| !c.is_ascii_alphanumeric());
                // `Basic` carries base64 user:password, `Bearer` a token.
                after_bearer = w.eq_ignore_ascii_case("bearer") || w.eq_ignore_ascii_case("basic");
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    out
}

/// Whether a string names a secret-taking command-line flag: `--api-key`, `--token`,
/// `-password` (a leading `-`, then a secret-looking key; [`is_secret_key`]) (pure).
fn is_secret_flag(s: &str) -> bool {
    let t = s.trim();
    t.starts_with('-') && !t.contains('=') && is_secret_key(t.trim_start_matches('-'))
}

/// In a string `KEY=VALUE` or `KEY: VALUE` whose key is secret-looking (`--api-key=…`,
/// `OPENAI_API_KEY=…`, `Authorization: …`, `X-Api-Key: …`), the byte range of `VALUE`
/// within `s` (pure).
fn embedded_secret(s: &str) -> Option<std::ops::Range<usize>> {
    let sep = s.find(['=', ':'])?;
    let key = s[..sep].trim().trim_start_matches('-');
    if key.is_empty() || key.contains(char::is_whitespace) || !is_secret_key(key) {
        return None;
    }
    let rest = &s[sep + 1..];
    let from = sep + 1 + (rest.len() - rest.trim_start().len());
    (from < s.len()).then_some(from..s.len())
}

/// Whether the key written at bytes `r` of `text` has a secret-looking dotted segment.
fn secret_key_at(text: &str, r: std::ops::Range<usize>) -> bool {
    text[r].split('.').any(is_secret_key)
}

/// One level of structure while scanning TOML text ([`structured_ranges`]).
struct Level {
    /// An array (`[…]`), else a table (an inline `{…}`, or the top level).
    array: bool,
    /// A table expecting a key (before its `=`).
    want_key: bool,
    /// The bytes of the key read so far (its dotted segments), before its `=`.
    key: Option<std::ops::Range<usize>>,
    /// The next value is secret: that of a secret key, or the element after a secret flag.
    secret_next: bool,
    /// Where the content of this level starts, when all of it is masked (an array or
    /// table that is the value of a secret key, or inside one).
    masked_from: Option<usize>,
}

impl Level {
    fn new(array: bool, masked_from: Option<usize>) -> Self {
        Level {
            array,
            want_key: !array,
            key: None,
            secret_next: false,
            masked_from,
        }
    }
}

/// The content range of the string or bare word starting at byte `i` of `text`, and the
/// byte after it: a basic or literal string (single-line strings end at a line's end),
/// a multi-line one, or a run up to whitespace or TOML punctuation (pure).
fn token_at(text: &str, i: usize) -> (std::ops::Range<usize>, usize) {
    let b = text.as_bytes();
    let c = b[i];
    if c == b'"' || c == b'\'' {
        let triple = if c == b'"' { "\"\"\"" } else { "'''" };
        if text[i..].starts_with(triple) {
            let from = i + 3;
            let end = text[from..].find(triple).map_or(b.len(), |n| from + n);
            return (from..end, (end + 3).min(b.len()));
        }
        let from = i + 1;
        let mut j = from;
        while j < b.len() && b[j] != c && b[j] != b'\n' {
            j += if c == b'"' && b[j] == b'\\' { 2 } else { 1 };
        }
        let end = j.min(b.len());
        let next = if end < b.len() && b[end] == c {
            end + 1
        } else {
            end
        };
        return (from..end, next);
    }
    let end = text[i..]
        .find(|c: char| {
            c.is_whitespace() || matches!(c, '=' | ',' | '{' | '}' | '[' | ']' | '#' | '"' | '\'')
        })
        .map_or(b.len(), |n| i + n);
    (i..end, end)
}

/// Byte ranges of secrets inside the structured values of TOML `text` (pure): in an
/// inline table, the value of a secret-looking key (`env = { OPENAI_API_KEY = "…" }`,
/// quoted and dotted keys too; a nested array or table whole); in an array (or a run of
/// strings, for text that starts inside a multi-line array), the element after a
/// secret-looking flag (`["--api-key", "…"]`); and in any string, the value of an embedded
/// `KEY=VALUE` or `KEY: VALUE` with a secret-looking key (`"--token=…"`,
/// `"Authorization: …"`). The text may start anywhere (a snippet): an unbalanced `]` or
/// `}` ends what came before it.
fn structured_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut stack = vec![Level::new(false, None)];
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let top = stack.len() == 1;
        let l = stack.last_mut().expect("never empty");
        match c {
            b'\n' => {
                if top {
                    l.want_key = true;
                    l.key = None;
                }
                i += 1;
            }
            b'#' => i = text[i..].find('\n').map_or(b.len(), |n| i + n),
            // A `[table]` header: no value of a statement before it.
            b'[' if top && l.want_key => {
                l.secret_next = false;
                stack.push(Level::new(true, None));
                i += 1;
            }
            // (At the top level, a value's key is read only when the value is an array or a
            // table: a line's value is masked whole by `mask_source` when its key is secret.)
            b'{' | b'[' => {
                let secret_key = top && l.key.take().is_some_and(|r| secret_key_at(text, r));
                let masked =
                    (secret_key || l.secret_next || l.masked_from.is_some()).then_some(i + 1);
                l.secret_next = false;
                stack.push(Level::new(c == b'[', masked));
                i += 1;
            }
            b'}' | b']' => {
                if top {
                    stack[0] = Level::new(false, None);
                } else if let Some(Level {
                    masked_from: Some(from),
                    ..
                }) = stack.pop()
                {
                    out.push(from..i);
                }
                i += 1;
            }
            b'=' => {
                if !l.array && l.want_key {
                    l.want_key = false;
                    l.secret_next = !top && l.key.take().is_some_and(|r| secret_key_at(text, r));
                }
                i += 1;
            }
            // (A `,` before any `=` at the top level: text starting inside an array.)
            b',' => {
                if !(l.array || (top && l.want_key)) {
                    l.want_key = true;
                    l.key = None;
                    l.secret_next = false;
                }
                i += 1;
            }
            _ if c.is_ascii_whitespace() => i += 1,
            _ if text[i..].starts_with(char::is_whitespace) => {
                i += text[i..].chars().next().map_or(1, char::len_utf8);
            }
            _ => {
                let (content, next) = token_at(text, i);
                let word = &text[content.clone()];
                if l.want_key {
                    l.key = Some(l.key.take().map_or(content.start, |r| r.start)..content.end);
                    // A run of strings at the top level (text starting inside a
                    // multi-line array): a flag there still hides the next one.
                    if top && l.secret_next {
                        out.push(content.clone());
                        l.secret_next = false;
                    } else if top {
                        l.secret_next = is_secret_flag(word);
                    }
                } else {
                    if l.secret_next || l.masked_from.is_some() {
                        out.push(content.clone());
                        l.secret_next = false;
                    } else if l.array || top {
                        l.secret_next = is_secret_flag(word);
                    }
                    if let Some(r) = embedded_secret(word) {
                        out.push(content.start + r.start..content.start + r.end);
                    }
                }
                i = next.max(i + 1);
            }
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
/// of secret-looking keys, at the start of a line and inside inline tables; the element
/// after a secret-looking flag in an array (`"--api-key", "…"`) and the value of a
/// `KEY=VALUE` or `KEY: VALUE` string with a secret-looking key;
/// whatever a value holds before its last `@`; an `…_env` value that is no environment
/// variable name (a key pasted in its place); every credential-looking word
/// ([`looks_like_credential`]) and the word after `Bearer`; and, with `unknown` (the snippet
/// of an unknown key), every value and every continuation line of a multi-line value
/// (pure).
pub fn mask_source(text: &str, unknown: bool) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for r in userinfo_ranges(text)
        .into_iter()
        .chain(credential_ranges(text))
        .chain(structured_ranges(text))
    {
        mask(&mut bytes, r);
    }
    // Under a table header whose name has a secret-like segment (`[jobs.credentials]`),
    // every value is masked.
    let mut secret_table = false;
    for (start, end) in line_spans(text) {
        if let Some(name) = table_header(&text[start..end]) {
            secret_table = name
                .split('.')
                .any(|seg| is_secret_key(seg.trim().trim_matches(['"', '\''])));
            continue;
        }
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
        if unknown
            || secret_table
            || bad_env_name
            || is_secret_key(leaf)
            || key.split('.').any(is_secret_key)
        {
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

/// The name of a TOML table header line (`[a.b]` or `[[a.b]]`, an optional comment after),
/// or `None` for any other line (a line of a multi-line array that starts with `[` holds a
/// `,`, a quote-less value or a nested bracket, and is not taken for one).
fn table_header(line: &str) -> Option<&str> {
    let t = line.trim();
    let end = t.rfind(']')?;
    let rest = t[end + 1..].trim_start();
    if !(rest.is_empty() || rest.starts_with('#')) {
        return None;
    }
    let t = &t[..=end];
    let inner = t
        .strip_prefix("[[")
        .and_then(|r| r.strip_suffix("]]"))
        .or_else(|| t.strip_prefix('[').and_then(|r| r.strip_suffix(']')))?;
    let ok = !inner.trim().is_empty()
        && inner
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ' ' | '"' | '\''));
    ok.then_some(inner.trim())
}

/// Whether `c` ends a word of message text ([`mask_message`], [`hidden_values`]):
/// whitespace, quotes, backticks, `=`, `,`, `:`, `;`, brackets, braces and parentheses.
fn is_word_break(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '"' | '\''
                | '`'
                | '='
                | ','
                | ':'
                | ';'
                | '['
                | ']'
                | '{'
                | '}'
                | '('
                | ')'
                | '<'
                | '>'
        )
}

/// A word without the punctuation at its ends (`SECRET.` → `SECRET`).
fn word_core(w: &str) -> &str {
    w.trim_matches(|c: char| !c.is_alphanumeric())
}

/// Fewest characters of a value that [`mask_message`] hides for being masked in a
/// snippet ([`hidden_values`]): shorter ones (`"a"`, `1`, `yes`) are ordinary words of a
/// message.
pub const HIDDEN_MIN_CHARS: usize = 4;

/// Multi-word values (phrases) of [`hidden_values`] that [`mask_message`] looks for at
/// most; words are looked up, not searched, so every one is hidden.
const MAX_PHRASES: usize = 64;

/// What `masked` (`text` masked by [`mask_source`], known keys) hides of `text`, so that a
/// message can hide it too ([`mask_message`]): each masked run, trimmed of quotes and
/// spaces, and each word of it (without the punctuation at its ends), those of at least
/// [`HIDDEN_MIN_CHARS`] characters, distinct (pure).
pub fn hidden_values(text: &str, masked: &str) -> Vec<String> {
    let (a, m) = (text.as_bytes(), masked.as_bytes());
    let mut out = std::collections::BTreeSet::new();
    let mut keep = |s: &str| {
        if s.chars().count() >= HIDDEN_MIN_CHARS {
            out.insert(s.to_string());
        }
    };
    let mut i = 0;
    while i < a.len().min(m.len()) {
        if m[i] != b'*' || a[i] == b'*' {
            i += 1;
            continue;
        }
        let mut start = i;
        while i < a.len().min(m.len()) && m[i] == b'*' {
            i += 1;
        }
        let mut end = i;
        while !text.is_char_boundary(start) {
            start -= 1;
        }
        while !text.is_char_boundary(end) {
            end += 1;
        }
        let run = &text[start..end];
        keep(run.trim_matches(|c: char| c.is_whitespace() || matches!(c, '"' | '\'')));
        for w in run.split(is_word_break) {
            keep(word_core(w));
        }
    }
    out.into_iter().collect()
}

/// `message` with `*` over every credential-looking word ([`looks_like_credential`]) and
/// every value of `hidden` ([`hidden_values`] of the suite lines the message is about):
/// a message never shows what its snippet masks (pure).
pub fn mask_message<'a>(message: &'a str, hidden: &[String]) -> Cow<'a, str> {
    let mut ranges = Vec::new();
    let (phrases, words): (Vec<&String>, Vec<&String>) =
        hidden.iter().partition(|h| h.contains(is_word_break));
    let words: std::collections::HashSet<&str> = words.into_iter().map(String::as_str).collect();
    for p in phrases.into_iter().take(MAX_PHRASES) {
        ranges.extend(
            message
                .match_indices(p.as_str())
                .map(|(i, _)| i..i + p.len()),
        );
    }
    let mut start = 0;
    for (i, c) in message
        .char_indices()
        .chain(std::iter::once((message.len(), ' ')))
    {
        if !is_word_break(c) {
            continue;
        }
        let w = &message[start..i];
        if !w.is_empty() && (words.contains(word_core(w)) || looks_like_credential(w)) {
            ranges.push(start..i);
        }
        start = i + c.len_utf8();
    }
    if ranges.is_empty() {
        return Cow::Borrowed(message);
    }
    let mut bytes = message.as_bytes().to_vec();
    for r in ranges {
        mask(&mut bytes, r);
    }
    // Whole characters were replaced (ranges start and end at character boundaries).
    Cow::Owned(
        String::from_utf8(bytes)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
    )
}

/// A serde error message (`invalid type: string "sk-…", expected u64`) with every string
/// value it quotes (serde writes `string "…"`, escaped as Rust's `{:?}`) replaced by its
/// size: `invalid type: a string (31 characters), expected u64`. A string in a suite may be
/// a key pasted in the wrong place; the field and what it expects say what is wrong
/// (pure).
pub fn serde_strings(msg: &str) -> Cow<'_, str> {
    const TAG: &str = "string \"";
    if !msg.contains(TAG) {
        return Cow::Borrowed(msg);
    }
    let mut out = String::with_capacity(msg.len().min(4096));
    let mut rest = msg;
    while let Some(i) = rest.find(TAG) {
        out.push_str(&rest[..i]);
        let body = &rest[i + TAG.len()..];
        let mut chars = 0usize;
        let mut end = None;
        let mut it = body.char_indices();
        while let Some((j, c)) = it.next() {
            match c {
                '"' => {
                    end = Some(j);
                    break;
                }
                '\\' => {
                    chars += 1;
                    // `\u{…}` is one character; `\n`, `\"`, `\\`, … are one.
                    if let Some((_, 'u')) = it.next() {
                        for (_, c) in it.by_ref() {
                            if c == '}' {
                                break;
                            }
                        }
                    }
                }
                _ => chars += 1,
            }
        }
        let s = if chars == 1 { "" } else { "s" };
        out.push_str(&format!("a string ({chars} character{s})"));
        // An unterminated value (a cut message): nothing after it is shown.
        rest = end.map_or("", |j| &body[j + 1..]);
    }
    out.push_str(rest);
    Cow::Owned(out)
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

    /// A password holding an unencoded `/`, `?` or `#` is redacted too.
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

    /// A key pasted as an `…_env` value, credential-looking words anywhere,
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

    /// `mask_source` of `t` (known keys), offsets kept.
    fn masked(t: &str) -> String {
        let m = mask_source(t, false);
        assert_eq!(m.len(), t.len(), "{m}");
        m
    }

    /// A secret-looking key inside an inline table hides its value, as at a line's start:
    /// `env = { OPENAI_API_KEY = "…" }` was shown whole.
    #[test]
    fn inline_table_secret_keys_are_masked() {
        let t = "env = { OPENAI_API_KEY = \"SECRETenv123\" }\ntimeout_s = -1\n";
        let m = masked(t);
        assert!(!m.contains("SECRETenv123"), "{m}");
        assert!(m.contains("env = { OPENAI_API_KEY = \"") && m.contains("timeout_s = -1"));
        for key in [
            "token",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "ANTHROPIC_API_KEY",
            "\"X-Api-Key\"",
            "'db-password'",
            "auth.token",
        ] {
            let t = format!("env = {{ PLAIN = \"visible\", {key} = \"SECRETenv123\", N = 1 }}\n");
            let m = masked(&t);
            assert!(!m.contains("SECRETenv123"), "{key}: {m}");
            assert!(
                m.contains("PLAIN = \"visible\"") && m.contains("N = 1"),
                "{m}"
            );
        }
        // A bare value, a nested table or array under a secret key: hidden whole.
        let t = "x = { token = 12345678, auth = { password = \"SECRETn1\" }, secret = [\"SECRETn2\", { a = \"SECRETn3\" }], ok = \"shown\" }\n";
        let m = masked(t);
        for s in ["12345678", "SECRETn1", "SECRETn2", "SECRETn3"] {
            assert!(!m.contains(s), "{s}: {m}");
        }
        assert!(m.contains("ok = \"shown\""), "{m}");
        // A multi-line array or table under a secret key at the top level: every line.
        let t = "tokens = [\n  \"SECRETml3\",\n  \"SECRETml4\",\n]\nmodel = \"m\"\n";
        let m = masked(t);
        assert!(!m.contains("SECRETml3") && !m.contains("SECRETml4"), "{m}");
        assert!(m.contains("model = \"m\""), "{m}");
        // Any text: offsets and characters kept (a non-ASCII space ends a word).
        for t in [
            "x = {\u{3000}token =\u{3000}\"SECRETu1\" }\n",
            "x = [\"--token\",\u{2003}\"SECRETu2\"]\n",
            "\"\\é\", { token = 'é\n",
        ] {
            let m = masked(t);
            assert!(!m.contains("SECRETu"), "{m}");
        }
        // `max_tokens` names no secret, inline too.
        let m = masked("x = { max_tokens = 512 }\n");
        assert!(m.contains("512"), "{m}");
    }

    /// The element after a secret-looking flag in an array, and the value of a
    /// `KEY=VALUE` / `KEY: VALUE` string with a secret-looking key, are hidden.
    #[test]
    fn values_after_secret_flags_are_masked() {
        let t = "command=[\"x\",\"--api-key\",\"SECRETarg123\"]\n";
        let m = masked(t);
        assert!(!m.contains("SECRETarg123"), "{m}");
        assert!(m.contains("\"--api-key\""), "{m}");
        let t = "command = [\"run\", \"--model\", \"gpt-4o\", \"--token\", \"SECRETarg456\", \"--password\", 'SECRETarg789', \"--api-key=SECRETeq1\", \"-H\", \"Authorization: Bearer SECRETbear\", \"OPENAI_API_KEY=SECRETeq2\"]\n";
        let m = masked(t);
        for s in [
            "SECRETarg456",
            "SECRETarg789",
            "SECRETeq1",
            "SECRETbear",
            "SECRETeq2",
        ] {
            assert!(!m.contains(s), "{s}: {m}");
        }
        assert!(m.contains("\"--model\", \"gpt-4o\""), "{m}");
        // A multi-line array, and a snippet that starts inside one.
        let t = "command = [\n  \"x\",\n  \"--token\",\n  \"SECRETml1\",\n  5,\n]\n[[jobs]]\nname = \"b\"\n";
        let m = masked(t);
        assert!(!m.contains("SECRETml1"), "{m}");
        assert!(m.contains("[[jobs]]\nname = \"b\""), "{m}");
        let t = "  \"--token\",\n  \"SECRETml2\",\n  5,\n]\n";
        assert!(!masked(t).contains("SECRETml2"));
        // A flag at the end of an array hides nothing after it.
        let m = masked("a = [\"--token\"]\nb = \"shown\"\n");
        assert!(m.contains("b = \"shown\""), "{m}");
    }

    /// Credential-looking values in arrays and inline tables, and the word after `Bearer`.
    #[test]
    fn credentials_in_arrays_and_bearer_values_are_masked() {
        let m = masked("sizes=[\"Bearer SECRETxyz\"]\n");
        assert!(!m.contains("SECRETxyz") && m.contains("Bearer"), "{m}");
        for v in ["sk-proj-SECRETabc123def456ghi789", "Zq9xK2mP7vL4nR8t"] {
            for t in [
                format!("max_tokens = \"{v}\"\n"),
                format!("sizes = [8, \"{v}\"]\n"),
                format!("x = {{ a = \"{v}\" }}\n"),
            ] {
                assert!(!masked(&t).contains(v), "{t}");
            }
        }
    }

    /// Every value under a secret-named table header is masked, up to the next header;
    /// the word after `Basic` is masked as after `Bearer`.
    #[test]
    fn values_under_a_secret_table_and_basic_credentials_are_masked() {
        let t = "name = \"s\"\n[jobs.credentials]\nfoo = \"plainvalue1\"\nbar = 42\n\
                 [jobs.other]  # a comment\nbaz = \"shownvalue\"\n";
        let m = masked(t);
        assert!(!m.contains("plainvalue1") && !m.contains("42"), "{m}");
        assert!(
            m.contains("shownvalue") && m.contains("name = \"s\""),
            "{m}"
        );
        let m = masked("h = \"use Basic dXNlcjpwdw== here\"\n");
        assert!(!m.contains("dXNlcjpwdw") && m.contains("Basic"), "{m}");
        assert_eq!(table_header("[[jobs]]"), Some("jobs"));
        assert_eq!(table_header("  [a.\"b c\"] # x"), Some("a.\"b c\""));
        assert_eq!(table_header("[1, 2]"), None);
        assert_eq!(table_header("x = [1]"), None);
    }

    /// A serde message never quotes a string value: it gives its size.
    #[test]
    fn serde_messages_never_quote_strings() {
        for (msg, shown) in [
            (
                "invalid type: string \"sk-proj-SECRETabc123def456ghi789\", expected u64",
                "invalid type: a string (32 characters), expected u64",
            ),
            (
                "invalid type: string \"Zq9xK2mP7vL4nR8t\", expected u64",
                "invalid type: a string (16 characters), expected u64",
            ),
            (
                "invalid value: string \"Bearer SECRETxyz\", expected a URL",
                "invalid value: a string (16 characters), expected a URL",
            ),
            (
                r#"invalid type: string "a\"b\\c\n\u{1b}é", expected u64"#,
                "invalid type: a string (8 characters), expected u64",
            ),
            (
                "invalid type: string \"x\", expected u64",
                "invalid type: a string (1 character), expected u64",
            ),
            (
                "invalid type: string \"SECRETcut",
                "invalid type: a string (9 characters)",
            ),
        ] {
            assert_eq!(serde_strings(msg), shown);
        }
        let plain = "unknown variant `contex`, expected one of `context`";
        assert!(matches!(serde_strings(plain), Cow::Borrowed(_)));
    }

    /// A message about suite lines never shows what their snippet masks.
    #[test]
    fn messages_hide_what_the_snippet_masks() {
        let t = "env = { OPENAI_API_KEY = \"SECRETenv123\" }\nkind = \"Bearer SECRETxyz\"\ntoken = \"two words\"\nname = \"sk-proj-SECRETabc123def456ghi789\"\nmodel = \"m\"\n";
        let hidden = hidden_values(t, &mask_source(t, false));
        for (msg, gone) in [
            ("`SECRETenv123` is not one of `a`, `b`", "SECRETenv123"),
            ("invalid value `Bearer SECRETxyz`.", "SECRETxyz"),
            ("duplicate name `two words`", "two words"),
            (
                "duplicate job name `sk-proj-SECRETabc123def456ghi789` (first declared on line 3)",
                "SECRETabc",
            ),
            ("value SECRETenv123: bad", "SECRETenv123"),
        ] {
            let m = mask_message(msg, &hidden);
            assert!(!m.contains(gone), "{msg} → {m}");
            assert_eq!(m.len(), msg.len());
        }
        // Credential-looking words are hidden whatever the lines.
        let m = mask_message("tool `Zq9xK2mP7vL4nR8t` is unknown", &[]);
        assert!(!m.contains("Zq9xK2mP7vL4nR8t"), "{m}");
        // What no snippet masks stays: the field, the expected values, a model name.
        let msg = "invalid value for `jobs[0].kind`: `m` is not one of `context`, `swe`";
        assert_eq!(mask_message(msg, &hidden), msg);
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
