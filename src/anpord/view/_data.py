"""What the view shows, as plain data, and the ``ViewData`` protocol that supplies it.

The pages never touch files: they ask a ``ViewData`` for runs, a run's cells, a trial, a cell's
history and the deltas against a baseline. ``FolderViewData`` (``_folders.py``) answers from the
run folders; a run store can answer the same questions from its index, so it plugs in behind
this protocol without the pages changing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Protocol, runtime_checkable

from ..events import Event
from ..results import CellSummary, RunRecord, TrialResult

__all__ = [
    "CellDelta",
    "CellKey",
    "CellRow",
    "HistoryPoint",
    "RunRow",
    "RunView",
    "TrialView",
    "ViewData",
]

CellKey = tuple[str, str]  # (case id, variant label)


@dataclass(frozen=True)
class RunRow:
    """One line of the runs list. ``status`` is the run's own (``running``, ``finished``,
    ``interrupted``, ``crashed``; a ``running`` run whose process is gone shows as ``crashed``),
    or ``unreadable`` with ``error`` saying why (a corrupt ``run.json``, say)."""

    run_id: str
    run_dir: Path
    status: str
    started_at: float | None = None
    finished_at: float | None = None
    totals: Mapping[str, int] = field(default_factory=dict)
    usage: Mapping[str, float | None] = field(default_factory=dict)
    error: str | None = None
    kind: str = "eval"  # RunRecord.run_kind: an audit, a re-run, a cached run… is shown so

    @property
    def measured(self) -> int:
        t = self.totals
        return t.get("trials", 0) - t.get("void", 0) - t.get("skipped", 0)

    @property
    def pass_rate(self) -> float | None:
        """Passed over measured trials (void and skipped excluded); None when none was measured."""
        return self.totals.get("passed", 0) / self.measured if self.measured > 0 else None

    @property
    def outcome(self) -> str:
        """How its trials went, for the status badge: ``healthy`` (every measured trial passed,
        none void), ``mixed`` (some passed), ``unhealthy`` (none passed, or none measured)."""
        t = self.totals
        if self.measured <= 0 or t.get("passed", 0) == 0:
            return "unhealthy"
        if t.get("passed", 0) == self.measured and not t.get("void", 0):
            return "healthy"
        return "mixed"

    @property
    def duration(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return max(0.0, self.finished_at - self.started_at)


@dataclass(frozen=True)
class CellRow:
    """One cell of a run's grid: its distribution and each trial's verdict in trial order
    (``verdicts[i]`` is trial ``i``'s, or None for a planned trial that has not finished)."""

    summary: CellSummary
    verdicts: tuple[str | None, ...]

    @property
    def key(self) -> CellKey:
        return (self.summary.case_id, self.summary.variant)

    @property
    def failing(self) -> bool:
        return self.summary.failed + self.summary.timed_out > 0

    @property
    def has_void(self) -> bool:
        return self.summary.void > 0

    @property
    def flaky(self) -> bool:
        """Measured trials that disagree: the cell is not deterministic."""
        return not self.summary.deterministic


@dataclass(frozen=True)
class RunView:
    """A run as its grid shows it: the row from the runs list, the record of what ran, its cells
    in plan order (those with at least one finished trial), the variants (columns, in order) and
    what could not be read (``problems``: torn or foreign lines, each skipped)."""

    row: RunRow
    record: RunRecord
    cells: Sequence[CellRow]
    variants: Sequence[str]
    problems: Sequence[str] = ()

    @property
    def run_id(self) -> str:
        return self.row.run_id

    @cached_property
    def cell_map(self) -> dict[CellKey, CellRow]:
        """Its cells by key."""
        return {c.key: c for c in self.cells}

    @cached_property
    def stop_reasons(self) -> dict[CellKey, str]:
        """Why each adaptively-run cell stopped, by key (empty for a fixed number of trials)."""
        return {(c.case_id, c.variant): c.stop_reason for c in self.record.cells if c.stop_reason}

    @property
    def case_ids(self) -> list[str]:
        return list(dict.fromkeys(c.summary.case_id for c in self.cells))


@dataclass(frozen=True)
class TrialView:
    """One trial with what its page needs loaded: its events (from its byte range), traceback and
    logs (from its line or the files under ``trials/``), and what could not be read."""

    run: RunRow
    result: TrialResult
    events: Sequence[Event]
    traceback: str | None
    logs: Sequence[str]
    cell_trials: int  # how many trials its cell has finished, for previous/next links
    problems: Sequence[str] = ()


@dataclass(frozen=True)
class HistoryPoint:
    """A cell in one run: when, and how it did. ``pass_rate`` is None when no trial was
    measured (all void or skipped)."""

    run_id: str
    started_at: float
    pass_rate: float | None
    passed: int
    measured: int
    trials: int


@dataclass(frozen=True)
class CellDelta:
    """A cell against its baseline: the baseline run and its pass rate, the change in pass rate
    (``delta``, None when either side measured nothing) and whether the cell regressed.
    ``chosen``: the baseline is one a team set with ``anpord baseline set RUN`` (else it is the
    cell's first reading)."""

    baseline_run_id: str
    baseline_pass_rate: float | None
    delta: float | None
    regressed: bool
    chosen: bool = False


@runtime_checkable
class ViewData(Protocol):
    """Where the view's data comes from. Every method answers from what is on disk now: a run
    deleted since the last call is simply absent (``None``, or left out of a list)."""

    def runs(self) -> Sequence[RunRow]:
        """Every run, newest first, unreadable ones included (with their ``error``)."""
        ...

    def run(self, run_id: str) -> RunView | None:
        """A run's grid data, or None for an unknown run id. An unreadable run is a ``RunView``
        whose ``row.status`` is ``unreadable`` and whose ``cells`` are empty."""
        ...

    def trial(self, run_id: str, case_id: str, variant: str, index: int) -> TrialView | None:
        """One trial with its events, traceback and logs, or None when there is no such trial."""
        ...

    def cell_history(self, case_id: str, variant: str) -> Sequence[HistoryPoint]:
        """The cell in every run that has it, oldest first."""
        ...

    def baseline_deltas(self, run_id: str) -> Mapping[CellKey, CellDelta]:
        """Each cell of the run that has a baseline, against it. Cells without one are absent,
        and so are cells whose baseline is a later run (a run is never compared with one that
        came after it)."""
        ...
