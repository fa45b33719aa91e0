"""The model proxy as one trial sees it: its own address for the agent's own model calls.

Started on the per-trial service seam (runner/_services). Every trial of a run is served by one
server (``_server``: started with the first, on ``127.0.0.1``; where the sandbox closes the
network, the trial's own unix socket is bridged in, as the mocks' are); a trial registers its
address and its stand-ins there and answers what arrives for it: each provider's API by path
(``_providers``), forwarded to the caller's upstream — the body as sent, the answer back as it
arrives, chunk by chunk, status and headers as the upstream gave them. The real credentials stay
here: the agent's key variables hold per-trial stand-ins, swapped for the real values on the way
out. Each call is a ``model.called`` event (``source: "proxy"``) holding what a replay needs
(``--replay``: ``_replay``), redacted, priced with the variant's ``options["pricing"]``.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import exception_line
from ..events import MODEL_CALLED, Event
from ._providers import BASE_URL_VARIABLES, DEFAULT_UPSTREAMS, KEY_VARIABLES, SERVED, Route, route_of
from ._record import call_record, request_key

if TYPE_CHECKING:
    from aiohttp import web

    from .._service_protocol import ServiceContext
    from ._replay import ReplayCalls
    from ._server import ProxyServer

__all__ = ["NO_KEY", "ModelProxyService", "ProxyHandle"]

# Request headers never forwarded: hop-by-hop, or set again for the upstream connection.
# Accept-Encoding goes too: the upstream then answers uncompressed, which the record can read.
_REQUEST_DROPPED = frozenset({"host", "connection", "keep-alive", "proxy-authorization", "proxy-connection",
                              "te", "trailer", "transfer-encoding", "upgrade", "content-length",
                              "accept-encoding"})
_RESPONSE_DROPPED = frozenset({"connection", "keep-alive", "transfer-encoding", "trailer", "upgrade",
                               "content-length", "date", "server"})
# The headers a key travels in (OpenAI's, Anthropic's, Gemini's): one holding only NO_KEY is dropped.
_KEY_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key"})
SETTLE_WAIT = 2.0  # seconds settle() waits for calls still being answered
_WHOLE_LIMIT = 8 << 20  # a plain answer up to this size is read whole and sent in one write
# What ``ProxyHandle.api_key`` gives for a provider the trial has no key for (an SDK insists on
# one): the proxy forwards the request without it, as the agent would have sent it.
NO_KEY = "anpord-proxy-no-key"
# Each provider's key variables, the first the trial has is the stand-in ``api_key`` gives.
_PROVIDER_KEYS = {
    "openai": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY"),
}
# The path each provider's SDKs append their requests to (OpenAI's base URL ends in /v1).
_BASE_PATHS = {"openai": "/v1", "anthropic": "", "gemini": ""}


class ProxyHandle:
    """A trial's model proxy as its agent sees it: ``turn.model_proxy`` for a Python agent, and
    ``HarnessContext.extra["model_proxy"]`` for a harness.

    ``url`` is the trial's own address (``ANPORD_MODEL_PROXY_URL``); ``base_url(provider)`` what an
    SDK for ``openai``, ``anthropic`` or ``gemini`` takes as its base URL; ``api_key(provider)`` the
    trial's stand-in for that provider's key (the proxy swaps in the real one); ``env`` the
    variables pointing a program at it (``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, …)."""

    def __init__(self, url: str, env: Mapping[str, str]):
        self.url, self.env = url, dict(env)

    def __repr__(self) -> str:  # the stand-ins are not secrets, but nothing to print either
        return f"ProxyHandle({self.url!r})"

    def base_url(self, provider: str = "openai") -> str:
        if provider not in _BASE_PATHS:
            raise ValueError(f"unknown provider {provider!r}: the proxy serves {', '.join(_BASE_PATHS)}")
        return self.url + _BASE_PATHS[provider]

    def api_key(self, provider: str = "openai") -> str:
        if provider not in _PROVIDER_KEYS:
            raise ValueError(f"unknown provider {provider!r}: the proxy serves {', '.join(_PROVIDER_KEYS)}")
        return next((self.env[n] for n in _PROVIDER_KEYS[provider] if n in self.env), NO_KEY)


def _stand_in() -> str:
    return f"anpord-proxy-{secrets.token_hex(16)}"  # the form _server.STAND_IN finds


class ModelProxyService:
    name = "model_proxy"
    needs_sandbox = False

    def __init__(self, replay: ReplayCalls | None = None):
        self.replay = replay
        self.handle: ProxyHandle | None = None
        self.void_reason: str | None = None  # a replayed trial's request the recording lacks
        self.label = ""
        self.stand_ins: frozenset[str] = frozenset()
        self._ctx: ServiceContext | None = None
        self._server: ProxyServer | None = None
        self._token = ""
        self._folder: Path | None = None
        self._own_folder = False
        self._upstreams: dict[str, str] = {}
        self._real: dict[str, str] = {}  # stand-in → real credential
        self._paths: dict[str, str] = {}  # the trial's folders → how a request key writes them
        self._prices: Mapping[str, Any] | None = None  # the variant's options["pricing"]
        self._redact: Any = None
        self._open = True
        self._env: dict[str, str] = {}
        self._busy: set[asyncio.Task[Any]] = set()  # handlers still answering (and recording)

    # -- the TrialService protocol ------------------------------------------------------------

    async def start(self, ctx: ServiceContext) -> None:
        from ..results._redact import Redactor
        from ._server import acquire

        self._ctx = ctx
        self.label = ctx.label
        trial_env = ctx.sandbox.environment() if ctx.sandbox is not None else dict(ctx.variant.env)
        for provider, names in BASE_URL_VARIABLES.items():
            found = next((v for n in names if (v := trial_env.get(n) or os.environ.get(n))), None)
            self._upstreams[provider] = (found or DEFAULT_UPSTREAMS[provider]).rstrip("/")
        chosen = ctx.variant.options.get("base_url") if (ctx.variant.harness or "").startswith("openai") else None
        if isinstance(chosen, str) and chosen:  # the openai harness's own option
            self._upstreams["openai"] = chosen.rstrip("/")
        self._prices = _prices(ctx.variant)
        stand_ins: dict[str, str] = {}
        for name in KEY_VARIABLES:
            # In a sandbox, only what the trial was given; without one, what the harness would read.
            real = trial_env.get(name) if ctx.sandbox is not None else trial_env.get(name) or os.environ.get(name)
            if real:
                stand_ins[name] = _stand_in()
                self._real[stand_ins[name]] = real
            elif self.replay is not None:
                stand_ins[name] = _stand_in()  # a replay needs no key: the stand-in signs the CLI in
        self.stand_ins = frozenset(stand_ins.values())
        self._redact = Redactor(list(self._real.values()))
        if ctx.sandbox is not None:
            workspace, home = ctx.sandbox.workspace, ctx.sandbox.home
            self._paths = {str(workspace): "<workspace>", str(home): "<home>"}
            if workspace.parent == home.parent and len(workspace.parent.name) >= 8:
                # The trial's own folder name, however a CLI spells a path holding it (Claude
                # Code names a project folder after the workspace, each non-alphanumeric as "-").
                name = workspace.parent.name
                self._paths[name] = self._paths[re.sub(r"[^A-Za-z0-9]", "-", name)] = "<trial>"

        # The run's one server, started by its first proxied trial: this trial is an address on it.
        self._server = server = await acquire()
        self._token = secrets.token_hex(16)
        url = server.register(self._token, self)
        sandbox = ctx.sandbox
        if sandbox is not None and sandbox.loopback_bridged:
            path = self._files() / f".proxy-{server.port}.sock"
            await server.pin(self, path)
            sandbox.bridge_loopback(server.port, path)
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
        server, self._server = self._server, None
        if server is not None:
            try:
                await server.unregister(self._token, self)  # its address and stand-ins are refused now
            finally:
                await server.release()
        if self._own_folder and self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    # -- serving (called by the server for what arrives at this trial's address) ------------------

    def refused(self, message: str) -> None:
        if self._ctx is not None:
            self._ctx.log(f"model proxy: refused: {message}")

    def _swap(self, text: str) -> str:
        """``text`` with each stand-in replaced by the real credential (a header, a query)."""
        for stand_in, real in self._real.items():
            if stand_in in text:
                text = text.replace(stand_in, real)
        return text

    async def answer(self, request: web.BaseRequest, path: str) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self._busy.add(task)
        try:
            return await self._answer(request, path)
        finally:
            if task is not None:
                self._busy.discard(task)

    async def _answer(self, request: web.BaseRequest, path: str) -> web.StreamResponse:
        from aiohttp import web

        headers = {k.lower(): v for k, v in request.headers.items()}
        route = route_of(request.method, path, headers)
        if route is None:
            return web.json_response({"error": {
                "type": "not_found",
                "message": f"anpord model proxy: nothing is served at {request.method} {path}; "
                           f"served: {SERVED}"}}, status=404)
        body = await request.read()
        started = time.monotonic()
        key = request_key(request.method, path, body, self._paths)
        if self.replay is not None:
            return await self._replayed(request, path, route, body, key, started)
        return await self._forward(request, path, route, body, key, started)

    def _out_headers(self, request: web.BaseRequest) -> dict[str, str]:
        """The headers sent on: stand-ins swapped for the real keys; a key header holding only
        ``NO_KEY`` (an SDK's placeholder where the trial has no key) left out."""
        out: dict[str, str] = {}
        for k, v in request.headers.items():
            lower = k.lower()
            if lower in _REQUEST_DROPPED:
                continue
            if lower in _KEY_HEADERS and NO_KEY in v and v.removeprefix("Bearer ").strip() == NO_KEY:
                continue
            out[k] = self._swap(v)
        return out

    async def _forward(self, request: web.BaseRequest, path: str, route: Route, body: bytes, key: str,
                       started: float) -> web.StreamResponse:
        import aiohttp
        from aiohttp import web

        query = self._swap(request.query_string)
        url = self._upstreams[route.provider] + route.upstream_path + (f"?{query}" if query else "")
        out_headers = self._out_headers(request)
        assert self._server is not None
        kept = bytearray()
        response: web.StreamResponse | None = None
        status, error, first = 0, None, None
        whole = False  # answered in one piece: a plain answer of known length
        try:
            async with self._server.client().request(request.method, url, data=body or None, headers=out_headers,
                                                     allow_redirects=False) as upstream:
                status = upstream.status
                length = upstream.content_length
                whole = length is not None and length <= _WHOLE_LIMIT and \
                    "event-stream" not in upstream.headers.get("Content-Type", "")
                headers = [(k, v) for k, v in upstream.headers.items() if k.lower() not in _RESPONSE_DROPPED]
                if whole:
                    # Read, then sent in one write: the same bytes, and a system call less per call
                    # than headers and body apart (what most of the proxy's time goes to).
                    first = time.monotonic() - started
                    kept += await upstream.read()
                    response = web.Response(status=status, reason=upstream.reason, body=bytes(kept))
                    for k, v in headers:
                        response.headers.add(k, v)
                else:
                    response = web.StreamResponse(status=status, reason=upstream.reason)
                    for k, v in headers:
                        response.headers.add(k, v)
                    if length is not None:
                        response.content_length = length
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
            self._record(route, request, path, body, key, status or 499, kept, started, first,
                         "the agent closed the connection before the answer was complete")
            raise
        if error is not None:
            self._record(route, request, path, body, key, status or 502, kept, started, first, error)
            if response is not None and response.prepared or whole:
                # Part of the answer is out (or its head came, and it broke off): cut the
                # connection, as the upstream's own failure would.
                if request.transport is not None:
                    request.transport.close()
                return response if response is not None else web.Response(status=502)
            return web.json_response({"error": {"type": "upstream_unreachable",
                                                "message": f"anpord model proxy: {error}"}}, status=502)
        self._record(route, request, path, body, key, status, kept, started, first, None,
                     content_type=response.headers.get("Content-Type") if response is not None else None)
        assert response is not None
        return response

    async def _replayed(self, request: web.BaseRequest, path: str, route: Route, body: bytes, key: str,
                        started: float) -> web.StreamResponse:
        from aiohttp import web

        assert self.replay is not None
        call = self.replay.take(key)
        if call is None:
            what = self.replay.describe(route, request.method, path, body)
            if self.void_reason is None:
                self.void_reason = what
                if self._ctx is not None:
                    self._ctx.log(f"model proxy: {what}")
            # 400, not a 5xx: a client retries those, and the answer will not change.
            self._record(route, request, path, body, key, 400, bytearray(), started, None, what)
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
        self._record(route, request, path, body, key, int(call.get("http_status") or 200), data, started, None, None,
                     content_type=ctype, replayed=True)
        return response

    # -- recording ------------------------------------------------------------------------------

    def _record(self, route: Route, request: web.BaseRequest, path: str, body: bytes, key: str, status: int,
                answer: bytearray,
                started: float, first: float | None, error: str | None, *, content_type: str | None = None,
                replayed: bool = False) -> None:
        ctx = self._ctx
        if ctx is None or not self._open:
            return
        data = call_record(route, request.method, path, body, key, status, bytes(answer), content_type,
                           latency=time.monotonic() - started, first_byte=first, error=error,
                           redact=self._redact, upstream=None if replayed else self._upstreams[route.provider],
                           prices=self._prices)
        if replayed:
            data["replayed"] = True
        if error:
            ctx.log(f"model proxy: {route.provider} {path}: {error}")
        ctx.record(Event(MODEL_CALLED, data))


def _prices(variant: Any) -> Mapping[str, Any] | None:
    """The variant's ``options["pricing"]`` as prices by model, or None (a bad table is the
    harness's to report; here it prices nothing)."""
    raw = getattr(variant, "options", {}).get("pricing")
    if raw is None:
        return None
    from ..models._pricing import parse_pricing

    try:
        return parse_pricing(raw, getattr(variant, "model", None))
    except ValueError:
        return None
