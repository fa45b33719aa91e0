"""Compressed answers and cookies through the model proxy.

The proxy asks its upstream for ``identity``: an HTTP client otherwise asks for gzip of its own
accord, and a compressed answer's record could not be read (no usage, so no cost and no token
limit; a body a replay would send as garbage). An upstream that compresses all the same is
decompressed for the record only: the agent gets the bytes as they came. Cookies are the
agent's: passed on as it sends them and back as they come, never kept between calls."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import aiohttp
import pytest
from proxy_support import Upstream, running

KEY = "sk-test-encoding-1234567890abcdef"
BODY = {"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": "hi"}]}


async def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
    """What an agent's aiohttp client gets: the answer decompressed, as every SDK's client does."""
    async with aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar()) as session:
        async with session.post(url, json=body, headers=headers) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, await resp.read()


def test_the_upstream_is_asked_for_an_uncompressed_answer_and_the_call_is_recorded_whole() -> None:
    upstream = Upstream()
    upstream.compress = "asked"  # gzips whenever the request allows it, as a CDN in front of an API does
    with running({"OPENAI_BASE_URL": "{upstream}/v1", "OPENAI_API_KEY": KEY}, upstream=upstream) as (loop, up, proxy):
        status, headers, raw = loop.run(_post(proxy.env["OPENAI_BASE_URL"] + "/chat/completions", BODY,
                                              {"Authorization": f"Bearer {proxy.env['OPENAI_API_KEY']}",
                                               "Accept-Encoding": "gzip, deflate, br"}))
        (call,) = proxy.calls()
    assert status == 200 and json.loads(raw)["choices"][0]["message"]["content"] == "Hello from upstream"
    assert up.seen[0]["headers"]["accept-encoding"] == "identity"
    assert "content-encoding" not in headers
    assert (call["input_tokens"], call["output_tokens"]) == (11, 3)  # the scripted upstream's usage
    assert json.loads(call["response"]["body"])["usage"]["prompt_tokens"] == 11


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_an_answer_compressed_unasked_reaches_the_agent_as_it_came_and_the_record_reads_it(
        coding: str, stream: bool) -> None:
    upstream = Upstream(gap=0.01)
    upstream.compress = coding  # compresses every answer, asked or not
    with running({"OPENAI_BASE_URL": "{upstream}/v1", "OPENAI_API_KEY": KEY}, upstream=upstream) as (loop, up, proxy):
        status, headers, raw = loop.run(_post(proxy.env["OPENAI_BASE_URL"] + "/chat/completions",
                                              {**BODY, "stream": stream},
                                              {"Authorization": f"Bearer {proxy.env['OPENAI_API_KEY']}"}))
        (call,) = proxy.calls()
    assert status == 200 and headers["content-encoding"] == coding  # the agent's client decompressed it
    text = raw.decode()
    assert ("Hello" in text and "[DONE]" in text) if stream else json.loads(text)["usage"]["completion_tokens"] == 3
    assert (call["input_tokens"], call["output_tokens"]) == ((7, 3) if stream else (11, 3)), call
    assert "Hello" in call["response"]["body"] and "\ufffd" not in call["response"]["body"]
    assert KEY not in json.dumps(call)


def test_a_compressed_recording_replays_the_answer_itself() -> None:
    from anpord.proxy._replay import ReplayCalls

    upstream = Upstream()
    upstream.compress = "gzip"
    env = {"OPENAI_BASE_URL": "{upstream}/v1", "OPENAI_API_KEY": KEY}
    with running(env, upstream=upstream) as (loop, _, proxy):
        loop.run(_post(proxy.env["OPENAI_BASE_URL"] + "/chat/completions", BODY,
                       {"Authorization": f"Bearer {proxy.env['OPENAI_API_KEY']}"}))
        (recorded,) = proxy.calls()
    replay = ReplayCalls("recorded-run", ("case", "v", 0), [recorded])
    with running(env, replay=replay) as (loop, up, proxy):
        req = urllib.request.Request(proxy.env["OPENAI_BASE_URL"] + "/chat/completions", json.dumps(BODY).encode(),
                                     {"Content-Type": "application/json",
                                      "Authorization": f"Bearer {proxy.env['OPENAI_API_KEY']}"})
        with urllib.request.urlopen(req, timeout=30) as resp:  # no decompression of its own
            answer = json.loads(resp.read())
    assert up.seen == []  # answered from the recording
    assert answer["choices"][0]["message"]["content"] == "Hello from upstream"


def test_cookies_are_the_agents_own_and_never_kept_for_another_call() -> None:
    upstream = Upstream()
    upstream.cookie = "__cf_bm=upstream-set; Path=/"  # what a CDN in front of a provider sets
    upstream.host = "localhost"  # a name, not an address: a cookie jar keeps no cookie of an address
    with running({"OPENAI_BASE_URL": "{upstream}/v1", "OPENAI_API_KEY": KEY}, upstream=upstream) as (loop, up, proxy):
        url = proxy.env["OPENAI_BASE_URL"] + "/chat/completions"
        auth = {"Authorization": f"Bearer {proxy.env['OPENAI_API_KEY']}"}
        _, first, _ = loop.run(_post(url, BODY, {**auth, "Cookie": "agent=1"}))
        loop.run(_post(url, BODY, auth))
        assert len(proxy.calls()) == 2
    assert first["set-cookie"].startswith("__cf_bm=upstream-set")  # back to the agent, whose it is
    assert up.seen[0]["headers"]["cookie"] == "agent=1"
    assert "cookie" not in up.seen[1]["headers"]  # the proxy kept nothing of the first call


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br"])
def test_a_small_answer_that_decompresses_to_gigabytes_is_read_only_as_far_as_the_record_keeps(coding: str) -> None:
    import tracemalloc
    import zlib

    import brotli

    from anpord.proxy._record import KEPT, decoded_answer

    zeros = b"0" * (128 << 20)  # 128 MiB from well under 1 MiB: the reading must stop at KEPT
    squeeze = zlib.compressobj(wbits=31 if coding == "gzip" else zlib.MAX_WBITS)
    bomb = brotli.compress(zeros, quality=1) if coding == "br" else squeeze.compress(zeros) + squeeze.flush()
    del zeros
    assert len(bomb) < 1 << 20
    tracemalloc.start()
    try:
        read = decoded_answer(bomb, coding)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(read) == KEPT and set(read) == {ord("0")}
    assert peak < 4 * KEPT, f"reading the answer took {peak >> 20} MiB"
