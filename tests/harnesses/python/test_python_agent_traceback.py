"""An agent that raises: its traceback is the trial artifact's ``traceback``, where the console
points."""

from __future__ import annotations

from typing import Any

from project_support import eval_file


def test_an_agents_traceback_lands_in_the_trial_artifact(make_project: Any) -> None:
    project = make_project({"evals/boom.eval.py": eval_file("""
        @define_eval
        async def test(t):
            await t.send("raise")
            t.succeeded()
    """)})
    run = project.run()
    assert run.code == 1
    trial = run.trial("boom")
    assert trial["verdict"] == "failed" and trial["error"]["message"].startswith("agent raised")
    assert trial["traceback"].startswith("Traceback (most recent call last):")
    assert "agents/kit.py" in trial["traceback"]
    assert "traceback: " in run.stdout and trial["files"]["traceback"] in run.stdout
