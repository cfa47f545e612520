#!/usr/bin/env bash
# Client cost at saturation against the bare reference client (issue 19), as published in
# BENCHMARKS.md "Client cost": RUNS runs of the client_fidelity bench, alternating which
# client goes first, each run measuring both clients at each concurrency level against the
# same in-process server; then, per level, the range and median of the product/reference
# ratio of CPU per 1000 requests, how many runs were within 1.1x, req/s, and the TTFT and
# ITL gap error p99 of both.
#
# Usage: benchmarks/client_cost.sh BIN [RUNS] [OUT_DIR]
#   BIN      the bench binary: `cargo bench --bench client_fidelity --no-run` prints it
#   RUNS     default 10
#   OUT_DIR  where each run's table is kept (default: a temporary directory)
# The environment's FIDELITY_* variables pass through; the defaults here are saturation
# (FIDELITY_TTFT_MS=0 FIDELITY_ITL_MS=0), FIDELITY_CONCURRENCY=16,128, FIDELITY_ROUNDS=100
# and FIDELITY_FLOOR_SAMPLES=0.
set -euo pipefail
bin=${1:?usage: client_cost.sh BIN [RUNS] [OUT_DIR]}
runs=${2:-10}
out=${3:-$(mktemp -d)}
mkdir -p "$out"
for i in $(seq "$runs"); do
    if [ $((i % 2)) = 1 ]; then order=product,reference; else order=reference,product; fi
    FIDELITY_CLIENTS=$order \
        FIDELITY_TTFT_MS=${FIDELITY_TTFT_MS:-0} FIDELITY_ITL_MS=${FIDELITY_ITL_MS:-0} \
        FIDELITY_CONCURRENCY=${FIDELITY_CONCURRENCY:-16,128} \
        FIDELITY_ROUNDS=${FIDELITY_ROUNDS:-100} \
        FIDELITY_FLOOR_SAMPLES=${FIDELITY_FLOOR_SAMPLES:-0} \
        "$bin" --bench >"$out/run-$i.txt"
done
head -1 "$out/run-1.txt"
python3 - "$out" "$runs" <<'PY'
import re, statistics, sys
out, runs = sys.argv[1], int(sys.argv[2])
levels = {}
for i in range(1, runs + 1):
    for line in open(f"{out}/run-{i}.txt"):
        if not re.match(r"^\| (product|reference) \|", line):
            continue
        f = [x.strip() for x in line.split("|")]
        levels.setdefault(int(f[2]), {}).setdefault(i, {})[f[1]] = {
            "ttft": float(f[4].split("/")[1]), "itl": float(f[7].split("/")[1]),
            "rps": float(f[9]), "cpu": float(f[10]), "allocs": f[12], "lag": f[13],
        }
def rng(xs, fmt):
    return f"{fmt.format(min(xs))}-{fmt.format(max(xs))} (median {fmt.format(statistics.median(xs))})"
for c, rs in sorted(levels.items()):
    pairs = [r for r in rs.values() if "product" in r and "reference" in r]
    col = lambda who, k: [r[who][k] for r in pairs]
    ratio = [r["product"]["cpu"] / r["reference"]["cpu"] for r in pairs]
    rps = [r["product"]["rps"] / r["reference"]["rps"] for r in pairs]
    n = len(pairs)
    print(f"c={c}, {n} runs")
    print(f"  CPU s/1000 req: product {rng(col('product','cpu'), '{:.3f}')}, reference {rng(col('reference','cpu'), '{:.3f}')}")
    print(f"  CPU ratio {rng(ratio, '{:.2f}')}, <= 1.1x in {sum(x <= 1.1 for x in ratio)} of {n}")
    print(f"  req/s: product {rng(col('product','rps'), '{:.0f}')}, reference {rng(col('reference','rps'), '{:.0f}')}; product >= reference in {sum(x >= 1 for x in rps)} of {n}")
    for k, name in (("ttft", "TTFT error p99 (ms)"), ("itl", "ITL gap |error| p99 (ms)")):
        p, q = col("product", k), col("reference", k)
        print(f"  {name}: product {rng(p, '{:.3f}')}, reference {rng(q, '{:.3f}')}; product <= reference in {sum(a <= b for a, b in zip(p, q))} of {n}")
    print(f"  allocations/request: product {sorted(set(col('product','allocs')))}, reference {sorted(set(col('reference','allocs')))}; product send lag p50/p99 (ms): {sorted(set(col('product','lag')))}")
PY
echo "runs kept in $out"
