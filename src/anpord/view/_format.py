"""How figures read on a page: percentages, times, durations, tokens, cost, sizes."""

from __future__ import annotations

import time
from typing import Any

__all__ = ["FILTERS"]


def pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate * 100:.0f}%"


def signed_pct(delta: float | None) -> str:
    if delta is None:
        return "—"
    points = delta * 100
    if abs(points) < 0.5:
        return "±0%"
    return f"+{points:.0f}%" if points > 0 else f"−{-points:.0f}%"


def when(ts: float | None) -> str:
    if not ts:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 60:
        return f"{seconds:.2f}s" if seconds < 10 else f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def offset(seconds: float) -> str:
    """Time since a trial started: ``+0.012s``."""
    return f"+{seconds:.3f}s" if seconds >= 0 else f"−{-seconds:.3f}s"


def count(n: Any) -> str:
    if isinstance(n, float) and n.is_integer():
        n = int(n)
    return f"{n:,}" if isinstance(n, (int, float)) else "—"


def cost(usage: Any) -> str:
    """The cost of a usage mapping: ``$0.0031``, ``unknown`` when a price was missing, ``—``
    when nothing used a model."""
    if not usage:
        return "—"
    c = usage.get("cost")
    if c is None:
        return "unknown"
    return f"${c:.4f}" if c < 1 else f"${c:,.2f}"


def tokens(usage: Any) -> str:
    if not usage:
        return "—"
    return f"{count(usage.get('input_tokens') or 0)} in / {count(usage.get('output_tokens') or 0)} out"


def size(chars: int) -> str:
    if chars < 1000:
        return f"{chars} characters"
    if chars < 1_000_000:
        return f"{chars / 1000:.1f} k characters"
    return f"{chars / 1_000_000:.1f} M characters"


FILTERS = {
    "pct": pct,
    "signed_pct": signed_pct,
    "when": when,
    "duration": duration,
    "offset": offset,
    "count": count,
    "cost": cost,
    "tokens": tokens,
    "size": size,
}
