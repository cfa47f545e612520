#!/usr/bin/env python3
"""gpu_nvml_facts.py — what NVML says about each GPU, through nvidia-ml-py (issue 28).

Usage: gpu_nvml_facts.py OUT.json

Independent of the product's own NVML reading (crates/telemetry/src/power.rs), for the
BENCHMARKS "Real GPU" section: per device its name, UUID, MIG mode, driver version, power
limit, and whether each power and energy reading works — ``nvmlDeviceGetPowerUsage``
(often a 1 s average), the instantaneous field ``NVML_FI_DEV_POWER_INSTANT``, and
``nvmlDeviceGetTotalEnergyConsumption`` — with the value or the error NVML gave. Then
2 s of idle readings at 10 ms: power (median, min, max) and the energy counter's delta,
each with how many reads worked. A reading that fails is recorded with its error, never as 0.

Without nvidia-ml-py, or when NVML cannot start, OUT.json says so (``available`` false,
``reason``) and the exit status is still 0: the product's own record says the rest.
"""
from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any


def attempt(fn, *args) -> dict[str, Any]:
    try:
        v = fn(*args)
        if isinstance(v, bytes):
            v = v.decode()
        return {"value": v, "error": None}
    except Exception as e:  # noqa: BLE001 - NVML raises its own error classes
        return {"value": None, "error": f"{type(e).__name__}: {e}"}


def instant_power(nv, h) -> dict[str, Any]:
    field = getattr(nv, "NVML_FI_DEV_POWER_INSTANT", None)
    if field is None:
        return {"value": None, "error": "this nvidia-ml-py has no NVML_FI_DEV_POWER_INSTANT"}

    def read():
        fv = nv.nvmlDeviceGetFieldValues(h, [field])[0]
        if fv.nvmlReturn != 0:
            raise RuntimeError(f"nvmlReturn {fv.nvmlReturn}")
        return int(fv.value.uiVal)
    return attempt(read)


def idle_window(nv, h, seconds: float = 2.0, period: float = 0.01) -> dict[str, Any]:
    powers, energies, errors = [], [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        p = attempt(nv.nvmlDeviceGetPowerUsage, h)
        e = attempt(nv.nvmlDeviceGetTotalEnergyConsumption, h)
        if p["value"] is not None:
            powers.append(p["value"])
        if e["value"] is not None:
            energies.append(e["value"])
        errors += (p["error"] is not None) + (e["error"] is not None)
        time.sleep(period)
    return {"seconds": seconds, "power_reads": len(powers), "errors": errors,
            "power_mw_median": statistics.median(powers) if powers else None,
            "power_mw_min": min(powers) if powers else None,
            "power_mw_max": max(powers) if powers else None,
            "energy_delta_mj": energies[-1] - energies[0] if len(energies) > 1 else None,
            "basis": "measured (nvmlDeviceGetPowerUsage, before the server started)"}


def facts() -> dict[str, Any]:
    try:
        import pynvml as nv
    except ImportError as e:
        return {"available": False, "reason": f"nvidia-ml-py not importable: {e}"}
    try:
        nv.nvmlInit()
    except Exception as e:  # noqa: BLE001
        return {"available": False, "reason": f"nvmlInit: {type(e).__name__}: {e}"}
    out: dict[str, Any] = {"available": True, "reason": None,
                           "driver": attempt(nv.nvmlSystemGetDriverVersion),
                           "devices": []}
    try:
        for i in range(nv.nvmlDeviceGetCount()):
            h = nv.nvmlDeviceGetHandleByIndex(i)
            out["devices"].append({
                "index": i,
                "name": attempt(nv.nvmlDeviceGetName, h),
                "uuid": attempt(nv.nvmlDeviceGetUUID, h),
                "mig_mode": attempt(nv.nvmlDeviceGetMigMode, h),
                "power_limit_mw": attempt(nv.nvmlDeviceGetEnforcedPowerLimit, h),
                "power_usage_mw": attempt(nv.nvmlDeviceGetPowerUsage, h),
                "power_instant_mw": instant_power(nv, h),
                "total_energy_mj": attempt(nv.nvmlDeviceGetTotalEnergyConsumption, h),
                "idle": idle_window(nv, h),
            })
    finally:
        nv.nvmlShutdown()
    return out


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: gpu_nvml_facts.py OUT.json", file=sys.stderr)
        return 2
    f = facts()
    with open(sys.argv[1], "w", encoding="utf-8") as fh:
        json.dump(f, fh, indent=1, default=str)
        fh.write("\n")
    print(json.dumps(f, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
