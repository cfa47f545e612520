#!/usr/bin/env bash
# Issue 19: memory and artifact bytes of a load run of N context requests (64 output
# tokens each, 64 in flight, closed loop) against `inferscope-bench sim` with TTFT = ITL = 0
# on loopback. Prints one row: N, wall s, peak RSS (MiB, /usr/bin/time -v), report.json
# bytes, requests.jsonl bytes, and both per request.
#   bash benchmarks/records_scale.sh N [BIN] [exact|streaming]
#     (BIN defaults to target/release/inferscope-bench; the third argument is
#     `run --aggregation`, default exact; KEEP=DIR keeps the run directory in DIR)
set -euo pipefail
N=${1:?N requests}
BIN=${2:-target/release/inferscope-bench}
BIN=$(realpath "$BIN")
AGG=${3:-exact}
tmp=$(mktemp -d)
cleanup() { [ -n "${simpid:-}" ] && kill "$simpid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" sim --port "$port" --output-tokens 64 --ttft-ms 0 --itl-ms 0 --itl-jitter-ms 0 \
  --prefill-us-per-token 0 >"$tmp/sim.log" 2>&1 &
simpid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break; sleep 0.05; done
cat >"$tmp/suite.toml" <<TOML
name = "scale"
[telemetry]
gpu = "off"
metrics = false
[[jobs]]
name = "ctx"
kind = "context"
sizes = [16]
count = $N
concurrency = 64
max_tokens = 64
TOML
/usr/bin/time -v "$BIN" run "$tmp/suite.toml" --endpoint "http://127.0.0.1:$port/v1" \
  --model inferscope-sim --aggregation "$AGG" --out "$tmp/run" >"$tmp/out.log" 2>"$tmp/time.log" || {
  tail -5 "$tmp/out.log" "$tmp/time.log"; exit 1; }
rss_kb=$(awk -F': ' '/Maximum resident/ {print $2}' "$tmp/time.log")
wall=$(awk -F': ' '/Elapsed \(wall/ {print $2}' "$tmp/time.log")
rep=$(stat -c %s "$tmp/run/report.json")
reqs=$(stat -c %s "$tmp/run/requests.jsonl" 2>/dev/null || echo 0)
[ -n "${KEEP:-}" ] && { rm -rf "$KEEP"; cp -r "$tmp/run" "$KEEP"; cp "$tmp/out.log" "$KEEP.console.log"; }
python3 - "$N" "$wall" "$rss_kb" "$rep" "$reqs" "$AGG" <<'PY'
import sys
n, wall, rss, rep, reqs, agg = sys.argv[1:]
n, rss, rep, reqs = int(n), int(rss), int(rep), int(reqs)
print(f"N={n} aggregation={agg} wall={wall} peak_rss={rss/1024:.1f}MiB ({rss*1024/n:.0f} B/request) "
      f"report.json={rep} ({rep/n:.0f} B/request) requests.jsonl={reqs} ({reqs/n:.0f} B/request)")
PY
