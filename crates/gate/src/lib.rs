//! Gate evaluation: job figures against `[gates]` bounds → verdicts → job outcome → exit
//! status (docs/measurement.md). Pure logic, no I/O.
//!
//! - [`spec`]: the `[gates]` / `[overhead]` declarations (parsed from suites).
//! - [`figures`]: the measured figures a gate reads ([`FigureSet`], [`Figure`]), each with
//!   its basis (`client_timing`, `server_reported`, `client_estimate`, `simulated` /
//!   `measured` / `apportioned` energy) or the reason it is unavailable.
//! - [`verdict`]: [`judge`], [`JobOutcome`] and the exit-status constants; the verdict type
//!   is the report model's ([`Verdict`]).
//! - [`evaluate`]: one verdict per declared bound plus the built-in verdicts: zero
//!   successful requests always fails (`successful_requests >= 1`); a failed request fails
//!   the job unless the gates declare `max_error_rate` (built-in bound 0); an SWE job's
//!   harness must exit 0 (`harness_exit`).

pub mod eval;
pub mod figures;
pub mod spec;
pub mod verdict;

pub use eval::{
    HARNESS_EXIT_GATE, SUCCESSFUL_REQUESTS_GATE, SpecProblem, evaluate, validate_overhead,
    validate_spec,
};
pub use figures::{Figure, FigureSet, LatencyFigures};
pub use verdict::{Comparison, JobOutcome, Outcome, Verdict, format_number, judge};
