"""An anytime-valid confidence sequence for a mean of bounded observations.

Robbins' normal mixture (Howard, Ramdas, McAuliffe & Sekhon, "Time-uniform, nonparametric,
nonasymptotic confidence sequences", 2021, eq. 14): for observations in an interval of width
``w`` (sub-Gaussian with σ = w/2), with probability at least 1 - α the running mean stays within

    radius(t) = sqrt((t σ² + ρ) · log((t σ² + ρ) / (ρ α²))) / t

of the true mean *at every t at once*. That is what lets adaptive trials look after every trial
and stop the moment the question is decided without inflating the error; a fixed-n interval
checked after every trial would not hold. ``ρ`` tunes the trial count where the sequence is
tightest; ``rho_for`` puts it at the expected number of trials.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["ConfidenceSequence", "radius", "rho_for"]


def rho_for(trials: int, alpha: float, sigma: float) -> float:
    """The mixture parameter that makes the sequence tightest near ``trials`` (Howard et al.,
    eq. 17's approximation)."""
    la = 2 * math.log(1 / alpha) + math.log(1 + 2 * math.log(1 / alpha))
    return sigma * sigma * trials / max(la - 1, 1e-9)


def radius(t: int, alpha: float, sigma: float, rho: float) -> float:
    """The half-width around the running mean after ``t`` observations (infinite at t = 0)."""
    if t <= 0:
        return math.inf
    v = t * sigma * sigma + rho
    return math.sqrt(v * math.log(v / (rho * alpha * alpha))) / t


@dataclass
class ConfidenceSequence:
    """Running mean of observations in [low, high], with its anytime-valid interval."""

    alpha: float = 0.05
    low: float = 0.0
    high: float = 1.0
    tuned_for: int = 10
    t: int = 0
    total: float = 0.0

    def add(self, x: float) -> None:
        self.t += 1
        self.total += x

    @property
    def sigma(self) -> float:
        return (self.high - self.low) / 2

    @property
    def mean(self) -> float | None:
        return self.total / self.t if self.t else None

    def interval(self) -> tuple[float, float]:
        if not self.t:
            return self.low, self.high
        r = radius(self.t, self.alpha, self.sigma, rho_for(self.tuned_for, self.alpha, self.sigma))
        m = self.total / self.t
        return max(self.low, m - r), min(self.high, m + r)
