"""Running the agent server: bind, call the agent's setup hook, serve until Ctrl-C or SIGTERM,
then stop every session, call the teardown hook and exit."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from collections.abc import Callable
from typing import TextIO

from .._net import allowed_hosts, bind, url_of
from ..harnesses.python import PythonHarness
from ..runner._capture import captured_output
from .._contain import task_factory
from .._loop import run_bounded
from ..runner._verdict import exception_line

__all__ = ["ServeError", "bind", "serve", "url_of"]

# How long running turns get to write their end once the server is stopping.
SHUTDOWN_GRACE = 3.0


class ServeError(Exception):
    """The server could not start (the agent's setup hook failed): one line, exit 1."""


def serve(
    harness: PythonHarness,
    sock: socket.socket,
    *,
    name: str,
    idle_timeout: float | None,
    out: TextIO | None = None,
    token: str | None = None,
) -> int:
    """Serve ``harness``'s agent on ``sock`` until SIGINT/SIGTERM; returns the exit code. With
    ``token``, every request must carry ``Authorization: Bearer <token>``."""
    out = out or sys.stdout
    err = sys.stderr

    def log(message: str) -> None:
        print(message, file=err, flush=True)

    with captured_output():
        try:
            # Not asyncio.run: an agent task that ignores its cancellation must not keep the
            # server from exiting (see runner._loop).
            return run_bounded(
                _main(harness, sock, name=name, idle_timeout=idle_timeout, out=out, log=log, token=token)
            )
        except ServeError as exc:
            print(f"anpord serve: {exc}", file=err)
            return 1


async def _main(
    harness: PythonHarness,
    sock: socket.socket,
    *,
    name: str,
    idle_timeout: float | None,
    out: TextIO,
    log: Callable[[str], None],
    token: str | None = None,
) -> int:
    from aiohttp import web

    from ._app import create_app

    loop = asyncio.get_running_loop()
    # An agent's sys.exit() in a task it started fails its turn; it never stops the server.
    loop.set_task_factory(task_factory)  # type: ignore[arg-type]
    stop = asyncio.Event()
    signals: list[int] = []

    def on_signal(signum: int) -> None:
        signals.append(signum)
        if len(signals) > 1:
            os._exit(128 + signals[0])  # a second Ctrl-C: stop now, whatever is running
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal, int(sig))
    try:
        try:
            await harness.setup()
        except Exception as exc:  # noqa: BLE001 - the agent's own hook: one line, exit 1
            raise ServeError(f"the agent's setup hook failed: {exception_line(exc)}") from None
        app = create_app(harness, name=name, log=log, idle_timeout=idle_timeout,
                         allowed_hosts=allowed_hosts(sock), token=token)
        runner = web.AppRunner(
            app, handler_cancellation=True, access_log=None, shutdown_timeout=SHUTDOWN_GRACE
        )
        await runner.setup()
        try:
            await web.SockSite(runner, sock, shutdown_timeout=SHUTDOWN_GRACE).start()
            print(f"anpord serve: {name} at {url_of(sock)} (Ctrl-C to stop)", file=out, flush=True)
            await stop.wait()
            log("anpord serve: stopping")
        finally:
            await runner.cleanup()  # stops every session first (see create_app)
            try:
                await harness.teardown()
            except Exception as exc:  # noqa: BLE001
                log(f"anpord serve: the agent's teardown hook failed: {exception_line(exc)}")
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        sock.close()
    return 0
