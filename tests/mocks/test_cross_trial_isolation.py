"""Two trials at once, each with its own HTTP mock: under bwrap with the network closed neither
reaches the other's mock (under local, both do — the contrast shows the check can see it). The
route functions run in the runner, so they can tell each trial the other's port, and hold both
trials until each has tried."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mocks_support import config, write_agent
from project_support import eval_file

AGENT = r'''
import json, os, socket, time, urllib.request
base = os.environ["ANPORD_MOCK_WORLD_URL"]
def get(path):
    with urllib.request.urlopen(base + path, timeout=10) as r:
        return json.loads(r.read().decode())
deadline = time.monotonic() + 20
while not (peers := get("/peers")) and time.monotonic() < deadline:
    time.sleep(0.05)
reached = []
for port in peers:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        reached.append(True)
    except OSError:
        reached.append(False)
get("/tried")
while get("/all-tried") < 2 and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps({"peers": len(peers), "reached": reached}))
'''

CASE = eval_file('''
    from anpord.mocks import http_mock

    PORTS, TRIED = set(), []

    def _port(request):
        return int(request.headers["host"].rsplit(":", 1)[1])

    def peers(request):
        PORTS.add(_port(request))
        return sorted(PORTS - {_port(request)})

    def tried(request):
        TRIED.append(_port(request))
        return len(TRIED)

    @define_eval(trials=2, mocks=[http_mock("world", routes={
        "GET /peers": peers, "GET /tried": tried, "GET /all-tried": lambda request: len(TRIED)})])
    async def peer(t):
        await t.send("go")
        out = json.loads(t.reply)
        t.check(out["peers"], equals(1))
        t.check(out["reached"], equals([EXPECT]))
        t.check("end", equals("end")).label("reached the end")
''', imports="import os\nEXPECT = os.environ['EXPECT_REACHED'] == '1'\n")


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_a_trial_never_reaches_another_trials_mock_under_bwrap(make_project: Any, tmp_path: Path,
                                                               sandbox: str) -> None:
    agent = write_agent(tmp_path / "agents", "peer_agent.py", AGENT)
    project = make_project({"evals/peer.eval.py": CASE}, config=config(agent, sandbox))
    run = project.run("--json", timeout=180, env={"EXPECT_REACHED": "1" if sandbox == "local" else "0"})
    for trial in (0, 1):
        line = run.result("peer", trial)
        assert line["verdict"] == "passed", (line["reason"], line["assertions"], run.trial("peer", trial)["logs"])
