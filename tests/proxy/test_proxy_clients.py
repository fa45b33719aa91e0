"""The model proxy against real clients: the ``openai`` SDK (chat completions and responses, plain
and streamed), a raw socket reading a stream's chunks as they arrive, and Anthropic- and
Gemini-format requests; each call forwarded with the real key, answered unchanged, recorded."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import openai
from proxy_support import CHUNK_GAP, read_sse_timed, running

KEY = "sk-real-openai-key-0123456789abcdef"
ANTHROPIC = "sk-ant-real-key-0123456789abcdef"
GEMINI = "AIza-real-gemini-key-0123456789"
ENV = {"OPENAI_BASE_URL": "{upstream}/v1", "OPENAI_API_KEY": KEY, "ANTHROPIC_BASE_URL": "{upstream}",
       "ANTHROPIC_API_KEY": ANTHROPIC, "GEMINI_BASE_URL": "{upstream}", "GEMINI_API_KEY": GEMINI}


def _client(proxy) -> openai.OpenAI:  # type: ignore[no-untyped-def]
    env = proxy.env
    return openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"], max_retries=0, timeout=20)


def test_the_agent_holds_a_stand_in_and_the_upstream_gets_the_real_key() -> None:
    with running(ENV) as (_, up, proxy):
        env = proxy.env
        assert env["OPENAI_BASE_URL"] == f"{proxy.url}/v1" and env["ANTHROPIC_BASE_URL"] == proxy.url
        for name, real in (("OPENAI_API_KEY", KEY), ("ANTHROPIC_API_KEY", ANTHROPIC), ("GEMINI_API_KEY", GEMINI)):
            assert env[name].startswith("anpord-proxy-") and real not in env[name]
        done = _client(proxy).chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": "hi"}])
        assert done.choices[0].message.content == "Hello from upstream"
        [seen] = up.seen
        assert seen["path"] == "/v1/chat/completions"
        assert seen["headers"]["authorization"] == f"Bearer {KEY}"
        assert seen["json"]["messages"] == [{"role": "user", "content": "hi"}]
        [call] = proxy.calls()
        assert (call["provider"], call["operation"], call["model"], call["status"], call["http_status"]) == \
            ("openai", "chat", "gpt-4.1-mini", "completed", 200)
        assert (call["input_tokens"], call["output_tokens"], call["cached_input_tokens"]) == (11, 3, 4)
        assert call["source"] == "proxy" and call["latency"] > 0
        assert call["request"]["messages"][0]["content"] == "hi"
        assert json.loads(call["response"]["body"])["usage"]["prompt_tokens"] == 11
        assert call["cost"] is not None and call["cost"] > 0  # gpt-4.1-mini is in the price table


def test_chat_streamed_through_the_sdk_arrives_whole_and_is_recorded() -> None:
    with running(ENV) as (_, up, proxy):
        up.gap = 0.01
        stream = _client(proxy).chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": "hi"}], stream=True,
            stream_options={"include_usage": True})
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
        assert text == "Hello from upstream "
        [call] = proxy.calls()
        assert call["stream"] is True and call["response"]["content_type"].startswith("text/event-stream")
        assert (call["input_tokens"], call["output_tokens"]) == (7, 3)
        assert up.seen[0]["json"]["stream_options"] == {"include_usage": True}  # the request as sent


def test_responses_plain_and_streamed_through_the_sdk() -> None:
    with running(ENV) as (_, up, proxy):
        up.gap = 0.01
        client = _client(proxy)
        done = client.responses.create(model="gpt-4.1-mini", input="hi")
        assert done.output_text == "Hello from upstream"
        events = list(client.responses.create(model="gpt-4.1-mini", input="hi", stream=True))
        deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
        assert deltas == "Hello from upstream "
        assert events[-1].type == "response.completed"
        plain, streamed = proxy.calls()
        assert plain["operation"] == streamed["operation"] == "responses"
        assert (plain["input_tokens"], plain["output_tokens"], plain["reasoning_output_tokens"]) == (20, 5, 2)
        assert streamed["stream"] and (streamed["input_tokens"], streamed["output_tokens"]) == (20, 5)
        assert [s["path"] for s in up.seen] == ["/v1/responses", "/v1/responses"]


def test_a_stream_reaches_the_client_chunk_by_chunk_not_buffered() -> None:
    with running(ENV) as (_, _up, proxy):
        pieces = read_sse_timed(f"{proxy.url}/v1/chat/completions",
                                {"model": "gpt-4.1-mini", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
                                {"Authorization": f"Bearer {proxy.env['OPENAI_API_KEY']}"})
        # The upstream sends 6 events CHUNK_GAP apart: they must arrive spread over that time, not
        # in one piece at the end. Count the distinct moments events arrived.
        body = b"".join(p for _, p in pieces)
        assert body.count(b"data: ") == 6, body
        moments = [t for t, p in pieces if b"data: " in p]
        assert len(moments) >= 4, f"the stream came in {len(moments)} pieces: buffered"
        assert moments[-1] - moments[0] >= 3 * CHUNK_GAP * 0.8
        # And the events are the upstream's, byte for byte.
        head, _, events = body.partition(b"\r\n\r\n")
        assert b"text/event-stream" in head.lower()
        assert b'"content": "Hello "' in events and events.rstrip().endswith(b"[DONE]") or b"[DONE]" in events


def _post(url: str, body: dict, headers: dict[str, str]) -> tuple[int, bytes]:  # type: ignore[type-arg]
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_anthropic_messages_plain_and_streamed() -> None:
    with running(ENV) as (_, up, proxy):
        up.gap = 0.01
        headers = {"x-api-key": proxy.env["ANTHROPIC_API_KEY"], "anthropic-version": "2023-06-01"}
        body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
        status, raw = _post(f"{proxy.url}/v1/messages", body, headers)
        assert status == 200 and json.loads(raw)["content"][0]["text"] == "Hello from upstream"
        status, raw = _post(f"{proxy.url}/v1/messages", {**body, "stream": True}, headers)
        assert status == 200 and b"event: message_stop" in raw
        assert all(s["headers"]["x-api-key"] == ANTHROPIC for s in up.seen)
        plain, streamed = proxy.calls()
        assert plain["provider"] == "anthropic" and plain["model"] == "claude-sonnet-4-5"
        # Every prompt token: 9 read fresh + 100 from the cache.
        assert (plain["input_tokens"], plain["output_tokens"], plain["cached_input_tokens"]) == (109, 4, 100)
        assert (streamed["input_tokens"], streamed["output_tokens"], streamed["stream"]) == (9, 3, True)


def test_gemini_generate_content_plain_and_streamed_with_the_key_in_the_query() -> None:
    with running(ENV) as (_, up, proxy):
        up.gap = 0.01
        stand_in = proxy.env["GEMINI_API_KEY"]
        body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
        status, raw = _post(f"{proxy.url}/v1beta/models/gemini-2.5-flash:generateContent", body,
                            {"x-goog-api-key": stand_in})
        assert status == 200 and json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"] == "Hello from upstream"
        status, raw = _post(f"{proxy.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key={stand_in}",
                            body, {})
        assert status == 200 and raw.count(b"data: ") == 3
        first, second = up.seen
        assert first["headers"]["x-goog-api-key"] == GEMINI
        assert second["query"] == {"alt": "sse", "key": GEMINI}
        plain, streamed = proxy.calls()
        assert (plain["provider"], plain["model"], plain["input_tokens"], plain["output_tokens"]) == \
            ("gemini", "gemini-2.5-flash", 6, 2)
        assert streamed["stream"] and streamed["operation"] == "generate_content"
