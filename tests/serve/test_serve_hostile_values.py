"""What ``anpord serve`` writes is standard JSON whatever the agent returns: NaN and infinities
(which ``json.dumps`` writes as ``NaN``/``Infinity``, unreadable to ``JSON.parse`` or Go) are
``null``, and a reply nested thousands of levels deep is answered, not a 500."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from project_support import Project
from serve_support import request, serve

AGENT = """
async def numbers(turn):
    return {"x": float("inf"), "y": float("nan"), "z": [float("-inf")]}

async def deep(turn):
    value = []
    for _ in range(5000):
        value = [value]
    return {"deep": value}
"""


def _strict(line: bytes) -> Any:
    def refuse(token: str) -> None:
        raise AssertionError(f"non-standard JSON token {token} in {line[:300]!r}")

    return json.loads(line, parse_constant=refuse)


def _turn(make_project: Callable[..., Project], attr: str) -> list[Any]:
    project = make_project({"agents/odd.py": AGENT})
    server = serve(f"agents.odd:{attr}", project.folder)
    try:
        assert request(server.url, "POST", "/v1/sessions", {"session_id": "s"}).status == 201
        reply = request(server.url, "POST", "/v1/sessions/s/turns", {"input": "hi"})
        assert reply.status == 200, reply.body[:500]
        return [_strict(line) for line in reply.body.splitlines() if line.strip()]
    finally:
        assert server.stop() == 0, server.output


def test_non_finite_numbers_an_agent_returns_are_written_as_null(make_project: Callable[..., Project]) -> None:
    lines = _turn(make_project, "numbers")
    end = lines[-1]
    assert end["type"] == "turn.end" and end["status"] == "completed", end
    assert end["data"] == {"x": None, "y": None, "z": [None]}, end


def test_a_reply_nested_thousands_deep_is_answered(make_project: Callable[..., Project]) -> None:
    lines = _turn(make_project, "deep")
    assert lines[-1]["type"] == "turn.end" and lines[-1]["status"] == "completed", json.dumps(lines[-1])[:800]
