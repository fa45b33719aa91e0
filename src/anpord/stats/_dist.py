"""The few distribution functions the statistics need, in plain ``math``: normal and Student-t
quantiles, and the hypergeometric tail behind Fisher's exact test.

Pure Python on purpose: a run computes a handful of these per cell at its end, and importing
scipy would cost ``anpord`` more start-up time than every figure here put together.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

__all__ = ["fisher_exact", "normal_quantile", "t_quantile"]

_NORMAL = NormalDist()


def normal_quantile(p: float) -> float:
    return _NORMAL.inv_cdf(p)


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile. Exact for 1 and 2 degrees of freedom; above, the Cornish–Fisher
    expansion (Abramowitz & Stegun 26.7.5), within 0.002 of the table at df = 3 and closer above."""
    if df <= 0:
        raise ValueError("t_quantile needs at least one degree of freedom")
    if df == 1:
        return math.tan(math.pi * (p - 0.5))
    if df == 2:
        return (2 * p - 1) / math.sqrt(2 * p * (1 - p))
    z = normal_quantile(p)
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    return z + g1 / df + g2 / df**2 + g3 / df**3 + g4 / df**4


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


@functools.lru_cache(maxsize=4096)  # small counts recur across cells
def fisher_exact(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p-value of Fisher's exact test for ``k1`` of ``n1`` against ``k2`` of ``n2``:
    the probability, with the margins fixed, of a table no likelier than the one observed."""
    total, successes = n1 + n2, k1 + k2
    lo, hi = max(0, successes - n2), min(successes, n1)
    denom = _log_comb(total, successes)

    def log_p(x: int) -> float:
        return _log_comb(n1, x) + _log_comb(n2, successes - x) - denom

    observed = log_p(k1)
    cut = observed + 1e-7  # tables as likely as the observed one, up to rounding, count
    p = sum(math.exp(lp) for lp in (log_p(x) for x in range(lo, hi + 1)) if lp <= cut)
    return min(1.0, p)
