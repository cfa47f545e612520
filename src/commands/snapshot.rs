//! `snapshot RUN_DIR --into DIR`: a finished run's redacted trajectory snapshots as insta
//! pending files, the same files the nextest harness writes ([`crate::harness::snapshot`]).

use std::path::Path;

use crate::harness::snapshot::{SnapshotWrite, write_pending};
use crate::model::exit::ExitCode;

/// `inferscope-bench snapshot RUN_DIR --into DIR`: exit 0 when every job's snapshot
/// matches its accepted `.snap`, 100 when any is new or changed (a `.snap.new` was
/// written: review with `cargo insta review`), 2 bad input.
pub fn command(run_dir: &Path, into: &Path) -> i32 {
    let report = match super::run_dir::load_report_with_requests(run_dir) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let writes = match write_pending(&report, into) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: writing snapshots into {}: {e}", into.display());
            return ExitCode::BAD_INPUT;
        }
    };
    let mut pending = 0;
    for w in &writes {
        match w {
            SnapshotWrite::Unchanged(p) => println!("unchanged {}", p.display()),
            SnapshotWrite::New(p) => {
                pending += 1;
                println!("new       {}", p.display());
            }
            SnapshotWrite::Changed(p) => {
                pending += 1;
                println!("changed   {}", p.display());
            }
        }
    }
    if pending > 0 {
        println!(
            "{pending} snapshot(s) pending: review with `cargo insta review` (accept renames .snap.new to .snap)"
        );
        ExitCode::FAILED
    } else {
        ExitCode::OK
    }
}
