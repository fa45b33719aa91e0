"""What ends with a session of ``anpord serve``: a deleted session's memory is given back (a
long-lived server does not grow with every conversation it has had; measured on the real server
process, its resident set), and an agent that swallows its cancellation does not keep the server
from stopping."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from project_support import Project
from serve_support import request, serve, stream_lines, wait_for

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


def test_an_agent_that_swallows_its_cancellation_does_not_keep_the_server_alive(
    make_project: Callable[..., Project],
) -> None:
    project = make_project({"agents/stubborn.py": (
        "import asyncio, pathlib\n"
        "async def agent(turn):\n"
        "    pathlib.Path('started').write_text('yes')\n"
        "    while True:\n"
        "        try:\n"
        "            await asyncio.sleep(100)\n"
        "        except asyncio.CancelledError:\n"
        "            pass\n"
    )})
    server = serve("agents.stubborn:agent", project.folder)
    assert request(server.url, "POST", "/v1/sessions", {"session_id": "s"}).status == 201
    # A turn left running; then the session is deleted (its agent abandoned) and the server
    # is stopped with one SIGTERM, which must end it.
    threading.Thread(target=lambda: list(stream_lines(server.url, "/v1/sessions/s/turns", {"input": "x"}, timeout=30)),
                     daemon=True).start()
    wait_for((project.folder / "started").exists, what="the agent's turn to start")
    assert request(server.url, "DELETE", "/v1/sessions/s").status == 204
    assert server.stop(timeout=20) == 0, server.output
