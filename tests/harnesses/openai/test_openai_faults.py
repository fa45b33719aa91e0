"""What each fault of a model endpoint becomes, through real ``anpord eval`` runs: the agent's own
faults fail the trial, the infrastructure's make it ``void`` with the reason, and the run goes on."""

from __future__ import annotations

import socket
from typing import Any

from openai_support import TOOLS, config
from project_support import END, assert_passed, eval_file

from anpord.testing.model_server import (
    hang,
    malformed,
    no_choices,
    rate_limit,
    reset,
    rule,
    server_error,
    text,
    tool_call,
)

FAST_FAILING = {"max_attempts": 2, "retry_delay": 0.05, "timeout": 1, "max_steps": 3}


def test_each_fault_gets_its_verdict_and_the_run_goes_on(
    make_project: Any, model_server: Any
) -> None:
    server = model_server(
        [
            rule("ratelimited", fault=rate_limit(retry_after=0.1, times=None)),
            rule("servererror", fault=server_error(502, times=None)),
            rule("malformed", fault=malformed()),
            rule("nochoices", fault=no_choices()),
            rule("reset", fault=reset(times=None)),
            rule("hang", fault=hang()),
            rule("loop", tool_call("lookup", {"query": "again"})),
            rule(
                "recovers",
                text("answered after one 429"),
                fault=rate_limit(retry_after=0.1, times=1),
            ),
        ]
    )
    project = make_project(
        {
            "agents/model_tools.py": TOOLS,
            "evals/slow.eval.py": eval_file(f"""
                @define_eval(timeout=0.5)
                async def test(t):
                    await t.send("hang")
                    t.succeeded()
                    {END}
            """),
            "evals/faults.eval.py": eval_file(f"""
                @define_eval(each=["ratelimited", "servererror", "malformed", "nochoices", "reset", "hang",
                                   "loop", "recovers", "plain"], id=lambda row: row)
                async def test(t, row):
                    await t.send(row)
                    t.succeeded()
                    {END}
            """),
        },
        config=config(server.url, FAST_FAILING),
    )
    run = project.run()
    assert run.code == 1, run.output
    results = {
        case.split("/")[1]: lines[0]
        for case, lines in run.by_case().items()
        if case.startswith("faults/")
    }
    slow = run.result("slow")
    assert slow["verdict"] == "timed_out" and slow["reason"] == "timed out after 0.5s", slow
    assert len(results) == 9, "every case ran"
    where = f"scripted-model at 127.0.0.1:{server.port}"
    expected = {
        "ratelimited": f"model call failed: {where}: rate limited (HTTP 429) after 2 attempt(s)",
        "servererror": f"model call failed: {where}: HTTP 502: The server had an error (scripted) (after 2 attempts)",
        "malformed": f"model call failed: {where}: the response is not JSON: '<html>this is not JSON'",
        "nochoices": f"model call failed: {where}: the response has no choices",
        "reset": f"model call failed: {where}: connection failed",
        "hang": f"model call failed: {where}: no answer within 1s (after 2 attempts)",
    }
    for case, reason in expected.items():
        assert results[case]["verdict"] == "void", (case, results[case])
        assert results[case]["reason"].startswith(reason), (case, results[case]["reason"])
    loop = results["loop"]
    assert loop["verdict"] == "failed"
    assert "the model was still calling tools after max_steps=3 model calls" in loop["reason"]
    assert [e["name"] for e in run.events("faults/loop") if e["type"] == "tool.called"] == [
        "lookup"
    ] * 3
    assert_passed(run, "faults/recovers")
    assert_passed(run, "faults/plain")
    # The retried requests really were sent twice; the malformed answer was not retried.
    sent = [r["messages"][-1]["content"] for r in server.requests]
    assert (
        sent.count("ratelimited") == 2
        and sent.count("servererror") == 2
        and sent.count("malformed") == 1
    )


def test_an_unreachable_endpoint_and_bad_options_void_the_trial_with_the_reason(
    make_project: Any, model_server: Any
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]  # nothing listens here once closed
    down = f"http://127.0.0.1:{closed_port}/v1"
    project = make_project(
        {
            "agents/model_tools.py": TOOLS,
            "evals/one.eval.py": eval_file(f"""
                @define_eval
                async def test(t):
                    await t.send("hello")
                    t.succeeded()
                    {END}
            """),
            "evals/evals.config.py": f"""
                from anpord import define_eval_config, Variant
                config = define_eval_config(timeout=20, variants=[
                    Variant(name="down", harness="openai:m", options={{"base_url": {down!r}, "max_attempts": 2, "retry_delay": 0.05}}),
                    Variant(name="typo", harness="openai:m", options={{"base_url": {down!r}, "tols": []}}),
                    Variant(name="badtool", harness="openai:m", options={{"base_url": {down!r}, "tools": ["agents.model_tools:nothing"]}}),
                    Variant(name="nomodel", harness="openai:", options={{"base_url": {down!r}}}),
                ])
            """,
        },
        config=None,
    )
    run = project.run()
    assert run.code == 1, run.output
    by_variant = {r["variant"]: r for r in run.results()}
    assert {r["verdict"] for r in by_variant.values()} == {"void"}
    assert by_variant["down"]["reason"].startswith(
        f"model call failed: m at 127.0.0.1:{closed_port}: connection failed: Cannot connect to host"
    )
    assert by_variant["down"]["reason"].endswith("(after 2 attempts)")
    assert by_variant["typo"]["reason"].startswith(
        "openai:m (variant typo): unknown option 'tols'; the options are: base_url"
    )
    assert by_variant["badtool"]["reason"] == (
        "openai:m (variant badtool): tool agents.model_tools:nothing: agents.model_tools has no attribute 'nothing'"
    )
    assert by_variant["nomodel"]["reason"] == (
        "openai: (variant nomodel): no model: write 'openai:<model>' or give the variant model="
    )


def test_a_spec_that_cannot_be_a_model_id_is_a_usage_error(make_project: Any) -> None:
    project = make_project(
        {
            "evals/one.eval.py": eval_file("""
        @define_eval
        async def test(t):
            await t.send("hello")
    """)
        }
    )
    run = project.run("--harness", "openai:two words")
    assert run.code == 2
    assert "openai harness spec must be 'openai:<model>' without spaces" in run.stderr
    assert "Traceback" not in run.stderr
