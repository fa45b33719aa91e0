"""One suite, run in-process (``python:``) and served (``anpord serve`` + ``http://``): the same
verdicts, reasons, replies and events. Only ids (calls, requests) and times may differ, and what
the agent prints, which the served agent reports as ``log`` events."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from project_support import Project, Run, eval_file
from serve_support import serve

# Fields that name things rather than describe them: counters of the process the agent ran in.
UNSTABLE = {"ts", "session_id", "call_id", "request_id"}

ASYNC_SUITE = {
    "evals/weather.eval.py": """
        @define_eval
        async def test(t):
            await t.send("weather Lisbon")
            t.called_tool("get_weather", input={"city": "Lisbon"})
            t.message_includes("Sunny in Lisbon")
    """,
    "evals/combo.eval.py": """
        @define_eval
        async def test(t):
            await t.send("combo Rome broken")
            t.tool_order(["lookup", "get_weather", "broken_tool"])
            t.output_equals({"city": "Rome", "forecast": "Sunny", "high": 21})
    """,
    "evals/approve.eval.py": """
        @define_eval
        async def test(t):
            await t.send("approve a.txt")
            req = await t.require_input_request(tool_name="delete_file")
            await t.respond(req.respond("approve"))
            t.message_includes("you chose approve")
    """,
    "evals/two.eval.py": """
        @define_eval
        async def test(t):
            await t.send("two")
            await t.respond_all("deny")
            t.message_includes("email=deny flight=deny")
    """,
    "evals/history.eval.py": """
        @define_eval
        async def test(t):
            await t.send("plan Oslo")
            await t.send("history")
            other = t.new_session()
            await other.send("json")
            other.output_equals({"city": "Brooklyn", "temp": 21, "tags": ["sunny", "warm"]})
            t.check(json.loads(t.reply)[1]["content"], equals("Oslo, NY: Sunny"))
    """,
    "evals/cancel.eval.py": """
        @define_eval
        async def test(t):
            live = await t.start("slow 30")
            await live.wait_for_event("progress")
            await live.cancel()
            turn = await live.result()
            t.check(turn.status, equals("cancelled"))
    """,
    "evals/cancel_tool.eval.py": """
        @define_eval
        async def test(t):
            live = await t.start("slow_tool 30")
            await live.wait_for_event("tool.called")
            await t.cancel()
            await live.result()
            t.called_tool("wait", status="failed")
    """,
    "evals/raise.eval.py": """
        @define_eval
        async def test(t):
            await t.send("raise")
    """,
    "evals/wrong.eval.py": """
        @define_eval
        async def test(t):
            await t.send("weather Lisbon")
            t.message_includes("Rainy")
    """,
    "evals/soft.eval.py": """
        @define_eval
        async def test(t):
            await t.send("hello there")
            t.check(t.reply, similarity("echo: hello here")).soft(0.99)
    """,
    "evals/printing.eval.py": """
        @define_eval
        async def test(t):
            await t.send("print")
            t.message_includes("printed")
    """,
    "evals/model.eval.py": """
        @define_eval
        async def test(t):
            await t.send("model")
            t.message_includes("tiny")
    """,
    "evals/file.eval.py": """
        @define_eval
        async def test(t):
            await t.send_file("see", "data.csv", media_type="text/csv")
            t.message_includes("see | data.csv | data:text/csv;base64 | a,b")
    """,
}

SYNC_SUITE = {
    "evals/sync_tool.eval.py": """
        @define_eval
        async def test(t):
            await t.send("tool")
            t.called_tool("get_weather", input={"city": "Paris"})
            t.message_includes("sync Sunny")
    """,
    "evals/sync_approve.eval.py": """
        @define_eval
        async def test(t):
            await t.send("approve")
            await t.respond_all("approve")
            await t.send("again")
            t.message_includes("sync echo: again (3 messages)")
    """,
    "evals/sync_cancel.eval.py": """
        @define_eval
        async def test(t):
            live = await t.start("sleep 30")
            await asyncio.sleep(0.2)
            await live.cancel()
            t.check((await live.result()).status, equals("cancelled"))
    """,
}


def _signature(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k not in UNSTABLE} for e in events if e["type"] != "log"]


def _outcomes(run: Run) -> dict[str, tuple[str, str | None]]:
    return {r["case_id"]: (r["verdict"], r["reason"]) for r in run.results()}


@pytest.mark.parametrize(
    ("agent", "suite", "expected"),
    [
        (
            "agent",
            ASYNC_SUITE,
            {"weather": "passed", "combo": "passed", "approve": "passed", "two": "passed",
             "history": "passed", "cancel": "passed", "cancel_tool": "passed", "raise": "failed",
             "wrong": "failed", "soft": "scored", "printing": "passed", "model": "passed",
             "file": "passed"},
        ),
        ("sync_agent", SYNC_SUITE, {"sync_tool": "passed", "sync_approve": "passed", "sync_cancel": "passed"}),
    ],
    ids=["async-agent", "sync-agent"],
)
def test_a_suite_gets_the_same_verdicts_and_events_in_process_and_served(
    make_project: Callable[..., Project], agent: str, suite: dict[str, str], expected: dict[str, str]
) -> None:
    project = make_project({"evals/data.csv": "a,b\n", **{k: eval_file(v) for k, v in suite.items()}})
    in_process = project.run("--harness", f"python:agents.kit:{agent}", "--model", "tiny")
    server = serve(f"agents.kit:{agent}", project.folder)
    try:
        served = project.run("--harness", server.url, "--model", "tiny")
    finally:
        assert server.stop() == 0, server.output

    assert {case: verdict for case, (verdict, _) in _outcomes(in_process).items()} == expected, in_process.output
    assert _outcomes(served) == _outcomes(in_process), served.output
    assert served.code == in_process.code
    for case in expected:
        assert _signature(served.events(case)) == _signature(in_process.events(case)), case
        assert served.trial(case)["usage"] == in_process.trial(case)["usage"], case
