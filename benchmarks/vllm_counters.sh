#!/usr/bin/env bash
# vllm_counters.sh — per-step agreement of vLLM's /metrics counter deltas with usage at
# 50, 100 and 200 ms scrape periods (issue 26 item 3; figures in BENCHMARKS.md).
#
# Usage: benchmarks/vllm_counters.sh [OUT_DIR]
# Starts vLLM (scripts/vllm.sh run; installs and makes the model on a cold cache), runs the
# sequential jobs of suites/vllm.toml (everything but `load`; the tool call, the trajectory,
# the context and shared-prefix sweeps) once per period with
# --metrics-period-ms, measures what one GET /metrics costs the API server (its CPU time over
# 50 scrapes), then prints benchmarks/vllm_counters.py's table. Needs a release or debug build
# (INFERSCOPE_BIN, default target/release/inferscope-bench).
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
    "$0" run suites/vllm.toml --endpoint "$VLLM_URL" --engine-pid "$VLLM_PID" \
      --filter "vllm::shared*" --metrics-period-ms "$p" --out "$1/s$p" >"$1/s$p.log" 2>&1 || true
  done
  # What one scrape costs the API server: its CPU time over 50 back-to-back GET /metrics.
  before=$(awk "{print \$14 + \$15}" "/proc/$VLLM_PID/stat")
  for i in $(seq 50); do curl -s "${VLLM_URL%/v1}/metrics" >/dev/null; done
  after=$(awk "{print \$14 + \$15}" "/proc/$VLLM_PID/stat")
  bytes=$(curl -s "${VLLM_URL%/v1}/metrics" | wc -c)
  echo "scrape cost: $(( (after - before) * 1000 / $(getconf CLK_TCK) / 50 )) ms of API-server CPU per scrape of $bytes bytes (50 scrapes)" >"$1/scrape-cost.txt"
  ' "$bin" "$out"
cat "$out/scrape-cost.txt"
python3 benchmarks/vllm_counters.py 50="$out/p50,$out/c50,$out/s50" 100="$out/p100,$out/c100,$out/s100" \
    200="$out/p200,$out/c200,$out/s200"
