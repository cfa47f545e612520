//! The vocabulary of provenance: what a figure rests on ([`Basis`]), where a token count
//! came from ([`TokenSource`], [`TokenEstimate`]; a count with its source, [`TokenCount`]), what an energy figure is
//! ([`EnergyBasis`]), what one power reading means ([`PowerBasis`], [`PowerBasisLabel`]) and
//! what supplied power for a run at all ([`PowerSource`]).
//!
//! Every enum serializes in snake_case; `label()` gives the words used in console lines and
//! gate messages.

use serde::{Deserialize, Serialize};

/// What a figure rests on. Every [`super::Figure`] carries one, also when its value is
/// missing (then the basis it would have had, or [`Basis::Unavailable`] when nothing could
/// have produced it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Latencies the client measured on the run's monotonic clock (TTFT, ITL, E2E).
    ClientTiming,
    /// Counts of request outcomes the client observed (successes, failure codes).
    RequestOutcomes,
    /// Reported by the server: `usage` token counts, engine counters.
    ServerReported,
    /// The client's own estimate (output tokens without server `usage`).
    ClientEstimate,
    /// Deterministic grading checks.
    Grading,
    /// The exit status of an SWE harness process.
    Harness,
    /// Device energy at controlled concurrency (one trajectory in flight).
    Measured,
    /// Energy split between trajectories in flight together
    /// (docs/measurement.md "The wall: controlled concurrency only").
    Apportioned,
    /// The built-in simulator's power model: no device measured anything.
    Simulated,
    /// A comparison with a saved baseline run.
    Baseline,
    /// Nothing could produce this figure in this run (e.g. no power source).
    Unavailable,
}

impl Basis {
    /// The words used in console lines and gate messages (`client timing`, `measured`, …).
    pub fn label(self) -> &'static str {
        match self {
            Basis::ClientTiming => "client timing",
            Basis::RequestOutcomes => "request outcomes",
            Basis::ServerReported => "server-reported",
            Basis::ClientEstimate => "client estimate",
            Basis::Grading => "grading",
            Basis::Harness => "harness",
            Basis::Measured => "measured",
            Basis::Apportioned => "apportioned",
            Basis::Simulated => "simulated",
            Basis::Baseline => "baseline comparison",
            Basis::Unavailable => "unavailable",
        }
    }

    /// The serialized name (`client_timing`, `server_reported`, …).
    pub fn name(self) -> &'static str {
        match self {
            Basis::ClientTiming => "client_timing",
            Basis::RequestOutcomes => "request_outcomes",
            Basis::ServerReported => "server_reported",
            Basis::ClientEstimate => "client_estimate",
            Basis::Grading => "grading",
            Basis::Harness => "harness",
            Basis::Measured => "measured",
            Basis::Apportioned => "apportioned",
            Basis::Simulated => "simulated",
            Basis::Baseline => "baseline",
            Basis::Unavailable => "unavailable",
        }
    }
}

impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// Where a token count came from (docs/measurement.md, field cases C11, C12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// `usage.completion_tokens` reported by the server.
    Server,
    /// The client's estimate ([`TokenEstimate`]), only when the server sent no usage.
    ClientEstimate,
}

impl TokenSource {
    /// The [`Basis`] of a count from this source.
    pub fn basis(self) -> Basis {
        match self {
            TokenSource::Server => Basis::ServerReported,
            TokenSource::ClientEstimate => Basis::ClientEstimate,
        }
    }

    /// The source of a figure over several counts: `None` without any, `client_estimate`
    /// when any count is estimated, else `server`.
    pub fn combine(sources: impl IntoIterator<Item = TokenSource>) -> Option<TokenSource> {
        sources
            .into_iter()
            .fold(None, |acc: Option<TokenSource>, s| {
                Some(acc.map_or(s, |a| a.and(s)))
            })
    }

    /// The source of a count the client estimated or not (`output_tokens_estimated`).
    pub fn estimated(estimated: bool) -> TokenSource {
        if estimated {
            TokenSource::ClientEstimate
        } else {
            TokenSource::Server
        }
    }

    /// The weaker of two sources: an estimate anywhere makes a total an estimate.
    pub fn and(self, other: TokenSource) -> TokenSource {
        if self == TokenSource::ClientEstimate || other == TokenSource::ClientEstimate {
            TokenSource::ClientEstimate
        } else {
            TokenSource::Server
        }
    }
}

/// How the client estimated an output-token count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EstimateMethod {
    /// `ceil(bytes / 4)` of the UTF-8 concatenation of reasoning, visible text and every
    /// tool call's name and arguments, once over the whole output (C11: never per chunk).
    /// A coarse stand-in for a tokenizer: about 4 bytes per token for English BPE
    /// vocabularies.
    #[serde(rename = "utf8_bytes_div_4")]
    Utf8BytesDiv4,
    /// The suite's tokenizer (`tokenizer` = a tokenizer.json or the engine's
    /// `/tokenize`) over reasoning, visible text and tool calls, concatenated as above.
    #[serde(rename = "tokenizer")]
    Tokenizer,
}

impl EstimateMethod {
    /// The serialized name (`utf8_bytes_div_4`).
    pub fn name(self) -> &'static str {
        match self {
            EstimateMethod::Utf8BytesDiv4 => "utf8_bytes_div_4",
            EstimateMethod::Tokenizer => "tokenizer",
        }
    }
}

/// A client-estimated output-token count with its method. Never stands in for server
/// `usage`: it is recorded beside `completion_tokens`, which stays `null`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TokenEstimate {
    /// Estimated tokens.
    pub tokens: u64,
    /// How they were estimated.
    pub method: EstimateMethod,
}

/// An output-token count with where it came from: the server's `usage`, or the client's
/// estimate. The one shape of "n tokens, server-reported or estimated", for one request
/// or summed over many (a sum with any estimate in it is an estimate).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TokenCount {
    /// Tokens.
    pub tokens: u64,
    /// Whose count it is.
    pub source: TokenSource,
}

impl TokenCount {
    /// `tokens` the server reported.
    pub fn server(tokens: u64) -> TokenCount {
        TokenCount {
            tokens,
            source: TokenSource::Server,
        }
    }

    /// `tokens` the client estimated or not.
    pub fn of(tokens: u64, estimated: bool) -> TokenCount {
        TokenCount {
            tokens,
            source: TokenSource::estimated(estimated),
        }
    }

    /// A response's count: the server's `completion_tokens`, else the client's estimate;
    /// `None` when neither exists.
    pub fn of_usage(
        completion_tokens: Option<u64>,
        estimate: Option<TokenEstimate>,
    ) -> Option<TokenCount> {
        match (completion_tokens, estimate) {
            (Some(n), _) => Some(TokenCount::server(n)),
            (None, Some(e)) => Some(TokenCount {
                tokens: e.tokens,
                source: TokenSource::ClientEstimate,
            }),
            (None, None) => None,
        }
    }

    /// The count is the client's estimate.
    pub fn is_estimate(self) -> bool {
        self.source == TokenSource::ClientEstimate
    }

    /// The [`Basis`] of a figure made of this count.
    pub fn basis(self) -> Basis {
        self.source.basis()
    }

    /// The sum of two counts (saturating: server counts are untrusted input), an estimate
    /// when either is.
    pub fn plus(self, other: TokenCount) -> TokenCount {
        TokenCount {
            tokens: self.tokens.saturating_add(other.tokens),
            source: self.source.and(other.source),
        }
    }

    /// The total of counts that must all be known: `None` as soon as one is `None` (a
    /// partial sum is not a total); `server(0)` for none.
    pub fn total(counts: impl IntoIterator<Item = Option<TokenCount>>) -> Option<TokenCount> {
        counts
            .into_iter()
            .try_fold(TokenCount::server(0), |sum, c| Some(sum.plus(c?)))
    }
}

/// What an energy figure is (docs/measurement.md "The wall: controlled concurrency only"; the
/// simulator never stands in for a measurement: docs/figures.md "Bases"). One rule,
/// [`EnergyBasis::of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EnergyBasis {
    /// One trajectory in flight on a device power series: the window's device energy is
    /// the step's cost plus idle draw.
    Measured,
    /// More than one trajectory in flight (declared or observed): windows may mix
    /// concurrent work; the figure is an apportionment, not a measurement, whatever the
    /// power source.
    Apportioned,
    /// One trajectory in flight, but the power is the built-in simulator's model.
    Simulated,
}

impl EnergyBasis {
    /// The basis of an energy figure taken with at most `max_trajectories_in_flight`
    /// trajectories in flight from `source`: `None` without a power source; `apportioned`
    /// above one in flight (the wall beats every source); `simulated` on the simulator;
    /// else `measured`.
    pub fn of(max_trajectories_in_flight: u32, source: Option<PowerSource>) -> Option<Self> {
        let source = source?;
        Some(if max_trajectories_in_flight > 1 {
            EnergyBasis::Apportioned
        } else if source == PowerSource::Simulated {
            EnergyBasis::Simulated
        } else {
            EnergyBasis::Measured
        })
    }

    /// `measured`, `apportioned` or `simulated`.
    pub fn label(self) -> &'static str {
        match self {
            EnergyBasis::Measured => "measured",
            EnergyBasis::Apportioned => "apportioned",
            EnergyBasis::Simulated => "simulated",
        }
    }
}

impl From<EnergyBasis> for Basis {
    fn from(b: EnergyBasis) -> Basis {
        match b {
            EnergyBasis::Measured => Basis::Measured,
            EnergyBasis::Apportioned => Basis::Apportioned,
            EnergyBasis::Simulated => Basis::Simulated,
        }
    }
}

/// What supplied power readings for a run: decided from what was actually sampled, never
/// from configuration (`gpu = "auto"` with no NVML is no power source at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerSource {
    /// A device's power readings (NVML GPUs, or samples of such devices read back).
    Nvml,
    /// The built-in simulator's power model.
    Simulated,
}

impl PowerSource {
    /// `nvml` or `simulated`.
    pub fn label(self) -> &'static str {
        match self {
            PowerSource::Nvml => "nvml",
            PowerSource::Simulated => "simulated",
        }
    }

    /// The source of a set of power series: `None` without any; `simulated` when any
    /// series is simulated (a figure summed over it is not a measurement); else `nvml`.
    pub fn of_bases(bases: impl IntoIterator<Item = PowerBasis>) -> Option<PowerSource> {
        let mut out = None;
        for b in bases {
            if b == PowerBasis::Simulated {
                return Some(PowerSource::Simulated);
            }
            out = Some(PowerSource::Nvml);
        }
        out
    }
}

/// What one power reading means (field case C20; docs/measurement.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerBasis {
    /// Instantaneous power (`NVML_FI_DEV_POWER_INSTANT`, or a probe's instant reading).
    Instant,
    /// `power_usage()` on Ampere (except GA100) and newer: a 1 s trailing average.
    #[serde(rename = "averaged_1s")]
    Averaged1s,
    /// The built-in simulator's modelled power (no device measured anything).
    Simulated,
}

impl PowerBasis {
    /// `instant`, `averaged_1s` or `simulated`.
    pub fn label(self) -> &'static str {
        match self {
            PowerBasis::Instant => "instant",
            PowerBasis::Averaged1s => "averaged_1s",
            PowerBasis::Simulated => "simulated",
        }
    }

    /// Same as [`PowerBasis::label`] (the serialized name).
    pub fn name(self) -> &'static str {
        self.label()
    }
}

/// The power basis behind a step's or trajectory's energy: one device basis, or `mixed`
/// when devices differ (field case C20: the report records which source was used).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PowerBasisLabel {
    /// Instantaneous power.
    Instant,
    /// 1 s trailing-average power.
    #[serde(rename = "averaged_1s")]
    Averaged1s,
    /// The simulator's modelled power.
    Simulated,
    /// Devices with different bases.
    Mixed,
}

impl PowerBasisLabel {
    /// `instant`, `averaged_1s`, `simulated` or `mixed`.
    pub fn label(self) -> &'static str {
        match self {
            PowerBasisLabel::Instant => "instant",
            PowerBasisLabel::Averaged1s => "averaged_1s",
            PowerBasisLabel::Simulated => "simulated",
            PowerBasisLabel::Mixed => "mixed",
        }
    }

    /// One label for a set of bases: `None` without any, `mixed` when they differ.
    pub fn of(mut bases: impl Iterator<Item = PowerBasis>) -> Option<PowerBasisLabel> {
        let first = bases.next()?;
        if bases.any(|b| b != first) {
            Some(PowerBasisLabel::Mixed)
        } else {
            Some(first.into())
        }
    }
}

impl From<PowerBasis> for PowerBasisLabel {
    fn from(b: PowerBasis) -> Self {
        match b {
            PowerBasis::Instant => PowerBasisLabel::Instant,
            PowerBasis::Averaged1s => PowerBasisLabel::Averaged1s,
            PowerBasis::Simulated => PowerBasisLabel::Simulated,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn energy_basis_one_rule() {
        use EnergyBasis::*;
        assert_eq!(EnergyBasis::of(1, None), None);
        assert_eq!(EnergyBasis::of(4, None), None);
        assert_eq!(EnergyBasis::of(1, Some(PowerSource::Nvml)), Some(Measured));
        assert_eq!(
            EnergyBasis::of(1, Some(PowerSource::Simulated)),
            Some(Simulated)
        );
        assert_eq!(
            EnergyBasis::of(2, Some(PowerSource::Nvml)),
            Some(Apportioned)
        );
        assert_eq!(
            EnergyBasis::of(2, Some(PowerSource::Simulated)),
            Some(Apportioned)
        );
        assert_eq!(PowerSource::of_bases([]), None);
        assert_eq!(
            PowerSource::of_bases([PowerBasis::Instant, PowerBasis::Averaged1s]),
            Some(PowerSource::Nvml)
        );
        assert_eq!(
            PowerSource::of_bases([PowerBasis::Instant, PowerBasis::Simulated]),
            Some(PowerSource::Simulated)
        );
    }

    /// A total needs every count; an estimate anywhere makes it an estimate; sums of
    /// untrusted counts saturate.
    #[test]
    fn token_counts_total_and_combine() {
        let est = TokenCount::of(3, true);
        assert_eq!(TokenCount::total([]), Some(TokenCount::server(0)));
        assert_eq!(
            TokenCount::total([Some(TokenCount::server(2)), Some(est)]),
            Some(TokenCount::of(5, true))
        );
        assert_eq!(TokenCount::total([Some(TokenCount::server(2)), None]), None);
        assert_eq!(
            TokenCount::server(u64::MAX).plus(TokenCount::server(1)),
            TokenCount::server(u64::MAX)
        );
        let estimate = TokenEstimate {
            tokens: 7,
            method: EstimateMethod::Utf8BytesDiv4,
        };
        assert_eq!(
            TokenCount::of_usage(Some(4), Some(estimate)),
            Some(TokenCount::server(4))
        );
        assert_eq!(
            TokenCount::of_usage(None, Some(estimate)),
            Some(TokenCount::of(7, true))
        );
        assert_eq!(TokenCount::of_usage(None, None), None);
        assert!(est.is_estimate() && est.basis() == Basis::ClientEstimate);
        assert_eq!(est.source, TokenSource::ClientEstimate);
    }

    #[test]
    fn names_are_the_serde_spelling() {
        for b in [
            Basis::ClientTiming,
            Basis::RequestOutcomes,
            Basis::ServerReported,
            Basis::ClientEstimate,
            Basis::Grading,
            Basis::Harness,
            Basis::Measured,
            Basis::Apportioned,
            Basis::Simulated,
            Basis::Baseline,
            Basis::Unavailable,
        ] {
            assert_eq!(
                serde_json::to_string(&b).unwrap(),
                format!("\"{}\"", b.name())
            );
        }
        assert_eq!(
            serde_json::to_string(&EstimateMethod::Utf8BytesDiv4).unwrap(),
            "\"utf8_bytes_div_4\""
        );
        assert_eq!(
            TokenSource::Server.and(TokenSource::ClientEstimate),
            TokenSource::ClientEstimate
        );
    }
}
