//! Confinement of file-reading tools to `fixtures/<read_root>` (docs/suite.md
//! `read_root`): `..` components, absolute paths and symlinks whose
//! target leaves the root are tool errors, never panics and never reads.

use std::path::{Component, Path};

use super::ToolErrorCode;

/// Largest file a read tool returns, bytes (1 MiB); larger files are an `io` tool error.
pub const MAX_READ_BYTES: u64 = 1024 * 1024;

/// Reads `rel` under `root` (which must be canonical). Errors are a code and a message
/// for the model (the message names `rel`, never the host path of the root).
pub(crate) fn read_confined(root: &Path, rel: &str) -> Result<String, (ToolErrorCode, String)> {
    use ToolErrorCode as C;
    if rel.is_empty() {
        return Err((C::BadArguments, "empty path".into()));
    }
    if rel.contains('\0') {
        return Err((C::BadArguments, "path contains a NUL byte".into()));
    }
    let p = Path::new(rel);
    if p.is_absolute()
        || p.components()
            .any(|c| matches!(c, Component::RootDir | Component::Prefix(_)))
    {
        return Err((
            C::SandboxViolation,
            format!("`{rel}` is absolute; paths are relative to the tool's root"),
        ));
    }
    if p.components().any(|c| c == Component::ParentDir) {
        return Err((
            C::SandboxViolation,
            format!("`{rel}` contains `..`; paths must stay under the tool's root"),
        ));
    }
    let joined = root.join(p);
    let canon = match joined.canonicalize() {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink also lands here; whether its target would be inside
            // does not matter, nothing is read.
            return Err((C::NotFound, format!("`{rel}` does not exist")));
        }
        Err(e) => return Err((C::Io, format!("`{rel}`: {}", e.kind()))),
    };
    // Component-wise containment: `/fx/repo-evil` does not start with `/fx/repo`.
    if !canon.starts_with(root) {
        return Err((
            C::SandboxViolation,
            format!("`{rel}` resolves outside the tool's root (symlink)"),
        ));
    }
    // The bounded reader ([`crate::fsio`]): `canon` has no symlink left; a FIFO never
    // blocks the tool, a device is refused, the size is checked before reading.
    let buf = match crate::fsio::read(&canon, MAX_READ_BYTES) {
        Ok(b) => b,
        Err(crate::fsio::ReadError::NotRegular(crate::fsio::FileKind::Directory)) => {
            return Err((C::NotFound, format!("`{rel}` is a directory, not a file")));
        }
        Err(crate::fsio::ReadError::NotRegular(_)) => {
            return Err((C::NotFound, format!("`{rel}` is not a regular file")));
        }
        Err(crate::fsio::ReadError::TooLarge { .. }) => {
            return Err((
                C::Io,
                format!("`{rel}` is larger than {MAX_READ_BYTES} bytes"),
            ));
        }
        Err(e) => return Err((C::Io, format!("`{rel}`: {}", e.code()))),
    };
    String::from_utf8(buf).map_err(|_| (C::Io, format!("`{rel}` is not UTF-8 text")))
}
