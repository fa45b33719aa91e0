"""Running the view: bind a socket, serve until Ctrl-C or SIGTERM, stop cleanly."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from pathlib import Path
from typing import TextIO

from .._net import allowed_hosts, bind, is_loopback, url_of
from ._data import ViewData

__all__ = ["allowed_hosts", "bind", "is_loopback", "serve_view", "url_of", "warm_up"]

SHUTDOWN_GRACE = 2.0


def warm_up(data: ViewData) -> None:
    """Read the newest run, its baselines and its comparison with them before anyone asks, so
    the first page a person opens, usually that run's grid or its comparison, is served from
    memory. The comparison comes first: it needs only the runs' summaries, so it is ready in a
    moment, while the grid waits for the run's trials to be read. A failure here only means the
    first request reads the run itself (and reports what went wrong)."""
    try:
        readable = [r for r in data.runs() if r.status != "unreadable"]
        summed = getattr(data, "run_summary", None)
        if summed is not None:
            for row in readable[:2]:
                summed(row.run_id)  # what comparing the newest runs reads, before the store opens
        newest = readable[0] if readable else None
        if newest is not None:
            deltas = data.baseline_deltas(newest.run_id)
            # its comparison with its baseline: the "compare with baseline" of its page
            bases = sorted({d.baseline_run_id for d in deltas.values()})
            if bases and bases[0] != newest.run_id:
                from ._compare import compare_page

                compare_page(data, bases[0], newest.run_id)
            data.run(newest.run_id)
            if bases and bases[0] != newest.run_id:
                data.run(bases[0])  # the trials a compared cell's page opens
    except Exception:  # noqa: BLE001 - never let a warm-up stop the server
        return


def serve_view(data: ViewData, sock: socket.socket, *, project_folder: Path, out: TextIO | None = None) -> int:
    """Serve the view of ``data`` on ``sock`` until SIGINT/SIGTERM; returns the exit code (0)."""
    return asyncio.run(_main(data, sock, project_folder, out or sys.stdout))


async def _main(data: ViewData, sock: socket.socket, project_folder: Path, out: TextIO) -> int:
    from aiohttp import web

    from ._app import create_app

    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    app = create_app(data, title=project_folder.name, project_folder=str(project_folder),
                     allowed_hosts=allowed_hosts(sock))
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_GRACE)
    await runner.setup()
    try:
        await web.SockSite(runner, sock, shutdown_timeout=SHUTDOWN_GRACE).start()
        print(f"anpord view: {project_folder} at {url_of(sock)}/ (Ctrl-C to stop)", file=out, flush=True)
        if not is_loopback(sock):
            print("anpord view: note: listening beyond this machine; the view has no login, so anyone "
                  "who can reach this address can read these runs", file=sys.stderr, flush=True)
        warming = loop.run_in_executor(None, warm_up, data)
        await stop.wait()
        warming.cancel()
    finally:
        await runner.cleanup()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        sock.close()
    return 0
