"""The control channel between a run and its model-proxy process: one unix stream socket, a JSON
object a line each way.

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
import re
import secrets
import socket
import termios
from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["STAND_IN", "STAND_IN_MARK", "TRIAL_PREFIX", "Channel", "new_stand_in", "open_channel"]

# What both ends agree on besides the messages. A trial's address: <server>/trial/<token>. A
# stand-in key: the run makes them, the process finds them in a request's headers and query.
TRIAL_PREFIX = "/trial/"
STAND_IN_MARK = "anpord-proxy-"
STAND_IN = re.compile(STAND_IN_MARK + "[0-9a-f]{32}")


def new_stand_in() -> str:
    return f"{STAND_IN_MARK}{secrets.token_hex(16)}"


class Channel(asyncio.Protocol):
    def __init__(self, handle: Callable[[dict[str, Any]], None]):
        self._handle = handle
        self._partial = b""
        self._transport: asyncio.Transport | None = None
        self._fd = -1
        self._arrived: list[asyncio.Future[None]] = []
        self.closed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    # -- asyncio.Protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # uvloop's is one, not a subclass
        self._fd = transport.get_extra_info("socket").fileno()

    def data_received(self, data: bytes) -> None:
        *lines, self._partial = (self._partial + data).split(b"\n")
        for line in lines:
            self._handle(orjson.loads(line))
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

    def send(self, message: dict[str, Any]) -> None:
        if self._transport is not None:
            self._transport.write(orjson.dumps(message) + b"\n")

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

    async def caught_up(self) -> None:
        """Every message the other end has written so far (a whole line in the kernel's buffer,
        or part of one) has been handled."""
        while self._transport is not None and (self._partial or self._pending()):
            future = asyncio.get_running_loop().create_future()
            self._arrived.append(future)
            await future

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()


async def open_channel(sock: socket.socket, handle: Callable[[dict[str, Any]], None]) -> Channel:
    loop = asyncio.get_running_loop()
    _, channel = await loop.connect_accepted_socket(lambda: Channel(handle), sock=sock)
    return channel
