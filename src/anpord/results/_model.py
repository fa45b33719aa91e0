"""The result records: run → cells (case × variant) → trials → assertions, judgments and events.

Every record reads back: ``to_dict()`` gives plain JSON data and ``from_dict()`` rebuilds an equal
record (``from_dict(r.to_dict()) == r``), so what the runner writes, the reader, the store and the
view all see the same typed objects. The run folder's format version (``FORMAT_VERSION``) is
written at the top of ``run.json`` and as ``"v"`` on every ``results.jsonl`` line; the records
nested in a line (assertions, judgments, the events it points at) share its version. A record
written by a newer format is refused with ``RecordError`` rather than misread; one of an older
format is upgraded first (``_upgrade``), so ``from_dict`` only ever reads the current shape.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

from ._upgrade import FORMAT_VERSION, RecordError, upgrade_trial
from ._usage import clean_usage

__all__ = [
    "FORMAT_VERSION",
    "Verdict",
    "VERDICTS",
    "RecordError",
    "AssertionRecord",
    "Judgment",
    "ErrorInfo",
    "EventsRef",
    "TrialResult",
    "CellSummary",
    "RunSummary",
    "summarize_cell",
    "usage_totals",
    "pass_at_k",
    "pass_hat_k",
]


Verdict = Literal["passed", "scored", "failed", "timed_out", "void", "skipped"]
VERDICTS: tuple[Verdict, ...] = ("passed", "scored", "failed", "timed_out", "void", "skipped")
USAGE_KEYS = ("input_tokens", "output_tokens", "cost")


def _need(raw: Mapping[str, Any], key: str, what: str) -> Any:
    try:
        return raw[key]
    except (KeyError, TypeError):
        raise RecordError(f"{what}: missing field {key!r}") from None


@dataclass
class AssertionRecord:
    """One recorded check.

    ``kind`` is ``gate`` or ``soft``. ``score`` is 0–1; a gate passes when ``score >= threshold``
    (threshold 1 by default), a soft check "misses" when below its threshold (None: never misses).
    ``status`` is ``passed``/``failed`` or ``void`` (could not measure) or ``error`` (raised).
    """

    name: str
    kind: Literal["gate", "soft"]
    status: Literal["passed", "failed", "void", "error"]
    score: float
    threshold: float | None = 1.0
    expected: Any = None
    actual: Any = None
    message: str = ""
    label: str | None = None
    scope: str = "run"

    @property
    def display_name(self) -> str:
        return self.label or self.name

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "kind": self.kind,
            "status": self.status,
            "score": self.score,
            "threshold": self.threshold,
            "expected": self.expected,
            "actual": self.actual,
            "message": self.message,
            "scope": self.scope,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> AssertionRecord:
        return cls(
            name=_need(raw, "name", "assertion"),
            kind=_need(raw, "kind", "assertion"),
            status=_need(raw, "status", "assertion"),
            score=_need(raw, "score", "assertion"),
            threshold=raw.get("threshold"),
            expected=raw.get("expected"),
            actual=raw.get("actual"),
            message=raw.get("message", ""),
            label=raw.get("label"),
            scope=raw.get("scope", "run"),
        )


@dataclass
class Judgment:
    """What a judge model decided about one answer: the choice it made among the declared ones,
    the score that choice maps to, and its reason. ``status`` is ``passed``/``failed`` against the
    threshold, or ``void`` when the judge could not answer (``error`` says why)."""

    name: str
    model: str | None
    status: Literal["passed", "failed", "void"]
    choice: str | None = None
    score: float | None = None
    threshold: float | None = None
    reason: str = ""
    error: str | None = None
    usage: dict[str, float | None] = field(default_factory=dict)
    cached: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model": self.model,
            "status": self.status,
            "choice": self.choice,
            "score": self.score,
            "threshold": self.threshold,
            "reason": self.reason,
            "error": self.error,
            "usage": dict(self.usage),
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> Judgment:
        return cls(
            name=_need(raw, "name", "judgment"),
            model=raw.get("model"),
            status=_need(raw, "status", "judgment"),
            choice=raw.get("choice"),
            score=raw.get("score"),
            threshold=raw.get("threshold"),
            reason=raw.get("reason", ""),
            error=raw.get("error"),
            usage=clean_usage(raw.get("usage")),
            cached=bool(raw.get("cached", False)),
        )


ErrorKind = Literal["test", "agent", "harness", "sandbox", "limit", "validate", "internal", "task_exit"]


@dataclass(frozen=True)
class ErrorInfo:
    """An error as data, never a string prefix to search: what raised (``kind``), its one-line
    ``message`` (``TypeError: bad operand``), and the traceback when there is one.

    Kinds: ``test`` (the test body raised), ``agent`` (the agent under test raised or its turn
    failed), ``harness`` (the agent could not be started), ``sandbox`` (the sandbox could not be
    set up), ``limit`` (the trial broke a limit of its sandbox, such as its size cap: the agent
    ran, and did too much), ``validate`` (a declarative case's validate() misbehaved), ``task_exit`` (a task the
    test or agent started raised SystemExit/KeyboardInterrupt), ``internal`` (anpord itself).
    ``where`` is ``file:line`` of the eval file's frame that raised, when known.
    """

    kind: ErrorKind
    message: str
    traceback: str | None = None
    where: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "message": self.message, "traceback": self.traceback, "where": self.where}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> ErrorInfo:
        return cls(
            kind=_need(raw, "kind", "error"),
            message=_need(raw, "message", "error"),
            traceback=raw.get("traceback"),
            where=raw.get("where"),
        )


@dataclass(frozen=True)
class EventsRef:
    """Where a trial's events are: ``length`` bytes at ``offset`` in the run's ``events.ndjson``,
    ``count`` NDJSON lines."""

    offset: int
    length: int
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"offset": self.offset, "length": self.length, "count": self.count}

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> EventsRef:
        values = [_need(raw, k, "events") for k in ("offset", "length", "count")]
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in values):
            raise RecordError(f"events: offset, length and count must be counts, got {dict(raw)!r}")
        return cls(*values)


@dataclass
class TrialResult:
    """One finished trial: what a ``results.jsonl`` line holds.

    ``files`` names the per-trial files kept under ``trials/`` for what does not fit a line (a
    traceback, a long log), relative to the run folder; ``events`` points into ``events.ndjson``.
    Both are filled in by the writer.
    """

    case_id: str
    variant: str
    trial: int  # 0-based index within the cell
    verdict: Verdict
    reason: str = ""  # why it failed / was void / skipped, one line
    duration: float = 0.0
    started_at: float = 0.0
    assertions: list[AssertionRecord] = field(default_factory=list)
    judgments: list[Judgment] = field(default_factory=list)
    score: float | None = None  # the trial's score: the mean of its soft checks' scores, if any
    error: ErrorInfo | None = None
    logs: list[str] = field(default_factory=list)
    usage: dict[str, float | None] = field(default_factory=dict)
    tags: tuple[str, ...] = ()
    file: str | None = None
    seed: int | None = None
    attempt: int = 0  # 0 unless an executor retried the trial after losing its worker
    host: str | None = None
    events: EventsRef | None = None
    files: dict[str, str] = field(default_factory=dict)

    @property
    def cell_key(self) -> tuple[str, str]:
        return (self.case_id, self.variant)

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.case_id, self.variant, self.trial)

    @property
    def traceback(self) -> str | None:
        return self.error.traceback if self.error is not None else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": FORMAT_VERSION,
            "case_id": self.case_id,
            "variant": self.variant,
            "trial": self.trial,
            "verdict": self.verdict,
            "reason": self.reason,
            "duration": self.duration,
            "started_at": self.started_at,
            "score": self.score,
            "error": self.error.to_dict() if self.error is not None else None,
            "assertions": [a.to_dict() for a in self.assertions],
            "judgments": [j.to_dict() for j in self.judgments],
            "usage": dict(self.usage),
            "logs": list(self.logs),
            "tags": list(self.tags),
            "file": self.file,
            "seed": self.seed,
            "attempt": self.attempt,
            "host": self.host,
            "events": self.events.to_dict() if self.events is not None else None,
            "files": dict(self.files),
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> TrialResult:
        if not isinstance(raw, Mapping):
            raise RecordError(f"a trial record is a JSON object, got {type(raw).__name__}")
        raw = upgrade_trial(raw, "trial record")
        verdict = _need(raw, "verdict", "trial record")
        if verdict not in VERDICTS:
            raise RecordError(f"trial record: unknown verdict {verdict!r}")
        error = raw.get("error")
        events = raw.get("events")
        return cls(
            case_id=_need(raw, "case_id", "trial record"),
            variant=_need(raw, "variant", "trial record"),
            trial=_need(raw, "trial", "trial record"),
            verdict=verdict,
            reason=raw.get("reason", ""),
            duration=raw.get("duration", 0.0),
            started_at=raw.get("started_at", 0.0),
            score=raw.get("score"),
            error=ErrorInfo.from_dict(error) if error is not None else None,
            assertions=[AssertionRecord.from_dict(a) for a in raw.get("assertions") or ()],
            judgments=[Judgment.from_dict(j) for j in raw.get("judgments") or ()],
            usage=clean_usage(raw.get("usage")),
            logs=list(raw.get("logs") or ()),
            tags=tuple(raw.get("tags") or ()),
            file=raw.get("file"),
            seed=raw.get("seed"),
            attempt=raw.get("attempt", 0),
            host=raw.get("host"),
            events=EventsRef.from_dict(events) if events is not None else None,
            files=dict(raw.get("files") or {}),
        )


@dataclass
class CellSummary:
    """One cell's distribution: its trials by verdict, the pass rate over measured trials (void
    and skipped excluded), pass@k and pass^k with k = the measured trials, and whether every
    measured trial had the same verdict."""

    case_id: str
    variant: str
    trials: int
    passed: int
    scored: int
    failed: int
    timed_out: int
    void: int
    skipped: int
    pass_rate: float | None
    pass_at_k: float | None
    pass_hat_k: float | None
    deterministic: bool

    @property
    def measured(self) -> int:
        return self.trials - self.void - self.skipped

    def estimate(self) -> Any:
        """The pass rate with its 95% Wilson interval over the measured trials (an
        ``anpord.stats.CellEstimate``); computed when asked, never on a trial's path."""
        from ..stats import estimate_cell

        return estimate_cell(self.passed, self.measured, trials=self.trials)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case_id": self.case_id,
            "variant": self.variant,
            "trials": self.trials,
            "passed": self.passed,
            "scored": self.scored,
            "failed": self.failed,
            "timed_out": self.timed_out,
            "void": self.void,
            "skipped": self.skipped,
            # The interval is not stored (run.json is written for every cell at a run's end, and
            # it follows from the counts): ``estimate()``, ``--json`` and the store's rows add it.
            "pass_rate": self.pass_rate,
            "pass_at_k": self.pass_at_k,
            "pass_hat_k": self.pass_hat_k,
            "deterministic": self.deterministic,
        }

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> CellSummary:
        return cls(**{k: _need(raw, k, "cell") for k in cls.__dataclass_fields__})


def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Probability that at least one of k draws (without replacement) from n trials passes."""
    if n <= 0 or k <= 0 or k > n:
        return None
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """Probability that all of k draws pass (pass^k)."""
    if n <= 0 or k <= 0 or k > n:
        return None
    return math.comb(c, k) / math.comb(n, k)


def summarize_cell(results: Sequence[TrialResult]) -> CellSummary:
    first = results[0]
    counts = dict.fromkeys(VERDICTS, 0)
    for r in results:
        counts[r.verdict] += 1
    measured = len(results) - counts["void"] - counts["skipped"]
    passed = counts["passed"]
    verdicts = {r.verdict for r in results if r.verdict not in ("void", "skipped")}
    return CellSummary(
        case_id=first.case_id,
        variant=first.variant,
        trials=len(results),
        passed=passed,
        scored=counts["scored"],
        failed=counts["failed"],
        timed_out=counts["timed_out"],
        void=counts["void"],
        skipped=counts["skipped"],
        pass_rate=passed / measured if measured else None,
        pass_at_k=pass_at_k(measured, passed, measured),
        pass_hat_k=pass_hat_k(measured, passed, measured),
        deterministic=len(verdicts) <= 1,
    )


def summarize_counts(case_id: str, variant: str, passed: int, failed: int) -> CellSummary:
    """A cell's distribution from counts alone (a pooled history, say)."""
    n = passed + failed
    return CellSummary(
        case_id=case_id, variant=variant, trials=n, passed=passed, scored=0, failed=failed,
        timed_out=0, void=0, skipped=0, pass_rate=passed / n if n else None,
        pass_at_k=pass_at_k(n, passed, n), pass_hat_k=pass_hat_k(n, passed, n),
        deterministic=passed in (0, n),
    )


def usage_totals(results: Sequence[TrialResult]) -> dict[str, float | None]:
    """Tokens and cost over trials. Cost is ``None`` (unknown) as soon as one trial that used a
    model has no known cost: an unknown price is unknown, not zero."""
    tokens_in: float = 0
    tokens_out: float = 0
    cost: float | None = 0.0
    used = False
    for r in results:
        u = r.usage
        if not u:
            continue
        used = True
        tokens_in += u.get("input_tokens") or 0
        tokens_out += u.get("output_tokens") or 0
        c = u.get("cost")
        cost = None if c is None or cost is None else cost + c
    if not used:
        return {}
    return {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost": cost}


@dataclass
class RunSummary:
    """What a finished (or interrupted) run amounts to: totals, cells and the exit code."""

    run_id: str
    run_dir: str
    totals: dict[str, int]
    cells: list[CellSummary]
    exit_code: int
    fail_on: str
    duration: float
    interrupted: bool = False
    usage: dict[str, float | None] = field(default_factory=dict)
    # The run's cells against their baselines (an ``anpord.store.Comparison``), when compared.
    comparison: Any = None
    # Adaptive trials: why each adaptive cell stopped, by (case id, variant).
    stop_reasons: dict[tuple[str, str], str] = field(default_factory=dict)
    # --max-run-cost: {"limit", "spent", "reached", "not_run"} (US dollars, trials), when set.
    run_cost: dict[str, Any] | None = None

    def closing_line(self) -> str:
        """``N passed, N failed`` (+ scored/void/skipped when non-zero). Timed-out counts as failed."""
        t = self.totals
        parts = [f"{t.get('passed', 0)} passed", f"{t.get('failed', 0) + t.get('timed_out', 0)} failed"]
        for key in ("scored", "void", "skipped"):
            if t.get(key):
                parts.append(f"{t[key]} {key}")
        return ", ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_dir": self.run_dir,
            "totals": self.totals,
            "cells": [c.to_dict() for c in self.cells],
            "exit_code": self.exit_code,
            "fail_on": self.fail_on,
            "duration": self.duration,
            "interrupted": self.interrupted,
            "usage": dict(self.usage),
            **({"run_cost": dict(self.run_cost)} if self.run_cost is not None else {}),
        }
