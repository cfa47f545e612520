//! The release binary's link layout: the rule build.rs applies (link/layout.rs) and the form
//! of the symbol-ordering file. `.ci/run` checks a real release binary with
//! benchmarks/link_layout.py (docs/running.md "Start-up and the link layout").

#[path = "../../link/layout.rs"]
mod layout;

use layout::{Facts, link_args, rustflags_choose_linker, version};

const ORDER: &str = "/src/link/hot-symbols.txt";

fn release() -> Facts {
    Facts {
        profile: "release".into(),
        target: "x86_64-unknown-linux-gnu".into(),
        host_is_target: true,
        rustc: Some((1, 95)),
        glibc: Some((2, 36)),
        custom_linker: false,
        opted_out: false,
        order_file: Some(ORDER.into()),
    }
}

const ORDERING: [&str; 2] = [
    "-Wl,--symbol-ordering-file=/src/link/hot-symbols.txt",
    "-Wl,--no-warn-symbol-ordering",
];
const RELR: &str = "-Wl,-z,pack-relative-relocs";

#[test]
fn a_release_build_linked_by_lld_orders_its_symbols_and_packs_its_relocations() {
    assert_eq!(link_args(&release()), [ORDERING[0], ORDERING[1], RELR]);
}

#[test]
fn nothing_is_added_where_the_build_or_the_linker_is_not_the_one_the_rule_knows() {
    let cases = [
        (
            "a debug build",
            Facts {
                profile: "dev".into(),
                ..release()
            },
        ),
        (
            "rustc 1.89 (GNU ld by default)",
            Facts {
                rustc: Some((1, 89)),
                ..release()
            },
        ),
        (
            "rustc's version unknown",
            Facts {
                rustc: None,
                ..release()
            },
        ),
        (
            "another architecture",
            Facts {
                target: "aarch64-unknown-linux-gnu".into(),
                ..release()
            },
        ),
        (
            "musl",
            Facts {
                target: "x86_64-unknown-linux-musl".into(),
                ..release()
            },
        ),
        (
            "a linker the user chose",
            Facts {
                custom_linker: true,
                ..release()
            },
        ),
        (
            "INFERSCOPE_LINK_LAYOUT=0",
            Facts {
                opted_out: true,
                ..release()
            },
        ),
    ];
    for (what, facts) in cases {
        assert_eq!(link_args(&facts), Vec::<String>::new(), "{what}");
    }
}

#[test]
fn packed_relocations_need_glibc_2_36_where_the_binary_is_built_to_run() {
    for (what, facts) in [
        (
            "glibc 2.35",
            Facts {
                glibc: Some((2, 35)),
                ..release()
            },
        ),
        (
            "glibc unknown",
            Facts {
                glibc: None,
                ..release()
            },
        ),
        (
            "a cross build",
            Facts {
                host_is_target: false,
                ..release()
            },
        ),
    ] {
        assert_eq!(link_args(&facts), ORDERING, "{what}");
    }
    assert_eq!(
        link_args(&Facts {
            glibc: Some((3, 0)),
            ..release()
        }),
        [ORDERING[0], ORDERING[1], RELR]
    );
}

#[test]
fn without_a_usable_ordering_file_only_the_relocations_are_packed() {
    assert_eq!(
        link_args(&Facts {
            order_file: None,
            ..release()
        }),
        [RELR]
    );
    // A comma would split the `-Wl,` argument.
    let comma = Facts {
        order_file: Some("/a,b/hot-symbols.txt".into()),
        ..release()
    };
    assert_eq!(link_args(&comma), [RELR]);
}

#[test]
fn versions_and_rustflags_are_read_as_the_tools_and_cargo_write_them() {
    assert_eq!(
        version("rustc 1.95.0 (59807616e 2026-04-14)\n"),
        Some((1, 95))
    );
    assert_eq!(
        version("rustc 1.90.0-nightly (abc 2025-07-01)"),
        Some((1, 90))
    );
    assert_eq!(version("glibc 2.36\n"), Some((2, 36)));
    assert_eq!(version("no version here"), None);
    assert!(rustflags_choose_linker("-C\x1flinker=clang"));
    assert!(rustflags_choose_linker("-Clink-arg=-fuse-ld=mold"));
    assert!(rustflags_choose_linker("-Clinker-features=-lld"));
    assert!(!rustflags_choose_linker(
        "-Ctarget-cpu=native\x1f-Cdebuginfo=1"
    ));
    assert!(!rustflags_choose_linker(""));
}

#[test]
fn the_symbol_ordering_file_names_each_function_once_in_mangled_form() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/link/hot-symbols.txt");
    let text = std::fs::read_to_string(path).expect("link/hot-symbols.txt");
    let names: Vec<&str> = text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    assert!(names.len() >= 1000, "{} names: regenerate it", names.len());
    let mut seen = std::collections::HashSet::new();
    for n in &names {
        // Rust's legacy (_ZN) and v0 (_R) manglings; C symbols are plain identifiers.
        let c_symbol = n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        assert!(
            n.starts_with("_ZN") || n.starts_with("_R") || c_symbol,
            "not a symbol name: {n:?}"
        );
        assert!(!n.contains(char::is_whitespace), "{n:?}");
        assert!(seen.insert(*n), "listed twice: {n}");
    }
    // The one-request run's functions come first, hottest first: the client's chat
    // future, which every stream polls at each chunk, is among the first.
    let chat = names
        .iter()
        .position(|n| n.contains("inferscope_client4http6Client4chat"))
        .expect("the client's chat future is ordered");
    assert!(chat < 100, "the chat future is at {chat}");
}
