//! The per-request measurement record and its closed vocabularies. They are part of the
//! report model and live in [`crate::model::request`] (with [`TokenSource`] in
//! [`crate::model::basis`]); re-exported here, where the client fills them in.

pub use crate::model::basis::{EstimateMethod, TokenEstimate, TokenSource};
pub use crate::model::request::{
    AssistantOutput, FailureCode, MAX_ERROR_BYTES, RecordWarning, RequestRecord, RequestStatus,
    ToolCall, estimate, estimate_tokens, sanitize_error,
};
