"""The flags that say how a comparison judges a change, shared by ``eval`` and ``compare``:
``--regression-threshold`` (a cell's margin), ``--variant-margin`` and ``--alpha``."""

from __future__ import annotations

import argparse

__all__ = ["add_judging", "alpha", "margin", "threshold"]


def _fraction(text: str, what: str, *, upper_open: bool = False) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (0 < value < 1 if upper_open else 0 < value <= 1):
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def threshold(text: str) -> float:
    return _fraction(text, "a pass-rate difference between 0 and 1")


def margin(text: str) -> float:
    return _fraction(text, "a pass-rate difference between 0 and 1")


def alpha(text: str) -> float:
    return _fraction(text, "a significance level between 0 and 1, such as 0.05", upper_open=True)


def add_judging(p: argparse.ArgumentParser, *, defaults: bool = True) -> None:
    """``defaults`` False leaves unset flags None (``eval --resume`` keeps the run's own)."""
    p.add_argument(
        "--regression-threshold",
        type=threshold,
        default=0.2 if defaults else None,
        metavar="D",
        help="a cell is unchanged when its change's 95%% interval lies within ±D (default 0.2)",
    )
    p.add_argument(
        "--variant-margin",
        type=margin,
        default=0.05 if defaults else None,
        metavar="D",
        help="a variant is unchanged when its paired change's interval lies within ±D (default 0.05)",
    )
    p.add_argument(
        "--alpha",
        type=alpha,
        default=0.05 if defaults else None,
        metavar="A",
        help="the chance of any false regression in a comparison, Holm-corrected (default 0.05)",
    )
