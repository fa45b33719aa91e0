"""Answering one HTTP mock's requests: the route that matches, from data or a function."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import parse_qs

from .._errors import exception_line
from ..traces._http import Reply, Request
from ._calls import call_user
from ._declare import ROUTE_KEYS, HttpMock, Route, answer_problem, json_body

__all__ = ["MockRequest", "answer_http", "BODY_KEPT"]

BODY_KEPT = 64 * 1024  # characters of a request body the record keeps
# Header values a record never holds: the agent may send a credential even to a mock. The
# standard ones, and the API-key headers of well-known APIs (Anthropic's and others' x-api-key,
# Azure OpenAI's api-key, Google's x-goog-api-key, Azure API Management's subscription key,
# OpenStack's and others' x-auth-token, GitLab's private-token, AWS's session token).
_HIDDEN = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "api-key",
                     "x-goog-api-key", "ocp-apim-subscription-key", "x-auth-token", "private-token",
                     "x-amz-security-token"})


class MockRequest:
    """What a route function gets: ``method``, ``path``, ``query`` (name → first value),
    ``headers`` (lower-case names), ``body`` (bytes), ``text`` and ``json`` (``None`` when it is not)."""

    __slots__ = ("method", "path", "query", "headers", "body", "text", "json")

    def __init__(self, request: Request):
        self.method, self.path, self.headers, self.body = request.method, request.path, request.headers, request.body
        self.query = {k: v[0] for k, v in parse_qs(request.query, keep_blank_values=True).items()}
        self.text = request.body.decode("utf-8", "replace")
        self.json: Any = None
        if request.body:
            try:
                self.json = json.loads(self.text)
            except ValueError:
                pass


class BadAnswer(ValueError):
    """A route function's answer HTTP cannot carry (a status of 1000, a header with a newline)."""


def _reply(answer: Mapping[str, Any]) -> Reply:
    """The HTTP reply for a route's answer; ``BadAnswer`` when it is not one (a declared answer
    was checked when it loaded, a function's is checked here)."""
    problem = answer_problem(answer)
    if problem is not None:
        raise BadAnswer(problem)
    headers = dict(answer.get("headers") or {})
    ctype = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    if "json" in answer:
        try:
            body = json_body(answer["json"])
        except ValueError as exc:
            raise BadAnswer(str(exc)) from None
        return Reply(answer.get("status", 200), body, ctype or "application/json", headers)
    text = answer.get("text", "")
    return Reply(answer.get("status", 200), text.encode(), ctype or "text/plain; charset=utf-8", headers)


async def _call(fn: Callable[..., Any], request: MockRequest) -> Mapping[str, Any]:
    value = await call_user(fn, request)  # a plain function in a thread: it may block
    if isinstance(value, Mapping) and value and set(value) <= ROUTE_KEYS:
        return value
    return {"json": value}  # any other value is the JSON body of a 200


async def answer_http(mock: HttpMock, request: Request) -> tuple[Reply, dict[str, Any]]:
    """The reply to ``request`` and the call's record (``mock.called`` data)."""
    seen = MockRequest(request)
    route: Route | None = next((r for r in mock.routes if r.matches(request.method, request.path)), None)
    call: dict[str, Any] = {
        "mock": mock.name, "kind": "http", "route": route.key if route else None,
        "method": request.method, "path": request.path, "query": seen.query,
        "headers": {k: ("[hidden]" if k in _HIDDEN else v) for k, v in request.headers.items()},
        "json": seen.json, "body": seen.text[:BODY_KEPT], "error": None,
    }
    if route is None:
        served = "; ".join(r.key for r in mock.routes) or "none"
        reply = Reply(404, f"mock {mock.name}: no route for {request.method} {request.path} "
                           f"(routes: {served})".encode())
        call.update(status=404, error=f"no route for {request.method} {request.path}")
        return reply, call
    try:
        answer = await _call(route.answer, seen) if callable(route.answer) else route.answer
        reply = _reply(answer)
        delay = answer.get("delay", 0)
        if delay:
            await asyncio.sleep(delay)
    except asyncio.CancelledError:
        raise
    except BadAnswer as exc:  # as if it had raised: a 500 saying why
        return _failed(mock, call, f"route {route.key} returned an answer HTTP cannot carry: {exc}")
    except Exception as exc:  # noqa: BLE001 - a route that raised answers 500 and says why
        return _failed(mock, call, f"route {route.key} raised {exception_line(exc)}")
    call["status"] = reply.status
    return reply, call


def _failed(mock: HttpMock, call: dict[str, Any], why: str) -> tuple[Reply, dict[str, Any]]:
    call.update(status=500, error=why)
    return Reply(500, f"mock {mock.name}: {why}".encode()), call
