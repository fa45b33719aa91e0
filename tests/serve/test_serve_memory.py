"""A deleted session's memory is given back: a long-lived ``anpord serve`` does not grow with
every conversation it has had. Measured on the real server process (its resident set)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from project_support import Project
from serve_support import request, serve

BIG = 40 << 20  # below the server's 64 MiB body cap


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_deleting_a_session_frees_its_messages(make_project: Callable[..., Project]) -> None:
    project = make_project({"agents/echo.py": "async def agent(turn):\n    return f'got {len(turn.input)}'\n"})
    server = serve("agents.echo:agent", project.folder)
    try:
        body = json.dumps({"input": "x" * BIG}).encode()
        # One conversation first: what a turn costs once (buffers, imports) is not a leak.
        sizes = []
        for i in range(5):
            assert request(server.url, "POST", "/v1/sessions", {"session_id": f"s{i}"}).status == 201
            turn = request(server.url, "POST", f"/v1/sessions/s{i}/turns", raw=body, timeout=60)
            assert turn.lines()[-1]["message"] == f"got {BIG}", turn.body[-300:]
            assert request(server.url, "DELETE", f"/v1/sessions/s{i}").status == 204
            sizes.append(_rss_mib(server.proc.pid))
        # Each kept session would hold its 40 MiB input (160 MiB after four more).
        assert sizes[-1] - sizes[0] < 40, sizes
    finally:
        assert server.stop() == 0, server.output
