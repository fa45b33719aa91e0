"""Token and cost figures as anpord records them, the same for every CLI.

A ``usage`` event holds ``input_tokens`` (every prompt token the model read, cached or not),
``output_tokens`` (every token it wrote, reasoning included where the CLI counts it apart) and
``cost`` (US dollars), each None when the CLI did not report it — never a made-up 0. The cached
share is in ``cached_input_tokens`` (read from cache) and ``cache_write_input_tokens``, reasoning in
``reasoning_output_tokens``, when the CLI reports them.

A cost of 0 next to a non-zero token count is taken as "no price known" (OpenCode reports 0 for a
model it has no price for) and recorded as None.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...events import USAGE, Event

__all__ = ["UsageMeter", "usage_event"]

TOKEN_KEYS = (
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "cache_write_input_tokens",
    "reasoning_output_tokens",
)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def usage_event(
    *,
    input_tokens: Any = None,
    output_tokens: Any = None,
    cost: Any = None,
    **details: Any,
) -> Event | None:
    """A ``usage`` event from a CLI's figures, or None when it reported none of them."""
    data: dict[str, Any] = {
        "input_tokens": _number(input_tokens),
        "output_tokens": _number(output_tokens),
        "cost": _number(cost),
    }
    for key in TOKEN_KEYS[2:]:
        value = _number(details.get(key))
        if value is not None:
            data[key] = value
    if data["cost"] == 0 and any(data[k] for k in ("input_tokens", "output_tokens")):
        data["cost"] = None
    if all(v is None for v in data.values()):
        return None
    return Event(USAGE, data)


class UsageMeter:
    """Sums the ``usage`` events a parser emitted, for ``TurnEnd.usage`` (a summary of those
    events: whoever records the events must not add these figures again)."""

    def __init__(self) -> None:
        self._totals: dict[str, float] = {}

    def record(self, event: Event | None) -> list[Event]:
        if event is None:
            return []
        for key in (*TOKEN_KEYS, "cost"):
            value = event.data.get(key)
            if isinstance(value, (int, float)):
                self._totals[key] = self._totals.get(key, 0) + value
        return [event]

    def totals(self) -> dict[str, float]:
        return dict(self._totals)


def difference(now: Mapping[str, Any], before: Mapping[str, Any] | None) -> dict[str, Any]:
    """``now - before`` for running totals a CLI reports (a thread's tokens so far). When any
    figure went down, ``now`` is not a continuation of ``before`` (a fresh count) and is returned
    whole."""
    if not before:
        return dict(now)
    out: dict[str, Any] = {}
    for key, value in now.items():
        prior = before.get(key)
        if isinstance(value, (int, float)) and isinstance(prior, (int, float)):
            if value < prior:
                return dict(now)
            out[key] = value - prior
        else:
            out[key] = value
    return out
