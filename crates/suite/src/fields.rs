//! Field-name introspection of serde structs and did-you-mean suggestions.
//!
//! The accepted keys of each table come from the serde derive itself (the `FIELDS` list
//! passed to `deserialize_struct`), so the unknown-key check can never drift from the
//! structs that deserialize the suite.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// The field names a derived `Deserialize` struct accepts (empty for non-structs).
pub(crate) fn struct_fields<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut out = None;
    let _ = T::deserialize(Probe(&mut out));
    out.unwrap_or(&[])
}

struct Probe<'a>(&'a mut Option<&'static [&'static str]>);

#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("field probe")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<T: fmt::Display>(_: T) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Stop;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Stop> {
        *self.0 = Some(fields);
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
}

/// The candidate closest to `word` by Damerau–Levenshtein distance (case-insensitive),
/// if it is close enough to be a plausible typo: distance ≤ max(1, len/3).
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let w = word.to_ascii_lowercase();
    let limit = (w.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(&w, &c.to_ascii_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}
