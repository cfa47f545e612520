//! Integration tests of `telemetry`.
mod energy;
// Only the telemetry receivers' part of it is used here (no method, header or body).
#[path = "../support/http.rs"]
#[allow(dead_code)]
mod http;
mod profiles;
mod prom;
mod samplers;
