//! Integration tests of `timeline`.
mod artifact;
mod controls;
mod perfetto;
mod secrets;
mod sink;
