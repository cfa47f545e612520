//! Gathers the facts for the release binary's link layout and prints its linker arguments;
//! the rule itself is link/layout.rs (docs/running.md "Start-up and the link layout").

#[path = "link/layout.rs"]
mod layout;

use std::env;
use std::path::Path;
use std::process::Command;

/// A Cargo-set environment variable ("" when unset).
fn var(k: &str) -> String {
    env::var(k).unwrap_or_default()
}

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether rustc links an empty program for the target with `args` (the linker accepts
/// them). The probe lives in `OUT_DIR`.
fn links(args: &[String]) -> bool {
    let out = Path::new(&var("OUT_DIR")).join("link-probe");
    let src = out.with_extension("rs");
    if std::fs::write(&src, "fn main() {}\n").is_err() {
        return false;
    }
    let mut cmd = Command::new(var("RUSTC"));
    cmd.arg("--target")
        .arg(var("TARGET"))
        .arg("-o")
        .arg(&out)
        .arg(&src);
    for flag in var("CARGO_ENCODED_RUSTFLAGS")
        .split('\x1f')
        .filter(|f| !f.is_empty())
    {
        cmd.arg(flag);
    }
    for a in args {
        cmd.arg("-C").arg(format!("link-arg={a}"));
    }
    cmd.output().is_ok_and(|o| o.status.success())
}

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=link/layout.rs");
    for k in [
        "INFERSCOPE_LINK_LAYOUT",
        "RUSTC_LINKER",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER",
    ] {
        println!("cargo::rerun-if-env-changed={k}");
    }
    if var("PROFILE") == "release" {
        // Only a release build reads it: an edit of the file rebuilds no debug build.
        println!("cargo::rerun-if-changed=link/hot-symbols.txt");
    }
    let order = Path::new(&var("CARGO_MANIFEST_DIR")).join("link/hot-symbols.txt");
    let facts = layout::Facts {
        profile: var("PROFILE"),
        target: var("TARGET"),
        host_is_target: var("HOST") == var("TARGET"),
        rustc: output(&var("RUSTC"), &["-V"]).and_then(|v| layout::version(&v)),
        glibc: output("getconf", &["GNU_LIBC_VERSION"]).and_then(|v| layout::version(&v)),
        custom_linker: env::var_os("RUSTC_LINKER").is_some()
            || layout::rustflags_choose_linker(&var("CARGO_ENCODED_RUSTFLAGS")),
        opted_out: var("INFERSCOPE_LINK_LAYOUT") == "0",
        order_file: order
            .is_file()
            .then(|| order.to_string_lossy().into_owned()),
    };
    let args = layout::link_args(&facts);
    if args.is_empty() {
        return;
    }
    if !links(&args) {
        println!(
            "cargo::warning=the linker does not take the link layout's arguments (not LLD?); \
             linking without it (docs/running.md \"Start-up and the link layout\")"
        );
        return;
    }
    for arg in args {
        println!("cargo::rustc-link-arg-bins={arg}");
    }
}
