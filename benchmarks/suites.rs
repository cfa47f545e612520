//! `cargo nextest run --test suites` (or `cargo test --test suites`): every job of
//! `suites/*.toml` as a trial named `suite::job`, passing when the job's gates pass, and
//! a redacted trajectory snapshot per job in `snapshots/` (review with
//! `cargo insta review`). Options come from `INFERSCOPE_*` environment variables, see
//! `inferscope_bench::harness`.

fn main() -> std::process::ExitCode {
    inferscope_bench::harness::main_for_suites(env!("CARGO_MANIFEST_DIR"))
}
