//! The README as a newcomer meets it: at most 200 lines, every page under
//! `docs/` one click away, a "Real engines" section, and every command it shows as an
//! example runnable as written.
//!
//! A fenced block whose info string holds the word `example` (```` ```sh example ````)
//! is run, line by line, by `sh -c` in one temporary directory holding a copy of the
//! repository's `suites/`, `fixtures/` and `snapshots/` (the README says to run them from
//! the repository root), with the built binary first on `PATH`: `inferscope-bench` is the
//! built binary and `cargo run -- ARGS` is `inferscope-bench ARGS`, which is what it runs.
//! A line's trailing `# exit N` comment is the exit status it must end with (0 when
//! absent). The blocks run in README order, so a later block uses what an earlier one
//! wrote.
//!
//! Two substitutions, both stated here: `cargo nextest run`, the README's test command, is
//! not run again from inside its own run; the test checks instead that it is the command
//! `.ci/run` runs. A block marked `sim=PORT` needs a simulator on that port, which the
//! README tells the reader to start in a second terminal; the test starts one on a free
//! port instead (`sim --port 0`, so concurrent test runs cannot collide) and writes its
//! port wherever the block says `127.0.0.1:PORT`.
//!
//! Commands that need a real engine or the network are not marked.

use std::path::Path;

use crate::support;

const MAX_LINES: usize = 200;

/// One command of an example block.
#[derive(Debug, PartialEq)]
struct Example {
    /// 1-based line of the README where it starts.
    line: usize,
    /// The command as written (continuation lines joined).
    text: String,
    /// The exit status its trailing comment names, else 0.
    exit: i32,
}

/// One example block: its info words and commands.
#[derive(Debug)]
struct Block {
    line: usize,
    info: Vec<String>,
    commands: Vec<Example>,
}

impl Block {
    /// The simulator port of a `sim=PORT` block.
    fn sim_port(&self) -> Option<u16> {
        self.info
            .iter()
            .find_map(|w| w.strip_prefix("sim=")?.parse().ok())
    }
}

/// The exit status a line's trailing comment (`# exit 100: …`) names.
fn expected_exit(text: &str) -> i32 {
    text.split(" #")
        .skip(1)
        .find_map(|c| {
            let rest = c.trim_start().strip_prefix("exit ")?;
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or(0)
}

/// A backtick fence line (CommonMark): at least three backticks, then an info string
/// holding no backtick; `(backticks, info)`.
fn fence(line: &str) -> Option<(usize, &str)> {
    let n = line.bytes().take_while(|&b| b == b'`').count();
    let info = &line[n..];
    (n >= 3 && !info.contains('`')).then_some((n, info.trim()))
}

/// Every fenced block whose info string holds `example`.
fn example_blocks(readme: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    let mut open_ticks = 0;
    let mut pending: Option<(usize, String)> = None;
    for (i, line) in readme.lines().enumerate() {
        let closing = matches!(fence(line), Some((n, "")) if open.is_some() && n >= open_ticks);
        let opening = open.is_none() && fence(line).is_some();
        if closing || opening {
            let info = fence(line).map(|(n, info)| {
                open_ticks = n;
                info
            });
            match open.take() {
                Some(b) => blocks.push(b),
                None => {
                    let info = info.unwrap_or_default();
                    let info: Vec<String> = info.split_whitespace().map(str::to_string).collect();
                    if info.iter().any(|w| w == "example") {
                        open = Some(Block {
                            line: i + 1,
                            info,
                            commands: Vec::new(),
                        });
                    } else {
                        // A block that is not an example: skip to its closing fence.
                        open = Some(Block {
                            line: i + 1,
                            info: vec!["-".into()],
                            commands: Vec::new(),
                        });
                    }
                }
            }
            continue;
        }
        let Some(b) = open.as_mut() else { continue };
        if !b.info.iter().any(|w| w == "example") {
            continue;
        }
        let (start, mut text) = pending.take().unwrap_or((i + 1, String::new()));
        text.push_str(line.trim_end());
        if let Some(t) = text.strip_suffix('\\') {
            pending = Some((start, format!("{t} ")));
            continue;
        }
        let trimmed = text.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        b.commands.push(Example {
            line: start,
            exit: expected_exit(trimmed),
            text: trimmed.to_string(),
        });
    }
    blocks
        .into_iter()
        .filter(|b| b.info.iter().any(|w| w == "example"))
        .collect()
}

fn readme() -> String {
    std::fs::read_to_string(support::repo().join("README.md")).unwrap()
}

#[test]
fn the_readme_is_short_and_links_every_docs_page() {
    let text = readme();
    let lines = text.lines().count();
    assert!(
        lines <= MAX_LINES,
        "README.md has {lines} lines (at most {MAX_LINES})"
    );
    let mut missing = Vec::new();
    for e in std::fs::read_dir(support::repo().join("docs")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.ends_with(".md") && !text.contains(&format!("](docs/{name})")) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "docs pages the README does not link: {missing:?}"
    );
    assert!(
        text.contains("\n## Real engines\n"),
        "no Real engines section"
    );
    assert!(text.contains("](docs/real-engines.md)"));
    assert!(text.contains("\n## Glossary\n"), "no glossary");
    for term in [
        "TTFT",
        "TTFO",
        "ITL",
        "TPOT",
        "step",
        "trajectory",
        "reference instant",
        "basis",
    ] {
        assert!(
            text.contains(&format!("- **{term}**")),
            "the glossary lacks {term}"
        );
    }
}

/// The two commands are the README's first example block, and the second is the command
/// CI runs.
#[test]
fn the_two_commands_come_first_and_ci_runs_the_test_command() {
    let blocks = example_blocks(&readme());
    let first: Vec<&str> = blocks[0]
        .commands
        .iter()
        .map(|c| c.text.split(" #").next().unwrap().trim())
        .collect();
    assert_eq!(
        first,
        [
            "cargo run -- run suites/agentic.toml --capture-timeline",
            "cargo nextest run"
        ]
    );
    let ci = std::fs::read_to_string(support::repo().join(".ci/run")).unwrap();
    assert!(
        ci.lines()
            .any(|l| l.trim_start().starts_with("cargo nextest run 2>&1")),
        ".ci/run does not run `cargo nextest run`"
    );
}

/// Runs one README command in `cwd`; `port` is the simulator's, for a `sim=PORT` block.
fn run_example(cwd: &Path, block: &Block, e: &Example, port: Option<(u16, u16)>) {
    let mut text = e.text.clone();
    if let Some(args) = text.strip_prefix("cargo run -- ") {
        text = format!("inferscope-bench {args}");
    }
    if let Some((written, actual)) = port {
        text = text.replace(
            &format!("127.0.0.1:{written}"),
            &format!("127.0.0.1:{actual}"),
        );
    }
    assert!(
        !text.starts_with("cargo "),
        "README.md:{}: `{}` is marked as an example but cargo commands other than \
         `cargo run --` and the test command cannot run here",
        e.line,
        e.text
    );
    let bin_dir = support::bin_path().parent().unwrap().to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = std::process::Command::new("sh")
        .arg("-c")
        .arg(&text)
        .current_dir(cwd)
        .env("PATH", path)
        .env("CI", "true")
        .env_remove("HTTP_PROXY")
        .env_remove("HTTPS_PROXY")
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("INFERSCOPE_TOKEN")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(e.exit),
        "README.md:{} (block at line {}): `{}` ran as `{text}`:\n{}",
        e.line,
        block.line,
        e.text,
        support::describe(&o)
    );
}

#[test]
fn every_example_command_in_the_readme_runs_as_written() {
    let blocks = example_blocks(&readme());
    let commands: usize = blocks.iter().map(|b| b.commands.len()).sum();
    assert!(commands >= 10, "only {commands} example commands");
    let cwd = tempfile::tempdir().unwrap();
    for dir in ["suites", "fixtures", "snapshots"] {
        support::copy_dir(&support::repo().join(dir), &cwd.path().join(dir));
    }
    let mut ran = 0;
    for block in &blocks {
        let sim = block.sim_port().map(|written| {
            let (child, url) = support::spawn_sim(cwd.path(), &[]);
            let actual: u16 = url
                .trim_start_matches("http://127.0.0.1:")
                .trim_end_matches("/v1")
                .parse()
                .unwrap();
            (child, written, actual)
        });
        for e in &block.commands {
            if e.text.split(" #").next().unwrap().trim() == "cargo nextest run" {
                // The test command: this test is part of its run (see the module docs).
                continue;
            }
            run_example(cwd.path(), block, e, sim.as_ref().map(|(_, w, a)| (*w, *a)));
            ran += 1;
        }
        if let Some((mut child, _, _)) = sim {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }
    assert_eq!(ran, commands - 1);
    // What the tour's steps say they leave behind.
    for f in [
        "runs/tour/report.json",
        "runs/tour/timeline/manifest.json",
        "tour.html",
        "junit.xml",
        "strict.toml",
        "snapshots/agentic__repo_tour.snap.new",
        "starter.toml",
        "runs/starter/report.json",
        "starter.html",
    ] {
        assert!(cwd.path().join(f).exists(), "the tour left no {f}");
    }
}

#[test]
fn the_example_parser_reads_markers_continuations_and_exit_statuses() {
    let text = "intro\n\
                ```` ```sh example ```` is inline code, not a fence\n\
                ```sh\n\
                not run\n\
                ```\n\
                ```sh example sim=8000\n\
                # a comment line\n\
                a --flag \\\n  b   # exit 100: fails\n\
                \n\
                c # exits 0\n\
                ```\n\
                ```\n\
                output\n\
                ```\n";
    let blocks = example_blocks(text);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].sim_port(), Some(8000));
    assert_eq!(
        blocks[0].commands,
        [
            Example {
                line: 8,
                text: "a --flag    b   # exit 100: fails".into(),
                exit: 100
            },
            Example {
                line: 11,
                text: "c # exits 0".into(),
                exit: 0
            },
        ]
    );
}
