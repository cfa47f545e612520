//! Gate evaluation: job figures against `[gates]` bounds → verdicts → job outcome → exit
//! status (DESIGN §7, issue 6 item 1, issue 2 item 8). Pure logic, no I/O.
//!
//! - [`spec`]: the `[gates]` / `[overhead]` declarations (parsed from suites).
//! - [`figures`]: the measured figures a gate reads ([`FigureSet`], [`Figure`]), each with
//!   its basis (client timing, server usage, `simulated` / `measured` / `apportioned` energy)
//!   or the reason it is unavailable.
//! - [`verdict`]: [`Verdict`], [`Outcome`], [`JobOutcome`] and the exit-status constants.
//! - [`evaluate`]: one verdict per declared bound plus the built-in
//!   `successful_requests >= 1` verdict (zero successful requests always fails).

pub mod eval;
pub mod figures;
pub mod spec;
pub mod verdict;

pub use eval::{SUCCESSFUL_REQUESTS_GATE, SpecProblem, evaluate, validate_overhead, validate_spec};
pub use figures::{Figure, FigureSet, LatencyFigures, basis};
pub use verdict::{
    Comparison, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INCONCLUSIVE, EXIT_OK, JobOutcome, Outcome,
    Verdict, exit_status, format_number,
};
