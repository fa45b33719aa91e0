"""Immutable records of what happened: ``Turn`` and ``InputRequest``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from ..assertions import Recorder, ScopedAssertions, tool_calls_from_events
from ..events import INPUT_REQUESTED, Event
from ..harnesses import InputResponse
from ..results._model import ErrorInfo

if TYPE_CHECKING:
    from ..assertions import AssertionHandle, ToolCall

__all__ = ["Turn", "InputRequest", "TurnFailedError"]


class FailureLedger(Protocol):
    """What a turn tells its trial (``TrialState``) when the test expects it to fail: the
    agent's failure is then not the trial's. A protocol, so turns need not know the trial."""

    def expect_failure(self, turn: "Turn") -> None: ...


class TurnFailedError(Exception):
    """``turn.expect_ok()`` on a turn that failed."""


@dataclass(frozen=True)
class InputRequest:
    """A pending question from the agent (an approval, a choice, a value)."""

    request_id: str
    prompt: str
    options: tuple[dict[str, str], ...] = ()
    tool_name: str | None = None
    input: Any = None
    session_id: str | None = None
    display: str | None = None  # how the request is shown to the person deciding, when given

    @property
    def option_ids(self) -> list[str]:
        return [o["id"] for o in self.options]

    def respond(self, option_id: str | None = None, *, value: Any = None) -> InputResponse:
        return InputResponse(self.request_id, option_id=option_id, value=value)

    @classmethod
    def from_event(cls, event: Event) -> "InputRequest":
        d = event.data
        return cls(
            request_id=str(d.get("request_id")),
            prompt=str(d.get("prompt", "")),
            options=tuple(d.get("options") or ()),
            tool_name=d.get("tool_name"),
            input=d.get("input"),
            session_id=d.get("session_id"),
            display=d.get("display") if isinstance(d.get("display"), str) else None,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "prompt": self.prompt,
            "options": list(self.options),
            "tool_name": self.tool_name,
            "input": self.input,
            "session_id": self.session_id,
            "display": self.display,
        }


@dataclass(frozen=True, init=False)
class Turn(ScopedAssertions):
    """One settled turn. ``status``: completed, waiting, failed or cancelled."""

    index: int
    session_id: str
    status: str
    message: str | None
    data: Any
    events: tuple[Event, ...]
    error: str | None = None
    failure: ErrorInfo | None = field(default=None, repr=False)
    _recorder: Recorder | None = field(default=None, repr=False, compare=False)
    _state: FailureLedger | None = field(default=None, repr=False, compare=False)

    def __init__(
        self,
        index: int,
        session_id: str,
        status: str,
        message: str | None,
        data: Any,
        events: tuple[Event, ...],
        error: str | None = None,
        failure: ErrorInfo | None = None,
        _recorder: Recorder | None = None,
        _state: FailureLedger | None = None,
    ) -> None:
        # One dict update instead of a frozen dataclass's setattr per field: a turn is built
        # for every turn of every trial. Still frozen afterwards.
        self.__dict__.update(
            index=index, session_id=session_id, status=status, message=message, data=data,
            events=events, error=error, failure=failure, _recorder=_recorder, _state=_state,
        )

    @property
    def tool_calls(self) -> list["ToolCall"]:
        return tool_calls_from_events(self.events)

    @property
    def input_requests(self) -> list[InputRequest]:
        return [InputRequest.from_event(e) for e in self.events if e.type == INPUT_REQUESTED]

    def expect_ok(self) -> "Turn":
        """Raise if the turn failed; a turn left waiting for input is fine."""
        if self.status == "failed":
            raise TurnFailedError(f"turn {self.index} failed: {self.error or 'no error given'}")
        return self

    def expect_failed(self, error: Any = None) -> "AssertionHandle":
        """Say this turn was meant to fail (the agent should refuse, or fail gracefully): a gate
        that passes when the turn failed — and, given ``error`` (a substring, regex or matcher),
        when its error matches. The failure then no longer fails the trial by itself: the
        trial's verdict comes from its checks."""
        from ..expect import includes, is_matcher, match_value

        failed = self.status == "failed"
        ok, why = failed, ""
        if failed and error is not None:
            matcher = includes(error) if isinstance(error, str) else error
            if is_matcher(matcher):
                result = matcher.evaluate(self.error or "")
                ok, why = result.ok, result.message
            else:
                ok, why = match_value(matcher, self.error or "")
        if not failed:
            why = f"turn {self.index} {self.status}, it did not fail"
        name = "expect_failed(" + (repr(error) if error is not None else "") + ")"
        handle = self._assert_recorder().add(
            name, ok, why, scope=self._assert_scope(),
            expected="a failed turn" + (f" with an error matching {error!r}" if error is not None else ""),
            actual={"status": self.status, "error": self.error},
        )
        if failed and self._state is not None:
            self._state.expect_failure(self)
        return handle

    # -- ScopedAssertions -------------------------------------------------------------------
    def _assert_events(self) -> Sequence[Event]:
        return self.events

    def _assert_statuses(self) -> Sequence[str]:
        return (self.status,)

    def _assert_output(self) -> Any:
        return self.data if self.data is not None else self.message

    def _assert_recorder(self) -> Recorder:
        if self._recorder is None:
            raise RuntimeError("this turn is not attached to a running case")
        return self._recorder

    def _assert_scope(self) -> str:
        return f"turn {self.index}"
