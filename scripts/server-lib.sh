# server-lib.sh — what the engine scripts share (scripts/llama-server.sh, scripts/vllm.sh):
# sourced, defines srv_http_status URL and srv_alive PID; runs nothing.

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
