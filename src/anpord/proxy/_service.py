"""The model proxy: one trial's loopback endpoint for the agent's own model calls.

Started on the per-trial service seam (runner/_services). It listens on ``127.0.0.1`` (and, where
the sandbox closes the network, on a unix socket bridged in, as the mocks do), speaks each
provider's API by path (``_providers``) and forwards to the caller's upstream: the body as sent,
the answer back as it arrives, chunk by chunk, status and headers as the upstream gave them. The
real credentials stay here: the agent's key variables hold per-trial stand-ins, swapped for the
real values on the way out. Each call is a ``model.called`` event (``source: "proxy"``) holding
what a replay needs (``--replay``: ``_replay``), redacted.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import socket
import tempfile
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import exception_line
from ..events import MODEL_CALLED, Event
from ._providers import BASE_URL_VARIABLES, DEFAULT_UPSTREAMS, KEY_VARIABLES, SERVED, Route, route_of
from ._record import call_record, request_key

if TYPE_CHECKING:
    from aiohttp import ClientSession, web

    from .._service_protocol import ServiceContext
    from ._replay import ReplayCalls

__all__ = ["ModelProxyService", "ProxyHandle"]

# Request headers never forwarded: hop-by-hop, or set again for the upstream connection.
# Accept-Encoding goes too: the upstream then answers uncompressed, which the record can read.
_REQUEST_DROPPED = frozenset({"host", "connection", "keep-alive", "proxy-authorization", "proxy-connection",
                              "te", "trailer", "transfer-encoding", "upgrade", "content-length",
                              "accept-encoding"})
_RESPONSE_DROPPED = frozenset({"connection", "keep-alive", "transfer-encoding", "trailer", "upgrade",
                               "content-length", "date", "server"})
SETTLE_WAIT = 2.0  # seconds settle() waits for calls still being answered
BODY_LIMIT = 256 << 20  # a request body (a long conversation with images) the proxy accepts
# Each event loop's session to the upstreams, and how many proxies are running on it: the last
# one to stop closes it (weakly keyed: a finished loop's goes with it).
_SESSIONS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, ClientSession] = weakref.WeakKeyDictionary()
_RUNNING: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = weakref.WeakKeyDictionary()


class ProxyHandle:
    """The running proxy as a harness sees it (``HarnessContext.extra["model_proxy"]``): its
    ``url`` and the variables pointing an agent at it (``env``)."""

    def __init__(self, url: str, env: dict[str, str]):
        self.url, self.env = url, env

    def base_url(self, provider: str) -> str:
        return f"{self.url}/v1" if provider == "openai" else self.url


class ModelProxyService:
    name = "model_proxy"
    needs_sandbox = False

    def __init__(self, replay: ReplayCalls | None = None):
        self.replay = replay
        self.handle: ProxyHandle | None = None
        self.void_reason: str | None = None  # a replayed trial's request the recording lacks
        self._ctx: ServiceContext | None = None
        self._server: web.Server | None = None
        self._listeners: list[asyncio.AbstractServer] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._folder: Path | None = None
        self._own_folder = False
        self._upstreams: dict[str, str] = {}
        self._real: dict[str, str] = {}  # stand-in → real credential
        self._paths: dict[str, str] = {}  # the trial's folders → how a request key writes them
        self._redact: Any = None
        self._open = True
        self._env: dict[str, str] = {}
        self._busy: set[asyncio.Task[Any]] = set()  # handlers still answering (and recording)

    # -- the TrialService protocol ------------------------------------------------------------

    async def start(self, ctx: ServiceContext) -> None:
        from aiohttp import web

        from ..results._redact import Redactor

        self._ctx = ctx
        trial_env = ctx.sandbox.environment() if ctx.sandbox is not None else dict(ctx.variant.env)
        for provider, names in BASE_URL_VARIABLES.items():
            found = next((v for n in names if (v := trial_env.get(n) or os.environ.get(n))), None)
            self._upstreams[provider] = (found or DEFAULT_UPSTREAMS[provider]).rstrip("/")
        chosen = ctx.variant.options.get("base_url") if (ctx.variant.harness or "").startswith("openai") else None
        if isinstance(chosen, str) and chosen:  # the openai harness's own option
            self._upstreams["openai"] = chosen.rstrip("/")
        stand_ins: dict[str, str] = {}
        for name in KEY_VARIABLES:
            # In a sandbox, only what the trial was given; without one, what the harness would read.
            real = trial_env.get(name) if ctx.sandbox is not None else trial_env.get(name) or os.environ.get(name)
            if real:
                stand_ins[name] = f"anpord-proxy-{secrets.token_hex(16)}"
                self._real[stand_ins[name]] = real
            elif self.replay is not None:
                stand_ins[name] = f"anpord-replay-{secrets.token_hex(8)}"  # a replay needs no key
        self._redact = Redactor(list(self._real.values()))
        if ctx.sandbox is not None:
            workspace, home = ctx.sandbox.workspace, ctx.sandbox.home
            self._paths = {str(workspace): "<workspace>", str(home): "<home>"}
            if workspace.parent == home.parent and len(workspace.parent.name) >= 8:
                # The trial's own folder name, however a CLI spells a path holding it (Claude
                # Code names a project folder after the workspace, each non-alphanumeric as "-").
                name = workspace.parent.name
                self._paths[name] = self._paths[re.sub(r"[^A-Za-z0-9]", "-", name)] = "<trial>"

        loop = asyncio.get_running_loop()
        _RUNNING[loop] = _RUNNING.get(loop, 0) + 1
        self._loop = loop
        # aiohttp's low-level server (no application, router or runner): a trial's proxy starts
        # in well under a millisecond. handler_cancellation: an agent that gives up (its own
        # timeout) ends the upstream call too.
        def request(message: Any, payload: Any, protocol: Any, writer: Any, task: Any) -> web.BaseRequest:
            return web.BaseRequest(message, payload, protocol, writer, task, loop, client_max_size=BODY_LIMIT)

        self._server = server = web.Server(self._handle, request_factory=request, handler_cancellation=True)
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(128)
        tcp.setblocking(False)
        port: int = tcp.getsockname()[1]
        self._listeners.append(await loop.create_server(server, sock=tcp))
        sandbox = ctx.sandbox
        if sandbox is not None and sandbox.loopback_bridged:
            from ..sandboxes._bridge import bind_unix

            path = self._files() / f".proxy-{port}.sock"
            self._listeners.append(await loop.create_unix_server(server, sock=bind_unix(path)))
            sandbox.bridge_loopback(port, path)
        url = f"http://127.0.0.1:{port}"
        full = {**stand_ins, "ANPORD_MODEL_PROXY_URL": url, "OPENAI_BASE_URL": f"{url}/v1",
                "ANTHROPIC_BASE_URL": url, "GOOGLE_GEMINI_BASE_URL": url, "GEMINI_BASE_URL": url}
        self.handle = ProxyHandle(url, full)
        from . import coding_cli

        if coding_cli(ctx.variant) is None:
            self._env = dict(full)  # every program of the trial calls its model through the proxy
        else:
            # A coding harness points its CLI at the proxy turn by turn (_clis). A replay has no
            # real key to keep: its stand-ins sign the CLI in.
            self._env = {"ANPORD_MODEL_PROXY_URL": url, **(stand_ins if self.replay is not None else {})}

    def _files(self) -> Path:
        if self._folder is None:
            sandbox = self._ctx.sandbox if self._ctx is not None else None
            if sandbox is not None and sandbox.host_paths:  # else the state folder is not the host's
                self._folder = sandbox.state_dir / "proxy"
                self._folder.mkdir(exist_ok=True)
            else:
                self._folder = Path(tempfile.mkdtemp(prefix="anpord-proxy-"))
                self._own_folder = True
        return self._folder

    def env(self) -> dict[str, str]:
        return dict(self._env)

    async def settle(self) -> None:
        """The calls the agent has its answer to are recorded: an answer's last bytes can reach
        the agent before its handler has written the record. One still streaming is given a
        moment, no more (an abandoned call would otherwise hold the checks)."""
        busy = [t for t in self._busy if not t.done()]
        if busy:
            await asyncio.wait(busy, timeout=SETTLE_WAIT)

    def seal(self) -> None:
        self._open = False

    async def stop(self) -> None:
        self._open = False
        listeners, self._listeners = self._listeners, []
        for listener in listeners:
            listener.close()
        if self._server is not None:
            await self._server.shutdown(0.5)
            self._server = None
        loop, self._loop = self._loop, None
        if loop is not None:
            _RUNNING[loop] -= 1
            if not _RUNNING[loop] and (session := _SESSIONS.pop(loop, None)) is not None:
                await session.close()
        if self._own_folder and self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    # -- serving --------------------------------------------------------------------------------

    def _client(self) -> ClientSession:
        """The event loop's session to the upstreams, shared by every trial's proxy: their
        connections are kept alive across trials (a trial's first call needs no new one)."""
        import aiohttp

        loop = asyncio.get_running_loop()
        session = _SESSIONS.get(loop)
        if session is None or session.closed:
            # No total or read timeout of the proxy's own: the agent's client keeps its timeouts,
            # and when it gives up the handler is cancelled, closing this request.
            session = _SESSIONS[loop] = aiohttp.ClientSession(
                auto_decompress=False,  # an encoded answer passes through as it came
                timeout=aiohttp.ClientTimeout(total=None, sock_connect=60),
                connector=aiohttp.TCPConnector(limit=0, force_close=False),
            )
        return session

    def _swap(self, text: str) -> str:
        """``text`` with each stand-in replaced by the real credential (a header, a query)."""
        for stand_in, real in self._real.items():
            if stand_in in text:
                text = text.replace(stand_in, real)
        return text

    async def _handle(self, request: web.BaseRequest) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self._busy.add(task)
        try:
            return await self._answer(request)
        finally:
            if task is not None:
                self._busy.discard(task)

    async def _answer(self, request: web.BaseRequest) -> web.StreamResponse:
        from aiohttp import web

        headers = {k.lower(): v for k, v in request.headers.items()}
        route = route_of(request.method, request.path, headers)
        if route is None:
            return web.json_response({"error": {
                "type": "not_found",
                "message": f"anpord model proxy: nothing is served at {request.method} {request.path}; "
                           f"served: {SERVED}"}}, status=404)
        body = await request.read()
        started = time.monotonic()
        key = request_key(request.method, request.path, body, self._paths)
        if self.replay is not None:
            return await self._replayed(request, route, body, key, started)
        return await self._forward(request, route, body, key, started)

    async def _forward(self, request: web.BaseRequest, route: Route, body: bytes, key: str,
                       started: float) -> web.StreamResponse:
        import aiohttp
        from aiohttp import web

        query = self._swap(request.query_string)
        url = self._upstreams[route.provider] + route.upstream_path + (f"?{query}" if query else "")
        out_headers = {k: self._swap(v) for k, v in request.headers.items() if k.lower() not in _REQUEST_DROPPED}
        kept = bytearray()
        response: web.StreamResponse | None = None
        status, error, first = 0, None, None
        try:
            async with self._client().request(request.method, url, data=body or None, headers=out_headers,
                                              allow_redirects=False) as upstream:
                status = upstream.status
                response = web.StreamResponse(status=status, reason=upstream.reason)
                for k, v in upstream.headers.items():
                    if k.lower() not in _RESPONSE_DROPPED:
                        response.headers.add(k, v)
                if upstream.content_length is not None:
                    response.content_length = upstream.content_length
                await response.prepare(request)
                # Each piece goes on as it arrives: a stream reaches the agent event by event.
                async for chunk in upstream.content.iter_any():
                    if first is None:
                        first = time.monotonic() - started
                    await response.write(chunk)
                    kept += chunk
                await response.write_eof()
        except (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            error = f"upstream {self._upstreams[route.provider]} unreachable: {exception_line(exc)}"
        except aiohttp.ClientError as exc:
            error = f"upstream {self._upstreams[route.provider]}: {exception_line(exc)}"
        except asyncio.CancelledError:
            self._record(route, request, body, key, status or 499, kept, started, first,
                         "the agent closed the connection before the answer was complete")
            raise
        if error is not None:
            self._record(route, request, body, key, status or 502, kept, started, first, error)
            if response is not None and response.prepared:
                # Part of the answer is out: cut the connection, as the upstream's own failure would.
                if request.transport is not None:
                    request.transport.close()
                return response
            return web.json_response({"error": {"type": "upstream_unreachable",
                                                "message": f"anpord model proxy: {error}"}}, status=502)
        self._record(route, request, body, key, status, kept, started, first, None,
                     content_type=response.headers.get("Content-Type") if response is not None else None)
        assert response is not None
        return response

    async def _replayed(self, request: web.BaseRequest, route: Route, body: bytes, key: str,
                        started: float) -> web.StreamResponse:
        from aiohttp import web

        assert self.replay is not None
        call = self.replay.take(key)
        if call is None:
            what = self.replay.describe(route, request.method, request.path, body)
            if self.void_reason is None:
                self.void_reason = what
                if self._ctx is not None:
                    self._ctx.log(f"model proxy: {what}")
            # 400, not a 5xx: a client retries those, and the answer will not change.
            self._record(route, request, body, key, 400, bytearray(), started, None, what)
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": f"anpord model proxy: {what}"}}, status=400)
        answer = call.get("response") or {}
        text = str(answer.get("body") or "")
        ctype = str(answer.get("content_type") or "application/json")
        response = web.StreamResponse(status=int(call.get("http_status") or 200))
        response.headers["Content-Type"] = ctype
        await response.prepare(request)
        # A recorded stream goes out event by event, as it came.
        pieces = text.split("\n\n") if "event-stream" in ctype else [text]
        for i, piece in enumerate(pieces):
            if piece or i < len(pieces) - 1:
                await response.write((piece + ("\n\n" if i < len(pieces) - 1 else "")).encode())
        await response.write_eof()
        data = bytearray(text.encode())
        self._record(route, request, body, key, int(call.get("http_status") or 200), data, started, None, None,
                     content_type=ctype, replayed=True)
        return response

    # -- recording ------------------------------------------------------------------------------

    def _record(self, route: Route, request: web.BaseRequest, body: bytes, key: str, status: int, answer: bytearray,
                started: float, first: float | None, error: str | None, *, content_type: str | None = None,
                replayed: bool = False) -> None:
        ctx = self._ctx
        if ctx is None or not self._open:
            return
        data = call_record(route, request.method, request.path, body, key, status, bytes(answer), content_type,
                           latency=time.monotonic() - started, first_byte=first, error=error,
                           redact=self._redact, upstream=None if replayed else self._upstreams[route.provider])
        if replayed:
            data["replayed"] = True
        if error:
            ctx.log(f"model proxy: {route.provider} {request.path}: {error}")
        ctx.record(Event(MODEL_CALLED, data))
