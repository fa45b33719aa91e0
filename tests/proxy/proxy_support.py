"""A scripted upstream speaking the four APIs the model proxy serves, and a proxy started on its
own event loop in a background thread, so the tests drive both with real, blocking clients (the
``openai`` SDK, raw sockets)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from aiohttp import web

from anpord.authoring._config import Variant
from anpord.events import Event
from anpord.proxy._service import ModelProxyService
from anpord.runner._services import ServiceContext

CHUNK_GAP = 0.3  # seconds between the upstream's streamed events


class Loop:
    """An event loop in a thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


def _sse(events: list[tuple[str | None, Any]]) -> list[bytes]:
    out = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        body = data if isinstance(data, str) else json.dumps(data)
        out.append(f"{head}data: {body}\n\n".encode())
    return out


def _chat(model: str, text: str) -> dict[str, Any]:
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": model,
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14,
                      "prompt_tokens_details": {"cached_tokens": 4}}}


def _chat_stream(model: str, words: list[str]) -> list[bytes]:
    events: list[tuple[str | None, Any]] = []
    for i, w in enumerate(words):
        events.append((None, {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": model,
                              "choices": [{"index": 0, "delta": {"content": w, **({"role": "assistant"} if i == 0 else {})},
                                           "finish_reason": None}]}))
    events.append((None, {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": model,
                          "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    events.append((None, {"id": "chatcmpl-s", "object": "chat.completion.chunk", "created": 1, "model": model,
                          "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": len(words),
                                                   "total_tokens": 7 + len(words)}}))
    events.append((None, "[DONE]"))
    return _sse(events)


def _response(model: str, text: str) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": model,
            "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}],
            "usage": {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25,
                      "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 2}},
            "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}


def _response_stream(model: str, words: list[str]) -> list[bytes]:
    done = _response(model, "".join(words))
    base = {**done, "status": "in_progress", "output": [], "usage": None}
    item = done["output"][0]
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "sequence_number": 0, "response": base}),
        ("response.output_item.added", {"type": "response.output_item.added", "sequence_number": 1,
                                        "output_index": 0, "item": {**item, "status": "in_progress", "content": []}})]
    for i, w in enumerate(words):
        events.append(("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": i + 2,
                                                      "item_id": "msg_1", "output_index": 0, "content_index": 0,
                                                      "delta": w, "logprobs": []}))
    events.append(("response.output_item.done", {"type": "response.output_item.done", "sequence_number": len(words) + 2,
                                                 "output_index": 0, "item": item}))
    events.append(("response.completed", {"type": "response.completed", "sequence_number": len(words) + 3,
                                          "response": done}))
    return _sse(events)


def _messages(model: str, text: str) -> dict[str, Any]:
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 9, "output_tokens": 4, "cache_read_input_tokens": 100,
                      "cache_creation_input_tokens": 0}}


def _messages_stream(model: str, words: list[str]) -> list[bytes]:
    start = {**_messages(model, ""), "content": [], "usage": {"input_tokens": 9, "output_tokens": 1}}
    events: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})]
    for w in words:
        events.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                               "delta": {"type": "text_delta", "text": w}}))
    events += [("content_block_stop", {"type": "content_block_stop", "index": 0}),
               ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                                  "usage": {"output_tokens": len(words)}}),
               ("message_stop", {"type": "message_stop"})]
    return _sse(events)


def _gemini(model: str, text: str, final: bool = True) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                            **({"finishReason": "STOP"} if final else {})}],
            "usageMetadata": {"promptTokenCount": 6, "candidatesTokenCount": 2, "totalTokenCount": 8},
            "modelVersion": model}


class _Brotli:
    """Brotli behind zlib's compressor methods, so a streamed answer is compressed piece by piece."""

    def __init__(self) -> None:
        import brotli

        self._squeeze = brotli.Compressor()

    def compress(self, piece: bytes) -> bytes:
        return bytes(self._squeeze.process(piece))

    def flush(self, mode: int | None = None) -> bytes:
        return bytes(self._squeeze.flush() if mode is not None else self._squeeze.finish())


class Upstream:
    """The caller's model endpoint, scripted: every API answers ``reply`` (streamed word by word,
    ``CHUNK_GAP`` apart). ``status``/``body`` override the answer; ``delay`` holds it back.
    ``seen`` lists each request: method, path, query, headers, JSON body. ``compress``: ``"asked"``
    gzips an answer when the request's Accept-Encoding allows it (as a CDN does); ``"gzip"`` and
    ``"deflate"`` (raw, without its zlib header) and ``"br"`` compress every answer, asked or not."""

    def __init__(self, reply: str = "Hello from upstream", gap: float = CHUNK_GAP):
        self.reply, self.gap = reply, gap
        self.compress: str | None = None
        self.cookie: str | None = None  # a Set-Cookie every answer carries
        self.seen: list[dict[str, Any]] = []
        self.status: int | None = None
        self.body: Any = None
        self.delay = 0.0
        self.host = "127.0.0.1"  # the host the URL names; the server listens on 127.0.0.1 whatever it is
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        # Header lines as long as a provider's gateway takes (HTTP libraries stop at 8 KiB).
        self._runner = web.AppRunner(app, access_log=None, max_line_size=65536, max_field_size=65536)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://{self.host}:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        body = json.loads(raw) if raw else None
        self.seen.append({"method": request.method, "path": request.path, "query": dict(request.query),
                          "headers": {k.lower(): v for k, v in request.headers.items()}, "json": body})
        if self.delay:
            await asyncio.sleep(self.delay)
        status, content_type, pieces = self._pieces(request.path, body)
        coding = self.compress
        if coding == "asked":
            coding = "gzip" if "gzip" in request.headers.get("Accept-Encoding", "") else None
        cookie = {"Set-Cookie": self.cookie} if self.cookie else {}
        if coding is None and content_type == "application/json":
            return web.Response(body=pieces[0], status=status, content_type=content_type, headers=cookie)
        headers = {"Content-Type": content_type, **cookie}
        if content_type == "text/event-stream":
            headers["Cache-Control"] = "no-cache"
        squeeze: Any = None
        if coding is not None:
            import zlib

            headers["Content-Encoding"] = coding
            squeeze = _Brotli() if coding == "br" else zlib.compressobj(wbits=31 if coding == "gzip" else -zlib.MAX_WBITS)
        response = web.StreamResponse(status=status, headers=headers)
        await response.prepare(request)
        for i, piece in enumerate(pieces):
            if i:
                await asyncio.sleep(self.gap)
            if squeeze is not None:  # each piece sent as it is made: a compressed stream stays a stream
                import zlib

                piece = squeeze.compress(piece) + squeeze.flush(zlib.Z_SYNC_FLUSH)
            await response.write(piece)
        if squeeze is not None:
            await response.write(squeeze.flush())
        await response.write_eof()
        return response

    def _pieces(self, path: str, body: Any) -> tuple[int, str, list[bytes]]:
        """The answer to a request: its status, its content type and its body's pieces (one for a
        plain answer, an event each for a stream)."""
        if self.status is not None:
            return self.status, "application/json", [json.dumps(self.body).encode()]
        model = (body or {}).get("model") or path.rsplit("/", 1)[-1].split(":")[0]
        words = [w + " " for w in self.reply.split()]
        stream = bool((body or {}).get("stream")) or path.endswith(":streamGenerateContent")
        if not stream:
            answer: Any = None
            if path.endswith("/chat/completions"):
                answer = _chat(model, self.reply)
            elif path.endswith("/responses"):
                answer = _response(model, self.reply)
            elif path.endswith("/messages"):
                answer = _messages(model, self.reply)
            elif path.endswith(":generateContent"):
                answer = _gemini(model, self.reply)
            elif path.endswith("/models"):
                answer = {"object": "list", "data": [{"id": "m", "object": "model"}]}
            if answer is None:
                return 404, "application/json", [json.dumps({"error": "no such path"}).encode()]
            return 200, "application/json", [json.dumps(answer).encode()]
        if path.endswith("/chat/completions"):
            chunks = _chat_stream(model, words)
        elif path.endswith("/responses"):
            chunks = _response_stream(model, words)
        elif path.endswith("/messages"):
            chunks = _messages_stream(model, words)
        else:
            chunks = _sse([(None, _gemini(model, w, final=(i == len(words) - 1))) for i, w in enumerate(words)])
        return 200, "text/event-stream", chunks


class Proxy:
    """A started ``ModelProxyService`` with what it recorded (``events``, ``logs``)."""

    def __init__(self, service: ModelProxyService, events: list[Event], logs: list[str], loop: Loop):
        self.service, self.events, self.logs, self.loop = service, events, logs, loop

    @property
    def url(self) -> str:
        assert self.service.handle is not None
        return self.service.handle.url

    @property
    def env(self) -> dict[str, str]:
        return self.service.env()

    def calls(self) -> list[dict[str, Any]]:
        """The calls recorded, once every answered one is (the runner's settle, before checks)."""
        self.loop.run(self.service.settle())
        return [e.data for e in self.events if e.type == "model.called"]


@contextmanager
def running(env: dict[str, str], *, upstream: Upstream | None = None, replay: Any = None,
            sandbox: Any = None) -> Iterator[tuple[Loop, Upstream, Proxy]]:
    """An upstream and a proxy in front of it. ``env`` is the variant's env (where the proxy finds
    the credentials and upstream URLs: ``{upstream}`` in a value is the upstream's URL)."""
    loop = Loop()
    up = upstream or Upstream()
    loop.run(up.start())
    variant = Variant(harness="command:x", model_proxy=True,
                      env={k: v.replace("{upstream}", up.url) for k, v in env.items()})
    events: list[Event] = []
    logs: list[str] = []
    service = ModelProxyService(replay)
    ctx = ServiceContext(variant=variant, label="case v #0", sandbox=sandbox, log=logs.append, record=events.append)
    loop.run(service.start(ctx))
    try:
        yield loop, up, Proxy(service, events, logs, loop)
    finally:
        loop.run(service.stop())
        loop.run(up.stop())
        loop.close()


def read_sse_timed(url: str, body: dict[str, Any], headers: dict[str, str]) -> list[tuple[float, bytes]]:
    """POST ``body`` over a raw socket (HTTP/1.1, no client library) and return each piece of the
    response body with the moment it arrived, so a test sees whether chunks came apart."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    raw = json.dumps(body).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in {"Host": parts.netloc, "Content-Type": "application/json",
                                                  "Content-Length": str(len(raw)), "Connection": "close",
                                                  **headers}.items())
    sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
    sock.sendall(f"POST {parts.path} HTTP/1.1\r\n{head}\r\n".encode() + raw)
    pieces: list[tuple[float, bytes]] = []
    buffer = b""
    while True:
        data = sock.recv(65536)
        if not data:
            break
        buffer += data
        pieces.append((time.monotonic(), data))
    sock.close()
    return pieces
