//! Integration tests of `telemetry`.
mod energy;
#[path = "../support/http.rs"]
mod http;
mod profiles;
mod prom;
mod samplers;
