//! The per-request measurement record and its closed vocabularies. They are part of the
//! report model and live in [`inferscope_model::request`] (with [`TokenSource`] in
//! [`inferscope_model::basis`]); re-exported here, where the client fills them in.

pub use inferscope_model::basis::{EstimateMethod, TokenEstimate, TokenSource};
pub use inferscope_model::request::{
    AssistantOutput, ChoiceRecord, FailureCode, MAX_ERROR_BYTES, MAX_KEPT_TEXT_BYTES,
    MAX_RECORDED_GAPS, RecordWarning, RequestRecord, RequestStatus, ToolCall, estimate,
    estimate_all, estimate_tokens, estimate_tokens_all, keep_text, sanitize_error,
};

/// The job note for requests that came back with another number of choices than asked
/// for ([`RecordWarning::ChoiceCountMismatch`]); `None` when there is none. `requested` is
/// the job's `n` (`None`: one choice). One line for the whole job, e.g. `choices: 2 of 4
/// requests returned another number of choices than n = 2 asked for (1 choice: 2 requests);
/// marked choice_count_mismatch` — the per-request detail is in each record.
pub fn choice_count_note<'a>(
    requested: Option<u32>,
    records: impl IntoIterator<Item = &'a RequestRecord>,
) -> Option<String> {
    let mut total = 0usize;
    let mut by_count: std::collections::BTreeMap<usize, usize> = Default::default();
    for r in records {
        total += 1;
        if r.warnings.contains(&RecordWarning::ChoiceCountMismatch) {
            // A record lists its choices when more than one came back or was asked for;
            // a mismatch without a list is one choice asked for and none returned.
            *by_count.entry(r.choices.len()).or_default() += 1;
        }
    }
    let mismatched: usize = by_count.values().sum();
    if mismatched == 0 {
        return None;
    }
    let detail: Vec<String> = by_count
        .iter()
        .map(|(c, k)| {
            format!(
                "{c} choice{}: {k} request{}",
                if *c == 1 { "" } else { "s" },
                if *k == 1 { "" } else { "s" }
            )
        })
        .collect();
    Some(format!(
        "choices: {mismatched} of {total} requests returned another number of choices than \
         n = {} asked for ({}); marked choice_count_mismatch",
        requested.unwrap_or(1),
        detail.join(", "),
    ))
}
