//! The `Examples:` block printed after each subcommand's `--help` (clap `after_help`).
//!
//! Every line that starts with `inferscope-bench` must parse as the CLI parses it
//! (`cli::tests::every_help_example_parses` parses each one), so a renamed flag cannot
//! leave a stale example behind. Paths in capitals (`RUN_DIR`) are placeholders.

/// `inferscope-bench --help`.
pub const TOP: &str = "\
Examples:
  inferscope-bench run suites/agentic.toml --capture-timeline
  inferscope-bench init http://127.0.0.1:8000/v1
  inferscope-bench report target/inferscope/runs/RUN_ID --format html -o run.html

The README's five-minute tour and docs/commands.md have more.";

/// `init`.
pub const INIT: &str = "\
Examples:
  inferscope-bench init http://127.0.0.1:8000/v1
  inferscope-bench init http://gpu:8000/v1 --api-key-env OPENAI_API_KEY --out gpu.toml
  inferscope-bench init http://127.0.0.1:8000/v1 --model qwen2.5-7b --force

Then: inferscope-bench check starter.toml
      inferscope-bench run starter.toml";

/// `check`.
pub const CHECK: &str = "\
Examples:
  inferscope-bench check suites/agentic.toml
  inferscope-bench check suites/agentic.toml suites/context.toml suites/load.toml";

/// `list`.
pub const LIST: &str = "\
Examples:
  inferscope-bench list suites/agentic.toml
  inferscope-bench list suites/load.toml --filter fanout --partition hash:1/2";

/// `run`.
pub const RUN: &str = "\
Examples:
  inferscope-bench run suites/agentic.toml --capture-timeline
  inferscope-bench run starter.toml --junit junit.xml --out runs/ci
  inferscope-bench run suites/context.toml --endpoint http://127.0.0.1:8000/v1 --model m";

/// `sim`.
pub const SIM: &str = "\
Examples:
  inferscope-bench sim --port 8000
  inferscope-bench sim --port 0 --ttft-ms 200 --fault-disconnect-every 10";

/// `serve`.
pub const SERVE: &str = "\
Examples:
  inferscope-bench serve --runs target/inferscope/runs --token-file token.txt
  inferscope-bench serve --runs target/inferscope/runs --bind 127.0.0.1:9000

Without --token-file the token is read from INFERSCOPE_TOKEN; open
http://127.0.0.1:8787/#token=TOKEN in a browser.";

/// `timeline`.
pub const TIMELINE: &str = "\
Examples:
  inferscope-bench timeline verify target/inferscope/runs/RUN_ID";

/// `timeline verify`.
pub const TIMELINE_VERIFY: &str = TIMELINE;

/// `report`.
pub const REPORT: &str = "\
Examples:
  inferscope-bench report target/inferscope/runs/RUN_ID --format html -o run.html
  inferscope-bench report target/inferscope/runs/RUN_ID --format junit -o junit.xml";

/// `baseline`.
pub const BASELINE: &str = "\
Examples:
  inferscope-bench baseline save target/inferscope/runs/RUN_ID --name main

Then: inferscope-bench compare OTHER_RUN_DIR --baseline main";

/// `baseline save`.
pub const BASELINE_SAVE: &str = BASELINE;

/// `compare`.
pub const COMPARE: &str = "\
Examples:
  inferscope-bench compare target/inferscope/runs/RUN_ID --baseline main
  inferscope-bench compare target/inferscope/runs/RUN_ID --baseline main --regression-pct 10";

/// `overhead`.
pub const OVERHEAD: &str = "\
Examples:
  inferscope-bench overhead suites/agentic.toml
  inferscope-bench overhead suites/agentic.toml --negative-control blocking-sink";

/// `snapshot`.
pub const SNAPSHOT: &str = "\
Examples:
  inferscope-bench snapshot target/inferscope/runs/RUN_ID --into snapshots/

Then review what is new or changed with: cargo insta review";

/// `merge`.
pub const MERGE: &str = "\
Examples:
  inferscope-bench merge runs/shard-1 runs/shard-2 --out runs/merged";

/// `k8s`.
pub const K8S: &str = "\
Examples:
  inferscope-bench k8s suites/load.toml --shards 8 --image registry.example/bench:0.1
  inferscope-bench k8s suites/load.toml --shards 4 --image IMAGE --partition-mode shard";

/// `trajectory`.
pub const TRAJECTORY: &str = "\
Examples:
  inferscope-bench trajectory --samples RUN_DIR/samples --steps RUN_DIR/steps.jsonl
  inferscope-bench trajectory --prometheus-range range.json --engine vllm --steps steps.jsonl";

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use crate::cli::Cli;

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
}
