//! Integration tests of `timeline`.
mod artifact;
mod controls;
mod no_disk_writes;
mod perfetto;
mod secrets;
mod sink;
