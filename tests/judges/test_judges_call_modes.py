"""How a judge asks: a forced tool call first; a server that refuses ``tools`` (a 400 naming it) is
asked for a JSON-schema answer, one that refuses ``response_format`` too for two lines of text —
and the endpoint's abilities are remembered, so later judges ask the right way at once."""

from __future__ import annotations

from typing import Any

from judge_support import grade, judge_config, judge_requests, judgments, mode_of
from project_support import END, eval_file

from anpord.testing.model_server import json_reply, rule, text

TWO_CASES = {
    "evals/first.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("Say hello")
            t.judge.closed_qa("greets: the reply says hello")
            {END}
    """),
    "evals/second.eval.py": eval_file(f"""
        @define_eval
        async def test(t):
            await t.send("Say goodbye")
            t.judge.closed_qa("greets: the reply says goodbye")
            {END}
    """),
}


def test_a_tool_call_is_the_first_way_asked(make_project: Any, model_server: Any) -> None:
    server = model_server([rule("greets", grade("Y", "it does"))])
    run = make_project(TWO_CASES, config=judge_config(server.url)).run("--max-concurrency", "1")
    assert run.verdicts() == {"first": "passed", "second": "passed"}, run.output
    assert [mode_of(r) for r in judge_requests(server)] == ["tool", "tool"]
    assert "response_format" not in judge_requests(server)[0]


def test_a_server_without_tools_is_asked_for_a_json_schema_answer_from_then_on(
    make_project: Any, model_server: Any
) -> None:
    server = model_server(
        [rule("greets", json_reply({"reason": "a JSON answer", "choice": "Y"}))], unsupported=("tools",)
    )
    run = make_project(TWO_CASES, config=judge_config(server.url)).run("--max-concurrency", "1")
    assert run.verdicts() == {"first": "passed", "second": "passed"}, run.output
    # One refused tool call in the whole run: the second case asked the right way at once.
    assert [mode_of(r) for r in judge_requests(server)] == ["tool", "json", "json"]
    fmt = judge_requests(server)[1]["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["properties"]["choice"]["enum"] == ["Y", "N"]
    assert fmt["json_schema"]["schema"]["required"] == ["reason", "choice"]
    (j,) = judgments(run, "second").values()
    assert (j.choice, j.reason, j.status) == ("Y", "a JSON answer", "passed")


def test_a_server_with_neither_is_asked_for_plain_text(make_project: Any, model_server: Any) -> None:
    server = model_server(
        [rule("greets", text("Reason: it says hello plainly.\nChoice: Y"))],
        unsupported=("tools", "response_format"),
    )
    run = make_project(TWO_CASES, config=judge_config(server.url)).run("--max-concurrency", "1")
    assert run.verdicts() == {"first": "passed", "second": "passed"}, run.output
    sent = judge_requests(server)
    assert [mode_of(r) for r in sent] == ["tool", "json", "text", "text"]
    # The plain-text question says how to answer: two lines, one of the declared choices.
    assert "Reason: <one or two sentences>\nChoice: <exactly one of: Y, N>" in sent[-1]["messages"][1]["content"]
    (j,) = judgments(run, "first").values()
    assert (j.choice, j.reason) == ("Y", "it says hello plainly.")


def test_a_model_that_refuses_temperature_is_asked_without_it(make_project: Any, model_server: Any) -> None:
    server = model_server([rule("greets", grade("Y"))], unsupported=("temperature",))
    run = make_project(TWO_CASES, config=judge_config(server.url)).run("--max-concurrency", "1")
    assert run.verdicts() == {"first": "passed", "second": "passed"}, run.output
    sent = judge_requests(server)
    assert ["temperature" in r for r in sent] == [True, False, False]
    assert [mode_of(r) for r in sent] == ["tool", "tool", "tool"]  # still a tool call
