"""The per-trial list of assertion records, and value checks (``t.check`` / ``t.require``)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from .._errors import exception_line

from ..expect import Matcher, MatchResult, equals, is_matcher
from .._render import preview, redact_before_cut
from ..results._model import AssertionRecord, Judgment
from ._handle import AssertionHandle, decide_status

__all__ = ["GateFailed", "Recorder", "check_value", "clip_actual"]

# Values kept in a record's ``actual`` (and so in results.jsonl): long texts are cut here.
ACTUAL_LIMIT = 4000
# Seconds a cancelled measurement gets to unwind when the deadline cut it short.
CANCEL_GRACE = 1.0


class GateFailed(Exception):
    """Raised by ``t.require`` when its gate fails: stops the test; the runner fails the trial."""

    def __init__(self, record: AssertionRecord) -> None:
        self.record = record
        super().__init__(f"{record.display_name}: {record.message or record.status}")


def clip_actual(value: Any) -> Any:
    """Cut a long string kept as evidence; the full text is in the trial's events."""
    if isinstance(value, str) and len(value) > ACTUAL_LIMIT:
        value = redact_before_cut(value)  # before the cut, which could leave part of a secret
    if isinstance(value, str) and len(value) > ACTUAL_LIMIT:
        return f"{value[:ACTUAL_LIMIT]}… (+{len(value) - ACTUAL_LIMIT} chars)"
    return value


def check_value(value: Any, matcher: Any, *, scope: str = "run") -> AssertionRecord:
    """Build the record for ``t.check(value, matcher)``.

    ``matcher`` is an ``anpord.expect`` matcher, or any expected value (then ``equals`` semantics:
    dicts must match exactly, nested matchers and predicates still apply). A matcher that raises
    makes the record an ``error``, never a pass.
    """
    m: Matcher = matcher if is_matcher(matcher) else equals(matcher)
    name = _name_of(m)
    try:
        res: MatchResult = m.evaluate(value)
    except Exception as exc:  # noqa: BLE001 - a broken matcher is reported, not propagated
        return AssertionRecord(
            name=name,
            kind=m.default_kind,
            status="error",
            score=0.0,
            threshold=m.default_threshold,
            expected=name,
            actual=clip_actual(value),
            message=f"{name} raised {type(exc).__name__}: {exc} (on {preview(value)})",
            scope=scope,
        )
    record = AssertionRecord(
        name=name,
        kind=m.default_kind,
        status="error" if res.error else "passed",
        score=_clamp(res.score),
        threshold=m.default_threshold,
        expected=res.expected,
        actual=clip_actual(value),
        message=res.message,
        scope=scope,
    )
    # The score decides (so .gate()/.soft() can re-decide later), but a custom gate matcher that
    # says ok=False while leaving its score at 1 must not pass.
    if not res.ok and record.kind == "gate" and record.score >= 1:
        record.score = 0.0
    decide_status(record)
    return record


def _name_of(m: Any) -> str:
    try:
        return str(m.description)
    except Exception:  # noqa: BLE001
        return str(getattr(m, "name", type(m).__name__))


def _clamp(score: Any) -> float:
    try:
        return max(0.0, min(1.0, float(score)))
    except (TypeError, ValueError):
        return 0.0


class Recorder:
    """Collects a trial's assertion records in the order they were made, the judgments behind
    the judged ones, and the checks still being measured (a judge call in flight): the runner
    settles those before it decides the verdict."""

    __slots__ = ("_records", "judgments", "pending")

    def __init__(self) -> None:
        self._records: list[AssertionRecord] = []
        self.judgments: list[Judgment] = []
        # (handle, task) for checks measured asynchronously; each handle's record stays `void`
        # until its task settles it, so a check that is lost never counts as passed.
        self.pending: list[tuple[AssertionHandle, asyncio.Future[Any]]] = []

    def defer(self, handle: AssertionHandle, task: asyncio.Future[Any]) -> AssertionHandle:
        """Register a check that ``task`` will settle (``handle._settle``) later."""
        self.pending.append((handle, task))
        return handle

    async def settle(self, timeout: float | None) -> None:
        """Wait for the checks still being measured, at most ``timeout`` seconds; any not done
        then, or whose task raised, is ``void`` with the reason."""
        if not self.pending:
            return
        tasks = {task for _, task in self.pending}
        done, late = await asyncio.wait(tasks, timeout=timeout) if tasks else (set(), set())
        for task in late:
            task.cancel()
        if late:  # let them unwind (a judge records why it was not measured), but never wait long
            await asyncio.wait(late, timeout=CANCEL_GRACE)
        for handle, task in self.pending:
            if task in late:
                handle._settle(status="void", message="not measured before the trial's deadline")
            elif task.cancelled() or not task.done():
                handle._settle(status="void", message="its measurement was cancelled")
            elif (exc := task.exception()) is not None:
                handle._settle(status="void", message=f"could not measure: {exception_line(exc)}")
        self.pending.clear()

    def abandon(self) -> None:
        """Cancel checks still being measured, leaving them ``void`` (a trial that ended early)."""
        for handle, task in self.pending:
            if not task.done():
                task.cancel()
                handle._settle(status="void", message="its measurement was cancelled")
        self.pending.clear()

    def record(self, rec: AssertionRecord) -> AssertionHandle:
        self._records.append(rec)
        return AssertionHandle(rec)

    def add(
        self,
        name: str,
        ok: bool,
        message: str = "",
        *,
        scope: str = "run",
        expected: Any = None,
        actual: Any = None,
        error: bool = False,
        void: bool = False,
    ) -> AssertionHandle:
        """Record a pass/fail gate decided elsewhere (a bare ``assert``, ``validate()``, a verifier,
        ``require_input_request``). ``error``: it raised; ``void``: it could not measure."""
        status = "error" if error else "void" if void else "passed"
        rec = AssertionRecord(
            name=name,
            kind="gate",
            status=status,  # type: ignore[arg-type]
            score=1.0 if ok and not (error or void) else 0.0,
            threshold=1.0,
            expected=expected,
            actual=clip_actual(actual),
            message=message,
            scope=scope,
        )
        decide_status(rec)
        return self.record(rec)

    def check(self, value: Any, matcher: Any, *, scope: str = "run") -> AssertionHandle:
        """``t.check``: record a value check and return its handle."""
        return self.record(check_value(value, matcher, scope=scope))

    def require(self, value: Any, matcher: Any, *, scope: str = "run") -> AssertionHandle:
        """``t.require``: a gate (at the matcher's threshold, else 1); raises ``GateFailed``
        when it does not pass, so the test stops there."""
        rec = check_value(value, matcher, scope=scope)
        if rec.kind != "gate":
            rec.kind = "gate"
            rec.threshold = 1.0 if rec.threshold is None else rec.threshold
            decide_status(rec)
        handle = self.record(rec)
        if rec.status != "passed":
            raise GateFailed(rec)
        return handle

    @property
    def records(self) -> list[AssertionRecord]:
        return self._records

    @property
    def checked(self) -> bool:
        """Whether anything was recorded (a case that checked nothing fails)."""
        return bool(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[AssertionRecord]:
        return iter(self._records)
