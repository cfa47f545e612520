#!/usr/bin/env bash
# gpu-check.sh — per-step energy on a real GPU (issue 28), in one prepared run.
#
# Usage: scripts/gpu-check.sh BIN [OUT_DIR]
#   BIN      the product's binary (on the GPU machine: a stripped release build carried along)
#   OUT_DIR  where the results go (default: $OUT when set, else target/gpu-check; the result
#            files named below are replaced, nothing else there is touched)
#
# Steps:
#   1. the self-tests of scripts/gpu_server.py and scripts/cache_blocks.py (no torch needed);
#   2. NVML as nvidia-ml-py sees it (name, UUID, MIG mode, power and energy readings) into
#      nvml.json, beside what the product itself records (skipped, and said so, without
#      nvidia-ml-py or a GPU);
#   3. scripts/gpu_server.py started on a kernel-chosen loopback port (a Llama-style model of
#      1.1B parameters with random weights; GPU_CHECK_TINY=1: a tiny one), waited for until
#      /v1/models answers, stopped by its PID on every exit path;
#   4. BIN run scripts/gpu-check.toml (gpu = "auto" at 10 ms: the scripted trajectory, the
#      context sweep, then 8 trajectories in flight) --out WORK/run;
#   5. BIN overhead scripts/gpu-check.toml --filter steps --pairs 2: the runner's own cost
#      (CPU, peak RSS, GPU memory) with the sampler at 10 ms;
#   6. python3 scripts/check_gpu_run.py WORK/run (--expect-gpu unless GPU_CHECK_DEVICE=cpu):
#      the figures of BENCHMARKS "Real GPU", printed and written to figures.json.
#
# What comes back in OUT_DIR (at most 8 files, none deeper than one folder, for the device
# tool's limits): console.log (everything printed), figures.json, nvml.json, report.json and
# gpu.jsonl and sources.json of the run (the fixture candidates), run.tar.gz (the whole run
# directory: report, samples/, steps, requests, and the overhead output).
#
# On the GPU machine (device tool), from a session here:
#   cargo build --release --bin inferscope-bench
#   mkdir -p .gpu-carry && cp target/release/inferscope-bench .gpu-carry/ && strip .gpu-carry/inferscope-bench
#   grep -qx '/.gpu-carry/' .git/info/exclude || echo /.gpu-carry/ >> .git/info/exclude
#   run: command "bash scripts/gpu-check.sh .gpu-carry/inferscope-bench", carry [".gpu-carry"]
#
# Environment:
#   GPU_CHECK_DEVICE   cuda (default) or cpu
#   GPU_CHECK_TINY     1: the tiny model (the CPU check of this script itself)
#   GPU_CHECK_PYTHON   the Python with torch and transformers (default python3)
#   GPU_CHECK_THREADS  torch CPU threads of the server (default: torch's)
#   GPU_CHECK_PAIRS    overhead pairs (default 2; 0 skips the overhead step)
# Exit status: 0 when every step passed; otherwise the first failing step's, after the
# results that exist were written.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

say() { printf '[gpu-check] %s\n' "$*" >&2; }
[ $# -ge 1 ] || { say "usage: scripts/gpu-check.sh BIN [OUT_DIR]"; exit 2; }
BIN="$1"
RESULTS="${2:-${OUT:-$ROOT/target/gpu-check}}"
[ -x "$BIN" ] || { say "BIN $BIN is not an executable"; exit 2; }
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
DEVICE="${GPU_CHECK_DEVICE:-cuda}"
PY="${GPU_CHECK_PYTHON:-python3}"
PAIRS="${GPU_CHECK_PAIRS:-2}"
# NVML's library where the GPU machine mounts the driver (the product loads libnvidia-ml.so.1).
for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
    [ -d "$d" ] && export LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
SERVER_ARGS=(--device "$DEVICE" --port 0)
[ "${GPU_CHECK_TINY:-0}" = 1 ] && SERVER_ARGS+=(--tiny)
[ -n "${GPU_CHECK_THREADS:-}" ] && SERVER_ARGS+=(--threads "$GPU_CHECK_THREADS")

mkdir -p "$RESULTS"
# Only this script's own result files are replaced; nothing else in OUT_DIR is touched.
for f in console.log figures.json nvml.json report.json gpu.jsonl sources.json run.tar.gz; do
    rm -f "$RESULTS/$f"
done
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")"
LOG="$RESULTS/console.log"
exec > >(tee -a "$LOG") 2>&1
SERVER_PID=""
T0=$(date +%s)

collect() {
    local rc=$?
    trap '' PIPE
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
    fi
    if [ -d "$WORK/run" ]; then
        for f in report.json samples/gpu.jsonl samples/sources.json; do
            [ -f "$WORK/run/$f" ] && cp "$WORK/run/$f" "$RESULTS/"
        done
    fi
    tar -C "$WORK" -czf "$RESULTS/run.tar.gz" --exclude=port . 2>/dev/null || true
    rm -rf "$WORK"
    say "exit $rc after $(($(date +%s) - T0)) s; results in $RESULTS: $(ls "$RESULTS" | tr '\n' ' ')"
    return "$rc"
}
trap collect EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

say "1. self-tests"
python3 scripts/gpu_server.py --self-test
python3 -c 'import sys; sys.path.insert(0, "scripts"); import cache_blocks; bad = cache_blocks.self_test(); print(bad or "cache_blocks: ok"); sys.exit(1 if bad else 0)'

say "2. NVML through nvidia-ml-py"
"$PY" scripts/gpu_nvml_facts.py "$RESULTS/nvml.json" || say "nvml facts: exit $? (see above)"

say "3. starting scripts/gpu_server.py ${SERVER_ARGS[*]}"
"$PY" -u scripts/gpu_server.py "${SERVER_ARGS[@]}" --port-file "$WORK/port" \
    > "$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 600); do
    [ -s "$WORK/port" ] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { say "server exited:"; cat "$WORK/server.log"; exit 1; }
    sleep 0.2
done
[ -s "$WORK/port" ] || { say "server not ready in 120 s:"; cat "$WORK/server.log"; exit 1; }
URL="http://127.0.0.1:$(cat "$WORK/port")/v1"
python3 - "$URL" <<'PY'
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/models", timeout=10) as r:
    ids = [m["id"] for m in json.load(r)["data"]]
print("models:", ids)
PY
cat "$WORK/server.log"

say "4. run scripts/gpu-check.toml against $URL"
rc=0
"$BIN" run scripts/gpu-check.toml --endpoint "$URL" --out "$WORK/run" || rc=$?
[ "$rc" -eq 0 ] || say "run exited $rc"

if [ "$PAIRS" -gt 0 ]; then
    say "5. overhead of the runner with the sampler at 10 ms ($PAIRS pairs, job steps)"
    orc=0
    "$BIN" overhead scripts/gpu-check.toml --endpoint "$URL" --filter steps --pairs "$PAIRS" \
        --out "$WORK/overhead" || orc=$?
    say "overhead exited $orc (0 pass, 100 fail, 3 inconclusive)"
fi

say "6. figures"
EXPECT=(--expect-gpu)
[ "$DEVICE" = cpu ] && EXPECT=()
crc=0
OVH=()
[ -f "$WORK/overhead/overhead.json" ] && OVH=(--overhead "$WORK/overhead/overhead.json")
python3 scripts/check_gpu_run.py "$WORK/run" "${EXPECT[@]}" "${OVH[@]}" \
    --json "$RESULTS/figures.json" || crc=$?
tail -n 5 "$WORK/server.log"
[ "$rc" -eq 0 ] || exit "$rc"
exit "$crc"
