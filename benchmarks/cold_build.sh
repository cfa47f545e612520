#!/usr/bin/env bash
# Issue 14: cold build and test times of one commit. Exports COMMIT with `git archive`
# into DIR (fresh, so no target dir exists), then times, each with fresh target dirs:
# `cargo build --release`, `cargo nextest run --no-run` (the test build), and
# `cargo nextest run` (the tests alone, after that build). Prints one line per step:
# wall, user and sys seconds (/usr/bin/time), and the 1-minute load average around it.
#   bash benchmarks/cold_build.sh COMMIT DIR
set -euo pipefail
commit=${1:?commit}
dir=${2:?export directory (created; must not exist)}
[ -e "$dir" ] && { echo "error: $dir exists" >&2; exit 2; }
mkdir -p "$dir"
git archive "$commit" | tar -x -C "$dir"
cd "$dir"
step() {
  local label=$1; shift
  local before; before=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -f "$label: wall %e s, user %U s, sys %S s" "$@" >>"$dir/steps.log" 2>"$dir/time.log" || {
    tail -20 "$dir/time.log" >&2; exit 1; }
  echo "$(tail -1 "$dir/time.log") (load $before → $(cut -d' ' -f1 /proc/loadavg))"
}
CARGO_TARGET_DIR="$dir/target-release" step "cargo build --release" cargo build --release
CARGO_TARGET_DIR="$dir/target-debug" step "cargo nextest run --no-run" cargo nextest run --no-run
CARGO_TARGET_DIR="$dir/target-debug" step "cargo nextest run (tests only)" cargo nextest run
