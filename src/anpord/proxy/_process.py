"""The model proxy's own process: the run's one HTTP server for every proxied trial, on a core of
its own, so the run's event loop spends nothing on parsing, forwarding and recording calls.

    python -m anpord.proxy._process LISTEN_FD CONTROL_FD QUIET_FD

It is started by the run (``_server``: once the config is read, or with the first proxied trial),
handed the listening TCP socket (bound by the run, so a trial's address is known before this
process has started) and one end of each of two channels (``_channel``). On the control channel,
from the run: a sandboxed trial's ``add`` (with the unix socket to answer on when its sandbox
closes the network, acknowledged), ``settle``, ``read`` (the quiet channel is backing up) and
``close``; to the run: each call's record and
what the trial's log says (``_forwarding``). On the quiet channel, read before each request and
never waited on: ``share`` (a variant's upstreams, credentials and prices, once a run), ``add``
(a trial's token, stand-ins, the shared configuration it names or its own, folders, replay calls)
and ``drop``. It imports aiohttp and the few modules that make a record, not the runner. It
ignores Ctrl-C (the run ends it) and exits when the control channel closes, however the run ended.

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
import signal
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._channel import STAND_IN, STAND_IN_MARK, TRIAL_PREFIX, Channel, QuietReader, open_channel
from ._forwarding import ProxiedTrial, Shared

if TYPE_CHECKING:
    from aiohttp import ClientSession, web

__all__ = ["BODY_LIMIT", "main"]

BODY_LIMIT = 256 << 20  # a request body (a long conversation with images) the proxy accepts
# The longest header line either way (HTTP's libraries stop at 8 KiB; gateways in front of the
# providers take far longer ones, and a proxy must not refuse what the upstream would take).
MAX_HEADER = 64 << 10
# How long closing waits for a request still being answered. Short: a trial's socket closes
# once its programs are gone, so what is still open is abandoned — and aiohttp waits this long
# for every idle kept-alive connection too.
SHUTDOWN_WAIT = 0.05


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


class ProxyProcess:
    def __init__(self, listen: socket.socket):
        self.loop = asyncio.get_running_loop()
        self._listen = listen
        self.url = "http://127.0.0.1:%d" % listen.getsockname()[1]
        self._trials: dict[str, ProxiedTrial] = {}
        # What trials of one variant share, by the run's id (or why it could not be made).
        self._shared: dict[int, Shared | str] = {}
        self._pinned: dict[str, _Pinned] = {}  # token → its unix socket
        self._server: web.Server | None = None
        self._session: ClientSession | None = None
        self.channel: Channel | None = None
        self.quiet: QuietReader | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    def _web_server(self, handler: Any) -> web.Server:
        from aiohttp import web

        loop = self.loop

        def request(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
            return web.BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=BODY_LIMIT)

        # aiohttp's low-level server (no application, router or runner). handler_cancellation: an
        # agent that gives up (its own timeout) ends the upstream call too.
        return web.Server(handler, request_factory=request, handler_cancellation=True,
                          max_line_size=MAX_HEADER, max_field_size=MAX_HEADER)

    async def serve(self, control: socket.socket, quiet: socket.socket) -> None:
        self.channel = await open_channel(control, self._message)
        self.quiet = QuietReader(quiet, self._message)
        self._spawn(self.quiet.keep_reading())
        self._server = server = self._web_server(self._dispatch)
        listener = await self.loop.create_server(server, sock=self._listen)
        await self.channel.closed  # the run has ended (or closed us)
        listener.close()
        self._listen.close()  # uvloop's server listens on a copy
        for pinned in list(self._pinned.values()):
            await pinned.close()
        await server.shutdown(SHUTDOWN_WAIT)
        if self._session is not None:
            await self._session.close()

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
                # Cookies pass through as the agent sends and gets them: a jar here would hand one
                # trial's cookies (a CDN's, say) to every other trial calling that upstream.
                cookie_jar=aiohttp.DummyCookieJar(),
                max_line_size=MAX_HEADER, max_field_size=MAX_HEADER,
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=60),
                connector=aiohttp.TCPConnector(limit=0, force_close=False),
            )
        return session

    # -- the run's messages -------------------------------------------------------------------

    def _message(self, message: dict[str, Any]) -> None:
        op = message["op"]
        if op == "add":
            self._add(message)
        elif op == "share":
            try:
                self._shared[message["id"]] = Shared.from_message(message)
            except Exception as exc:  # noqa: BLE001 - each trial naming it fails its start, saying why
                self._shared[message["id"]] = f"{type(exc).__name__}: {exc}"
        elif op == "drop":
            self._trials.pop(message["token"], None)  # refused from the next request on
            pinned = self._pinned.pop(message["token"], None)
            if pinned is not None:
                self._spawn(pinned.close())
        elif op == "read" and self.quiet is not None:  # the run's quiet messages are backing up
            self.quiet.drain()
        elif op == "settle":
            self._spawn(self._settle(message["token"], message["id"]))
        elif op == "close" and self.channel is not None:
            self.channel.close()

    def _spawn(self, coro: Any) -> None:
        task = self.loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _send(self, out: dict[str, Any]) -> None:
        if self.channel is not None:
            self.channel.send(out)

    async def _flushed(self) -> None:
        if self.channel is not None:
            await self.channel.flushed()

    def _add(self, message: dict[str, Any]) -> None:
        token = message["token"]
        try:
            shared = None
            if "shared" in message:
                found = self._shared.get(message["shared"])
                if not isinstance(found, Shared):
                    raise LookupError(f"the variant's proxy configuration: {found or 'never sent'}")
                shared = found
            trial = ProxiedTrial.from_message(message, shared, self._send, self._flushed, self.client)
        except Exception as exc:  # noqa: BLE001 - said to the run, which fails the trial's start
            self._send({"op": "ack", "id": message.get("id"), "error": f"{type(exc).__name__}: {exc}"})
            return
        self._trials[token] = trial
        if message.get("pin"):
            self._spawn(self._pin(trial, Path(message["pin"]), message.get("id")))

    async def _pin(self, trial: ProxiedTrial, path: Path, ack: Any) -> None:
        """A unix socket at ``path`` (bridged into the trial's sandbox): what arrives there is the trial's."""
        from ..sandboxes._bridge import bind_unix

        try:
            server = self._web_server(functools.partial(self._dispatch, pinned=trial))
            listener = await self.loop.create_unix_server(server, sock=bind_unix(path))
        except Exception as exc:  # noqa: BLE001 - said to the run, which fails the trial's start
            self._send({"op": "ack", "id": ack, "error": f"{type(exc).__name__}: {exc}"})
            return
        self._pinned[trial.token] = _Pinned(server, listener)
        self._send({"op": "ack", "id": ack})

    async def _settle(self, token: str, ack: Any) -> None:
        trial = self._trials.get(token)
        if trial is not None:
            await trial.settled()
        self._send({"op": "ack", "id": ack})

    # -- routing --------------------------------------------------------------------------------

    async def _dispatch(self, request: web.BaseRequest, pinned: ProxiedTrial | None = None) -> web.StreamResponse:
        if self.channel is not None:
            await self.channel.caught_up()  # a trial pinned before this request was sent is known
        if self.quiet is not None:
            self.quiet.drain()  # so is one added or dropped
        path = request.path
        trial = pinned
        if path.startswith(TRIAL_PREFIX):
            token, _, rest = path[len(TRIAL_PREFIX):].partition("/")
            owner = self._trials.get(token)
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
    """A stand-in key (``_channel.STAND_IN``) in the request's headers or query that is not
    ``trial``'s, or None: a stand-in is accepted only from its own trial."""
    own = trial.stand_ins
    for text in (*request.headers.values(), request.query_string):
        if STAND_IN_MARK in text:
            for found in STAND_IN.findall(text):
                if found not in own:
                    return found
    return None


async def _main(listen_fd: int, control_fd: int, quiet_fd: int) -> None:
    listen = socket.socket(fileno=listen_fd)
    listen.setblocking(False)
    control = socket.socket(fileno=control_fd)
    control.setblocking(False)
    await ProxyProcess(listen).serve(control, socket.socket(fileno=quiet_fd))


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle; it closes us
    try:
        # uvloop's loop where installed, as the run's own: less CPU per call.
        import uvloop

        runner: Any = uvloop.run
    except ImportError:
        runner = asyncio.run
    runner(_main(int(argv[0]), int(argv[1]), int(argv[2])))


if __name__ == "__main__":
    main(sys.argv[1:])
