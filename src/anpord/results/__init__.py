"""Results: the data model of a run, the ``Reporter`` protocol and the built-in reports.

Everything here imports fast (standard library only; ElementTree is loaded when JUnit is written).
"""

from __future__ import annotations

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
from .console import ConsoleReporter
from .json_report import summary_json
from .junit import write_junit

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
