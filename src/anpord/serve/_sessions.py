"""The server's sessions: one ``PythonSession`` per conversation, run exactly as the ``python:``
harness runs it, so an agent behaves the same served over HTTP as in the runner's process.

A turn streams the session's events to one HTTP response. What the agent prints becomes ``log``
events of its turn; ``SystemExit`` in a task it started fails that turn instead of stopping the
server; a cancel that arrives while a turn is being accepted still reaches the agent.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
import uuid
from typing import Any
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..authoring._config import Variant
from ..events import LOG, Event
from ..harnesses._protocol import HarnessContext, TurnOutcome, TurnRequest
from ..harnesses.python import PythonHarness, PythonSession
from ..runner._capture import CURRENT_LOG, flush_partial
from .._contain import CURRENT_EXITS, ExitLog
from ..results._model import ErrorInfo

__all__ = ["ServedSession", "SessionBusy", "SessionExists", "SessionTable"]

# Thread pool size for sync agents (the python harness sizes it by the run's concurrency).
SYNC_AGENT_THREADS = 32


class SessionBusy(Exception):
    """A turn is already running in the session."""


class SessionExists(Exception):
    """The client asked for a session id that is in use."""


@dataclass
class _ServedContext(HarnessContext):
    """A harness context whose workspace is a folder the client named, not a sandbox's."""

    served_workspace: Path | None = None

    @property
    def workspace(self) -> Path | None:  # type: ignore[override]
        return self.served_workspace


class ServedSession:
    def __init__(
        self,
        harness: PythonHarness,
        session_id: str,
        model: str | None,
        workspace: Path | None,
        log: Callable[[str], None],
        mocks: dict[str, Any] | None = None,
        model_proxy: Any = None,
    ):
        self.session_id = session_id
        self.busy = False
        self.last_used = time.monotonic()
        self._cancel_requested = False
        self._emit: Callable[[Event], None] | None = None
        self._exits = ExitLog()
        # One object: the print router keys a session's unfinished line by its sink.
        self._print_sink: Callable[[str], None] = self._printed
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.ctx = _ServedContext(
            variant=Variant(harness=harness.spec, model=model),
            model=model,
            sandbox=None,
            log=log,
            trial_id=session_id,
            max_concurrency=SYNC_AGENT_THREADS,
            served_workspace=workspace,
            extra=_extra(mocks, model_proxy),
        )
        self.python = PythonSession(harness, self.ctx, session_id)

    # -- what the agent produces ------------------------------------------------------------

    def _forward(self, event: Event) -> None:
        if threading.get_ident() != self._loop_thread:  # a sync agent's thread
            self._loop.call_soon_threadsafe(self._forward, event)
            return
        if self._emit is not None:
            self._emit(event)
        # Between turns (a task the agent left running) there is no stream to write to.

    def _printed(self, line: str) -> None:
        stream = "stdout"
        if line.startswith("[stderr] "):
            stream, line = "stderr", line[len("[stderr] ") :]
        self._forward(
            Event(LOG, {"session_id": self.session_id, "message": line, "stream": stream})
        )

    # -- turns ------------------------------------------------------------------------------

    def start_turn(
        self, request: TurnRequest, emit: Callable[[Event], None]
    ) -> asyncio.Task[TurnOutcome]:
        """Start a turn whose events go to ``emit``; the task's result is how it settled."""
        if self.busy:
            raise SessionBusy(self.session_id)
        self.busy = True
        self._cancel_requested = False
        self._emit = emit
        # The agent's task is created inside this one and inherits these: its prints become this
        # session's log events, an exit in a task it starts is recorded for the session.
        context = contextvars.copy_context()
        context.run(CURRENT_LOG.set, self._print_sink)
        context.run(CURRENT_EXITS.set, self._exits)
        return self._loop.create_task(self._turn(request), context=context)

    async def _turn(self, request: TurnRequest) -> TurnOutcome:
        exits_before = len(self._exits.entries)
        running = asyncio.ensure_future(self.python.run_turn(request, self._forward))
        try:
            await asyncio.sleep(0)  # its first step starts (or resumes) the agent's task
            if self._cancel_requested:  # the cancel came while the turn was being accepted
                await self.python.cancel()
            outcome = await running
        finally:
            if not running.done():  # this turn was cancelled (the client went away, shutdown)
                running.cancel()
                await asyncio.gather(running, return_exceptions=True)
            flush_partial(self._print_sink)
            self.busy = False
            self._emit = None
            self.last_used = time.monotonic()
        if len(self._exits.entries) > exits_before and outcome.status in ("completed", "waiting"):
            summary = self._exits.entries[exits_before][0]
            # The agent's own failure: the trial fails, as under python:.
            error = f"agent raised {summary} in a task it started"
            return TurnOutcome(
                "failed", message=outcome.message, data=outcome.data, error=error,
                failure=ErrorInfo("agent", error, self._exits.entries[exits_before][1]),
            )
        return outcome

    async def cancel(self) -> bool:
        """Cancel the running turn; False when none is running."""
        if not self.busy:
            return False
        self._cancel_requested = True
        await self.python.cancel()
        return True

    async def close(self) -> None:
        self._exits.open = False
        await self.python.close()


class SessionTable:
    """Every open session of the server, by id."""

    def __init__(self, harness: PythonHarness, log: Callable[[str], None]):
        self.harness = harness
        self.log = log
        self.sessions: dict[str, ServedSession] = {}

    def create(
        self, session_id: str | None, model: str | None, workspace: Path | None,
        mocks: dict[str, Any] | None = None, model_proxy: Any = None,
    ) -> ServedSession:
        sid = session_id or f"ses_{uuid.uuid4().hex[:12]}"
        if sid in self.sessions:
            raise SessionExists(sid)
        session = ServedSession(self.harness, sid, model, workspace, self.log, mocks, model_proxy)
        self.sessions[sid] = session
        return session

    def get(self, session_id: str) -> ServedSession | None:
        return self.sessions.get(session_id)

    async def close(self, session_id: str) -> bool:
        session = self.sessions.pop(session_id, None)
        if session is None:
            return False
        await session.close()
        return True

    async def close_all(self) -> None:
        sessions, self.sessions = list(self.sessions.values()), {}
        await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)

    async def close_idle(self, idle_for: float) -> int:
        """Close sessions that ran no turn for ``idle_for`` seconds (a client that went away
        without deleting them): a long-lived server must not keep every conversation forever."""
        now = time.monotonic()
        stale = [
            sid for sid, s in self.sessions.items() if not s.busy and now - s.last_used > idle_for
        ]
        for sid in stale:
            await self.close(sid)
        return len(stale)


def _extra(mocks: dict[str, Any] | None, model_proxy: Any) -> dict[str, Any]:
    """What the client's trial gave the session, as the agent finds it: ``turn.mocks``,
    ``turn.model_proxy``."""
    extra: dict[str, Any] = {}
    if mocks:
        extra["mocks"] = mocks
    if model_proxy is not None:
        extra["model_proxy"] = model_proxy
    return extra
