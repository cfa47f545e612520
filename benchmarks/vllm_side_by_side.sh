#!/usr/bin/env bash
# vllm_side_by_side.sh — the product and vLLM's own benchmark client (`vllm bench serve`,
# module vllm.benchmarks.serve) on one vLLM server, the same workload, in alternation
# (issue 26 item 4; table in BENCHMARKS.md).
#
# Usage: benchmarks/vllm_side_by_side.sh [OUT_DIR] [REPS]
# Starts vLLM without prefix caching (scripts/vllm.sh; VLLM_EXTRA_ARGS=--no-enable-prefix-caching,
# so repeated runs stay cold), then REPS (default 3) times, for concurrency 1 and 4: vLLM's
# client and the product (benchmarks/vllm/side_by_side.toml), which goes first alternating
# from rep to rep, each 16 requests of 256 prompt
# and 64 output tokens (ignore_eos) after one warm-up. Prints
# benchmarks/vllm_side_by_side.py's table: TTFT, ITL, E2E p50/p99 and output tokens/s of
# each tool, the median of the runs with their min–max range, and each tool's own CPU time
# (user + system, /usr/bin/time) per run: on two cores the client shares the CPUs with the
# engine.
# INFERSCOPE_BIN: the runner (default target/release/inferscope-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-target/bench/vllm-side-by-side}"
reps="${2:-3}"
bin="${INFERSCOPE_BIN:-target/release/inferscope-bench}"
gguf="$(bash scripts/smollm2.sh path | tail -n 1)"
model_dir="$(bash scripts/vllm.sh model "$gguf" | tail -n 1)"
rm -rf "$out"
mkdir -p "$out"
# shellcheck disable=SC2016 # expanded by the inner shell
VLLM_EXTRA_ARGS="--no-enable-prefix-caching" bash scripts/vllm.sh run "$gguf" -- bash -c '
  set -euo pipefail
  bin=$1 out=$2 reps=$3 model_dir=$4
  base=${VLLM_URL%/v1}
  ours() {
    echo "[side-by-side] rep $1, concurrency $2: inferscope-bench (load $(cut -d" " -f1 /proc/loadavg))" >&2
    /usr/bin/time -f "%U %S %M" -o "$out/ours-c$2-r$1.time" \
      "$bin" run benchmarks/vllm/side_by_side.toml --endpoint "$VLLM_URL" --filter "sbs::c$2" \
      --out "$out/ours-c$2-r$1" >"$out/ours-c$2-r$1.log" 2>&1
  }
  for rep in $(seq 1 "$reps"); do
    for c in 1 4; do
      if [ $((rep % 2)) = 0 ]; then ours $rep $c; fi
      echo "[side-by-side] rep $rep, concurrency $c: vllm bench serve (load $(cut -d" " -f1 /proc/loadavg))" >&2
      /usr/bin/time -f "%U %S %M" -o "$out/vllm-c$c-r$rep.time" \
        "$VLLM_PYTHON" - --backend openai-chat --endpoint /v1/chat/completions --base-url "$base" \
        --model smollm2 --tokenizer "$model_dir" --dataset-name random \
        --random-input-len 256 --random-output-len 64 --random-range-ratio 0 --ignore-eos \
        --num-prompts 16 --num-warmups 1 --max-concurrency "$c" --request-rate inf \
        --seed "$rep" --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99 \
        --save-result --save-detailed --result-dir "$out" --result-filename "vllm-c$c-r$rep.json" \
        --disable-tqdm >"$out/vllm-c$c-r$rep.log" 2>&1 <<PY
import sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.benchmarks.serve import add_cli_args, main
p = FlexibleArgumentParser()
add_cli_args(p)
main(p.parse_args(sys.argv[1:]))
PY
      if [ $((rep % 2)) = 1 ]; then ours $rep $c; fi
    done
  done' _ "$bin" "$out" "$reps" "$model_dir"
python3 benchmarks/vllm_side_by_side.py "$out" "$reps"
