"""An async Python agent that calls its mocks with blocking calls (``subprocess.run`` of a CLI
mock, ``urllib`` to an HTTP mock, with no timeout) holds the run's event loop while it waits. The
mocks answer on a loop of their own, so the agent gets its answers, the calls are recorded and
checked, and the run ends — before, each such call hung the run for ever."""

from __future__ import annotations

from typing import Any

from project_support import eval_file

AGENT = '''
import json, subprocess, urllib.request

async def agent(turn):  # blocks the loop: subprocess.run and urlopen inside async def
    done = subprocess.run([turn.mocks["gh"].path, "pr", "list"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    request = urllib.request.Request(turn.mocks["shop"].url + "/orders/7", method="DELETE")
    with urllib.request.urlopen(request) as answer:  # no timeout: a loop that never answers hangs here
        body = json.loads(answer.read())
    return f"{done.returncode} {done.stdout.strip()} {body['deleted']}"
'''

CONFIG = '''
from anpord import define_eval_config
from anpord.mocks import cli_mock, http_mock

config = define_eval_config(timeout=20, harness="python:agents.blocker:agent",
                            mocks=[cli_mock("gh", responses=[{"stdout": "#7"}]),
                                   http_mock("shop", routes={"DELETE /orders/*": {"json": {"deleted": True}}})])
'''

CASE = eval_file('''
    @define_eval
    async def lists_prs(t):
        await t.send("list the PRs, delete order 7")
        t.check(t.reply, equals("0 #7 True"))
        t.mock("gh").called("pr list")
        t.mock("shop").called("DELETE /orders/7")
''')


def test_blocking_calls_to_cli_and_http_mocks_from_an_async_agent_are_answered(make_project: Any) -> None:
    project = make_project({"evals/lists.eval.py": CASE, "agents/blocker.py": AGENT}, config=CONFIG)
    run = project.run("--json", timeout=60)  # before: a hang the subprocess timeout ends
    line = run.result("lists")
    assert line["verdict"] == "passed", (line["reason"], line["assertions"])
    calls = [e for e in run.events("lists") if e["type"] == "mock.called"]
    assert [(c["mock"], c.get("argv") or c.get("path")) for c in calls] == [("gh", ["pr", "list"]),
                                                                            ("shop", "/orders/7")], calls
    assert run.wall < 30, run.wall
