"""cache_blocks.py — the prefix-cache bounds of an engine that reuses whole KV blocks.

Imported by the report checkers (scripts/check_*.py; run as ``python3 scripts/X.py``, so
this folder is on the import path). Pure, standard library only.

vLLM caches and reuses whole blocks of ``B`` tokens, and always recomputes a prompt's last
token: a step's ``cached_tokens`` is at most ``floor((prompt - 1) / B) * B``
(``../shared/ref/vllm-cpu.md``). The block size is in the report at
``telemetry.metrics.block_size`` (vLLM's ``vllm:cache_config_info{block_size}``); an engine
that does not expose one (llama.cpp) caches token by token: ``B`` is ``None`` here and the
bounds are the token-granular ones.
"""
from __future__ import annotations

from typing import Any


def block_size(report: dict[str, Any]) -> int | None:
    """``telemetry.metrics.block_size`` when it is a positive integer, else ``None``."""
    metrics = ((report.get("telemetry") or {}).get("metrics") or {})
    b = metrics.get("block_size")
    return b if isinstance(b, int) and not isinstance(b, bool) and b > 0 else None


def max_cached(prompt: int, block: int | None) -> int:
    """The most tokens of a ``prompt``-token prompt that can be cached: whole blocks of
    the first ``prompt - 1`` tokens; with no block size (``None``) only the trivial bound,
    the prompt itself."""
    if block is None:
        return max(prompt, 0)
    return max(prompt - 1, 0) // block * block


def reusable(shared: int, prompt: int, block: int | None) -> int:
    """Tokens a step can find cached when its first ``shared`` tokens were in an earlier
    prompt: the whole blocks of the shared prefix, never more than :func:`max_cached`."""
    whole = max(shared, 0) if block is None else max(shared, 0) // block * block
    return min(whole, max_cached(prompt, block))


def self_test() -> list[str]:
    """Failures of the bounds on known cases (empty when they hold)."""
    cases = [
        (max_cached(488, 32), 480),      # vllm-cpu.md: 480 of 488 tokens cached, block 32
        (max_cached(512, 32), 480),      # a prompt of whole blocks still recomputes its last
        (max_cached(513, 32), 512),
        (max_cached(488, None), 488),
        (max_cached(0, 32), 0),
        (reusable(500, 600, 128), 384),  # 3 whole blocks of the 500 shared tokens
        (reusable(500, 600, None), 500),
        (reusable(700, 600, 128), 512),  # capped by the new prompt's bound
        (block_size({"telemetry": {"metrics": {"block_size": 32}}}), 32),
        (block_size({"telemetry": {"metrics": {"block_size": None}}}), None),
        (block_size({"telemetry": {"metrics": None}}), None),
        (block_size({}), None),
    ]
    return [f"case {i}: got {got!r}, want {want!r}"
            for i, (got, want) in enumerate(cases) if got != want]
