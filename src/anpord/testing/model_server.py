"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

It is a real HTTP/1.1 server on asyncio (keep-alive, Content-Length bodies): start it in-process (a background thread with its own
event loop) or as a subprocess::

    with ModelServer([rule("weather", tool_call("get_weather", {"city": "Brooklyn"}), text("Sunny"))],
                     latency=0.05) as server:
        server.url             # http://127.0.0.1:PORT/v1
        server.requests        # every request body received, oldest first

    python -m anpord.testing.model_server --latency 0.05 --rules rules.json [--port 0] [--no-record]
                                          [--unsupported tools,response_format]
    # prints the base URL on its first stdout line; serves until SIGTERM/SIGINT
    # (or, when its stdin is a pipe, until that pipe closes)

**Rules** are plain data (the same JSON on the command line). Each request's *last user message*
is matched against the rules in order — ``match`` is a substring, ``"re:<pattern>"`` a regex, or
``None`` for any — and the first match answers. A judge's question quotes the conversation it
grades, so an agent's rule would answer it too: ``"caller": "agent" | "judge" | "user"`` limits a
rule to the agent's requests, anpord's judges' (told by their system prompt) or a ``persona``'s
(the simulated user); a rule without one answers any caller. The reply depends on the step: how
many assistant messages follow that user message (0 for a fresh turn, 1 after the first tool
round, …); the rule's ``replies[step]`` answers, its last reply once the list runs out (so a
single tool call loops forever). No rule matches: ``default`` (an echo, ``"echo: {input}"``).

Replies: ``{"text": "... {input} ..."}``; ``{"json": value}`` (the content is its JSON text);
``{"tool_calls": [{"name": ..., "arguments": {...} | "raw text", "id": ...}]}``;
``{"refusal": "..."}`` (no content, the model's refusal). Each may carry
``"usage": {"prompt_tokens": n, "completion_tokens": n}`` (else words are counted) and
``"latency": seconds``.

``unsupported=("tools", "response_format", ...)`` plays a server without those request fields: a
request carrying one gets a 400 naming it, as servers that lack tool calls or structured output do.

Faults (``fault=`` on a rule: served for its first ``times`` matching requests, every time when
``times`` is None, then the rule's replies): ``rate_limit`` (429 with ``Retry-After``, in seconds
or as an HTTP date), ``server_error`` (a 5xx), ``malformed`` (200 with a body that is not JSON),
``no_choices`` (200, valid JSON, no choices), ``reset`` (headers and half a body, then the
connection is cut), ``hang`` (never answers).

Each recorded request carries ``_received`` and, once answered, ``_answered``: seconds on the
server's monotonic clock, so a test can tell which requests were in flight together; and
``_caller``, who sent it (``agent``, ``judge`` or ``user``).

Also served: Anthropic's ``POST /v1/messages`` (plain and streamed; the same rules answer it,
the conversation read as chat messages: ``testing/_anthropic``) and ``/v1/messages/count_tokens``;
``GET /v1/models``, ``GET /_anpord/requests`` and ``GET /_anpord/stats`` (requests
served, in flight now, peak concurrent requests, distinct client connections) for a server in another process.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import signal
import stat
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from email.utils import formatdate
from typing import Any

__all__ = [
    "CALLERS",
    "ECHO",
    "caller_of",
    "ModelServer",
    "hang",
    "json_reply",
    "main",
    "malformed",
    "no_choices",
    "rate_limit",
    "refusal",
    "reset",
    "rule",
    "server_error",
    "text",
    "tool_call",
    "tool_calls",
]

ECHO: dict[str, Any] = {"text": "echo: {input}"}


# -- building rules --------------------------------------------------------------------------


def text(content: str, **extra: Any) -> dict[str, Any]:
    """A plain answer; ``{input}`` is replaced by the last user message."""
    return {"text": content, **extra}


def json_reply(value: Any, **extra: Any) -> dict[str, Any]:
    """An answer whose content is ``value`` as JSON text (structured output)."""
    return {"json": value, **extra}


def refusal(message: str, **extra: Any) -> dict[str, Any]:
    """The model declines: no content, ``message`` in the message's ``refusal`` field."""
    return {"refusal": message, **extra}


def tool_call(
    name: str, arguments: Any = None, id: str | None = None, **extra: Any
) -> dict[str, Any]:
    """One tool call. ``arguments``: a dict (sent as JSON) or a raw string (sent as it is)."""
    call: dict[str, Any] = {"name": name, "arguments": {} if arguments is None else arguments}
    if id is not None:
        call["id"] = id
    return {"tool_calls": [call], **extra}


def tool_calls(*calls: tuple[str, Any], **extra: Any) -> dict[str, Any]:
    """Several tool calls in one answer: ``tool_calls(("a", {...}), ("b", {...}))``."""
    return {"tool_calls": [{"name": n, "arguments": a} for n, a in calls], **extra}


def rate_limit(
    retry_after: float | str | None = 1, times: int | None = 1, *, http_date: bool = False
) -> dict[str, Any]:
    return {
        "kind": "rate_limit",
        "retry_after": retry_after,
        "http_date": http_date,
        "times": times,
    }


def server_error(status: int = 500, times: int | None = 1) -> dict[str, Any]:
    return {"kind": "server_error", "status": status, "times": times}


def malformed(times: int | None = None) -> dict[str, Any]:
    return {"kind": "malformed", "times": times}


def no_choices(times: int | None = None) -> dict[str, Any]:
    return {"kind": "no_choices", "times": times}


def reset(times: int | None = 1) -> dict[str, Any]:
    return {"kind": "reset", "times": times}


def hang(times: int | None = None) -> dict[str, Any]:
    return {"kind": "hang", "times": times}


def rule(
    match: str | None,
    *replies: Mapping[str, Any],
    fault: Mapping[str, Any] | None = None,
    caller: str | None = None,
) -> dict[str, Any]:
    """A rule; ``caller`` (``"agent"``, ``"judge"`` or ``"user"``) limits it to that caller's
    requests, None answers any."""
    out: dict[str, Any] = {"match": match, "replies": [dict(r) for r in replies]}
    if fault is not None:
        out["fault"] = dict(fault)
    if caller is not None:
        out["caller"] = caller
    return out


def caller_of(body: Mapping[str, Any]) -> str:
    """Who sent a chat request: ``"judge"`` (anpord's judges, recognised by their system prompt),
    ``"user"`` (a ``persona`` playing the user, likewise) or ``"agent"`` (anything else)."""
    from ..judges._prompts import SYSTEM_PROMPT
    from ..users._persona import PERSONA_OPENING

    messages = body.get("messages")
    first = messages[0] if isinstance(messages, list) and messages else None
    if isinstance(first, Mapping) and first.get("role") == "system":
        system = _text_of(first.get("content"))
        if system == SYSTEM_PROMPT:
            return "judge"
        if system.startswith(PERSONA_OPENING):
            return "user"
    return "agent"


CALLERS = ("agent", "judge", "user")


# -- answering --------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return ""


def _turn_position(messages: list[Any]) -> tuple[str, int]:
    """(the last user message's text, how many assistant messages follow it)."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if isinstance(m, Mapping) and m.get("role") == "user":
            step = sum(
                1
                for n in messages[i + 1 :]
                if isinstance(n, Mapping) and n.get("role") == "assistant"
            )
            return _text_of(m.get("content")), step
    return "", 0


def _words(value: Any) -> int:
    return len(json.dumps(value).split()) if not isinstance(value, str) else len(value.split())


class _Rule:
    def __init__(self, raw: Mapping[str, Any]):
        match = raw.get("match")
        if match is not None and not isinstance(match, str):
            raise ValueError(f"rule match must be a string or null, got {match!r}")
        self.pattern = (
            re.compile(match[3:]) if isinstance(match, str) and match.startswith("re:") else None
        )
        self.match = match
        replies = raw.get("replies")
        if replies is None and "reply" in raw:
            replies = [raw["reply"]]
        self.replies = [dict(r) for r in (replies or [])]
        self.fault = dict(raw["fault"]) if raw.get("fault") else None
        if self.fault is not None and self.fault.get("kind") not in _FAULTS:
            raise ValueError(
                f"unknown fault {self.fault.get('kind')!r}; faults: {', '.join(_FAULTS)}"
            )
        if not self.replies and self.fault is None:
            raise ValueError(f"rule {match!r} has neither replies nor a fault")
        self.caller = raw.get("caller")
        if self.caller is not None and self.caller not in CALLERS:
            raise ValueError(
                f"rule {match!r}: unknown caller {self.caller!r}; callers: {', '.join(CALLERS)}"
            )
        self.faults_served = 0
        self.lock = threading.Lock()

    def matches(self, text: str, caller: str = "agent") -> bool:
        if self.caller is not None and self.caller != caller:
            return False
        if self.match is None:
            return True
        if self.pattern is not None:
            return self.pattern.search(text) is not None
        return self.match in text

    def take_fault(self) -> dict[str, Any] | None:
        if self.fault is None:
            return None
        with self.lock:
            times = self.fault.get("times")
            if times is not None and self.faults_served >= times:
                return None
            self.faults_served += 1
        return self.fault


_FAULTS = ("rate_limit", "server_error", "malformed", "no_choices", "reset", "hang")


def completion(
    reply: Mapping[str, Any], body: Mapping[str, Any], last_user: str, ids: Iterable[int]
) -> dict[str, Any]:
    """The chat-completion body for ``reply`` to request ``body``."""
    counter = iter(ids)
    message: dict[str, Any] = {"role": "assistant", "content": None}
    finish = "stop"
    if "tool_calls" in reply:
        calls = []
        for call in reply["tool_calls"]:
            args = call.get("arguments", {})
            calls.append(
                {
                    "id": call.get("id") or f"call_{next(counter)}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": args if isinstance(args, str) else json.dumps(args),
                    },
                }
            )
        message["tool_calls"] = calls
        finish = "tool_calls"
        produced: Any = calls
    elif "json" in reply:
        message["content"] = produced = json.dumps(reply["json"])
    elif "refusal" in reply:
        message["refusal"] = produced = str(reply["refusal"])
    else:
        message["content"] = produced = str(reply.get("text", "")).replace("{input}", last_user)
    usage = reply.get("usage") or {}
    prompt = usage.get(
        "prompt_tokens",
        sum(
            _words(m.get("content") or "") + 1
            for m in body.get("messages", [])
            if isinstance(m, Mapping)
        ),
    )
    out = usage.get("completion_tokens", _words(produced))
    return {
        "id": f"chatcmpl-{next(counter)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "scripted")),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
    }


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    411: "Length Required",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_MAX_HEAD = 64 << 10
_MAX_BODY = 64 << 20


def _response(status: int, body: bytes, headers: Mapping[str, str] | None = None) -> bytes:
    extra = dict(headers or {})
    head = [
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}",
        f"Content-Type: {extra.pop('Content-Type', 'application/json')}",
        f"Content-Length: {len(body)}",
    ]
    head += [f"{k}: {v}" for k, v in extra.items()]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def _json(status: int, value: Any, headers: Mapping[str, str] | None = None) -> bytes:
    return _response(status, json.dumps(value).encode("utf-8"), headers)


class _Connection(asyncio.Protocol):
    """One client connection: HTTP/1.1 requests with a Content-Length body, answered in order.

    A small protocol of its own rather than a web framework: a scripted answer costs a parse, a
    timer and one write, so the server is never what a benchmark measures."""

    def __init__(self, server: ModelServer):
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False  # answering a request: later ones wait in the buffer
        self.keep_alive = True
        self.counted = False  # the current request is a chat request (it counts in the stats)
        self.timer: asyncio.TimerHandle | None = None
        self.entry: dict[str, Any] | None = None  # the recorded request being answered

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.server._opened(self, transport.get_extra_info("peername"))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.busy:  # a hung or delayed request whose client went away
            self.busy = False
            if self.counted:
                self.server._finished()
        self.server._closed(self)
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._next()

    def _next(self) -> None:
        while not self.busy and self.transport is not None:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > _MAX_HEAD:
                    self._fail(400, "request head too large")
                return
            lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
            parts = lines[0].split(" ")
            if len(parts) != 3:
                self._fail(400, "bad request line")
                return
            method, target, version = parts
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            if "chunked" in headers.get("transfer-encoding", "").lower():
                self._fail(411, "send a Content-Length body")
                return
            try:
                length = int(headers.get("content-length", "0"))
            except ValueError:
                self._fail(400, "bad Content-Length")
                return
            if length > _MAX_BODY:
                self._fail(400, "request body too large")
                return
            if len(self.buffer) < end + 4 + length:
                return
            body = bytes(self.buffer[end + 4 : end + 4 + length])
            del self.buffer[: end + 4 + length]
            connection = headers.get("connection", "").lower()
            self.keep_alive = connection != "close" and (
                version == "HTTP/1.1" or connection == "keep-alive"
            )
            self.busy = True
            self.counted = False
            self.server._request(self, method, target.split("?", 1)[0], headers, body)

    def _fail(self, status: int, message: str) -> None:
        if self.transport is not None:
            self.transport.write(_json(status, {"error": {"message": message}}))
            self.transport.close()

    def send(self, data: bytes) -> None:
        """Answer the current request, then read the next."""
        self.timer = None
        if not self.busy or self.transport is None:
            return
        self.busy = False
        if self.counted:
            self.server._finished(self.entry)
        self.entry = None
        self.transport.write(data)
        if not self.keep_alive:
            self.transport.close()
        elif self.buffer:
            self._next()

    def cut(self, partial: bytes) -> None:
        """Send a head promising more than ``partial``, then drop the connection."""
        self.timer = None
        if self.transport is not None:
            self.transport.write(partial)
            self.transport.abort()


class ModelServer:
    """The scripted server. ``start()`` serves from a background thread; ``stop()`` ends it.
    Use it as a context manager. Reads of ``requests``/stats are safe from any thread."""

    def __init__(
        self,
        rules: Iterable[Mapping[str, Any]] = (),
        *,
        latency: float = 0.0,
        default: Mapping[str, Any] | None = None,
        record: bool = True,
        host: str = "127.0.0.1",
        port: int = 0,
        unsupported: Iterable[str] = (),
    ):
        self.rules = [_Rule(r) for r in rules]
        self.unsupported = tuple(unsupported)
        self.latency = float(latency)
        self.default = dict(default or ECHO)
        self.record = record
        self.host = host
        self.port = port
        self._requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.served = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self._peers: set[Any] = set()
        self._open: set[_Connection] = set()
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.AbstractServer | None = None

    # -- inspection ---------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """The bodies received (decoded JSON), oldest first, each with ``_path`` and ``_headers``
        (the Authorization and x-api-key headers, when sent)."""
        with self._lock:
            return list(self._requests)

    @property
    def connections(self) -> int:
        """Distinct client connections seen since the last ``reset_stats``."""
        with self._lock:
            return len(self._peers)

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "served": self.served,
                "in_flight": self.in_flight,
                "peak_in_flight": self.peak_in_flight,
                "connections": len(self._peers),
            }

    def reset_stats(self) -> None:
        with self._lock:
            self._requests.clear()
            self.served = self.peak_in_flight = 0
            self._peers.clear()

    # -- connections --------------------------------------------------------------------------

    def _opened(self, conn: _Connection, peer: Any) -> None:
        self._open.add(conn)
        with self._lock:
            self._peers.add(peer)

    def _closed(self, conn: _Connection) -> None:
        self._open.discard(conn)

    def _finished(self, entry: dict[str, Any] | None = None) -> None:
        with self._lock:
            self.in_flight -= 1
            self.served += 1
            if entry is not None:
                entry["_answered"] = time.monotonic()

    # -- answering ----------------------------------------------------------------------------

    def _answer_for(
        self, body: Mapping[str, Any], caller: str = "agent"
    ) -> tuple[Mapping[str, Any] | None, Mapping[str, Any], str]:
        """(the fault to serve or None, the reply, the last user message)."""
        messages = body.get("messages")
        last_user, step = _turn_position(messages if isinstance(messages, list) else [])
        for r in self.rules:
            if r.matches(last_user, caller):
                fault = r.take_fault()
                if fault is not None or not r.replies:
                    return fault or {"kind": "server_error", "status": 500}, {}, last_user
                return None, r.replies[min(step, len(r.replies) - 1)], last_user
        return None, self.default, last_user

    def _request(
        self, conn: _Connection, method: str, path: str, headers: dict[str, str], raw: bytes
    ) -> None:
        if method == "GET":
            if path == "/_anpord/requests":
                conn.send(_json(200, self.requests))
            elif path == "/_anpord/stats":
                conn.send(_json(200, self.stats()))
            elif path.endswith("/models"):
                conn.send(
                    _json(200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]})
                )
            else:
                conn.send(_json(404, {"error": {"message": f"no route {path}"}}))
            return
        if method == "POST" and path.endswith("/v1/messages/count_tokens"):
            conn.send(_json(200, {"input_tokens": _words(raw.decode("utf-8", "replace"))}))
            return
        anthropic = method == "POST" and path.endswith("/v1/messages")
        if not anthropic and (method != "POST" or not path.endswith("/chat/completions")):
            conn.send(_json(404, {"error": {"message": f"no route {method} {path}"}}))
            return
        conn.counted = True
        with self._lock:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            conn.send(_json(400, {"error": {"message": "the request body is not a JSON object"}}))
            return
        original = body
        if anthropic:  # Anthropic Messages: answered by the same rules (_anthropic)
            from ._anthropic import as_chat

            body = as_chat(body)
        caller = caller_of(body)
        if self.record:
            entry = dict(body)
            entry["_path"] = path
            # The key as each API sends it: OpenAI's Authorization, Anthropic's x-api-key.
            entry["_headers"] = {
                name: headers[name.lower()]
                for name in ("Authorization", "x-api-key")
                if name.lower() in headers
            }
            entry["_received"] = time.monotonic()
            entry["_caller"] = caller
            conn.entry = entry
            with self._lock:
                self._requests.append(entry)
        refused = next((f for f in self.unsupported if f in body), None)
        if refused is not None:
            message = f"'{refused}' is not supported by this server"
            conn.send(_json(400, {"error": {"message": message, "type": "invalid_request_error"}}))
            return
        fault, reply, last_user = self._answer_for(body, caller)
        if fault is None:
            answer = completion(reply, body, last_user, self._ids)
            if anthropic:
                from ._anthropic import messages_body, messages_stream

                reply_body = messages_body(answer)
                data = (_response(200, messages_stream(reply_body), {"Content-Type": "text/event-stream"})
                        if original.get("stream") else _json(200, reply_body))
            else:
                data = _json(200, answer)
            delay = float(reply.get("latency", self.latency))
            if delay > 0:
                conn.timer = asyncio.get_running_loop().call_later(delay, conn.send, data)
            else:
                conn.send(data)
            return
        kind = fault["kind"]
        if kind == "hang":
            return  # answered never: the request ends when the client drops it, or at stop()
        data = self._fault(fault)
        action = conn.cut if kind == "reset" else conn.send
        if self.latency > 0:
            conn.timer = asyncio.get_running_loop().call_later(self.latency, action, data)
        else:
            action(data)

    @staticmethod
    def _fault(fault: Mapping[str, Any]) -> bytes:
        kind = fault["kind"]
        if kind == "rate_limit":
            headers = {}
            after = fault.get("retry_after")
            if after is not None:
                headers["Retry-After"] = (
                    formatdate(time.time() + float(after), usegmt=True)
                    if fault.get("http_date")
                    else str(after)
                )
            return _json(
                429,
                {"error": {"message": "Rate limit reached (scripted)", "type": "rate_limit"}},
                headers,
            )
        if kind == "server_error":
            return _json(
                int(fault.get("status", 500)),
                {"error": {"message": "The server had an error (scripted)"}},
            )
        if kind == "malformed":
            return _response(200, b"<html>this is not JSON")
        if kind == "no_choices":
            return _json(200, {"id": "chatcmpl-x", "object": "chat.completion", "choices": []})
        # reset: a head promising 4096 bytes, a few of them, then the connection is cut
        return (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4096\r\n\r\n"
            b'{"id": "chatcmpl-cut", "choices": ['
        )

    # -- running ------------------------------------------------------------------------------

    async def serve(self) -> None:
        """Bind and serve on the running loop (sets ``port``); returns once listening."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: _Connection(self), self.host, self.port, backlog=4096, reuse_address=True
        )
        self.port = self._server.sockets[0].getsockname()[1]

    async def shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
            for conn in list(self._open):
                if conn.transport is not None:
                    conn.transport.abort()
            await self._server.wait_closed()
            self._server = None

    def start(self) -> ModelServer:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self.serve())
            except BaseException as exc:  # noqa: BLE001 - reported to the starting thread
                failure.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self.shutdown())
            loop.close()

        self._thread = threading.Thread(target=run, name="anpord-model-server", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self._loop = self._thread = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


# -- as a program ------------------------------------------------------------------------------


def _load_rules(value: str | None) -> list[Any]:
    if not value:
        return []
    text_value = value
    if not value.lstrip().startswith("["):
        with open(value, encoding="utf-8") as fh:
            text_value = fh.read()
    rules = json.loads(text_value)
    if not isinstance(rules, list):
        raise ValueError("rules must be a JSON list of rules")
    return rules


def _is_pipe(stream: Any) -> bool:
    try:
        return stat.S_ISFIFO(os.fstat(stream.fileno()).st_mode)
    except (OSError, ValueError, AttributeError):
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m anpord.testing.model_server",
        description="A scripted OpenAI-compatible server on 127.0.0.1.",
    )
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    parser.add_argument("--rules", help="a JSON file of rules, or the JSON list itself")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--no-record", action="store_true", help="do not keep request bodies")
    parser.add_argument(
        "--unsupported",
        default="",
        help="request fields answered with a 400 naming them, comma-separated (tools,response_format)",
    )
    args = parser.parse_args(argv)
    try:
        rules = _load_rules(args.rules)
        unsupported = [f for f in args.unsupported.split(",") if f.strip()]
        server = ModelServer(
            rules,
            latency=args.latency,
            record=not args.no_record,
            port=args.port,
            unsupported=[f.strip() for f in unsupported],
        )
    except (OSError, ValueError) as exc:
        print(f"model_server: {exc}", file=sys.stderr)
        return 2

    async def run() -> int:
        try:
            await server.serve()
        except OSError as exc:  # the port is taken, or not ours to bind
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            print(f"model_server: cannot listen on {server.host}:{args.port}: {reason}",
                  file=sys.stderr)
            return 2
        print(server.url, flush=True)
        loop = asyncio.get_running_loop()
        done = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, done.set)
        if _is_pipe(sys.stdin):
            # Also end when the parent closes our stdin pipe (it went away without a signal).
            loop.add_reader(
                sys.stdin.fileno(),
                lambda: done.set() if not os.read(sys.stdin.fileno(), 4096) else None,
            )
        await done.wait()
        await server.shutdown()
        return 0

    return asyncio.run(run())


if __name__ == "__main__":
    sys.exit(main())
