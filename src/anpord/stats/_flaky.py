"""Flakiness across runs: a cell's readings over its history (the same case content, harness
and model) pooled into a flake rate with an interval.

The flake rate is the share of the minority outcome over every measured trial of the history —
a cell that passes 90% of its trials flakes 10% of the time, one that never fails or never passes
does not flake at all. Its interval is Wilson's on that count. A cell is flaky when its history
has seen both outcomes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._estimate import wilson

__all__ = ["FlakeEstimate", "Reading", "flake_estimate"]


@dataclass(frozen=True)
class Reading:
    """One run's reading of a cell: ``passed`` of ``n`` measured trials."""

    run_id: str
    passed: int
    n: int


@dataclass(frozen=True)
class FlakeEstimate:
    case_id: str
    variant: str
    runs: int
    passed: int
    n: int
    pass_rate: float | None
    flake_rate: float | None
    ci_low: float | None
    ci_high: float | None
    readings: tuple[Reading, ...]

    @property
    def flaky(self) -> bool:
        return 0 < self.passed < self.n

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "variant": self.variant,
            "runs": self.runs,
            "passed": self.passed,
            "n": self.n,
            "pass_rate": self.pass_rate,
            "flake_rate": self.flake_rate,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "flaky": self.flaky,
            "readings": [{"run_id": r.run_id, "passed": r.passed, "n": r.n} for r in self.readings],
        }


def flake_estimate(case_id: str, variant: str, readings: Sequence[Reading]) -> FlakeEstimate:
    measured = [r for r in readings if r.n > 0]
    passed, n = sum(r.passed for r in measured), sum(r.n for r in measured)
    minority = min(passed, n - passed)
    ci = wilson(minority, n)
    return FlakeEstimate(
        case_id,
        variant,
        len(measured),
        passed,
        n,
        passed / n if n else None,
        minority / n if n else None,
        ci.low if ci else None,
        ci.high if ci else None,
        tuple(measured),
    )
