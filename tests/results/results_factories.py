"""Builders for result objects and terminal-like streams used by the results tests."""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Sequence
from typing import Any

from anpord.results import (
    VERDICTS,
    AssertionRecord,
    ConsoleReporter,
    ErrorInfo,
    PlannedCell,
    RunInfo,
    RunSummary,
    TrialResult,
    summarize_cell,
)

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
RUN_DIR = "/tmp/project/.anpord/runs/20250101-120000-abcdef"


class TTYStringIO(io.StringIO):
    """A StringIO that says it is a terminal (no fileno, so the size falls back to 80×24)."""

    def isatty(self) -> bool:
        return True


def trial(
    case_id: str, verdict: str = "passed", variant: str = "small", n: int = 0, **kw: Any
) -> TrialResult:
    """A trial record. ``error="Type: message"`` (with ``traceback=``) becomes the typed error of a
    raising test; ``artifact=`` names the file its traceback was kept in."""
    error, tb = kw.pop("error", None), kw.pop("traceback", None)
    if error is not None:
        kw["error"] = ErrorInfo("test", error, tb)
    if "artifact" in kw:
        kw["files"] = {"traceback": kw.pop("artifact")}
    return TrialResult(case_id=case_id, variant=variant, trial=n, verdict=verdict, **kw)  # type: ignore[arg-type]


def gate_failure(
    name: str, expected: Any, actual: Any, message: str = "", label: str | None = None
) -> AssertionRecord:
    return AssertionRecord(
        name=name,
        kind="gate",
        status="failed",
        score=0.0,
        expected=expected,
        actual=actual,
        message=message,
        label=label,
    )


def soft_miss(
    name: str, score: float, threshold: float, label: str | None = None
) -> AssertionRecord:
    return AssertionRecord(
        name=name, kind="soft", status="failed", score=score, threshold=threshold, label=label
    )


def summary_for(
    results: Sequence[TrialResult],
    *,
    interrupted: bool = False,
    exit_code: int = 1,
    run_dir: str = RUN_DIR,
) -> RunSummary:
    totals = {v: 0 for v in VERDICTS}
    for r in results:
        totals[r.verdict] += 1
    totals["trials"] = len(results)
    cells: dict[tuple[str, str], list[TrialResult]] = {}
    for r in sorted(results, key=lambda r: r.trial):
        cells.setdefault(r.cell_key, []).append(r)
    return RunSummary(
        run_id="20250101-120000-abcdef",
        run_dir=run_dir,
        totals=totals,
        cells=[summarize_cell(rs) for rs in cells.values()],
        exit_code=exit_code,
        fail_on="failures",
        duration=1.5,
        interrupted=interrupted,
    )


def run_info(
    results: Iterable[TrialResult], trials: int | None = None, run_dir: str = RUN_DIR
) -> RunInfo:
    counts: dict[tuple[str, str], int] = {}
    for r in results:
        counts[r.cell_key] = max(counts.get(r.cell_key, 0), r.trial + 1)
    variants = list(dict.fromkeys(v for _, v in counts))
    cells = [PlannedCell(c, v, trials or n) for (c, v), n in counts.items()]
    return RunInfo(run_id="20250101-120000-abcdef", run_dir=run_dir, variants=variants, cells=cells)


def feed(
    reporter: ConsoleReporter,
    results: Sequence[TrialResult],
    *,
    info: RunInfo | None = None,
    logs: dict[str, list[str]] | None = None,
    summary: RunSummary | None = None,
) -> RunSummary:
    """Drive a reporter through a whole run the way the runner does."""
    reporter.on_run_start(info or run_info(results))
    for r in results:
        reporter.on_trial_start(r.case_id, r.variant, r.trial)
        for line in (logs or {}).get(r.case_id, []):
            reporter.on_log(r.case_id, r.variant, r.trial, line)
        reporter.on_trial_end(r)
    summary = summary or summary_for(results)
    reporter.on_run_end(summary, results)
    return summary
