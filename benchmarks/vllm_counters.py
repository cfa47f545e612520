#!/usr/bin/env python3
"""Per-step agreement of vLLM's /metrics counter deltas with the step's own usage, by scrape
period (issue 26 item 3). Reads the report.json of runs of suites/vllm.toml's sequential jobs
(made by benchmarks/vllm_counters.sh at --metrics-period-ms 50, 100 and 200) and prints, per
period, how many LLM steps had each counter delta equal to usage, split by the step's tail
(end − first token) in scrape periods.

Usage: vllm_counters.py PERIOD_MS=RUN_DIR[,RUN_DIR...] [PERIOD_MS=... ...]
"""

import json
import sys


def steps(report):
    for job in report["jobs"]:
        if job.get("load"):
            continue
        for t in job.get("trajectories") or []:
            for s in t["steps"]:
                if s["kind"] != "llm_call" or s.get("warmup"):
                    continue
                a = s.get("attribution") or {}
                u = a.get("usage") or {}
                if s.get("ttft_ms") is None or u.get("prompt_tokens") is None:
                    continue
                yield {
                    "tail_ms": s["duration_ms"] - s["ttft_ms"],
                    "prompt": (a.get("prompt_tokens_delta"), u.get("prompt_tokens")),
                    "hits": (a.get("cache_hits_delta"), u.get("cached_tokens")),
                    "gen": (a.get("generation_tokens_delta"), u.get("completion_tokens")),
                }


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    print("| scrape period | tail (end − first token) | LLM steps | prompt Δ = usage | cache-hit Δ = usage | generation Δ = usage |")
    print("|---|---|---|---|---|---|")
    for arg in argv:
        period, run_dirs = arg.split("=", 1)
        p = float(period)
        rows = []
        for run_dir in run_dirs.split(","):
            with open(f"{run_dir}/report.json") as f:
                rows.extend(steps(json.load(f)))
        buckets = [
            (f"< 1 period (< {p:.0f} ms)", lambda t: t < p),
            (f"1–2 periods", lambda t: p <= t < 2 * p),
            (f"≥ 2 periods (≥ {2 * p:.0f} ms)", lambda t: t >= 2 * p),
            ("all", lambda t: True),
        ]
        for name, keep in buckets:
            sel = [r for r in rows if keep(r["tail_ms"])]
            if not sel:
                print(f"| {p:.0f} ms | {name} | 0 | — | — | — |")
                continue

            def agree(key):
                n = sum(1 for r in sel if r[key][0] == r[key][1])
                return f"{n}/{len(sel)}"

            print(f"| {p:.0f} ms | {name} | {len(sel)} | {agree('prompt')} | {agree('hits')} | {agree('gen')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
