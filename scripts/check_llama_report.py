#!/usr/bin/env python3
"""Assert the prefix-cache curve of a real-engine run from its report.json (issue 3).

Usage:
    python3 scripts/check_llama_report.py RUN_DIR/report.json [--job llama-cpp::trajectory]
                                          [--trajectory 0] [--min-cached-fraction 0.8]
    python3 scripts/check_llama_report.py --self-test

Reads the report fields listed at the end of the suite schema (report.json, schema
``inferscope-bench.report/v3``): ``jobs[].id``, ``jobs[].trajectories[].index`` and, per step,
``step_id``, ``kind``, ``status``, ``prompt_tokens``, ``cached_tokens``, ``ttft_ms``.

In the chosen job and trajectory, over the steps of kind ``llm_call`` in step order:
  1. there are at least two LLM steps, and every one has status ``completed``;
  2. from the 2nd LLM step on, ``cached_tokens`` is reported (not null) and is at least
     ``min_cached_fraction`` (default 80 %) of the previous LLM step's ``prompt_tokens``,
     counted in whole blocks where the report has the engine's block size
     (``telemetry.metrics.block_size``, vLLM); and no step's ``cached_tokens`` exceeds
     ``floor((prompt - 1) / B) * B`` (scripts/cache_blocks.py; without a block size, the
     prompt);
  3. every LLM step has a ``ttft_ms``; every warm step's (2nd on) TTFT, and their mean, is
     below the first (cold) step's TTFT.

Prints the per-step table (prompt tokens, cached tokens, cached share of the previous prompt,
TTFT) and then PASS, or one ``FAIL:`` line per failed assertion. Exit status: 0 pass,
1 an assertion failed (or the job/trajectory is missing), 2 the file cannot be read or parsed.

``--self-test`` runs the pure checker on two inline fixture reports, one that must pass and
one that must fail with specific messages; exit 0 when both behave, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cache_blocks import block_size, max_cached, reusable
from cache_blocks import self_test as cache_blocks_self_test

DEFAULT_JOB = "llama-cpp::trajectory"


def _fmt(value: Any, spec: str = "") -> str:
    """Format a possibly-null value for the table ('null' when missing)."""
    if value is None:
        return "null"
    return format(value, spec)


def check_report(
    report: dict[str, Any],
    job_id: str = DEFAULT_JOB,
    trajectory: int = 0,
    min_cached_fraction: float = 0.8,
) -> tuple[list[str], list[str]]:
    """Check one trajectory of ``report``; pure, no I/O.

    Returns ``(table_lines, failures)``: the per-step table as text lines, and one message
    per failed assertion (empty when everything holds).
    """
    failures: list[str] = []
    jobs = report.get("jobs")
    if not isinstance(jobs, list):
        return [], ["report has no `jobs` list"]
    job = next((j for j in jobs if isinstance(j, dict) and j.get("id") == job_id), None)
    if job is None:
        ids = [j.get("id") for j in jobs if isinstance(j, dict)]
        return [], [f"job {job_id!r} not in report (jobs: {ids})"]
    trajs = job.get("trajectories") or []
    traj = next((t for t in trajs if isinstance(t, dict) and t.get("index") == trajectory), None)
    if traj is None:
        return [], [f"job {job_id!r} has no trajectory with index {trajectory}"]
    steps = [s for s in (traj.get("steps") or []) if isinstance(s, dict)]
    llm = sorted((s for s in steps if s.get("kind") == "llm_call"),
                 key=lambda s: (s.get("step_id") is None, s.get("step_id")))

    table = [f"{job_id} trajectory {trajectory}: {len(llm)} LLM steps of {len(steps)} steps",
             f"{'llm#':>4} {'step_id':>7} {'status':>10} {'prompt':>7} {'cached':>7} "
             f"{'cached/prev':>11} {'ttft_ms':>9}"]
    prev_prompt = None
    for n, s in enumerate(llm, start=1):
        cached, prompt = s.get("cached_tokens"), s.get("prompt_tokens")
        share = (f"{100.0 * cached / prev_prompt:.1f}%"
                 if n > 1 and isinstance(cached, int) and isinstance(prev_prompt, int)
                 and prev_prompt > 0 else "-")
        table.append(f"{n:>4} {_fmt(s.get('step_id')):>7} {_fmt(s.get('status')):>10} "
                     f"{_fmt(prompt):>7} {_fmt(cached):>7} {share:>11} "
                     f"{_fmt(s.get('ttft_ms'), '.1f'):>9}")
        prev_prompt = prompt

    if len(llm) < 2:
        failures.append(f"need at least 2 LLM steps to compare cold and warm, found {len(llm)}")
    for n, s in enumerate(llm, start=1):
        if s.get("status") != "completed":
            failures.append(f"LLM step {n} (step_id {s.get('step_id')}) status is "
                            f"{s.get('status')!r}, not 'completed' "
                            f"(failure_code {s.get('failure_code')!r})")
    block = block_size(report)
    for n, s in enumerate(llm, start=1):
        cached, prompt = s.get("cached_tokens"), s.get("prompt_tokens")
        if isinstance(cached, int) and isinstance(prompt, int) \
                and cached > max_cached(prompt, block):
            failures.append(f"LLM step {n}: cached_tokens {cached} > "
                            f"{max_cached(prompt, block)}, the most a {prompt}-token prompt "
                            f"can reuse (block size {block})")
    for n in range(2, len(llm) + 1):
        s, prev = llm[n - 1], llm[n - 2]
        cached, prev_prompt = s.get("cached_tokens"), prev.get("prompt_tokens")
        if cached is None:
            failures.append(f"LLM step {n}: cached_tokens is null (the server reported no "
                            f"prefix-cache figure)")
            continue
        if not isinstance(prev_prompt, int) or prev_prompt <= 0:
            failures.append(f"LLM step {n - 1}: prompt_tokens is {prev_prompt!r}, cannot "
                            f"compare step {n}'s cached tokens against it")
            continue
        prompt = s.get("prompt_tokens")
        can = reusable(prev_prompt, prompt if isinstance(prompt, int) else prev_prompt, block)
        if cached < min_cached_fraction * can:
            blocks = f", {can} in whole blocks of {block}" if block is not None else ""
            failures.append(f"LLM step {n}: cached_tokens {cached} < "
                            f"{min_cached_fraction:.0%} of LLM step {n - 1}'s prompt_tokens "
                            f"{prev_prompt}{blocks} (need >= {min_cached_fraction * can:.1f})")

    ttfts = [s.get("ttft_ms") for s in llm]
    missing = [n for n, t in enumerate(ttfts, start=1) if not isinstance(t, (int, float))]
    if missing:
        failures.append(f"ttft_ms is null on LLM steps {missing}")
    elif len(llm) >= 2:
        cold, warm = float(ttfts[0]), [float(t) for t in ttfts[1:]]
        mean_warm = sum(warm) / len(warm)
        table.append(f"cold TTFT {cold:.1f} ms; warm TTFT mean {mean_warm:.1f} ms, max "
                     f"{max(warm):.1f} ms; cold/mean-warm {cold / mean_warm:.1f}x"
                     if mean_warm > 0 else f"cold TTFT {cold:.1f} ms; warm mean 0 ms")
        if not mean_warm < cold:
            failures.append(f"mean warm TTFT {mean_warm:.1f} ms is not below the cold first "
                            f"step's {cold:.1f} ms")
        for n, t in enumerate(warm, start=2):
            if not t < cold:
                failures.append(f"LLM step {n}: warm TTFT {t:.1f} ms is not below the cold "
                                f"first step's {cold:.1f} ms")
    return table, failures


def _llm(step_id: int, prompt: int | None, cached: int | None, ttft: float | None,
         status: str = "completed") -> dict[str, Any]:
    return {"step_id": step_id, "kind": "llm_call", "name": "chat", "status": status,
            "failure_code": None if status == "completed" else "http_status",
            "prompt_tokens": prompt, "cached_tokens": cached, "completion_tokens": 8,
            "ttft_ms": ttft}


def _tool(step_id: int) -> dict[str, Any]:
    return {"step_id": step_id, "kind": "tool", "name": "read_file", "status": "completed",
            "prompt_tokens": None, "cached_tokens": None, "completion_tokens": None,
            "ttft_ms": None}


def _fixture(steps: list[dict[str, Any]]) -> dict[str, Any]:
    return {"schema": "inferscope-bench.report/v3",
            "jobs": [{"id": "llama-cpp::context", "kind": "context", "status": "pass"},
                     {"id": DEFAULT_JOB, "kind": "agentic", "status": "pass",
                      "trajectories": [{"index": 0, "stop_reason": "final_answer",
                                        "steps": steps}]}]}


def self_test() -> int:
    """Run the checker on inline fixtures; return 0 when it behaves, 1 otherwise."""
    passing = _fixture([_llm(1, 1500, 0, 300.0), _tool(2), _llm(3, 1600, 1499, 20.0),
                        _tool(4), _llm(5, 1700, 1599, 25.0), _tool(6),
                        _llm(7, 1800, 1699, 22.0)])
    failing = _fixture([_llm(1, 1500, 0, 300.0), _tool(2),
                        _llm(3, 1600, None, 20.0),          # cached not reported
                        _tool(4), _llm(5, 1700, 1000, 25.0),  # 1000 < 0.8 * 1600
                        _tool(6), _llm(7, 1800, 1699, 320.0),  # warm slower than cold
                        _llm(8, 1810, 1799, 10.0, status="failed")])
    ok = True
    _, fails = check_report(passing)
    if fails:
        print(f"self-test: passing fixture failed: {fails}")
        ok = False
    _, fails = check_report(failing)
    expected = ["LLM step 2: cached_tokens is null", "LLM step 3: cached_tokens 1000 < 80%",
                "LLM step 4: warm TTFT 320.0 ms is not below", "LLM step 5 (step_id 8) status"]
    for want in expected:
        if not any(f.startswith(want) for f in fails):
            print(f"self-test: failing fixture did not report {want!r}; got {fails}")
            ok = False
    unexpected = [f for f in fails if not any(f.startswith(w) for w in expected)]
    if unexpected:
        print(f"self-test: unexpected failures on the failing fixture: {unexpected}")
        ok = False
    # vLLM reuses whole blocks: with block size 128, 128 cached tokens are every whole block
    # of the 200-token previous prompt (64 % of it); more than floor((prompt - 1) / B) * B is
    # impossible.
    blocks = _fixture([_llm(1, 200, 0, 300.0), _llm(2, 300, 128, 20.0),
                       _llm(3, 400, 256, 25.0)])
    blocks["telemetry"] = {"metrics": {"block_size": 128}}
    _, fails = check_report(blocks)
    if fails:
        print(f"self-test: block-granular fixture failed: {fails}")
        ok = False
    del blocks["telemetry"]
    _, fails = check_report(blocks)
    if not any(f.startswith("LLM step 2: cached_tokens 128 < 80%") for f in fails):
        print(f"self-test: without a block size 128 < 80% of 200 was not reported: {fails}")
        ok = False
    blocks["telemetry"] = {"metrics": {"block_size": 128}}
    blocks["jobs"][1]["trajectories"][0]["steps"][2]["cached_tokens"] = 390
    _, fails = check_report(blocks)
    if not any(f.startswith("LLM step 3: cached_tokens 390 > 384") for f in fails):
        print(f"self-test: cached beyond the whole-block bound was not reported: {fails}")
        ok = False
    bad = cache_blocks_self_test()
    if bad:
        print(f"self-test: cache_blocks: {bad}")
        ok = False
    _, fails = check_report(passing, job_id="llama-cpp::missing")
    if not (fails and "not in report" in fails[0]):
        print(f"self-test: a missing job was not reported: {fails}")
        ok = False
    print("self-test: ok" if ok else "self-test: FAILED")
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("report", nargs="?", help="path to report.json")
    p.add_argument("--job", default=DEFAULT_JOB, help=f"job id (default {DEFAULT_JOB})")
    p.add_argument("--trajectory", type=int, default=0, help="trajectory index (default 0)")
    p.add_argument("--min-cached-fraction", type=float, default=0.8,
                   help="cached tokens of step n / prompt tokens of step n-1 (default 0.8)")
    p.add_argument("--self-test", action="store_true", help="run the inline fixture tests")
    args = p.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.report:
        p.error("a report.json path is required (or --self-test)")
    try:
        with open(args.report, encoding="utf-8") as f:
            report = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        print(f"check_llama_report: cannot read {args.report}: {e}", file=sys.stderr)
        return 2
    if not isinstance(report, dict):
        print(f"check_llama_report: {args.report} is not a JSON object", file=sys.stderr)
        return 2
    table, failures = check_report(report, args.job, args.trajectory, args.min_cached_fraction)
    for line in table:
        print(line)
    for f in failures:
        print(f"FAIL: {f}")
    if failures:
        print(f"check_llama_report: {len(failures)} assertion(s) failed in {args.report}")
        return 1
    print(f"PASS: every LLM step completed; warm steps cached >= "
          f"{args.min_cached_fraction:.0%} of the previous prompt and were faster than the "
          f"cold first step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
