#!/usr/bin/env bash
# real-engine-test.sh — the real-engine check that .ci/run calls (issue 3).
#
# Usage: scripts/real-engine-test.sh            (from anywhere; works in the repo root)
#
# Steps:
#   1. build or reuse the cached llama-server and tool venv (scripts/llama-server.sh; a cold
#      build is ~7 min on an idle 2-core machine, a warm run seconds);
#   2. python3 scripts/check_llama_report.py --self-test (the checker's own fixture tests);
#   3. generate the random-weight model into a temp dir (scripts/gen_tiny_gguf.py --seed 0),
#      twice, and require byte-identical files;
#   4. start llama-server on a kernel-chosen loopback port, stopped by PID on every exit path;
#   5. run  ${INFERSCOPE_BIN:-target/debug/inferscope-bench} run suites/llama-cpp.toml
#             --endpoint http://127.0.0.1:PORT/v1 --out RUN_DIR   (must exit 0);
#   6. python3 scripts/check_llama_report.py RUN_DIR/report.json: every LLM step of the
#      scripted trajectory completed, from step 2 on cached tokens >= 80 % of the previous
#      prompt, every warm TTFT below the cold first step's.
#
# Environment:
#   INFERSCOPE_BIN            the runner binary (default target/debug/inferscope-bench; built
#                             with `cargo build` when neither is present)
#   INFERSCOPE_LLAMA_RUN_DIR  where the run's artifacts go (default target/real-engine/llama-cpp,
#                             replaced on each run); kept after the script for inspection
#   KEEP_WORK=1               keep the temp dir (model, server log) after the script
#   plus those of scripts/llama-server.sh (XDG_CACHE_HOME, LLAMA_THREADS, ...).
# Exit status: 0 pass; non-zero on any failed step, with the reason printed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/llama-server.sh
source "$ROOT/scripts/llama-server.sh"

say() { printf '[real-engine-test] %s\n' "$*" >&2; }
T0=$(date +%s)

WORK=""
cleanup() {
    local rc=$?
    trap '' PIPE # a closed stdout (`| head`) must not cut the cleanup short
    llama_stop
    if [ -n "$WORK" ] && [ -d "$WORK" ]; then
        if [ "${KEEP_WORK:-0}" = 1 ]; then
            say "kept $WORK"
        else
            rm -rf "$WORK"
        fi
    fi
    return "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Build first: on a fresh machine this also installs python3 (with venv) and a toolchain.
BIN_PATH="$(llama_build | tail -n 1)"
PY="$(llama_venv | tail -n 1)"

say "checker self-test"
python3 scripts/check_llama_report.py --self-test
say "llama-server: $BIN_PATH ($("$BIN_PATH" --version 2>&1 | grep -m1 -o 'version: .*' || true))"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/inferscope-real-engine.XXXXXX")"
"$PY" scripts/gen_tiny_gguf.py "$WORK/tiny.gguf" --seed 0
# The generator is deterministic: the same arguments give a byte-identical file.
"$PY" scripts/gen_tiny_gguf.py "$WORK/tiny-again.gguf" --seed 0 2>/dev/null
SHA="$(sha256sum "$WORK/tiny.gguf" | cut -d' ' -f1)"
if [ "$SHA" != "$(sha256sum "$WORK/tiny-again.gguf" | cut -d' ' -f1)" ]; then
    say "FAIL: gen_tiny_gguf.py wrote different bytes for the same arguments"
    exit 1
fi
rm -f "$WORK/tiny-again.gguf"
say "model: $WORK/tiny.gguf (sha256 $SHA, reproducible)"

LLAMA_LOG="$WORK/llama-server.log"
llama_start "$WORK/tiny.gguf"

INFERSCOPE="${INFERSCOPE_BIN:-target/debug/inferscope-bench}"
if [ ! -x "$INFERSCOPE" ]; then
    if [ -n "${INFERSCOPE_BIN:-}" ]; then
        say "INFERSCOPE_BIN=$INFERSCOPE_BIN is not an executable"
        exit 1
    fi
    say "building $INFERSCOPE"
    cargo build --quiet --bin inferscope-bench
fi

if [ -n "${INFERSCOPE_LLAMA_RUN_DIR:-}" ]; then
    RUN_DIR="$INFERSCOPE_LLAMA_RUN_DIR"
else
    RUN_DIR="$ROOT/target/real-engine/llama-cpp"
    rm -rf "$RUN_DIR"
fi
mkdir -p "$(dirname "$RUN_DIR")"

say "running suites/llama-cpp.toml against $LLAMA_URL"
rc=0
"$INFERSCOPE" run suites/llama-cpp.toml --endpoint "$LLAMA_URL" --out "$RUN_DIR" || rc=$?
if [ "$rc" -ne 0 ]; then
    say "FAIL: inferscope-bench exited $rc; llama-server log tail:"
    tail -n 30 "$LLAMA_LOG" >&2 || true
    if [ -f "$RUN_DIR/report.json" ]; then
        say "per-step table of the failed run:"
        python3 scripts/check_llama_report.py "$RUN_DIR/report.json" || true
    fi
    exit 1
fi

# The engine's own counters, for the log (not asserted here: report.json is the contract).
python3 - "http://127.0.0.1:$LLAMA_PORT/metrics" <<'PY' >&2 || true
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=5) as r:
    for line in r.read().decode().splitlines():
        if line.startswith(("llamacpp:prompt_tokens_total", "llamacpp:prompt_tokens_cached_total",
                            "llamacpp:tokens_predicted_total")):
            print("[real-engine-test] metrics:", line)
PY

python3 scripts/check_llama_report.py "$RUN_DIR/report.json"
say "PASS in $(($(date +%s) - T0)) s; artifacts in $RUN_DIR"
