//! Strict query-string parsing for the API (docs/artifacts.md "The dashboard API": unknown or
//! repeated keys and bad limits are errors). Pure: no I/O.
//!
//! Rules: the raw query is at most [`MAX_QUERY_BYTES`] bytes; pairs are separated by `&`
//! and written `key=value`; keys and values are percent-decoded exactly once (`%252e`
//! becomes the three characters `%2e`, never `.`); `+` is not a space; a decoded key or
//! value must be valid UTF-8 without control characters; every key must be one the route
//! accepts and may appear once. Any violation is a [`QueryError`], answered 400.

use std::collections::BTreeMap;

/// Longest raw query string accepted, bytes (oversized input → 400).
pub const MAX_QUERY_BYTES: usize = 2048;
/// Longest decoded value accepted, bytes.
pub const MAX_VALUE_BYTES: usize = 256;

/// Why a query string was refused. The messages never echo the input except a key that
/// matches `[a-z_]{1,32}`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// The raw query exceeds [`MAX_QUERY_BYTES`].
    #[error("query string longer than {MAX_QUERY_BYTES} bytes")]
    TooLong,
    /// A pair is empty, has no `=`, or has an empty key.
    #[error("malformed query string: every pair must be key=value")]
    Malformed,
    /// A `%` escape that is not two hex digits, or a decoded text that is not UTF-8 or
    /// holds a control character.
    #[error("malformed percent-encoding or control character in the query string")]
    BadEncoding,
    /// A value over [`MAX_VALUE_BYTES`].
    #[error("query value longer than {MAX_VALUE_BYTES} bytes")]
    ValueTooLong,
    /// A key the route does not accept (the key, when it is a plain `[a-z_]` word).
    #[error("unknown query key{}", .0.as_deref().map(|k| format!(" `{k}`")).unwrap_or_default())]
    UnknownKey(Option<String>),
    /// A key given twice.
    #[error("duplicate query key `{0}`")]
    DuplicateKey(String),
    /// A required key is absent.
    #[error("missing query key `{0}`")]
    MissingKey(&'static str),
    /// A value fails its syntax or range (the key and the rule).
    #[error("invalid `{0}`: {1}")]
    InvalidValue(&'static str, &'static str),
}

impl QueryError {
    /// The typed error code of the API body (`bad_query`, `unknown_query_key`, …).
    pub fn code(&self) -> &'static str {
        match self {
            QueryError::TooLong | QueryError::ValueTooLong => "input_too_large",
            QueryError::Malformed | QueryError::BadEncoding => "bad_query",
            QueryError::UnknownKey(_) => "unknown_query_key",
            QueryError::DuplicateKey(_) => "duplicate_query_key",
            QueryError::MissingKey(_) => "missing_query_key",
            QueryError::InvalidValue(key, _) => match *key {
                "limit" => "invalid_limit",
                "run_id" => "invalid_run_id",
                _ => "invalid_query_value",
            },
        }
    }
}

/// Decodes `%XX` escapes once (pure). `+` stays `+`. Errors on a truncated or non-hex
/// escape, on invalid UTF-8 and on any control character (NUL included) after decoding.
pub fn percent_decode_once(s: &str) -> Result<String, QueryError> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            let (Some(h), Some(l)) = (
                b.get(i + 1).copied().and_then(hex),
                b.get(i + 2).copied().and_then(hex),
            ) else {
                return Err(QueryError::BadEncoding);
            };
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let text = String::from_utf8(out).map_err(|_| QueryError::BadEncoding)?;
    if text.chars().any(char::is_control) {
        return Err(QueryError::BadEncoding);
    }
    Ok(text)
}

fn printable_key(k: &str) -> Option<String> {
    (!k.is_empty() && k.len() <= 32 && k.bytes().all(|c| c.is_ascii_lowercase() || c == b'_'))
        .then(|| k.to_string())
}

/// A parsed query: each allowed key at most once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Query {
    values: BTreeMap<&'static str, String>,
}

impl Query {
    /// Parses `raw` (the text after `?`, or `None`) accepting only `allowed` keys.
    pub fn parse(raw: Option<&str>, allowed: &[&'static str]) -> Result<Self, QueryError> {
        let mut q = Query::default();
        let Some(raw) = raw else {
            return Ok(q);
        };
        if raw.len() > MAX_QUERY_BYTES {
            return Err(QueryError::TooLong);
        }
        if raw.is_empty() {
            return Ok(q);
        }
        // Syntax of the whole string first, then the keys.
        let mut pairs = Vec::new();
        for pair in raw.split('&') {
            let (k, v) = pair.split_once('=').ok_or(QueryError::Malformed)?;
            let key = percent_decode_once(k)?;
            if key.is_empty() {
                return Err(QueryError::Malformed);
            }
            let value = percent_decode_once(v)?;
            if value.len() > MAX_VALUE_BYTES {
                return Err(QueryError::ValueTooLong);
            }
            pairs.push((key, value));
        }
        for (key, value) in pairs {
            let Some(&known) = allowed.iter().find(|a| **a == key) else {
                return Err(QueryError::UnknownKey(printable_key(&key)));
            };
            if q.values.insert(known, value).is_some() {
                return Err(QueryError::DuplicateKey(known.to_string()));
            }
        }
        Ok(q)
    }

    /// The value of `key`, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The value of a required `key`.
    pub fn required(&self, key: &'static str) -> Result<&str, QueryError> {
        self.get(key).ok_or(QueryError::MissingKey(key))
    }

    /// An unsigned decimal integer (digits only, no sign, no leading `+`) or `default`
    /// when absent; it must lie in `min..=max`.
    pub fn u64_in(
        &self,
        key: &'static str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, QueryError> {
        let Some(v) = self.get(key) else {
            return Ok(default);
        };
        if v.is_empty() || v.len() > 20 || !v.bytes().all(|c| c.is_ascii_digit()) {
            return Err(QueryError::InvalidValue(
                key,
                "not an unsigned decimal integer",
            ));
        }
        let n: u64 = v
            .parse()
            .map_err(|_| QueryError::InvalidValue(key, "out of range"))?;
        if n < min || n > max {
            return Err(QueryError::InvalidValue(key, "out of range"));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEYS: &[&str] = &["run_id", "after_seq", "limit"];

    #[test]
    fn parses_known_keys_once() {
        let q = Query::parse(Some("run_id=r1&after_seq=0&limit=500"), KEYS).unwrap();
        assert_eq!(q.get("run_id"), Some("r1"));
        assert_eq!(q.u64_in("limit", 500, 1, 1000), Ok(500));
        assert_eq!(q.u64_in("after_seq", 0, 0, u64::MAX), Ok(0));
        assert_eq!(Query::parse(None, KEYS), Ok(Query::default()));
        assert_eq!(Query::parse(Some(""), KEYS), Ok(Query::default()));
    }

    #[test]
    fn refuses_unknown_duplicate_and_malformed() {
        assert_eq!(
            Query::parse(Some("run_id=a&run_id=b"), KEYS),
            Err(QueryError::DuplicateKey("run_id".into()))
        );
        // A duplicate spelled with an escape is still a duplicate (decoded once).
        assert_eq!(
            Query::parse(Some("run_id=a&run%5Fid=b"), KEYS),
            Err(QueryError::DuplicateKey("run_id".into()))
        );
        assert_eq!(
            Query::parse(Some("path=/etc/passwd"), KEYS),
            Err(QueryError::UnknownKey(Some("path".into())))
        );
        assert_eq!(
            Query::parse(Some("<script>=1"), KEYS),
            Err(QueryError::UnknownKey(None))
        );
        assert_eq!(
            Query::parse(Some("run_id"), KEYS),
            Err(QueryError::Malformed)
        );
        assert_eq!(
            Query::parse(Some("a=1&&b=2"), KEYS),
            Err(QueryError::Malformed)
        );
        assert_eq!(Query::parse(Some("=1"), KEYS), Err(QueryError::Malformed));
        assert_eq!(
            Query::parse(Some("run_id=a%00b"), KEYS),
            Err(QueryError::BadEncoding)
        );
        assert_eq!(
            Query::parse(Some("run_id=%zz"), KEYS),
            Err(QueryError::BadEncoding)
        );
        assert_eq!(
            Query::parse(Some("run_id=%e"), KEYS),
            Err(QueryError::BadEncoding)
        );
        let long = format!("run_id={}", "a".repeat(MAX_QUERY_BYTES));
        assert_eq!(Query::parse(Some(&long), KEYS), Err(QueryError::TooLong));
        let val = format!("run_id={}", "a".repeat(MAX_VALUE_BYTES + 1));
        assert_eq!(
            Query::parse(Some(&val), KEYS),
            Err(QueryError::ValueTooLong)
        );
    }

    #[test]
    fn decodes_exactly_once() {
        assert_eq!(percent_decode_once("%252e%252e").unwrap(), "%2e%2e");
        assert_eq!(percent_decode_once("%2e%2e%2f").unwrap(), "../");
        assert_eq!(percent_decode_once("a+b").unwrap(), "a+b");
    }

    #[test]
    fn limits_are_strict_integers_in_range() {
        let q = |s: &str| Query::parse(Some(s), KEYS).unwrap();
        for bad in [
            "limit=0",
            "limit=1001",
            "limit=-1",
            "limit=+5",
            "limit=1e3",
            "limit=",
            "limit=99999999999999999999999",
        ] {
            assert_eq!(
                q(bad).u64_in("limit", 500, 1, 1000).unwrap_err().code(),
                "invalid_limit",
                "{bad}"
            );
        }
        assert_eq!(q("limit=1000").u64_in("limit", 500, 1, 1000), Ok(1000));
        assert_eq!(
            q("run_id=x").required("after_seq"),
            Err(QueryError::MissingKey("after_seq"))
        );
    }
}
