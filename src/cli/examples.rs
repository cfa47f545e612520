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
