"""``AssertionHandle``: what every assertion returns, to adjust how its record counts."""

from __future__ import annotations

from typing import Any

from ..results._model import AssertionRecord

__all__ = ["AssertionHandle", "decide_status"]

# Float scores (similarity ratios, judge averages) should not miss a threshold by rounding noise.
_EPSILON = 1e-9


def decide_status(record: AssertionRecord) -> None:
    """Set ``record.status`` from its score and threshold. ``error`` and ``void`` are final:
    an assertion that raised, or could not measure, never turns into a pass."""
    if record.status in ("error", "void"):
        return
    threshold = record.threshold
    passed = threshold is None or record.score >= threshold - _EPSILON
    record.status = "passed" if passed else "failed"


def _check_threshold(threshold: float | None) -> float | None:
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise TypeError(f"a threshold is a number between 0 and 1, not {threshold!r}")
    if not 0 <= threshold <= 1:
        raise ValueError(f"a threshold is a number between 0 and 1, not {threshold!r}")
    return float(threshold)


class AssertionHandle:
    """Wraps one recorded ``AssertionRecord``; every method returns the handle, so calls chain:
    ``t.check(t.reply, similarity("Sunny")).at_least(0.8).label("close to the forecast")``."""

    __slots__ = ("record",)

    def __init__(self, record: AssertionRecord) -> None:
        self.record = record

    def gate(self, threshold: float = 1) -> AssertionHandle:
        """Make it a gate: the trial fails unless the score reaches ``threshold`` (default 1)."""
        self.record.kind = "gate"
        self.record.threshold = _check_threshold(threshold)
        decide_status(self.record)
        return self

    def soft(self, threshold: float | None = None) -> AssertionHandle:
        """Make it soft: below ``threshold`` the trial is ``scored`` rather than failed.
        With no threshold the score is only recorded."""
        self.record.kind = "soft"
        self.record.threshold = _check_threshold(threshold)
        decide_status(self.record)
        return self

    def at_least(self, threshold: float) -> AssertionHandle:
        """The same as ``.soft(threshold)``."""
        return self.soft(threshold)

    def label(self, name: str) -> AssertionHandle:
        """Name the assertion in reports."""
        self.record.label = str(name)
        return self

    # Read-only views, for tests that branch on a check's outcome.
    @property
    def passed(self) -> bool:
        return self.record.status == "passed"

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def score(self) -> float:
        return self.record.score

    @property
    def message(self) -> str:
        return self.record.message

    def _settle(
        self,
        score: float | None = None,
        *,
        status: str | None = None,
        message: str | None = None,
        actual: Any = None,
    ) -> AssertionHandle:
        """For checks measured after the handle was returned (judges): fill in the outcome.

        ``status`` may be ``"void"`` (could not measure) or ``"error"`` (raised); otherwise the
        status follows from ``score`` and the threshold the user may already have set. A pending
        check is best recorded as ``void`` until it settles, so a lost one never counts as passed.
        """
        rec = self.record
        if score is not None:
            rec.score = max(0.0, min(1.0, float(score)))
        if message is not None:
            rec.message = message
        if actual is not None:
            rec.actual = actual
        if status in ("void", "error"):
            rec.status = status  # type: ignore[assignment]
        elif status is not None:
            raise ValueError(f"status must be 'void' or 'error', not {status!r}")
        else:
            rec.status = "passed"  # provisional, even over a pending "void": decide_status settles
            decide_status(rec)
        return self

    def __repr__(self) -> str:
        r = self.record
        bar = "" if r.threshold is None else f" threshold={r.threshold:g}"
        return f"<AssertionHandle {r.display_name} {r.kind} {r.status} score={r.score:.3g}{bar}>"
