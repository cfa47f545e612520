//! Integration tests of `telemetry`.
mod counter_lag;
mod energy;
mod profiles;
mod prom;
mod samplers;
