#!/usr/bin/env python3
"""The side-by-side table of benchmarks/vllm_side_by_side.sh: per concurrency and figure,
each tool's median over its runs and the min–max range, from vLLM's result JSON
(vllm-cC-rR.json: p50_/p99_ ttft, itl, e2el in ms, output_throughput) and the product's
report.json (ours-cC-rR/: the job's stats, ttft_ms, itl_ms, e2e_ms, output_tokens_per_s).

Usage: vllm_side_by_side.py OUT_DIR REPS
"""

import json
import statistics
import sys

FIGS = [("TTFT p50 ms", "ttft", "p50"), ("TTFT p99 ms", "ttft", "p99"),
        ("ITL p50 ms", "itl", "p50"), ("ITL p99 ms", "itl", "p99"),
        ("E2E p50 ms", "e2e", "p50"), ("E2E p99 ms", "e2e", "p99"),
        ("output tok/s", "tput", None), ("prompt tokens / request", "prompt", None),
        ("client CPU s (user + sys)", "cpu", None)]


def cpu_s(path):
    u, s, _ = open(path).read().split()[-3:]
    return float(u) + float(s)


def vllm_fig(r, fig, q):
    if fig == "cpu":
        return cpu_s(r["_time"])
    if fig == "tput":
        return r["output_throughput"]
    if fig == "prompt":
        return r["total_input_tokens"] / r["completed"]
    name = {"ttft": "ttft", "itl": "itl", "e2e": "e2el"}[fig]
    return r[f"{q}_{name}_ms"]


def ours_fig(j, fig, q):
    if fig == "cpu":
        return cpu_s(j["_time"])
    s = j["stats"]
    if fig == "tput":
        return s["output_tokens_per_s"]["value"]
    if fig == "prompt":
        lines = [json.loads(l) for l in open(j["_requests"]) if l.strip()]
        k = lines[0]["jobs"].index(j["id"])
        ps = [r["pt"] for r in lines[1:] if r.get("j") == k and not r.get("wu") and r.get("pt")]
        return sum(ps) / len(ps) if ps else float("nan")
    return s[{"ttft": "ttft_ms", "itl": "itl_ms", "e2e": "e2e_ms"}[fig]][q]


def cell(vals):
    m = statistics.median(vals)
    return f"{m:.1f} ({min(vals):.1f}–{max(vals):.1f})"


def main(out, reps):
    print("| c | figure | vllm bench serve: median (range) | inferscope-bench: median (range) |")
    print("|---|---|---|---|")
    for c in (1, 4):
        vl, ou = [], []
        for r in range(1, reps + 1):
            v = json.load(open(f"{out}/vllm-c{c}-r{r}.json"))
            v["_time"] = f"{out}/vllm-c{c}-r{r}.time"
            vl.append(v)
            rep = json.load(open(f"{out}/ours-c{c}-r{r}/report.json"))
            j = next(j for j in rep["jobs"] if j["id"] == f"sbs::c{c}")
            j["_requests"] = f"{out}/ours-c{c}-r{r}/requests.jsonl"
            j["_time"] = f"{out}/ours-c{c}-r{r}.time"
            ou.append(j)
        for label, fig, q in FIGS:
            print(f"| {c} | {label} | {cell([vllm_fig(r, fig, q) for r in vl])} | "
                  f"{cell([ours_fig(j, fig, q) for j in ou])} |")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
