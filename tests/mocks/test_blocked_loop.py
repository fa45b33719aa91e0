"""An async Python agent that runs its CLI mock with a blocking call (``subprocess.run``) holds
the event loop the mock's answer comes from. That must end as a failure saying why within the
trial's time, never a run that hangs for ever."""

from __future__ import annotations

from typing import Any

from project_support import eval_file

AGENT = '''
import subprocess

async def agent(turn):  # blocks the loop: subprocess.run inside async def
    done = subprocess.run([turn.mocks["gh"].path, "pr", "list"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    return f"{done.returncode} {done.stderr}"
'''

CONFIG = '''
from anpord import define_eval_config
from anpord.mocks import cli_mock

config = define_eval_config(timeout=3, harness="python:agents.blocker:agent",
                            mocks=[cli_mock("gh", responses=[{"stdout": "#7"}])])
'''

CASE = eval_file('''
    @define_eval
    async def lists_prs(t):
        await t.send("list the PRs")
        t.check(t.reply, equals("0 "))
''')


def test_a_blocking_call_to_a_cli_mock_fails_in_the_trials_time_saying_why(make_project: Any) -> None:
    project = make_project({"evals/lists.eval.py": CASE, "agents/blocker.py": AGENT}, config=CONFIG)
    run = project.run("--json", timeout=60)  # before the fix: a hang the subprocess timeout ends
    line = run.result("lists")
    assert line["verdict"] == "timed_out", line
    assert "its code blocked the event loop for 3" in line["reason"], line["reason"]
    assert "use a sync agent (it runs in a thread) or await instead of blocking" in line["reason"]
    assert run.wall < 30, run.wall
