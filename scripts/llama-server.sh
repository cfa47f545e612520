#!/usr/bin/env bash
# llama-server.sh — build, cache, start and stop llama.cpp's `llama-server` for the
# real-engine tests (issue 3; recipe and facts: ../shared/ref/llama-cpp-real-engine.md).
#
# Usage (as a command):
#   scripts/llama-server.sh build            Build llama-server from the llama.cpp copy vendored
#                                            in the pinned llama-cpp-python==0.3.36 sdist, or reuse
#                                            the cached binary. Last stdout line: the binary path.
#   scripts/llama-server.sh venv             Create (or reuse) the tool venv (cmake, ninja,
#                                            gguf==0.19.0, numpy). Last stdout line: its python.
#   scripts/llama-server.sh start MODEL.gguf Start a detached server on a loopback port chosen by
#                                            the kernel (--port 0), wait for /health, record its
#                                            PID/port/log in $LLAMA_STATE_DIR. Last stdout line:
#                                            the endpoint URL http://127.0.0.1:PORT/v1.
#   scripts/llama-server.sh stop             Stop the server recorded in $LLAMA_STATE_DIR (by PID).
#   scripts/llama-server.sh run MODEL.gguf -- CMD [ARGS...]
#                                            Start a server, run CMD with LLAMA_URL (and
#                                            INFERSCOPE_ENDPOINT) exported, stop the server by PID
#                                            on every exit path (trap EXIT INT TERM); exit with
#                                            CMD's status.
#
# Usage (sourced, `source scripts/llama-server.sh`): defines the functions
#   llama_build, llama_venv, llama_start MODEL, llama_stop
# without running anything. llama_start sets LLAMA_PID, LLAMA_PORT, LLAMA_URL, LLAMA_LOG in
# the caller's shell; the caller installs `trap llama_stop EXIT INT TERM` itself.
#
# Cache (outside the clone, keyed by the pinned versions):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-bench/llama-server-0.3.36/llama-server
#   ${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-bench/venv-gguf-0.19.0/
# A warm run reuses both (seconds). Build work happens in a temp dir under the cache dir and
# the binary is moved into place atomically (rename on the same filesystem), so an
# interrupted build never leaves a half-written binary at the cached path.
#
# Environment:
#   XDG_CACHE_HOME     cache root (default $HOME/.cache)
#   LLAMA_STATE_DIR    where `start`/`stop` keep pid/port/log (default $TMPDIR/inferscope-llama-$UID)
#   LLAMA_THREADS      server threads (default 2)
#   LLAMA_CTX          context size (default 4096)
#   LLAMA_HEALTH_TIMEOUT_S  seconds to wait for /health (default 60)
#   LLAMA_ALIAS        model name the server lists in /v1/models (default: the model file's
#                      stem, so tiny.gguf serves as "tiny")
#   LLAMA_BUILD_JOBS   parallel compile jobs (default $(nproc))
#   LLAMA_EXTRA_ARGS   more server flags, split on whitespace (e.g. "--jinja
#                      --chat-template-file T.jinja" for llama.cpp's tool-call handling)
#
# A fresh Debian machine: when missing, installs build-essential (C/C++ toolchain) and
# python3-venv with `apt-get install -y` (DEBIAN_FRONTEND=noninteractive; needs root or sudo).
# Server flags: --host 127.0.0.1 --port 0 --metrics --slots -c 4096 -np 1 -t 2 --alias STEM.

LLAMA_CPP_PYTHON_VERSION=0.3.36
GGUF_VERSION=0.19.0
# The venv's pins. numpy/cmake/ninja: the versions pip picked when this script was written.
LLAMA_VENV_PINS=(cmake==4.4.5 ninja==1.13.2 "gguf==${GGUF_VERSION}" numpy==2.4.6)

LLAMA_CACHE_ROOT="${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-bench"
LLAMA_BIN_DIR="$LLAMA_CACHE_ROOT/llama-server-$LLAMA_CPP_PYTHON_VERSION"
LLAMA_BIN="$LLAMA_BIN_DIR/llama-server"
LLAMA_VENV="$LLAMA_CACHE_ROOT/venv-gguf-$GGUF_VERSION"

# shellcheck source=scripts/server-lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/server-lib.sh"

_llama_log() { printf '[llama-server.sh] %s\n' "$*" >&2; }
_llama_die() { printf '[llama-server.sh] error: %s\n' "$*" >&2; return 1; }

# Run apt-get install for the given packages (as root, or via sudo).
_llama_apt_install() {
    local -a sudo_cmd=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null 2>&1; then
            sudo_cmd=(sudo -n)
        else
            _llama_die "missing system packages ($*); install them as root: apt-get install -y $*"
            return 1
        fi
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        _llama_die "missing system packages ($*) and no apt-get on this machine; install them by hand"
        return 1
    fi
    _llama_log "installing system packages: $*"
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >&2 || return 1
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" >&2
}

# A C/C++ toolchain that can compile and link, and python3 with a working `-m venv`.
_llama_ensure_system() {
    local -a missing=()
    if ! command -v cc >/dev/null 2>&1 || ! command -v c++ >/dev/null 2>&1 \
        || ! command -v make >/dev/null 2>&1; then
        missing+=(build-essential)
    fi
    if ! command -v python3 >/dev/null 2>&1; then
        missing+=(python3 python3-venv)
    else
        local probe
        probe="$(mktemp -d "${TMPDIR:-/tmp}/inferscope-venv-probe.XXXXXX")" || return 1
        if ! python3 -m venv "$probe/v" >/dev/null 2>&1; then
            missing+=(python3-venv)
        fi
        rm -rf "$probe"
    fi
    if [ "${#missing[@]}" -gt 0 ]; then
        _llama_apt_install "${missing[@]}" || return 1
    fi
}

# Create or reuse the venv. A venv is reused only when its marker (written last, after a
# successful install) names exactly the current pins; anything else is rebuilt from scratch.
_llama_venv_unlocked() {
    local marker="$LLAMA_VENV/.inferscope-pins" want
    want="${LLAMA_VENV_PINS[*]}"
    if [ -x "$LLAMA_VENV/bin/python" ] && [ -f "$marker" ] && [ "$(cat "$marker")" = "$want" ]; then
        return 0
    fi
    _llama_ensure_system || return 1
    _llama_log "creating venv $LLAMA_VENV ($want)"
    rm -rf "$LLAMA_VENV"
    python3 -m venv "$LLAMA_VENV" >&2 || return 1
    "$LLAMA_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "${LLAMA_VENV_PINS[@]}" >&2 || { rm -rf "$LLAMA_VENV"; return 1; }
    printf '%s' "$want" >"$marker"
}

# llama_venv: ensure the tool venv exists; prints its python path on stdout.
llama_venv() {
    srv_lock "$LLAMA_CACHE_ROOT/.lock" \
        "[llama-server.sh] waiting for another build holding $LLAMA_CACHE_ROOT/.lock" || return 1
    _llama_venv_unlocked
    local rc=$?
    srv_unlock
    [ "$rc" -eq 0 ] || return "$rc"
    printf '%s\n' "$LLAMA_VENV/bin/python"
}

_llama_bin_ok() {
    [ -x "$LLAMA_BIN" ] && "$LLAMA_BIN" --version >/dev/null 2>&1
}

_llama_build_unlocked() {
    if _llama_bin_ok; then
        _llama_log "reusing cached $LLAMA_BIN"
        return 0
    fi
    _llama_ensure_system || return 1
    _llama_venv_unlocked || return 1
    local t0 work src jobs
    t0=$(date +%s)
    jobs="${LLAMA_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}"
    mkdir -p "$LLAMA_BIN_DIR" || return 1
    work="$(mktemp -d "$LLAMA_CACHE_ROOT/build-$LLAMA_CPP_PYTHON_VERSION.XXXXXX")" || return 1
    # The work dir goes on every exit path of this function's subshell.
    (
        set -euo pipefail
        trap 'rm -rf "$work"' EXIT
        export PATH="$LLAMA_VENV/bin:$PATH"
        _llama_log "downloading llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist"
        # --no-binary for this one package only: `:all:` would also force building the
        # build dependencies (CMake) from source (reference pitfall 1).
        "$LLAMA_VENV/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
            --no-binary llama-cpp-python "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" \
            -d "$work/sdist" >&2
        tar -xzf "$work/sdist/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" -C "$work"
        src="$work/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
        [ -f "$src/CMakeLists.txt" ] || { _llama_die "no llama.cpp at $src"; exit 1; }
        _llama_log "configuring $src"
        # Flags as in the reference: no prebuilt/downloaded web UI (pitfall 2), no OpenSSL
        # (LLAMA_CURL is deprecated, pitfall 3), portable x86-64 AVX2 baseline, static libs.
        cmake -S "$src" -B "$work/build" -G Ninja \
            -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DBUILD_SHARED_LIBS=OFF \
            -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
            -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
            -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF >&2
        _llama_log "compiling llama-server with $jobs jobs (about 7 min on 2 cores)"
        cmake --build "$work/build" --target llama-server -j"$jobs" >&2
        "$work/build/bin/llama-server" --version >&2
        # Copy next to the final path (same filesystem), then rename: atomic.
        cp "$work/build/bin/llama-server" "$LLAMA_BIN_DIR/.llama-server.tmp.$$"
        chmod 755 "$LLAMA_BIN_DIR/.llama-server.tmp.$$"
        mv -f "$LLAMA_BIN_DIR/.llama-server.tmp.$$" "$LLAMA_BIN"
    ) || { rm -f "$LLAMA_BIN_DIR/.llama-server.tmp.$$"; _llama_die "build failed"; return 1; }
    _llama_log "built $LLAMA_BIN in $(($(date +%s) - t0)) s"
}

# llama_build: build or reuse the cached llama-server; prints the binary path on stdout.
llama_build() {
    srv_lock "$LLAMA_CACHE_ROOT/.lock" \
        "[llama-server.sh] waiting for another build holding $LLAMA_CACHE_ROOT/.lock" || return 1
    _llama_build_unlocked
    local rc=$?
    srv_unlock
    [ "$rc" -eq 0 ] || return "$rc"
    printf '%s\n' "$LLAMA_BIN"
}

# True when PID is alive and is the cached llama-server (guards against a recycled PID).
_llama_pid_is_server() {
    local pid="$1" exe
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
    [ -z "$exe" ] || [ "${exe% (deleted)}" = "$LLAMA_BIN" ] || [ "$(basename "${exe% (deleted)}")" = llama-server ]
}

# Stop a server by PID: SIGTERM, up to 10 s, then SIGKILL.
_llama_kill_pid() {
    local pid="$1"
    _llama_pid_is_server "$pid" || return 0
    if ! srv_term_wait "$pid" 10; then
        _llama_log "server $pid ignored SIGTERM for 10 s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
    _llama_log "stopped llama-server (pid $pid)"
}

# llama_start MODEL: start the cached binary on 127.0.0.1 with --port 0, read the port from
# the log line `listening on http://127.0.0.1:<port>`, wait for /health == 200. Sets
# LLAMA_PID, LLAMA_PORT, LLAMA_URL (http://127.0.0.1:PORT/v1), LLAMA_LOG. On failure prints
# the log tail, stops the server and returns non-zero.
llama_start() {
    local model="$1" timeout="${LLAMA_HEALTH_TIMEOUT_S:-60}" deadline status
    [ -f "$model" ] || { _llama_die "model file not found: $model"; return 1; }
    _llama_bin_ok || { _llama_die "no llama-server at $LLAMA_BIN; run: $0 build"; return 1; }
    LLAMA_LOG="${LLAMA_LOG:-$(mktemp "${TMPDIR:-/tmp}/llama-server.XXXXXX.log")}"
    local alias="${LLAMA_ALIAS:-$(basename "$model" .gguf)}"
    local -a extra=()
    # shellcheck disable=SC2206 # split on whitespace on purpose
    [ -n "${LLAMA_EXTRA_ARGS:-}" ] && extra=(${LLAMA_EXTRA_ARGS})
    "$LLAMA_BIN" -m "$model" --alias "$alias" --host 127.0.0.1 --port 0 --metrics --slots \
        -c "${LLAMA_CTX:-4096}" -np 1 -t "${LLAMA_THREADS:-2}" "${extra[@]}" \
        >"$LLAMA_LOG" 2>&1 </dev/null &
    LLAMA_PID=$!
    LLAMA_PORT=""
    deadline=$(($(date +%s) + timeout))
    while :; do
        if ! srv_alive "$LLAMA_PID"; then
            wait "$LLAMA_PID" 2>/dev/null || true
            _llama_log "llama-server exited during startup; log tail ($LLAMA_LOG):"
            tail -n 40 "$LLAMA_LOG" >&2
            LLAMA_PID=""
            return 1
        fi
        if [ -z "$LLAMA_PORT" ]; then
            LLAMA_PORT="$(sed -n 's#.*listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*#\1#p' "$LLAMA_LOG" | head -n 1)"
        fi
        if [ -n "$LLAMA_PORT" ]; then
            status="$(srv_http_status "http://127.0.0.1:$LLAMA_PORT/health")"
            [ "$status" = 200 ] && break
        fi
        if [ "$(date +%s)" -ge "$deadline" ]; then
            _llama_log "llama-server not healthy after ${timeout}s (port '${LLAMA_PORT}'); log tail ($LLAMA_LOG):"
            tail -n 40 "$LLAMA_LOG" >&2
            _llama_kill_pid "$LLAMA_PID"
            LLAMA_PID=""
            return 1
        fi
        sleep 0.1
    done
    LLAMA_URL="http://127.0.0.1:$LLAMA_PORT/v1"
    export LLAMA_PID LLAMA_PORT LLAMA_URL LLAMA_LOG
    _llama_log "llama-server pid $LLAMA_PID healthy at $LLAMA_URL (log $LLAMA_LOG)"
}

# llama_stop: stop the server started by llama_start in this shell (by PID). Idempotent, so
# it is safe as an EXIT/INT/TERM trap.
llama_stop() {
    if [ -n "${LLAMA_PID:-}" ]; then
        _llama_kill_pid "$LLAMA_PID"
        LLAMA_PID=""
    fi
}

_llama_state_dir() { printf '%s\n' "${LLAMA_STATE_DIR:-${TMPDIR:-/tmp}/inferscope-llama-$(id -u)}"; }

_llama_main() {
    set -uo pipefail
    local cmd="${1:-}"
    shift || true
    case "$cmd" in
    build)
        llama_build
        ;;
    venv)
        llama_venv
        ;;
    start)
        [ $# -eq 1 ] || { _llama_die "usage: $0 start MODEL.gguf"; return 2; }
        local state
        state="$(_llama_state_dir)"
        mkdir -p "$state" || return 1
        if [ -f "$state/pid" ] && _llama_pid_is_server "$(cat "$state/pid")"; then
            _llama_die "a server is already recorded in $state (pid $(cat "$state/pid")); run: $0 stop"
            return 1
        fi
        LLAMA_LOG="$state/llama-server.log"
        # Until the state is recorded, any exit path stops the half-started server.
        trap 'llama_stop' EXIT
        trap 'llama_stop; exit 130' INT
        trap 'llama_stop; exit 143' TERM
        llama_start "$1" || return 1
        printf '%s\n' "$LLAMA_PID" >"$state/pid"
        printf '%s\n' "$LLAMA_PORT" >"$state/port"
        printf '%s\n' "$LLAMA_URL" >"$state/url"
        trap - EXIT INT TERM
        _llama_log "recorded in $state; stop with: $0 stop"
        printf '%s\n' "$LLAMA_URL"
        ;;
    stop)
        local state pid
        state="$(_llama_state_dir)"
        if [ ! -f "$state/pid" ]; then
            _llama_log "no server recorded in $state"
            return 0
        fi
        pid="$(cat "$state/pid")"
        _llama_kill_pid "$pid"
        rm -f "$state/pid" "$state/port" "$state/url"
        ;;
    run)
        [ $# -ge 3 ] && [ "$2" = "--" ] || { _llama_die "usage: $0 run MODEL.gguf -- CMD [ARGS...]"; return 2; }
        local model="$1"
        shift 2
        # A log this command made itself is removed when CMD succeeds, kept otherwise.
        _LLAMA_RUN_OWN_LOG=""
        if [ -z "${LLAMA_LOG:-}" ]; then
            LLAMA_LOG="$(mktemp "${TMPDIR:-/tmp}/llama-server.XXXXXX.log")" || return 1
            _LLAMA_RUN_OWN_LOG="$LLAMA_LOG"
        fi
        trap '_llama_rc=$?; llama_stop; if [ "$_llama_rc" -eq 0 ] && [ -n "$_LLAMA_RUN_OWN_LOG" ]; then rm -f "$_LLAMA_RUN_OWN_LOG"; elif [ -n "$_LLAMA_RUN_OWN_LOG" ]; then _llama_log "server log kept: $_LLAMA_RUN_OWN_LOG"; fi' EXIT
        trap 'exit 130' INT
        trap 'exit 143' TERM
        llama_start "$model" || return 1
        INFERSCOPE_ENDPOINT="$LLAMA_URL"
        export INFERSCOPE_ENDPOINT
        printf '%s\n' "$LLAMA_URL" >&2
        local rc=0
        "$@" || rc=$?
        return "$rc"
        ;;
    *)
        sed -n '2,30p' "${BASH_SOURCE[0]}" >&2
        return 2
        ;;
    esac
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    _llama_main "$@"
    exit $?
fi
