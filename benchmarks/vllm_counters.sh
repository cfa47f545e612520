#!/usr/bin/env bash
# vllm_counters.sh — per-step agreement of vLLM's /metrics counter deltas with usage at
# 50, 100 and 200 ms scrape periods (issue 26 item 3; figures in BENCHMARKS.md).
#
# Usage: benchmarks/vllm_counters.sh [OUT_DIR]
# Starts vLLM (scripts/vllm.sh run; installs and makes the model on a cold cache), runs the
# sequential jobs of suites/vllm.toml (everything but `load`) once per period with
# --metrics-period-ms, then prints benchmarks/vllm_counters.py's table. Needs a release or
# debug build (INFERSCOPE_BIN, default target/release/inferscope-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/bench/vllm-counters}"
bin="${INFERSCOPE_BIN:-target/release/inferscope-bench}"
gguf="$(bash scripts/smollm2.sh path)"
rm -rf "$out"
mkdir -p "$out"
# shellcheck disable=SC2016 # expanded by the inner shell
bash scripts/vllm.sh run "$gguf" -- bash -c '
  set -e
  for p in 50 100 200; do
    "$0" run suites/vllm.toml --endpoint "$VLLM_URL" --engine-pid "$VLLM_PID" \
      --filter "vllm::t*" --metrics-period-ms "$p" --out "$1/p$p" >"$1/p$p.log" 2>&1 || true
    "$0" run suites/vllm.toml --endpoint "$VLLM_URL" --engine-pid "$VLLM_PID" \
      --filter "vllm::*context*" --metrics-period-ms "$p" --out "$1/c$p" >"$1/c$p.log" 2>&1 || true
  done' "$bin" "$out"
python3 benchmarks/vllm_counters.py 50="$out/p50,$out/c50" 100="$out/p100,$out/c100" 200="$out/p200,$out/c200"
