"""A request body that escapes half a surrogate pair (a client cutting a string mid-emoji) is
valid JSON whose string Python holds but UTF-8 cannot: the mock's record, a failing check's
message naming it, ``events.ndjson``, ``results.jsonl`` and the run store are all still written,
as UTF-8, and read back the same."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from project_support import eval_file

AGENT = '''
import asyncio, urllib.request

def post(url):
    body = b'{"note": "cut \\\\ud83d"}'  # the first half of an emoji's pair, escaped
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    return urllib.request.urlopen(req, timeout=10).read().decode()

async def agent(turn):
    return await asyncio.to_thread(post, turn.mocks["notes"].url + "/notes")
'''

CONFIG = '''
from anpord import define_eval_config
from anpord.mocks import http_mock

config = define_eval_config(timeout=30, harness="python:agents.notes:agent",
                            mocks=[http_mock("notes", routes={"POST /notes": {"json": {"ok": True}}})])
'''

CASE = eval_file('''
    @define_eval
    async def notes(t):
        await t.send("note it")
        t.mock("notes").called("POST /notes", json={"note": "whole"})  # fails, showing the body
''')


def test_a_lone_surrogate_in_a_request_is_recorded_as_utf8_and_read_back(make_project: Any) -> None:
    project = make_project({"evals/notes.eval.py": CASE, "agents/notes.py": AGENT}, config=CONFIG)
    run = project.run("--json", timeout=60)
    assert run.code == 1, run.output
    line = run.result("notes")
    assert line["verdict"] == "failed" and "mock notes received no call matching" in line["reason"], line
    for name in ("events.ndjson", "results.jsonl"):
        for path in run.run_dir.rglob(name):
            path.read_bytes().decode("utf-8")  # valid UTF-8 throughout
    events = [json.loads(x) for p in run.run_dir.rglob("events.ndjson") for x in p.read_text().splitlines()]
    (call,) = [e for e in events if e["type"] == "mock.called"]
    assert call["json"] == {"note": "cut \ud83d"}, call  # the same string read back
    rebuilt = subprocess.run([sys.executable, "-m", "anpord", "db", "rebuild"], cwd=project.folder,
                             capture_output=True, text=True, timeout=60)
    assert rebuilt.returncode == 0, rebuilt.stderr
    shown = subprocess.run([sys.executable, "-m", "anpord", "show", "latest"], cwd=project.folder,
                           capture_output=True, text=True, timeout=60)
    assert shown.returncode in (0, 1) and "Traceback" not in shown.stderr, shown.stderr
