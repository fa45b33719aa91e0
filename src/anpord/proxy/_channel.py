"""The control channel between a run and its model-proxy process: one unix stream socket, a JSON
object a line each way; and a quiet one, from the run to the process only (``QuietReader``).

Order is what makes it cheap: neither end waits for the other's acknowledgement of what it
wrote. A message written before an HTTP request was sent is in the reader's socket buffer by
the time the request arrives, so ``caught_up()`` — every byte the kernel holds for this end
read and handled — is all the proxy needs before routing a request to a trial just added (or
just removed), and all the run needs before its checks read what the proxy recorded.
"""

from __future__ import annotations

import array
import asyncio
import fcntl
import json
import os
import re
import secrets
import select
import socket
import termios
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["QUIET_READ", "STAND_IN", "STAND_IN_MARK", "TRIAL_PREFIX", "Channel", "QuietReader", "new_stand_in",
           "open_channel"]

# What both ends agree on besides the messages. A trial's address: <server>/trial/<token>. A
# stand-in key: the run makes them, the process finds them in a request's headers and query.
TRIAL_PREFIX = "/trial/"
STAND_IN_MARK = "anpord-proxy-"
STAND_IN = re.compile(STAND_IN_MARK + "[0-9a-f]{32}")


# Seconds between the proxy process's readings of the quiet channel when no request comes (what it
# holds is otherwise read before each request).
QUIET_READ = 0.05
_HUNG_UP = select.POLLRDHUP | select.POLLHUP | select.POLLERR


def new_stand_in() -> str:
    return f"{STAND_IN_MARK}{secrets.token_hex(16)}"


def _dumps(message: dict[str, Any]) -> bytes:
    """One message as a line. What orjson refuses — a lone surrogate, escaped in a request's JSON
    as a JavaScript agent cutting a string mid-emoji sends it, an integer past 64 bits — goes as
    ASCII-escaped JSON, which ``_loads`` reads back exactly."""
    try:
        return orjson.dumps(message)
    except TypeError:
        return json.dumps(message, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _loads(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:  # what ``_dumps`` wrote with the standard library
        return json.loads(line)


class Channel(asyncio.Protocol):
    def __init__(self, handle: Callable[[dict[str, Any]], None]):
        self._handle = handle
        self._partial = b""
        self._transport: asyncio.Transport | None = None
        self._fd = -1
        self._poll: select.poll | None = None
        self._arrived: list[asyncio.Future[None]] = []
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is one, not a subclass
        self._fd = transport.get_extra_info("socket").fileno()
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLRDHUP)

    def data_received(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            self._handle(_loads(line))
        waiting, self._arrived = self._arrived, []
        for future in waiting:
            if not future.done():
                future.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._transport = None
        for future in [*self._arrived, self.closed]:
            if not future.done():
                future.set_result(None)
        self._arrived = []

    # -- use ----------------------------------------------------------------------------------

    @property
    def open(self) -> bool:
        return self._transport is not None and not self._transport.is_closing()

    def hung_up(self) -> bool:
        """Whether the other end has closed its end — known as soon as it has, before the loop
        has read the end of the stream (a process killed a moment ago)."""
        if self._transport is None or self._poll is None:
            return True
        return any(events & _HUNG_UP for _, events in self._poll.poll(0))

    def send(self, message: dict[str, Any]) -> None:
        if self._transport is not None:
            self._transport.write(_dumps(message) + b"\n")

    def sent(self) -> bool:
        """Whether everything written has reached the kernel (the other end can read it)."""
        return self._transport is None or self._transport.get_write_buffer_size() == 0

    async def flushed(self) -> None:
        while not self.sent():
            await asyncio.sleep(0.001)

    def _pending(self) -> int:
        if self._fd < 0 or self._transport is None:
            return 0
        buf = array.array("i", [0])
        fcntl.ioctl(self._fd, termios.FIONREAD, buf)
        return buf[0]

    def _read_now(self) -> bool:
        """Read and handle, now, what the kernel holds for this end, rather than wait for the
        loop's next turn to: the transport's own read then finds nothing, as after a spurious
        wake-up. Returns whether what was written so far is all handled (no line half-read)."""
        while self._transport is not None and self._pending():
            try:
                data = os.read(self._fd, 1 << 16)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                return True  # the transport sees the fault on its own read
            if not data:  # the other end has closed: the transport reads that too
                return True
            self.data_received(data)
        return not self._partial

    async def caught_up(self) -> None:
        """Every message the other end has written so far (a whole line in the kernel's buffer,
        or part of one) has been handled. At once when all of it was in the kernel's buffer,
        as a record written before its answer is: no turn of the loop is waited for."""
        while self._transport is not None and not self._read_now():
            future = asyncio.get_running_loop().create_future()  # the line's rest is on its way
            self._arrived.append(future)
            await future

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


async def open_channel(sock: socket.socket, handle: Callable[[dict[str, Any]], None]) -> Channel:
    loop = asyncio.get_running_loop()
    _, channel = await loop.connect_accepted_socket(lambda: Channel(handle), sock=sock)
    return channel


class QuietReader:
    """The process's end of the quiet channel: what the run sends that matters only once a request
    is to be routed (a trial added or dropped, a variant's configuration). The process never
    waits on it, and so the run's writing wakes nothing: on a virtual machine, waking a process
    that sleeps on another CPU costs the writer an interrupt between CPUs, several times what the
    write itself costs, and the run would pay it twice a trial. The process reads what is there
    before it routes each request (``drain``), which a message written before the request was
    sent always is; every ``QUIET_READ`` seconds; and when the run finds the socket's buffer full
    (trials come and go without calling their model) and asks it to, on the control channel."""

    def __init__(self, sock: socket.socket, handle: Callable[[dict[str, Any]], None]):
        sock.setblocking(False)
        self._sock, self._handle = sock, handle
        self._partial = b""
        self.closed = False

    def drain(self) -> None:
        while not self.closed:
            try:
                data = self._sock.recv(1 << 16)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:  # the run has closed it (its main channel says the rest)
                self.closed = True
                self._sock.close()
                return
            *lines, self._partial = (self._partial + data).split(b"\n")
            for line in lines:
                self._handle(_loads(line))

    async def keep_reading(self) -> None:
        while not self.closed:
            await asyncio.sleep(QUIET_READ)
            self.drain()
