# server-lib.sh — what the engine scripts share (scripts/llama-server.sh, scripts/vllm.sh):
# sourced, defines srv_http_status URL, srv_alive PID, srv_term_wait PID SECONDS,
# srv_lock FILE MESSAGE and srv_unlock; runs nothing.

# GET a loopback URL; prints the HTTP status code (000 when unreachable). python3 only,
# so a fresh machine without curl works too.
srv_http_status() {
    python3 - "$1" <<'PY' 2>/dev/null || echo 000
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
        print(r.status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print("000")
PY
}

# True while PID runs (a zombie child that has exited but is not yet reaped counts as gone).
srv_alive() {
    local stat
    kill -0 "$1" 2>/dev/null || return 1
    stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 1
    stat="${stat##*) }"
    [ "${stat%% *}" != Z ]
}

# SIGTERM to PID, then wait up to SECONDS for it to go; false when it is still running.
srv_term_wait() {
    local i
    srv_alive "$1" || return 0
    kill -TERM "$1" 2>/dev/null || return 0
    for i in $(seq 1 $(($2 * 10))); do
        srv_alive "$1" || return 0
        sleep 0.1
    done
    ! srv_alive "$1"
}

# Serialize work that shares a cache (two CI jobs on one machine): hold an exclusive flock
# on FILE (its directory made first), printing MESSAGE to stderr when another process holds
# it; without flock on the machine, no lock. One lock at a time (SRV_LOCK_FD).
srv_lock() {
    mkdir -p "$(dirname "$1")" || return 1
    command -v flock >/dev/null 2>&1 || return 0
    exec {SRV_LOCK_FD}>"$1" || return 1
    if ! flock -n "$SRV_LOCK_FD"; then
        printf '%s\n' "$2" >&2
        flock "$SRV_LOCK_FD" || return 1
    fi
}
srv_unlock() {
    if [ -n "${SRV_LOCK_FD:-}" ]; then
        exec {SRV_LOCK_FD}>&-
        unset SRV_LOCK_FD
    fi
}
