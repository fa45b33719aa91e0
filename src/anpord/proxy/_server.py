"""The one model-proxy server every proxied trial of a run is served by.

A trial's proxy used to be a server of its own: a socket, a listener and a client session per
trial, and a new connection for each trial's first call. Now each event loop (a run, a worker)
has one ``ProxyServer``, started on the first proxied trial's start and closed when the run ends
(``close_shared``, from the executor's tear-down) — or, outside a run, once its last trial has
stopped. Its upstream connections (one aiohttp session) are kept for its life.

How a request finds its trial:

- **the address**: each trial is told its own, ``http://127.0.0.1:PORT/trial/<token>`` (every SDK
  appends its API path to the base URL it is given), and the token routes the request. A token
  no running trial holds (its trial has ended) is refused ``403``; so is a request outside any
  trial's address.
- **the connection**, in a sandbox whose network is closed: the trial gets a unix socket of its
  own, bridged in on the proxy's port (``sandboxes._bridge``). What arrives there is that trial's,
  whatever address it names; another trial's token is refused.
- **its stand-in keys**: a request carrying a stand-in of another trial (or of an ended one) is
  refused, so a stand-in is worth nothing outside the trial it was made for.
"""

from __future__ import annotations

import asyncio
import functools
import re
import socket
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from aiohttp import ClientSession, web

__all__ = ["BODY_LIMIT", "ProxiedTrial", "ProxyServer", "STAND_IN", "TRIAL_PREFIX", "acquire",
           "close_shared", "hold_shared"]

BODY_LIMIT = 256 << 20  # a request body (a long conversation with images) the proxy accepts
TRIAL_PREFIX = "/trial/"  # a trial's address: <server>/trial/<token>
# A stand-in key as the proxy makes them (see ModelProxyService): found in a request's headers or
# query, it must be one of the request's own trial.
STAND_IN = re.compile(r"anpord-proxy-[0-9a-f]{32}")
_STAND_IN_MARK = "anpord-proxy-"
# How long closing waits for a request still being answered. Short: the server closes once its
# trials' programs are gone, so what is still open is abandoned — and aiohttp waits this long for
# every idle kept-alive connection too (a run's end, a trial's end, would each take it).
SHUTDOWN_WAIT = 0.05


class ProxiedTrial(Protocol):
    """What the server needs of a trial it routes to (``ModelProxyService`` is one)."""

    label: str
    stand_ins: frozenset[str]

    async def answer(self, request: web.BaseRequest, path: str) -> web.StreamResponse: ...

    def refused(self, message: str) -> None: ...


def _refusal(message: str, status: int = 403) -> web.StreamResponse:
    from aiohttp import web

    kind = "permission_error" if status == 403 else "not_found"
    # OpenAI's error shape and Anthropic's ("type": "error") at once: every SDK shows the message.
    return web.json_response({"type": "error", "error": {"type": kind, "message": f"anpord model proxy: {message}"}},
                             status=status)


class _Pinned:
    """A trial's own unix socket and the server answering on it (its connections end with it)."""

    def __init__(self, server: web.Server, listener: asyncio.AbstractServer):
        self.server, self.listener = server, listener

    async def close(self) -> None:
        self.listener.close()
        await self.server.shutdown(SHUTDOWN_WAIT)


class ProxyServer:
    def __init__(self, loop: asyncio.AbstractEventLoop):
        self.loop = loop
        self.port = 0
        self.url = ""
        self._tokens: dict[str, ProxiedTrial] = {}
        self._pinned: dict[int, _Pinned] = {}  # id(trial) → its unix socket
        self._server: web.Server | None = None
        self._listener: asyncio.AbstractServer | None = None
        self._session: ClientSession | None = None
        self.users = 0  # trials started and not yet stopped
        self.held = False  # a run keeps it open between trials (hold_shared)
        self.closed = False

    # -- life -----------------------------------------------------------------------------------

    def _web_server(self, handler: Any) -> web.Server:
        from aiohttp import web

        loop = self.loop

        def request(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
            return web.BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=BODY_LIMIT)

        # aiohttp's low-level server (no application, router or runner). handler_cancellation: an
        # agent that gives up (its own timeout) ends the upstream call too.
        return web.Server(handler, request_factory=request, handler_cancellation=True)

    async def start(self) -> None:
        self._server = server = self._web_server(self._dispatch)
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(1024)
        tcp.setblocking(False)
        self.port = tcp.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._listener = await self.loop.create_server(server, sock=tcp)

    async def close(self) -> None:
        self.closed = True
        if _SERVERS.get(self.loop) is self:
            del _SERVERS[self.loop]
        pinned, self._pinned = list(self._pinned.values()), {}
        for p in pinned:
            await p.close()
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._server is not None:
            await self._server.shutdown(SHUTDOWN_WAIT)
            self._server = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def release(self) -> None:
        """A trial has stopped: the last one out closes the server, unless a run holds it."""
        self.users -= 1
        if self.users <= 0 and not self.held and not self.closed:
            await self.close()

    # -- trials ---------------------------------------------------------------------------------

    def register(self, token: str, trial: ProxiedTrial) -> str:
        """``trial`` answers at ``<url>/trial/<token>`` from now on; returns that address."""
        self._tokens[token] = trial
        return f"{self.url}{TRIAL_PREFIX}{token}"

    async def unregister(self, token: str, trial: ProxiedTrial) -> None:
        """The trial has ended: its address is refused from now on, its own socket closed."""
        if self._tokens.get(token) is trial:
            del self._tokens[token]
        pinned = self._pinned.pop(id(trial), None)
        if pinned is not None:
            await pinned.close()

    async def pin(self, trial: ProxiedTrial, path: Path) -> None:
        """A unix socket at ``path`` (bridged into the trial's sandbox): what arrives there is the trial's."""
        from ..sandboxes._bridge import bind_unix

        server = self._web_server(functools.partial(self._dispatch, pinned=trial))
        listener = await self.loop.create_unix_server(server, sock=bind_unix(path))
        self._pinned[id(trial)] = _Pinned(server, listener)

    def client(self) -> ClientSession:
        """The session to the upstreams, shared by every trial: connections are kept alive across
        trials (a trial's first call needs no new one)."""
        session = self._session
        if session is None or session.closed:
            import aiohttp

            # No total or read timeout of the proxy's own: the agent's client keeps its timeouts,
            # and when it gives up the handler is cancelled, closing this request.
            session = self._session = aiohttp.ClientSession(
                auto_decompress=False,  # an encoded answer passes through as it came
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=60),
                connector=aiohttp.TCPConnector(limit=0, force_close=False),
            )
        return session

    # -- routing --------------------------------------------------------------------------------

    async def _dispatch(self, request: web.BaseRequest, pinned: ProxiedTrial | None = None) -> web.StreamResponse:
        path = request.path
        trial = pinned
        if path.startswith(TRIAL_PREFIX):
            token, _, rest = path[len(TRIAL_PREFIX):].partition("/")
            owner = self._tokens.get(token)
            if owner is None:
                message = (f"{TRIAL_PREFIX}{token[:8]}… is no running trial's address: its trial has ended "
                           "(or it never was one)")
                if pinned is not None:
                    pinned.refused(message)
                return _refusal(message)
            if pinned is not None and owner is not pinned:
                message = "a request to another trial's address: each trial reaches only its own"
                pinned.refused(message)
                return _refusal(message)
            trial, path = owner, "/" + rest
        elif trial is None:
            return _refusal(f"{request.method} {path}: requests go to a trial's own address, "
                            f"{self.url}{TRIAL_PREFIX}<token> (its ANPORD_MODEL_PROXY_URL)", status=404)
        foreign = _foreign_stand_in(request, trial)
        if foreign is not None:
            message = (f"a stand-in key ({foreign[:21]}…) that is not this trial's: a stand-in is "
                       "accepted only from the trial it was made for, while it runs")
            trial.refused(message)
            return _refusal(message)
        return await trial.answer(request, path)


def _foreign_stand_in(request: web.BaseRequest, trial: ProxiedTrial) -> str | None:
    """A stand-in key in the request's headers or query that is not ``trial``'s, or None."""
    own = trial.stand_ins
    for text in (*request.headers.values(), request.query_string):
        if _STAND_IN_MARK in text:
            for found in STAND_IN.findall(text):
                if found not in own:
                    return found
    return None


# -- one server per event loop ---------------------------------------------------------------------

_SERVERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ProxyServer] = weakref.WeakKeyDictionary()
_STARTING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Future[ProxyServer]] = \
    weakref.WeakKeyDictionary()
_HELD: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


async def acquire() -> ProxyServer:
    """The running loop's server (started on first use), counted as used until ``release()``."""
    loop = asyncio.get_running_loop()
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
