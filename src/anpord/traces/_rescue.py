"""Connections a held event loop cannot accept, answered on a loop of its own.

A trial's services (its mocks) listen on the run's event loop, which an in-process agent shares.
An ``async def`` agent that calls one with a blocking client (``requests``, ``urllib``,
``subprocess.run`` of a CLI mock) holds that loop while it waits for an answer only the loop
could give: the run would hang for ever. So one daemon thread per process, with a loop of its
own, looks at the watched listening sockets every ``LOOK`` seconds; a socket with a connection
waiting at two looks in a row has a loop that is not accepting, and the connections waiting
are accepted and served here instead. A loop that is only busy loses nothing by it: the call is
answered the same way, a little sooner.

What is served here runs the same handler; what it records has to reach the trial's loop in its
own time (``Listeners.rescued``, ``MockService``).
"""

from __future__ import annotations

import asyncio
import os
import select
import socket
import threading
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["LOOK", "Watched", "on_rescue_loop", "unwatch", "watch"]

LOOK = 0.05  # seconds between looks at the watched sockets
T = TypeVar("T")
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Watched:
    """One listening socket and what serves it; ``limit``, its readers' buffer limit; ``served``,
    called on the rescue loop with each connection's task as it starts."""

    def __init__(self, sock: socket.socket, serve: Handler, limit: int, served: Callable[[asyncio.Task[Any]], None]):
        self.sock, self.serve, self.limit, self.served = sock, serve, limit, served
        self.waiting = False  # a connection was waiting at the last look


_lock = threading.Lock()
_watched: dict[int, Watched] = {}  # by id()
_loop: asyncio.AbstractEventLoop | None = None
_pid = 0  # the process that started the thread: a forked worker starts its own
_looking = False


def _rescue_loop() -> asyncio.AbstractEventLoop:
    """The thread's loop, started on first use (under ``_lock``)."""
    global _loop, _pid
    if _loop is None or _pid != os.getpid():
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="anpord-rescue", daemon=True).start()
        _loop, _pid = loop, os.getpid()
    return _loop


def watch(watched: Watched) -> None:
    global _looking
    with _lock:
        _watched[id(watched)] = watched
        if not _looking or _pid != os.getpid():
            _looking = True
            _rescue_loop().call_soon_threadsafe(lambda: asyncio.ensure_future(_look()))


def unwatch(watched: Watched) -> None:
    with _lock:
        _watched.pop(id(watched), None)


async def on_rescue_loop(work: Coroutine[Any, Any, T]) -> T:
    """``work`` run on the rescue loop, awaited from the caller's."""
    with _lock:
        loop = _rescue_loop()
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, loop))


async def _look() -> None:
    """Every ``LOOK`` seconds while anything is watched: accept what has waited since the last look."""
    global _looking
    while True:
        await asyncio.sleep(LOOK)
        with _lock:
            if not _watched:
                _looking = False
                return
            now = [(w.sock.fileno(), w) for w in _watched.values()]
        poll = select.poll()
        for fd, _ in now:
            if fd >= 0:  # not closed by its trial since
                poll.register(fd, select.POLLIN)
        ready = {fd for fd, events in poll.poll(0) if events & select.POLLIN}
        for fd, watched in now:
            if fd < 0 or fd not in ready:
                watched.waiting = False
            elif not watched.waiting:
                watched.waiting = True  # accepted by its own loop before the next look, if it turns
            else:
                watched.waiting = False
                try:
                    await _accept(watched)
                except Exception:  # noqa: BLE001 - one socket's fault never stops the looking
                    pass


async def _accept(watched: Watched) -> None:
    while True:
        try:
            conn, _ = watched.sock.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return  # all taken (perhaps by its own loop, turning at last)
        except OSError:  # closed as its trial stopped
            return
        conn.setblocking(False)
        try:
            reader, writer = await asyncio.open_connection(sock=conn, limit=watched.limit)
        except OSError:
            conn.close()
            continue
        watched.served(asyncio.ensure_future(_served(watched.serve, reader, writer)))


async def _served(serve: Handler, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        await serve(reader, writer)
    finally:  # its trial stopped (the task cancelled), or the handler is done with it
        writer.close()
