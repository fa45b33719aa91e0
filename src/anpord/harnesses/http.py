"""The HTTP harness (``"http://host:port"``, ``"https://..."``): an agent server, in any language,
that speaks anpord's HTTP agent protocol (docs/http-agents.md; ``anpord serve`` is one).

The spec is the server's base URL. ``setup`` asks ``GET /v1/info`` once per run; a URL that does
not speak the protocol makes every session fail to open (``HarnessStartError``: the trials are
``void`` with the reason). Each conversation is one server session; each turn is one POST whose
NDJSON response is read line by line as it arrives, so a live turn sees its events at once, and
ends with a ``turn.end`` line saying how the turn settled.

Variant options (``Variant(options={...})``): ``max_connections`` (turn streams open at once to
this server, default 100), ``connect_timeout`` (seconds, default 10), ``cancel_grace`` (seconds a
cancelled turn gets to end its stream before it is cut off, default 5); for traced trials,
``traces_port`` (where the server's spans are received, default 4318) and ``traces_wait`` (seconds
a turn waits for them, default 10).

A server that wants a bearer token (``anpord serve --token``) gets ``$ANPORD_HTTP_TOKEN``: when
it is set, every request carries ``Authorization: Bearer <it>``.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import urllib.parse
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from .._agent_protocol import (
    INFO_PATH,
    NDJSON,
    PROTOCOL,
    PROTOCOL_VERSION,
    SESSIONS_PATH,
    TURN_END,
    TURN_STATUSES,
)
from ..events import (
    INPUT_REQUESTED,
    INPUT_RESOLVED,
    LOG,
    MESSAGE_COMPLETED,
    TOOL_RESULT,
    Event,
    message_text,
    to_jsonable,
)
from ..results._encode import decode
from ..results._model import ErrorInfo
from ._command_stream import request_options
from ._protocol import (
    Emit,
    HarnessContext,
    HarnessSpecError,
    HarnessStartError,
    TurnOutcome,
    TurnRequest,
)

if TYPE_CHECKING:
    import aiohttp

    from ._protocol import TurnStatus

__all__ = ["TOKEN_ENV", "HttpHarness", "HttpOptions", "HttpSession", "parse_base_url", "resolve"]

TOKEN_ENV = "ANPORD_HTTP_TOKEN"

INFO_TIMEOUT = 10.0  # the protocol check at the start of a run
OPEN_TIMEOUT = 30.0  # creating a session
CONTROL_TIMEOUT = 5.0  # a cancel or a delete
CONTROL_CONNECTIONS = 16  # cancels and deletes never wait behind the turn streams they stop
MAX_LINE = 1 << 20  # a longer line is cut (and cannot be an event)
EVENT_CAP = 10_000  # events kept per turn
LOG_CAP = 1 << 20  # bytes of log events kept per turn
MAX_INFO = 1 << 20
# The drive API emits these itself; a server sending them would break the turn's shape.
_RESERVED = re.compile(r"(session|turn)\.")


@dataclass(frozen=True)
class HttpOptions:
    """What a variant's ``options=`` may set for this harness."""

    max_connections: int = 100
    connect_timeout: float = 10.0
    cancel_grace: float = 5.0
    # Traced trials (docs/traces.md): where the server's spans are received, and how long a turn
    # waits for them after its stream ended.
    traces_port: int = 4318
    traces_wait: float = 10.0

    @classmethod
    def from_variant(cls, options: Mapping[str, Any]) -> HttpOptions:
        """Raises ValueError naming the bad key."""
        known = ("max_connections", "connect_timeout", "cancel_grace", "traces_port", "traces_wait")
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(
                f"Variant options {', '.join(map(repr, unknown))} are not read by the http harness "
                f"(it reads {', '.join(known)})"
            )
        values: dict[str, Any] = {}
        for key in known:
            if key not in options:
                continue
            value = options[key]
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if key == "traces_port":
                if not (number and value == int(value) and 0 < value < 65536):
                    raise ValueError(f"Variant options traces_port must be a port number, got {value!r}")
                values[key] = int(value)
                continue
            if key == "max_connections" and not (number and value == int(value) and value >= 1):
                raise ValueError(
                    f"Variant options max_connections must be a positive integer, got {value!r}"
                )
            if key != "max_connections" and not (number and math.isfinite(value) and value >= 0):
                raise ValueError(
                    f"Variant options {key} must be a number of seconds, got {value!r}"
                )
            values[key] = int(value) if key == "max_connections" else float(value)
        return cls(**values)


def parse_base_url(spec: str) -> str:
    """``http://host:port[/prefix]`` → the base URL without a trailing slash.
    Raises HarnessSpecError with one line."""
    text = spec.strip()
    problem = None
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port  # raises ValueError for a port that is not a number from 0 to 65535
    except ValueError as exc:
        raise HarnessSpecError(f"http harness spec {spec!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        problem = "it must start with http:// or https://"
    elif not parts.hostname:
        problem = "it names no host (expected http://HOST:PORT)"
    elif any(c.isspace() for c in text):
        problem = "it holds whitespace"
    elif parts.username is not None or parts.password is not None:
        problem = (
            "credentials in the URL are not supported (they would be written to the run's records)"
        )
    elif parts.query or parts.fragment:
        problem = "give the server's base URL, without a query or fragment"
    elif port == 0:
        problem = "port 0 is not a port a server listens on"
    if problem:
        raise HarnessSpecError(f"http harness spec {spec!r}: {problem}")
    return text.rstrip("/")


def _reach_failure(base: str, exc: BaseException) -> str:
    """One line for a server that could not be reached at all."""
    os_error = getattr(exc, "os_error", None)
    code = getattr(os_error, "errno", None)
    # "Connection refused", not asyncio's "Connect call failed ('127.0.0.1', 9)".
    reason = os.strerror(code) if isinstance(code, int) and code > 0 else str(os_error or exc)
    return f"cannot reach the agent server at {base}: {reason} (is it running?)"


async def _error_message(resp: aiohttp.ClientResponse) -> str:
    """The ``message`` of a protocol error body, else the start of whatever the body was."""
    raw = await resp.content.read(4096)
    text = raw.decode("utf-8", "replace").strip()
    try:
        body = decode(text)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    if "html" in (resp.content_type or ""):
        return "an HTML page"
    return text.splitlines()[0][:200] if text else resp.reason or "no details"


class HttpHarness:
    needs_sandbox = False

    def __init__(self, spec: str, base_url: str):
        self.spec = spec
        self.base_url = base_url
        self.info: dict[str, Any] | None = None
        self._checked = False
        self._check_error: str | None = None
        self._check_lock: asyncio.Lock | None = None
        self._control: aiohttp.ClientSession | None = None
        self._pools: dict[int, aiohttp.ClientSession] = {}
        # Read once: every request of the run carries the same token.
        token = os.environ.get(TOKEN_ENV, "")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    def __repr__(self) -> str:
        return f"HttpHarness({self.spec!r})"

    # -- run-level --------------------------------------------------------------------------

    async def setup(self) -> None:
        """Check once that the URL speaks the protocol. A failure is not raised here: every
        session then fails to open with it, so each trial is ``void`` with the reason."""
        await self._check()

    async def teardown(self) -> None:
        clients = [c for c in (self._control, *self._pools.values()) if c is not None]
        self._control, self._pools = None, {}
        for client in clients:
            await client.close()
        self._checked, self._check_error, self.info = False, None, None

    async def prepare_sandbox(self, ctx: HarnessContext) -> None:
        pass  # nothing to put in a trial's sandbox before the agent runs

    def control(self) -> aiohttp.ClientSession:
        """The client for the short requests: info, open, cancel, delete."""
        if self._control is None:
            import aiohttp

            self._control = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=CONTROL_CONNECTIONS),
                timeout=aiohttp.ClientTimeout(total=OPEN_TIMEOUT),
                headers=self._headers,
            )
        return self._control

    def pool(self, max_connections: int) -> aiohttp.ClientSession:
        """The client for turn streams, one per ``max_connections`` setting in the run."""
        client = self._pools.get(max_connections)
        if client is None:
            import aiohttp

            client = self._pools[max_connections] = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=max_connections),
                timeout=aiohttp.ClientTimeout(
                    total=None
                ),  # a turn lasts as long as the trial lets it
                headers=self._headers,
            )
        return client

    async def _check(self) -> str | None:
        if self._check_lock is None:
            self._check_lock = asyncio.Lock()
        async with self._check_lock:
            if not self._checked:
                self._check_error = await self._probe()
                self._checked = True
        return self._check_error

    async def _probe(self) -> str | None:
        """Why the base URL does not speak the protocol, or None when it does."""
        import aiohttp

        base = self.base_url
        path = urllib.parse.urlsplit(base).path + INFO_PATH
        not_ours = f"{base} does not speak the anpord HTTP agent protocol: GET {path} answered"
        # The commonest mistake: a URL that already ends in the protocol's own prefix.
        hint = "; give the server's base URL, without /v1" if re.search(r"/v\d+$", base) else ""
        try:
            timeout = aiohttp.ClientTimeout(total=INFO_TIMEOUT)
            async with self.control().get(base + INFO_PATH, timeout=timeout) as resp:
                if resp.status == 401:
                    given = "was refused" if self._headers else f"is needed: set ${TOKEN_ENV}"
                    return (f"the agent server at {base} answered HTTP 401 ({await _error_message(resp)}): "
                            f"its bearer token {given}")
                if resp.status != 200:
                    return f"{not_ours} HTTP {resp.status} ({await _error_message(resp)}){hint}"
                raw = await resp.content.read(MAX_INFO)
                content_type = resp.content_type or "no content type"
        except TimeoutError:
            return f"the agent server at {base} did not answer GET {path} within {INFO_TIMEOUT:g}s"
        except aiohttp.ClientConnectorError as exc:
            return _reach_failure(base, exc)
        except aiohttp.ClientError as exc:
            return f"GET {base + INFO_PATH} failed: {type(exc).__name__}: {exc}"
        try:
            info = json.loads(raw)
        except ValueError:
            what = "an HTML page" if "html" in content_type else f"{content_type} that is not JSON"
            return f"{not_ours} {what}{hint}"
        if not isinstance(info, dict) or info.get("protocol") != PROTOCOL:
            return f'{not_ours} JSON without "protocol": "{PROTOCOL}"{hint}'
        version = info.get("protocol_version")
        if version != PROTOCOL_VERSION:
            return (
                f"the agent server at {base} speaks protocol version {version!r}; "
                f"this anpord speaks version {PROTOCOL_VERSION}"
            )
        self.info = info
        return None

    def can_cancel(self) -> bool:
        capabilities = (self.info or {}).get("capabilities")
        return not isinstance(capabilities, dict) or capabilities.get("cancel", True) is not False

    # -- sessions ---------------------------------------------------------------------------

    async def open_session(self, ctx: HarnessContext, session_id: str) -> HttpSession:
        # setup() normally made the check; a caller that skipped setup still gets it here.
        error = await self._check()
        if error:
            raise HarnessStartError(error)
        try:
            options = HttpOptions.from_variant(ctx.variant.options)
        except ValueError as exc:
            raise HarnessStartError(str(exc)) from None
        # The server's session is created by the first turn: opening returns at once, so a
        # turn cancelled right after it started finds its session (and its cancel) in place.
        return HttpSession(self, ctx, session_id, options)


class HttpSession:
    def __init__(
        self, harness: HttpHarness, ctx: HarnessContext, session_id: str, options: HttpOptions
    ):
        self.harness = harness
        self.ctx = ctx
        self.session_id = session_id
        self.options = options
        self.server_id: str | None = None
        self.url: str | None = None  # the session's URL, once the server opened it
        self._answered: set[str] = set()  # input requests this client recorded as resolved
        self._active = False
        self._accepted = False  # the server answered the running turn's request
        self._cancel_requested = False
        self._cancel_sent = False
        self._grace: asyncio.Future[None] | None = None
        self._closed = False

    async def _open(self) -> str:
        """Create the server's session (once); raises HarnessStartError: the trial is void."""
        import aiohttp

        if self.url is not None:
            return self.url
        base = self.harness.base_url
        body: dict[str, Any] = {
            "session_id": self.session_id,
            "model": self.ctx.model,
            "workspace": str(self.ctx.workspace) if self.ctx.workspace is not None else None,
        }
        mocks = mocks_payload(self.ctx.extra.get("mocks"))
        if mocks:
            body["mocks"] = mocks
        proxy = self.ctx.extra.get("model_proxy")
        if proxy is not None:  # Variant(model_proxy=True): the trial's address and stand-ins
            body["model_proxy"] = {"url": proxy.url, "env": dict(proxy.env)}
        try:
            async with self.harness.control().post(base + SESSIONS_PATH, json=body) as resp:
                if resp.status not in (200, 201):
                    what = await _error_message(resp)
                    raise HarnessStartError(
                        f"the agent server at {base} did not open a session: HTTP {resp.status}: {what}"
                    )
                answer = await resp.json(content_type=None)
        except aiohttp.ClientConnectorError as exc:
            raise HarnessStartError(_reach_failure(base, exc)) from None
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            raise HarnessStartError(
                f"opening a session on the agent server at {base} failed: {type(exc).__name__}: {exc}"
            ) from None
        server_id = answer.get("session_id") if isinstance(answer, dict) else None
        if not isinstance(server_id, str) or not server_id:
            raise HarnessStartError(
                f'the agent server at {base} opened a session without a "session_id": {answer!r}'
            )
        self.server_id = server_id
        self.url = f"{base}{SESSIONS_PATH}/{urllib.parse.quote(server_id, safe='')}"
        return self.url

    # -- the harness protocol ---------------------------------------------------------------

    async def run_turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        body: dict[str, Any] = {"messages": [dict(m) for m in request.messages]}
        if request.input is not None:
            body["input"] = request.input
        else:
            body["responses"] = [r.to_dict() for r in request.responses]
            # Recorded here, for every server: the eval's pending requests are resolved by this.
            for response in request.responses:
                self._answered.add(response.request_id)
                emit(Event(INPUT_RESOLVED, response.to_dict()))
        self._active, self._accepted = True, False
        self._cancel_requested = self._cancel_sent = False
        self._grace = asyncio.get_running_loop().create_future()
        try:
            url = await self._open()
            trace = self._trace()
            if trace is None:
                return await self._turn(url, json.dumps(to_jsonable(body), ensure_ascii=False), emit)
            header, span_id = trace.traceparent()
            outcome = await self._turn(url, json.dumps(to_jsonable(body), ensure_ascii=False), emit,
                                       {"traceparent": header})
            # Its spans leave the server in a batch after the turn: they are part of the turn.
            if outcome.status != "cancelled" and not await trace.answered(span_id, self.options.traces_wait):
                self.ctx.log(f"traces: no span of this turn arrived within {self.options.traces_wait:g}s "
                             f"(is the agent server instrumented, exporting to 127.0.0.1:"
                             f"{self.options.traces_port}, with a short OTEL_BSP_SCHEDULE_DELAY?)")
            return outcome
        finally:
            self._active = False
            if self._grace is not None and not self._grace.done():
                self._grace.cancel()

    def _trace(self) -> Any:
        """The trial's trace receiver when it is traced (``Variant(traces="otlp")``), else None."""
        if self.ctx.variant.traces != "otlp":
            return None
        from ..traces._receiver import CURRENT_TRACE

        return CURRENT_TRACE.get()

    async def _turn(self, url: str, payload: str, emit: Emit,
                    extra_headers: dict[str, str] | None = None) -> TurnOutcome:
        import aiohttp

        base = self.harness.base_url
        client = self.harness.pool(self.options.max_connections)
        timeout = aiohttp.ClientTimeout(total=None, sock_connect=self.options.connect_timeout)
        try:
            resp = await client.post(
                url + "/turns",
                data=payload,
                timeout=timeout,
                headers={"Content-Type": "application/json", "Accept": NDJSON, **(extra_headers or {})},
            )
        except aiohttp.ClientConnectorError as exc:
            raise HarnessStartError(_reach_failure(base, exc)) from None
        except aiohttp.ClientError as exc:
            return _failed(f"the turn request to {base} failed: {type(exc).__name__}: {exc}")
        finished = False
        try:
            if resp.status != 200:
                what = await _error_message(resp)
                return _failed(f"the agent server refused the turn: HTTP {resp.status}: {what}")
            if resp.content_type != NDJSON:
                return _failed(
                    f"the agent server answered {resp.content_type or 'a body'} instead of an {NDJSON} event stream"
                )
            self._accepted = True
            if self._cancel_requested:
                await self._send_cancel()  # asked for before the server had the turn
            reader = _TurnReader(emit, self.ctx, self._answered)
            read = asyncio.ensure_future(self._read(resp, reader))
            assert self._grace is not None
            try:
                await asyncio.wait({read, self._grace}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not read.done():
                    read.cancel()
                    await asyncio.gather(read, return_exceptions=True)
            if not read.cancelled():
                read.result()
            if reader.final is None and self._grace.done():
                return TurnOutcome(
                    "cancelled",
                    error=f"the agent server did not end the turn within {self.options.cancel_grace:g}s of the cancel",
                )
            finished = reader.final is not None
            return reader.outcome(self._cancel_requested)
        finally:
            # A stream read to its end goes back to the pool; one cut short (cancelled, timed out,
            # broken) is closed, which tells the server its client went away.
            if finished:
                resp.release()
            else:
                resp.close()

    async def _read(self, resp: aiohttp.ClientResponse, reader: _TurnReader) -> None:
        import aiohttp

        try:
            async for raw, cut in _lines(resp.content):
                if reader.feed(raw, cut):
                    return
        except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError, ConnectionError) as exc:
            reader.broken = f"{type(exc).__name__}: {exc}".rstrip(": ")

    async def cancel(self) -> bool:
        if not self._active or not self.harness.can_cancel():
            return False
        self._cancel_requested = True
        if self._accepted:
            await self._send_cancel()
        # Not accepted yet: the turn sends the cancel as soon as the server has the turn.
        return True

    async def _send_cancel(self) -> None:
        import aiohttp

        if self._cancel_sent or self.url is None:
            return
        self._cancel_sent = True
        grace = self._grace
        if grace is not None and not grace.done():

            def expire() -> None:
                if not grace.done():
                    grace.set_result(None)

            # From now on the turn's stream has cancel_grace seconds to end.
            asyncio.get_running_loop().call_later(self.options.cancel_grace, expire)
        try:
            async with self.harness.control().post(
                self.url + "/cancel", timeout=aiohttp.ClientTimeout(total=CONTROL_TIMEOUT)
            ) as resp:
                if resp.status != 200:
                    self.ctx.log(
                        f"the agent server refused the cancel: HTTP {resp.status}: {await _error_message(resp)}"
                    )
        except (aiohttp.ClientError, TimeoutError) as exc:
            self.ctx.log(
                f"cancelling the turn on {self.harness.base_url} failed: {type(exc).__name__}: {exc}"
            )

    async def close(self) -> None:
        import aiohttp

        if self._closed or self.url is None:
            return  # never opened on the server: nothing to delete
        self._closed = True
        try:
            async with self.harness.control().delete(
                self.url, timeout=aiohttp.ClientTimeout(total=CONTROL_TIMEOUT)
            ) as resp:
                if resp.status not in (200, 204, 404):
                    self.ctx.log(
                        f"the agent server did not delete session {self.server_id}: HTTP {resp.status}"
                    )
        except (aiohttp.ClientError, TimeoutError, RuntimeError) as exc:
            # RuntimeError: the run's client is closed already (an interrupted run).
            self.ctx.log(
                f"deleting session {self.server_id} on {self.harness.base_url} failed: {exc}"
            )


async def _lines(content: aiohttp.StreamReader) -> AsyncIterator[tuple[bytes, bool]]:
    """The stream's lines as they arrive: ``(line, cut)``, a line past MAX_LINE cut there."""
    buf = bytearray()
    skipping = False  # inside the rest of a line already cut
    while chunk := await content.readany():
        buf += chunk
        start = 0
        while (nl := buf.find(b"\n", start)) >= 0:
            if not skipping:
                yield bytes(buf[start:nl]), False
            skipping = False
            start = nl + 1
        del buf[:start]
        if len(buf) > MAX_LINE:
            if not skipping:
                yield bytes(buf[:MAX_LINE]), True
            skipping = True
            buf.clear()
    if buf and not skipping:
        yield bytes(buf), False


class _TurnReader:
    """One turn's stream: its lines become events; its ``turn.end`` line says how it settled."""

    def __init__(self, emit: Emit, ctx: HarnessContext, answered: set[str]):
        self.emit = emit
        self.ctx = ctx
        self.answered = answered
        self.final: dict[str, Any] | None = None
        self.broken: str | None = None
        self.message: str | None = None
        self.data: Any = None
        self.saw_message = False
        self.events = 0
        self.dropped = 0
        self.log_bytes = 0

    def _keep(self, event: Event) -> None:
        if self.events >= EVENT_CAP:
            self.dropped += 1
            return
        self.events += 1
        self.emit(event)

    def _note(self, text: str) -> None:
        self.ctx.log(text)
        self._keep(Event(LOG, {"message": text, "stream": "anpord"}))

    def feed(self, raw: bytes, cut: bool) -> bool:
        """Take one line; True once the turn's end arrived."""
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            return False
        if cut:
            self._note(f"the agent server sent a line over {MAX_LINE} bytes: dropped")
            return False
        try:
            obj = decode(line)  # nesting bounded, as in run folders: deeper is not an event
        except ValueError:
            obj = None
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str) or not obj["type"]:
            self._note(
                f"unreadable line from the agent server (not a JSON object with a type): {line[:200]}"
            )
            return False
        kind = obj["type"]
        if kind == TURN_END:
            self.final = obj
            return True
        data = {k: v for k, v in obj.items() if k not in ("type", "ts", "session_id")}
        if _RESERVED.match(kind):
            self._note(f"ignored event type {kind!r}: session.* and turn.* events are the runner's")
            return False
        if kind == INPUT_RESOLVED and str(data.get("request_id")) in self.answered:
            return False  # recorded already, when the answers were sent
        if kind == MESSAGE_COMPLETED:
            data["role"] = str(data.get("role") or "assistant")
            text = data.get("text", "")
            data["text"] = text if isinstance(text, str) else message_text(text)
            if data["role"] == "assistant":
                self.message, self.data, self.saw_message = data["text"], data.get("data"), True
        elif kind == INPUT_REQUESTED:
            rid = data.get("request_id")
            if not isinstance(rid, str) or not rid:
                self._note(f"ignored an input.requested event without a request_id: {line[:200]}")
                return False
            data.update(prompt=str(data.get("prompt", "")), options=request_options(data.get("options")))
            data.setdefault("tool_name", None)
            data.setdefault("input", None)
        elif kind == TOOL_RESULT:
            data.setdefault("status", "completed")
        elif kind == LOG:
            message = str(data.get("message", ""))
            size = len(message.encode("utf-8", "replace"))
            if self.log_bytes + size > LOG_CAP:
                self.dropped += 1
                return False
            self.log_bytes += size
            self.ctx.log(f"[stderr] {message}" if data.get("stream") == "stderr" else message)
        self._keep(Event(kind, data))
        return False

    def outcome(self, cancel_requested: bool) -> TurnOutcome:
        if self.dropped:
            self.emit(
                Event(
                    LOG,
                    {
                        "message": f"[{self.dropped} events not kept: cap {EVENT_CAP} per turn, "
                        f"{LOG_CAP} bytes of log]",
                        "stream": "anpord",
                    },
                )
            )
        final = self.final
        if final is None:
            if cancel_requested:
                return TurnOutcome("cancelled", error="cancelled")
            why = f" ({self.broken})" if self.broken else ""
            return _failed(f"the agent server's event stream ended without its final {TURN_END} line{why}")
        raw_status = final.get("status")
        if raw_status not in TURN_STATUSES:
            return _failed(f"the agent server ended the turn with an unknown status {raw_status!r}")
        status = cast("TurnStatus", raw_status)
        message = final.get("message")
        if message is not None and not isinstance(message, str):
            message = message_text(message)
        if message is None:
            message = self.message
        data = final.get("data")
        if data is None:
            data = self.data
        error = final.get("error")
        if error is not None and not isinstance(error, str):
            error = json.dumps(error, ensure_ascii=False, default=str)
        tb = final.get("traceback")
        if isinstance(tb, str) and tb:
            self.ctx.log(f"agent raised:\n{tb}")
        else:
            tb = None
        if status == "completed" and message is not None and not self.saw_message:
            # A server that only put its answer in turn.end: record it as every harness does.
            self.emit(Event(MESSAGE_COMPLETED, {"role": "assistant", "text": message}))
        if cancel_requested and status != "completed":
            status = "cancelled"
        if status == "failed" and not error:
            error = "the agent server reported the turn failed without saying why"
        failure = None
        if status == "failed" and final.get("error_kind") != "request":
            # Failing closed: any failed turn is the agent's, unless the server says the request
            # was at fault.
            failure = ErrorInfo("agent", str(error), tb)
        return TurnOutcome(status, message=message, error=error, data=data, failure=failure)


def _failed(error: str) -> TurnOutcome:
    """A turn the agent server failed (a broken stream, an error response): the agent's fault,
    so it fails the trial unless the test expected it (``turn.expect_failed()``)."""
    return TurnOutcome("failed", error=error, failure=ErrorInfo("agent", error))


def mocks_payload(handles: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The trial's mocks as the session-open request names them (docs/http-agents.md):
    ``{name: {"kind": "http", "url"}}``, ``{"kind": "mcp", "mcp_server": {"command", "args"}}``,
    ``{"kind": "cli", "path"}`` — what a Python agent finds in ``turn.mocks``."""
    out: dict[str, dict[str, Any]] = {}
    for name, handle in (handles or {}).items():
        entry: dict[str, Any] = {"kind": handle.kind}
        for key in ("url", "mcp_server", "path"):
            value = getattr(handle, key, None)
            if value is not None:
                entry[key] = value
        out[name] = entry
    return out


def resolve(spec: str) -> HttpHarness:
    """``"http://127.0.0.1:8787"`` → a harness. A malformed URL raises HarnessSpecError."""
    return HttpHarness(spec, parse_base_url(spec))
