"""A minimal HTTP/1.1 server for OTLP/HTTP exports: ``POST /v1/traces`` only.

Small on purpose: a trial starts one, so its set-up must cost well under a millisecond, and it
must bound what an exporter can make it hold (headers, body, decompressed body).
"""

from __future__ import annotations

import asyncio
import re
import zlib
from collections.abc import Awaitable, Callable

__all__ = ["Request", "Reply", "serve_connection", "MAX_BODY", "TRACES_PATH"]

TRACES_PATH = "/v1/traces"
MAX_HEADERS = 64 * 1024
# One export request, after decompression. The SDKs send at most 512 spans per request; 16 MiB is
# far past what that comes to with the attribute limits they apply.
MAX_BODY = 16 << 20
IDLE_TIMEOUT = 60.0
# A refused request's body still on its way is read and dropped, up to this many bytes and while
# it keeps coming, before the connection closes: a client that writes its whole body before it
# reads (http.client, most SDKs) then gets the 400, where closing on unread data resets the
# connection and loses the answer.
MAX_DISCARD = 64 << 20
DISCARD_IDLE = 1.0  # seconds without a byte after which a refused body is taken as ended


class Request:
    __slots__ = ("method", "path", "headers", "body", "query")

    def __init__(self, method: str, path: str, headers: dict[str, str], body: bytes, query: str = ""):
        self.method, self.path, self.headers, self.body = method, path, headers, body
        self.query = query  # what follows "?" in the target, undecoded


class Reply:
    __slots__ = ("status", "content_type", "body", "headers")

    def __init__(self, status: int, body: bytes = b"", content_type: str = "text/plain; charset=utf-8",
                 headers: dict[str, str] | None = None):
        self.status, self.body, self.content_type = status, body, content_type
        self.headers = headers  # more response headers (an HTTP mock's)


_REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
            403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 409: "Conflict",
            429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable"}


class _Refused(Exception):
    """A request this server will not read to its end: answered, then what is left of its body
    (``unread`` bytes at most) is dropped and the connection closes."""

    def __init__(self, reply: Reply, unread: int = MAX_DISCARD):
        self.reply, self.unread = reply, unread


def _bad(message: str, unread: int = MAX_DISCARD) -> _Refused:
    return _Refused(Reply(400, message.encode()), unread)


_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")  # HTTP's chunk-size: hex digits, no sign


async def _line(reader: asyncio.StreamReader, what: str) -> bytes:
    """One CRLF-ended line of a chunked body; one past the reader's limit is refused."""
    try:
        return await reader.readuntil(b"\r\n")
    except asyncio.LimitOverrunError:
        raise _bad(f"a {what} line over {MAX_HEADERS} bytes") from None


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts: list[bytes] = []
    size = 0
    while True:
        line = await _line(reader, "chunk-size")
        digits = line.split(b";", 1)[0].strip()
        if not _CHUNK_SIZE.fullmatch(digits):
            raise _bad(f"a malformed chunk size {digits[:40]!r}")
        n = int(digits, 16)
        if n == 0:
            while (await _line(reader, "trailer")) != b"\r\n":
                pass  # trailers
            return b"".join(parts)
        size += n
        if size > MAX_BODY:
            raise _bad(f"the request body is over {MAX_BODY} bytes")
        parts.append(await reader.readexactly(n))
        if await reader.readexactly(2) != b"\r\n":
            raise _bad("a chunk not ended by CRLF")


def _inflate(body: bytes, encoding: str) -> bytes:
    if encoding in ("", "identity"):
        return body
    if encoding not in ("gzip", "deflate"):
        raise _bad(f"unsupported Content-Encoding {encoding!r} (gzip, deflate or none)")
    # Bounded: a small compressed body may expand to gigabytes.
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header, told apart
    try:
        out = inflater.decompress(body, MAX_BODY + 1)
    except zlib.error as exc:
        raise _bad(f"the {encoding} body does not decompress: {exc}") from None
    if len(out) > MAX_BODY or inflater.unconsumed_tail:
        raise _bad(f"the request body is over {MAX_BODY} bytes once decompressed")
    return out


async def _read_request(reader: asyncio.StreamReader) -> Request | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None  # the peer closed between requests
    except asyncio.LimitOverrunError:
        raise _bad(f"request headers over {MAX_HEADERS} bytes") from None
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _bad("not an HTTP/1.1 request")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = await _read_chunked(reader)
    else:
        try:
            length = int(headers.get("content-length", "0"))
        except ValueError:
            raise _bad("a malformed Content-Length") from None
        if length < 0:
            raise _bad("a malformed Content-Length")
        if length > MAX_BODY:
            raise _bad(f"the request body is over {MAX_BODY} bytes", unread=min(length, MAX_DISCARD))
        body = await reader.readexactly(length) if length else b""
    body = _inflate(body, headers.get("content-encoding", "").lower())
    target, _, query = parts[1].partition("?")
    return Request(parts[0], target, headers, body, query)


async def _discard(reader: asyncio.StreamReader, limit: int) -> None:
    """Read and drop up to ``limit`` bytes, until the peer closes or pauses ``DISCARD_IDLE``."""
    left = limit
    try:
        while left > 0:
            async with asyncio.timeout(DISCARD_IDLE):
                chunk = await reader.read(min(left, 1 << 16))
            if not chunk:
                return
            left -= len(chunk)
    except (asyncio.TimeoutError, ConnectionError):
        return
    except asyncio.CancelledError:
        # The loop is ending with the body still coming. The request is answered: this ends as
        # a closed peer would (a cancelled connection task makes Python 3.11's asyncio log one).
        return


def _encode(reply: Reply, close: bool) -> bytes:
    head = (f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Error')}\r\n"
            f"Content-Type: {reply.content_type}\r\nContent-Length: {len(reply.body)}\r\n")
    if reply.headers:
        for name, value in reply.headers.items():
            if name.lower() not in ("content-length", "content-type", "connection", "transfer-encoding"):
                head += f"{name}: {value}\r\n"
    if close:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + reply.body


async def serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                           handle: Callable[[Request], Awaitable[Reply]],
                           refused: Callable[[Reply], object]) -> None:
    """Answer requests on one connection until the peer closes it (HTTP/1.1 keep-alive)."""
    try:
        while True:
            try:
                # A timeout scope, not wait_for: wait_for wraps the read in a task of its own,
                # and every export and mock call would pay for one.
                async with asyncio.timeout(IDLE_TIMEOUT):
                    request = await _read_request(reader)
            except _Refused as exc:
                refused(exc.reply)
                writer.write(_encode(exc.reply, close=True))
                await writer.drain()
                await _discard(reader, exc.unread)
                return
            if request is None:
                return
            reply = await handle(request)
            close = request.headers.get("connection", "").lower() == "close"
            writer.write(_encode(reply, close))
            await writer.drain()
            if close:
                return
    except (asyncio.IncompleteReadError, asyncio.TimeoutError, ConnectionError, asyncio.LimitOverrunError):
        return
    finally:
        writer.close()

