//! The examples under each command's `--help` (`examples.rs`) parse as that command and
//! fit the help width; a mistyped command or flag is answered with the right one.

use clap::{CommandFactory, Parser};

use super::{Cli, runtime_workers_from};

/// `(path, after_help)` of every command under `cmd`, `cmd` included.
fn walk(cmd: &clap::Command, path: &str, out: &mut Vec<(String, String)>) {
    let help = cmd
        .get_after_help()
        .map(|h| h.to_string())
        .unwrap_or_default();
    out.push((path.to_string(), help));
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        walk(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// The example commands of a help text: its lines starting with `inferscope-bench`,
/// without a trailing `# comment`.
fn commands(help: &str) -> Vec<&str> {
    help.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("inferscope-bench "))
        .map(|l| l.split(" #").next().unwrap().trim())
        .collect()
}

#[test]
fn every_subcommand_has_examples_that_parse_and_fit_the_help_width() {
    let mut all = Vec::new();
    walk(&Cli::command(), "inferscope-bench", &mut all);
    assert!(all.len() >= 18, "{} commands", all.len());
    for (path, help) in &all {
        assert!(
            help.contains("Examples:"),
            "`{path} --help` has no examples"
        );
        let examples = commands(help);
        assert!(
            examples.iter().any(|e| e.starts_with(&format!("{path} "))),
            "`{path} --help`: no example of `{path}` itself in {examples:?}"
        );
        for line in help.lines() {
            // clap wraps help at 100 columns when stdout is not a terminal; an example
            // wider than that would be broken over two lines.
            assert!(line.len() <= 96, "`{path} --help`: {line:?} is too wide");
        }
        for e in examples {
            let argv: Vec<&str> = e.split_whitespace().collect();
            if let Err(err) = Cli::try_parse_from(&argv) {
                panic!("`{path} --help` example `{e}` does not parse:\n{err}");
            }
        }
    }
}

#[test]
fn a_mistyped_subcommand_or_flag_names_the_right_one() {
    let err = Cli::try_parse_from(["inferscope-bench", "reprt"]).unwrap_err();
    assert!(
        err.to_string()
            .contains("a similar subcommand exists: 'report'"),
        "{err}"
    );
    let err = Cli::try_parse_from([
        "inferscope-bench",
        "run",
        "suites/agentic.toml",
        "--capture-timelin",
    ])
    .unwrap_err();
    assert!(
        err.to_string()
            .contains("a similar argument exists: '--capture-timeline'"),
        "{err}"
    );
}

#[test]
fn run_and_overhead_default_to_one_worker_and_the_environment_can_name_more() {
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        let workers = |argv: &[&str]| Cli::try_parse_from(argv).unwrap().command.runtime_workers();
        assert_eq!(
            workers(&["inferscope-bench", "run", "suites/agentic.toml"]),
            1
        );
        assert_eq!(
            workers(&["inferscope-bench", "overhead", "suites/agentic.toml"]),
            1
        );
        assert_eq!(workers(&["inferscope-bench", "report", "runs/x"]), 2);
    }
    assert_eq!(runtime_workers_from(1, Some("3")), 3);
    assert_eq!(runtime_workers_from(1, Some(" 2 ")), 2);
    assert_eq!(runtime_workers_from(1, Some("0")), 1);
    assert_eq!(runtime_workers_from(2, Some("many")), 2);
    assert_eq!(runtime_workers_from(2, None), 2);
}
