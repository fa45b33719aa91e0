"""A CLI mock run with arguments that are not UTF-8 (Linux allows any bytes): the call is recorded
as text, its undecodable bytes as backslash escapes, so the trial's record, ``events.ndjson`` and
the run store are all written, and the store can be rebuilt from the run folder."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from project_support import eval_file

AGENT = '''
import asyncio

async def agent(turn):
    proc = await asyncio.create_subprocess_exec(turn.mocks["gh"].path, b"pr", b"view", b"caf\\xe9-\\xff",
                                                stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    return out.decode()
'''

CONFIG = '''
from anpord import define_eval_config
from anpord.mocks import cli_mock

config = define_eval_config(timeout=30, harness="python:agents.bytes_agent:agent",
                            mocks=[cli_mock("gh", responses=[{"argv": ["pr", "view", "caf\\\\xe9-\\\\xff"], "stdout": "ok"}])])
'''

CASE = eval_file('''
    @define_eval
    async def views(t):
        await t.send("view it")
        t.check(t.reply, equals("ok"))
        t.mock("gh").called(argv=["pr", "view", "caf\\\\xe9-\\\\xff"])
        t.mock("gh").called("gh pr view *")
''')


def test_arguments_that_are_not_utf8_are_recorded_escaped_and_nothing_is_lost(make_project: Any) -> None:
    project = make_project({"evals/views.eval.py": CASE, "agents/bytes_agent.py": AGENT}, config=CONFIG)
    run = project.run("--json", timeout=60)
    line = run.result("views")
    assert run.code == 0 and line["verdict"] == "passed", (run.output, line["assertions"])
    raw = b"".join(p.read_bytes() for p in run.run_dir.rglob("events.ndjson"))
    calls = [json.loads(x) for x in raw.decode("utf-8").splitlines() if '"mock.called"' in x]
    assert [c["argv"] for c in calls] == [["pr", "view", "caf\\xe9-\\xff"]], calls
    rebuilt = subprocess.run([sys.executable, "-m", "anpord", "db", "rebuild"], cwd=project.folder,
                             capture_output=True, text=True, timeout=60)
    assert rebuilt.returncode == 0, rebuilt.stderr
