//! `timeline verify RUN_DIR`: verifies a run's captured timeline against its manifest.

use std::path::Path;

use super::merge;
use crate::model::exit::ExitCode;

/// Runs `timeline verify`: prints the verdict; exit 0 valid, 1 integrity error, 2
/// unavailable.
pub fn verify(run_dir: &Path) -> i32 {
    match merge::shard_dirs(run_dir) {
        // A merged run keeps each shard's timeline verbatim under shards/K: each is
        // verified against its own report (1 when any fails, else 2 when any is
        // unavailable, else 0).
        Some(shards) => {
            let mut code = ExitCode::OK;
            for (k, dir) in shards {
                let r = crate::timeline::verify_run(&dir);
                println!("shard {k}: {r}");
                code = match (code, r.exit_code()) {
                    (ExitCode::ERROR, _) | (_, ExitCode::ERROR) => ExitCode::ERROR,
                    (c, ExitCode::OK) => c,
                    (_, e) => e,
                };
            }
            code
        }
        None => {
            let r = crate::timeline::verify_run(run_dir);
            println!("{r}");
            r.exit_code()
        }
    }
}
