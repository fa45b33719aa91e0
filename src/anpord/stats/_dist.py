"""The few distribution functions the statistics need, in plain ``math``: normal and Student-t
quantiles, and the hypergeometric tail behind Fisher's exact test.

Pure Python on purpose: a run computes a handful of these per cell at its end, and importing
scipy would cost ``anpord`` more start-up time than every figure here put together.
"""

from __future__ import annotations

import functools
import math

__all__ = ["fisher_exact", "normal_cdf", "normal_quantile", "t_quantile"]

# Acklam's rational approximation of the normal quantile (relative error < 1.2e-9): the standard
# library's ``statistics.NormalDist`` would do, but importing ``statistics`` pulls in ``random``,
# ``decimal`` and ``fractions`` — tens of milliseconds at the start of every run that files its
# history, for four constants.
_A = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02,
      1.383577518672690e02, -3.066479806614716e01, 2.506628277459239e00)
_B = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02,
      6.680131188771972e01, -1.328068155288572e01)
_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00,
      -2.549732539343734e00, 4.374664141464968e00, 2.938163982698783e00)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)


def normal_quantile(p: float) -> float:
    if not 0 < p < 1:
        raise ValueError(f"normal_quantile needs 0 < p < 1, got {p}")
    if p < 0.02425 or p > 1 - 0.02425:
        q = math.sqrt(-2 * math.log(p if p < 0.5 else 1 - p))
        x = (((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]) / (
            (((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1
        )
        return x if p < 0.5 else -x
    q = p - 0.5
    r = q * q
    return (((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]) * q / (
        ((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1
    )


def normal_cdf(x: float) -> float:
    return 0.5 * (1 + math.erf(x / math.sqrt(2)))


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
