"""Deciding a trial's verdict from what happened (DESIGN §4, "Verdict, in order")."""

from __future__ import annotations

from typing import Sequence

from .._errors import exception_line
from ..results._model import AssertionRecord, Verdict

__all__ = ["decide_verdict", "exception_line", "CHECKED_NOTHING"]

CHECKED_NOTHING = "this case checked nothing"


def _describe(rec: AssertionRecord) -> str:
    text = rec.display_name
    if rec.message:
        text += f": {rec.message}"
    return text


def decide_verdict(
    *,
    skipped: str | None,
    void_reason: str | None,
    timed_out: str | None,
    execution_error: str | None,
    records: Sequence[AssertionRecord],
) -> tuple[Verdict, str]:
    """Returns the verdict and a one-line reason (empty when passed)."""
    if skipped is not None:
        return "skipped", skipped
    if void_reason is not None:
        return "void", void_reason
    if timed_out is not None:
        return "timed_out", timed_out
    if execution_error is not None:
        return "failed", execution_error
    # An assertion that raised never passes, whatever its kind.
    for rec in records:
        if rec.status == "error":
            return "failed", f"{rec.display_name} raised: {rec.message}"
    for rec in records:
        if rec.kind == "gate" and rec.status == "failed":
            return "failed", _describe(rec)
    if not records:
        return "failed", CHECKED_NOTHING
    for rec in records:
        if rec.status == "void":
            return "void", _describe(rec)
    for rec in records:
        if rec.kind == "soft" and rec.status == "failed":
            threshold = f" < {rec.threshold:g}" if rec.threshold is not None else ""
            return "scored", f"{rec.display_name} scored {rec.score:.2f}{threshold}"
    return "passed", ""
