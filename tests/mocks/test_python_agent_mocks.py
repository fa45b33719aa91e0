"""Mocks for a Python agent (``turn.mocks``), declared on the config, a variant, a suite and a
case; the MCP mock driven by the official ``mcp`` SDK's stdio client; declarative checks read
``context.mock(name).calls``."""

from __future__ import annotations

from typing import Any

from project_support import eval_file

AGENT = '''
import asyncio, json, urllib.request
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.read().decode()

async def agent(turn):
    pay = await asyncio.to_thread(fetch, turn.mocks["pay"].url + "/balance")
    server = turn.mocks["crm"].mcp_server
    params = StdioServerParameters(command=server["command"], args=server["args"])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool("lookup", {"email": turn.input})
            missing = await session.call_tool("fail", {})
    return json.dumps({"pay": pay, "tools": [t.name for t in tools.tools],
                       "crm": result.content[0].text, "fail": [getattr(missing, "is_error", None) or getattr(missing, "isError", None), missing.content[0].text]})
'''

CONFIG = '''
from anpord import Variant, define_eval_config
from anpord.mocks import http_mock, mcp_mock, mcp_tool

def boom(args):
    raise ValueError("crm is down")

config = define_eval_config(timeout=60, mocks=[http_mock("pay", routes={"GET /balance": {"json": {"usd": 10}}})],
    variants=[Variant(name="py", harness="python:agents.mocked:agent", mocks=[
        mcp_mock("crm", tools=[mcp_tool("lookup", "Find a customer", result="gold customer"),
                               mcp_tool("fail", "Always fails", result=boom)])])])
'''

SUITE = eval_file('''
    from anpord.mocks import http_mock

    def checks(context):
        pay = context.mock("pay").calls
        crm = context.mock("crm").calls
        ok = len(pay) == 1 and pay[0]["path"] == "/balance" and [c["tool"] for c in crm] == ["lookup", "fail"]
        return ok, f"pay: {pay}; crm: {crm}"

    def paid(expected):
        async def validate(context):
            out = json.loads(await context.answer())
            ok = (out["pay"] == expected and out["crm"] == "gold customer" and out["fail"][0] is True
                  and "crm is down" in out["fail"][1])
            return ok, str(out)
        return validate

    suite = define_suite([
        define_eval(id="suite_pay", prompt="a@b.c", validate=paid("the suite's")),
        define_eval(id="calls", prompt="a@b.c", validate=checks),
        define_eval(id="own_pay", prompt="a@b.c", validate=paid("mine"),
                    mocks=[http_mock("pay", routes={"GET /balance": {"text": "mine"}})]),
    ], mocks=[http_mock("pay", routes={"GET /balance": {"text": "the suite's"}})])
''')

PLAIN = eval_file('''
    @define_eval
    async def plain(t):
        await t.send("a@b.c")
        t.check(json.loads(t.reply)["pay"], equals('{"usd": 10}'))
        t.mock("pay").called("GET /balance", count=1)
        t.check("end", equals("end")).label("reached the end")
''')

OWN = eval_file('''
    from anpord.mocks import http_mock

    @define_eval(mocks=[http_mock("pay", routes={"GET /balance": {"text": "case's own"}})])
    async def own(t):
        await t.send("x@y.z")
        out = json.loads(t.reply)
        t.check(out["pay"], equals("case's own"))
        t.check(out["tools"], equals(["lookup", "fail"]))
        t.mock("crm").called("fail")
        t.called_tool("crm.fail", status="failed")
        t.check("end", equals("end")).label("reached the end")
''')


def test_python_agents_get_their_mocks_at_every_level(make_project: Any) -> None:
    project = make_project({"agents/mocked.py": AGENT, "evals/suite.eval.py": SUITE, "evals/own.eval.py": OWN,
                            "evals/plain.eval.py": PLAIN},
                           config=CONFIG)
    run = project.run("--json", timeout=180)
    verdicts = run.verdicts()
    assert verdicts == {"suite/suite_pay": "passed", "suite/calls": "passed", "suite/own_pay": "passed",
                        "own": "passed", "plain": "passed"}, (verdicts, [run.result(c)["reason"] for c in verdicts])
    assert any("crm is down" in line for line in run.trial("own")["logs"])
