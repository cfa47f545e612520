//! [`Figure`]: a value with its basis, next to each other in the model and in every
//! artifact. Missing is `null` with a reason, never 0.

use serde::{Deserialize, Serialize};

use super::basis::{Basis, TokenSource};

/// One figure: its value (`null` when unavailable), what it rests on, which token count it
/// divides by or counts when it is token-derived, and why it is missing when it is.
///
/// JSON: `{"value": …, "basis": "measured", "tokens": null, "reason": null}` (every key
/// always present).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure<T> {
    /// The value; `null` when unavailable.
    pub value: Option<T>,
    /// What the value rests on (or would have: the basis of a missing figure says what
    /// could have produced it, [`Basis::Unavailable`] when nothing could).
    pub basis: Basis,
    /// For a figure derived from output-token counts (TPOT, tokens/s, tokens per joule,
    /// token totals): whether those counts are the server's or the client's estimate;
    /// `null` for figures that involve no token count.
    pub tokens: Option<TokenSource>,
    /// Why the value is missing (`null` when it is present).
    pub reason: Option<String>,
}

impl<T> Figure<T> {
    /// A present value.
    pub fn of(value: T, basis: Basis) -> Figure<T> {
        Figure {
            value: Some(value),
            basis,
            tokens: None,
            reason: None,
        }
    }

    /// A missing value with the basis it would have had and why it is missing.
    pub fn missing(basis: Basis, reason: impl Into<String>) -> Figure<T> {
        Figure {
            value: None,
            basis,
            tokens: None,
            reason: Some(reason.into()),
        }
    }

    /// [`Figure::of`] for `Some`, [`Figure::missing`] with `reason` for `None`.
    pub fn from_option(value: Option<T>, basis: Basis, reason: impl Into<String>) -> Figure<T> {
        match value {
            Some(v) => Figure::of(v, basis),
            None => Figure::missing(basis, reason),
        }
    }

    /// This figure, marked as derived from token counts of `source`.
    pub fn with_tokens(mut self, source: Option<TokenSource>) -> Figure<T> {
        self.tokens = source;
        self
    }

    /// Whether the value is present.
    pub fn is_present(&self) -> bool {
        self.value.is_some()
    }

    /// The basis in words, with a token qualifier when the figure rests on client-estimated
    /// token counts: `client timing; tokens client-estimated`.
    pub fn basis_text(&self) -> String {
        basis_text(self.basis, self.tokens)
    }

    /// The same figure with its value mapped.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Figure<U> {
        Figure {
            value: self.value.map(f),
            basis: self.basis,
            tokens: self.tokens,
            reason: self.reason,
        }
    }
}

impl Figure<f64> {
    /// A present float; a non-finite value becomes missing with reason `non-finite value`
    /// (a NaN never passes or fails a bound by accident).
    pub fn finite(value: f64, basis: Basis) -> Figure<f64> {
        if value.is_finite() {
            Figure::of(value, basis)
        } else {
            Figure::missing(basis, "non-finite value")
        }
    }

    /// [`Figure::finite`] for `Some`, missing with `reason` for `None`.
    pub fn finite_or(value: Option<f64>, basis: Basis, reason: impl Into<String>) -> Figure<f64> {
        match value {
            Some(v) => Figure::finite(v, basis),
            None => Figure::missing(basis, reason),
        }
    }
}

/// `basis` in words, with `; tokens client-estimated` when `tokens` is the client's
/// estimate (a gate on an estimated figure says so).
pub fn basis_text(basis: Basis, tokens: Option<TokenSource>) -> String {
    match tokens {
        Some(TokenSource::ClientEstimate) if basis != super::Basis::ClientEstimate => {
            format!("{}; tokens client-estimated", basis.label())
        }
        _ => basis.label().to_string(),
    }
}

/// Tokens per joule: `tokens · 1000 / mJ`; `None` when either is missing or zero (the one
/// definition every tokens-per-joule figure uses).
pub fn tokens_per_joule(tokens: Option<u64>, mj: Option<u64>) -> Option<f64> {
    match (tokens, mj) {
        (Some(t), Some(e)) if t > 0 && e > 0 => Some(t as f64 * 1000.0 / e as f64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_serializes_every_key_and_missing_as_null() {
        let f: Figure<f64> = Figure::missing(Basis::Unavailable, "no power source");
        assert_eq!(
            serde_json::to_string(&f).unwrap(),
            r#"{"value":null,"basis":"unavailable","tokens":null,"reason":"no power source"}"#
        );
        let g = Figure::finite(f64::NAN, Basis::Measured);
        assert_eq!(g.value, None);
        assert_eq!(g.reason.as_deref(), Some("non-finite value"));
        let t = Figure::of(3.0, Basis::ClientTiming).with_tokens(Some(TokenSource::ClientEstimate));
        assert_eq!(t.basis_text(), "client timing; tokens client-estimated");
        assert_eq!(
            Figure::of(3.0, Basis::ClientEstimate)
                .with_tokens(Some(TokenSource::ClientEstimate))
                .basis_text(),
            "client estimate"
        );
    }

    #[test]
    fn tokens_per_joule_is_null_for_missing_or_zero() {
        assert_eq!(tokens_per_joule(Some(10), Some(2000)), Some(5.0));
        assert_eq!(tokens_per_joule(None, Some(2000)), None);
        assert_eq!(tokens_per_joule(Some(10), None), None);
        assert_eq!(tokens_per_joule(Some(0), Some(2000)), None);
        assert_eq!(tokens_per_joule(Some(10), Some(0)), None);
    }
}
