//! The API token (docs/artifacts.md "The dashboard API"):
//! loaded once from `--token-file` or the `INFERSCOPE_TOKEN` environment variable, and
//! compared in constant time against the `Authorization: Bearer <token>` header.
//!
//! The comparison hashes both sides with SHA-256 and compares the two 32-byte digests
//! with a branch-free fold, so neither the position of the first differing byte nor the
//! token's length shows in the timing.

use std::path::Path;

use sha2::{Digest, Sha256};

/// Environment variable holding the token when no `--token-file` is given.
pub const TOKEN_ENV: &str = "INFERSCOPE_TOKEN";
/// Shortest token accepted, bytes.
pub const MIN_TOKEN_BYTES: usize = 16;
/// Longest token accepted, bytes.
pub const MAX_TOKEN_BYTES: usize = 4096;

/// Why no usable token could be loaded (exit 2 at start-up). Messages never include the
/// token.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TokenError {
    /// Neither `--token-file` nor the environment variable was given.
    #[error("no API token: pass --token-file FILE or set {TOKEN_ENV}")]
    Missing,
    /// The token file is readable (or writable) by its group or others: refused, as ssh
    /// refuses such a private key.
    #[error(
        "token file {path} is accessible by group or others (mode {mode:04o}); a token \
         file must be private: chmod 600 {path}"
    )]
    Exposed {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// The token file is owned by another user (not this process's effective user, not
    /// root): refused, as ssh refuses a key another user owns.
    #[error(
        "token file {path} is owned by uid {owner}, neither you (uid {me}) nor root; a \
         token file must be your own: chown {me} {path}"
    )]
    NotOwned {
        /// The file.
        path: String,
        /// Its owner's uid.
        owner: u32,
        /// This process's effective uid.
        me: u32,
    },
    /// The token file could not be read.
    #[error("token file {path}: {reason}")]
    Unreadable {
        /// The file.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// The token is shorter than [`MIN_TOKEN_BYTES`], longer than [`MAX_TOKEN_BYTES`],
    /// or holds whitespace or control characters.
    #[error(
        "API token must be {MIN_TOKEN_BYTES}..={MAX_TOKEN_BYTES} visible ASCII characters \
         without spaces"
    )]
    Invalid,
}

/// The token's SHA-256; the token itself is not kept.
#[derive(Clone)]
pub struct Token {
    digest: [u8; 32],
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

fn digest(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

/// Equality of two digests without data-dependent branches.
fn ct_eq(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let mut acc = 0u8;
    for i in 0..32 {
        acc |= a[i] ^ b[i];
    }
    std::hint::black_box(acc) == 0
}

/// ssh's ownership rule for a private file: owned by the user who reads it, or by root
/// (pure).
fn owned_by_user_or_root(owner: u32, me: u32) -> bool {
    owner == me || owner == 0
}

impl Token {
    /// A token from its text (pure). A trailing newline (as left by `echo > file`) is
    /// removed; the rest must be [`MIN_TOKEN_BYTES`]..=[`MAX_TOKEN_BYTES`] bytes of
    /// visible ASCII.
    pub fn new(text: &str) -> Result<Self, TokenError> {
        let t = text.strip_suffix('\n').unwrap_or(text);
        let t = t.strip_suffix('\r').unwrap_or(t);
        if t.len() < MIN_TOKEN_BYTES
            || t.len() > MAX_TOKEN_BYTES
            || !t.bytes().all(|c| c.is_ascii_graphic())
        {
            return Err(TokenError::Invalid);
        }
        Ok(Self {
            digest: digest(t.as_bytes()),
        })
    }

    /// Loads the token from `file` when given, else from `env_value` (the value of
    /// [`TOKEN_ENV`], passed in so this stays testable).
    pub fn load(file: Option<&Path>, env_value: Option<&str>) -> Result<Self, TokenError> {
        match (file, env_value) {
            (Some(p), _) => {
                // The bounded reader: never blocks on a FIFO, never follows a symlink,
                // regular files only; then the permission bits of the opened file.
                let unreadable = |e: crate::fsio::ReadError| TokenError::Unreadable {
                    path: p.display().to_string(),
                    reason: e.to_string(),
                };
                let opened = crate::fsio::open(p).map_err(unreadable)?;
                let owner = std::os::unix::fs::MetadataExt::uid(&opened.meta);
                // SAFETY: geteuid has no preconditions and cannot fail.
                let me = unsafe { libc::geteuid() };
                if !owned_by_user_or_root(owner, me) {
                    return Err(TokenError::NotOwned {
                        path: p.display().to_string(),
                        owner,
                        me,
                    });
                }
                let mode = std::os::unix::fs::PermissionsExt::mode(&opened.meta.permissions());
                if mode & 0o077 != 0 {
                    return Err(TokenError::Exposed {
                        path: p.display().to_string(),
                        mode: mode & 0o7777,
                    });
                }
                let bytes = opened
                    .read(crate::fsio::limits::TOKEN_FILE_BYTES)
                    .map_err(unreadable)?;
                // The file is named (never the token).
                let invalid = || TokenError::Unreadable {
                    path: p.display().to_string(),
                    reason: TokenError::Invalid.to_string(),
                };
                let text = String::from_utf8(bytes).map_err(|_| invalid())?;
                Self::new(&text).map_err(|_| invalid())
            }
            (None, Some(v)) => Self::new(v),
            (None, None) => Err(TokenError::Missing),
        }
    }

    /// Whether an `Authorization` header value carries this token as
    /// `Bearer <token>` (scheme case-insensitive, one space). Constant time in the
    /// token; `None` (no header) is `false`.
    pub fn accepts(&self, header: Option<&[u8]>) -> bool {
        let Some(h) = header else {
            return false;
        };
        let candidate = match h.get(..7) {
            Some(s) if s.eq_ignore_ascii_case(b"bearer ") => &h[7..],
            _ => return false,
        };
        ct_eq(&self.digest, &digest(candidate))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    const T: &str = "0123456789abcdef-token";

    #[test]
    fn bearer_only_exact_token() {
        let t = Token::new(T).unwrap();
        assert!(t.accepts(Some(format!("Bearer {T}").as_bytes())));
        assert!(t.accepts(Some(format!("bearer {T}").as_bytes())));
        assert!(!t.accepts(None));
        assert!(!t.accepts(Some(T.as_bytes())));
        assert!(!t.accepts(Some(format!("Basic {T}").as_bytes())));
        assert!(!t.accepts(Some(format!("Bearer {T}x").as_bytes())));
        assert!(!t.accepts(Some(format!("Bearer  {T}").as_bytes())));
        assert!(!t.accepts(Some(b"Bearer ")));
        assert!(!t.accepts(Some(b"Bear")));
    }

    #[test]
    fn token_syntax_and_sources() {
        assert_eq!(Token::new("short").unwrap_err(), TokenError::Invalid);
        assert_eq!(
            Token::new("has a space in it ok").unwrap_err(),
            TokenError::Invalid
        );
        assert!(Token::new(&format!("{T}\n")).is_ok());
        assert_eq!(Token::load(None, None).unwrap_err(), TokenError::Missing);
        assert!(Token::load(None, Some(T)).is_ok());
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tok");
        std::fs::write(&p, format!("{T}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let t = Token::load(Some(&p), Some("ignored-when-a-file-is-given")).unwrap();
        assert!(t.accepts(Some(format!("Bearer {T}").as_bytes())));
        // A file holding a bad token is named in the error (the token never is).
        let bad = dir.path().join("bad");
        std::fs::write(&bad, "ab\n").unwrap();
        std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = Token::load(Some(&bad), None).unwrap_err().to_string();
        assert!(
            e.contains(&bad.display().to_string()) && e.contains("visible ASCII"),
            "{e}"
        );
        assert!(matches!(
            Token::load(Some(&dir.path().join("nope")), None),
            Err(TokenError::Unreadable { .. })
        ));
        assert_eq!(format!("{t:?}"), "Token(<redacted>)");
    }

    /// A group/world-readable token file is refused (as ssh refuses such a
    /// key), and a FIFO, a symlink to /dev/zero or an oversized sparse file never blocks
    /// or is read.
    #[test]
    fn token_file_must_be_private_regular_and_small() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tok");
        std::fs::write(&p, format!("{T}\n")).unwrap();
        for mode in [0o666, 0o644, 0o640, 0o604] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            let e = Token::load(Some(&p), None).unwrap_err();
            assert!(
                matches!(e, TokenError::Exposed { mode: m, .. } if m == mode),
                "{e}"
            );
            assert!(e.to_string().contains("chmod 600"), "{e}");
            assert!(!e.to_string().contains(T));
        }
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = Token::load(Some(&fifo), None).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let e = Token::load(Some(&zero), None).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        let sparse = dir.path().join("sparse");
        let f = std::fs::File::create(&sparse).unwrap();
        f.set_len(1 << 30).unwrap();
        std::fs::set_permissions(&sparse, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = Token::load(Some(&sparse), None).unwrap_err();
        assert!(e.to_string().contains("larger than its limit"), "{e}");
    }

    /// A 0600 token file owned by another user is refused (ssh's rule:
    /// yours or root's). Run as root, the file is given to uid 65534; as another user the
    /// rule itself is checked (no file of another user can be made).
    #[test]
    fn token_file_owned_by_another_user_is_refused() {
        assert!(owned_by_user_or_root(1000, 1000));
        assert!(owned_by_user_or_root(0, 1000));
        assert!(!owned_by_user_or_root(65534, 1000));
        assert!(!owned_by_user_or_root(65534, 0));
        // SAFETY: no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tok");
        std::fs::write(&p, format!("{T}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(Token::load(Some(&p), None).is_ok());
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        let e = Token::load(Some(&p), None).unwrap_err();
        assert!(
            matches!(
                e,
                TokenError::NotOwned {
                    owner: 65534,
                    me: 0,
                    ..
                }
            ),
            "{e}"
        );
        assert!(!e.to_string().contains(T), "{e}");
    }
}
