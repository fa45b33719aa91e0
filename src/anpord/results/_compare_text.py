"""How a comparison reads in one line: a variant's change in mean pass rate. Here, below the
store that computes comparisons, because the console and the Markdown summary print them too."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..stats import VariantChange

__all__ = ["pct", "signed", "variant_detail"]


def pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate:.0%}"


def signed(x: float) -> str:
    return f"{x:+.2f}".replace("-", "−")


def variant_detail(v: VariantChange) -> str:
    """``mean pass rate 95% → 76%, Δ −0.19 [−0.30, −0.08] over 50 shared cases, r = 0.41``"""
    if v.delta is None or v.ci_low is None or v.ci_high is None:
        text = v.why or "nothing to compare"
    else:
        r = f", r = {v.correlation:.2f}" if v.correlation is not None else ""
        text = (
            f"mean pass rate {pct(v.base_mean)} → {pct(v.candidate_mean)}, "
            f"Δ {signed(v.delta)} [{signed(v.ci_low)}, {signed(v.ci_high)}] over {v.cases} "
            f"shared case{'s' if v.cases != 1 else ''}{r}"
        )
    if v.dropped:
        text += f"; {v.dropped} case{'s' if v.dropped != 1 else ''} not on both sides left out"
    return text
