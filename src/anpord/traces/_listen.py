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
        if self._rescue:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind(("127.0.0.1", port))
                sock.listen(100)
                sock.setblocking(False)
                tcp = await asyncio.start_server(serve, sock=sock, limit=self.limit)
            except BaseException:
                sock.close()
                raise
            self._watch(sock, handler)
        else:
            tcp = await asyncio.start_server(serve, "127.0.0.1", port, limit=self.limit)
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
