"""HTTP agents learn their trial's model proxy from the session-open request (``model_proxy``:
the trial's address and the variables pointing at it, stand-in keys included): a raw HTTP agent
on 127.0.0.1 calls its model there, and a Python agent behind ``anpord serve`` finds the same
proxy at ``turn.model_proxy``. The upstream gets the real key; the agent only ever holds the
stand-in; the call is the trial's ``model.called`` event."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from project_support import build_project, eval_file
from proxy_support import Loop, Upstream
from serve_support import request, serve, start_server

HERE = Path(__file__).resolve().parent
KEY = "sk-http-agent-real-0123456789abcdef"

CASE = eval_file('''
    @define_eval
    async def greet(t):
        await t.send("hello")
        t.check(t.reply, includes("Hello from upstream"))
        t.check([e.data["source"] for e in t.events if e.type == "model.called"], equals(["proxy"]))
''')

SERVED_AGENT = '''
import asyncio, json, urllib.request

def ask(proxy, text):
    req = urllib.request.Request(
        proxy.base_url("openai") + "/chat/completions",
        json.dumps({"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": text}]}).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer " + proxy.api_key("openai")})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())["choices"][0]["message"]["content"]

async def agent(turn):
    assert turn.model_proxy is not None and turn.model_proxy.url.startswith("http://127.0.0.1:")
    return await asyncio.to_thread(ask, turn.model_proxy, turn.input)
'''


def _config(agent_url: str, upstream: str) -> str:
    return ("from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=30, variants=[Variant(name='http', harness="
            f"{agent_url!r}, model_proxy=True, env={{'OPENAI_BASE_URL': {upstream + '/v1'!r}, "
            f"'OPENAI_API_KEY': {KEY!r}}})])\n")


@pytest.fixture
def upstream() -> Any:
    loop = Loop()
    up = Upstream(gap=0.0)
    loop.run(up.start())
    yield up
    loop.run(up.stop())
    loop.close()


def _check_run(project: Any, upstream: Upstream, server_output: str = "") -> None:
    run = project.run("--json")
    result = run.result("greet")
    assert result["verdict"] == "passed", (result["reason"], run.output, server_output)
    # The upstream got the real key, and only what the agent asked for.
    assert [s["headers"]["authorization"] for s in upstream.seen] == [f"Bearer {KEY}"]
    assert upstream.seen[0]["path"] == "/v1/chat/completions"
    events = (project.folder / ".anpord" / "runs").glob("*/events.ndjson")
    lines = [json.loads(line) for path in events for line in path.read_text().splitlines()]
    calls = [e for e in lines if e["type"] == "model.called"]
    assert len(calls) == 1 and calls[0]["source"] == "proxy" and calls[0]["status"] == "completed", calls
    assert KEY not in json.dumps(lines)


def test_a_raw_http_agent_calls_its_model_through_its_trials_proxy(tmp_path: Path, upstream: Upstream) -> None:
    server = start_server([sys.executable, str(HERE / "raw_proxy_agent.py")], tmp_path)
    try:
        project = build_project(tmp_path / "p", {"evals/greet.eval.py": CASE},
                                config=_config(server.url, upstream.url), agents=False)
        _check_run(project, upstream)
    finally:
        server.stop()


def test_a_python_agent_behind_anpord_serve_gets_turn_model_proxy(tmp_path: Path, upstream: Upstream) -> None:
    (tmp_path / "served").mkdir()
    (tmp_path / "served" / "askagent.py").write_text(SERVED_AGENT)
    server = serve("askagent:agent", tmp_path / "served")
    try:
        project = build_project(tmp_path / "p", {"evals/greet.eval.py": CASE},
                                config=_config(server.url, upstream.url), agents=False)
        _check_run(project, upstream, server.output)
        # A session-open request whose model_proxy is not {url, env}: 400, saying so.
        for bad in ("http://x", {"url": "http://x"}, {"url": "http://x", "env": {"A": 1}}):
            reply = request(server.url, "POST", "/v1/sessions", {"model_proxy": bad})
            assert reply.status == 400 and "'model_proxy' must be" in reply.json()["message"], reply
    finally:
        server.stop()
