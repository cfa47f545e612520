//! Gathers the facts for the release binary's link layout and prints its linker arguments;
//! the rule itself is link/layout.rs (docs/running.md "Start-up and the link layout").

#[path = "link/layout.rs"]
mod layout;

use std::env;
use std::path::Path;
use std::process::Command;

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

fn main() {
    println!("cargo::rerun-if-changed=link/hot-symbols.txt");
    println!("cargo::rerun-if-changed=link/layout.rs");
    println!("cargo::rerun-if-env-changed=INFERSCOPE_LINK_LAYOUT");
    let var = |k: &str| env::var(k).unwrap_or_default();
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
    for arg in layout::link_args(&facts) {
        println!("cargo::rustc-link-arg-bins={arg}");
    }
}
