"""A cell's trial count as a user writes it: ``N``, ``"auto"`` or ``"MIN..MAX"``. A module of its
own so that planning and checking a config read it without loading the adaptive allocator
(``_adaptive``), which only a run with a range of trials needs."""

from __future__ import annotations

__all__ = ["AUTO", "MAX_TRIALS_CAP", "parse_trials"]

AUTO = (2, 20)
MAX_TRIALS_CAP = 1000


def parse_trials(value: object) -> int | tuple[int, int]:
    """``N`` (fixed), ``"auto"`` (= 2..20) or ``"MIN..MAX"``; ``ValueError`` with the reason."""
    if isinstance(value, bool):
        raise ValueError(f"expected a positive integer, auto or MIN..MAX, got {value!r}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"expected a positive integer, auto or MIN..MAX, got {value!r}")
        return value
    text = str(value).strip()
    if text == "auto":
        return AUTO
    if ".." in text:
        lo_text, _, hi_text = text.partition("..")
        try:
            lo, hi = int(lo_text), int(hi_text)
        except ValueError:
            raise ValueError(f"expected MIN..MAX with two integers, got {text!r}") from None
        if lo < 1:
            raise ValueError(f"MIN in {text!r} must be at least 1")
        if hi < lo:
            raise ValueError(f"MAX in {text!r} is below MIN")
        if hi > MAX_TRIALS_CAP:
            raise ValueError(f"MAX in {text!r} is above {MAX_TRIALS_CAP}")
        return lo, hi
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"expected a positive integer, auto or MIN..MAX, got {text!r}") from None
    if n < 1:
        raise ValueError(f"expected a positive integer, auto or MIN..MAX, got {text!r}")
    return n
