#!/usr/bin/env python3
"""check_workloads_report.py — asserts a run of suites/smollm2-workloads.toml (issue 27).

Usage: check_workloads_report.py RUN_DIR/report.json SOURCE
       check_workloads_report.py --self-test

Checks: the run exited with every job passing; job `sizes` has one successful request per
size whose usage.prompt_tokens equals the size (read from requests.jsonl, the compact lines:
`pt` prompt tokens, `pta` asked); job `fixed` has 3 requests with exactly 64 completion
tokens each (`ct`), asked for 64 (`ota`), and no `short_output` warning (`w`).
"""

import json
import os
import sys


def requests_of(run_dir, job_id):
    """Compact request lines of job `job_id` (docs/artifacts.md)."""
    path = os.path.join(run_dir, "requests.jsonl")
    with open(path, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f if line.strip()]
    header = lines[0]
    jobs = header.get("jobs", [])
    j = jobs.index(job_id)
    return [r for r in lines[1:] if r.get("j") == j and "u" not in r]


def check(report, run_dir, source):
    problems = []
    by_id = {j["id"]: j for j in report["jobs"]}
    for jid in ("smollm2-workloads::sizes", "smollm2-workloads::fixed"):
        if by_id.get(jid, {}).get("status") != "pass":
            problems.append(f"{jid}: status {by_id.get(jid, {}).get('status')!r}, want pass")
    sizes = requests_of(run_dir, "smollm2-workloads::sizes")
    got = [(r.get("pta"), r.get("pt")) for r in sizes]
    if got != [(128, 128), (512, 512), (2048, 2048)]:
        problems.append(f"sizes with {source}: (asked, usage.prompt_tokens) = {got}")
    fixed = requests_of(run_dir, "smollm2-workloads::fixed")
    cts = [(r.get("ota"), r.get("ct"), r.get("w", [])) for r in fixed]
    if cts != [(64, 64, [])] * 3:
        problems.append(f"fixed: (asked, completion_tokens, warnings) = {cts}")
    return problems


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        jobs = ["smollm2-workloads::sizes", "smollm2-workloads::fixed"]
        lines = [{"jobs": jobs}]
        lines += [{"j": 0, "pta": s, "pt": s} for s in (128, 512, 2048)]
        lines += [{"j": 1, "ota": 64, "ct": 64}] * 3
        with open(os.path.join(d, "requests.jsonl"), "w") as f:
            f.write("\n".join(json.dumps(x) for x in lines) + "\n")
        rep = {"jobs": [{"id": j, "status": "pass"} for j in jobs]}
        assert check(rep, d, "t") == [], check(rep, d, "t")
        lines[2]["pt"] = 513
        lines[-1] = {"j": 1, "ota": 64, "ct": 20, "w": ["short_output"]}
        with open(os.path.join(d, "requests.jsonl"), "w") as f:
            f.write("\n".join(json.dumps(x) for x in lines) + "\n")
        assert len(check(rep, d, "t")) == 2, check(rep, d, "t")
    print("check_workloads_report: self-test ok")
    return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    run_dir = os.path.dirname(argv[1])
    with open(argv[1], encoding="utf-8") as f:
        report = json.load(f)
    problems = check(report, run_dir, argv[2])
    for p in problems:
        print(f"check_workloads_report: {p}", file=sys.stderr)
    if not problems:
        print(f"check_workloads_report: exact sizes and fixed outputs with {argv[2]}: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
