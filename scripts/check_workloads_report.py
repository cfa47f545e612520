#!/usr/bin/env python3
"""check_workloads_report.py — asserts a run of suites/smollm2-workloads.toml (issue 27).

Usage: check_workloads_report.py RUN_DIR/report.json SOURCE [SUITE]
       check_workloads_report.py --replay RECORDED/report.json REPLAY/report.json TRAJECTORY
       check_workloads_report.py --self-test

Checks (jobs of SUITE, default smollm2-workloads; suites/vllm.toml holds the same two): the
jobs passed; job `sizes` has one successful request per
size whose usage.prompt_tokens equals the size (read from requests.jsonl, the compact lines:
`pt` prompt tokens, `pta` asked); job `fixed` has 3 requests with exactly 64 completion
tokens each (`ct`), asked for 64 (`ota`), and no `short_output` warning (`w`). Other
warnings (a `retried_stale_connection`: a pooled connection the server had closed, the request
sent again) say nothing about output length; they are printed, not failed on.

--replay (issue 27 item 4): the replay run's only trajectory has the recorded trajectory
TRAJECTORY's steps: the same kinds and names, and on every LLM step the same
usage.prompt_tokens and usage.completion_tokens (none null); the replay job passed.
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


def check(report, run_dir, source, suite="smollm2-workloads"):
    problems = []
    by_id = {j["id"]: j for j in report["jobs"]}
    for jid in (f"{suite}::sizes", f"{suite}::fixed"):
        if by_id.get(jid, {}).get("status") != "pass":
            problems.append(f"{jid}: status {by_id.get(jid, {}).get('status')!r}, want pass")
    sizes = requests_of(run_dir, f"{suite}::sizes")
    got = [(r.get("pta"), r.get("pt")) for r in sizes]
    if got != [(128, 128), (512, 512), (2048, 2048)]:
        problems.append(f"sizes with {source}: (asked, usage.prompt_tokens) = {got}")
    fixed = requests_of(run_dir, f"{suite}::fixed")
    cts = [(r.get("ota"), r.get("ct"), "short_output" in r.get("w", [])) for r in fixed]
    if cts != [(64, 64, False)] * 3:
        problems.append(f"fixed: (asked, completion_tokens, short_output) = {cts}")
    return problems


def other_warnings(run_dir, suite="smollm2-workloads"):
    """The `fixed` job's request warnings other than `short_output` (printed, not failed on)."""
    fixed = requests_of(run_dir, f"{suite}::fixed")
    return sorted({w for r in fixed for w in r.get("w", []) if w != "short_output"})


def trajectory_steps(report, trajectory=None):
    """(kind, name, prompt_tokens, completion_tokens) per step of trajectory `trajectory`
    (its id), or of the report's only trajectory when None."""
    ts = [t for j in report["jobs"] for t in j.get("trajectories", [])]
    if trajectory is not None:
        ts = [t for t in ts if t["id"] == trajectory]
    if len(ts) != 1:
        return None
    return [(s["kind"], s["name"], s.get("prompt_tokens"), s.get("completion_tokens"))
            for s in ts[0]["steps"]]


def check_replay(recorded, replay, trajectory):
    problems = []
    if [j.get("status") for j in replay["jobs"]] != ["pass"]:
        problems.append(f"replay: job statuses {[j.get('status') for j in replay['jobs']]}")
    want = trajectory_steps(recorded, trajectory)
    got = trajectory_steps(replay)
    if not want:
        return problems + [f"recorded: no trajectory {trajectory!r} with steps"]
    if any(k == "llm_call" and (p is None or c is None) for k, _, p, c in want + (got or [])):
        problems.append("an llm_call step without usage (prompt or completion tokens null)")
    if got != want:
        problems.append(f"replay steps (kind, name, prompt, completion) {got} != recorded {want}")
    return problems


def self_test_replay():
    def rep(steps, status="pass"):
        return {"jobs": [{"status": status, "trajectories": [{"id": "s::t#0", "steps": steps}]}]}
    llm = lambda p, c: {"kind": "llm_call", "name": "chat", "prompt_tokens": p,
                        "completion_tokens": c}
    tool = {"kind": "tool", "name": "read_file", "prompt_tokens": None,
            "completion_tokens": None}
    a = rep([llm(200, 9), tool, llm(260, 12)])
    assert check_replay(a, rep([llm(200, 9), tool, llm(260, 12)]), "s::t#0") == []
    assert len(check_replay(a, rep([llm(200, 9), tool, llm(261, 12)]), "s::t#0")) == 1
    assert len(check_replay(a, rep([llm(200, 9), llm(260, 12)]), "s::t#0")) == 1
    assert len(check_replay(a, rep([llm(200, 9), tool, llm(260, None)]), "s::t#0")) == 2
    assert len(check_replay(a, rep([llm(200, 9), tool, llm(260, 12)], "fail"), "s::t#0")) == 1
    assert check_replay(a, a, "s::other#0") == ["recorded: no trajectory 's::other#0' with steps"]


def self_test():
    self_test_replay()
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
        lines[-2] = {"j": 1, "ota": 64, "ct": 64, "w": ["retried_stale_connection"]}
        with open(os.path.join(d, "requests.jsonl"), "w") as f:
            f.write("\n".join(json.dumps(x) for x in lines) + "\n")
        assert check(rep, d, "t") == [], check(rep, d, "t")
        assert other_warnings(d) == ["retried_stale_connection"], other_warnings(d)
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
    if len(argv) == 5 and argv[1] == "--replay":
        reports = []
        for path in argv[2:4]:
            with open(path, encoding="utf-8") as f:
                reports.append(json.load(f))
        problems = check_replay(reports[0], reports[1], argv[4])
        for p in problems:
            print(f"check_workloads_report: {p}", file=sys.stderr)
        if not problems:
            n = len(trajectory_steps(reports[1]))
            print(f"check_workloads_report: replay of {argv[4]}: {n} steps, prompt and "
                  "completion tokens per step equal the recorded usage: ok")
        return 1 if problems else 0
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    run_dir = os.path.dirname(argv[1])
    with open(argv[1], encoding="utf-8") as f:
        report = json.load(f)
    problems = check(report, run_dir, argv[2], *argv[3:])
    other = other_warnings(run_dir, *argv[3:])
    if other:
        print(f"check_workloads_report: fixed: other request warnings (not failed on): {other}")
    for p in problems:
        print(f"check_workloads_report: {p}", file=sys.stderr)
    if not problems:
        print(f"check_workloads_report: exact sizes and fixed outputs with {argv[2]}: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
