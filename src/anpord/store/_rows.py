"""What the store holds, as plain typed rows: what the commands print and a web view serves.

Every row has ``to_dict()`` (JSON-ready). The rows are built from the result records
(``RunRecord``, ``CellSummary``, ``TrialResult``) by the functions here, so the live writer and
``anpord db rebuild`` file a run the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..results._model import VERDICTS, CellSummary, TrialResult, pass_at_k, pass_hat_k
from ..results._run_record import CellRecord, RunRecord
from ._columns import CELL_COLUMNS, COUNTS, NO_NUMBER, NO_TEXT, NULLED, RUN_COLUMNS, TRIAL_COLUMNS

__all__ = [
    "CellRow",
    "RunRow",
    "TrialRow",
    "cell_row",
    "cell_tuple",
    "run_row",
    "run_tuple",
    "trial_row",
    "trial_tuple",
]


@dataclass(frozen=True)
class RunRow:
    """One run: when, how it ended, its totals."""

    run_id: str
    status: str
    started_at: float
    finished_at: float | None
    host: str | None
    run_dir: str | None
    evals_root: str | None
    anpord_version: str | None
    variants: list[str]
    planned_trials: int
    totals: dict[str, int]  # trials, and one count per verdict
    usage: dict[str, float | None]
    exit_code: int | None
    fail_on: str | None
    rerun_of: str | None
    resumed: int
    note: str | None
    kind: str = "eval"  # RunRecord.run_kind: anything else never becomes a baseline

    @property
    def duration(self) -> float | None:
        return None if self.finished_at is None else max(self.finished_at - self.started_at, 0.0)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["duration"] = self.duration
        return out


@dataclass(frozen=True)
class CellRow:
    """One cell of one run: what it measured and what it was measured on."""

    run_id: str
    case_id: str
    variant: str
    case_hash: str | None
    harness: str | None
    model: str | None
    profile: str | None
    planned: int
    summary: CellSummary | None  # None until a trial of it finished

    @property
    def measured(self) -> int:
        return self.summary.measured if self.summary is not None else 0

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k != "summary"}
        if self.summary is None:
            out["trials"] = 0
            return out
        out.update(self.summary.to_dict())
        # The pass rate's 95% Wilson interval and n (docs/statistics.md).
        out.update({k: v for k, v in self.summary.estimate().to_dict().items() if k != "pass_rate"})
        return out


@dataclass(frozen=True)
class TrialRow:
    """One trial as indexed: its verdict and figures, and where its events are in the run folder
    (``events.ndjson``, ``events_length`` bytes at ``events_offset``)."""

    run_id: str
    case_id: str
    variant: str
    trial: int
    verdict: str
    reason: str
    duration: float
    started_at: float
    score: float | None
    usage: dict[str, float | None]
    error_kind: str | None
    error_message: str | None
    events_offset: int | None
    events_length: int | None
    events_count: int | None
    attempt: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- records to rows of column values (in the order of ``_columns``) ---------------------------


def run_tuple(record: RunRecord, run_dir: str | None, indexed_at: float) -> tuple[Any, ...]:
    totals = record.totals
    usage = record.usage or {}
    values: dict[str, Any] = {
        "status": record.status,
        "started_at": float(record.started_at),
        "finished_at": record.finished_at,
        "host": (record.owner or {}).get("host"),
        "run_dir": run_dir,
        "evals_root": record.evals_root,
        "anpord_version": record.versions.get("anpord"),
        "variants": "\n".join(str(v.get("label")) for v in record.variants),
        "planned_trials": sum(planned_count(c) for c in record.cells),
        "trials": int(totals.get("trials", 0)),
        **{v: int(totals.get(v, 0)) for v in VERDICTS},
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "cost": usage.get("cost"),
        "exit_code": record.exit_code,
        "fail_on": record.options.get("fail_on"),
        # The run this one derives from: the one it re-ran, or the one it regraded (``kind`` says which).
        "rerun_of": record.rerun_of or record.regrade_of,
        "resumed": len(record.resumed_at),
        "note": record.note,
        "indexed_at": indexed_at,
        "kind": record.run_kind,
    }
    return tuple(values[c] for c in RUN_COLUMNS)


def cell_tuple(
    idx: int, cell: CellRecord, variant: Mapping[str, Any], summary: CellSummary | None
) -> tuple[Any, ...]:
    # Often-empty columns carry their sentinel, not None (see _columns.NULLED).
    if summary is None:
        figures: tuple[Any, ...] = (0,) * len(COUNTS) + (NO_NUMBER, NO_NUMBER, NO_NUMBER, None)
    else:
        figures = (
            summary.trials,
            summary.passed,
            summary.scored,
            summary.failed,
            summary.timed_out,
            summary.void,
            summary.skipped,
            _number(summary.pass_rate),
            _number(summary.pass_at_k),
            _number(summary.pass_hat_k),
            summary.deterministic,
        )
    return (
        idx,
        cell.case_id,
        cell.variant,
        cell.case_hash or NO_TEXT,
        variant.get("harness") or NO_TEXT,
        variant.get("model") or NO_TEXT,
        variant.get("profile") or NO_TEXT,
        planned_count(cell),
        *figures,
    )


def planned_count(cell: CellRecord) -> int:
    """How many trials the cell plans (``len(cell.planned)``, without building the list)."""
    return len(cell.indices) if cell.indices is not None else cell.trials


def _number(value: Any) -> Any:
    return NO_NUMBER if value is None else value


def trial_tuple(
    result: TrialResult, cell_idx: int, redact: Callable[[str], str]
) -> tuple[Any, ...]:
    """A trial's columns. Text a trial carries is redacted as its artifacts are. Often-empty
    columns carry their sentinel, not None (see _columns.NULLED)."""
    usage, error, events = result.usage, result.error, result.events
    if usage:
        tokens_in, tokens_out, cost = (_number(usage.get(k)) for k in ("input_tokens", "output_tokens", "cost"))
    else:
        tokens_in = tokens_out = cost = NO_NUMBER
    return (
        cell_idx,
        result.trial,
        result.verdict,
        redact(result.reason) if result.reason else "",
        float(result.duration),
        float(result.started_at),
        _number(result.score),
        tokens_in,
        tokens_out,
        cost,
        error.kind if error is not None else NO_TEXT,
        redact(error.message) if error is not None else NO_TEXT,
        events.offset if events is not None else NO_NUMBER,
        events.length if events is not None else NO_NUMBER,
        events.count if events is not None else NO_NUMBER,
        result.attempt,
    )


def variants_by_label(record: RunRecord) -> dict[str, Mapping[str, Any]]:
    return {str(v.get("label")): v for v in record.variants}


# -- rows read back -------------------------------------------------------------------------


def _usage(m: Mapping[Any, Any]) -> dict[str, float | None]:
    if all(m.get(k) is None for k in ("input_tokens", "output_tokens", "cost")):
        return {}
    return {k: m.get(k) for k in ("input_tokens", "output_tokens", "cost")}


def run_row(m: Mapping[Any, Any]) -> RunRow:
    return RunRow(
        run_id=m["run_id"],
        status=m["status"],
        started_at=m["started_at"],
        finished_at=m["finished_at"],
        host=m["host"],
        run_dir=m["run_dir"],
        evals_root=m["evals_root"],
        anpord_version=m["anpord_version"],
        variants=[v for v in (m["variants"] or "").split("\n") if v],
        planned_trials=m["planned_trials"],
        totals={c: int(m[c] or 0) for c in COUNTS},
        usage=_usage(m),
        exit_code=m["exit_code"],
        fail_on=m["fail_on"],
        rerun_of=m["rerun_of"],
        resumed=m["resumed"],
        note=m["note"],
        kind=m.get("kind") or "eval",
    )


def cell_row(m: Mapping[Any, Any], run_id: str) -> CellRow:
    summary = None
    if m["trials"]:
        measured = m["trials"] - m["void"] - m["skipped"]
        det = m["deterministic"]
        summary = CellSummary(
            case_id=m["case_id"],
            variant=m["variant"],
            trials=m["trials"],
            passed=m["passed"],
            scored=m["scored"],
            failed=m["failed"],
            timed_out=m["timed_out"],
            void=m["void"],
            skipped=m["skipped"],
            pass_rate=m["pass_rate"] if measured else None,
            pass_at_k=m["pass_at_k"]
            if m["pass_at_k"] is not None
            else pass_at_k(measured, m["passed"], measured),
            pass_hat_k=m["pass_hat_k"]
            if m["pass_hat_k"] is not None
            else pass_hat_k(measured, m["passed"], measured),
            deterministic=bool(det) if det is not None else True,
        )
    return CellRow(
        run_id=run_id,
        case_id=m["case_id"],
        variant=m["variant"],
        case_hash=m["case_hash"],
        harness=m["harness"],
        model=m["model"],
        profile=m["profile"],
        planned=m["planned"],
        summary=summary,
    )


def cell_row_of(run_id: str, cell: CellRecord, variant: Mapping[str, Any]) -> CellRow:
    """The ``cell_row`` that reading back the row ``cell_tuple`` files for ``cell`` gives, made
    without reading it: the run's end compares its cells as it has just filed them. The cell's
    own summary is kept when the store would give back its very values; otherwise (a value the
    store leaves empty and reads as a default) the row is read as the store reads it."""
    summary = cell.summary
    if summary is not None and (
        not summary.trials
        or summary.pass_at_k is None
        or summary.pass_hat_k is None
        or (summary.pass_rate is None) != (summary.measured == 0)
    ):
        filed = dict(zip(CELL_COLUMNS, cell_tuple(0, cell, variant, summary)))
        for column, empty in NULLED.items():
            if column in filed and filed[column] == empty:
                filed[column] = None
        return cell_row(filed, run_id)
    return CellRow(
        run_id=run_id,
        case_id=cell.case_id,
        variant=cell.variant,
        case_hash=cell.case_hash or None,
        harness=variant.get("harness") or None,
        model=variant.get("model") or None,
        profile=variant.get("profile") or None,
        planned=planned_count(cell),
        summary=summary,
    )


def trial_row(m: Mapping[Any, Any], run_id: str) -> TrialRow:
    return TrialRow(
        run_id=run_id,
        case_id=m["case_id"],
        variant=m["variant"],
        trial=m["trial"],
        verdict=m["verdict"],
        reason=m["reason"],
        duration=m["duration"],
        started_at=m["started_at"],
        score=m["score"],
        usage=_usage(m),
        error_kind=m["error_kind"],
        error_message=m["error_message"],
        events_offset=m["events_offset"],
        events_length=m["events_length"],
        events_count=m["events_count"],
        attempt=m["attempt"],
    )


assert len(CELL_COLUMNS) == 19 and len(TRIAL_COLUMNS) == 16  # the tuples above follow them
