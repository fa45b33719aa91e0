"""Token counts and costs an agent reports, checked where they enter a record.

An agent's ``usage`` events carry whatever numbers it sends: ``Infinity``, ``NaN``, ``1e308`` (two
of which sum to infinity), ``1e30`` tokens, a negative count. None of those is a measurement, and
each would break something downstream (JSON has no infinity; SQLite holds integers up to 2**63).
So a value is kept only when it is a finite, non-negative number below a bound no real trial
reaches; anything else is left out of the totals, and the trial's log says so.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["MAX_COST", "MAX_TOKENS", "clean_usage", "sum_usage", "valid_number"]

# Per trial. A trillion tokens or a million dollars is no trial's real usage; a run of a million
# trials at these bounds still sums well inside SQLite's 64-bit integers.
MAX_TOKENS = 10**12
MAX_COST = 1e6
_BOUNDS = {"input_tokens": MAX_TOKENS, "output_tokens": MAX_TOKENS, "cost": MAX_COST}


def valid_number(key: str, value: Any) -> bool:
    """Whether ``value`` is a plausible ``key`` (``input_tokens``, ``output_tokens``, ``cost``)."""
    if type(value) is int:  # the usual count, checked without the float (every trial's usage)
        return 0 <= value <= _BOUNDS.get(key, MAX_TOKENS)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        number = float(value)
    except OverflowError:  # an integer past a float's range
        return False
    return math.isfinite(number) and 0 <= number <= _BOUNDS.get(key, MAX_TOKENS)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def sum_usage(events_data: Iterable[Mapping[str, Any]]) -> tuple[dict[str, float | None], list[str]]:
    """The totals of a trial's ``usage`` events, and a note for each value left out.

    Tokens: the sum of the valid counts (one given only as invalid counts nothing). Cost:
    unknown (``None``) as soon as one model call has no known, valid price."""
    total: dict[str, float | None] = {}
    notes: list[str] = []
    for data in events_data:
        for key in ("input_tokens", "output_tokens"):
            v = data.get(key)
            if v is None:
                continue
            if not valid_number(key, v):
                notes.append(f"usage: {key} {_shown(v)} is not a plausible count (0 to {MAX_TOKENS:g}): not counted")
                continue
            total[key] = (total.get(key) or 0) + v
        cost = data.get("cost")
        known = valid_number("cost", cost)
        if cost is not None and not known:
            notes.append(f"usage: cost {_shown(cost)} is not a plausible price (0 to {MAX_COST:g}): the cost is unknown")
        if "cost" not in total:
            total["cost"] = cost if known else None
        elif total["cost"] is not None:
            total["cost"] = total["cost"] + cost if known else None  # type: ignore[operator]
    for key, bound in _BOUNDS.items():
        v = total.get(key)
        if v is not None and v > bound:  # valid parts that add up past the bound
            notes.append(f"usage: {key} adds up to {v:g}, past {bound:g}: kept as unknown")
            total[key] = None
    return total, notes


# What a run's totals may reach, read back: past it, SQLite's integers would overflow.
_RUN_BOUND = float(2**62)


def clean_usage(raw: Any, *, run: bool = False) -> dict[str, Any]:
    """A record's usage as read back (a run folder written by anything): a trial's values that
    are not plausible (a run's totals that are not finite or past 2**62) become ``None``, so
    history commands never meet an infinity or an integer SQLite cannot hold."""
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, Any] = {}
    for key, v in raw.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            ok = _finite_below(v, _RUN_BOUND) if run or key not in _BOUNDS else valid_number(key, v)
            out[key] = v if ok else None
        else:
            out[key] = v if v is None or key not in _BOUNDS else None
    return out


def _finite_below(value: float, bound: float) -> bool:
    try:
        return math.isfinite(float(value)) and abs(value) <= bound
    except OverflowError:
        return False
