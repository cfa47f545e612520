#!/usr/bin/env bash
# Schedule lag of a Mooncake replay (issue 27 part 3) on the built-in simulator: a synthetic
# trace of one-block prompts whose timestamps are 1 ms apart, replayed with
# `time_scale = 1000 / RATE` (RATE arrivals per second, open loop, uncapped), at each rate in
# RATES for about SECONDS each. Prints the job's schedule_lag_ms p50/p99 per rate.
# Usage: benchmarks/replay_lag.sh [BIN] (default target/release/inferscope-bench)
set -euo pipefail
BIN=${1:-target/release/inferscope-bench}
BIN=$(realpath "$BIN")
RATES=${RATES:-"100 1000 5000"}
SECONDS_EACH=${SECONDS_EACH:-3}
PORT=${PORT:-18991}
dir=$(mktemp -d)
cd "$dir"
mkdir fixtures
"$BIN" sim --port "$PORT" --ttft-ms 0 --itl-ms 0 --itl-jitter-ms 0 --prefill-us-per-token 0 \
  --max-num-seqs 0 >sim.log 2>&1 &
sim=$!
trap 'kill $sim' EXIT
sleep 1
for rate in $RATES; do
  n=$((rate * SECONDS_EACH))
  awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++)
    printf "{\"timestamp\": %d, \"input_length\": 16, \"output_length\": 8, \"hash_ids\": [%d]}\n", i, i }' \
    >fixtures/t.jsonl
  scale=$(awk -v r="$rate" 'BEGIN { printf "%g", 1000 / r }')
  cat >w.toml <<T
name = "lag"
[telemetry]
metrics = false
gpu = "off"
[[jobs]]
name = "replay"
kind = "context"
dataset = { path = "t.jsonl", format = "mooncake", block_tokens = 16, time_scale = $scale }
T
  "$BIN" run w.toml --endpoint "http://127.0.0.1:$PORT/v1" --model inferscope-sim \
    --out "run-$rate" >"run-$rate.txt" 2>&1 || true
  python3 - "$rate" "run-$rate/report.json" <<'P'
import json, sys
j = json.load(open(sys.argv[2]))["jobs"][0]
s, lag = j["stats"], j["stats"]["schedule_lag_ms"]
print(f"{sys.argv[1]:>5}/s  requests {s['requests']:>6}  failed {s['failed']}  "
      f"lag p50 {lag['p50']:.3f} ms  p99 {lag['p99']:.3f} ms  achieved {s['throughput_rps']:.0f} req/s")
P
done
