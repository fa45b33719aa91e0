"""A cell's pass rate over runs as an inline SVG line chart: plain geometry, no chart library.

Runs are spaced evenly left to right, oldest first (runs bunch up in time: a day of many runs,
then a quiet week, would leave most points on top of each other on a time axis). A run whose
trials of the cell were all void or skipped has no pass rate: it keeps its place on the axis and
is drawn as a hollow mark on the baseline, without joining the line. Each measured point has a
whisker: the 95% Wilson interval of its pass rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._data import HistoryPoint

__all__ = ["Chart", "ChartPoint", "chart"]

WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 16, 12, 28


@dataclass(frozen=True)
class ChartPoint:
    x: float
    y: float
    point: HistoryPoint
    measured: bool
    current: bool
    y_low: float | None = None  # the whisker: the 95% interval's ends (None: nothing measured)
    y_high: float | None = None


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    points: Sequence[ChartPoint]
    line: str  # the polyline's points through measured runs: "x,y x,y ..."
    grid: Sequence[tuple[float, str]]  # (y, label) for 0 %, 50 %, 100 %
    left: int
    right: float
    bottom: float


def _y(rate: float) -> float:
    return TOP + (1.0 - rate) * (HEIGHT - TOP - BOTTOM)


def chart(history: Sequence[HistoryPoint], current_run: str | None = None) -> Chart:
    from ..stats import wilson

    inner = WIDTH - LEFT - RIGHT
    step = inner / (len(history) - 1) if len(history) > 1 else 0.0
    points = []
    for i, p in enumerate(history):
        x = LEFT + (step * i if len(history) > 1 else inner / 2)
        measured = p.pass_rate is not None
        y = _y(p.pass_rate if p.pass_rate is not None else 0.0)
        ci = wilson(p.passed, p.measured) if measured else None
        points.append(ChartPoint(
            round(x, 1), round(y, 1), p, measured, p.run_id == current_run,
            round(_y(ci.low), 1) if ci else None, round(_y(ci.high), 1) if ci else None,
        ))
    line = " ".join(f"{p.x},{p.y}" for p in points if p.measured)
    grid = [(round(_y(r), 1), f"{int(r * 100)}%") for r in (0.0, 0.5, 1.0)]
    return Chart(WIDTH, HEIGHT, points, line, grid, LEFT, WIDTH - RIGHT, HEIGHT - BOTTOM)
