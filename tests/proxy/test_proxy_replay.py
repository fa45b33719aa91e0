"""Replay's matching: a request is answered by the first recorded call of the trial not used yet
whose request matches, so the same request asked twice gets each recorded answer in turn, a
recorded stream goes out as the events it was, and a request past the recording is a 400 that
makes the trial void, naming it — the upstream is never called."""

from __future__ import annotations

import json

import openai
import pytest
from proxy_support import running

from anpord.proxy import _replay
from anpord.proxy._replay import ReplayCalls

ENV = {"OPENAI_BASE_URL": "{upstream}/v1", "OPENAI_API_KEY": "sk-replay-0123456789abcdef"}
ASK = [{"role": "user", "content": "same question"}]


def _client(proxy) -> openai.OpenAI:  # type: ignore[no-untyped-def]
    return openai.OpenAI(base_url=proxy.env["OPENAI_BASE_URL"], api_key=proxy.env["OPENAI_API_KEY"], max_retries=0)


def test_the_same_request_twice_gets_each_recorded_answer_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    with running(ENV) as (_, up, proxy):
        up.gap = 0.01
        client = _client(proxy)
        up.reply = "first answer"
        client.chat.completions.create(model="m", messages=ASK)
        up.reply = "second answer"
        client.chat.completions.create(model="m", messages=ASK)
        streamed = "".join(c.choices[0].delta.content or "" for c in
                           client.chat.completions.create(model="m", messages=ASK, stream=True) if c.choices)
        recorded = proxy.calls()
    assert len(recorded) == 3 and streamed == "second answer "
    key = ("case", "v", 0)
    monkeypatch.setitem(_replay._LOADED, "/recorded/run", {key: recorded})
    replay = ReplayCalls.read("run-1", "/recorded/run", key)
    with running({"OPENAI_BASE_URL": "{upstream}/v1"}, replay=replay) as (_, up, proxy):
        client = _client(proxy)
        answers = [client.chat.completions.create(model="m", messages=ASK).choices[0].message.content
                   for _ in range(2)]
        assert answers == ["first answer", "second answer"]
        stream = client.chat.completions.create(model="m", messages=ASK, stream=True)
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "second answer "
        assert proxy.service.void_reason is None
        with pytest.raises(openai.BadRequestError) as caught:  # a 400: the client does not retry it
            client.chat.completions.create(model="m", messages=ASK)
        assert up.seen == []  # the upstream was never called
        calls = proxy.calls()
    assert "request #4 POST /v1/chat/completions (model m)" in str(caught.value)
    reason = proxy.service.void_reason
    assert reason is not None and reason.startswith("not run: --replay run-1: ")
    assert "of case v #0; it holds 3 calls for this trial, 0 not replayed yet" in reason
    assert [c.get("replayed") for c in calls] == [True, True, True, None]
    assert calls[-1]["status"] == "failed" and calls[-1]["http_status"] == 400


def test_a_request_key_ignores_the_trials_folders_however_spelled() -> None:
    from anpord.proxy._record import request_key

    def key(root: str) -> str:
        mangled = root.replace("/", "-").replace("_", "-")
        body = json.dumps({"model": "m", "metadata": {"user_id": root}, "system": [
            {"type": "text", "text": f"cwd {root}/workspace; memory {root}/home/.claude/projects/{mangled}-workspace/"}]})
        name = root.rsplit("/", 1)[1]
        paths = {f"{root}/workspace": "<workspace>", f"{root}/home": "<home>", name: "<trial>",
                 name.replace("_", "-"): "<trial>"}
        return request_key("POST", "/v1/messages", body.encode(), paths)

    assert key("/dev/shm/anpord-1-2-ab_cd") == key("/dev/shm/anpord-3-4-efgh") != key("/dev/shm/x")


def test_a_request_key_ignores_codexs_per_run_ids_and_the_day() -> None:
    """Codex sends its session's, thread's and turn's ids, an id and a creation time per input
    item, and the date: none of it is what is asked, so a replay (another day, another session)
    matches the recorded request. What the items say, and which tool result answers which call,
    still tell requests apart."""
    from anpord.proxy._record import request_key

    def key(session: str, day: str, text: str = "say hello", call: str = "call_1") -> str:
        body = {"model": "gpt-5", "stream": True, "prompt_cache_key": session,
                "client_metadata": {"session_id": session, "turn_id": session + "-t"},
                "input": [
                    {"type": "message", "id": f"msg_{session}-1", "role": "user",
                     "internal_chat_message_metadata_passthrough": {"create_time": hash(session) % 1000, "turn_id": session},
                     "content": [{"type": "input_text",
                                  "text": f"<environment_context>\n  <current_date>{day}</current_date>\n</environment_context>"}]},
                    {"type": "message", "id": f"msg_{session}-2", "role": "user",
                     "content": [{"type": "input_text", "text": text}]},
                    {"type": "function_call_output", "call_id": call, "output": "ok"}]}
        return request_key("POST", "/v1/responses", json.dumps(body).encode(), {})

    recorded = key("01a23762-7d6b", "2026-12-02")
    assert key("01a23762-bb32", "2027-01-15") == recorded
    assert key("01a23762-bb32", "2027-01-15", text="say goodbye") != recorded
    assert key("01a23762-bb32", "2027-01-15", call="call_2") != recorded
    # A date the prompt itself holds is part of what is asked.
    assert key("s", "2026-12-02", text="book 2026-12-24") != key("s", "2026-12-02", text="book 2026-12-25")


def test_a_request_key_ignores_the_day_claude_code_or_gemini_cli_tells_its_model() -> None:
    from anpord.proxy._record import request_key

    def key(day: str, text: str = "write the notes file") -> str:
        body = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": [
            {"type": "text", "text": f"<system-reminder>\n# currentDate\nToday's date is {day}.\n</system-reminder>"},
            {"type": "text", "text": text}]}]}
        return request_key("POST", "/v1/messages", json.dumps(body).encode(), {})

    assert key("2026-12-02") == key("2027-01-15") != key("2027-01-15", "write the other file")
    # Gemini CLI's spelling, in its locale's words.
    assert key("Wednesday, December 2, 2026 (formatted according to the user's locale)") == \
        key("Friday, January 15, 2027 (formatted according to the user's locale)")



def test_a_request_holding_a_lone_surrogate_is_answered_recorded_and_replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    """JSON may escape half a surrogate pair (``\\ud83d``), as a JavaScript agent cutting a string
    mid-emoji writes it: the call is forwarded, recorded and replayed like any other, not a 500."""
    import urllib.request

    body = b'{"model": "m", "messages": [{"role": "user", "content": "cut mid-emoji \\ud83d"}]}'

    def post(proxy) -> dict:  # type: ignore[no-untyped-def, type-arg]
        req = urllib.request.Request(proxy.env["OPENAI_BASE_URL"] + "/chat/completions", body,
                                     {"Content-Type": "application/json",
                                      "Authorization": f"Bearer {proxy.env['OPENAI_API_KEY']}"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())  # type: ignore[no-any-return]

    with running(ENV) as (_, up, proxy):
        assert post(proxy)["choices"][0]["message"]["content"] == "Hello from upstream"
        (recorded,) = proxy.calls()
    assert up.seen[0]["json"]["messages"][0]["content"] == "cut mid-emoji \ud83d"
    assert recorded["request"]["messages"][0]["content"] == "cut mid-emoji \ud83d"
    key = ("case", "v", 0)
    monkeypatch.setitem(_replay._LOADED, "/recorded/run", {key: [recorded]})
    replay = ReplayCalls.read("run-1", "/recorded/run", key)
    with running({"OPENAI_BASE_URL": "{upstream}/v1"}, replay=replay) as (_, up, proxy):
        assert post(proxy)["choices"][0]["message"]["content"] == "Hello from upstream"
        assert up.seen == [] and proxy.service.void_reason is None
