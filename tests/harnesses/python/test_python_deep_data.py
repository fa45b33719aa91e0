"""A Python agent emitting data nested 5,000 levels deep, and a test checking such a value: the
trial is measured as usual, the data is kept cut at the depth a run folder reads back, and the
run reads back."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from project_support import END, anpord_command, eval_file, run_env

from anpord.results._encode import CUT_NOTE, MAX_DEPTH

AGENT = """
def deep():
    x = []
    for _ in range(5000):
        x = [x]
    return x

async def agent(turn):
    turn.emit("note", deep=deep())
    return "ok"
"""


def _depth(value: Any) -> tuple[int, Any]:
    n = 0
    while isinstance(value, list) and value:
        value, n = value[0], n + 1
    return n, value


def test_deeply_nested_agent_data_is_cut_and_the_trial_passes(make_project: Any) -> None:
    project = make_project({
        "agents/deep.py": AGENT,
        "evals/deep.eval.py": eval_file(f"""
            from agents.deep import deep

            @define_eval
            async def test(t):
                await t.send("go")
                t.check(t.reply, equals("ok"))
                t.check(deep(), satisfies(lambda v: True)).label("a deep value")
                {END}
        """),
    })
    run = project.run("--harness", "python:agents.deep:agent")
    assert run.code == 0, run.output
    note = next(e for e in run.events("deep") if e["type"] == "note")
    depth, leaf = _depth(note["deep"])
    assert leaf == CUT_NOTE and depth < MAX_DEPTH
    actual = run.assertions("deep")["a deep value"]["actual"]
    assert _depth(actual)[1] == CUT_NOTE
    for args in (["show", "latest"], ["show", "latest", "deep"], ["runs"]):
        done = subprocess.run([*anpord_command(), *args], cwd=project.folder, env=run_env(),
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stderr)
    json.dumps(note)
