"""HTTP agents learn their trial's mocks from the session-open request (``mocks``: name → kind
and URL, MCP server or program): a raw HTTP agent on 127.0.0.1 calls its ``http_mock``, and a
Python agent behind ``anpord serve`` finds the same mocks in ``turn.mocks``."""

from __future__ import annotations

import sys
from pathlib import Path

from project_support import build_project, eval_file
from serve_support import request, serve, start_server

HERE = Path(__file__).resolve().parent

CASE = eval_file('''
    from anpord.mocks import http_mock, mcp_mock, mcp_tool

    @define_eval(mocks=[http_mock("pay", routes={"GET /balance": {"json": {"usd": 42}}}),
                        mcp_mock("crm", tools=[mcp_tool("lookup", result="gold")])])
    async def balance(t):
        await t.send("ada")
        t.check(json.loads(t.reply), equals({"balance": {"usd": 42}, "kinds": {"pay": "http", "crm": "mcp"}}))
        t.mock("pay").called("GET /balance", count=1)
''')

SERVED_AGENT = '''
import asyncio, json, urllib.request

def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()

async def agent(turn):
    got = await asyncio.to_thread(fetch, turn.mocks["pay"].url + "/balance?who=" + turn.input)
    assert turn.mocks["crm"].mcp_server["command"]
    return json.dumps({"balance": json.loads(got), "kinds": {k: m.kind for k, m in turn.mocks.items()}})
'''


def _config(url: str) -> str:
    return ("from anpord import Variant, define_eval_config\n"
            f"config = define_eval_config(timeout=30, variants=[Variant(name='http', harness={url!r})])\n")


def test_a_raw_http_agent_calls_its_trials_mock(tmp_path: Path) -> None:
    server = start_server([sys.executable, str(HERE / "raw_agent_server.py")], tmp_path)
    try:
        project = build_project(tmp_path / "p", {"evals/balance.eval.py": CASE}, config=_config(server.url),
                                agents=False)
        run = project.run("--json")
        result = run.result("balance")
        assert result["verdict"] == "passed", (result["reason"], run.output)
    finally:
        server.stop()


def test_a_python_agent_behind_anpord_serve_gets_turn_mocks(tmp_path: Path) -> None:
    (tmp_path / "served").mkdir()
    (tmp_path / "served" / "payagent.py").write_text(SERVED_AGENT)
    server = serve("payagent:agent", tmp_path / "served")
    try:
        project = build_project(tmp_path / "p", {"evals/balance.eval.py": CASE}, config=_config(server.url),
                                agents=False)
        run = project.run("--json")
        result = run.result("balance")
        assert result["verdict"] == "passed", (result["reason"], run.output, server.output)
        # A session-open request whose mocks are not an object of entries: 400, saying so.
        for bad, says in (("pay", "'mocks' must be an object"), ({"pay": "http://x"}, "'mocks.pay' must be")):
            reply = request(server.url, "POST", "/v1/sessions", {"mocks": bad})
            assert reply.status == 400 and says in reply.json()["message"], reply
    finally:
        server.stop()
