"""A Python agent returning structured output nested thousands of levels deep: the turn completes
with the value cut (as records are cut) where a reader would give up, instead of failing the
trial with a RecursionError at the test's ``t.send`` line."""

from __future__ import annotations

from typing import Any

from project_support import END, eval_file

AGENT = """
async def agent(turn):
    value = []
    for _ in range(5000):
        value = [value]
    return {"deep": value}
"""


def test_a_reply_nested_thousands_deep_completes_the_turn(make_project: Any) -> None:
    project = make_project({
        "agents/deep.py": AGENT,
        "evals/deep.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("hi")
                t.succeeded()
                {END}
        """),
    }, config="""
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.deep:agent", timeout=30)
""")
    run = project.run()
    assert run.code == 0, run.output
    assert run.result("deep")["verdict"] == "passed"
