"""The view's figures with their uncertainty: a 95% interval as a page shows it, each variant's
estimate for a run's header and grid, and the interval of each point of a cell's chart."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["FILTERS", "variant_estimates"]


def interval(passed: int, n: int) -> str:
    """``[21–94%]`` for ``passed`` of ``n`` measured trials (Wilson); empty when nothing was."""
    from ..stats import wilson

    ci = wilson(passed, n)
    return "" if ci is None else f"[{ci.low * 100:.0f}–{ci.high * 100:.0f}%]"


def span(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{low * 100:.0f}–{high * 100:.0f}%]"


def variant_estimates(cells: Iterable[Any]) -> dict[str, Any]:
    """variant → ``anpord.stats.VariantEstimate`` over the run's cells (``CellSummary`` each)."""
    from ..stats import estimate_variant

    by_variant: dict[str, list[Any]] = {}
    for s in cells:
        by_variant.setdefault(s.variant, []).append(s)
    return {
        v: estimate_variant(
            [(s.passed, s.measured) for s in mine],
            trials=sum(s.trials for s in mine),
            void=sum(s.void for s in mine),
        )
        for v, mine in by_variant.items()
    }


FILTERS = {"interval": interval, "span": span}
