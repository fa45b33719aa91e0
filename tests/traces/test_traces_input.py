"""Malformed OTLP/HTTP at the wire, sent over real loopback sockets to a trial's receiver: each
request it cannot read gets a 400 saying why and a line in the trial's log, never a dropped
connection or a crashed handler."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from anpord.authoring import Variant
from anpord.events import Event
from anpord.runner._services import ServiceContext
from anpord.traces import TraceService


def _span(**fields: Any) -> dict[str, Any]:
    return {"traceId": "ab" * 16, "spanId": "01" * 8, "name": "s", **fields}


def _export(*spans: dict[str, Any]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}).encode()


def _exchange(port: int, raw: bytes, *, shut: bool = False) -> bytes:
    """Send ``raw`` on a fresh connection and read until the receiver closes it (or 5 s pass)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(raw)
        if shut:
            conn.shutdown(socket.SHUT_WR)
        out = b""
        try:
            while chunk := conn.recv(65536):
                out += chunk
                if b"Connection: close" not in out and out.count(b"\r\n\r\n") and _complete(out):
                    break
        except (socket.timeout, ConnectionResetError):
            pass
        return out


def _complete(reply: bytes) -> bool:
    head, _, body = reply.partition(b"\r\n\r\n")
    length = next((int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                   if line.lower().startswith(b"content-length:")), 0)
    return len(body) >= length


def _post(body: bytes, ctype: str = "application/json") -> bytes:
    return (f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: {ctype}\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode() + body


def _with_receiver(exchange: Callable[[int], Any]) -> tuple[Any, list[Event], list[str]]:
    """Run ``exchange(port)`` (in a thread) against a started receiver; its result, events, log."""
    async def main() -> tuple[Any, list[Event], list[str]]:
        events: list[Event] = []
        logs: list[str] = []
        service = TraceService()
        await service.start(ServiceContext(Variant(traces="otlp"), "case v #0", None, logs.append, events.append))
        try:
            got = await asyncio.to_thread(exchange, service.port)
        finally:
            await service.stop()
        return got, events, logs

    return asyncio.run(main())


@pytest.mark.parametrize("number", ["--5", "²", "+-1", "1_000", " 5", "1" * 5000, str(1 << 64)])
def test_a_malformed_integer_in_otlp_json_gets_400_and_a_log_line(number: str) -> None:
    reply, events, logs = _with_receiver(lambda port: _exchange(port, _post(_export(_span(startTimeUnixNano=number)))))
    assert reply.startswith(b"HTTP/1.1 400 "), reply
    assert b"startTimeUnixNano" in reply
    assert events == []
    assert any(line.startswith("traces: refused an export: startTimeUnixNano") for line in logs), logs


def test_an_integer_attribute_past_a_double_or_64_bits_gets_400() -> None:
    bodies = [_export(_span(attributes=[{"key": "k", "value": {"doubleValue": 10 ** 400}}])),
              _export(_span(attributes=[{"key": "k", "value": {"intValue": str(-(1 << 63) - 1)}}]))]
    replies, events, logs = _with_receiver(lambda port: [_exchange(port, _post(b)) for b in bodies])
    assert [r[:12] for r in replies] == [b"HTTP/1.1 400"] * 2, replies
    assert b"doubleValue" in replies[0] and b"intValue" in replies[1]
    assert events == [] and len([line for line in logs if "refused an export" in line]) == 2


def test_well_formed_integers_still_read() -> None:
    body = _export(_span(startTimeUnixNano="-0", endTimeUnixNano="+1700000000500000000",
                         attributes=[{"key": "k", "value": {"intValue": str((1 << 63) - 1)}}]))
    reply, events, _logs = _with_receiver(lambda port: _exchange(port, _post(body)))
    assert reply.startswith(b"HTTP/1.1 200 "), reply
    assert events[0].data["end"] == 1700000000.5 and events[0].data["attributes"] == {"k": (1 << 63) - 1}


def _chunked(*chunks: bytes) -> bytes:
    return (b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(chunks))


@pytest.mark.parametrize(("body", "said"), [
    (b"-5\r\nhello\r\n0\r\n\r\n", "a malformed chunk size"),
    (b"0x5\r\nhello\r\n0\r\n\r\n", "a malformed chunk size"),
    (b"1" * (70 * 1024) + b"\r\n", "a chunk-size line over 65536 bytes"),
    (b"2\r\n{}XX0\r\n\r\n", "a chunk not ended by CRLF"),
])
def test_a_malformed_chunked_body_gets_400_and_a_log_line(body: bytes, said: str) -> None:
    reply, events, logs = _with_receiver(lambda port: _exchange(port, _chunked(body)))
    assert reply.startswith(b"HTTP/1.1 400 ") and said.encode() in reply, reply
    assert events == []
    assert any(line.startswith("traces: refused an export: " + said) for line in logs), logs


def test_a_well_formed_chunked_body_still_reads() -> None:
    body = _export(_span())
    reply, events, _logs = _with_receiver(lambda port: _exchange(port, _chunked(
        b"%x\r\n" % 10, body[:10], b"\r\n", b"%X;ext=1\r\n" % (len(body) - 10), body[10:], b"\r\n0\r\n\r\n")))
    assert reply.startswith(b"HTTP/1.1 200 "), reply
    assert [e.data["name"] for e in events] == ["s"]


def test_a_body_over_16_mib_from_http_client_gets_the_400_not_a_reset() -> None:
    """The standard library's client writes the whole body before it reads the answer."""
    import http.client

    def post(port: int) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.request("POST", "/v1/traces", body=b"0" * ((16 << 20) + 1), headers={"Content-Type": "application/json"})
        reply = conn.getresponse()
        try:
            return reply.status, reply.read()
        finally:
            conn.close()

    (status, body), events, logs = _with_receiver(post)
    assert status == 400 and b"the request body is over 16777216 bytes" in body
    assert events == [] and any("the request body is over" in line for line in logs), logs


def test_a_refused_body_still_coming_when_the_loop_ends_is_no_error() -> None:
    """The receiver drops a refused body after answering: a run ending meanwhile ends that
    connection quietly (no 'Unhandled exception in client_connected_cb')."""
    errors: list[dict[str, Any]] = []
    head = (b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (20 << 20))
    held: list[socket.socket] = []

    def send(port: int) -> bytes:
        conn = socket.create_connection(("127.0.0.1", port), timeout=5)
        held.append(conn)  # left open, the rest of its body unsent
        conn.sendall(head + b"0" * 1000)
        return conn.recv(65536)

    async def main() -> bytes:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: errors.append(context))
        service = TraceService()
        await service.start(ServiceContext(Variant(traces="otlp"), "case v #0", None, lambda _m: None,
                                           lambda _e: None))
        reply = await asyncio.to_thread(send, service.port)
        await service.stop()
        return reply  # the loop ends at once, the connection's task still dropping the body

    try:
        reply = asyncio.run(main())
    finally:
        for conn in held:
            conn.close()
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert errors == []
