//! The release binary's link layout, decided from plain facts (no I/O): `build.rs` gathers
//! the facts and prints the arguments; `tests/it/link_layout.rs` checks the rule.
//!
//! Two linker arguments shrink what a run maps of the executable (docs/running.md "Start-up
//! and the link layout"):
//! - `--symbol-ordering-file`: the functions a run executes (link/hot-symbols.txt, made by
//!   `benchmarks/symbol_order.sh`) are placed together at the start of `.text`, hottest
//!   first, instead of scattered over 14 MB; a fault maps a whole page-cache folio, so
//!   scattered code maps most of the file.
//! - `-z pack-relative-relocs` (RELR): the 38,000 relative relocations of a position-
//!   independent executable are packed into a few KB instead of a 900 KB table the loader
//!   reads at every start.
//!
//! Both need LLD (the default linker of rustup's rustc on x86_64-unknown-linux-gnu since
//! Rust 1.90; build.rs checks by linking a probe); RELR also needs glibc 2.36 at run time,
//! so it is used only when the build machine runs the binary's target and has that glibc.

/// What the build knows about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// Cargo's `PROFILE` (`release` for `release` and profiles inheriting from it).
    pub profile: String,
    /// Cargo's `TARGET`.
    pub target: String,
    /// Whether `HOST` is `TARGET` (the built binary runs on this machine).
    pub host_is_target: bool,
    /// rustc's `(major, minor)` version.
    pub rustc: Option<(u32, u32)>,
    /// The build machine's glibc `(major, minor)` (`getconf GNU_LIBC_VERSION`).
    pub glibc: Option<(u32, u32)>,
    /// A linker or linker flavour chosen by the user (`RUSTC_LINKER`, `-C linker…`,
    /// `-fuse-ld` in the rustflags): the layout is left to them.
    pub custom_linker: bool,
    /// `INFERSCOPE_LINK_LAYOUT=0`.
    pub opted_out: bool,
    /// The symbol-ordering file's absolute path, when it exists.
    pub order_file: Option<String>,
}

/// The target whose default linker is LLD (Rust 1.90 and later).
const LLD_TARGET: &str = "x86_64-unknown-linux-gnu";

/// The linker arguments for the binary (`cargo::rustc-link-arg-bins`), none when any fact
/// rules the layout out. build.rs then links a probe program with them and adds them only
/// if that links: a rustc built without LLD as its default (some distributions' builds)
/// would hand them to GNU ld, which rejects them.
pub fn link_args(f: &Facts) -> Vec<String> {
    let lld = f.target == LLD_TARGET && f.rustc.is_some_and(|v| v >= (1, 90));
    if f.opted_out || f.profile != "release" || !lld || f.custom_linker {
        return Vec::new();
    }
    let mut args = Vec::new();
    if let Some(path) = f.order_file.as_deref().filter(|p| !p.contains(',')) {
        args.push(format!("-Wl,--symbol-ordering-file={path}"));
        // Entries the current code no longer defines are expected (the file is
        // regenerated, not exact); the linker would warn for each.
        args.push("-Wl,--no-warn-symbol-ordering".to_string());
    }
    if f.host_is_target && f.glibc.is_some_and(|v| v >= (2, 36)) {
        args.push("-Wl,-z,pack-relative-relocs".to_string());
    }
    args
}

/// `(major, minor)` from the first `N.N` in `text` (`rustc 1.95.0 (…)`, `glibc 2.36`).
pub fn version(text: &str) -> Option<(u32, u32)> {
    text.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find_map(|word| {
            let mut parts = word.split('.');
            let major = parts.next()?.parse().ok()?;
            let minor = parts.next()?.parse().ok()?;
            Some((major, minor))
        })
}

/// Whether the encoded rustflags (`CARGO_ENCODED_RUSTFLAGS`, `\x1f`-separated) choose a
/// linker or a linker flavour.
pub fn rustflags_choose_linker(encoded: &str) -> bool {
    encoded
        .split('\x1f')
        .any(|flag| flag.contains("linker") || flag.contains("fuse-ld"))
}
