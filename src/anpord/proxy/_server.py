"""The run's side of its one model-proxy process (``_process``): started before the run's loop
(``start_early``) or with the first proxied trial, closed when the run ends.

Each event loop (a run, a worker) has one ``ProxyServer``: it binds the listening socket on
``127.0.0.1`` (so a trial's address is known at once), starts ``python -m anpord.proxy._process``
with it and one end of a control channel and of a quiet one (``_channel``) — or adopts the
process ``start_early`` started —, and closes it when the run ends (``close_shared``, from the
executor's tear-down) — or, outside a run, once its last trial has stopped. The process answers
the trials' model calls on a core of its own; what it records comes back over the control channel
and is handed to the trial it belongs to (``ModelProxyService.received``). The process exits
when the control channel closes, so it never outlives the run, whatever ended it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import subprocess
import sys
import weakref
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any, Protocol

from ._channel import TRIAL_PREFIX, Channel, open_channel

__all__ = ["ProxyServer", "Receiver", "acquire", "close_shared", "discard_early", "hold_shared", "start_early"]

CLOSE_WAIT = 5.0  # seconds the process is given to exit once terminated, before it is killed


class Receiver(Protocol):
    """What the server hands a trial's messages to (``ModelProxyService`` is one)."""

    def received(self, message: dict[str, Any]) -> None: ...


class _Spawned:
    """The proxy's process, started, with the run's ends of its channels not yet read by any loop."""

    def __init__(self, port: int, process: subprocess.Popen[bytes], control: socket.socket, quiet: socket.socket):
        self.port, self.process, self.control, self.quiet = port, process, control, quiet

    @classmethod
    def spawn(cls) -> _Spawned:
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        quiet, quiet_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        passed = (tcp.fileno(), theirs.fileno(), quiet_theirs.fileno())
        try:
            tcp.bind(("127.0.0.1", 0))
            tcp.listen(1024)
            env = dict(os.environ)
            # The process imports this installation's anpord, wherever the run found it.
            here = str(Path(__file__).resolve().parents[2])
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [here, env.get("PYTHONPATH")]))
            process = subprocess.Popen([sys.executable, "-m", "anpord.proxy._process", *map(str, passed)],
                                       pass_fds=passed, stdin=subprocess.DEVNULL, env=env)
            port = tcp.getsockname()[1]
        except BaseException:
            ours.close()
            quiet.close()
            raise
        finally:
            tcp.close()  # the process holds it now: once it exits, nothing listens
            theirs.close()
            quiet_theirs.close()
        ours.setblocking(False)
        quiet.setblocking(False)
        return cls(port, process, ours, quiet)

    def discard(self) -> None:
        """Never used by a trial: nothing it holds is lost."""
        self.control.close()
        self.quiet.close()
        self.process.kill()
        self.process.wait()


# A process started before the run's loop (``start_early``), for its first ProxyServer to adopt.
_EARLY: list[_Spawned] = []


def start_early() -> None:
    """Start the proxy's process now, before the run's loop exists: the first proxied trial then
    finds it ready instead of waiting the ~0.2 s it takes to import its HTTP server."""
    if not _EARLY:
        _EARLY.append(_Spawned.spawn())


def discard_early() -> None:
    """The run has ended without adopting the process ``start_early`` started: it exits."""
    while _EARLY:
        _EARLY.pop().discard()


def _take_early() -> _Spawned | None:
    return _EARLY.pop() if _EARLY else None


class ProxyServer:
    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.port = 0
        self.url = ""
        self._receivers: dict[str, Receiver] = {}
        self._acks: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._shared: dict[Hashable, tuple[dict[str, Any], int]] = {}
        self._ids = itertools.count(1)
        self._channel: Channel | None = None
        # What the process reads only before it routes a request (_channel.QuietReader): adds,
        # drops and shared configurations, written without waking it.
        self._quiet: Channel | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.users = 0  # trials started and not yet stopped
        self.held = False  # a run keeps it open between trials (hold_shared)
        self.closed = False

    # -- life -----------------------------------------------------------------------------------

    async def start(self) -> None:
        spawned = _take_early() or _Spawned.spawn()
        self.port, self._process = spawned.port, spawned.process
        self.url = f"http://127.0.0.1:{self.port}"
        self._channel = await open_channel(spawned.control, self._message)
        self._quiet = await open_channel(spawned.quiet, _nothing)

    async def close(self) -> None:
        self.closed = True
        if _SERVERS.get(self.loop) is self:
            del _SERVERS[self.loop]
        channel, self._channel = self._channel, None
        if self._quiet is not None:
            self._quiet.close()
            self._quiet = None
        if channel is not None:
            channel.close()  # the process exits when its end reads the close
        process, self._process = self._process, None
        if process is not None:
            # Its trials have stopped and what it recorded for them has been read: nothing it
            # holds is still wanted, and an orderly exit (its servers and sessions closed, its
            # interpreter's own end) would keep the run waiting a tenth of a second.
            process.terminate()
            try:
                await asyncio.wait_for(self.loop.run_in_executor(None, process.wait), CLOSE_WAIT)
            except asyncio.TimeoutError:
                process.kill()
                await self.loop.run_in_executor(None, process.wait)
        for future in self._acks.values():
            if not future.done():
                future.set_result({"error": "the model proxy's process has ended"})
        self._acks.clear()

    async def release(self) -> None:
        """A trial has stopped: the last one out closes the server, unless a run holds it."""
        self.users -= 1
        if self.users <= 0 and not self.held and not self.closed:
            await self.close()

    # -- trials ---------------------------------------------------------------------------------

    async def register(self, token: str, trial: Receiver, config: dict[str, Any], pin: Path | None = None) -> str:
        """``trial`` answers at ``<url>/trial/<token>`` from now on (and, with ``pin``, at the unix
        socket there, bridged into its sandbox); returns that address."""
        self._live()
        self._receivers[token] = trial
        message = {"op": "add", "token": token, **config}
        if pin is None:
            await self._tell(message)  # in the process's socket buffer before the agent can call
        else:
            message["pin"] = str(pin)
            answer = await self._ask(message)  # the socket exists before the sandbox starts
            if answer.get("error"):
                self._receivers.pop(token, None)
                raise RuntimeError(f"model proxy: {answer['error']}")
        return f"{self.url}{TRIAL_PREFIX}{token}"

    def shared(self, key: Hashable, build: Callable[[], dict[str, Any]]) -> tuple[dict[str, Any], int]:
        """Part of an ``add`` that many trials share (a variant's upstreams, credentials and
        prices): built and sent to the process once, under the id returned, which each trial's
        ``register`` config names as ``shared``."""
        found = self._shared.get(key)
        if found is None:
            config = build()
            ident = len(self._shared) + 1
            self._live()
            assert self._quiet is not None
            self._quiet.send({"op": "share", "id": ident, **config})  # before the adds naming it
            found = self._shared[key] = (config, ident)
        return found

    async def unregister(self, token: str) -> None:
        """The trial has ended: its address is refused from now on, its own socket closed."""
        self._receivers.pop(token, None)
        if self._quiet is not None and self._quiet.open:
            await self._tell({"op": "drop", "token": token})  # refused from the next request on

    async def _tell(self, message: dict[str, Any]) -> None:
        """``message`` on the quiet channel, in the process's socket buffer on return. When the
        buffer is full (trials came and went and no request made the process read it), the
        process is woken to read it: the quiet channel's backlog stays a buffer's worth."""
        quiet = self._quiet
        assert quiet is not None
        quiet.send(message)
        if not quiet.sent():
            channel = self._channel
            if channel is not None and channel.open:
                channel.send({"op": "read"})
            await quiet.flushed()

    async def caught_up(self) -> None:
        """Every record the process has sent so far has reached its trial."""
        if self._channel is not None:
            await self._channel.caught_up()

    async def settle(self, token: str) -> None:
        """The trial's calls still being answered have finished (or been given their moment)."""
        if self._channel is not None and self._channel.open:
            await self._ask({"op": "settle", "token": token})

    @property
    def running(self) -> bool:
        """Whether its process is there to answer: its channel, open once started, still is —
        the process has not closed its end (as it does by dying, before the loop reads that)."""
        return self._channel is not None and self._channel.open and not self._channel.hung_up()

    def _live(self) -> Channel:
        channel = self._channel
        if channel is None or not channel.open:
            code = self._process.poll() if self._process is not None else None
            raise RuntimeError("the model proxy's process has ended" + (f" (exit code {code})" if code is not None else ""))
        return channel

    async def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        channel = self._live()
        message["id"] = ident = next(self._ids)
        future = self._acks[ident] = self.loop.create_future()
        channel.send(message)
        closed = channel.closed
        await asyncio.wait([future, closed], return_when=asyncio.FIRST_COMPLETED)
        self._acks.pop(ident, None)
        return future.result() if future.done() else {"error": "the model proxy's process has ended"}

    def _message(self, message: dict[str, Any]) -> None:
        if message["op"] == "ack":
            future = self._acks.get(message.get("id") or 0)
            if future is not None and not future.done():
                future.set_result(message)
            return
        receiver = self._receivers.get(message.get("token") or "")
        if receiver is not None:
            receiver.received(message)


def _nothing(message: dict[str, Any]) -> None:
    """What the process sends on the quiet channel: nothing (it only reads it)."""


# -- one server per event loop ---------------------------------------------------------------------

_SERVERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ProxyServer] = weakref.WeakKeyDictionary()
_STARTING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future[ProxyServer]] = \
    weakref.WeakKeyDictionary()
_HELD: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


async def acquire() -> ProxyServer:
    """The running loop's server (started on first use), counted as used until ``release()``.
    One whose process has ended (killed, out of memory) is closed and a new one started: the
    calls it was answering failed as they would with any server gone, the trials after them
    are proxied again."""
    loop = asyncio.get_running_loop()
    server = _SERVERS.get(loop)
    while server is not None and not server.closed and not server.running:
        await server.close()  # reaps its process; no longer the loop's
        server = _SERVERS.get(loop)
    if server is None or server.closed:
        starting = _STARTING.get(loop)
        if starting is None:
            starting = _STARTING[loop] = loop.create_future()
            fresh = ProxyServer(loop)
            fresh.held = loop in _HELD
            try:
                await fresh.start()
            except BaseException as exc:
                del _STARTING[loop]
                starting.set_exception(exc)
                starting.exception()  # retrieved: the trials waiting on it see it raised
                raise
            _SERVERS[loop] = fresh
            del _STARTING[loop]
            starting.set_result(fresh)
        server = await asyncio.shield(starting)
    server.users += 1
    return server


def hold_shared() -> None:
    """A run is starting on the running loop: its server, once started, stays open between
    trials until ``close_shared()``."""
    loop = asyncio.get_running_loop()
    _HELD.add(loop)
    server = _SERVERS.get(loop)
    if server is not None:
        server.held = True


async def close_shared() -> None:
    """The run has ended: the loop's server closes (now, or when its last trial stops)."""
    loop = asyncio.get_running_loop()
    _HELD.discard(loop)
    server = _SERVERS.get(loop)
    if server is not None:
        server.held = False
        if server.users <= 0:
            await server.close()
