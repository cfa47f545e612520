#!/usr/bin/env python3
"""Checks that a release binary carries the link layout of build.rs (docs/running.md
"Start-up and the link layout") and says how much of link/hot-symbols.txt it still covers.

    link_layout.py BIN [ORDER_FILE]

- coverage: how many of the ordering file's functions BIN defines (the rest were renamed or
  removed since the file was generated: regenerate with benchmarks/symbol_order.sh);
- placement: the functions BIN defines sit at the start of `.text`, in the file's order;
- RELR: BIN has a `.relr.dyn` section (when this machine's glibc is 2.36 or later).
Exit 0 when all hold with coverage of at least 90 %, else 1 (3 % of the names stale
already cost a one-request run 1.1 MiB of RSS). Needs binutils (nm, readelf).
"""

import re
import subprocess
import sys

BIN = sys.argv[1]
ORDER = sys.argv[2] if len(sys.argv) > 2 else "link/hot-symbols.txt"
MIN_COVERAGE = 0.9


def run(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


order = [s.strip() for s in open(ORDER) if s.strip() and not s.startswith("#")]
sections = run("readelf", "-SW", BIN)
text = re.search(r"\s\.text\s+PROGBITS\s+([0-9a-f]+)", sections)
text_start = int(text.group(1), 16)
defined = {}
for line in run("nm", "-S", "--defined-only", BIN).splitlines():
    parts = line.split()
    if len(parts) == 4 and parts[2] in "tT":
        defined.setdefault(parts[3], int(parts[0], 16))
placed = [defined[s] for s in order if s in defined]
coverage = len(placed) / len(order) if order else 0.0
in_order = all(a <= b for a, b in zip(placed, placed[1:]))
at_start = bool(placed) and placed[0] - text_start < 4096
glibc = re.search(r"(\d+)\.(\d+)", run("getconf", "GNU_LIBC_VERSION"))
relr_expected = glibc is not None and (int(glibc.group(1)), int(glibc.group(2))) >= (2, 36)
relr = ".relr.dyn" in sections
span = (max(placed) - text_start) / 1e6 if placed else 0.0
print(
    f"{BIN}: {len(placed)} of {len(order)} ordered functions defined ({coverage:.0%}), "
    f"{'in the file order' if in_order else 'NOT in the file order'}, "
    f"{'from the start of .text' if at_start else 'NOT at the start of .text'} "
    f"(the last at +{span:.2f} MB); .relr.dyn {'present' if relr else 'absent'}"
    f"{'' if relr_expected else ' (not expected: glibc before 2.36)'}"
)
ok = coverage >= MIN_COVERAGE and in_order and at_start and (relr or not relr_expected)
if not ok:
    print(
        "link layout not applied or stale: see docs/running.md \"Start-up and the link "
        "layout\" (regenerate with benchmarks/symbol_order.sh)",
        file=sys.stderr,
    )
sys.exit(0 if ok else 1)
