"""The model proxy at the edges of HTTP, as real upstreams and SDKs reach them: an upstream that
answers garbage (the error names the URL it called, and Gemini's key is in that URL), long
headers, an answer that is not text, Gemini's JSON-array stream, CRLF-ended events, and an
answer longer than the record keeps."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request
from typing import Any

import pytest
from proxy_support import Loop, Upstream, read_sse_timed, running

from anpord.proxy._record import KEPT, request_key
from anpord.proxy._replay import ReplayCalls

GEMINI_KEY = "gemKeyReal9f8e7d6c5b4aZZtest"
OPENAI_KEY = "sk-edges-0123456789abcdefghij"


def _post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


class _Garbage:
    """A TCP server that answers every connection with bytes that are not HTTP."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.recv(65536)
            conn.sendall(b"NOT HTTP AT ALL\r\n\r\n")
            conn.close()


def test_an_upstream_answering_garbage_never_hands_the_agent_or_the_record_the_key() -> None:
    garbage = _Garbage()
    env = {"GEMINI_BASE_URL": garbage.url, "GEMINI_API_KEY": GEMINI_KEY}
    with running(env) as (_, _up, proxy):
        stand_in = proxy.service.handle.api_key("gemini")  # type: ignore[union-attr]
        status, _, raw = _post(f"{proxy.url}/v1beta/models/gemini-2.5-flash:generateContent?key={stand_in}",
                               {"contents": [{"parts": [{"text": "hi"}]}]})
        [call] = proxy.calls()
        logs = list(proxy.logs)
    garbage.sock.close()
    assert status == 502 and b"upstream_unreachable" in raw, raw
    assert stand_in in raw.decode()  # the agent is told of the URL it asked for, its stand-in in it
    everything = raw.decode() + json.dumps(call) + "\n".join(logs)
    assert GEMINI_KEY not in everything, everything
    assert call["status"] == "failed" and call["error"]


def test_long_headers_pass_both_ways() -> None:
    """HTTP libraries stop at 8 KiB a header line by default; gateways in front of the providers
    take longer ones, so the proxy must not be the one to refuse them."""
    upstream = Upstream()
    upstream.cookie = "big=" + "b" * 9000  # a 9 KB response header
    with running({"OPENAI_BASE_URL": "{upstream}/v1", "OPENAI_API_KEY": OPENAI_KEY}, upstream=upstream) as (_, up, proxy):
        status, headers, _ = _post(proxy.env["OPENAI_BASE_URL"] + "/chat/completions",
                                   {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                                   {"Authorization": f"Bearer {proxy.env['OPENAI_API_KEY']}", "X-Long": "a" * 16000})
        assert len(proxy.calls()) == 1
    assert status == 200 and len(headers["set-cookie"]) > 9000
    assert up.seen[0]["headers"]["x-long"] == "a" * 16000


class _Raw:
    """An upstream whose every answer is ``body`` with ``content_type``, in one piece."""

    def __init__(self, body: bytes, content_type: str) -> None:
        self.body, self.content_type = body, content_type
        self.url = ""
        self.served = 0

    async def start(self) -> None:
        from aiohttp import web

        async def handle(request: web.Request) -> web.Response:
            await request.read()
            self.served += 1
            return web.Response(body=self.body, content_type=self.content_type)

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]

    async def stop(self) -> None:
        await self._runner.cleanup()


def _record_then_replay(raw: _Raw, path: str, body: Any, env_key: str, base: str) -> tuple[bytes, dict[str, Any], bytes, Any]:
    """The agent's answer live, its record, the answer replayed, and the replay's void reason."""
    loop = Loop()
    loop.run(raw.start())
    try:
        env = {base: raw.url, env_key: "real-key-edges-0123456789"}
        with running(env) as (_, _up, proxy):
            _, _, live = _post(proxy.url + path, body)
            [call] = proxy.calls()
        served = raw.served
        with running(env, replay=ReplayCalls("r", ("case", "v", 0), [call])) as (_, _up, proxy):
            _, _, again = _post(proxy.url + path, body)
            reason = proxy.service.void_reason
        assert raw.served == served  # answered from the recording
    finally:
        loop.run(raw.stop())
        loop.close()
    return live, call, again, reason


def test_an_answer_that_is_not_text_replays_byte_for_byte() -> None:
    payload = bytes(range(256)) * 4
    live, call, again, reason = _record_then_replay(_Raw(payload, "application/octet-stream"), "/v1/chat/completions",
                                                    {"model": "m", "messages": []}, "OPENAI_API_KEY", "OPENAI_BASE_URL")
    assert live == payload and again == payload and reason is None
    assert "body_base64" in call["response"]


def test_geminis_json_array_stream_is_counted_and_replayed() -> None:
    """Without ``?alt=sse`` Gemini's stream is one JSON array of chunks; the last holds the usage."""
    chunks = [{"candidates": [{"content": {"parts": [{"text": "Hel"}], "role": "model"}}]},
              {"candidates": [{"content": {"parts": [{"text": "lo"}], "role": "model"}, "finishReason": "STOP"}],
               "usageMetadata": {"promptTokenCount": 60, "candidatesTokenCount": 6, "totalTokenCount": 66}}]
    body = json.dumps(chunks).encode()
    live, call, again, _ = _record_then_replay(_Raw(body, "application/json"),
                                               "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
                                               {"contents": [{"parts": [{"text": "hi"}]}]}, "GEMINI_API_KEY",
                                               "GEMINI_BASE_URL")
    assert live == body == again
    assert (call["input_tokens"], call["output_tokens"]) == (60, 6)


def _chunks(url: str, body: Any) -> list[bytes]:
    """The HTTP/1.1 chunks of an answer, as the client receives them framed."""
    data = b"".join(piece for _, piece in read_sse_timed(url, body, {}))
    _, _, rest = data.partition(b"\r\n\r\n")
    pieces = []
    while rest:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        pieces.append(rest[:size])
        rest = rest[size + 2:]
    return pieces


@pytest.mark.parametrize("end", ["\n\n", "\r\n\r\n"], ids=["lf", "crlf"])
def test_a_recorded_stream_replays_event_by_event_whichever_line_ends_it_used(end: str) -> None:
    events = [f"data: {json.dumps({'n': i})}{end}" for i in range(4)]
    ask = {"contents": [{"parts": [{"text": "hi"}]}]}
    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    call = {"request_key": request_key("POST", path, json.dumps(ask).encode(), {}), "http_status": 200,
            "source": "proxy", "response": {"content_type": "text/event-stream", "body": "".join(events)}}
    with running({"GEMINI_BASE_URL": "{upstream}"}, replay=ReplayCalls("r", ("case", "v", 0), [call])) as (_, _up, proxy):
        pieces = _chunks(proxy.url + path, ask)
    assert [p.decode() for p in pieces] == events


def test_an_answer_longer_than_the_record_keeps_makes_its_replay_void_not_a_cut_answer() -> None:
    ask = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    call = {"request_key": request_key("POST", "/v1/chat/completions", json.dumps(ask).encode(), {}),
            "http_status": 200, "source": "proxy",
            "response": {"content_type": "application/json", "body": "{" + "x" * 100, "truncated": True}}
    with running({"OPENAI_BASE_URL": "{upstream}/v1"}, replay=ReplayCalls("r", ("case", "v", 0), [call])) as (_, _up, proxy):
        status, _, raw = _post(proxy.env["OPENAI_BASE_URL"] + "/chat/completions", ask)
        reason = proxy.service.void_reason
    assert status == 400 and b"not its whole answer" in raw
    assert reason is not None and f"one over {KEPT >> 20} MiB is cut" in reason
