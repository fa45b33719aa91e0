"""``t``: the object a ``test(t)`` function drives the agent and records checks with."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generator, Sequence

from ..assertions import AssertionHandle, Recorder, ScopedAssertions, check_value
from ..events import Event
from ._session import LiveTurn, Session, TrialState
from ._turn import InputRequest, Turn

if TYPE_CHECKING:
    from ..mocks._assert import MockView
    from ..judges import JudgeEnv, Judges

__all__ = ["T", "Skipped"]


class Skipped(Exception):
    """Raised by ``t.skip(reason)``; the trial's verdict is ``skipped``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class T(ScopedAssertions):
    """Drives the primary session; run-level assertions see every session's events."""

    def __init__(self, state: TrialState, *, deadline: float = math.inf,
                 workspace: Path | None = None, row: Any = None, seed: int | None = None,
                 judge_env: JudgeEnv | None = None):
        self._state = state
        self._judge_env = judge_env
        self._judges: Judges | None = None
        self._primary = Session(state)
        self.deadline = deadline  # time.time() at which the trial times out (set as its timer starts)
        self._signal: asyncio.Event | None = None  # made on first use: most tests never look
        self.workspace = workspace
        self.row = row
        self.seed = seed  # stable per trial: the same trial gets the same seed in every run

    @property
    def signal(self) -> asyncio.Event:
        """Set when the trial's deadline passes (``await t.signal.wait()``)."""
        if self._signal is None:
            self._signal = asyncio.Event()
        return self._signal

    # -- sessions ---------------------------------------------------------------------------

    def new_session(self) -> Session:
        """An independent session against the same agent; its events feed run-level checks."""
        return Session(self._state)

    @property
    def session(self) -> Session:
        return self._primary

    @property
    def sessions(self) -> list[Session]:
        return list(self._state.sessions)

    # -- the drive API (primary session) -----------------------------------------------------

    async def send(self, input: Any) -> Turn:
        return await self._primary.send(input)

    async def start(self, input: Any) -> LiveTurn:
        return await self._primary.start(input)

    async def cancel(self) -> str:
        return await self._primary.cancel()

    async def send_file(self, text: str, path: str | Path, media_type: str | None = None) -> Turn:
        return await self._primary.send_file(text, path, media_type)

    async def require_input_request(self, **filters: Any) -> InputRequest:
        return await self._primary.require_input_request(**filters)

    async def respond(self, *responses: Any) -> Turn:
        return await self._primary.respond(*responses)

    async def respond_all(self, option_id: str) -> Turn:
        return await self._primary.respond_all(option_id)

    @property
    def reply(self) -> str | None:
        return self._primary.reply

    @property
    def session_id(self) -> str:
        return self._primary.session_id

    @property
    def events(self) -> list[Event]:
        return list(self._state.events)

    @property
    def turns(self) -> list[Turn]:
        return list(self._state.turns)

    @property
    def pending_input_requests(self) -> list[InputRequest]:
        return self._primary.pending_input_requests

    def log(self, message: Any) -> None:
        """A debug line for the trial's artifact (``--verbose`` streams it)."""
        self._state.log(str(message))

    def mock(self, name: str) -> MockView:
        """One of the trial's mocks: ``.calls``, ``.called(...)``, ``.not_called(...)``."""
        from ..mocks._assert import MockView

        kinds = {n: h.kind for n, h in self._state.mocks.items()}
        return MockView(name, kinds, lambda: self._state.events,
                        lambda label, check: self._assert_run(label, check))

    def skip(self, reason: str = "") -> None:
        raise Skipped(reason or "skipped")

    # -- value checks -----------------------------------------------------------------------

    @property
    def judge(self) -> Judges:
        """Model-graded checks: ``t.judge.closed_qa(...)``, ``.factuality(...)``, ``.rubric(...)``."""
        if self._judges is None:
            from ..judges import Judges

            self._judges = Judges(self._state, self._judge_settings(), lambda: self.reply)
        return self._judges

    def _judge_settings(self) -> JudgeEnv:
        """The trial's judge settings and cache, shared by its judges and simulated users."""
        if self._judge_env is None:
            from ..judges import JudgeEnv

            self._judge_env = JudgeEnv(seed=self.seed)
        return self._judge_env

    def check(self, value: Any, matcher: Any) -> AssertionHandle:
        """Record a check of ``value`` (a gate, or soft for ``similarity``)."""
        return self._state.recorder.record(check_value(value, matcher, scope="run"))

    def require(self, value: Any, matcher: Any) -> "_Ready":
        """A gate that stops the test when it fails. Written ``await t.require(...)``; the check
        happens (and a failure stops the test) at the call, so a forgotten ``await`` cannot
        turn a failing gate into a silent no-op."""
        return _Ready(self._state.recorder.require(value, matcher, scope="run"))

    # -- ScopedAssertions -------------------------------------------------------------------

    def _assert_events(self) -> Sequence[Event]:
        return self._state.events

    def _assert_statuses(self) -> Sequence[str]:
        return [t.status for t in self._state.turns]

    def _assert_output(self) -> Any:
        if not self._state.turns:
            return None
        last = self._state.turns[-1]
        return last.data if last.data is not None else last.message

    def _assert_recorder(self) -> Recorder:
        return self._state.recorder

    def _assert_scope(self) -> str:
        return "run"


class _Ready:
    """An already-settled awaitable: ``await t.require(...)`` yields the handle."""

    __slots__ = ("handle",)

    def __init__(self, handle: AssertionHandle):
        self.handle = handle

    def __await__(self) -> Generator[None, None, AssertionHandle]:
        return self.handle
        yield  # unreachable: its presence makes __await__ a generator

    def __getattr__(self, name: str) -> Any:
        # `t.require(...).label("x")` without await still reaches the handle.
        return getattr(self.handle, name)
