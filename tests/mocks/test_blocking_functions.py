"""Route and tool functions that block (``time.sleep``, a synchronous call) run in a thread of
their own: the runner's one event loop, shared by every trial, goes on, and the trial's timeout
fires on time, blaming neither the agent nor the loop."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from project_support import assert_passed, eval_file

from anpord import Variant
from anpord.mocks import cli_mock, mcp_mock, mcp_tool
from anpord.mocks._service import MockService
from anpord.runner._services import ServiceContext

AGENT = '''
import asyncio, urllib.request

def get(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return r.read().decode()

async def agent(turn):
    return await asyncio.to_thread(get, turn.mocks["pay"].url + turn.input)
'''

PAY = '''
from anpord.mocks import http_mock

def slow(request):                      # a plain route function, as the docs show one
    time.sleep(12)
    return {"state": "late"}

async def quick(request):
    return {"state": "ok"}

PAY = http_mock("pay", routes={"GET /slow": slow, "GET /quick": quick})
'''

BLOCKED = eval_file('''
    @define_eval(mocks=[PAY], timeout=2)
    async def blocked(t):
        await t.send("/slow")
''', imports=PAY)

BESIDE = eval_file('''
    @define_eval(mocks=[PAY])
    async def beside(t):
        await t.send("/quick")
        t.check(json.loads(t.reply), equals({"state": "ok"}))
        t.check("end", equals("end")).label("reached the end")
''', imports=PAY)

CONFIG = ("from anpord import define_eval_config\n"
          "config = define_eval_config(harness='python:agents.blocking:agent', timeout=30)\n")


def test_a_blocking_route_function_stalls_no_trial_and_its_timeout_fires(make_project: Any) -> None:
    project = make_project({"agents/blocking.py": AGENT, "evals/blocked.eval.py": BLOCKED,
                            "evals/beside.eval.py": BESIDE}, config=CONFIG)
    run = project.run("--json", "--max-concurrency", "2", timeout=120)
    assert_passed(run, "beside")
    blocked = run.result("blocked")
    assert blocked["verdict"] == "timed_out", blocked
    assert "event loop" not in blocked["reason"], blocked["reason"]
    assert run.wall < 10, (run.wall, run.output)  # the 2 s timeout, not the route's 12 s
    # The answer still waiting ends with its trial, quietly: no error from the stream server.
    assert "Exception in callback" not in run.stderr and "CancelledError" not in run.stderr, run.stderr


async def _loop_lag_during(mock: Any, argv: list[str], stdin: bytes) -> tuple[float, bytes]:
    """The longest the loop went without a turn while the mock's program ran (``argv`` after
    the relay's own), and what it printed."""
    service = MockService((mock,))
    await service.start(ServiceContext(variant=Variant(), label="t", sandbox=None, log=lambda m: None,
                                       record=lambda e: None))
    worst, done = 0.0, False

    async def tick() -> None:
        nonlocal worst
        while not done:
            before = time.monotonic()
            await asyncio.sleep(0.01)
            worst = max(worst, time.monotonic() - before)

    ticker = asyncio.ensure_future(tick())
    try:
        handle = service.handles[mock.name]
        command = [handle.path] if handle.path else [handle.mcp_server["command"], *handle.mcp_server["args"]]
        proc = await asyncio.create_subprocess_exec(*command, *argv, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE)
        out, _ = await asyncio.wait_for(proc.communicate(stdin), 20)
        return worst, out
    finally:
        done = True
        await ticker
        await service.stop()


def _slow(value: Any) -> Any:
    time.sleep(1.5)
    return value


def test_a_blocking_mcp_tool_function_leaves_the_loop_free() -> None:
    mock = mcp_mock("crm", tools=[mcp_tool("slow", result=lambda args: _slow("done"))])
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow"}}
    worst, out = asyncio.run(_loop_lag_during(mock, [], json.dumps(call).encode() + b"\n"))
    assert json.loads(out)["result"]["content"][0]["text"] == "done"
    assert worst < 0.5, worst


def test_a_blocking_cli_argv_predicate_leaves_the_loop_free() -> None:
    mock = cli_mock("gh", responses=[{"argv": ["pr", lambda arg: _slow(arg == "list")], "stdout": "7\n"}])
    worst, out = asyncio.run(_loop_lag_during(mock, ["pr", "list"], b""))
    assert out == b"7\n"
    assert worst < 0.5, worst
