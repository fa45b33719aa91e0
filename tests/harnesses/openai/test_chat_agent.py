"""``chat_agent``: the same tool loop as a Python agent under the ``python:`` harness."""

from __future__ import annotations

from typing import Any

from openai_support import TOOLS
from project_support import END, assert_passed, eval_file

from anpord.testing.model_server import rule, text, tool_call

AGENT = """
from anpord.models import chat_agent
from agents.model_tools import get_weather, lookup

agent = chat_agent(model="scripted-model", tools=[get_weather, lookup], system="Be brief.", max_steps=2)


async def composed(turn):
    turn.emit("log", message="before the model")
    answer = await agent(turn)
    return answer.upper()
"""


def test_chat_agent_runs_the_tool_loop_as_a_python_agent(
    make_project: Any, model_server: Any
) -> None:
    server = model_server(
        [
            rule("weather", tool_call("get_weather", {"city": "Oslo"}), text("Sunny in Oslo")),
            rule("loop", tool_call("lookup", {"query": "x"})),
        ]
    )
    project = make_project(
        {
            "agents/model_tools.py": TOOLS,
            "agents/support.py": AGENT,
            "evals/agent.eval.py": eval_file(f"""
                @define_eval(each=["weather", "loop"], id=lambda row: row)
                async def test(t, row):
                    await t.send(row if row == "loop" else "weather in Oslo?")
                    t.succeeded()
                    t.called_tool("get_weather", input={{"city": "Oslo"}}, output={{"conditions": "Sunny"}})
                    t.check(t.reply, equals("Sunny in Oslo"))
                    t.event("usage", data={{"model": "scripted-model", "step": 2}})
                    await t.send("and again")
                    {END}
            """),
            "evals/composed.eval.py": eval_file(f"""
                @define_eval
                async def test(t):
                    await t.send("weather in Oslo?")
                    t.check(t.reply, equals("SUNNY IN OSLO"))
                    t.event_order(["log", "tool.called", "tool.result"])
                    {END}
            """),
        },
        config=(
            "from anpord import define_eval_config, Variant\n"
            "config = define_eval_config(harness='python:agents.support:agent', timeout=20, variants=[\n"
            "    Variant(name='chat'),\n"
            "])\n"
        ),
    )
    run = project.run("evals/agent.eval.py", env={"OPENAI_BASE_URL": server.url})
    assert_passed(run, "agent/weather")
    loop = run.result("agent/loop")
    assert loop["verdict"] == "failed"
    assert loop["reason"] == (
        "agent raised MaxStepsExceeded: the model was still calling tools after "
        "max_steps=2 model calls"
    )
    weather = [
        r["messages"] for r in server.requests if r["messages"][1]["content"] == "weather in Oslo?"
    ]
    assert weather[0][0] == {"role": "system", "content": "Be brief."}
    # The next turn carries the session's history (as text).
    follow = {
        r["messages"][1]["content"]: r["messages"]
        for r in server.requests
        if r["messages"][-1]["content"] == "and again"
    }
    assert [m["role"] for m in follow["weather in Oslo?"]] == [
        "system",
        "user",
        "assistant",
        "user",
    ]
    assert follow["weather in Oslo?"][2] == {"role": "assistant", "content": "Sunny in Oslo"}
    # A failed turn left no answer in the history.
    assert [m["role"] for m in follow["loop"]] == ["system", "user", "user"]

    composed = project.run(
        "evals/composed.eval.py",
        "--harness",
        "python:agents.support:composed",
        env={"OPENAI_BASE_URL": server.url},
    )
    assert_passed(composed, "composed")
