"""Planning: the smallest change a comparison can detect, and what it takes to detect a given one.

For a paired comparison of a variant over ``C`` cases at ``k`` trials a case, the per-case
difference has variance (Miller, "Adding Error Bars to Evals", 2024, §4.2 and §5)

    Var(d) = 2·σ²_between·(1 − ρ) + 2·σ²_within / k

where σ²_between is the spread of the cases' true pass rates, ρ the correlation of a case's rate
between the two runs, and σ²_within / k the trial noise of one case's rate at k trials (the mean
of p(1 − p) over the cases, for Bernoulli trials). The standard error of the mean difference is
sqrt(Var(d) / C), and a two-sided test at α with power 1 − β detects

    MDE = (z_{1−α/2} + z_{1−β}) · SE.

Read off a run: σ²_within from its cells (p(1 − p) with the small-sample correction k/(k − 1)),
σ²_between as the spread of the per-case rates less the trial noise in it, ρ from a comparison
when there is one (else 0.5, a middle guess, said so).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ._dist import normal_quantile

__all__ = ["Plan", "plan_variant"]

POWER = 0.8
MAX_CASES = 100_000
MAX_TRIALS = 10_000


@dataclass(frozen=True)
class Plan:
    variant: str
    cases: int
    trials: float  # mean measured trials a case
    between: float  # σ² between cases' true pass rates
    within: float  # mean p(1 − p): one trial's noise
    correlation: float
    correlation_observed: bool
    mde: float  # the detectable change at this run's size
    effect: float | None = None
    trials_needed: int | None = None  # a case, at this many cases (None: more trials cannot do it)
    cases_needed: int | None = None  # at this many trials a case

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "cases": self.cases,
            "trials": self.trials,
            "between_variance": self.between,
            "within_variance": self.within,
            "correlation": self.correlation,
            "correlation_observed": self.correlation_observed,
            "mde": self.mde,
            "effect": self.effect,
            "trials_needed": self.trials_needed,
            "cases_needed": self.cases_needed,
        }


def _se(between: float, within: float, rho: float, cases: int, trials: float) -> float:
    return math.sqrt(max(2 * between * (1 - rho) + 2 * within / trials, 0.0) / cases)


def plan_variant(
    variant: str,
    cells: Sequence[tuple[int, int]],
    *,
    effect: float | None = None,
    correlation: float | None = None,
    alpha: float = 0.05,
    power: float = POWER,
) -> Plan | None:
    """``cells``: (passed, measured) of each case. ``None`` when no case measured two trials
    (no trial noise can be read off)."""
    measured = [(k, n) for k, n in cells if n > 0]
    if not measured:
        return None
    rates = [k / n for k, n in measured]
    c = len(rates)
    trials = sum(n for _, n in measured) / c
    noise = [(k / n) * (1 - k / n) * n / (n - 1) for k, n in measured if n > 1]
    within = sum(noise) / len(noise) if noise else sum(r * (1 - r) for r in rates) / c
    mean = sum(rates) / c
    spread = sum((r - mean) ** 2 for r in rates) / (c - 1) if c > 1 else 0.0
    between = max(spread - within / trials, 0.0)
    rho = 0.5 if correlation is None else max(min(correlation, 0.999), -0.999)
    z = normal_quantile(1 - alpha / 2) + normal_quantile(power)
    mde = z * _se(between, within, rho, c, trials)
    trials_needed = cases_needed = None
    if effect is not None and effect > 0:
        target = (effect / z) ** 2  # the SE² that detects ``effect``
        shared = 2 * between * (1 - rho)  # what more trials cannot shrink
        if c * target > shared:
            k = 2 * within / (c * target - shared) if within > 0 else 1.0
            trials_needed = min(MAX_TRIALS, max(1, math.ceil(k)))
        per_case = shared + 2 * within / trials
        cases_needed = min(MAX_CASES, max(2, math.ceil(per_case / target)))
    return Plan(variant, c, trials, between, within, rho, correlation is not None, mde, effect,
                trials_needed, cases_needed)
