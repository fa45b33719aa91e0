"""The ``openai:`` harness end to end: real ``anpord eval`` runs against a real scripted model
server, checking what the agent did (tools, replies, usage) and what the server was sent."""

from __future__ import annotations

from typing import Any

from openai_support import TOOLS, config
from project_support import END, assert_passed, eval_file

from anpord.testing.model_server import rule, text, tool_call


def test_a_tool_call_round_trip_is_recorded_and_answered(
    make_project: Any, model_server: Any
) -> None:
    server = model_server(
        [
            rule(
                "weather",
                tool_call("get_weather", {"city": "Brooklyn", "unit": "fahrenheit"}),
                text(
                    "It is Sunny in Brooklyn.",
                    usage={"prompt_tokens": 1000, "completion_tokens": 500},
                ),
            ),
        ]
    )
    project = make_project(
        {
            "agents/model_tools.py": TOOLS,
            "evals/weather.eval.py": eval_file(f"""
                @define_eval
                async def test(t):
                    turn = await t.send("What is the weather in Brooklyn?")
                    t.succeeded()
                    t.called_tool("get_weather", input={{"city": "Brooklyn", "unit": "fahrenheit"}},
                                  output={{"conditions": "Sunny", "unit": "fahrenheit"}}, status="completed")
                    t.check(t.reply, includes("Sunny in Brooklyn"))
                    t.event("usage", data={{"step": 2, "input_tokens": 1000, "output_tokens": 500}})
                    t.event("message.completed", data={{"role": "assistant", "text": "It is Sunny in Brooklyn."}})
                    t.event_order(["tool.called", "tool.result", "message.completed"])
                    {END}
            """),
        },
        config=config(
            server.url, {"system": "You are terse.", "pricing": {"input": 2.0, "output": 10.0}}
        ),
    )
    run = project.run()
    line = assert_passed(run, "weather")
    # Two model calls; the second is priced 1000 * $2/M + 500 * $10/M.
    assert line["usage"]["output_tokens"] >= 500
    assert (
        abs(
            line["usage"]["cost"]
            - sum(e["cost"] for e in run.events("weather") if e["type"] == "usage")
        )
        < 1e-12
    )
    assert any(
        abs(e["cost"] - 0.007) < 1e-12 for e in run.events("weather") if e["type"] == "usage"
    )

    first, second = server.requests
    assert first["model"] == "scripted-model"
    assert first["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "What is the weather in Brooklyn?"},
    ]
    schema = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert schema["get_weather"]["description"] == "Get the current weather for a city."
    assert schema["get_weather"]["parameters"]["properties"]["unit"]["enum"] == [
        "celsius",
        "fahrenheit",
    ]
    assert schema["get_weather"]["parameters"]["required"] == ["city"]
    assert sorted(schema) == ["explode", "get_weather", "lookup"]
    # The tool's result went back to the model, tied to its call id.
    call_id = second["messages"][2]["tool_calls"][0]["id"]
    assert (
        second["messages"][3]["role"] == "tool" and second["messages"][3]["tool_call_id"] == call_id
    )
    assert '"conditions": "Sunny"' in second["messages"][3]["content"]


def test_multi_turn_sessions_keep_their_history_and_new_sessions_start_fresh(
    make_project: Any, model_server: Any
) -> None:
    server = model_server(
        [rule("lookup", tool_call("lookup", {"query": "bikes", "limit": 1}), text("Found bikes."))]
    )
    project = make_project(
        {
            "agents/model_tools.py": TOOLS,
            "evals/chat.eval.py": eval_file(f"""
                @define_eval
                async def test(t):
                    await t.send("hello there")
                    t.check(t.reply, equals("echo: hello there"))
                    await t.send("please lookup bikes")
                    t.check(t.reply, equals("Found bikes."))
                    await t.send("and again")
                    other = t.new_session()
                    await other.send("fresh start")
                    t.succeeded()
                    {END}
            """),
        },
        config=config(server.url),
    )
    run = project.run()
    assert_passed(run, "chat")
    bodies = [r["messages"] for r in server.requests]
    assert len(bodies) == 5
    third_turn = bodies[3]
    # Every earlier exchange is there, tool call and tool result included.
    assert [m["role"] for m in third_turn] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert third_turn[0]["content"] == "hello there" and third_turn[-1]["content"] == "and again"
    assert bodies[4] == [{"role": "user", "content": "fresh start"}]


def test_bad_tool_calls_go_back_to_the_model_as_tool_errors(
    make_project: Any, model_server: Any
) -> None:
    server = model_server(
        [
            rule("unknown", tool_call("no_such_tool", {"x": 1}), text("recovered from unknown")),
            rule(
                "badjson",
                tool_call("get_weather", '{"city": "Bro'),
                text("recovered from bad json"),
            ),
            rule(
                "mismatch", tool_call("get_weather", {"town": 7}), text("recovered from mismatch")
            ),
            rule(
                "badenum",
                tool_call("get_weather", {"city": "Oslo", "unit": "kelvin"}),
                text("recovered from enum"),
            ),
            rule(
                "raises",
                tool_call("explode", {"reason": "no fuel"}),
                text("recovered from a raise"),
            ),
        ]
    )
    project = make_project(
        {
            "agents/model_tools.py": TOOLS,
            "evals/bad.eval.py": eval_file(f"""
                CASES = {{
                    "unknown": ("no_such_tool", "unknown tool 'no_such_tool'; the tools are: get_weather, lookup, explode"),
                    "badjson": ("get_weather", "arguments are not valid JSON"),
                    "mismatch": ("get_weather", "missing required 'city'"),
                    "badenum": ("get_weather", "'kelvin' is not one of 'celsius', 'fahrenheit'"),
                    "raises": ("explode", "RuntimeError: the tool broke: no fuel"),
                }}

                @define_eval(each=sorted(CASES), id=lambda row: row)
                async def test(t, row):
                    name, error = CASES[row]
                    await t.send(row)
                    t.succeeded()
                    t.called_tool(name, status="failed")
                    t.event("tool.result", data={{"name": name, "status": "failed", "error": matches(re.escape(error))}})
                    t.check(t.reply, equals(f"recovered from {{'a raise' if row == 'raises' else row.replace('badjson', 'bad json').replace('badenum', 'enum')}}"))
                    {END}
            """),
        },
        config=config(server.url),
    )
    run = project.run()
    for case in ("unknown", "badjson", "mismatch", "badenum", "raises"):
        assert_passed(run, f"bad/{case}")
    # What the model was told is the same error text, marked as an error.
    told = {
        r["messages"][0]["content"]: r["messages"][-1]["content"]
        for r in server.requests
        if len(r["messages"]) > 1
    }
    assert told["raises"] == "Error: RuntimeError: the tool broke: no fuel"
    assert told["unknown"].startswith("Error: unknown tool 'no_such_tool'")
    assert told["mismatch"].startswith("Error: arguments do not match the schema")


def test_a_structured_answer_is_the_turns_data(make_project: Any, model_server: Any) -> None:
    from anpord.testing.model_server import json_reply

    server = model_server([rule("forecast", json_reply({"city": "Oslo", "temp": 3}))])
    schema = {
        "type": "json_schema",
        "json_schema": {
            "name": "forecast",
            "schema": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "temp": {"type": "integer"}},
                "required": ["city", "temp"],
            },
        },
    }
    project = make_project(
        {
            "agents/model_tools.py": TOOLS,
            "evals/structured.eval.py": eval_file(f"""
                @define_eval
                async def test(t):
                    turn = await t.send("forecast for Oslo")
                    t.check(turn.data, equals({{"city": "Oslo", "temp": 3}}))
                    t.output_matches({{"type": "object", "required": ["city", "temp"]}})
                    {END}
            """),
        },
        config=config(
            server.url,
            {
                "response_format": schema,
                "temperature": 0,
                "seed": 7,
                "max_tokens": 50,
                "tool_choice": "auto",
            },
        ),
    )
    run = project.run()
    assert_passed(run, "structured")
    sent = server.requests[0]
    assert sent["response_format"] == schema
    assert (sent["temperature"], sent["seed"], sent["max_tokens"], sent["tool_choice"]) == (
        0,
        7,
        50,
        "auto",
    )


def test_a_cancelled_turn_stops_its_request_and_the_session_goes_on(
    make_project: Any, model_server: Any
) -> None:
    from anpord.testing.model_server import hang

    server = model_server([rule("wait forever", fault=hang())])
    project = make_project(
        {
            "agents/model_tools.py": TOOLS,
            "evals/cancel.eval.py": eval_file(
                f"""
                @define_eval
                async def test(t):
                    live = await t.start("wait forever")
                    # Until the server holds the request.
                    while json.load(urllib.request.urlopen(STATS))["in_flight"] != 1:
                        await asyncio.sleep(0.05)
                    t.check(await live.cancel(), equals(True)).label("cancel accepted")
                    t.check((await live.result()).status, equals("cancelled")).label("turn cancelled")
                    # Until the server sees the dropped connection (the trial's timeout bounds it).
                    while (stats := json.load(urllib.request.urlopen(STATS)))["in_flight"] != 0:
                        await asyncio.sleep(0.05)
                    t.check((stats["in_flight"], stats["served"]), equals((0, 1))).label("the request was dropped")
                    await t.send("still there?")
                    t.check(t.reply, equals("echo: still there?"))
                    {END}
            """,
                imports=f"import urllib.request\nSTATS = {server.url.replace('/v1', '/_anpord/stats')!r}\n",
            ),
        },
        config=config(server.url),
    )
    run = project.run()
    assert_passed(run, "cancel")  # the request hangs for good: had it been waited for, timed out
    after = server.requests[1]["messages"]
    assert [m["content"] for m in after] == ["wait forever", "still there?"]


def test_the_api_key_is_sent_but_never_recorded(make_project: Any, model_server: Any) -> None:
    server = model_server()
    key = "sk-test-7d1f0c2e9b8a4f6e5d3c2b1a0f9e8d7c"
    project = make_project(
        {
            "agents/model_tools.py": TOOLS,
            "evals/key.eval.py": eval_file(f"""
                @define_eval
                async def test(t):
                    await t.send("hi")
                    t.succeeded()
                    {END}
            """),
        },
        config=config(server.url, {"api_key_env": "MY_MODEL_KEY"}, secrets=["MY_MODEL_KEY"]),
    )
    run = project.run("--json", env={"MY_MODEL_KEY": key})
    assert_passed(run, "key")
    assert server.requests[0]["_headers"] == {"Authorization": f"Bearer {key}"}
    stored = "".join(
        p.read_text(errors="replace")
        for p in (project.folder / ".anpord").rglob("*")
        if p.is_file()
    )
    assert key not in stored and key not in run.stdout and key not in run.stderr
