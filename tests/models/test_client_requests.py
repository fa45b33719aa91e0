"""What the chat client sends and how it shares connections, seen from the server's side."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from anpord.models import ChatClient, ModelClients, json_schema_format
from anpord.testing.model_server import hang, rule


def test_the_connection_limit_bounds_concurrent_requests_across_callers(model_server: Any) -> None:
    server = model_server(latency=0.1)

    async def burst(client: ChatClient, n: int) -> None:
        await asyncio.gather(
            *(client.chat([{"role": "user", "content": f"q{i}"}], model="m") for i in range(n))
        )

    async def go() -> None:
        pool = ModelClients()
        # Two trials asking for the same endpoint share one client, hence one limit.
        a = pool.get(server.url, max_connections=3)
        b = pool.get(server.url, max_connections=3)
        assert a is b
        await asyncio.gather(burst(a, 10), burst(b, 10))
        await pool.close()

    asyncio.run(go())
    stats = server.stats()
    assert stats["served"] == 20
    assert stats["peak_in_flight"] == 3
    assert stats["connections"] <= 3  # kept alive and reused

    server.reset_stats()

    async def wide() -> None:
        async with ChatClient(server.url, max_connections=20) as client:
            await burst(client, 20)

    asyncio.run(wide())
    assert server.stats()["peak_in_flight"] == 20  # the limit, not the server, was the bound


def test_waiting_for_a_connection_does_not_count_against_the_request_timeout(
    model_server: Any,
) -> None:
    server = model_server(latency=0.2)

    async def go() -> list[str]:
        async with ChatClient(server.url, max_connections=1, timeout=0.5) as client:
            answers = await asyncio.gather(
                *(client.chat([{"role": "user", "content": str(i)}], model="m") for i in range(4))
            )
            return [a.text for a in answers]

    # Four requests of 0.2s through one connection take 0.8s in all, each within its 0.5s timeout.
    assert asyncio.run(go()) == ["echo: 0", "echo: 1", "echo: 2", "echo: 3"]


def test_every_parameter_given_is_sent_and_none_is_left_out(model_server: Any) -> None:
    server = model_server()
    tools = [
        {
            "type": "function",
            "function": {"name": "f", "parameters": {"type": "object", "properties": {}}},
        }
    ]
    fmt = json_schema_format({"type": "object"}, name="out")

    async def go() -> None:
        async with ChatClient(server.url, api_key="sk-direct-key-123456789") as client:
            await client.chat([{"role": "user", "content": "a"}], model="m1")
            await client.chat(
                [{"role": "user", "content": "b"}],
                model="m2",
                tools=tools,
                tool_choice="required",
                temperature=0.2,
                seed=11,
                max_tokens=64,
                response_format=fmt,
                extra_body={"top_p": 0.5},
            )
            assert "sk-direct" not in repr(client)

    asyncio.run(go())
    bare, full = server.requests
    assert {k for k in bare if not k.startswith("_")} == {"model", "messages"}
    assert bare["_path"] == "/v1/chat/completions"
    assert bare["_headers"] == {"Authorization": "Bearer sk-direct-key-123456789"}
    assert full["tools"] == tools and full["tool_choice"] == "required"
    assert (full["temperature"], full["seed"], full["max_tokens"], full["top_p"]) == (
        0.2,
        11,
        64,
        0.5,
    )
    assert full["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "out", "schema": {"type": "object"}, "strict": True},
    }


def test_the_key_comes_from_the_named_variable_env_first(
    model_server: Any, monkeypatch: Any
) -> None:
    server = model_server()
    monkeypatch.setenv("TEAM_KEY", "sk-from-process")

    async def go() -> None:
        for env in ({}, {"TEAM_KEY": "sk-from-variant"}):
            async with ChatClient(server.url, api_key_env="TEAM_KEY", env=env) as client:
                await client.chat([{"role": "user", "content": "x"}], model="m")

    asyncio.run(go())
    assert [r["_headers"]["Authorization"] for r in server.requests] == [
        "Bearer sk-from-process",
        "Bearer sk-from-variant",
    ]


def test_cancelling_a_call_drops_its_request(model_server: Any) -> None:
    server = model_server([rule("wait", fault=hang())])

    async def go() -> float:
        async with ChatClient(server.url) as client:
            task = asyncio.ensure_future(
                client.chat([{"role": "user", "content": "wait"}], model="m")
            )
            while server.stats()["in_flight"] == 0:  # until the server holds the request
                await asyncio.sleep(0.01)
            started = time.monotonic()
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            return time.monotonic() - started

    assert asyncio.run(go()) < 0.5
    for _ in range(40):
        if server.stats()["in_flight"] == 0:
            break
        time.sleep(0.05)
    assert server.stats()["in_flight"] == 0, "the server still holds the cancelled request"


def test_a_client_left_open_is_closed_when_its_loop_ends(model_server: Any) -> None:
    server = model_server()
    client = ChatClient(server.url)

    async def go() -> Any:
        await client.chat([{"role": "user", "content": "x"}], model="m")
        return next(iter(client._loops.values())).session

    session = asyncio.run(go())
    assert session.closed


def test_a_body_orjson_refuses_is_sent_as_json_writes_it_and_one_neither_can_write_is_a_type_error(
    model_server: Any,
) -> None:
    # logit_bias is keyed by token ids, which Python code writes as ints: orjson refuses them,
    # json writes them as strings, and the server gets what json wrote. A value no encoder can
    # write is json's TypeError, before anything is sent.
    server = model_server()
    huge = 2**70

    async def go() -> None:
        async with ChatClient(server.url, api_key="k") as client:
            await client.chat([{"role": "user", "content": "a"}], model="m",
                              extra_body={"logit_bias": {50256: -100, 11: 5}, "user": "café ✓", "n": huge})
            with pytest.raises(TypeError, match="not JSON serializable"):
                await client.chat([{"role": "user", "content": "b"}], model="m", extra_body={"x": object()})

    asyncio.run(go())
    (sent,) = server.requests
    assert sent["logit_bias"] == {"50256": -100, "11": 5}
    assert sent["user"] == "café ✓" and sent["n"] == huge
