"""The ``Reporter`` protocol: how a run tells the world what is happening."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, Sequence, runtime_checkable

from ._model import RunSummary, TrialResult

__all__ = ["Reporter", "RunInfo", "PlannedCell"]


@dataclass(frozen=True)
class PlannedCell:
    case_id: str
    variant: str
    trials: int
    file: str | None = None


@dataclass
class RunInfo:
    run_id: str
    run_dir: str
    variants: list[str]
    cells: list[PlannedCell] = field(default_factory=list)

    @property
    def total_trials(self) -> int:
        return sum(c.trials for c in self.cells)

    @property
    def case_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for c in self.cells:
            seen.setdefault(c.case_id, None)
        return list(seen)


@runtime_checkable
class Reporter(Protocol):
    """Every method is called from the runner's event loop thread; keep them quick."""

    def on_run_start(self, run: RunInfo) -> None: ...

    def on_trial_start(self, case_id: str, variant: str, trial: int) -> None: ...

    def on_log(self, case_id: str, variant: str, trial: int, message: str) -> None: ...

    def on_trial_end(self, result: TrialResult) -> None: ...

    def on_run_end(self, summary: RunSummary, results: Sequence[TrialResult]) -> None: ...
