"""The result data model: run → cells (case × variant) → trials → assertions and events."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

__all__ = [
    "Verdict",
    "VERDICTS",
    "AssertionRecord",
    "TrialResult",
    "CellSummary",
    "RunSummary",
    "summarize_cell",
    "pass_at_k",
    "pass_hat_k",
]

Verdict = Literal["passed", "scored", "failed", "timed_out", "void", "skipped"]
VERDICTS: tuple[Verdict, ...] = ("passed", "scored", "failed", "timed_out", "void", "skipped")


@dataclass
class AssertionRecord:
    """One recorded check.

    ``kind`` is ``gate`` or ``soft``. ``score`` is 0–1; a gate passes when ``score >= threshold``
    (threshold 1 by default), a soft check "misses" when below its threshold (None: never misses).
    ``status`` is ``passed``/``failed`` or ``void`` (could not measure) or ``error`` (raised).
    """

    name: str
    kind: Literal["gate", "soft"]
    status: Literal["passed", "failed", "void", "error"]
    score: float
    threshold: float | None = 1.0
    expected: Any = None
    actual: Any = None
    message: str = ""
    label: str | None = None
    scope: str = "run"

    @property
    def display_name(self) -> str:
        return self.label or self.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "kind": self.kind,
            "status": self.status,
            "score": self.score,
            "threshold": self.threshold,
            "expected": self.expected,
            "actual": self.actual,
            "message": self.message,
            "scope": self.scope,
        }


@dataclass
class TrialResult:
    """One finished trial: what ``results.jsonl`` holds a line of."""

    case_id: str
    variant: str
    trial: int  # 0-based index within the cell
    verdict: Verdict
    reason: str = ""  # why it failed / was void / skipped, one line
    duration: float = 0.0
    assertions: list[AssertionRecord] = field(default_factory=list)
    score: float | None = None  # mean of soft scores, when any
    error: str | None = None  # one-line error; the traceback goes to the artifact
    traceback: str | None = None
    logs: list[str] = field(default_factory=list)
    usage: dict[str, float] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    file: str | None = None
    artifact: str | None = None  # relative path of the trial's JSON artifact
    started_at: float = 0.0

    @property
    def cell_key(self) -> tuple[str, str]:
        return (self.case_id, self.variant)

    def to_line(self) -> dict[str, Any]:
        """The compact ``results.jsonl`` form (no events, no traceback)."""
        return {
            "case_id": self.case_id,
            "variant": self.variant,
            "trial": self.trial,
            "verdict": self.verdict,
            "reason": self.reason,
            "duration": round(self.duration, 6),
            "score": self.score,
            "error": self.error,
            "assertions": [a.to_dict() for a in self.assertions],
            "usage": self.usage,
            "tags": list(self.tags),
            "file": self.file,
            "artifact": self.artifact,
        }


@dataclass
class CellSummary:
    case_id: str
    variant: str
    trials: int
    passed: int
    scored: int
    failed: int
    timed_out: int
    void: int
    skipped: int
    pass_rate: float | None  # over measured trials (void and skipped excluded)
    pass_at_k: float | None
    pass_hat_k: float | None
    deterministic: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k draws (without replacement) from n trials passes."""
    if n <= 0 or k <= 0 or k > n:
        return float("nan")
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Probability that all of k draws pass (pass^k)."""
    if n <= 0 or k <= 0 or k > n:
        return float("nan")
    return math.comb(c, k) / math.comb(n, k)


def summarize_cell(results: Sequence[TrialResult]) -> CellSummary:
    first = results[0]
    counts = {v: 0 for v in VERDICTS}
    for r in results:
        counts[r.verdict] += 1
    measured = len(results) - counts["void"] - counts["skipped"]
    passed = counts["passed"]
    rate = passed / measured if measured else None
    k = measured
    verdicts = {r.verdict for r in results if r.verdict not in ("void", "skipped")}
    return CellSummary(
        case_id=first.case_id,
        variant=first.variant,
        trials=len(results),
        passed=passed,
        scored=counts["scored"],
        failed=counts["failed"],
        timed_out=counts["timed_out"],
        void=counts["void"],
        skipped=counts["skipped"],
        pass_rate=rate,
        pass_at_k=pass_at_k(measured, passed, k) if k else None,
        pass_hat_k=pass_hat_k(measured, passed, k) if k else None,
        deterministic=len(verdicts) <= 1,
    )


@dataclass
class RunSummary:
    run_id: str
    run_dir: str
    totals: dict[str, int]
    cells: list[CellSummary]
    exit_code: int
    fail_on: str
    duration: float
    interrupted: bool = False

    def closing_line(self) -> str:
        """``N passed, N failed`` (+ scored/void/skipped when non-zero). Timed-out counts as failed."""
        t = self.totals
        parts = [f"{t.get('passed', 0)} passed", f"{t.get('failed', 0) + t.get('timed_out', 0)} failed"]
        for key in ("scored", "void", "skipped"):
            if t.get(key):
                parts.append(f"{t[key]} {key}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_dir": self.run_dir,
            "totals": self.totals,
            "cells": [c.to_dict() for c in self.cells],
            "exit_code": self.exit_code,
            "fail_on": self.fail_on,
            "duration": round(self.duration, 4),
            "interrupted": self.interrupted,
        }
