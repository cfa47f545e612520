//! Integration tests of `attribution`.
mod fixtures;
mod markers;
mod property;
