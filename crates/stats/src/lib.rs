//! Request statistics: see [`inferscope_model::stats`], where they live as part of the report
//! model; re-exported here for the callers that compute them.

pub use inferscope_model::stats::*;
