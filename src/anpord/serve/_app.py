"""The aiohttp application speaking the HTTP agent protocol (docs/http-agents.md) for one
Python agent. Routes read top to bottom in the order a client calls them."""

from __future__ import annotations

import asyncio
import hmac
import traceback
from collections.abc import Awaitable, Callable, Collection
from pathlib import Path
from typing import Any

from aiohttp import web

from .._version import __version__
from .._agent_protocol import (
    INFO_PATH,
    NDJSON,
    PROTOCOL,
    PROTOCOL_VERSION,
    SESSIONS_PATH,
    TURN_END,
    error_body,
)
from ..events import Event
from ..harnesses._protocol import InputResponse, TurnOutcome, TurnRequest
from ..harnesses.python import PythonHarness
from ..results._encode import decode, encode
from ._sessions import ServedSession, SessionBusy, SessionExists, SessionTable
from ._spans import SpanFlush

__all__ = ["MAX_REQUEST_BYTES", "create_app"]

# A turn may carry a file (t.send_file) as a data URL: far above aiohttp's 1 MiB default.
MAX_REQUEST_BYTES = 64 << 20
MAX_SESSION_ID = 200


class _Refused(Exception):
    """A request the protocol refuses: answered ``{"error": code, "message": message}``."""

    def __init__(self, status: int, code: str, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class _BadRequest(_Refused):
    def __init__(self, message: str):
        super().__init__(400, "bad_request", message)


def _error(status: int, code: str, message: str) -> web.Response:
    return web.Response(
        status=status, body=error_body(code, message), content_type="application/json"
    )


def _line(obj: dict[str, Any]) -> bytes:
    # The records' encoder: standard JSON whatever an agent returned (NaN and infinities as
    # null, which JSON.parse and Go can read; nesting past what a reader takes cut with a note).
    return encode(obj) + b"\n"


def _event_line(event: Event) -> bytes:
    # Data fields at the top level, as in events.ndjson; the client stamps its own time.
    return _line({"type": event.type, **dict(event.data)})


async def _json_body(request: web.Request, *, optional: bool = False) -> dict[str, Any]:
    raw = await request.read()
    if not raw.strip():
        if optional:
            return {}
        raise _BadRequest("the request needs a JSON object body")
    try:
        body = decode(raw)  # nesting bounded: a 5,000-level body is a bad request, not a crash
    except ValueError as exc:
        raise _BadRequest(f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _BadRequest(f"the body must be a JSON object, got {type(body).__name__}")
    return body


def _optional_str(body: dict[str, Any], key: str) -> str | None:
    value = body.get(key)
    if value is not None and not isinstance(value, str):
        raise _BadRequest(f"{key!r} must be a string or null, got {type(value).__name__}")
    return value


def _turn_request(body: dict[str, Any]) -> TurnRequest:
    """``{"input": ...}`` or ``{"responses": [...]}``, with optional ``messages``."""
    has_input = body.get("input") is not None
    responses = body.get("responses")
    if has_input == bool(responses):
        raise _BadRequest(
            "a turn carries either 'input' (a message) or 'responses' (answers), not both or neither"
        )
    messages = body.get("messages") or []
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise _BadRequest('\'messages\' must be a list of {"role", "content"} objects')
    if has_input:
        return TurnRequest(input=body["input"], messages=tuple(messages))
    if not isinstance(responses, list):
        raise _BadRequest(
            '\'responses\' must be a list of {"request_id", "option_id" | "value"} objects'
        )
    parsed = []
    for r in responses:
        if not isinstance(r, dict) or not isinstance(r.get("request_id"), str):
            raise _BadRequest(f"each response needs a string 'request_id', got {r!r}")
        option = r.get("option_id")
        if option is not None and not isinstance(option, str):
            raise _BadRequest(f"'option_id' must be a string, got {option!r}")
        parsed.append(InputResponse(r["request_id"], option_id=option, value=r.get("value")))
    return TurnRequest(responses=tuple(parsed), messages=tuple(messages))


def _final(outcome: TurnOutcome, session: ServedSession) -> dict[str, Any]:
    final: dict[str, Any] = {
        "type": TURN_END,
        "status": outcome.status,
        "message": outcome.message,
        "data": outcome.data,
        "error": outcome.error,
    }
    if outcome.status == "failed":
        # The agent's own failure fails the trial; a turn refused for the client's misuse of the
        # protocol (answering a request that is not pending) does not.
        failure = outcome.failure
        final["error_kind"] = "agent" if failure is not None else "request"
        if failure is not None and failure.traceback:
            final["traceback"] = failure.traceback
    return final


class _Routes:
    def __init__(self, harness: PythonHarness, name: str, table: SessionTable):
        self.harness = harness
        self.name = name
        self.table = table
        self.spans = SpanFlush()  # a traced turn's spans go out as it ends

    def _session(self, request: web.Request) -> ServedSession:
        sid = request.match_info["session_id"]
        session = self.table.get(sid)
        if session is None:
            raise _Refused(
                404, "not_found", f"no session {sid!r} (it was deleted, expired, or never created)"
            )
        return session

    async def info(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "protocol": PROTOCOL,
                "protocol_version": PROTOCOL_VERSION,
                "name": self.name,
                "server": f"anpord {__version__}",
                "capabilities": {"input_requests": True, "cancel": True, "structured_input": True},
            }
        )

    async def create_session(self, request: web.Request) -> web.Response:
        body = await _json_body(request, optional=True)
        sid = _optional_str(body, "session_id")
        if sid is not None and not (0 < len(sid) <= MAX_SESSION_ID and "/" not in sid):
            raise _BadRequest(f"'session_id' must be 1 to {MAX_SESSION_ID} characters without '/'")
        model = _optional_str(body, "model")
        folder = _optional_str(body, "workspace")
        # A workspace is a folder on the client's machine: meaningful only when it exists here.
        workspace = Path(folder) if folder and Path(folder).is_dir() else None
        mocks = _mocks(body)
        proxy = _model_proxy(body)
        try:
            session = self.table.create(sid, model, workspace, mocks, proxy)
        except SessionExists:
            return _error(409, "session_exists", f"session {sid!r} exists already")
        return web.json_response({"session_id": session.session_id}, status=201)

    async def run_turn(self, request: web.Request) -> web.StreamResponse:
        session = self._session(request)
        turn_request = _turn_request(await _json_body(request))
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        joined = _join_trace(request.headers.get("traceparent"))
        try:
            turn = session.start_turn(turn_request, queue.put_nowait)  # the agent's task takes the trace
        except SessionBusy:
            return _error(
                409, "turn_running", "a turn is running in this session: cancel it or wait for it"
            )
        finally:
            _leave_trace(joined)
        turn.add_done_callback(lambda _: queue.put_nowait(None))
        response = web.StreamResponse(headers={"Content-Type": NDJSON, "Cache-Control": "no-store"})
        try:
            await response.prepare(request)
            while True:
                # Whatever is queued goes out in one write; the turn's end is the last item.
                items = [await queue.get()]
                while not queue.empty():
                    items.append(queue.get_nowait())
                lines = [_event_line(e) for e in items if e is not None]
                if lines:
                    await response.write(b"".join(lines))
                if items[-1] is None:
                    break
            try:
                outcome = turn.result()
            except asyncio.CancelledError:
                outcome = TurnOutcome("cancelled", error="cancelled")
            except Exception as exc:  # noqa: BLE001 - reported to the client as a failed turn
                traceback.print_exc()
                outcome = TurnOutcome("failed", error=f"the server failed running the turn: {exc}")
            if joined is not None:  # a traced eval: its client waits for the turn's spans
                self.spans.kick()
            await response.write(_line(_final(outcome, session)))
            await response.write_eof()
        except ConnectionResetError:
            pass  # the client hung up: nobody to tell
        finally:
            # The client went away (or the server is stopping): the agent's turn ends with it.
            if not turn.done():
                turn.cancel()
                await asyncio.gather(turn, return_exceptions=True)
        return response

    async def cancel(self, request: web.Request) -> web.Response:
        session = self._session(request)
        return web.json_response({"cancelled": await session.cancel()})

    async def delete_session(self, request: web.Request) -> web.Response:
        sid = request.match_info["session_id"]
        # Shielded: a client that hangs up after asking still gets its session closed.
        if not await asyncio.shield(self.table.close(sid)):
            raise _Refused(404, "not_found", f"no session {sid!r}")
        return web.Response(status=204)


def _join_trace(traceparent: str | None) -> Any:
    """A traced eval's W3C ``traceparent`` (docs/traces.md): the agent's spans continue its trace,
    when this process has OpenTelemetry. Returns what ``_leave_trace`` undoes."""
    if not traceparent:
        return None
    try:
        from opentelemetry import context, propagate
    except ImportError:
        return None
    return context.attach(propagate.extract({"traceparent": traceparent}))


def _leave_trace(token: Any) -> None:
    if token is not None:
        from opentelemetry import context

        context.detach(token)


@web.middleware
async def _json_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every error is ``{"error", "message"}`` JSON, whoever raised it (a route, the router)."""
    try:
        return await handler(request)
    except _Refused as exc:
        return _error(exc.status, exc.code, exc.message)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        return _error(exc.status, *_describe(exc, request))
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - a bug must still answer JSON
        traceback.print_exc()
        return _error(500, "internal_error", f"{type(exc).__name__}: {exc}")


def _describe(exc: web.HTTPException, request: web.Request) -> tuple[str, str]:
    """(code, message) for an HTTP error aiohttp raised (its router, its body-size limit)."""
    if exc.status == 404:
        return (
            "not_found",
            f"no route {request.method} {request.path} on this anpord agent server",
        )
    if exc.status == 405:
        return "method_not_allowed", f"{request.method} is not allowed on {request.path}"
    if exc.status == 413:
        return "too_large", f"the request body is larger than {MAX_REQUEST_BYTES} bytes"
    return exc.reason.lower().replace(" ", "_"), exc.reason


def _guard(
    allowed_hosts: Collection[str] | None, token: str | None
) -> Callable[[web.Request, Callable[[web.Request], Awaitable[web.StreamResponse]]], Awaitable[web.StreamResponse]]:
    """Who may drive the agent: requests addressed to the server by its own name (no DNS
    rebinding), never a browser page of another site, and, with a token, only its holders."""
    expected = f"Bearer {token}".encode() if token else None

    @web.middleware
    async def guard(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        if allowed_hosts is not None and request.host.lower() not in allowed_hosts:
            return _error(403, "forbidden", "this agent server answers only requests addressed to it by its own URL")
        # A browser says where a request comes from; the protocol's clients are programs, which
        # do not. Even a "simple" text/plain POST that a page sends without CORS carries Origin.
        origin = request.headers.get("Origin")
        site = request.headers.get("Sec-Fetch-Site")
        if (origin is not None and origin.lower() != f"http://{request.host.lower()}") or (
            site is not None and site.lower() not in ("same-origin", "none")
        ):
            return _error(403, "forbidden", "this agent server does not answer pages of other sites")
        if expected is not None:
            given = request.headers.get("Authorization", "").encode("utf-8", "replace")
            if not hmac.compare_digest(given, expected):
                response = _error(
                    401, "unauthorized", "this agent server needs its token: Authorization: Bearer TOKEN"
                )
                response.headers["WWW-Authenticate"] = "Bearer"
                return response
        return await handler(request)

    return guard


def _mocks(body: Any) -> dict[str, Any]:
    """The session's mocks (``{name: {"kind", "url" | "mcp_server" | "path"}}``), as the agent's
    ``turn.mocks`` holds them."""
    raw = body.get("mocks") if isinstance(body, dict) else None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _BadRequest("'mocks' must be an object of mock names to {kind, url | mcp_server | path}")
    from ..mocks._service import MockHandle

    out: dict[str, Any] = {}
    for name, entry in raw.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("kind"), str):
            raise _BadRequest(f"'mocks.{name}' must be an object with a 'kind'")
        server = entry.get("mcp_server")
        out[name] = MockHandle(name, entry["kind"], url=entry.get("url") if isinstance(entry.get("url"), str) else None,
                               mcp_server=server if isinstance(server, dict) else None,
                               path=entry.get("path") if isinstance(entry.get("path"), str) else None)
    return out


def _model_proxy(body: Any) -> Any:
    """The session's model proxy (``{"url", "env"}``, the client's trial's address and the
    variables pointing at it) as the agent's ``turn.model_proxy`` holds it, or None."""
    raw = body.get("model_proxy") if isinstance(body, dict) else None
    if raw is None:
        return None
    env = raw.get("env") if isinstance(raw, dict) else None
    if not (isinstance(raw, dict) and isinstance(raw.get("url"), str) and isinstance(env, dict)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())):
        raise _BadRequest("'model_proxy' must be an object with a 'url' and an 'env' of variable names to strings")
    from ..proxy._service import ProxyHandle

    return ProxyHandle(raw["url"], env)


def create_app(
    harness: PythonHarness,
    *,
    name: str,
    log: Callable[[str], None],
    idle_timeout: float | None = None,
    allowed_hosts: Collection[str] | None = None,
    token: str | None = None,
) -> web.Application:
    """The application serving ``harness``'s agent; ``idle_timeout`` seconds without a turn
    close a session (None: never). ``allowed_hosts``: the ``Host`` header values answered (None:
    any); ``token``: the bearer token every request must carry (None: no token)."""
    table = SessionTable(harness, log)
    routes = _Routes(harness, name, table)
    app = web.Application(
        middlewares=[_guard(allowed_hosts, token), _json_errors], client_max_size=MAX_REQUEST_BYTES  # type: ignore[list-item]
    )
    app.router.add_get(INFO_PATH, routes.info)
    app.router.add_post(SESSIONS_PATH, routes.create_session)
    app.router.add_post(SESSIONS_PATH + "/{session_id}/turns", routes.run_turn)
    app.router.add_post(SESSIONS_PATH + "/{session_id}/cancel", routes.cancel)
    app.router.add_delete(SESSIONS_PATH + "/{session_id}", routes.delete_session)

    async def sweeper(app: web.Application) -> Any:
        task = asyncio.ensure_future(_sweep(table, idle_timeout)) if idle_timeout else None
        yield
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def stop_sessions(app: web.Application) -> None:
        # Before the server waits for its handlers: running turns end cancelled (their streams
        # say so) and parked agents are stopped.
        await table.close_all()

    app.on_shutdown.append(stop_sessions)
    app.cleanup_ctx.append(sweeper)
    return app


async def _sweep(table: SessionTable, idle_timeout: float) -> None:
    while True:
        await asyncio.sleep(min(60.0, max(idle_timeout / 4, 0.05)))
        await table.close_idle(idle_timeout)
