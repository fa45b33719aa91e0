"""A trial's events as a person reads them: the conversation and the timeline.

The conversation keeps the order things happened in: user and assistant messages, each tool call
with its result found by ``call_id`` (shown where the call was made), input requests with their
answers, commands and failures. The timeline lists every event, custom ones included, with its
time since the trial started.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._data import TrialView
from ._values import BLOCK_LIMIT, LINE_LIMIT, Shown, shown

__all__ = ["CONVERSATION_LIMIT", "TIMELINE_PAGE", "Item", "TimelineRow", "conversation", "timeline"]

TIMELINE_PAGE = 1000  # timeline rows per page of a trial
CONVERSATION_LIMIT = 500  # items shown before "the rest is in the timeline"


@dataclass
class Item:
    """One entry of the conversation. ``kind``: ``message``, ``tool``, ``input``, ``command``,
    ``failure``. ``fields`` holds the kind's values; ``Shown`` ones may be cut."""

    kind: str
    index: int  # the event's index in the trial's events
    fields: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class TimelineRow:
    index: int
    at: float  # seconds since the trial started
    type: str
    data: Shown


def _text(trial: TrialView, i: int, name: str, limit: int = BLOCK_LIMIT) -> Shown:
    return shown(trial, f"event/{i}/{name}", limit)


def conversation(trial: TrialView) -> tuple[list[Item], int]:
    """The conversation items (at most ``CONVERSATION_LIMIT``) and how many were left out."""
    events = trial.events
    results: dict[str, int] = {}
    for i, e in enumerate(events):
        if e.type == "tool.result" and isinstance(e.data.get("call_id"), str):
            results.setdefault(e.data["call_id"], i)
    called = {e.data.get("call_id") for e in events if e.type == "tool.called"}
    answers: dict[str, int] = {}
    for i, e in enumerate(events):
        if e.type == "input.resolved" and isinstance(e.data.get("request_id"), str):
            answers.setdefault(e.data["request_id"], i)
    items: list[Item] = []
    for i, e in enumerate(events):
        d = e.data
        if e.type == "message.completed":
            items.append(Item("message", i, {"role": str(d.get("role") or "assistant"),
                                              "text": _text(trial, i, "text")}))
        elif e.type == "tool.called":
            call_id = d.get("call_id")
            j = results.get(call_id) if isinstance(call_id, str) else None
            items.append(Item("tool", i, _tool(trial, i, j)))
        elif e.type == "tool.result" and d.get("call_id") not in called:
            items.append(Item("tool", i, _tool(trial, None, i)))  # a result without its call
        elif e.type == "input.requested":
            rid = d.get("request_id")
            j = answers.get(rid) if isinstance(rid, str) else None
            answer = None
            if j is not None:
                a = events[j].data
                answer = a.get("option_id", a.get("value"))
            items.append(Item("input", i, {
                "prompt": str(d.get("prompt") or ""),
                "tool_name": d.get("tool_name"),
                "options": _options(d.get("options")),
                "input": _text(trial, i, "input") if "input" in d and d.get("input") is not None else None,
                "answered": j is not None,
                "answer": answer if isinstance(answer, str) else None if answer is None else repr(answer),
            }))
        elif e.type == "command.completed":
            items.append(Item("command", i, {
                "command": _text(trial, i, "command"),
                "exit_code": d.get("exit_code"),
                "output": _text(trial, i, "output") if d.get("output") else None,
            }))
        elif e.type in ("turn.failed", "session.failed"):
            items.append(Item("failure", i, {"type": e.type,
                                              "error": _text(trial, i, "error") if d.get("error") else None}))
    return items[:CONVERSATION_LIMIT], max(0, len(items) - CONVERSATION_LIMIT)


def _options(raw: Any) -> list[str]:
    if not isinstance(raw, list):
        return []
    out = []
    for o in raw:
        if isinstance(o, dict):
            label, oid = o.get("label"), o.get("id")
            out.append(f"{oid} ({label})" if label and label != oid else str(oid))
        else:
            out.append(str(o))
    return out


def _tool(trial: TrialView, call: int | None, result: int | None) -> dict[str, Any]:
    events = trial.events
    source = events[call if call is not None else result]  # type: ignore[index]
    fields: dict[str, Any] = {
        "name": str(source.data.get("name") or "?"),
        "call_id": source.data.get("call_id"),
        "input": _text(trial, call, "input") if call is not None and "input" in events[call].data else None,
        "has_result": result is not None,
        "orphan": call is None,
    }
    if result is not None:
        r = events[result].data
        fields["status"] = str(r.get("status") or "completed")
        fields["output"] = _text(trial, result, "output") if "output" in r and r.get("output") is not None else None
        fields["error"] = _text(trial, result, "error") if r.get("error") else None
    return fields


def _start(trial: TrialView) -> float:
    first = trial.events[0].ts if trial.events else 0.0
    started = trial.result.started_at
    return started if 0 < started <= first else first


def timeline(trial: TrialView, offset: int = 0) -> list[TimelineRow]:
    """Rows ``offset`` to ``offset + TIMELINE_PAGE`` of the timeline."""
    events: Sequence[Any] = trial.events
    t0 = _start(trial)
    rows = []
    for i in range(offset, min(len(events), offset + TIMELINE_PAGE)):
        e = events[i]
        rows.append(TimelineRow(i, e.ts - t0, e.type, shown(trial, f"event/{i}", LINE_LIMIT)))
    return rows
