"""The scripted model server itself: rules by the last user message and the step within the turn,
and the same server run as a separate program."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import urllib.request
from typing import Any

import pytest
from project_support import run_env

from anpord.models import ChatClient, ProviderError, RetryPolicy
from anpord.testing.model_server import json_reply, refusal, rule, text, tool_call, tool_calls


def chat(url: str, messages: list[dict[str, Any]]) -> Any:
    async def go() -> Any:
        async with ChatClient(url) as client:
            return await client.chat(messages, model="m")

    return asyncio.run(go())


def test_replies_follow_the_rule_and_the_step_of_the_turn(model_server: Any) -> None:
    server = model_server(
        [
            rule(
                "re:^plan (\\w+)$", tool_calls(("a", {"n": 1}), ("b", {})), text("planned {input}")
            ),
            rule("data", json_reply({"ok": True})),
            rule("loop", tool_call("again")),
        ]
    )
    first = chat(server.url, [{"role": "user", "content": "plan trip"}])
    assert [c.name for c in first.tool_calls] == ["a", "b"] and first.finish_reason == "tool_calls"
    assert json.loads(first.tool_calls[0].arguments) == {"n": 1}
    history = [
        {"role": "user", "content": "plan trip"},
        first.choice.to_message(),
        {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "1"},
    ]
    assert chat(server.url, history).text == "planned plan trip"
    assert (
        chat(server.url, [{"role": "user", "content": "plan a trip"}]).text == "echo: plan a trip"
    )
    assert chat(server.url, [{"role": "user", "content": "data"}]).json() == {"ok": True}
    looped = [{"role": "user", "content": "loop"}] + [{"role": "assistant", "content": "x"}] * 5
    assert chat(server.url, looped).tool_calls[0].name == "again"  # the last reply repeats


def test_the_server_runs_as_a_program_and_reports_what_it_received(tmp_path: Any) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([rule("hi", text("hello from a file"))]))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "anpord.testing.model_server",
            "--latency",
            "0.01",
            "--rules",
            str(rules),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=run_env(),
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        assert chat(url, [{"role": "user", "content": "hi"}]).text == "hello from a file"
        received = json.load(urllib.request.urlopen(url.replace("/v1", "/_anpord/requests")))
        assert [r["messages"] for r in received] == [[{"role": "user", "content": "hi"}]]
        stats = json.load(urllib.request.urlopen(url.replace("/v1", "/_anpord/stats")))
        assert stats["served"] == 1
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # closing its stdin pipe ends it
        assert proc.wait(timeout=60) == 0


def test_bad_rules_are_one_line_and_exit_2(tmp_path: Any) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "anpord.testing.model_server",
            "--rules",
            '[{"match": "x", "fault": {"kind": "boom"}}]',
        ],
        capture_output=True,
        text=True,
        env=run_env(),
        timeout=30,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "model_server: unknown fault 'boom'; faults: rate_limit, server_error, malformed, no_choices, reset, hang"
    )


def test_a_server_without_a_field_answers_400_naming_it_and_requests_carry_their_timing(
    model_server: Any,
) -> None:
    server = model_server([rule("decline", refusal("not this one"))], latency=0.05, unsupported=("tools",))

    async def go() -> Any:
        async with ChatClient(server.url, retry=RetryPolicy(max_attempts=1)) as client:
            with pytest.raises(ProviderError) as refused:
                await client.chat([{"role": "user", "content": "hi"}], model="m",
                                  tools=[{"type": "function", "function": {"name": "f", "parameters": {}}}])
            declined = await client.chat([{"role": "user", "content": "decline"}], model="m")
            return refused.value, declined

    refused, declined = asyncio.run(go())
    assert refused.status == 400 and "'tools' is not supported by this server" in str(refused)
    assert (declined.choice.refusal, declined.choice.content) == ("not this one", None)
    first, second = server.requests
    assert second["_answered"] - second["_received"] >= 0.05  # answered after the latency
    assert first["_received"] <= first["_answered"] <= second["_received"]


def test_a_taken_port_is_one_line_and_exit_2(model_server: Any) -> None:
    taken = model_server([])
    proc = subprocess.run(
        [sys.executable, "-m", "anpord.testing.model_server", "--port", str(taken.port)],
        capture_output=True, text=True, env=run_env(), timeout=30, stdin=subprocess.DEVNULL,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        f"model_server: cannot listen on 127.0.0.1:{taken.port}: Address already in use"
    )


def test_rules_can_answer_one_caller_only(model_server: Any) -> None:
    from anpord.judges import SYSTEM_PROMPT
    from anpord.users._persona import persona_instructions

    server = model_server([
        rule("weather", text("agent rule"), caller="agent"),
        rule("weather", text("judge rule"), caller="judge"),
        rule("weather", text("user rule"), caller="user"),
    ])
    judge = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "weather?"}]
    user = [{"role": "system", "content": persona_instructions("g", "b", "hi")},
            {"role": "user", "content": "weather?"}]
    assert chat(server.url, [{"role": "user", "content": "weather?"}]).text == "agent rule"
    assert chat(server.url, judge).text == "judge rule"
    assert chat(server.url, user).text == "user rule"
    assert [r["_caller"] for r in server.requests] == ["agent", "judge", "user"]


def test_an_unknown_caller_is_refused() -> None:
    from anpord.testing.model_server import ModelServer

    with pytest.raises(ValueError, match="unknown caller 'judges'; callers: agent, judge, user"):
        ModelServer([rule("x", text("y"), caller="judges")])
