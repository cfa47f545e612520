//! `merge`.

use std::path::{Path, PathBuf};

/// Default assumed wall-clock offset between hosts, ms.
pub const DEFAULT_HOST_OFFSET_MS: f64 = 10.0;

/// The `merge` command.
pub fn command(_dirs: &[PathBuf], _out: &Path, _offset_ms: f64) -> i32 {
    2
}
