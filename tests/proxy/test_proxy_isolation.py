"""Two trials at once share the run's one proxy server; each is told the other's proxy address and
stand-in key (through an HTTP mock whose routes run in the runner) and tries them.

- Its own address with its own key: answered, recorded in its own trial only.
- Its own address with the other's key: refused, in every sandbox.
- The other's address with the other's key: under bwrap with the network closed, refused — what
  arrives on a trial's own bridged socket is that trial's, whatever address it names; under
  local (no isolation: the contrast shows the check can see it) the token routes it to the other
  trial, which records it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from mocks_support import write_agent
from project_support import eval_file

from anpord.testing.model_server import ModelServer, rule, text

KEY = "sk-isolation-real-0123456789abcdefgh"

AGENT = r'''
import json, os, time, urllib.error, urllib.request
board = os.environ["ANPORD_MOCK_BOARD_URL"]
mine = {"url": os.environ["ANPORD_MODEL_PROXY_URL"], "key": os.environ["OPENAI_API_KEY"]}
def get(path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(board + path, data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read().decode())
def chat(url, key, what):
    body = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": what}]}).encode()
    req = urllib.request.Request(url + "/v1/chat/completions", body,
                                 {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code
get("/post", mine)
deadline = time.monotonic() + 20
while not (peer := get("/peer", mine)) and time.monotonic() < deadline:
    time.sleep(0.05)
out = {"own": chat(mine["url"], mine["key"], "own " + mine["url"]),
       "own_address_peer_key": chat(mine["url"], peer["key"], "stolen key"),
       "peer_address_peer_key": chat(peer["url"], peer["key"], "peer " + mine["url"])}
get("/done", mine)
while get("/all-done", mine) < 2 and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps(out))
'''

CASE = eval_file('''
    from anpord.mocks import http_mock

    POSTED, DONE = {}, set()

    def post(request):
        POSTED[request.json["url"]] = request.json
        return len(POSTED)

    def peer(request):
        others = [v for k, v in POSTED.items() if k != request.json["url"]]
        return others[0] if others else None

    @define_eval(trials=2, mocks=[http_mock("board", routes={
        "POST /post": post, "POST /peer": peer,
        "POST /done": lambda request: DONE.add(request.json["url"]) or len(DONE),
        "POST /all-done": lambda request: len(DONE)})])
    async def steal(t):
        await t.send("go")
        out = json.loads(t.reply)
        t.check(out["own"], equals(200)).label("own")
        t.check(out["own_address_peer_key"], equals(403)).label("own address, peer key")
        t.check(out["peer_address_peer_key"], equals(EXPECT)).label("peer address, peer key")
''', imports="import os\nEXPECT = int(os.environ['EXPECT_PEER'])\n")


def _config(agent: Path, sandbox: str, upstream: str) -> str:
    python = "python3" if sandbox == "bwrap" else sys.executable
    return ("from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=60, max_concurrency=2, variants=[Variant(name='cmd', "
            f"sandbox={sandbox!r}, harness={f'command:{python} {agent}'!r}, mounts=[{str(agent.parent)!r}], "
            f"model_proxy=True, secrets=['OPENAI_API_KEY'], env={{'OPENAI_BASE_URL': {upstream!r}}})])\n")


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_a_trial_cannot_use_another_trials_proxy_address_or_key(make_project: Any, tmp_path: Path,
                                                                sandbox: str) -> None:
    agent = write_agent(tmp_path / "agents", "steal_agent.py", AGENT)
    with ModelServer([rule(None, text("ok"))]) as server:
        project = make_project({"evals/steal.eval.py": CASE}, config=_config(agent, sandbox, server.url))
        run = project.run("--json", timeout=180, env={"OPENAI_API_KEY": KEY,
                                                      "EXPECT_PEER": "403" if sandbox == "bwrap" else "200"})
        asked = [r["messages"][-1]["content"] for r in server.requests]
    reading = run.reading()
    recorded: dict[int, list[str]] = {}
    for trial in (0, 1):
        line = run.result("steal", trial)
        assert line["verdict"] == "passed", (line["reason"], line["assertions"], run.trial("steal", trial)["logs"])
        calls = [e.data for e in reading.events(reading.trial("steal", index=trial)) if e.type == "model.called"]
        recorded[trial] = sorted(c["request"]["messages"][-1]["content"].split()[0] for c in calls)
    # The stolen key never reached the upstream.
    assert not any(a == "stolen key" for a in asked)
    if sandbox == "bwrap":
        assert sorted(a.split()[0] for a in asked) == ["own", "own"]
        assert recorded == {0: ["own"], 1: ["own"]}
    else:
        # Each trial's record holds its own call and the one the other trial made at its address.
        assert recorded == {0: ["own", "peer"], 1: ["own", "peer"]}
