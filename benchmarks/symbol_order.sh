#!/usr/bin/env bash
# Regenerates link/hot-symbols.txt, the release binary's symbol-ordering file
# (docs/running.md "Start-up and the link layout"): builds the release binary, profiles
# three workloads under callgrind, and orders every function they executed, hottest first.
# - start-up: benchmarks/client_cost/one_request.toml against a mock answering at once;
# - a stream's steady state: 64 requests at c = 16 against a paced mock (50, 10 ms);
# - the README's main job: `run suites/agentic.toml --capture-timeline` on the simulator.
# The mock is benchmarks/client_cost_tools.rs `serve`, on loopback. Needs valgrind.
# Run it after a dependency update or a large change, then
# `python3 benchmarks/link_layout.py target/release/inferscope-bench` to see the coverage.
#
# Usage: benchmarks/symbol_order.sh [OUT_FILE]   (default link/hot-symbols.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-link/hot-symbols.txt}
command -v valgrind >/dev/null || { echo "symbol_order.sh: valgrind is needed" >&2; exit 2; }
# The mock first: `cargo bench` rebuilds target/release/inferscope-bench in the bench
# profile, whose symbol names differ from the release profile's.
tools=$(cargo bench --bench client_cost_tools --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p')
cargo build --release --bin inferscope-bench >&2
work=$(mktemp -d)
bin=$work/inferscope-bench
cp target/release/inferscope-bench "$bin"
mocks=()
cleanup() {
    for pid in "${mocks[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

mock() { # PORT TTFT ITL TOKENS
    "$tools" serve "$1" 1024 "$2" "$3" "$4" >"$work/mock-$1.log" &
    mocks+=($!)
    for _ in $(seq 100); do grep -q listening "$work/mock-$1.log" && return; sleep 0.05; done
    echo "symbol_order.sh: the mock on port $1 did not start" >&2
    exit 1
}
mock 18620 0 0 8
mock 18621 50 10 64
cat >"$work/paced.toml" <<'TOML'
name = "paced"
[[jobs]]
name = "c"
kind = "context"
sizes = [16]
max_tokens = 64
concurrency = 16
count = 64
TOML

profile() { # NAME ARGS...
    local name=$1
    shift
    valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/$name.callgrind" \
        "$bin" "$@" >/dev/null 2>"$work/$name.log" || {
        echo "symbol_order.sh: the $name workload failed:" >&2
        tail -5 "$work/$name.log" >&2
        exit 1
    }
}
profile start run benchmarks/client_cost/one_request.toml \
    --endpoint http://127.0.0.1:18620/v1 --model m --out "$work/run-start"
profile paced run "$work/paced.toml" --endpoint http://127.0.0.1:18621/v1 --model m \
    --out "$work/run-paced"
profile main run suites/agentic.toml --capture-timeline --out "$work/run-main"
python3 benchmarks/symbol_order.py "$bin" "$out" "$work"/*.callgrind
