#!/usr/bin/env bash
# Issue 33: the product against the bare reference client at the edges — paced streams
# (CPU per request at c = 1, 16, 128), memory per in-flight stream (c = 1024), the connect
# storm (c = 1024 against a listen backlog of 128) and start-up (a one-request run) — in
# alternation, each client its own process against one scripted mock
# (benchmarks/client_cost_tools.rs). Method: benchmarks/client_cost_edges.py's docstring;
# figures: BENCHMARKS.md "Client cost at the edges" (`run` on its default one runtime worker). Timing fidelity (TTFT and per-gap ITL error p99)
# needs the server's per-token truth and stays with the in-process bench:
# `FIDELITY_CONCURRENCY=1,16,128 benchmarks/client_cost.sh BIN RUNS` with
# FIDELITY_TTFT_MS=50 FIDELITY_ITL_MS=10.
#
# Usage: benchmarks/client_cost_edges.sh [RUNS] [OUT_DIR]   (builds both in release first)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
out=${2:-$(mktemp -d)}
# The mock first: `cargo bench` rebuilds target/release/inferscope-bench in the bench profile,
# whose symbol names the release link layout (link/hot-symbols.txt) does not order.
tools=$(cargo bench --bench client_cost_tools --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p')
cargo build --release --bin inferscope-bench >&2
ulimit -n 65536 2>/dev/null || true
exec python3 benchmarks/client_cost_edges.py target/release/inferscope-bench "$tools" "$runs" "$out"
