"""One trial as the proxy process serves it: what arrives at the trial's address is answered by
its provider's API (``_providers``), forwarded to the trial's upstream — the body as sent, the
answer back as it arrives, chunk by chunk, status and headers as the upstream gave them — or,
under ``--replay``, from the recording. Stand-ins are swapped for the real credentials on the way
out; each call becomes a ``model.called`` record (redacted, priced) sent to the run.

A trial is made from the run's ``add`` message (``ProxiedTrial.from_message``); what it reports
goes back through ``report``: ``{"op": "event", "data": …}`` for a call (sent before a plain
answer is handed over, so the run has it when the agent has its answer), ``{"op": "began"}``
before a stream's first byte (its record follows it), ``{"op": "log"}``, ``{"op": "void"}``.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from .._errors import exception_line
from ._providers import SERVED, Route, route_of
from ._record import ABANDONED, NOT_DECODED, call_record, decoded_answer, decoded_body, recorded_answer, request_key

if TYPE_CHECKING:
    from aiohttp import ClientSession, web

    from ._replay import ReplayCalls

__all__ = ["NO_KEY", "ProxiedTrial", "SETTLE_WAIT", "Shared"]

# Request headers never forwarded: hop-by-hop, or set again for the upstream connection.
# Accept-Encoding is replaced by ``identity`` (an HTTP client adds its own otherwise): the upstream
# then answers uncompressed, which the record can read and a replay can send again.
_REQUEST_DROPPED = frozenset({"host", "connection", "keep-alive", "proxy-authorization", "proxy-connection",
                              "te", "trailer", "transfer-encoding", "upgrade", "content-length",
                              "accept-encoding"})
_RESPONSE_DROPPED = frozenset({"connection", "keep-alive", "transfer-encoding", "trailer", "upgrade",
                               "content-length", "date", "server"})
# The headers a key travels in (OpenAI's, Anthropic's, Gemini's): one holding only NO_KEY is dropped.
_KEY_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key"})
SETTLE_WAIT = 2.0  # seconds a settle waits for calls still being answered
_EVENT_END = re.compile(rb"(\r\n\r\n|\n\n)")  # split keeping each event's end
_WHOLE_LIMIT = 8 << 20  # a plain answer up to this size is read whole and sent in one write
# What ``ProxyHandle.api_key`` gives for a provider the trial has no key for (an SDK insists on
# one): the proxy forwards the request without it, as the agent would have sent it.
NO_KEY = "anpord-proxy-no-key"

Report = Callable[[dict[str, Any]], None]


class Asked(NamedTuple):
    """A request's body as it came and as decoded (``_record.decoded_body``)."""

    raw: bytes
    value: Any = NOT_DECODED
ENDS_WAIT = 0.5  # seconds an upstream stream is given to end once its agent has hung up


async def _ends(upstream: Any) -> bool:
    """Whether the upstream's answer ends, with nothing more, within ``ENDS_WAIT``."""
    try:
        return await asyncio.wait_for(upstream.content.read(), ENDS_WAIT) == b""
    except (asyncio.TimeoutError, Exception):  # noqa: BLE001 - it did not end cleanly
        return False


class Shared:
    """What the trials of one variant share (the run's ``share`` message, or a sandboxed trial's
    own ``add``): the upstreams by provider, the credentials the proxy keeps by variable, the
    variant's prices, and what redacts those credentials from a record."""

    def __init__(self, upstreams: Mapping[str, str], real: Mapping[str, str], prices: Any = None):
        from ..results._redact import Redactor

        self.upstreams, self.real = dict(upstreams), dict(real)
        self.prices = None
        if prices:
            from ..models._pricing import parse_pricing

            self.prices = parse_pricing(prices)
        self.redact = Redactor(list(self.real.values()))

    @classmethod
    def from_message(cls, message: Mapping[str, Any]) -> Shared:
        return cls(message["upstreams"], message["real"], message.get("prices"))


class ProxiedTrial:
    def __init__(self, token: str, label: str, report: Report, flushed: Callable[[], Awaitable[None]],
                 client: Callable[[], ClientSession], shared: Shared, stand_ins: Mapping[str, str], *,
                 paths: Mapping[str, str] | None = None, replay: ReplayCalls | None = None):
        self.token, self.label = token, label
        self._report, self._flushed, self._client = report, flushed, client
        self._upstreams, self._paths = shared.upstreams, dict(paths or {})
        # stand-in → the real credential it is swapped for (a replay's stand-ins may have none)
        self._real = {stand_in: shared.real[name] for name, stand_in in stand_ins.items() if name in shared.real}
        self._prices = shared.prices
        self._redact = shared.redact
        self.replay = replay
        self.stand_ins: frozenset[str] = frozenset(stand_ins.values())
        self._voided = False
        self.busy: set[asyncio.Task[Any]] = set()  # handlers still answering (and recording)
        self._streaming: set[asyncio.Task[Any]] = set()  # of those, the ones the run was told began

    @classmethod
    def from_message(cls, message: Mapping[str, Any], shared: Shared | None, report: Report,
                     flushed: Callable[[], Awaitable[None]], client: Callable[[], ClientSession]) -> ProxiedTrial:
        """The trial an ``add`` message describes; ``shared``, what its ``shared`` id names (None:
        the message holds it)."""
        replay = None
        if message.get("replay") is not None:
            from ._replay import ReplayCalls

            run, key = message["replay"]["run"], tuple(message["replay"]["key"])
            replay = ReplayCalls(run, key, message["replay"]["calls"])  # type: ignore[arg-type]
        token = message["token"]

        def tagged(out: dict[str, Any]) -> None:
            out["token"] = token
            report(out)

        return cls(token, message.get("label", ""), tagged, flushed, client,
                   shared if shared is not None else Shared.from_message(message), message["stand_ins"],
                   paths=message.get("paths"), replay=replay)

    def refused(self, message: str) -> None:
        self._report({"op": "log", "message": f"model proxy: refused: {message}"})

    async def settled(self) -> None:
        busy = [t for t in self.busy if not t.done()]
        if busy:
            await asyncio.wait(busy, timeout=SETTLE_WAIT)

    def _swap(self, text: str) -> str:
        """``text`` with each stand-in replaced by the real credential (a header, a query)."""
        for stand_in, real in self._real.items():
            if stand_in in text:
                text = text.replace(stand_in, real)
        return text

    def _unswap(self, text: str) -> str:
        """What the proxy says of a failed call (to the agent, in the record, in the log), with each
        real credential back as its stand-in: an HTTP client's error names the URL it called, and
        Gemini's key travels in that URL's query."""
        for stand_in, real in self._real.items():
            if real and real in text:
                text = text.replace(real, stand_in)
        redact = self._redact
        return redact(text) if callable(redact) else text

    async def answer(self, request: web.BaseRequest, path: str) -> web.StreamResponse:
        task = asyncio.current_task()
        if task is not None:
            self.busy.add(task)
        try:
            response = await self._answer(request, path)
            # A plain answer's record goes before the answer: the run holds it once the agent has it.
            await self._flushed()
            return response
        finally:
            if task is not None:
                self.busy.discard(task)
                if task in self._streaming:
                    self._streaming.discard(task)
                    self._report({"op": "ended"})

    async def _begin(self, response: web.StreamResponse, request: web.BaseRequest) -> None:
        """A stream's head goes out: the run is told first, so its settle waits for the record."""
        task = asyncio.current_task()
        if task is not None and task not in self._streaming:
            self._streaming.add(task)
            self._report({"op": "began"})
            await self._flushed()
        await response.prepare(request)

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
        asked = Asked(body, decoded_body(body))  # decoded once: for its key and for its record
        key = request_key(request.method, path, body, self._paths, decoded=asked.value)
        if self.replay is not None:
            return await self._replayed(request, path, route, asked, key, started)
        return await self._forward(request, path, route, asked, key, started)

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
        out["Accept-Encoding"] = "identity"
        return out

    async def _forward(self, request: web.BaseRequest, path: str, route: Route, asked: Asked, key: str,
                       started: float) -> web.StreamResponse:
        import aiohttp
        from aiohttp import web

        query = self._swap(request.query_string)
        url = self._upstreams[route.provider] + route.upstream_path + (f"?{query}" if query else "")
        out_headers = self._out_headers(request)
        kept = bytearray()
        response: web.StreamResponse | None = None
        status, error, first = 0, None, None
        encoding: str | None = None  # an upstream that compresses all the same
        whole = False  # answered in one piece: a plain answer of known length
        ended = False  # a stream's last bytes are out
        try:
            async with self._client().request(request.method, url, data=asked.raw or None, headers=out_headers,
                                                     allow_redirects=False) as upstream:
                status = upstream.status
                length = upstream.content_length
                whole = length is not None and length <= _WHOLE_LIMIT and \
                    "event-stream" not in upstream.headers.get("Content-Type", "")
                headers = [(k, v) for k, v in upstream.headers.items() if k.lower() not in _RESPONSE_DROPPED]
                encoding = upstream.headers.get("Content-Encoding")
                if whole:
                    # Read, then sent in one write: the same bytes, and a system call less per call
                    # than headers and body apart (what most of the proxy's time goes to).
                    first = time.monotonic() - started
                    try:
                        async for chunk in upstream.content.iter_any():
                            kept += chunk
                    except aiohttp.ClientError:
                        # Cut off part way: the agent gets the head and what came, then the cut,
                        # as it would from the upstream itself (its client says how much it missed).
                        response = web.StreamResponse(status=status, reason=upstream.reason)
                        for k, v in headers:
                            response.headers.add(k, v)
                        response.content_length = length
                        await response.prepare(request)
                        await response.write(bytes(kept))
                        raise
                    response = web.Response(status=status, reason=upstream.reason, body=bytes(kept))
                    for k, v in headers:
                        response.headers.add(k, v)
                else:
                    response = web.StreamResponse(status=status, reason=upstream.reason)
                    for k, v in headers:
                        response.headers.add(k, v)
                    if length is not None:
                        response.content_length = length
                    await self._begin(response, request)
                    try:
                        # Each piece goes on as it arrives: a stream reaches the agent event by event.
                        async for chunk in upstream.content.iter_any():
                            if first is None:
                                first = time.monotonic() - started
                            await response.write(chunk)
                            kept += chunk
                        await response.write_eof()
                    except (asyncio.CancelledError, ConnectionError, aiohttp.ClientConnectionResetError) as exc:
                        # The agent hung up. A client that has its stream's last event may well
                        # (an SDK stops there): it had the whole answer if the upstream's ends now.
                        if not await _ends(upstream):
                            raise
                        ended = True
                        if isinstance(exc, asyncio.CancelledError):
                            raise
                    ended = True
        except (aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError) as exc:
            error = self._unswap(f"upstream {self._upstreams[route.provider]} unreachable: {exception_line(exc)}")
        except aiohttp.ClientError as exc:
            error = self._unswap(f"upstream {self._upstreams[route.provider]}: {exception_line(exc)}")
        except asyncio.CancelledError:
            if ended:  # the agent had the whole answer and hung up
                self._record(route, request, path, asked, key, status, kept, started, first, None,
                             content_type=response.headers.get("Content-Type") if response is not None else None,
                             encoding=encoding)
            else:
                self._record(route, request, path, asked, key, status or 499, kept, started, first, ABANDONED)
            raise
        if error is not None:
            if response is not None and response.prepared or whole:
                self._record(route, request, path, asked, key, status or 502, kept, started, first, error)
                # Part of the answer is out (or its head came, and it broke off): cut the
                # connection, as the upstream's own failure would.
                if request.transport is not None:
                    request.transport.close()
                return response if response is not None else web.Response(status=502)
            # The proxy's own answer, recorded as the agent got it: a replay gives the same.
            refusal = web.json_response({"error": {"type": "upstream_unreachable",
                                                   "message": f"anpord model proxy: {error}"}}, status=502)
            assert isinstance(refusal.body, bytes)
            self._record(route, request, path, asked, key, 502, bytearray(refusal.body), started, first, error,
                         content_type="application/json")
            return refusal
        self._record(route, request, path, asked, key, status, kept, started, first, None,
                     content_type=response.headers.get("Content-Type") if response is not None else None,
                     encoding=encoding)
        assert response is not None
        return response

    async def _replayed(self, request: web.BaseRequest, path: str, route: Route, asked: Asked, key: str,
                        started: float) -> web.StreamResponse:
        from aiohttp import web

        assert self.replay is not None
        call = self.replay.take(key)
        answer = (call.get("response") or {}) if call is not None else {}
        # None: no recorded call, or one whose answer the record does not hold whole (cut at what
        # it keeps, or bytes it could not keep).
        raw = recorded_answer(answer) if call is not None else None
        if raw is None:
            what = self.replay.describe(route, request.method, path, asked.raw, kept=call is None)
            if not self._voided:
                self._voided = True
                self._report({"op": "void", "reason": what})
            # 400, not a 5xx: a client retries those, and the answer will not change.
            self._record(route, request, path, asked, key, 400, bytearray(), started, None, what)
            return web.json_response({"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": f"anpord model proxy: {what}"}}, status=400)
        assert call is not None
        ctype = str(answer.get("content_type") or "application/json")
        response = web.StreamResponse(status=int(call.get("http_status") or 200))
        response.headers["Content-Type"] = ctype
        await self._begin(response, request)
        # A recorded stream goes out event by event, as it came (an event ends in a blank line,
        # LF or CRLF).
        pieces = _EVENT_END.split(raw) if "event-stream" in ctype else [raw]
        for i in range(0, len(pieces), 2):
            piece = pieces[i] + (pieces[i + 1] if i + 1 < len(pieces) else b"")
            if piece:
                await response.write(piece)
        await response.write_eof()
        data = bytearray(raw)
        self._record(route, request, path, asked, key, int(call.get("http_status") or 200), data, started, None, None,
                     content_type=ctype, replayed=True)
        return response

    # -- recording ------------------------------------------------------------------------------

    def _record(self, route: Route, request: web.BaseRequest, path: str, asked: Asked, key: str, status: int,
                answer: bytearray,
                started: float, first: float | None, error: str | None, *, content_type: str | None = None,
                replayed: bool = False, encoding: str | None = None) -> None:
        data = call_record(route, request.method, path, asked.raw, key, status, decoded_answer(bytes(answer), encoding),
                           content_type,
                           latency=time.monotonic() - started, first_byte=first, error=error,
                           redact=self._redact, upstream=None if replayed else self._upstreams[route.provider],
                           prices=self._prices, decoded=asked.value)
        if replayed:
            data["replayed"] = True
        out: dict[str, Any] = {"op": "event", "data": data}
        if error:
            out["log"] = f"model proxy: {route.provider} {path}: {error}"
        self._report(out)


