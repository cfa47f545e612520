#!/usr/bin/env bash
# Issue 29 item 8: one streamed response of 131,072 tokens (128k) from `inferscope-bench
# sim` (TTFT 1 ms, ITL 1 ms, no jitter: every gap is a 7-digit ns figure; a real server's
# 20-50 ms gaps take 8 digits, about 1.2 MB of gaps for 128k tokens) on loopback, the
# timeline captured. Prints the client's peak RSS (MiB, /usr/bin/time -v of `run`), the
# longest requests.jsonl line (bytes), and whether `report --format junit` and `report
# --format perfetto` read the run (exit status).
#   bash benchmarks/long_response.sh [BIN]   (BIN defaults to target/release/inferscope-bench;
#     KEEP=DIR copies the run directory to DIR)
set -euo pipefail
BIN=$(realpath "${1:-target/release/inferscope-bench}")
tmp=$(mktemp -d)
cleanup() { [ -n "${simpid:-}" ] && kill "$simpid" 2>/dev/null || true; rm -rf "$tmp"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$BIN" sim --port "$port" --output-tokens 131072 --ttft-ms 1 --itl-ms 1 --itl-jitter-ms 0 \
  --prefill-us-per-token 0 >"$tmp/sim.log" 2>&1 &
simpid=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break; sleep 0.05; done
cat >"$tmp/suite.toml" <<TOML
name = "long"
request_timeout_s = 600
[telemetry]
gpu = "off"
metrics = false
[[jobs]]
name = "answer"
kind = "context"
sizes = [16]
max_tokens = 131072
TOML
/usr/bin/time -v "$BIN" run "$tmp/suite.toml" --endpoint "http://127.0.0.1:$port/v1" \
  --model inferscope-sim --capture-timeline --out "$tmp/run" >"$tmp/out.log" 2>"$tmp/time.log" || {
  tail -n 5 "$tmp/out.log" "$tmp/time.log"; exit 1; }
rss_kb=$(awk -F': ' '/Maximum resident/ {print $2}' "$tmp/time.log")
wall=$(awk -F': ' '/Elapsed \(wall/ {print $2}' "$tmp/time.log")
line=$(awk '{ if (length($0) > m) m = length($0) } END { print m }' "$tmp/run/requests.jsonl")
events=$(python3 -c 'import json,sys; l=open(sys.argv[1]).read().splitlines()[1]; r=json.loads(l); print(r.get("te"), len(r.get("itl", [])))' "$tmp/run/requests.jsonl")
junit=0; "$BIN" report "$tmp/run" --format junit -o "$tmp/j.xml" >/dev/null 2>"$tmp/junit.err" || junit=$?
perf=0; "$BIN" report "$tmp/run" --format perfetto -o "$tmp/p.json" >/dev/null 2>"$tmp/perf.err" || perf=$?
[ -n "${KEEP:-}" ] && cp -r "$tmp/run" "$KEEP"
printf 'wall %s | peak RSS %.1f MiB | token events, gaps kept: %s | longest line %s B | junit exit %s | perfetto exit %s\n' \
  "$wall" "$(echo "$rss_kb / 1024" | bc -l)" "$events" "$line" "$junit" "$perf"
[ "$junit" = 0 ] || head -c 300 "$tmp/junit.err"
[ "$perf" = 0 ] || head -c 300 "$tmp/perf.err"
