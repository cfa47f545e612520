//! Confinement of file-reading tools to `fixtures/<read_root>` (SUITE_SCHEMA.md
//! `read_root`; issue 2 item 4): `..` components, absolute paths and symlinks whose
//! target leaves the root are tool errors, never panics and never reads.

use std::io::Read;
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
    let file =
        std::fs::File::open(&canon).map_err(|e| (C::Io, format!("`{rel}`: {}", e.kind())))?;
    let meta = file
        .metadata()
        .map_err(|e| (C::Io, format!("`{rel}`: {}", e.kind())))?;
    if meta.is_dir() {
        return Err((C::NotFound, format!("`{rel}` is a directory, not a file")));
    }
    if !meta.is_file() {
        return Err((C::NotFound, format!("`{rel}` is not a regular file")));
    }
    if meta.len() > MAX_READ_BYTES {
        return Err((
            C::Io,
            format!("`{rel}` is larger than {MAX_READ_BYTES} bytes"),
        ));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_READ_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(|e| (C::Io, format!("`{rel}`: {}", e.kind())))?;
    if buf.len() as u64 > MAX_READ_BYTES {
        return Err((
            C::Io,
            format!("`{rel}` is larger than {MAX_READ_BYTES} bytes"),
        ));
    }
    String::from_utf8(buf).map_err(|_| (C::Io, format!("`{rel}` is not UTF-8 text")))
}
