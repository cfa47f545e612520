#!/usr/bin/env python3
"""check_gpu_run.py — the figures of BENCHMARKS "Real GPU" from one run directory (issue 28).

Usage: check_gpu_run.py RUN_DIR [--expect-gpu] [--idle-mw MW] [--json FILE]
                        [--max-disagreement-pct 5.0] [--overhead OVERHEAD.json]

Reads what the product wrote (``report.json``, ``samples/sources.json``,
``samples/gpu.jsonl``; docs/samples.md, docs/artifacts.md) and recomputes from the raw power
samples, independently of the product's code:

  1. NVML: per power device its kind, name, UUID, index, MIG state, power basis and status;
     which readings worked (non-null lines per field of gpu.jsonl, the fields NVML answered
     NotSupported, error counts).
  2. the sample period achieved per device (median, p99 and largest gap between consecutive
     samples) against the period asked for;
  3. the energy counter's delta against the integer trapezoid of the power samples over the
     same samples (the lines that carry both, one counter epoch), agreement in percent;
  4. LLM steps against tool steps of the trajectories whose energy is ``measured``: mean
     power of each kind, and each tool step's energy against idle power × its duration; idle
     power is ``--idle-mw`` or, when not given, the median power of the samples taken before
     the run's first step (at least 3), else unavailable;
  5. ADR-013 reconciliation, exactly: every attributed trajectory's steps plus unattributed
     energy equal its whole-run energy per device, each step's energy equals the trapezoid of
     the segments fully inside its window (docs/samples.md), floored to mJ once per device,
     and the whole-run energy equals the same trapezoid over the trajectory's run window;
  6. with ``--overhead``: the overhead gate's figures (runner CPU %, peak RSS, GPU memory the
     runner holds, workload effect) from ``inferscope-bench overhead --out DIR``.

Checks that fail the run (exit 1): a reconciliation or a recomputed energy that differs from
the report by any amount; a line that does not parse. With ``--expect-gpu`` also: no NVML
device with power readings, counter and trapezoid disagreeing by more than
``--max-disagreement-pct``, an achieved median period above 1.5 × the period asked for, or
no step energy labelled ``measured``. A figure that cannot be computed is ``null`` with the
reason, never 0. Every figure in ``--json`` carries its basis.

Exit status: 0 pass, 1 a check failed, 2 bad input (named by file, line and field).
Standard library only: CI runs it on the synthetic fixture under fixtures/gpu-check/.
"""
from __future__ import annotations

import argparse
import json
import os
import stat
import statistics
import sys
from typing import Any

MAX_FILE_BYTES = 512 * 1024 * 1024
MW_NS_PER_MJ_DOUBLED = 2_000_000_000  # the trapezoid's ½ and 1 mJ = 10⁹ mW·ns


class BadInput(Exception):
    """Bad input, its message naming file, line and field."""


def read_bounded(path: str) -> str:
    """The text of a regular file: no symlink followed, no FIFO opened, at most
    MAX_FILE_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise BadInput(f"{path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadInput(f"{path}: not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise BadInput(f"{path}: {st.st_size} bytes, more than {MAX_FILE_BYTES}")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadInput(f"{path}: not UTF-8 at byte {e.start}") from None


def real_dir(path: str) -> str:
    try:
        st = os.lstat(path)
    except OSError as e:
        raise BadInput(f"{path}: {e.strerror}") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise BadInput(f"{path}: not a directory (symbolic links are not followed)")
    return path


def load_json(path: str) -> Any:
    try:
        return json.loads(read_bounded(path))
    except ValueError as e:
        raise BadInput(f"{path}: {e}") from None


def opt_uint(obj: dict[str, Any], key: str, where: str) -> int | None:
    v = obj.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise BadInput(f"{where}: field {key}: expected an unsigned integer or null, got {v!r}")
    return v


def load_gpu_lines(path: str) -> list[dict[str, Any]]:
    """gpu.jsonl: one sample per line per device (docs/samples.md)."""
    out = []
    for n, line in enumerate(read_bounded(path).splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise BadInput(f"{where}: {e}") from None
        if not isinstance(obj, dict):
            raise BadInput(f"{where}: expected an object")
        for k in ("elapsed_ns", "device"):
            if opt_uint(obj, k, where) is None:
                raise BadInput(f"{where}: field {k}: required")
        for k in ("power_mw", "energy_mj", "energy_epoch"):
            opt_uint(obj, k, where)
        out.append(obj)
    return out


def load_run(run_dir: str) -> dict[str, Any]:
    real_dir(run_dir)
    samples = real_dir(os.path.join(run_dir, "samples"))
    report = load_json(os.path.join(run_dir, "report.json"))
    sources = load_json(os.path.join(samples, "sources.json"))
    gpu_path = os.path.join(samples, "gpu.jsonl")
    lines = load_gpu_lines(gpu_path) if os.path.lexists(gpu_path) else []
    if not isinstance(report, dict) or not isinstance(sources, dict):
        raise BadInput(f"{run_dir}: report.json and samples/sources.json must be objects")
    return {"report": report, "sources": sources, "gpu": lines}


# ---- pure figures -------------------------------------------------------------------------

def power_devices(sources: dict[str, Any]) -> list[dict[str, Any]]:
    power = sources.get("power") or {}
    devs = power.get("devices") or []
    return [d for d in devs if isinstance(d, dict)]


def series(lines: list[dict[str, Any]], device: int) -> list[dict[str, Any]]:
    s = [x for x in lines if x["device"] == device]
    s.sort(key=lambda x: x["elapsed_ns"])
    return s


def doubled_trapezoid(points: list[tuple[int, int]]) -> int:
    """Σ (p_k + p_{k+1}) · (t_{k+1} − t_k), mW·ns, over consecutive (t, p) points."""
    return sum((p0 + p1) * (t1 - t0) for (t0, p0), (t1, p1) in zip(points, points[1:]))


def window_mj(points: list[tuple[int, int]], start: int, end: int) -> int | None:
    """The trapezoid over the segments fully inside [start, end], floored to mJ once;
    None when no segment lies fully inside (docs/samples.md)."""
    inside = [(t, p) for t, p in points if start <= t <= end]
    if len(inside) < 2:
        return None
    return doubled_trapezoid(inside) // MW_NS_PER_MJ_DOUBLED


def nvml_facts(sources: dict[str, Any], lines: list[dict[str, Any]]) -> dict[str, Any]:
    power = sources.get("power") or {}
    fields = ("power_mw", "energy_mj", "memory_used_bytes", "utilization_gpu_pct",
              "utilization_memory_pct")
    devices = []
    for d in power_devices(sources):
        s = series(lines, d.get("device"))
        devices.append({
            "device": d.get("device"), "kind": d.get("kind"), "label": d.get("label"),
            "name": d.get("name"), "uuid": d.get("uuid"), "index": d.get("index"),
            "mig": d.get("mig"), "not_attributable": d.get("not_attributable"),
            "power_basis": d.get("power_basis"), "status": d.get("status"),
            "unsupported": d.get("unsupported") or {}, "errors": d.get("errors") or {},
            "samples": len(s),
            "readings": {f: sum(1 for x in s if x.get(f) is not None) for f in fields},
        })
    return {"gpu_status": power.get("gpu_status"), "gpu_notes": power.get("gpu_notes") or [],
            "period_ns": power.get("period_ns"), "devices": devices,
            "basis": "measured (as NVML reported it, from samples/sources.json and gpu.jsonl)"}


def device_basis(d: dict[str, Any]) -> str:
    """``measured`` for an NVML device; a probe's own basis (``simulated``) otherwise."""
    return "measured" if d.get("kind") == "nvml" else str(d.get("power_basis") or d.get("kind"))


def achieved_period(lines: list[dict[str, Any]], device: int, asked_ns: int | None,
                    basis: str = "measured") -> dict:
    t = [x["elapsed_ns"] for x in series(lines, device)]
    gaps = sorted(b - a for a, b in zip(t, t[1:]))
    if not gaps:
        return {"device": device, "asked_ns": asked_ns, "median_ns": None, "p99_ns": None,
                "max_ns": None, "gaps": 0, "reason": "fewer than 2 samples",
                "basis": basis}
    p99 = gaps[min(len(gaps) - 1, int(0.99 * (len(gaps) - 1) + 0.5))]
    return {"device": device, "asked_ns": asked_ns, "median_ns": int(statistics.median(gaps)),
            "p99_ns": p99, "max_ns": gaps[-1], "gaps": len(gaps), "reason": None,
            "basis": basis}


def counter_vs_trapezoid(lines: list[dict[str, Any]], device: int,
                         basis: str = "measured") -> dict[str, Any]:
    """Over the samples carrying both power and the counter, in the longest run of one
    counter epoch that never decreases."""
    both = [x for x in series(lines, device)
            if x.get("power_mw") is not None and x.get("energy_mj") is not None]
    runs: list[list[dict[str, Any]]] = []
    for x in both:
        if runs and runs[-1][-1].get("energy_epoch") == x.get("energy_epoch") \
                and x["energy_mj"] >= runs[-1][-1]["energy_mj"]:
            runs[-1].append(x)
        else:
            runs.append([x])
    best = max(runs, key=len, default=[])
    out: dict[str, Any] = {"device": device, "samples": len(best), "counter_mj": None,
                           "trapezoid_mj": None, "disagreement_pct": None,
                           "window_ns": None, "basis": basis}
    if len(best) < 2:
        out["reason"] = "fewer than 2 samples carry both power and the energy counter"
        return out
    counter = best[-1]["energy_mj"] - best[0]["energy_mj"]
    trap = doubled_trapezoid([(x["elapsed_ns"], x["power_mw"]) for x in best]) \
        // MW_NS_PER_MJ_DOUBLED
    out.update(counter_mj=counter, trapezoid_mj=trap,
               window_ns=best[-1]["elapsed_ns"] - best[0]["elapsed_ns"], reason=None)
    if counter > 0:
        out["disagreement_pct"] = round(100.0 * (trap - counter) / counter, 3)
    else:
        out["reason"] = "the counter did not advance"
    return out


def trajectories(report: dict[str, Any]):
    for job in report.get("jobs") or []:
        for t in job.get("trajectories") or []:
            yield job, t


def attributable_points(sources: dict[str, Any], lines: list[dict[str, Any]]):
    """label → [(t, mW)] of each device the join reads (docs/samples.md)."""
    out = {}
    for d in power_devices(sources):
        if d.get("power_basis") is None or d.get("not_attributable") is not None:
            continue
        pts = [(x["elapsed_ns"], x["power_mw"]) for x in series(lines, d.get("device"))
               if x.get("power_mw") is not None]
        if pts:
            out[d.get("label")] = pts
    return out


def reconcile(report: dict[str, Any], sources: dict[str, Any],
              lines: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """ADR-013 on every attributed trajectory, recomputed from the raw samples."""
    pts = attributable_points(sources, lines)
    fails: list[str] = []
    checked = steps_checked = devices_checked = 0
    for job, t in trajectories(report):
        a = t.get("attribution") or {}
        if a.get("status") != "attributed":
            continue
        tid = t.get("id")
        checked += 1
        win = a.get("run_window") or {}
        rs, re_ = win.get("start_elapsed_ns"), win.get("end_elapsed_ns")
        for d in a.get("devices") or []:
            label = d.get("device")
            whole, steps, un = (d.get("whole_run_energy_mj"), d.get("steps_energy_mj"),
                                d.get("unattributed_energy_mj"))
            if None in (whole, steps, un) or steps + un != whole:
                fails.append(f"{tid} device {label}: steps {steps} + unattributed {un} "
                             f"!= whole run {whole}")
            devices_checked += 1
            if label in pts and isinstance(rs, int) and isinstance(re_, int):
                mine = window_mj(pts[label], rs, re_)
                if mine != whole:
                    fails.append(f"{tid} device {label}: whole run {whole} mJ in the report, "
                                 f"{mine} recomputed from gpu.jsonl over the run window")
        step_sum = 0
        for s in t.get("steps") or []:
            e = (s.get("energy") or {}).get("value")
            mine_parts = [window_mj(p, s["start_ns"], s["end_ns"]) for p in pts.values()]
            known = [m for m in mine_parts if m is not None]
            mine = sum(known) if known else None
            steps_checked += 1
            if e != mine:
                fails.append(f"{tid} step {s.get('step_id')}: energy {e} mJ in the report, "
                             f"{mine} recomputed from gpu.jsonl")
            step_sum += e or 0
        if a.get("total_energy_mj") is not None and step_sum != a["total_energy_mj"]:
            fails.append(f"{tid}: its steps sum to {step_sum} mJ, total_energy_mj says "
                         f"{a['total_energy_mj']}")
    summary = {"trajectories_checked": checked, "steps_checked": steps_checked,
               "device_windows_checked": devices_checked,
               "exact": (not fails) if devices_checked else None,
               "reason": None if devices_checked else "no power device in any attribution",
               "basis": "recomputed from gpu.jsonl (integer trapezoid, docs/samples.md)"}
    return summary, fails


def idle_power(report: dict[str, Any], sources: dict[str, Any],
               lines: list[dict[str, Any]], given_mw: int | None) -> dict[str, Any]:
    if given_mw is not None:
        return {"mw": given_mw, "samples": None, "basis": "given (--idle-mw)", "reason": None}
    starts = [s["start_ns"] for _, t in trajectories(report) for s in t.get("steps") or []
              if isinstance(s.get("start_ns"), int)]
    pts = attributable_points(sources, lines)
    bases = {device_basis(d) for d in power_devices(sources)
             if d.get("label") in pts} or {"measured"}
    basis = "measured" if bases == {"measured"} else "/".join(sorted(bases))
    if not starts or not pts:
        return {"mw": None, "samples": 0, "basis": basis,
                "reason": "no steps or no power samples"}
    first = min(starts)
    # Summed over the attributable devices at each instant before the first step.
    per_device = [[p for t, p in series_pts if t < first] for series_pts in pts.values()]
    n = min(len(v) for v in per_device)
    if n < 3:
        return {"mw": None, "samples": n, "basis": basis,
                "reason": "fewer than 3 samples before the first step"}
    return {"mw": int(sum(statistics.median(v) for v in per_device)), "samples": n,
            "basis": f"{basis} (median before the run's first step)", "reason": None}


def llm_vs_tool(report: dict[str, Any], idle_mw: int | None) -> dict[str, Any]:
    kinds: dict[str, dict[str, int]] = {}
    tools = []
    for _, t in trajectories(report):
        for s in t.get("steps") or []:
            e = s.get("energy") or {}
            if e.get("basis") != "measured" or e.get("value") is None:
                continue
            dur = s["end_ns"] - s["start_ns"]
            k = kinds.setdefault(s.get("kind"), {"steps": 0, "energy_mj": 0, "duration_ns": 0})
            k["steps"] += 1
            k["energy_mj"] += e["value"]
            k["duration_ns"] += dur
            if s.get("kind") == "tool":
                expect = idle_mw * dur / 1e9 if idle_mw is not None else None
                tools.append({"trajectory": t.get("id"), "step_id": s.get("step_id"),
                              "energy_mj": e["value"], "duration_ms": dur / 1e6,
                              "idle_times_duration_mj": None if expect is None else round(expect, 1),
                              "ratio": None if not expect else round(e["value"] / expect, 4)})
    for k in kinds.values():
        k["mean_power_w"] = (round(k["energy_mj"] / (k["duration_ns"] / 1e6), 3)
                             if k["duration_ns"] else None)
    ratios = [x["ratio"] for x in tools if x["ratio"] is not None]
    return {"kinds": kinds, "tool_steps": tools,
            "tool_ratio_median": statistics.median(ratios) if ratios else None,
            "basis": "measured step energies (only steps labelled measured)"}


def analyse(run: dict[str, Any], idle_mw: int | None = None) -> tuple[dict[str, Any], list[str]]:
    report, sources, lines = run["report"], run["sources"], run["gpu"]
    nvml = nvml_facts(sources, lines)
    asked = nvml["period_ns"]
    devs = [(d["device"], device_basis(d)) for d in nvml["devices"]]
    rec, fails = reconcile(report, sources, lines)
    idle = idle_power(report, sources, lines, idle_mw)
    figures = {
        "nvml": nvml,
        "period": [achieved_period(lines, d, asked, b) for d, b in devs],
        "counter_vs_trapezoid": [counter_vs_trapezoid(lines, d, b) for d, b in devs],
        "idle_power": idle,
        "llm_vs_tool": llm_vs_tool(report, idle["mw"]),
        "reconciliation": rec,
    }
    return figures, fails


def overhead_figures(path: str) -> dict[str, Any]:
    """The overhead gate's figures (``inferscope-bench overhead --out DIR``'s overhead.json):
    the whole runner's cost — client, capture and the samplers, which run in both arms."""
    o = load_json(path)
    ev = (o.get("evaluation") or {}) if isinstance(o, dict) else {}
    gates = {g.get("figure"): {k: g.get(k) for k in ("value", "noise", "bound", "unit",
                                                       "outcome", "reason")}
             for g in ev.get("gates") or [] if isinstance(g, dict)}
    return {"pairs": len(o.get("pairs") or []) if isinstance(o, dict) else 0,
            "outcome": ev.get("outcome"), "gates": gates,
            "basis": "measured by inferscope-bench overhead (whole runner, sampler included)"}


def gpu_expectations(fig: dict[str, Any], max_pct: float) -> list[str]:
    fails = []
    nv = [d for d in fig["nvml"]["devices"] if d["kind"] == "nvml"]
    if not any(d["readings"]["power_mw"] > 0 for d in nv):
        fails.append(f"no NVML device with power readings (gpu_status "
                     f"{fig['nvml']['gpu_status']!r})")
    for c in fig["counter_vs_trapezoid"]:
        if c["disagreement_pct"] is not None and abs(c["disagreement_pct"]) > max_pct:
            fails.append(f"device {c['device']}: counter {c['counter_mj']} mJ and trapezoid "
                         f"{c['trapezoid_mj']} mJ disagree by {c['disagreement_pct']} %")
    for p in fig["period"]:
        if p["median_ns"] is not None and p["asked_ns"] and p["median_ns"] > 1.5 * p["asked_ns"]:
            fails.append(f"device {p['device']}: median sample period {p['median_ns']} ns, "
                         f"asked {p['asked_ns']} ns")
    if not fig["llm_vs_tool"]["kinds"]:
        fails.append("no step energy labelled measured")
    if fig["reconciliation"]["exact"] is None:
        fails.append(f"reconciliation not checked: {fig['reconciliation']['reason']}")
    return fails


def render(fig: dict[str, Any]) -> str:
    out = [f"gpu source: {json.dumps(fig['nvml']['gpu_status'])}; "
           f"{len(fig['nvml']['devices'])} power device(s); notes {fig['nvml']['gpu_notes']}"]
    for d in fig["nvml"]["devices"]:
        out.append(f"device {d['device']}: {d['kind']} {d['name']!r} uuid {d['uuid']} "
                   f"mig {json.dumps(d['mig'])} basis {d['power_basis']} status "
                   f"{json.dumps(d['status'])}")
        out.append(f"  readings (non-null of {d['samples']}): {json.dumps(d['readings'])}; "
                   f"unsupported {json.dumps(d['unsupported'])}; errors {json.dumps(d['errors'])}")
    for p in fig["period"]:
        out.append(f"period device {p['device']}: asked {p['asked_ns']} ns, median "
                   f"{p['median_ns']}, p99 {p['p99_ns']}, max {p['max_ns']} over {p['gaps']} gaps")
    for c in fig["counter_vs_trapezoid"]:
        out.append(f"energy device {c['device']}: counter {c['counter_mj']} mJ, trapezoid "
                   f"{c['trapezoid_mj']} mJ over {c['samples']} samples: "
                   f"{c['disagreement_pct']} % ({c.get('reason') or c['basis']})")
    i = fig["idle_power"]
    out.append(f"idle power: {i['mw']} mW ({i['basis']}; {i['reason'] or 'ok'})")
    for k, v in sorted(fig["llm_vs_tool"]["kinds"].items()):
        out.append(f"{k}: {v['steps']} measured steps, {v['energy_mj']} mJ over "
                   f"{v['duration_ns'] / 1e6:.1f} ms, mean {v['mean_power_w']} W")
    out.append(f"tool step energy / (idle power x duration): median "
               f"{fig['llm_vs_tool']['tool_ratio_median']}")
    r = fig["reconciliation"]
    out.append(f"reconciliation: {r['trajectories_checked']} trajectories, "
               f"{r['steps_checked']} steps, {r['device_windows_checked']} device windows, "
               f"exact {r['exact']}{' (' + r['reason'] + ')' if r['reason'] else ''}")
    o = fig.get("overhead")
    if o:
        out.append(f"overhead gate ({o['pairs']} pairs): {o['outcome']}")
        for name, g in sorted(o["gates"].items()):
            out.append(f"  {name}: {g['value']} {g['unit']} (bound {g['bound']}): "
                       f"{g['outcome']}; {g['reason']}")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir")
    ap.add_argument("--expect-gpu", action="store_true")
    ap.add_argument("--idle-mw", type=int)
    ap.add_argument("--json")
    ap.add_argument("--max-disagreement-pct", type=float, default=5.0)
    ap.add_argument("--overhead", help="overhead.json of `inferscope-bench overhead --out`")
    a = ap.parse_args()
    try:
        run = load_run(a.run_dir)
        fig, fails = analyse(run, a.idle_mw)
        if a.overhead:
            fig["overhead"] = overhead_figures(a.overhead)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (KeyError, TypeError) as e:
        print(f"error: {a.run_dir}: unexpected shape ({type(e).__name__}: {e})", file=sys.stderr)
        return 2
    if a.expect_gpu:
        fails += gpu_expectations(fig, a.max_disagreement_pct)
    fig["failures"] = fails
    print(render(fig))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(fig, f, indent=1, sort_keys=True)
            f.write("\n")
    for f in fails:
        print(f"FAIL: {f}")
    print("PASS" if not fails else f"{len(fails)} check(s) failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
