"""Token usage and cost add up over a run, in the console's closing lines, ``--json`` and
run.json; a run with one unknown price has an unknown cost, never a made-up total."""

from __future__ import annotations

import json
from typing import Any

from project_support import END, eval_file

PRICED = """
async def agent(turn):
    if turn.input == "unpriced":
        turn.usage(input_tokens=7, output_tokens=3, cost=None)
    else:
        turn.usage(input_tokens=1000, output_tokens=250, cost=0.0125)
    return "ok"
"""


def test_usage_and_cost_totals_reach_every_output(make_project: Any) -> None:
    project = make_project({
        "agents/priced.py": PRICED,
        "evals/use.eval.py": eval_file(f"""
            @define_eval(each=["a", "b"])
            async def test(t, row):
                await t.send(row)
                {END}
        """),
    })
    run = project.run("--harness", "python:agents.priced:agent")
    assert run.code == 0, run.output
    lines = run.stdout.splitlines()
    assert "Usage: 2,000 input tokens, 500 output tokens, $0.0250" in lines
    assert lines[-1] == "2 passed, 0 failed"
    assert run.run_json()["usage"] == {"input_tokens": 2000, "output_tokens": 500, "cost": 0.025}
    doc = json.loads(project.run("--harness", "python:agents.priced:agent", "--json").stdout)
    assert doc["usage"] == {"input_tokens": 2000, "output_tokens": 500, "cost": 0.025}


def test_one_unknown_price_makes_the_total_cost_unknown(make_project: Any) -> None:
    project = make_project({
        "agents/priced.py": PRICED,
        "evals/use.eval.py": eval_file(f"""
            @define_eval(each=["priced", "unpriced"])
            async def test(t, row):
                await t.send(row)
                {END}
        """),
    })
    run = project.run("--harness", "python:agents.priced:agent")
    assert run.code == 0, run.output
    # The total is unknown; the console shows the known part and what it leaves out.
    assert ("Usage: 1,007 input tokens, 253 output tokens, $0.0125 + unknown for 1 variant "
            "(python:agents.priced:agent/default)") in run.stdout.splitlines()
    assert run.run_json()["usage"]["cost"] is None
    assert run.result("use/0001")["usage"] == {"input_tokens": 7, "output_tokens": 3, "cost": None}


BY_MODEL = """
async def agent(turn):
    cost = None if turn.model == "unpriced" else 0.0123
    turn.usage(input_tokens=10, output_tokens=5, cost=cost)
    return "ok"
"""


def test_a_variant_without_a_price_leaves_the_others_cost_shown(make_project: Any) -> None:
    config = (
        "from anpord import Variant, define_eval_config\n"
        "config = define_eval_config(harness='python:agents.bymodel:agent', variants=[\n"
        "    Variant(model='priced'), Variant(model='unpriced', name='local-model')])\n"
    )
    project = make_project({
        "agents/bymodel.py": BY_MODEL,
        "evals/use.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("hi")
                {END}
        """),
    }, config=config)
    run = project.run()
    assert run.code == 0, run.output
    assert ("Usage: 20 input tokens, 10 output tokens, $0.0123 + unknown for 1 variant (local-model)"
            in run.stdout.splitlines()), run.stdout
    assert run.run_json()["usage"]["cost"] is None  # the recorded total stays unknown
    run = project.run("--variant", "local-model")
    assert "Usage: 10 input tokens, 5 output tokens, cost unknown" in run.stdout.splitlines()
