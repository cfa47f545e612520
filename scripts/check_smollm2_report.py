#!/usr/bin/env python3
"""Assert the shape of a SmolLM2 real-model run from its report.json (issue 16).

Usage:
    python3 scripts/check_smollm2_report.py RUN_DIR/report.json [--exit-status N] [--suite NAME]
    python3 scripts/check_smollm2_report.py --self-test

``--suite vllm`` checks the same jobs of ``suites/vllm.toml`` (real vLLM, issue 26).

Reads report.json (schema ``inferscope-bench.report/v3``, records from ``requests.jsonl``) of ``suites/smollm2.toml``:
``jobs[].id``, ``status``, ``grading[]`` (``check``, ``passed``, ``detail``),
``requests.jsonl``'s ``tc`` (tool calls) and, per step of ``trajectories[]``, ``kind``, ``name``,
``status``, ``prompt_tokens``, ``cached_tokens``, ``completion_tokens`` (server-reported
only), ``completion_tokens_estimate`` (set only when the server sent no usage),
``ttft_ms``.

Assertions (shapes, never absolute times):
  1. usage: every LLM step of every job completed and carries server-reported usage
     (prompt and completion tokens not null, no ``completion_tokens_estimate``);
  2. prefix cache (``smollm2::trajectory``): the first LLM step is cold (cached < 20 % of
     its prompt); every later step's cached tokens cover the previous step's whole prompt
     (at most 2 tokens short: a tokenizer may merge across the join), in whole blocks where
     the report has the engine's block size (``telemetry.metrics.block_size``, vLLM); and
     no LLM step of any job has more cached tokens than ``floor((prompt - 1) / B) * B``
     (scripts/cache_blocks.py; without a block size, its prompt);
  3. TTFT vs context (``smollm2::context``): every step has a TTFT; ordered by uncached
     prompt tokens (prompt − cached), the rank correlation with TTFT is at least 0.8, the
     largest prompt's TTFT is above the smallest's, and at least 3x it (its uncached tokens
     are ~15x);
  4. tool call (``smollm2::tool_call``): a PASS needs a real call: an LLM step whose request
     recorded a tool call from the server (``tool_call_count`` ≥ 1), followed by a completed
     ``get_weather`` tool step (its arguments passed the schema), and every grading check
     passed. A FAIL is accepted only as the honest outcome "no valid tool call": the
     ``tool_called`` check is the one that failed, with its reason. Anything else fails.

``--exit-status N`` is inferscope-bench's exit status for the run: 0 must go with every job
passing, 100 with exactly the tool-call job failing as in 4.

Prints the per-step tables and PASS, or one ``FAIL:`` line per failed assertion. Exit
status: 0 pass, 1 an assertion failed, 2 the file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from cache_blocks import block_size, max_cached, reusable
from cache_blocks import self_test as cache_blocks_self_test

TRAJ = "smollm2::trajectory"
CTX = "smollm2::context"
TOOL = "smollm2::tool_call"


def _fmt(v: Any, spec: str = "") -> str:
    return "null" if v is None else format(v, spec)


def _job(report: dict[str, Any], job_id: str) -> dict[str, Any] | None:
    return next((j for j in report.get("jobs") or [] if j.get("id") == job_id), None)


def _steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for t in job.get("trajectories") or []:
        out.extend(s for s in t.get("steps") or [] if isinstance(s, dict))
    return out


def _llm(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in _steps(job) if s.get("kind") == "llm_call"]


def _ranks(xs: list[float]) -> list[float]:
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    r = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0
        i = j + 1
    return r


def spearman(a: list[float], b: list[float]) -> float:
    ra, rb = _ranks(a), _ranks(b)
    n = len(a)
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    va = sum((x - ma) ** 2 for x in ra) ** 0.5
    vb = sum((y - mb) ** 2 for y in rb) ** 0.5
    return cov / (va * vb) if va > 0 and vb > 0 else 0.0


def check_report(report: dict[str, Any], exit_status: int | None = None) -> tuple[list[str], list[str]]:
    """Pure check of ``report``: (table lines, failure messages)."""
    table: list[str] = []
    fails: list[str] = []
    jobs = {j: _job(report, j) for j in (TRAJ, CTX, TOOL)}
    for jid, job in jobs.items():
        if job is None:
            fails.append(f"job {jid!r} not in report")
    if fails:
        return table, fails

    # 1. server-reported usage on every LLM step, cached tokens within the block bound.
    block = block_size(report)
    for jid, job in jobs.items():
        for s in _llm(job):
            sid = s.get("step_id")
            if s.get("status") != "completed":
                fails.append(f"{jid} step {sid}: status {s.get('status')!r} "
                             f"(failure_code {s.get('failure_code')!r})")
            if s.get("completion_tokens_estimate") is not None:
                fails.append(f"{jid} step {sid}: completion tokens estimated "
                             f"({s.get('completion_tokens_estimate')!r}), "
                             f"not server-reported usage")
            for k in ("prompt_tokens", "completion_tokens"):
                if not isinstance(s.get(k), int):
                    fails.append(f"{jid} step {sid}: {k} is {s.get(k)!r}")
            p, c = s.get("prompt_tokens"), s.get("cached_tokens")
            if isinstance(p, int) and isinstance(c, int) and c > max_cached(p, block):
                fails.append(f"{jid} step {sid}: cached_tokens {c} > {max_cached(p, block)}, "
                             f"the most a {p}-token prompt can reuse (block size {block})")

    # 2. the prefix-cache curve.
    llm = _llm(jobs[TRAJ])
    table.append(f"{TRAJ}: {len(llm)} LLM steps")
    table.append(f"{'llm#':>4} {'prompt':>7} {'cached':>7} {'uncached':>8} "
                 f"{'cached/prev':>11} {'ttft_ms':>9}")
    prev = None
    for n, s in enumerate(llm, start=1):
        p, c = s.get("prompt_tokens"), s.get("cached_tokens")
        unc = p - c if isinstance(p, int) and isinstance(c, int) else None
        share = (f"{100.0 * c / prev:.1f}%" if n > 1 and isinstance(c, int)
                 and isinstance(prev, int) and prev > 0 else "-")
        table.append(f"{n:>4} {_fmt(p):>7} {_fmt(c):>7} {_fmt(unc):>8} {share:>11} "
                     f"{_fmt(s.get('ttft_ms'), '.1f'):>9}")
        prev = p
    if len(llm) < 3:
        fails.append(f"{TRAJ}: need at least 3 LLM steps, found {len(llm)}")
    else:
        p0, c0 = llm[0].get("prompt_tokens"), llm[0].get("cached_tokens")
        if not (isinstance(p0, int) and isinstance(c0, int) and c0 < 0.2 * p0):
            fails.append(f"{TRAJ}: the first step is not cold (prompt {p0!r}, cached {c0!r})")
        for n in range(1, len(llm)):
            c, prevp = llm[n].get("cached_tokens"), llm[n - 1].get("prompt_tokens")
            p = llm[n].get("prompt_tokens")
            if c is None:
                fails.append(f"{TRAJ} LLM step {n + 1}: cached_tokens is null")
            elif isinstance(prevp, int) and isinstance(p, int) \
                    and c < reusable(prevp - 2, p, block):
                blocks = "" if block is None else f" ({reusable(prevp - 2, p, block)} in " \
                    f"whole blocks of {block})"
                fails.append(f"{TRAJ} LLM step {n + 1}: cached_tokens {c} do not cover the "
                             f"previous prompt of {prevp} tokens{blocks}")

    # 3. TTFT against uncached prompt tokens.
    ctx = _llm(jobs[CTX])
    pts = []
    table.append(f"{CTX}: TTFT against uncached prompt tokens")
    table.append(f"{'prompt':>7} {'cached':>7} {'uncached':>8} {'ttft_ms':>9}")
    for s in ctx:
        p, c, t = s.get("prompt_tokens"), s.get("cached_tokens"), s.get("ttft_ms")
        table.append(f"{_fmt(p):>7} {_fmt(c):>7} "
                     f"{_fmt(p - (c or 0) if isinstance(p, int) else None):>8} {_fmt(t, '.1f'):>9}")
        if not isinstance(t, (int, float)) or not isinstance(p, int):
            fails.append(f"{CTX} step {s.get('step_id')}: ttft_ms {t!r}, prompt {p!r}")
        else:
            pts.append((p - (c or 0), float(t)))
    if len(pts) < 3:
        fails.append(f"{CTX}: need at least 3 sizes with a TTFT, found {len(pts)}")
    else:
        pts.sort()
        rho = spearman([float(u) for u, _ in pts], [t for _, t in pts])
        lo, hi = pts[0][1], pts[-1][1]
        table.append(f"rank correlation {rho:.2f}; TTFT {lo:.1f} ms at {pts[0][0]} uncached "
                     f"tokens, {hi:.1f} ms at {pts[-1][0]} ({hi / lo if lo > 0 else 0:.1f}x)")
        if rho < 0.8:
            fails.append(f"{CTX}: TTFT does not rise with uncached tokens (rank correlation "
                         f"{rho:.2f} < 0.8)")
        if not hi > lo or hi < 3 * lo:
            fails.append(f"{CTX}: the largest prompt's TTFT {hi:.1f} ms is not at least 3x "
                         f"the smallest's {lo:.1f} ms")

    # 4. the model-driven tool call: real, or an honest failure.
    tj = jobs[TOOL]
    steps = _steps(tj)
    reqs = tj.get("requests") or []
    calls = [r for r in reqs if (r.get("tool_call_count") or 0) >= 1]
    tool_steps = [s for s in steps if s.get("kind") == "tool"]
    valid = [s for s in tool_steps if s.get("name") == "get_weather"
             and s.get("status") == "completed"]
    grading = tj.get("grading") or []
    failed = [g for g in grading if isinstance(g, dict) and not g.get("passed")]
    table.append(f"{TOOL}: status {tj.get('status')}; requests with server tool calls "
                 f"{len(calls)}; tool steps {[(s.get('name'), s.get('status'), s.get('failure_code')) for s in tool_steps]}")
    if tj.get("status") == "pass":
        if not calls:
            fails.append(f"{TOOL}: PASS without any server-reported tool call")
        if not valid:
            fails.append(f"{TOOL}: PASS without a completed get_weather tool step")
        if failed:
            fails.append(f"{TOOL}: PASS with failed checks {failed}")
    elif tj.get("status") == "fail":
        # With several trajectories a check is prefixed `#i `.
        tc = [g for g in failed
              if str(g.get("check", "")).split(" ", 1)[-1].startswith("tool_called(")
              or str(g.get("check", "")).startswith("tool_called(")]
        if not tc:
            fails.append(f"{TOOL}: FAIL for another reason than the tool call: {failed}")
        else:
            table.append(f"{TOOL}: reported as a failure: {tc[0]['check']}: {tc[0].get('detail') or ''}")
    else:
        fails.append(f"{TOOL}: status {tj.get('status')!r}")

    if exit_status is not None:
        others_pass = all(jobs[j].get("status") == "pass" for j in (TRAJ, CTX))
        if exit_status == 0 and not (others_pass and tj.get("status") == "pass"):
            fails.append("exit status 0 but a job did not pass")
        elif exit_status == 100 and not (others_pass and tj.get("status") == "fail"):
            fails.append("exit status 100 is accepted only when the tool-call job alone failed")
        elif exit_status not in (0, 100):
            fails.append(f"inferscope-bench exited {exit_status}")
    return table, fails


def _llm_step(sid: int, prompt: int, cached: int, ttft: float | None) -> dict[str, Any]:
    return {"step_id": sid, "kind": "llm_call", "name": "chat", "status": "completed",
            "prompt_tokens": prompt, "cached_tokens": cached, "completion_tokens": 8,
            "completion_tokens_estimate": None, "ttft_ms": ttft}


def _fixture(tool_status: str = "pass", tool_calls: int = 1,
             cached: tuple[int, ...] = (4, 500, 600)) -> dict[str, Any]:
    prompts = (500, 600, 700)
    traj = [_llm_step(i + 1, p, c, 10.0) for i, (p, c) in enumerate(zip(prompts, cached))]
    ctx = [_llm_step(10 + i, p, 1, t) for i, (p, t) in
           enumerate([(180, 900.0), (340, 1700.0), (680, 3500.0), (1350, 7000.0), (2700, 15000.0)])]
    tool = [_llm_step(20, 238, 0, 1100.0),
            {"step_id": 21, "kind": "tool", "name": "get_weather", "status": "completed",
             "failure_code": None},
            _llm_step(22, 333, 255, 400.0)]
    grading = [{"check": "tool_called(get_weather, min 1, valid arguments)",
                "passed": tool_status == "pass",
                "detail": None if tool_status == "pass"
                else "`get_weather` called with valid arguments 0 time(s)"},
               {"check": "regex(final_answer)", "passed": True, "detail": None}]
    return {"jobs": [
        {"id": TOOL, "status": tool_status, "grading": grading,
         "requests": [{"tool_call_count": tool_calls}, {"tool_call_count": 0}],
         "trajectories": [{"steps": tool}]},
        {"id": TRAJ, "status": "pass", "grading": [], "requests": [], "trajectories": [{"steps": traj}]},
        {"id": CTX, "status": "pass", "grading": [], "requests": [], "trajectories": [{"steps": ctx}]},
    ]}


def self_test() -> int:
    ok = True

    def expect(name: str, report: dict[str, Any], want: list[str], status: int | None = None) -> None:
        nonlocal ok
        _, fails = check_report(report, status)
        if not want and fails:
            ok = False
            print(f"self-test {name}: unexpected failures {fails}")
        for w in want:
            if not any(w in f for f in fails):
                ok = False
                print(f"self-test {name}: no failure containing {w!r} in {fails}")

    expect("good", _fixture(), [], 0)
    expect("fabricated pass", _fixture(tool_calls=0), ["PASS without any server-reported tool call"])
    expect("honest failure", _fixture(tool_status="fail", tool_calls=0), [], 100)
    expect("failure but exit 0", _fixture(tool_status="fail", tool_calls=0), ["exit status 0"], 0)
    expect("cache gap", _fixture(cached=(4, 400, 600)), ["do not cover the previous prompt of 500"])
    expect("warm first", _fixture(cached=(450, 500, 600)), ["first step is not cold"])
    # vLLM reuses whole blocks of B tokens: block 128 caches 384 of the 500-token prompt and
    # 512 of the 600-token one (prompts 500, 600, 700), and never more than
    # floor((prompt - 1) / B) * B.
    vllm = _fixture(cached=(0, 384, 512))
    vllm["telemetry"] = {"metrics": {"block_size": 128}}
    expect("whole blocks", vllm, [], 0)
    expect("whole blocks without a block size", _fixture(cached=(0, 384, 512)),
           ["cached_tokens 384 do not cover the previous prompt of 500"])
    short = _fixture(cached=(0, 256, 512))
    short["telemetry"] = {"metrics": {"block_size": 128}}
    expect("a block short", short, ["cached_tokens 256 do not cover the previous prompt of "
                                    "500 tokens (384 in whole blocks of 128)"])
    over = _fixture(cached=(0, 384, 700))
    over["telemetry"] = {"metrics": {"block_size": 128}}
    expect("beyond the block bound", over, ["cached_tokens 700 > 640"])
    expect("beyond the prompt", _fixture(cached=(0, 500, 701)), ["cached_tokens 701 > 700"])
    bad = cache_blocks_self_test()
    if bad:
        ok = False
        print(f"self-test cache_blocks: {bad}")
    flat = _fixture()
    for s in flat["jobs"][2]["trajectories"][0]["steps"]:
        s["ttft_ms"] = 1000.0
    expect("flat ttft", flat, ["not at least 3x"])
    no_usage = _fixture()
    no_usage["jobs"][1]["trajectories"][0]["steps"][1]["completion_tokens"] = None
    no_usage["jobs"][1]["trajectories"][0]["steps"][1]["completion_tokens_estimate"] = {
        "tokens": 8, "method": "utf8_bytes_div_4"}
    expect("estimated usage", no_usage, ["not server-reported usage"])
    print("self-test: ok" if ok else "self-test: FAILED")
    return 0 if ok else 1


def attach_requests(report: dict[str, Any], run_dir: str) -> None:
    """Puts each job's records from ``requests.jsonl`` (report schema v3 keeps them there,
    docs/artifacts.md) under ``jobs[].requests``, with the one field this check reads."""
    if not report.get("requests_file"):
        return
    with open(os.path.join(run_dir, "requests.jsonl"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    for job in report.get("jobs", []):
        job["requests"] = []
    jobs = report.get("jobs", [])
    for line in lines[1:]:
        r = json.loads(line)
        jobs[r["j"]]["requests"].append({"tool_call_count": r.get("tc", 0)})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report", nargs="?")
    ap.add_argument("--exit-status", type=int)
    ap.add_argument("--suite", default="smollm2",
                    help="the suite name of the jobs (vllm for suites/vllm.toml)")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    global TRAJ, CTX, TOOL
    TRAJ, CTX, TOOL = (f"{a.suite}::{j}" for j in ("trajectory", "context", "tool_call"))
    if a.self_test:
        return self_test()
    if not a.report:
        ap.error("report.json path required")
    try:
        with open(a.report, encoding="utf-8") as f:
            report = json.load(f)
        attach_requests(report, os.path.dirname(os.path.abspath(a.report)))
    except (OSError, ValueError) as e:
        print(f"error: {a.report}: {e}", file=sys.stderr)
        return 2
    table, fails = check_report(report, a.exit_status)
    print("\n".join(table))
    for f in fails:
        print(f"FAIL: {f}")
    if not fails:
        print("PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
