"""Tool calls joined from the event stream: ``tool.called`` + ``tool.result`` by ``call_id``."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..events import TOOL_CALLED, TOOL_RESULT, Event

__all__ = ["ToolCall", "tool_calls_from_events"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call. ``status`` is ``completed``, ``failed``, or ``pending`` (no result yet, e.g.
    while the session waits for an approval)."""

    call_id: str | None
    name: str
    input: Any = None
    output: Any = None
    status: str = "pending"
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "call_id": self.call_id,
            "name": self.name,
            "input": self.input,
            "output": self.output,
            "status": self.status,
            "error": self.error,
        }


def tool_calls_from_events(events: Iterable[Event]) -> list[ToolCall]:
    """Every tool call in order of ``tool.called``.

    A result joins the oldest unresolved call with its ``call_id`` (ids are often reused across
    turns, e.g. ``c1`` each time a command agent runs); a result without a known id joins the oldest
    unresolved call of the same name; a result with no call at all still counts as a call.
    """
    calls: list[dict[str, Any]] = []
    by_id: dict[Any, list[int]] = {}  # call_id -> indexes of unresolved calls, oldest first
    for ev in events:
        if ev.type == TOOL_CALLED:
            call_id = ev.data.get("call_id")
            calls.append(
                {
                    "call_id": call_id,
                    "name": str(ev.data.get("name", "")),
                    "input": ev.data.get("input"),
                    "output": None,
                    "status": "pending",
                    "error": None,
                }
            )
            by_id.setdefault(call_id, []).append(len(calls) - 1)
        elif ev.type == TOOL_RESULT:
            call_id = ev.data.get("call_id")
            name = ev.data.get("name")
            index = _take(by_id, call_id)
            if index is None:
                index = _take_by_name(calls, by_id, name)
            if index is None:
                calls.append(
                    {"call_id": call_id, "name": str(name or ""), "input": None, "error": None}
                )
                index = len(calls) - 1
            call = calls[index]
            call["output"] = ev.data.get("output")
            status = ev.data.get("status")
            error = ev.data.get("error")
            # A result that names an error but no status is a failure, not a success.
            call["status"] = str(status) if status else ("failed" if error else "completed")
            call["error"] = None if error is None else str(error)
    return [ToolCall(**c) for c in calls]


def _take(by_id: dict[Any, list[int]], call_id: Any) -> int | None:
    if call_id is None:
        return None
    pending = by_id.get(call_id)
    if not pending:
        return None
    return pending.pop(0)


def _take_by_name(
    calls: list[dict[str, Any]], by_id: dict[Any, list[int]], name: Any
) -> int | None:
    best: tuple[int, Any] | None = None
    for call_id, pending in by_id.items():
        for index in pending:
            if (name is None or calls[index]["name"] == name) and (best is None or index < best[0]):
                best = (index, call_id)
                break
    if best is None:
        return None
    by_id[best[1]].remove(best[0])
    return best[0]
