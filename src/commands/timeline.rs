//! `timeline verify RUN_DIR`: verifies a run's captured timeline against its manifest.

use std::path::Path;

use super::merge;

/// Runs `timeline verify`: prints the verdict; exit 0 valid, 1 integrity error, 2
/// unavailable.
pub fn verify(run_dir: &Path) -> i32 {
    match merge::shard_dirs(run_dir) {
        // A merged run keeps each shard's timeline verbatim under shards/K: each is
        // verified against its own report (1 when any fails, else 2 when any is
        // unavailable, else 0).
        Some(shards) => {
            let mut code = 0;
            for (k, dir) in shards {
                let r = crate::timeline::verify_run(&dir);
                println!("shard {k}: {r}");
                code = match (code, r.exit_code()) {
                    (1, _) | (_, 1) => 1,
                    (c, 0) => c,
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
