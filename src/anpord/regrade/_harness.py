"""The replay harness: the recorded agent, for a regrade.

It stands in for the variant's harness the way an audit's saboteur does — same sandbox, same
source, the inner harness's ``prepare_sandbox`` — and answers each turn from the recording: the
events the agent streamed (tool calls, input requests, trace spans, mock calls), its message,
its structured output, how the turn settled; and the trace spans that arrived outside any turn
after it started, into the trial's own events. Sessions pair up in the order they open, turns in
order within a session. Before its first turn a trial's workspace is made what the agent left
(the run's workspace archive), so every check after it — ``validate``, verifiers, ``exec`` —
sees the agent's work.

What cannot be replayed raises ``HarnessStartError``, so the trial is ``void`` with the reason:
a test that now sends something else (naming the turn and both inputs), a turn the recording
does not hold, a workspace the run did not keep or cannot give back.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from ..events import message_text
from ..harnesses import Emit, Harness, HarnessContext, HarnessStartError, TurnOutcome, TurnRequest
from ..harnesses._stand_in import StandIn
from ..results._model import ErrorInfo
from ._recorded import RecordedTrial, RecordedTurn

__all__ = ["SPEC_PREFIX", "ReplayHarness"]

SPEC_PREFIX = "regrade:"
_SESSIONS = "regrade.sessions"  # HarnessContext.extra: sessions opened so far in the trial
_RESTORED = "regrade.restored"  # HarnessContext.extra: the workspace is the agent's


def _clip(text: str | None, limit: int = 200) -> str:
    text = "" if text is None else text
    return repr(text if len(text) <= limit else text[:limit] + "…")


@dataclass
class ReplayHarness(StandIn):
    """Replays one variant's recorded trials, by case id and trial index. ``archive`` is the
    recorded run's workspace archive (None when it kept none); ``run_id`` names it in reasons."""

    spec: str
    run_id: str
    variant: str
    inner: Harness | None = None
    trials: dict[tuple[str, int], RecordedTrial] = field(default_factory=dict)
    archive: Any = None  # workspace._archive.Archive
    archive_note: str | None = None  # why there is no archive (or what is wrong with it)

    def case_of(self, ctx: HarnessContext) -> str:
        """The trial's case id: its label is ``case variant #n`` (see ``TrialSpec.label``)."""
        tail = f" {self.variant} #{ctx.trial_index}"
        return ctx.trial_id[: -len(tail)] if ctx.trial_id.endswith(tail) else ctx.trial_id

    async def open_session(self, ctx: HarnessContext, session_id: str) -> ReplaySession:
        trial = self.trials.get((self.case_of(ctx), ctx.trial_index))
        n = ctx.extra.get(_SESSIONS, 0)
        ctx.extra[_SESSIONS] = n + 1
        turns = trial.sessions[n] if trial is not None and n < len(trial.sessions) else None
        return ReplaySession(self, ctx, session_id, trial, n + 1, turns)

    async def restore_workspace(self, ctx: HarnessContext) -> None:
        """Make the trial's workspace what the agent left, once per trial."""
        if ctx.extra.get(_RESTORED) or ctx.workspace is None:
            return
        from ..workspace import ArchiveError, trial_key

        key = trial_key(self.case_of(ctx), self.variant, ctx.trial_index)
        if self.archive is None or key not in self.archive.trials:
            why = self.archive_note or f"run {self.run_id} kept no workspace snapshot of this trial"
            raise HarnessStartError(f"cannot regrade: {why}; this case's checks read the workspace the agent left")
        sandbox = ctx.sandbox
        try:
            if sandbox is None or sandbox.host_paths:
                notes = await asyncio.to_thread(self.archive.restore, key, ctx.workspace)
            else:  # restored in the host's view of the workspace, which then replaces it inside
                view = await sandbox.workspace_view()
                notes = await asyncio.to_thread(self.archive.restore, key, view)
                await sandbox.exec("rm -rf -- ./* ./.[!.]* ./..?*")
                await sandbox.copy_in(view, ctx.workspace)
        except (ArchiveError, OSError) as exc:
            raise HarnessStartError(f"cannot regrade: the workspace snapshot of run {self.run_id} is unusable: {exc}") from None
        for note in notes:
            ctx.log(f"regrade: {note}")
        ctx.extra[_RESTORED] = True


class ReplaySession:
    def __init__(self, harness: ReplayHarness, ctx: HarnessContext, session_id: str,
                 trial: RecordedTrial | None, number: int, turns: list[RecordedTurn] | None):
        self.harness, self.ctx, self.session_id = harness, ctx, session_id
        self.trial, self.number, self.turns = trial, number, turns
        self._next = 0

    def _where(self, index: int) -> str:
        return f"turn {index}" if self.number == 1 else f"turn {index} of session {self.number}"

    def _take(self, request: TurnRequest) -> RecordedTurn:
        run = self.harness.run_id
        index = self._next + 1
        now = message_text(request.input) if request.input is not None else None
        sent = _clip(now) if now is not None else f"answers {_answers(request)}"
        if self.trial is None:
            raise HarnessStartError(f"cannot regrade: run {run} has no record of this trial")
        if not self.trial.sessions and self.trial.verdict in ("void", "skipped"):
            raise HarnessStartError(
                f"cannot regrade: the recorded trial was {self.trial.verdict} with no turn"
                + (f" ({self.trial.reason})" if self.trial.reason else ""))
        if self.turns is None or self._next >= len(self.turns):
            raise HarnessStartError(f"cannot regrade: the test now sends {self._where(index)} ({sent}), "
                                    f"which run {run} did not record")
        turn = self.turns[self._next]
        self._next += 1
        if now is not None or turn.input is not None:
            if now != turn.input:
                was = _clip(turn.input) if turn.input is not None else f"answers {_recorded_answers(turn)}"
                raise HarnessStartError(
                    f"cannot regrade: the test now sends something else at {self._where(index)}: "
                    f"recorded {was}, now {sent}")
        elif _answers(request) != _recorded_answers(turn):
            raise HarnessStartError(
                f"cannot regrade: the test now answers the input requests differently at {self._where(index)}: "
                f"recorded {_recorded_answers(turn)}, now {_answers(request)}")
        if turn.status is None:
            raise HarnessStartError(
                f"cannot regrade: the recording of {self._where(index)} stops before it settled "
                f"(the trial was {self.trial.verdict}" + (f": {self.trial.reason})" if self.trial.reason else ")"))
        return turn

    async def run_turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        turn = self._take(request)
        await self.harness.restore_workspace(self.ctx)
        for event in turn.events:
            emit(event)  # each recorded trial is replayed once: its events are handed over as they are
        record = self.ctx.record_event
        if record is not None:
            for event in turn.outside:  # spans the trial's own events held, not the turn's
                record(event)
        status = turn.status
        message = turn.message
        if status == "failed":
            error = turn.error or "the turn failed"
            return TurnOutcome("failed", message=message, error=error, failure=ErrorInfo("agent", error))
        return TurnOutcome(status, message=message, error=turn.error, data=turn.data)  # type: ignore[arg-type]

    async def cancel(self) -> bool:
        return False

    async def close(self) -> None:
        pass


def _answers(request: TurnRequest) -> str:
    return json.dumps(sorted((r.to_dict() for r in request.responses), key=lambda d: str(d.get("request_id"))),
                      ensure_ascii=False, sort_keys=True)


def _recorded_answers(turn: RecordedTurn) -> str:
    return json.dumps(sorted(turn.responses, key=lambda d: str(d.get("request_id"))),
                      ensure_ascii=False, sort_keys=True)
