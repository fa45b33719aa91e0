"""Results: the records of a run, reading them back, the ``Reporter`` protocol and the reports.

``read_run(path | run id | prefix | "latest")`` reads a run folder as typed records. The reports
(console, JUnit, JSON) load on first use, so importing the records stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ._model import (
    FORMAT_VERSION,
    VERDICTS,
    AssertionRecord,
    CellSummary,
    ErrorInfo,
    EventsRef,
    Judgment,
    RecordError,
    RunSummary,
    TrialResult,
    Verdict,
    summarize_cell,
)
from ._redact import Redactor
from ._reporter import PlannedCell, Reporter, ReporterBase, RunInfo
from ._run_record import DERIVED_KINDS, CellRecord, RunRecord

if TYPE_CHECKING:  # pragma: no cover
    from ._reader import RunReading as RunReading
    from ._reader import read_run as read_run
    from .console import ConsoleReporter as ConsoleReporter
    from .json_report import summary_json as summary_json
    from .junit import write_junit as write_junit

_LAZY = {
    "ConsoleReporter": ".console",
    "summary_json": ".json_report",
    "write_junit": ".junit",
    "read_run": "._reader",
    "RunReading": "._reader",
}

__all__ = [
    "FORMAT_VERSION",
    "VERDICTS",
    "AssertionRecord",
    "CellRecord",
    "CellSummary",
    "ConsoleReporter",
    "ErrorInfo",
    "EventsRef",
    "Judgment",
    "PlannedCell",
    "RecordError",
    "Redactor",
    "Reporter",
    "ReporterBase",
    "RunInfo",
    "RunReading",
    "RunRecord",
    "DERIVED_KINDS",
    "RunSummary",
    "TrialResult",
    "Verdict",
    "read_run",
    "summarize_cell",
    "summary_json",
    "write_junit",
]


__getattr__ = lazy_names(__name__, _LAZY)
