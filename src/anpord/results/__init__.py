"""Results: the data model of a run, the ``Reporter`` protocol and the built-in reports.

The reports (console, JUnit, JSON) load on first use, so importing the data model stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._model import (
    VERDICTS,
    AssertionRecord,
    CellSummary,
    RunSummary,
    TrialResult,
    Verdict,
    summarize_cell,
)
from ._reporter import PlannedCell, Reporter, RunInfo

if TYPE_CHECKING:  # pragma: no cover
    from .console import ConsoleReporter as ConsoleReporter
    from .json_report import summary_json as summary_json
    from .junit import write_junit as write_junit

_LAZY = {"ConsoleReporter": ".console", "summary_json": ".json_report", "write_junit": ".junit"}

__all__ = [
    "VERDICTS",
    "AssertionRecord",
    "CellSummary",
    "ConsoleReporter",
    "PlannedCell",
    "Reporter",
    "RunInfo",
    "RunSummary",
    "TrialResult",
    "Verdict",
    "summarize_cell",
    "summary_json",
    "write_junit",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'anpord.results' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value
