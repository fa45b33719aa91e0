"""The proxy's faults: an unknown path is a 404 naming what is served; the upstream's errors reach
the agent as the upstream gave them; an upstream that is down is a 502 saying so; a slow one is
waited for as long as the agent's own client waits, and no longer; and no record holds a key."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

import openai
import pytest
from proxy_support import Upstream, running
from secret_spellings import Secret, find_leaks

KEY = "sk-proxyleak-0123456789abcdefXYZW"


def _post(url: str, body: object, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_an_unknown_path_is_a_404_naming_what_is_served() -> None:
    with running({"OPENAI_BASE_URL": "{upstream}/v1"}) as (_, up, proxy):
        status, raw = _post(f"{proxy.url}/v1/embeddings", {"input": "x"})
        assert status == 404
        message = json.loads(raw)["error"]["message"]
        assert "nothing is served at POST /v1/embeddings" in message
        assert "/v1/chat/completions" in message and "/v1/messages" in message and "generateContent" in message
        # Every path served is named (each one is answered, not 404'd).
        for served in ("/v1/messages/count_tokens", ":countTokens", "/v1alpha/", "GET /v1/models"):
            assert served in message, served
        assert up.seen == [] and proxy.calls() == []


def test_the_upstreams_error_reaches_the_agent_unchanged() -> None:
    with running({"OPENAI_BASE_URL": "{upstream}/v1", "OPENAI_API_KEY": KEY}) as (_, up, proxy):
        up.status, up.body = 429, {"error": {"message": "Rate limit reached", "type": "rate_limit"}}
        client = openai.OpenAI(base_url=proxy.env["OPENAI_BASE_URL"], api_key=proxy.env["OPENAI_API_KEY"], max_retries=0)
        with pytest.raises(openai.RateLimitError) as caught:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert caught.value.status_code == 429 and "Rate limit reached" in str(caught.value)
        [call] = proxy.calls()
        assert (call["status"], call["http_status"]) == ("failed", 429) and "Rate limit reached" in call["error"]


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_an_upstream_that_is_down_is_a_502_with_its_error() -> None:
    down = f"http://127.0.0.1:{_free_port()}/v1"
    with running({"OPENAI_BASE_URL": down, "OPENAI_API_KEY": KEY}) as (_, _up, proxy):
        client = openai.OpenAI(base_url=proxy.env["OPENAI_BASE_URL"], api_key=proxy.env["OPENAI_API_KEY"], max_retries=0)
        with pytest.raises(openai.APIStatusError) as caught:
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert caught.value.status_code == 502
        text = str(caught.value)
        assert "unreachable" in text and down.removesuffix("/v1") in text and "onnect" in text
        [call] = proxy.calls()
        assert call["http_status"] == 502 and call["status"] == "failed"


def test_a_slow_upstream_times_out_where_the_agents_client_does() -> None:
    with running({"OPENAI_BASE_URL": "{upstream}/v1"}) as (_, up, proxy):
        up.delay = 5.0
        client = openai.OpenAI(base_url=proxy.env["OPENAI_BASE_URL"], api_key="x", max_retries=0, timeout=0.5)
        started = time.monotonic()
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert time.monotonic() - started < 4  # the client's timeout, not the upstream's pace
        # The proxy gave up on the upstream call with the agent: recorded as abandoned.
        deadline = time.monotonic() + 5
        while not proxy.calls() and time.monotonic() < deadline:
            time.sleep(0.05)
        [call] = proxy.calls()
        assert call["status"] == "failed" and "closed the connection" in call["error"]
        # A slow upstream within the client's patience is waited for.
        up.delay = 1.0
        patient = openai.OpenAI(base_url=proxy.env["OPENAI_BASE_URL"], api_key="x", max_retries=0, timeout=10)
        done = patient.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert done.choices[0].message.content == "Hello from upstream"


def test_no_record_or_log_holds_the_real_key_in_any_spelling() -> None:
    secret = Secret("OPENAI_API_KEY", KEY, "proxyleak")
    upstream = Upstream(reply=f"echo of nothing")
    with running({"OPENAI_BASE_URL": "{upstream}/v1", "OPENAI_API_KEY": KEY}, upstream=upstream) as (_, up, proxy):
        env = proxy.env
        assert KEY not in json.dumps(env)
        # The agent somehow got the key into its prompt and the upstream repeats it: redacted.
        up.reply = f"your key is {KEY}"
        client = openai.OpenAI(base_url=env["OPENAI_BASE_URL"], api_key=env["OPENAI_API_KEY"], max_retries=0)
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": f"use {KEY} please"}])
        list(client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True))
        assert up.seen[0]["headers"]["authorization"] == f"Bearer {KEY}"
        texts = {f"call {i}": json.dumps(c) for i, c in enumerate(proxy.calls())}
        texts["logs"] = "\n".join(proxy.logs)
        assert len(texts) == 3
        assert find_leaks(texts, [secret]) == []
        assert "[REDACTED]" in texts["call 0"]


def test_model_proxy_takes_true_false_or_none(make_project) -> None:  # type: ignore[no-untyped-def]
    from anpord import Variant

    assert Variant(harness="claude").model_proxy is None
    assert Variant(harness="claude", model_proxy=False).snapshot()["model_proxy"] is False
    with pytest.raises(TypeError, match="model_proxy= must be True, False or None, got 'yes'"):
        Variant(harness="claude", model_proxy="yes")  # type: ignore[arg-type]
    project = make_project({"evals/x.eval.py": "from anpord import define_eval\ncase = define_eval(prompt='hi')\n"},
                           config="from anpord import Variant, define_eval_config\n"
                                  "config = define_eval_config(variants=[Variant(harness='claude', model_proxy='yes')])\n")
    run = project.run(timeout=60)
    assert run.code == 2 and "model_proxy= must be True, False or None" in run.stderr, run.output
    assert "Traceback" not in run.stderr


def _read_raw(url: str, body: dict[str, object]) -> tuple[int | None, str]:
    """What a client sees of an answer, cut or not: its status, and how it ended."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=20)
    conn.request("POST", parts.path, json.dumps(body), {"Content-Type": "application/json",
                                                      "Authorization": "Bearer x"})
    try:
        resp = conn.getresponse()
    except http.client.HTTPException as exc:
        return None, type(exc).__name__
    try:
        resp.read()
        return resp.status, "complete"
    except http.client.IncompleteRead as exc:
        return resp.status, f"IncompleteRead({len(exc.partial)} bytes read)"


def test_an_answer_cut_off_part_way_reaches_the_agent_cut_off_as_it_would_without_the_proxy() -> None:
    from anpord.testing.model_server import ModelServer, reset, rule, text

    ask = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with ModelServer([rule(None, text("x"), fault=reset(times=None))]) as server:
        direct = _read_raw(server.url + "/chat/completions", ask)
        with running({"OPENAI_BASE_URL": server.url}) as (_, _up, proxy):
            proxied = _read_raw(proxy.env["OPENAI_BASE_URL"] + "/chat/completions", ask)
            [call] = proxy.calls()
    assert direct[0] == 200 and direct[1].startswith("IncompleteRead("), direct
    assert proxied == direct  # the head, the same bytes, then the cut
    assert call["status"] == "failed" and call["http_status"] == 200


def test_a_replay_answers_the_proxys_own_refusal_as_the_agent_first_got_it() -> None:
    from anpord.proxy._replay import ReplayCalls

    down = f"http://127.0.0.1:{_free_port()}/v1"
    ask = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with running({"OPENAI_BASE_URL": down}) as (_, _up, proxy):
        first = _post(proxy.env["OPENAI_BASE_URL"] + "/chat/completions", ask)
        [call] = proxy.calls()
    assert first[0] == 502 and json.loads(first[1])["error"]["type"] == "upstream_unreachable"
    with running({"OPENAI_BASE_URL": down}, replay=ReplayCalls("r", ("case", "v", 0), [call])) as (_, _up, proxy):
        again = _post(proxy.env["OPENAI_BASE_URL"] + "/chat/completions", ask)
    assert again == first


def test_a_replay_gives_no_answer_for_a_call_the_agent_gave_up_on() -> None:
    """Recorded with the agent's timeout shorter than the upstream: the record holds no answer,
    so the replayed request makes the trial void, saying why — not a 499 the upstream never sent."""
    from anpord.proxy._replay import ReplayCalls

    ask = [{"role": "user", "content": "hi"}]
    with running({"OPENAI_BASE_URL": "{upstream}/v1"}) as (_, up, proxy):
        up.delay = 3.0
        client = openai.OpenAI(base_url=proxy.env["OPENAI_BASE_URL"], api_key="x", max_retries=0, timeout=0.5)
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="m", messages=ask)
        deadline = time.monotonic() + 5
        while not proxy.calls() and time.monotonic() < deadline:
            time.sleep(0.05)
        [abandoned] = proxy.calls()
    assert abandoned["http_status"] == 499
    with running({"OPENAI_BASE_URL": "{upstream}/v1"},
                 replay=ReplayCalls("r", ("case", "v", 0), [abandoned])) as (_, up, proxy):
        client = openai.OpenAI(base_url=proxy.env["OPENAI_BASE_URL"], api_key="x", max_retries=0, timeout=10)
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="m", messages=ask)
        assert up.seen == []
        deadline = time.monotonic() + 5  # the proxy's word reaches the run on its own channel
        while proxy.service.void_reason is None and time.monotonic() < deadline:
            time.sleep(0.05)
        reason = proxy.service.void_reason
    assert reason is not None and "gave up on before its answer came" in reason, reason
