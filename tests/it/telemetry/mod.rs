//! Integration tests of `telemetry`.
mod energy;
mod profiles;
mod prom;
mod samplers;
