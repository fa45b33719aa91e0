"""The sockets one trial service listens on — a trace receiver, a trial's mocks, a model proxy —
opened and closed the same way for each.

Each port is a server on ``127.0.0.1``; where the trial's sandbox closes the network, the port
also listens on a unix socket in a folder the sandbox shows, bridged in at the same port
(``sandboxes/_bridge``), so the agent reaches its own trial's services and nothing else. Every
connection accepted is tracked: ``close()`` ends them with the servers (a keep-alive connection
would otherwise outlive the trial) and removes the socket files.
"""

from __future__ import annotations

import asyncio
import functools
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ._http import MAX_HEADERS
from ._rescue import Watched, unwatch, watch

if TYPE_CHECKING:
    from ..sandboxes._protocol import SandboxInstance

__all__ = ["Handler", "Listeners"]

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


_EPHEMERAL = (32768, 60999)  # Linux's default ip_local_port_range, where none can be read
_cursor: list[int] = []  # the next port to try (a process's own start, so two runs rarely meet)


@functools.cache
def _port_range() -> tuple[int, int]:
    try:
        low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    except (OSError, ValueError):
        return _EPHEMERAL
    return (low, high) if 1024 <= low < high <= 65535 else _EPHEMERAL


def loopback_listener(port: int = 0) -> socket.socket:
    """A non-blocking socket listening on ``127.0.0.1:port``; for 0, a free port of the ephemeral
    range, taken in turn. Not the kernel's choice (``bind`` to port 0): it avoids every port
    holding a closed connection's TIME_WAIT, and a run's trials each leave one on their mock's
    port, so after some thousands of trials each such bind took milliseconds. A port whose only
    sockets are in TIME_WAIT can listen again (``SO_REUSEADDR``)."""
    low, high = _port_range()
    if not _cursor:
        import random

        _cursor.append(random.randrange(low, high + 1))
    for attempt in range(64 if port == 0 else 1):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if port:
                sock.bind(("127.0.0.1", port))
            elif attempt < 63:
                chosen = _cursor[0]
                _cursor[0] = chosen + 1 if chosen < high else low
                sock.bind(("127.0.0.1", chosen))
            else:  # a range that busy: the kernel's choice after all
                sock.bind(("127.0.0.1", 0))
            sock.listen(100)
            sock.setblocking(False)
            return sock
        except OSError:
            sock.close()
            if port or attempt == 63:
                raise
    raise AssertionError("unreachable")


class Listeners:
    """``sandbox``: the trial's, or None; ``folder``: where unix sockets go, asked for on the
    first one (by default the sandbox's state folder, where that is a host folder); ``limit``: the
    readers' buffer limit (the longest line or header block a handler reads in one go);
    ``rescue``: a connection this loop leaves waiting (held by a blocking agent) is served on the
    rescue loop instead (``_rescue``), its handler then running there."""

    def __init__(self, sandbox: SandboxInstance | None, *, folder: Callable[[], Path] | None = None,
                 limit: int = MAX_HEADERS, rescue: bool = False):
        self.sandbox = sandbox
        self._folder = folder
        self.limit = limit
        self._rescue = rescue
        self.rescued = False  # a connection has been served on the rescue loop
        self._watched: list[Watched] = []
        self._rescued: set[asyncio.Task[None]] = set()  # on the rescue loop
        self._servers: list[asyncio.AbstractServer] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self._sockets: list[Path] = []
        self._made: Path | None = None  # a folder of its own for the sockets, removed on close

    def _own_folder(self, sandbox: SandboxInstance) -> Path:
        """The sandbox's state folder where it is a host folder, else a temporary one."""
        if sandbox.host_paths:
            return sandbox.state_dir
        if self._made is None:
            import tempfile

            self._made = Path(tempfile.mkdtemp(prefix="anpord-listen-"))
        return self._made

    async def listen(self, handler: Handler, tag: str, port: int = 0) -> int:
        """Serve ``handler`` on ``127.0.0.1:port`` (0: a free port), and bridged into the sandbox
        when it closes the network. The port. Raises OSError when it cannot be had."""
        serve = self._tracked(handler)
        sock = loopback_listener(port)
        try:
            tcp = await asyncio.start_server(serve, sock=sock, limit=self.limit)
        except BaseException:
            sock.close()
            raise
        if self._rescue:
            self._watch(sock, handler)
        self._servers.append(tcp)
        bound: int = tcp.sockets[0].getsockname()[1]
        sandbox = self.sandbox
        if sandbox is not None and sandbox.loopback_bridged:
            from ..sandboxes._bridge import bind_unix

            folder = self._folder() if self._folder is not None else self._own_folder(sandbox)
            path = folder / f".{tag}-{bound}.sock"
            sock = bind_unix(path)
            self._sockets.append(path)
            self._servers.append(await asyncio.start_unix_server(serve, sock=sock, limit=self.limit))
            if self._rescue:
                self._watch(sock, handler)
            sandbox.bridge_loopback(bound, path)
        return bound

    def _watch(self, sock: socket.socket, handler: Handler) -> None:
        rescued = self._rescued

        def served(task: asyncio.Task[None]) -> None:  # on the rescue loop
            self.rescued = True
            rescued.add(task)
            task.add_done_callback(rescued.discard)

        watched = Watched(sock, handler, self.limit, served)
        self._watched.append(watched)
        watch(watched)

    def _tracked(self, handler: Handler) -> Handler:
        writers = self._writers

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writers.add(writer)
            try:
                await handler(reader, writer)
            finally:
                writers.discard(writer)

        return serve

    def close(self) -> None:
        """Stop listening, end every connection, remove the socket files. Safe to call again."""
        for watched in self._watched:
            unwatch(watched)
        servers, self._servers = self._servers, []
        for server in servers:
            server.close()
        for writer in list(self._writers):
            writer.close()
        for task in list(self._rescued):  # a rescued connection ends with the rest, on its own loop
            task.get_loop().call_soon_threadsafe(task.cancel)
        sockets, self._sockets = self._sockets, []
        for path in sockets:
            try:
                path.unlink()
            except OSError:
                pass
        made, self._made = self._made, None
        if made is not None:
            import shutil

            shutil.rmtree(made, ignore_errors=True)
