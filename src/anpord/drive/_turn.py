"""Immutable records of what happened: ``Turn`` and ``InputRequest``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from ..assertions import Recorder, ScopedAssertions, tool_calls_from_events
from ..events import INPUT_REQUESTED, Event
from ..harnesses import InputResponse

if TYPE_CHECKING:
    from ..assertions import ToolCall

__all__ = ["Turn", "InputRequest", "TurnFailedError"]


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
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id,
            "prompt": self.prompt,
            "options": list(self.options),
            "tool_name": self.tool_name,
            "input": self.input,
            "session_id": self.session_id,
        }


@dataclass(frozen=True)
class Turn(ScopedAssertions):
    """One settled turn. ``status``: completed, waiting, failed or cancelled."""

    index: int
    session_id: str
    status: str
    message: str | None
    data: Any
    events: tuple[Event, ...]
    error: str | None = None
    _recorder: Recorder | None = field(default=None, repr=False, compare=False)

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
