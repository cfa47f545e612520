#!/usr/bin/env python3
"""The product against the bare reference client at the edges (issue 33): paced streams,
memory per stream, the connect storm and start-up, each client its own process against
the same scripted mock (benchmarks/client_cost_tools.rs `serve`), alternating which client
goes first in every run. Usage (benchmarks/client_cost_edges.sh builds and calls it):

    client_cost_edges.py PRODUCT_BIN TOOLS_BIN [RUNS] [OUT_DIR]

Method:
- CPU: user + system time of the client process from wait4 (µs), launched through
  /usr/bin/time (the same launcher for both). "Per 1000 requests" is the marginal cost:
  (CPU of an N-request run - CPU of a one-request run of the same client in the same
  run) / (N - 1) x 1000, so the start-up and exit of each process are not spread over the
  requests (they are their own figure).
- Peak RSS: /usr/bin/time's %M of the client process (KiB). Memory per in-flight stream:
  (peak RSS at c = 1024 - peak RSS at c = 1) / 1024, slow streams (TTFT 1000 ms, ITL 50 ms,
  64 tokens): every stream is in flight together for ~4 s.
- Connect storm: c = 1024 against a mock whose listen backlog is 128, paced (50, 10). The
  kernel's ListenOverflows counter (/proc/net/netstat, machine-wide) over the client's run,
  and, for the product, its own record: connections opened inside the window, those named
  connect_retransmit, and the requests whose connect took >= 0.9 s.
- Start-up: one streamed request against a mock answering at once (T = I = 0, 8 tokens):
  wall time from launch to exit (the launcher's own ~1 ms included for both) and peak RSS,
  each the median of 5 launches in a row after a 1 s pause, as hyperfine takes repeated
  runs; every launch's wall time is kept (`walls_ms`). The first launch after the machine
  idled is slower (no storm involved: 13-20 ms for the product after a 1-3 s pause, 5-8 ms
  for the bare client, against 7 and 3 ms back to back), so a single launch measures the
  idle, not the client. That median CPU is also the one-request CPU the paced figures
  subtract.
- The load average is printed next to every run.
The product runs `inferscope-bench run` with the suite's default telemetry (a /proc sampler,
a /metrics scrape that the mock answers 404, NVML where present).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

PRODUCT, TOOLS = sys.argv[1], sys.argv[2]
RUNS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
OUT = sys.argv[4] if len(sys.argv) > 4 else tempfile.mkdtemp(prefix="client-cost-edges-")
os.makedirs(OUT, exist_ok=True)
PACED = [(1, 60), (16, 160), (128, 1280)] if not os.environ.get("EDGES_QUICK") else [(1, 4), (16, 32), (128, 256)]
SLOW_C = 1024
STARTS = 5
SETTLE_S = 1.0
STORM_C = 1024


def loadavg():
    return open("/proc/loadavg").read().split()[0]


def listen_overflows():
    lines = open("/proc/net/netstat").read().splitlines()
    for a, b in zip(lines[::2], lines[1::2]):
        if a.startswith("TcpExt:"):
            d = dict(zip(a.split()[1:], b.split()[1:]))
            return int(d.get("ListenOverflows", 0))
    return 0


class Mock:
    def __init__(self, port, backlog, ttft, itl, tokens):
        self.base = f"http://127.0.0.1:{port}/v1"
        self.proc = subprocess.Popen(
            [TOOLS, "serve", str(port), str(backlog), str(ttft), str(itl), str(tokens)],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.proc.stdout.readline()

    def slip(self):
        with urllib.request.urlopen(self.base.replace("/v1", "/slip")) as r:
            return json.loads(r.read())

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def measure(cmd):
    """(wall s, cpu s, peak RSS KiB, exit code, stdout) of `cmd` under /usr/bin/time."""
    rss_file = os.path.join(OUT, "rss.txt")
    t0 = time.perf_counter()
    p = subprocess.Popen(
        ["/usr/bin/time", "-f", "%M", "-o", rss_file] + cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    rss = int(open(rss_file).read().split()[-1])
    return wall, ru.ru_utime + ru.ru_stime, rss, os.waitstatus_to_exitcode(status), out


def suite(name, c, n):
    path = os.path.join(OUT, f"{name}.toml")
    with open(path, "w") as f:
        f.write(
            f'name = "{name}"\n[[jobs]]\nname = "c"\nkind = "context"\nsizes = [16]\n'
            f"max_tokens = 64\nconcurrency = {c}\ncount = {n}\n"
        )
    return path


def product(base, c, n):
    run_dir = os.path.join(OUT, "run")
    shutil.rmtree(run_dir, ignore_errors=True)
    s = os.path.join(os.path.dirname(os.path.abspath(__file__)), "client_cost", "one_request.toml")
    if n > 1:
        s = suite(f"c{c}", c, n)
    r = measure([PRODUCT, "run", s, "--endpoint", base, "--model", "m", "--out", run_dir])
    return r, run_dir


def bare(base, c, n):
    if n == 1:
        return measure([TOOLS, "once", base])
    return measure([TOOLS, "paced", base, str(c), str(n)])


def product_connections(run_dir):
    rep = json.load(open(os.path.join(run_dir, "report.json")))
    conns = [p.get("connections") or {} for j in rep["jobs"] for p in (j.get("sweep") or {}).get("points", [])]
    slow = 0
    ok = 0
    for line in open(os.path.join(run_dir, "requests.jsonl")):
        v = json.loads(line)
        if "ok" in v:
            ok += v["ok"]
            slow += v.get("cn", 0) >= 900_000_000
    return {
        "ok": ok,
        "warm_opened": sum(c.get("warm_opened", 0) for c in conns),
        "opened_in_window": sum(c.get("opened_in_window", 0) for c in conns),
        "connect_retransmits": sum(c.get("connect_retransmits", 0) for c in conns),
        "requests_cn_ge_0.9s": slow,
    }


results = []
fast = Mock(18610, 4096, 0, 0, 8)
paced = Mock(18611, 4096, 50, 10, 64)
slow = Mock(18612, 4096, 1000, 50, 64)
storm = Mock(18613, 128, 50, 10, 64)
print(f"somaxconn {open('/proc/sys/net/core/somaxconn').read().strip()}, runs {RUNS}, kept in {OUT}")
try:
    for i in range(1, RUNS + 1):
        order = ["product", "bare"] if i % 2 else ["bare", "product"]
        run = {"run": i, "order": order, "load_start": loadavg()}
        for who in order:
            r = run.setdefault(who, {})
            # Start-up: the median of STARTS launches after a pause.
            time.sleep(SETTLE_S)
            starts = []
            for _ in range(STARTS):
                if who == "product":
                    (wall, cpu, rss, code, _), _ = product(fast.base, 1, 1)
                else:
                    wall, cpu, rss, code, _ = bare(fast.base, 1, 1)
                starts.append((wall, cpu, rss, code))
            wall, cpu, rss = (statistics.median(x[i] for x in starts) for i in range(3))
            code = next((x[3] for x in starts if x[3] != 0), 0)  # a signal is negative
            r["start"] = {
                "wall_ms": wall * 1e3,
                "cpu_ms": cpu * 1e3,
                "rss_kib": rss,
                "rc": code,
                "walls_ms": [round(x[0] * 1e3, 2) for x in starts],
            }
            one_cpu = cpu
            # Paced streams.
            for c, n in PACED:
                if who == "product":
                    (wall, cpu, rss, code, _), _ = product(paced.base, c, n)
                else:
                    wall, cpu, rss, code, _ = bare(paced.base, c, n)
                r[f"paced{c}"] = {
                    "cpu_s_per_1000": (cpu - one_cpu) / (n - 1) * 1000,
                    "wall_s": wall,
                    "rc": code,
                    "load": loadavg(),
                }
            r["paced_slip"] = paced.slip()
            # Memory per stream.
            rss_at = {}
            for c in (1, SLOW_C):
                if who == "product":
                    (wall, cpu, rss, code, _), _ = product(slow.base, c, c) if c > 1 else product(slow.base, 1, 1)
                else:
                    wall, cpu, rss, code, _ = bare(slow.base, c, c) if c > 1 else bare(slow.base, 1, 1)
                rss_at[c] = (rss, code)
            r["mem"] = {
                "rss_c1_kib": rss_at[1][0],
                f"rss_c{SLOW_C}_kib": rss_at[SLOW_C][0],
                "kib_per_stream": (rss_at[SLOW_C][0] - rss_at[1][0]) / SLOW_C,
                "rc": rss_at[SLOW_C][1],
                "load": loadavg(),
            }
            # Connect storm.
            before = listen_overflows()
            if who == "product":
                (wall, cpu, rss, code, out), run_dir = product(storm.base, STORM_C, STORM_C)
                conns = product_connections(run_dir)
            else:
                wall, cpu, rss, code, out = bare(storm.base, STORM_C, STORM_C)
                conns = {"bare": out.decode().strip()}
            r["storm"] = {"listen_overflows": listen_overflows() - before, "rc": code, **conns}
        run["load_end"] = loadavg()
        results.append(run)
        print(json.dumps(run))
        sys.stdout.flush()
finally:
    for m in (fast, paced, slow, storm):
        m.stop()

json.dump(results, open(os.path.join(OUT, "results.json"), "w"), indent=1)


def rng(xs, fmt="{:.2f}"):
    return f"{fmt.format(min(xs))}-{fmt.format(max(xs))} (median {fmt.format(statistics.median(xs))})"


print(f"\n{len(results)} runs; load average {min(r['load_start'] for r in results)}-{max(r['load_end'] for r in results)}")
for c, _ in PACED:
    k = f"paced{c}"
    p = [r["product"][k]["cpu_s_per_1000"] for r in results]
    b = [r["bare"][k]["cpu_s_per_1000"] for r in results]
    ratio = [x / y for x, y in zip(p, b)]
    print(f"paced (50, 10) c={c}: CPU s/1000 req product {rng(p, '{:.3f}')}, bare {rng(b, '{:.3f}')}; "
          f"ratio {rng(ratio)}; <= 1.1x in {sum(x <= 1.1 for x in ratio)} of {len(ratio)}")
pm = [r["product"]["mem"]["kib_per_stream"] for r in results]
bm = [r["bare"]["mem"]["kib_per_stream"] for r in results]
print(f"memory per stream (1000, 50), c={SLOW_C}: product {rng(pm, '{:.1f}')} KiB, bare {rng(bm, '{:.1f}')} KiB; "
      f"product <= 16 KiB in {sum(x <= 16 for x in pm)} of {len(pm)}")
for who in ("product", "bare"):
    w = [r[who]["start"]["wall_ms"] for r in results]
    m = [r[who]["start"]["rss_kib"] / 1024 for r in results]
    print(f"start-up {who}: {rng(w, '{:.1f}')} ms, peak RSS {rng(m, '{:.1f}')} MiB")
w = [r["product"]["start"]["wall_ms"] for r in results]
m = [r["product"]["start"]["rss_kib"] / 1024 for r in results]
print(f"start-up goals: <= 10 ms in {sum(x <= 10 for x in w)} of {len(w)}, <= 8 MiB in {sum(x <= 8 for x in m)} of {len(m)}")
for who in ("product", "bare"):
    o = [r[who]["storm"]["listen_overflows"] for r in results]
    print(f"storm c={STORM_C}, backlog 128, {who}: ListenOverflows per run {o}; runs with overflows {sum(x > 0 for x in o)} of {len(o)}")
print("product storm record:", [
    {k: r["product"]["storm"][k] for k in ("ok", "warm_opened", "opened_in_window", "connect_retransmits", "requests_cn_ge_0.9s")}
    for r in results])
print("bare storm:", [r["bare"]["storm"].get("bare") for r in results])
print("mock slip (paced) per run:", [(r["product"]["paced_slip"], r["bare"]["paced_slip"]) for r in results])
