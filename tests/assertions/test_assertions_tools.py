"""Joining tool.called and tool.result events into ToolCall records."""

from __future__ import annotations

from typing import Any

import pytest

from anpord.assertions import ToolCall, tool_calls_from_events
from anpord.events import Event


def ev(type_: str, **data: Any) -> Event:
    return Event(type_, data)


def test_joins_by_call_id() -> None:
    calls = tool_calls_from_events(
        [
            ev("tool.called", call_id="a", name="search", input={"q": "x"}),
            ev("tool.called", call_id="b", name="fetch", input={"url": "u"}),
            ev("tool.result", call_id="b", name="fetch", output="page", status="completed"),
            ev(
                "tool.result",
                call_id="a",
                name="search",
                output=None,
                status="failed",
                error="boom",
            ),
        ]
    )
    assert calls == [
        ToolCall("a", "search", {"q": "x"}, None, "failed", "boom"),
        ToolCall("b", "fetch", {"url": "u"}, "page", "completed", None),
    ]


def test_reused_call_ids_join_the_oldest_unresolved_call() -> None:
    calls = tool_calls_from_events(
        [
            ev("tool.called", call_id="c1", name="t", input=1),
            ev("tool.result", call_id="c1", name="t", output="one", status="completed"),
            ev("tool.called", call_id="c1", name="t", input=2),
            ev("tool.result", call_id="c1", name="t", output="two", status="completed"),
        ]
    )
    assert [(c.input, c.output) for c in calls] == [(1, "one"), (2, "two")]


def test_pending_call_and_result_without_id() -> None:
    calls = tool_calls_from_events(
        [
            ev("tool.called", call_id="x", name="approve_me", input={}),
            ev("tool.called", name="lookup", input={"k": 1}),
            ev("tool.result", name="lookup", output=5),
        ]
    )
    assert calls[0].status == "pending"
    assert calls[1].output == 5 and calls[1].status == "completed"


def test_orphan_result_still_counts_and_error_without_status_fails() -> None:
    calls = tool_calls_from_events([ev("tool.result", call_id="z", name="ghost", error="bad")])
    assert calls == [ToolCall("z", "ghost", None, None, "failed", "bad")]


def test_tool_call_is_frozen_and_serialisable() -> None:
    call = ToolCall("a", "t", {"x": 1})
    with pytest.raises(AttributeError):
        call.name = "u"  # type: ignore[misc]
    assert call.to_dict() == {
        "call_id": "a",
        "name": "t",
        "input": {"x": 1},
        "output": None,
        "status": "pending",
        "error": None,
    }
