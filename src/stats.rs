//! Request statistics: see [`crate::model::stats`], where they live as part of the report
//! model; re-exported here for the callers that compute them.

pub use crate::model::stats::*;
