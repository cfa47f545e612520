#!/usr/bin/env bash
# Issue 14: incremental `cargo build` (debug) after a small change to one file, in the
# current checkout, whose target dir must already be warm from a build of this tree.
# For each FILE: `touch`, then a comment line appended, then a `pub fn` appended (the
# crate's interface changes), each followed by one timed `cargo build -q`; the file is
# restored with `git checkout` after each edit. Prints wall, user and sys seconds
# (/usr/bin/time) and the load average before each build.
#   bash benchmarks/incremental_build.sh src/commands/report.rs crates/driver/src/report.rs
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 FILE..." >&2; exit 2; }
cargo build -q
build() {
  local load; load=$(cut -d' ' -f1-3 /proc/loadavg)
  local t; t=$({ /usr/bin/time -f "wall %e s, user %U s, sys %S s" cargo build -q >/dev/null 2>/dev/null; } 2>&1 | tail -1)
  echo "$1 $2: $t (load $load)"
}
for f in "$@"; do
  git diff --quiet -- "$f" || { echo "error: $f has uncommitted changes" >&2; exit 2; }
  touch "$f"; build touch "$f"
  echo "// incremental probe" >>"$f"; build comment "$f"; git checkout -q -- "$f"
  echo "pub fn _incremental_probe() -> u32 { 1 }" >>"$f"; build "pub fn" "$f"; git checkout -q -- "$f"
done
cargo build -q
