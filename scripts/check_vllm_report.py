#!/usr/bin/env python3
"""Assert what a real vLLM run of suites/vllm.toml must show in its report.json (issue 26).

Usage:
    python3 scripts/check_vllm_report.py RUN_DIR [--block-size 32]
    python3 scripts/check_vllm_report.py --self-test

The jobs shared with the SmolLM2 suite (tool call, trajectory, context sweep) are checked by
scripts/check_smollm2_report.py --suite vllm; this checks what is vLLM's own:
  1. /metrics read as vLLM 0.32 writes it: status ok, profile vllm, no parse error, no
     scrape failed but for a few timeouts (samples/sources.json's gaps: on this 2-core
     machine vLLM's engine can starve its API server past the 1 s scrape timeout; at most
     1 % of the scrapes, each printed with its reason; any other failure fails), the block size from vllm:cache_config_info, the 0.32 families named in the
     mapping (prompt_tokens_cached, prompt_tokens_by_source), gauges under engine="0";
  2. /proc of the server's process tree: samples of the API server with its engine
     processes (process_count ≥ 2 in samples/proc.jsonl);
  3. whole-block prefix caching (vllm::shared_prefix): the first request of each size cold,
     every repeat cached exactly floor((prompt − 1) / B) · B tokens;
  4. per-step counters: every sequential LLM step whose counter deltas are not flagged
     (attribution.counters_low_confidence null) has prompt and cache-hit deltas equal to its
     usage; a flagged step carries its reason;
  5. the load sweep (vllm::load): points at concurrency 1, 2 and 4, every request succeeded,
     no short output (16 tokens each, ignore_eos).
Prints one line per figure and PASS, or FAIL: lines. Exit 0 pass, 1 fail, 2 unreadable.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from cache_blocks import max_cached


def _job(report: dict[str, Any], jid: str) -> dict[str, Any] | None:
    return next((j for j in report.get("jobs", []) if j.get("id") == jid), None)


def _llm_steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for t in job.get("trajectories") or [] for s in t.get("steps", [])
            if s.get("kind") == "llm_call"]


# suites/vllm.toml's shared_prefix job: sizes [512, 1024, 2048], each sent 3 times.
SP_SIZES = 3
SP_REPEAT = 3
# Scrapes that may time out (a starved API server), as a share of the successful ones, and
# the words a timed-out scrape's reason carries (crates/telemetry/src/metrics.rs's test
# a_scrape_past_its_timeout_says_it_timed_out).
MAX_TIMEOUT_SHARE = 0.01
TIMEOUT_WORDS = "timed out"
# Unflagged sequential LLM steps that must be compared with usage (the suite has 28; 24-25
# were proven in every measured run): a check that compares none cannot pass.
MIN_AGREED = 8


def _scrape_gaps(m: dict[str, Any], gaps: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The failed scrapes: (lines, failures). A few timeouts pass, anything else fails."""
    out = [f"  scrape gap at {(g.get('elapsed_ns') or 0) / 1e9:.3f} s: {g.get('reason')}" for g in gaps]
    failed = m.get("scrapes_failed") or 0
    if failed != len(gaps):
        return out, [f"scrapes_failed {failed}, but samples/sources.json lists {len(gaps)} gaps"]
    other = [g for g in gaps if TIMEOUT_WORDS not in str(g.get("reason"))]
    allowed = max(1, int((m.get("scrapes_ok") or 0) * MAX_TIMEOUT_SHARE))
    fails = [f"scrape failed at {(g.get('elapsed_ns') or 0) / 1e9:.3f} s: {g.get('reason')}" for g in other]
    if len(gaps) - len(other) > allowed:
        fails.append(f"{len(gaps) - len(other)} scrapes timed out, more than {allowed} "
                     f"({MAX_TIMEOUT_SHARE:.0%} of {m.get('scrapes_ok')})")
    return out, fails


def check(report: dict[str, Any], proc_counts: list[int], block: int,
          gaps: list[dict[str, Any]] | None = None) -> tuple[list[str], list[str]]:
    """Pure check: (table lines, failures). `gaps`: samples/sources.json's metrics gaps."""
    out: list[str] = []
    fails: list[str] = []
    m = (report.get("telemetry") or {}).get("metrics") or {}
    # 1. /metrics
    if (m.get("status") or {}).get("state") != "ok":
        fails.append(f"metrics status {m.get('status')!r}")
    if m.get("profile") != "vllm":
        fails.append(f"metrics profile {m.get('profile')!r}, not vllm")
    if m.get("parse_errors"):
        fails.append(f"parse_errors {m.get('parse_errors')}")
    gap_lines, gap_fails = _scrape_gaps(m, gaps or [])
    fails += gap_fails
    if m.get("block_size") != block:
        fails.append(f"block_size {m.get('block_size')!r}, the server was started with {block}")
    mapping = m.get("mapping") or {}
    for fig, name in (("prefix_cache_hits", "vllm:prompt_tokens_cached"),
                      ("block_size", "vllm:cache_config_info{block_size}")):
        if mapping.get(fig) != name:
            fails.append(f"mapping {fig} = {mapping.get(fig)!r}, expected {name}")
    if "vllm:prompt_tokens_by_source" not in mapping.values():
        fails.append(f"vllm:prompt_tokens_by_source not in the mapping {mapping}")
    engines = ((m.get("gauges") or {}).get("requests_running") or {}).get("engines") or {}
    if list(engines) != ['engine="0"']:
        fails.append(f"requests_running kept under {list(engines)}, expected engine=\"0\"")
    out.append(f"metrics: {m.get('scrapes_ok')} scrapes every {(m.get('period_ns') or 0) / 1e6:.0f} ms, "
               f"block size {m.get('block_size')}, mapping {len(mapping)} figures, "
               f"{m.get('scrapes_failed')} failed, {m.get('scrapes_resent') or 0} resent "
               "on a new connection")
    out += gap_lines
    # 2. /proc of the process tree
    p = (report.get("telemetry") or {}).get("proc") or {}
    if (p.get("status") or {}).get("state") != "ok" or not p.get("include_descendants"):
        fails.append(f"proc: status {p.get('status')!r}, include_descendants {p.get('include_descendants')!r}")
    if not proc_counts or max(proc_counts) < 2:
        fails.append(f"proc: process_count {max(proc_counts, default=None)!r}: the engine processes were not sampled")
    out.append(f"proc: {len(proc_counts)} samples, up to {max(proc_counts, default=0)} processes")
    # 3. whole-block caching on repeats
    sp = _job(report, "vllm::shared_prefix")
    if sp is None:
        fails.append("job vllm::shared_prefix not in report")
    else:
        steps = _llm_steps(sp)
        seen: set[int] = set()
        for s in steps:
            pt, c = s.get("prompt_tokens"), s.get("cached_tokens")
            if not isinstance(pt, int) or not isinstance(c, int):
                fails.append(f"shared_prefix step {s.get('step_id')}: prompt {pt!r}, cached {c!r}")
                continue
            want = 0 if pt not in seen else max_cached(pt, block)
            if c != want:
                fails.append(f"shared_prefix step {s.get('step_id')}: {c} of {pt} tokens cached, "
                             f"expected {want} ({'cold' if pt not in seen else 'whole blocks'})")
            seen.add(pt)
        counts = {pt: sum(1 for s in steps if s.get("prompt_tokens") == pt) for pt in seen}
        if len(counts) < SP_SIZES or any(n != SP_REPEAT for n in counts.values()):
            fails.append(f"shared_prefix: steps per prompt size {counts}: expected at least "
                         f"{SP_SIZES} sizes, each {SP_REPEAT} times (one cold, the repeats cached)")
        out.append("shared_prefix: " + ", ".join(f"{s.get('cached_tokens')}/{s.get('prompt_tokens')}" for s in steps))
    # 4. per-step counters against usage
    agreed = flagged = 0
    for j in report.get("jobs", []):
        if j.get("load"):
            continue
        for s in _llm_steps(j):
            a = s.get("attribution") or {}
            u = a.get("usage") or {}
            why = a.get("counters_low_confidence")
            if why is not None:
                if not (isinstance(why, str) and why.strip()):
                    fails.append(f"{j['id']} step {s.get('step_id')}: flagged without a reason ({why!r})")
                flagged += 1
                continue
            pairs = [("prompt", a.get("prompt_tokens_delta"), u.get("prompt_tokens")),
                     ("cache hits", a.get("cache_hits_delta"), u.get("cached_tokens"))]
            bad = [f"{k} delta {d!r} vs usage {v!r}" for k, d, v in pairs if d != v]
            if bad:
                fails.append(f"{j['id']} step {s.get('step_id')} (tail "
                             f"{(s.get('duration_ms') or 0) - (s.get('ttft_ms') or 0):.0f} ms): "
                             + "; ".join(bad))
            else:
                agreed += 1
    if agreed < MIN_AGREED:
        fails.append(f"per-step counters: only {agreed} unflagged LLM steps compared with usage "
                     f"({flagged} flagged); at least {MIN_AGREED} must be")
    out.append(f"per-step counters: {agreed} LLM steps equal to usage, {flagged} flagged low confidence")
    # 5. load sweep
    ld = _job(report, "vllm::load")
    if ld is None:
        fails.append("job vllm::load not in report")
    else:
        pts = (ld.get("sweep") or {}).get("points") or []
        if [pt.get("concurrency") for pt in pts] != [1, 2, 4]:
            fails.append(f"load points {[pt.get('concurrency') for pt in pts]}, expected [1, 2, 4]")
        for pt in pts:
            st = pt.get("stats") or {}
            if st.get("failed") or not st.get("succeeded"):
                fails.append(f"load {pt.get('label')}: {st.get('succeeded')} succeeded, {st.get('failed')} failed")
        st = ld.get("stats") or {}
        if st.get("short_outputs") != 0:
            fails.append(f"load: short_outputs {st.get('short_outputs')!r} (16 tokens asked with ignore_eos)")
        out.append("load: " + ", ".join(
            f"c={pt.get('concurrency')} ttft p50 {((pt.get('stats') or {}).get('ttft_ms') or {}).get('p50') or 0:.0f} ms"
            for pt in pts))
    return out, fails


def self_test() -> int:
    step = lambda sid, p, c, d=None, flag=None: {  # noqa: E731
        "step_id": sid, "kind": "llm_call", "prompt_tokens": p, "cached_tokens": c,
        "duration_ms": 500.0, "ttft_ms": 300.0,
        "attribution": {"usage": {"prompt_tokens": p, "cached_tokens": c},
                        "prompt_tokens_delta": p if d is None else d, "cache_hits_delta": c,
                        "counters_low_confidence": flag}}
    good = {
        "telemetry": {
            "metrics": {"status": {"state": "ok"}, "profile": "vllm", "scrapes_ok": 10,
                        "scrapes_failed": 0, "parse_errors": 0, "period_ns": 100_000_000,
                        "block_size": 32,
                        "mapping": {"prefix_cache_hits": "vllm:prompt_tokens_cached",
                                    "prefix_cache_queries": "vllm:prompt_tokens_by_source",
                                    "block_size": "vllm:cache_config_info{block_size}"},
                        "gauges": {"requests_running": {"engines": {'engine="0"': {}}}}},
            "proc": {"status": {"state": "ok"}, "include_descendants": True}},
        "jobs": [
            {"id": "vllm::shared_prefix", "trajectories": [{"steps": [
                step(1, 512, 0), step(2, 512, 480), step(3, 512, 480),
                step(4, 1024, 0), step(5, 1024, 992), step(6, 1024, 992),
                step(7, 2048, 0), step(8, 2048, 2016), step(9, 2048, 2016)]}]},
            {"id": "vllm::load", "load": {}, "stats": {"short_outputs": 0},
             "sweep": {"points": [{"concurrency": c, "label": f"c{c}",
                                   "stats": {"succeeded": 7, "failed": 0}} for c in (1, 2, 4)]}},
        ],
    }
    _, f = check(good, [4, 4], 32)
    assert not f, f
    # Each rule fails on its own defect.
    bad = json.loads(json.dumps(good))
    bad["jobs"][0]["trajectories"][0]["steps"][1]["cached_tokens"] = 500
    bad["jobs"][0]["trajectories"][0]["steps"][1]["attribution"]["usage"]["cached_tokens"] = 500
    bad["jobs"][0]["trajectories"][0]["steps"][1]["attribution"]["cache_hits_delta"] = 500
    assert any("expected 480" in x for x in check(bad, [4], 32)[1])
    bad = json.loads(json.dumps(good))
    bad["jobs"][0]["trajectories"][0]["steps"][2]["attribution"]["prompt_tokens_delta"] = 0
    assert any("prompt delta 0" in x for x in check(bad, [4], 32)[1])
    bad["jobs"][0]["trajectories"][0]["steps"][2]["attribution"]["counters_low_confidence"] = "short"
    assert not check(bad, [4], 32)[1]
    # A flag without a reason; every step flagged (nothing compared); a missing repeat.
    bad["jobs"][0]["trajectories"][0]["steps"][2]["attribution"]["counters_low_confidence"] = ""
    assert any("without a reason" in x for x in check(bad, [4], 32)[1])
    bad = json.loads(json.dumps(good))
    for st in bad["jobs"][0]["trajectories"][0]["steps"]:
        st["attribution"]["counters_low_confidence"] = "x"
    assert any("only 0 unflagged" in x for x in check(bad, [4], 32)[1])
    bad = json.loads(json.dumps(good))
    del bad["jobs"][0]["trajectories"][0]["steps"][8]
    assert any("steps per prompt size" in x for x in check(bad, [4], 32)[1])
    bad = json.loads(json.dumps(good))
    bad["telemetry"]["metrics"]["gauges"]["requests_running"]["engines"] = {"": {}}
    assert any("engine" in x for x in check(bad, [4], 32)[1])
    assert any("process_count" in x for x in check(good, [1], 32)[1])
    assert any("block_size 32" in x for x in check(good, [4], 128)[1])
    # Failed scrapes: a timeout or two pass (printed), anything else fails, so do too many
    # timeouts, and a count the gaps do not match.
    timed_out = {"elapsed_ns": 5_000_000_000,
                 "reason": "request failed: error sending request: operation timed out"}
    bad = json.loads(json.dumps(good))
    bad["telemetry"]["metrics"]["scrapes_failed"] = 1
    lines, f = check(bad, [4], 32, [timed_out])
    assert not f and any("operation timed out" in x for x in lines), (lines, f)
    assert any("lists 0 gaps" in x for x in check(bad, [4], 32, [])[1])
    reset = {"elapsed_ns": 1, "reason": "request failed: connection reset by peer"}
    assert any("connection reset" in x for x in check(bad, [4], 32, [reset])[1])
    bad["telemetry"]["metrics"]["scrapes_failed"] = 2
    assert any("2 scrapes timed out, more than 1" in x for x in check(bad, [4], 32, [timed_out] * 2)[1])
    bad["telemetry"]["metrics"]["scrapes_ok"] = 400
    assert not check(bad, [4], 32, [timed_out] * 2)[1]
    print("check_vllm_report: self-test ok")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", nargs="?")
    ap.add_argument("--block-size", type=int, default=32)
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.run_dir:
        ap.error("RUN_DIR required")
    try:
        with open(os.path.join(a.run_dir, "report.json"), encoding="utf-8") as f:
            report = json.load(f)
        counts = []
        with open(os.path.join(a.run_dir, "samples", "proc.jsonl"), encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    counts.append(int(json.loads(line).get("process_count") or 0))
        with open(os.path.join(a.run_dir, "samples", "sources.json"), encoding="utf-8") as f:
            gaps = (json.load(f).get("metrics") or {}).get("gaps") or []
    except (OSError, ValueError) as e:
        print(f"error: {a.run_dir}: {e}", file=sys.stderr)
        return 2
    out, fails = check(report, counts, a.block_size, gaps)
    print("\n".join(out))
    for f in fails:
        print(f"FAIL: {f}")
    if not fails:
        print("PASS")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
