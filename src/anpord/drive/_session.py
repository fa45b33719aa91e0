"""Sessions and live turns: the eval's side of a conversation with the agent."""

from __future__ import annotations

import asyncio
import base64
import mimetypes
import itertools
import secrets
from pathlib import Path
from typing import Any, Callable, Sequence

from ..assertions import AssertionHandle, GateFailed, Recorder, ScopedAssertions
from ..events import (
    INPUT_REQUESTED,
    INPUT_RESOLVED,
    MESSAGE_COMPLETED,
    SESSION_COMPLETED,
    SESSION_FAILED,
    SESSION_STARTED,
    SESSION_WAITING,
    TURN_CANCELLED,
    TURN_COMPLETED,
    TURN_FAILED,
    TURN_STARTED,
    Event,
    message_text,
)
from ..expect import match_value
from ..harnesses import (
    Harness,
    HarnessContext,
    HarnessSession,
    HarnessStartError,
    InputResponse,
    TurnOutcome,
    TurnRequest,
)
from ..results._model import ErrorInfo
from ._turn import InputRequest, Turn

__all__ = ["Session", "LiveTurn", "TrialState", "EventNotSeen", "DriveError"]


# Session ids: unique within a process (a counter) and across processes (a random prefix), for
# agent servers that see sessions from several runs.
_SESSION_PREFIX = secrets.token_hex(3)
_session_numbers = itertools.count(1)


class DriveError(Exception):
    """A drive-API call used wrongly (e.g. sending while a turn is still running)."""


class EventNotSeen(AssertionError):
    """``wait_for_event`` saw the turn settle (or time out) before the event arrived."""


class TrialState:
    """Everything one trial's sessions share: the harness, the recorder, the event log."""

    def __init__(
        self,
        *,
        harness: Harness | None,
        harness_ctx: HarnessContext | None,
        recorder: Recorder,
        base_dir: Path,
        log: Callable[[str], None],
        harness_error: str | None = None,
    ):
        self.harness = harness
        self.harness_ctx = harness_ctx
        self.harness_error = harness_error
        self.recorder = recorder
        self.base_dir = base_dir
        self.log = log
        self.events: list[Event] = []
        self.sessions: list[Session] = []
        self.turns: list[Turn] = []  # every settled turn, in settling order
        # Turns that failed through the agent's fault, until the test says it expected one.
        self.agent_failures: dict[int, ErrorInfo] = {}  # by id() of the Turn
        self.start_error: str | None = None  # a session's agent could not be started
        self.mocks: dict[str, Any] = {}  # the trial's running mocks by name (anpord.mocks)
        # Sees every event as it is recorded (the runner's token and cost limits: runner/_limits).
        self.watch: Callable[[Event], None] | None = None
        # Decides what of the agent's and the services' events is recorded, and how: one event
        # per MCP call when a CLI's stream and a mock both report it (mocks/_dedupe).
        self.admit: Callable[[Event], Event | None] | None = None
        self._later: list[Callable[[], Sequence[Event]]] = []  # see record_later
        if harness_ctx is not None:
            harness_ctx.record_event = self.record_event

    def record_event(self, event: Event) -> None:
        """Add an event to the trial's log from outside any turn (a judge, a tool mock): it is
        in ``t.events``, run-level checks and the artifacts, but in no session's events."""
        if self._later:
            self.flush_later()
        self.events.append(event)
        if self.watch is not None:
            self.watch(event)

    def _logged(self, events: Sequence[Event]) -> None:
        self.events.extend(events)
        watch = self.watch
        if watch is not None:
            for event in events:
                watch(event)

    def record_arrival(self, event: Event) -> None:
        """An event that arrived from outside the harness while the trial runs (a trace span):
        into the running turn when exactly one is running, so that turn's and its session's
        checks see it too; otherwise into the trial's log, as ``record_event``."""
        if self._later:
            self.flush_later()
        self._arrived((event,))

    def record_later(self, produce: Callable[[], Sequence[Event]]) -> None:
        """Arrivals a service holds but has not made into events yet (the spans a Python agent
        ended): ``produce()`` makes them, and they are recorded as ``record_arrival`` would, in
        one batch, before any later event of the trial is, and by the loop's next turn at the
        latest. Where they land and in what order is what recording each at once would give;
        the batch costs one look-up of the running turn instead of one per event."""
        if not self._later:
            try:
                asyncio.get_running_loop().call_soon(self.flush_later)
            except RuntimeError:  # no loop runs here: nothing comes later to wait for
                self._later.append(produce)
                self.flush_later()
                return
        self._later.append(produce)

    def flush_later(self) -> None:
        """Record what ``record_later`` holds, now."""
        while self._later:
            later, self._later = self._later, []
            for produce in later:
                events = produce()
                if events:
                    self._arrived(events)

    def _arrived(self, events: Sequence[Event]) -> None:
        admit = self.admit
        if admit is not None:
            events = [e for e in map(admit, events) if e is not None]
            if not events:
                return
        live = [s._active for s in self.sessions if s._active is not None and not s._active.done]
        if len(live) == 1:
            live[0]._add_all(events)
        else:
            self._logged(events)

    def expect_failure(self, turn: Turn) -> None:
        self.agent_failures.pop(id(turn), None)

    @property
    def unexpected_failure(self) -> ErrorInfo | None:
        """The first turn failure the test did not say it expected."""
        return next(iter(self.agent_failures.values()), None)

    async def close(self) -> None:
        for session in self.sessions:
            await session._close()

    def release(self) -> None:
        """The trial is decided: cut the sessions' references back to this state and to their
        turns, so all of it is freed by reference counting rather than by the cyclic collector."""
        for session in self.sessions:
            session._active = None
        self.sessions.clear()
        if self.harness_ctx is not None:
            self.harness_ctx.record_event = None  # it points back here
        self.turns.clear()  # each points back here (the failures it may still expect)


# The events a session keeps track of, besides recording them.
_SESSION_SIGNALS = frozenset({SESSION_FAILED, INPUT_REQUESTED, INPUT_RESOLVED})


def _in_session(event: Event, session_id: str) -> Event:
    if type(event.data) is dict:  # a fresh dict each event: filled in place
        event.data["session_id"] = session_id
        return event
    return Event(event.type, {**event.data, "session_id": session_id}, event.ts)


class LiveTurn:
    """A turn that may still be running: observe it, cancel it, then take its ``result()``."""

    def __init__(self, session: "Session", request: TurnRequest, index: int, *, background: bool = True):
        self.session = session
        self.session_id = session.session_id
        self.index = index
        self.request = request
        self.events: list[Event] = []
        self._changed: asyncio.Event | None = None  # made when someone waits for an event
        self._turn: Turn | None = None
        self._task: asyncio.Future[Turn]
        if background:
            self._task = asyncio.ensure_future(self._run())
        else:
            # send(): the caller awaits run_inline() itself; a plain future is cheaper than a task.
            self._task = asyncio.get_running_loop().create_future()

    async def run_inline(self) -> Turn:
        try:
            turn = await self._run()
        except BaseException as exc:
            if not self._task.done():
                if isinstance(exc, asyncio.CancelledError):
                    self._task.cancel()
                else:
                    self._task.set_exception(exc)
                    self._task.exception()  # retrieved: the caller gets the exception directly
            raise
        self._task.set_result(turn)
        return turn

    @property
    def done(self) -> bool:
        return self._task.done()

    def _emit(self, event: Event) -> None:
        admit = self.session.state.admit
        if admit is not None:
            admitted = admit(event)
            if admitted is None:
                return
            event = admitted
        self._add(event)

    def _add(self, event: Event) -> None:
        session = self.session
        if session.state._later:  # arrivals held for later go first: they happened first
            session.state.flush_later()
        if "session_id" not in event.data:
            event = _in_session(event, self.session_id)
        self.events.append(event)
        session._on_event(event)
        if self._changed is not None:
            self._changed.set()

    def _add_all(self, events: Sequence[Event]) -> None:
        """Arrivals (``TrialState.record_arrival``), in one batch."""
        session_id = self.session_id
        events = [e if "session_id" in e.data else _in_session(e, session_id) for e in events]
        self.events.extend(events)
        self.session._on_events(events)
        if self._changed is not None:
            self._changed.set()

    async def _run(self) -> Turn:
        session = self.session
        outcome: TurnOutcome
        try:
            hs = await session._harness_session(self._emit)
            self._emit(Event(TURN_STARTED, {"turn": self.index}))
            if self.request.input is not None:
                self._emit(Event(MESSAGE_COMPLETED, {"role": "user", "text": message_text(self.request.input)}))
            outcome = await hs.run_turn(self.request, self._emit)
        except HarnessStartError as exc:
            self._emit(Event(SESSION_FAILED, {"error": str(exc)}))
            session.state.harness_error = session.state.start_error = str(exc)
            raise
        if outcome.status == "completed":
            done: dict[str, Any] = {"turn": self.index}
            if outcome.data is not None:
                done["data"] = outcome.data  # the structured output, on record (a regrade replays it)
            self._emit(Event(TURN_COMPLETED, done))
            self._emit(Event(SESSION_WAITING, {"pending_input_requests": 0}))
        elif outcome.status == "waiting":
            self._emit(Event(SESSION_WAITING, {"pending_input_requests": len(session._pending)}))
        elif outcome.status == "cancelled":
            self._emit(Event(TURN_CANCELLED, {"turn": self.index}))
            self._emit(Event(SESSION_WAITING, {"pending_input_requests": len(session._pending)}))
        else:
            self._emit(Event(TURN_FAILED, {"turn": self.index, "error": outcome.error}))
        turn = Turn(
            index=self.index,
            session_id=self.session_id,
            status=outcome.status,
            message=outcome.message,
            data=outcome.data,
            events=tuple(self.events),
            error=outcome.error,
            failure=outcome.failure,
            _recorder=session.state.recorder,
            _state=session.state,
        )
        if outcome.status == "failed" and outcome.failure is not None:
            session.state.agent_failures[id(turn)] = outcome.failure
        session._settled(turn)
        if self._changed is not None:
            self._changed.set()
        return turn

    async def wait_for_event(self, type: str, data: Any = None, *, timeout: float | None = None) -> Event:
        """Wait for an event of ``type`` (whose data matches ``data``, partially and deeply).
        Raises EventNotSeen if the turn settles first."""
        seen = 0
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            for event in self.events[seen:]:
                if event.type == type and (data is None or match_value(data, dict(event.data))[0]):
                    return event
            seen = len(self.events)
            if self._task.done():
                self._task.result()  # re-raise a harness failure as itself
                types = ", ".join(e.type for e in self.events) or "none"
                raise EventNotSeen(f"turn {self.index} settled before a {type!r} event matching; saw: {types}")
            if self._changed is None:
                self._changed = asyncio.Event()
            self._changed.clear()
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                raise EventNotSeen(f"no {type!r} event within {timeout}s")
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)  # type: ignore[union-attr]
            except asyncio.TimeoutError:
                raise EventNotSeen(f"no {type!r} event within {timeout}s") from None

    async def cancel(self) -> bool:
        """Ask the agent to stop this turn. Returns False when it had already settled."""
        if self._task.done():
            return False
        hs = self.session._hs
        return bool(hs and await hs.cancel())

    async def result(self) -> Turn:
        return await asyncio.shield(self._task)


class Session(ScopedAssertions):
    """One conversation with the agent. ``t`` drives the primary one; ``t.new_session()`` more."""

    def __init__(self, state: TrialState, session_id: str | None = None):
        self.state = state
        self.session_id = session_id or f"ses_{_SESSION_PREFIX}{next(_session_numbers):x}"
        self.events: list[Event] = []
        self.turns: list[Turn] = []
        self._hs: HarnessSession | None = None
        self._opening: asyncio.Future[HarnessSession] | None = None
        self._active: LiveTurn | None = None
        self._pending: dict[str, InputRequest] = {}
        self._failed = False  # a session.failed event was recorded
        self._messages: list[dict[str, Any]] = []
        state.sessions.append(self)

    # -- plumbing ---------------------------------------------------------------------------

    async def _harness_session(self, emit: Callable[[Event], None]) -> HarnessSession:
        if self._hs is not None:
            return self._hs
        state = self.state
        if state.harness is None or state.harness_ctx is None:
            raise HarnessStartError(state.harness_error or "no harness: set harness= in evals.config.py or pass --harness")
        self._hs = await state.harness.open_session(state.harness_ctx, self.session_id)
        emit(Event(SESSION_STARTED, {}))
        return self._hs

    def _on_event(self, event: Event) -> None:
        state = self.state
        if state._later:  # an event of the session's own (its end): after the arrivals held
            state.flush_later()
        self.events.append(event)
        state.record_event(event)
        if event.type in _SESSION_SIGNALS:
            self._signal(event)

    def _on_events(self, events: Sequence[Event]) -> None:
        self.events.extend(events)
        self.state._logged(events)
        for event in events:
            if event.type in _SESSION_SIGNALS:
                self._signal(event)

    def _signal(self, event: Event) -> None:
        kind = event.type
        if kind == SESSION_FAILED:
            self._failed = True
        elif kind == INPUT_REQUESTED:
            req = InputRequest.from_event(event)
            self._pending[req.request_id] = req
        elif kind == INPUT_RESOLVED:
            self._pending.pop(str(event.data.get("request_id")), None)

    def _settled(self, turn: Turn) -> None:
        self.turns.append(turn)
        self.state.turns.append(turn)
        # However the turn was taken (send, respond, start + result), its reply is history.
        if turn.message is not None:
            self._messages.append({"role": "assistant", "content": turn.message})
        if turn.status == "cancelled":
            self._pending.clear()
        if self._active is not None and self._active.index == turn.index:
            self._active = None

    def _new_turn(self, request: TurnRequest, *, background: bool) -> LiveTurn:
        if self._active is not None and not self._active.done:
            raise DriveError(
                "a turn is still running in this session: await its result() (or cancel it) before sending"
            )
        live = LiveTurn(self, request, len(self.turns) + 1, background=background)
        self._active = live
        return live

    async def _begin(self, request: TurnRequest) -> LiveTurn:
        live = self._new_turn(request, background=True)
        # Give the turn a chance to start before control returns to the test body.
        await asyncio.sleep(0)
        return live

    async def _run_turn(self, request: TurnRequest) -> Turn:
        return await self._new_turn(request, background=False).run_inline()

    async def _close(self) -> None:
        if self._active is not None and not self._active.done:
            self._active._task.cancel()
            try:
                await self._active._task
            except BaseException:  # noqa: BLE001 - closing after a failure must not raise again
                pass
        if self._hs is not None:
            if not self._failed:
                self._on_event(Event(SESSION_COMPLETED, {"session_id": self.session_id}))
            try:
                await self._hs.close()
            except Exception as exc:  # noqa: BLE001
                self.state.log(f"closing session {self.session_id} failed: {exc}")

    # -- the drive API ----------------------------------------------------------------------

    def _message_request(self, input: Any) -> TurnRequest:
        if input is None:
            raise DriveError("send()/start() needs a message")
        self._messages.append({"role": "user", "content": message_text(input)})
        return TurnRequest(input=input, messages=tuple(self._messages))

    async def start(self, input: Any) -> LiveTurn:
        """Start a turn and return as soon as it is running."""
        return await self._begin(self._message_request(input))

    async def send(self, input: Any) -> Turn:
        """Send a message and wait for the turn to settle."""
        return await self._run_turn(self._message_request(input))

    async def send_file(self, text: str, path: str | Path, media_type: str | None = None) -> Turn:
        """Send ``text`` with a file attached as a data URL (path relative to the eval file)."""
        p = Path(path)
        if not p.is_absolute():
            p = self.state.base_dir / p
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise DriveError(f"send_file: cannot read {path}: {exc.strerror or exc}") from None
        mt = media_type or mimetypes.guess_type(p.name)[0] or "application/octet-stream"
        data_url = f"data:{mt};base64,{base64.b64encode(raw).decode('ascii')}"
        message = {
            "role": "user",
            "content": [
                {"type": "text", "text": text},
                {"type": "file", "name": p.name, "media_type": mt, "data_url": data_url},
            ],
        }
        return await self.send(message)

    async def cancel(self) -> str:
        """Cancel the active turn: ``"accepted"`` or ``"no_active_turn"`` (both fine)."""
        live = self._active
        if live is None or live.done:
            return "no_active_turn"
        return "accepted" if await live.cancel() else "no_active_turn"

    @property
    def pending_input_requests(self) -> list[InputRequest]:
        return list(self._pending.values())

    async def require_input_request(self, **filters: Any) -> InputRequest:
        """A gate: exactly one pending request matches ``filters``; returns it.
        Filters: request_id, tool_name, prompt and display (substring or matcher), input,
        option_ids."""
        if self._active is not None and not self._active.done:
            await self._active.result()
        pending = self.pending_input_requests
        matching = [r for r in pending if _request_matches(r, filters)]
        name = "require_input_request(" + ", ".join(f"{k}={v!r}" for k, v in filters.items()) + ")"
        ok = len(matching) == 1
        seen = [r.to_dict() for r in pending]
        message = "" if ok else (
            f"expected exactly one pending input request matching, found {len(matching)} "
            f"among {len(pending)} pending: {seen}"
        )
        handle = self._record_gate(name, ok, expected=filters or None, actual=seen, message=message)
        if not ok:
            raise GateFailed(handle.record)
        return matching[0]

    async def respond(self, *responses: Any) -> Turn:
        """Answer specific pending input requests; they travel as the next turn."""
        if not responses:
            raise DriveError("respond() needs at least one response")
        normalized = tuple(_to_response(r) for r in responses)
        unknown = [r.request_id for r in normalized if r.request_id not in self._pending]
        if unknown:
            raise DriveError(
                f"respond(): no pending input request {', '.join(unknown)}; pending: "
                f"{', '.join(self._pending) or 'none'}"
            )
        return await self._run_turn(TurnRequest(responses=normalized, messages=tuple(self._messages)))

    async def respond_all(self, option_id: str) -> Turn:
        """Answer every pending input request with the same option."""
        if not self._pending:
            raise DriveError("respond_all(): there is no pending input request")
        return await self.respond(*(InputResponse(rid, option_id=option_id) for rid in self._pending))

    @property
    def reply(self) -> str | None:
        for turn in reversed(self.turns):
            if turn.message is not None:
                return turn.message
        return None

    # -- ScopedAssertions -------------------------------------------------------------------

    def _record_gate(self, name: str, ok: bool, *, expected: Any, actual: Any, message: str) -> AssertionHandle:
        from ..results._model import AssertionRecord

        rec = AssertionRecord(
            name=name, kind="gate", status="passed" if ok else "failed", score=1.0 if ok else 0.0,
            threshold=1.0, expected=expected, actual=actual, message=message, scope=self._assert_scope(),
        )
        return self.state.recorder.record(rec)

    def _assert_events(self) -> Sequence[Event]:
        return self.events

    def _assert_statuses(self) -> Sequence[str]:
        return [t.status for t in self.turns]

    def _assert_output(self) -> Any:
        if not self.turns:
            return None
        last = self.turns[-1]
        return last.data if last.data is not None else last.message

    def _assert_recorder(self) -> Recorder:
        return self.state.recorder

    def _assert_scope(self) -> str:
        return f"session {self.session_id}"


def _request_matches(req: InputRequest, filters: dict[str, Any]) -> bool:
    for key, want in filters.items():
        if key == "option_ids":
            if list(want) != req.option_ids:
                return False
        elif key in ("prompt", "display") and isinstance(want, str):
            if want not in (getattr(req, key) or ""):
                return False
        elif key in ("request_id", "tool_name", "prompt", "display", "input", "session_id"):
            if not match_value(want, getattr(req, key))[0]:
                return False
        else:
            raise DriveError(
                f"require_input_request: unknown filter {key!r} "
                "(use request_id, tool_name, prompt, display, input, option_ids)"
            )
    return True


def _to_response(value: Any) -> InputResponse:
    if isinstance(value, InputResponse):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        target, option = value
        rid = target.request_id if isinstance(target, InputRequest) else str(target)
        return InputResponse(rid, option_id=str(option))
    if isinstance(value, dict) and "request_id" in value:
        return InputResponse(str(value["request_id"]), option_id=value.get("option_id"), value=value.get("value"))
    raise DriveError(
        "respond() takes request.respond(option), (request, option_id) pairs or "
        f"{{'request_id': ..., 'option_id': ...}} dicts, got {value!r}"
    )

