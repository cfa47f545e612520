//! The one bounded, no-follow, non-blocking file reader.
//!
//! Every path that opens an artifact or an input — `serve`'s store, `timeline verify`,
//! `report`, `trajectory`, `baseline save`, `compare`, baseline files, suite files,
//! `--token-file`, SWE step markers, fixture tool files — reads through this module:
//!
//! - the file is opened with `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY`: a symlink
//!   as the last component is refused (`ELOOP`), and opening a FIFO never waits for a
//!   writer;
//! - `fstat` on the opened descriptor must say *regular file* (a FIFO, a device such as
//!   `/dev/zero`, a socket or a directory is refused before any byte is read);
//! - the size `fstat` reports is checked against the limit before reading (a sparse
//!   1 GiB file is refused without being read), and the read itself stops at the limit
//!   plus one byte (a file that grows while it is read is still refused);
//! - below a root (a run directory, `serve`'s runs root) every component is opened with
//!   `openat(…, O_NOFOLLOW)` from the previous one's descriptor, so no symlink anywhere
//!   under the root is followed and containment is by descriptor, never by string.
//!
//! Every read limit is in [`limits`] (docs/security.md "Every file read is bounded" lists
//! them). The module is a leaf: `std` and `libc` only, no async runtime.

use std::ffi::CString;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Every read limit of the product, bytes (one table; docs/security.md).
pub mod limits {
    /// `report.json` for a run's detail, `report`, `baseline save`, `compare`, `trajectory`.
    pub const REPORT_BYTES: u64 = 32 << 20;
    /// `report.json` read for one row of `serve`'s run listing.
    pub const LIST_REPORT_BYTES: u64 = 8 << 20;
    /// `samples/sources.json`.
    pub const SAMPLES_SOURCES_BYTES: u64 = 1 << 20;
    /// One `samples/*.jsonl` file.
    pub const SAMPLES_FILE_BYTES: u64 = 64 << 20;
    /// `timeline/manifest.json` (equal to the capture bound
    /// `timeline::bounds::MAX_MANIFEST_BYTES`, checked at compile time there).
    pub const MANIFEST_BYTES: u64 = 16 << 10;
    /// `timeline/events.jsonl` at most (`timeline::bounds::MAX_TOTAL_BYTES`; the
    /// manifest's own `max_total_bytes` may be tighter).
    pub const EVENTS_BYTES: u64 = 8 << 20;
    /// A suite file.
    pub const SUITE_BYTES: u64 = 4 << 20;
    /// A `--token-file`: the longest token (4,096 bytes) and a line end.
    pub const TOKEN_FILE_BYTES: u64 = (4 << 10) + 2;
    /// A step-marker file (`INFERSCOPE_STEPS_FILE`, `trajectory --steps`, `steps.jsonl`).
    pub const STEPS_FILE_BYTES: u64 = 64 << 20;
    /// A saved baseline (`.inferscope/baselines/NAME.json`).
    pub const BASELINE_BYTES: u64 = 16 << 20;
    /// A fixture tool's response or response-table file, or a context job's filler.
    pub const TOOL_FILE_BYTES: u64 = 16 << 20;
    /// A run's `requests.jsonl` (read line by line, never whole: about 1 KB per request
    /// of 64 tokens, so room for a few million requests).
    pub const REQUESTS_BYTES: u64 = 4 << 30;
    /// One line of `requests.jsonl`: a record keeps at most 2¹⁹ inter-token gaps over
    /// all its choices (`model::request::MAX_RECORDED_GAPS`), written twice at most (the
    /// request's list and its choices' lists), 21 bytes each at most, plus 2 MiB for
    /// every other field; a 128k-token answer (about 1 MB of gaps) is an ordinary line.
    /// A test in `inferscope-records` holds the worst case under it.
    pub const REQUESTS_LINE_BYTES: u64 = 24 << 20;
}

/// What a refused or missing file was (for messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A directory.
    Directory,
    /// A named pipe.
    Fifo,
    /// A character device (e.g. `/dev/zero`).
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A Unix socket.
    Socket,
    /// A symlink (seen by a no-follow stat).
    Symlink,
    /// A regular file (where a directory was expected).
    Regular,
    /// Anything else.
    Other,
}

impl FileKind {
    fn of(t: std::fs::FileType) -> Self {
        if t.is_dir() {
            FileKind::Directory
        } else if t.is_fifo() {
            FileKind::Fifo
        } else if t.is_char_device() {
            FileKind::CharDevice
        } else if t.is_block_device() {
            FileKind::BlockDevice
        } else if t.is_socket() {
            FileKind::Socket
        } else if t.is_symlink() {
            FileKind::Symlink
        } else if t.is_file() {
            FileKind::Regular
        } else {
            FileKind::Other
        }
    }

    /// `a FIFO`, `a character device`, …
    pub fn label(self) -> &'static str {
        match self {
            FileKind::Directory => "a directory",
            FileKind::Fifo => "a FIFO",
            FileKind::CharDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Socket => "a socket",
            FileKind::Symlink => "a symlink",
            FileKind::Regular => "a regular file",
            FileKind::Other => "not a regular file",
        }
    }
}

/// Why a bounded read gave no bytes. Messages never quote file content.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The file (or a directory on the way) does not exist.
    #[error("not found")]
    NotFound,
    /// The file or a component below the root is a symlink (never followed).
    #[error("is a symlink (symlinks are not followed)")]
    Symlink,
    /// The file is not a regular file (or a component on the way is not a directory).
    #[error("is {}, not a regular file", .0.label())]
    NotRegular(FileKind),
    /// A component on the way is not a directory.
    #[error("has a component that is not a directory")]
    NotDirectory,
    /// The file is larger than its limit (by `fstat`, or while it was read).
    #[error("is larger than its limit of {}", human_bytes(*.limit))]
    TooLarge {
        /// The limit, bytes.
        limit: u64,
    },
    /// Any other I/O error (its kind only).
    #[error("unreadable ({0})")]
    Io(std::io::ErrorKind),
}

impl ReadError {
    fn io(e: &std::io::Error) -> Self {
        match e.raw_os_error() {
            Some(libc::ENOENT) => ReadError::NotFound,
            Some(libc::ELOOP) => ReadError::Symlink,
            _ if e.kind() == std::io::ErrorKind::NotFound => ReadError::NotFound,
            _ => ReadError::Io(e.kind()),
        }
    }

    /// A stable code: `not_found`, `symlink`, `not_regular_file`, `too_large`, `unreadable`.
    pub fn code(&self) -> &'static str {
        match self {
            ReadError::NotFound => "not_found",
            ReadError::Symlink => "symlink",
            ReadError::NotRegular(_) => "not_regular_file",
            ReadError::NotDirectory => "wrong_type",
            ReadError::TooLarge { .. } => "too_large",
            ReadError::Io(_) => "unreadable",
        }
    }
}

/// `32 MiB`, `4 KiB`, `100 bytes` (pure).
pub fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

const FILE_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOCTTY;
const DIR_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_DIRECTORY | libc::O_CLOEXEC | libc::O_NONBLOCK;

/// An opened regular file and its `fstat` metadata.
#[derive(Debug)]
pub struct Opened {
    /// The file.
    pub file: File,
    /// Its metadata, from the descriptor.
    pub meta: std::fs::Metadata,
}

impl Opened {
    fn check(file: File) -> Result<Self, ReadError> {
        let meta = file.metadata().map_err(|e| ReadError::io(&e))?;
        if !meta.file_type().is_file() {
            return Err(ReadError::NotRegular(FileKind::of(meta.file_type())));
        }
        Ok(Self { file, meta })
    }

    /// Reads the whole file when it is at most `limit` bytes: the `fstat` size first,
    /// then a read capped at `limit + 1` bytes.
    pub fn read(self, limit: u64) -> Result<Vec<u8>, ReadError> {
        if self.meta.len() > limit {
            return Err(ReadError::TooLarge { limit });
        }
        let mut buf = Vec::with_capacity(usize::try_from(self.meta.len()).unwrap_or(0));
        self.file
            .take(limit.saturating_add(1))
            .read_to_end(&mut buf)
            .map_err(|e| ReadError::io(&e))?;
        if buf.len() as u64 > limit {
            return Err(ReadError::TooLarge { limit });
        }
        Ok(buf)
    }
}

/// Opens `path` as a regular file (last component never followed; never blocks).
pub fn open(path: &Path) -> Result<Opened, ReadError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(FILE_FLAGS)
        .open(path)
        .map_err(|e| ReadError::io(&e))?;
    Opened::check(file)
}

/// Reads `path` whole, at most `limit` bytes (see the module rules).
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, ReadError> {
    open(path)?.read(limit)
}

/// [`read`], `Ok(None)` when the file does not exist.
pub fn read_optional(path: &Path, limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
    match read(path, limit) {
        Ok(b) => Ok(Some(b)),
        Err(ReadError::NotFound) => Ok(None),
        Err(e) => Err(e),
    }
}

fn cstr(name: &str) -> Result<CString, ReadError> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(ReadError::NotFound);
    }
    CString::new(name).map_err(|_| ReadError::NotFound)
}

fn openat(dir: &OwnedFd, name: &str, flags: libc::c_int) -> Result<OwnedFd, std::io::Error> {
    let c = cstr(name).map_err(|_| std::io::Error::from_raw_os_error(libc::ENOENT))?;
    // SAFETY: `dir` is an open descriptor, `c` a NUL-terminated name; the returned
    // descriptor (when non-negative) is owned by nobody else.
    let fd = unsafe { libc::openat(dir.as_raw_fd(), c.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by openat and is not owned elsewhere.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What `name` under `dir` is, without following it (`fstatat(AT_SYMLINK_NOFOLLOW)`).
fn kind_at(dir: &OwnedFd, name: &str) -> Result<FileKind, ReadError> {
    let c = cstr(name)?;
    // SAFETY: zeroed `stat` is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: valid descriptor, NUL-terminated name, valid out pointer.
    let r = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if r != 0 {
        return Err(ReadError::io(&std::io::Error::last_os_error()));
    }
    Ok(match st.st_mode & libc::S_IFMT {
        libc::S_IFDIR => FileKind::Directory,
        libc::S_IFIFO => FileKind::Fifo,
        libc::S_IFCHR => FileKind::CharDevice,
        libc::S_IFBLK => FileKind::BlockDevice,
        libc::S_IFSOCK => FileKind::Socket,
        libc::S_IFLNK => FileKind::Symlink,
        libc::S_IFREG => FileKind::Regular,
        _ => FileKind::Other,
    })
}

/// A directory opened once, under which every component is walked without following.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
}

/// What a path under a [`Root`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// A regular file.
    File,
    /// A directory.
    Dir,
}

impl Root {
    /// Opens `path` as a root. `follow = false` refuses a root that is itself a symlink
    /// (`serve`'s runs root); `true` follows the operator's own path (a `RUN_DIR` argument).
    pub fn open(path: &Path, follow: bool) -> Result<Self, ReadError> {
        let mut flags = DIR_FLAGS;
        if follow {
            flags &= !libc::O_NOFOLLOW;
        }
        let c = CString::new(path.as_os_str().as_bytes()).map_err(|_| ReadError::NotFound)?;
        // SAFETY: NUL-terminated path; the descriptor returned is owned here.
        let fd = unsafe { libc::open(c.as_ptr(), flags) };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            return Err(match e.raw_os_error() {
                Some(libc::ENOTDIR) => match std::fs::symlink_metadata(path) {
                    Ok(m) if m.file_type().is_symlink() && !follow => ReadError::Symlink,
                    Ok(_) => ReadError::NotDirectory,
                    Err(e) => ReadError::io(&e),
                },
                _ => ReadError::io(&e),
            });
        }
        // SAFETY: `fd` was just returned by open.
        Ok(Self {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
        })
    }

    /// Opens the directory `rel` below the root (every component a real directory).
    pub fn dir(&self, rel: &[&str]) -> Result<Root, ReadError> {
        let mut cur: Option<OwnedFd> = None;
        for comp in rel {
            let base = cur.as_ref().unwrap_or(&self.fd);
            let next = match openat(base, comp, DIR_FLAGS) {
                Ok(fd) => fd,
                Err(e) => return Err(classify(base, comp, &e, true)),
            };
            cur = Some(next);
        }
        match cur {
            Some(fd) => Ok(Root { fd }),
            None => Ok(Root {
                fd: self.fd.try_clone().map_err(|e| ReadError::io(&e))?,
            }),
        }
    }

    /// Opens the regular file `rel` below the root (every directory on the way and the
    /// file itself opened without following).
    pub fn open_file(&self, rel: &[&str]) -> Result<Opened, ReadError> {
        let Some((last, dirs)) = rel.split_last() else {
            return Err(ReadError::NotRegular(FileKind::Directory));
        };
        let dir = self.dir(dirs)?;
        match openat(&dir.fd, last, FILE_FLAGS) {
            Ok(fd) => Opened::check(File::from(fd)),
            Err(e) => Err(classify(&dir.fd, last, &e, false)),
        }
    }

    /// Reads the regular file `rel` below the root, at most `limit` bytes.
    pub fn read(&self, rel: &[&str], limit: u64) -> Result<Vec<u8>, ReadError> {
        self.open_file(rel)?.read(limit)
    }

    /// [`Root::read`], `Ok(None)` when the file (or a directory on the way) is missing.
    pub fn read_optional(&self, rel: &[&str], limit: u64) -> Result<Option<Vec<u8>>, ReadError> {
        match self.read(rel, limit) {
            Ok(b) => Ok(Some(b)),
            Err(ReadError::NotFound) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// What `rel` is (no component followed): a regular file or a directory; anything else
    /// is an error, as is a symlink.
    pub fn entry(&self, rel: &[&str]) -> Result<Entry, ReadError> {
        let Some((last, dirs)) = rel.split_last() else {
            return Ok(Entry::Dir);
        };
        let dir = self.dir(dirs)?;
        match kind_at(&dir.fd, last)? {
            FileKind::Directory => Ok(Entry::Dir),
            FileKind::Regular => Ok(Entry::File),
            FileKind::Symlink => Err(ReadError::Symlink),
            k => Err(ReadError::NotRegular(k)),
        }
    }

    /// The names in the root's directory (at most `max`; `true` when more were left).
    pub fn names(&self, max: usize) -> Result<(Vec<std::ffi::OsString>, bool), ReadError> {
        // /proc/self/fd/N names this very descriptor; read_dir opens it anew.
        let p = format!("/proc/self/fd/{}", self.fd.as_raw_fd());
        let rd = std::fs::read_dir(&p).map_err(|e| ReadError::io(&e))?;
        let mut out = Vec::new();
        for e in rd {
            if out.len() >= max {
                return Ok((out, true));
            }
            if let Ok(e) = e {
                out.push(e.file_name());
            }
        }
        Ok((out, false))
    }
}

/// The error of a failed `openat` of `name`: a symlink or a wrong type named as such.
fn classify(dir: &OwnedFd, name: &str, e: &std::io::Error, want_dir: bool) -> ReadError {
    match e.raw_os_error() {
        Some(libc::ELOOP) => ReadError::Symlink,
        Some(libc::ENOTDIR) if want_dir => match kind_at(dir, name) {
            Ok(FileKind::Symlink) => ReadError::Symlink,
            Ok(_) => ReadError::NotDirectory,
            Err(e) => e,
        },
        _ => ReadError::io(e),
    }
}

/// Where the first invalid UTF-8 byte of `bytes` is: 1-based line and column (the column
/// counts characters before it on its line, plus one) (pure).
pub fn utf8_error_position(bytes: &[u8]) -> Option<(usize, usize)> {
    let err = std::str::from_utf8(bytes).err()?;
    let valid = &bytes[..err.valid_up_to()];
    // The prefix is valid UTF-8 by construction.
    let text = std::str::from_utf8(valid).unwrap_or_default();
    let line = text.matches('\n').count() + 1;
    let col = text.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    Some((line, col))
}

/// Bytes as UTF-8 text, or the 1-based line:col of the first invalid byte.
pub fn utf8(bytes: Vec<u8>) -> Result<String, (usize, usize)> {
    String::from_utf8(bytes).map_err(|e| utf8_error_position(e.as_bytes()).unwrap_or((1, 1)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn mkfifo(p: &Path) {
        let c = CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// Four hostile files (FIFO, symlink to /dev/zero, sparse oversized
    /// file, symlink outside the root) and a good file, under `root`.
    fn hostile(root: &Path) {
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("good"), b"ok").unwrap();
        mkfifo(&root.join("fifo"));
        symlink("/dev/zero", root.join("zero")).unwrap();
        let f = File::create(root.join("sparse")).unwrap();
        f.set_len(1 << 30).unwrap();
        let outside = root.parent().unwrap().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), b"SECRET").unwrap();
        symlink(outside.join("secret"), root.join("out")).unwrap();
        symlink(&outside, root.join("outdir")).unwrap();
    }

    #[test]
    fn path_reader_refuses_every_hostile_file() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("r");
        hostile(&root);
        assert_eq!(read(&root.join("good"), 2).unwrap(), b"ok");
        assert_eq!(
            read(&root.join("good"), 1),
            Err(ReadError::TooLarge { limit: 1 })
        );
        assert_eq!(
            read(&root.join("fifo"), 10),
            Err(ReadError::NotRegular(FileKind::Fifo))
        );
        assert_eq!(read(&root.join("zero"), 10), Err(ReadError::Symlink));
        assert_eq!(
            read(Path::new("/dev/zero"), 10),
            Err(ReadError::NotRegular(FileKind::CharDevice))
        );
        assert_eq!(
            read(&root.join("sparse"), 32 << 20),
            Err(ReadError::TooLarge { limit: 32 << 20 })
        );
        assert_eq!(read(&root.join("out"), 10), Err(ReadError::Symlink));
        assert_eq!(read(&root.join("nope"), 10), Err(ReadError::NotFound));
        assert_eq!(read_optional(&root.join("nope"), 10), Ok(None));
        assert_eq!(
            read(&root.join("sub"), 10),
            Err(ReadError::NotRegular(FileKind::Directory))
        );
    }

    #[test]
    fn root_reader_never_follows_a_component() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("r");
        hostile(&root);
        std::fs::write(root.join("sub/inner"), b"in").unwrap();
        let r = Root::open(&root, false).unwrap();
        assert_eq!(r.read(&["sub", "inner"], 10).unwrap(), b"in");
        assert_eq!(r.read(&["outdir", "secret"], 10), Err(ReadError::Symlink));
        assert_eq!(r.read(&["out"], 10), Err(ReadError::Symlink));
        assert_eq!(r.read(&["zero"], 10), Err(ReadError::Symlink));
        assert_eq!(
            r.read(&["fifo"], 10),
            Err(ReadError::NotRegular(FileKind::Fifo))
        );
        assert_eq!(
            r.read(&["sparse"], 1 << 20),
            Err(ReadError::TooLarge { limit: 1 << 20 })
        );
        assert_eq!(r.read(&["good", "x"], 10), Err(ReadError::NotDirectory));
        assert_eq!(
            r.read(&["..", "outside", "secret"], 10),
            Err(ReadError::NotFound)
        );
        assert_eq!(r.read_optional(&["sub", "nope"], 10), Ok(None));
        assert_eq!(r.entry(&["sub"]), Ok(Entry::Dir));
        assert_eq!(r.entry(&["good"]), Ok(Entry::File));
        assert_eq!(r.entry(&["outdir"]), Err(ReadError::Symlink));
        assert_eq!(
            r.entry(&["fifo"]),
            Err(ReadError::NotRegular(FileKind::Fifo))
        );
        // A root that is itself a symlink: refused without follow, followed with it.
        let link = tmp.path().join("link");
        symlink(&root, &link).unwrap();
        assert_eq!(Root::open(&link, false).unwrap_err(), ReadError::Symlink);
        assert!(Root::open(&link, true).is_ok());
        let (names, more) = r.names(100).unwrap();
        assert!(!more && names.len() == 7, "{names:?}");
    }

    #[test]
    fn a_growing_file_is_still_capped() {
        // fstat said small; the read sees more: refused at limit + 1 bytes.
        let tmp = tempfile::tempdir().unwrap();
        let p = tmp.path().join("f");
        std::fs::write(&p, b"abc").unwrap();
        let o = open(&p).unwrap();
        std::fs::write(&p, vec![b'x'; 100]).unwrap();
        assert_eq!(o.read(10), Err(ReadError::TooLarge { limit: 10 }));
    }

    #[test]
    fn utf8_positions() {
        assert_eq!(utf8_error_position(b"ok"), None);
        assert_eq!(utf8_error_position(b"\xff"), Some((1, 1)));
        assert_eq!(
            utf8_error_position(b"a = 1\nb = \"\xc3\xa9\xff\""),
            Some((2, 7))
        );
        assert_eq!(utf8(b"x\n\n\xc3".to_vec()), Err((3, 1)));
        assert_eq!(human_bytes(32 << 20), "32 MiB");
        assert_eq!(human_bytes(4096), "4 KiB");
        assert_eq!(human_bytes(10), "10 bytes");
    }
}
