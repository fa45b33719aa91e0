"""CLI and MCP mocks from a command agent (a real subprocess), under local and under bwrap with
the network closed: the agent runs the mocked program from its PATH and talks JSON-RPC to the
MCP server named in ANPORD_MCP_CONFIG; under bwrap it reaches its mocks and nothing else (a
listener on the host stays unreachable)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from mocks_support import config, write_agent
from project_support import assert_passed, eval_file

AGENT = r'''
import json, os, socket, subprocess, urllib.request
out = {}
# A mocked program, first on PATH: argv, stdin and cwd reach the runner.
p = subprocess.run(["gh", "pr", "list", "--json", "number"], input="from stdin", capture_output=True, text=True)
out["gh"] = [p.returncode, p.stdout, p.stderr]
p = subprocess.run("gh issue close 7", shell=True, capture_output=True, text=True)
out["gh_other"] = [p.returncode, p.stderr]
# The MCP server, as any MCP client starts it: from the standard mcpServers JSON.
server = json.load(open(os.environ["ANPORD_MCP_CONFIG"]))["mcpServers"]["crm"]
proc = subprocess.Popen([server["command"], *server["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(msg):
    proc.stdin.write(json.dumps(msg) + "\n"); proc.stdin.flush()
    return json.loads(proc.stdout.readline())
init = rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
proc.stdin.write('{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'); proc.stdin.flush()
tools = rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
call = rpc({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "lookup", "arguments": {"email": "a@b.c"}}})
garbage = (proc.stdin.write("this is not json\n"), proc.stdin.flush(), json.loads(proc.stdout.readline()))[2]
bad_version = rpc({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"protocolVersion": "0.1"}})
proc.stdin.close(); proc.wait(timeout=10)
out["mcp"] = [init["result"]["protocolVersion"], [t["name"] for t in tools["result"]["tools"]],
              call["result"]["structuredContent"], garbage["error"]["code"], bad_version["error"]["message"]]
# The HTTP mock answers; a port on the host does not (when the network is closed).
with urllib.request.urlopen(os.environ["ANPORD_MOCK_API_URL"] + "/ping", timeout=10) as r:
    out["api"] = r.read().decode()
try:
    socket.create_connection(("127.0.0.1", int(os.environ["HOST_PORT"])), timeout=3).close()
    out["host"] = "reached"
except OSError:
    out["host"] = "unreachable"
print(json.dumps(out))
'''

CASE = eval_file('''
    @define_eval(mocks=[
        cli_mock("gh", responses=[{"argv": ["pr", "list", "--json", "number"], "stdout": '[{"number": 7}]'}]),
        mcp_mock("crm", tools=[mcp_tool("lookup", "Find a customer by email",
                                        {"type": "object", "properties": {"email": {"type": "string"}}},
                                        lambda args: {"customer": args["email"], "tier": "gold"})]),
        http_mock("api", routes={"GET /ping": {"text": "pong"}}),
    ])
    async def world(t):
        await t.send("go")
        out = json.loads(t.reply)
        t.check(out["gh"], equals([0, '[{"number": 7}]', ""]))
        t.check(out["gh_other"][0], equals(1))
        t.check(out["gh_other"][1], includes("no mocked response"))
        t.check(out["mcp"], equals(["2025-06-18", ["lookup"], {"customer": "a@b.c", "tier": "gold"}, -32700,
                                    "Unsupported protocol version"]))
        t.check(out["api"], equals("pong"))
        t.check(out["host"], equals(HOST))
        t.mock("gh").called(argv=["pr", "list", "--json", "number"], input="from stdin", count=1)
        t.mock("gh").called("gh issue close 7")
        t.check(t.mock("gh").calls[0]["cwd"], equals(str(t.workspace)))
        t.mock("crm").called("lookup", input={"email": "a@b.c"}, count=1)
        t.called_tool("crm.lookup", input={"email": "a@b.c"}, output={"customer": "a@b.c", "tier": "gold"})
        t.mock("api").called("GET /ping")
        t.check("end", equals("end")).label("reached the end")
''', imports="from anpord.mocks import cli_mock, http_mock, mcp_mock, mcp_tool\nimport os\nHOST = os.environ['EXPECT_HOST']\n")


@pytest.fixture
def host_listener() -> Any:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
                conn.close()
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield server.getsockname()[1]
    stop.set()
    server.close()


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_cli_and_mcp_mocks_reach_the_agent_and_only_they_do(make_project: Any, tmp_path: Path, sandbox: str,
                                                             host_listener: int) -> None:
    agent = write_agent(tmp_path / "agents", "world_agent.py", AGENT)
    expect = "unreachable" if sandbox == "bwrap" else "reached"
    project = make_project({"evals/world.eval.py": CASE},
                           config=config(agent, sandbox, extra=f", env={{'HOST_PORT': '{host_listener}'}}"))
    run = project.run("--json", timeout=180, env={"EXPECT_HOST": expect})
    assert_passed(run, "world")
    events = run.events("world")
    kinds = [e["kind"] for e in events if e["type"] == "mock.called"]
    assert sorted(kinds) == ["cli", "cli", "http", "mcp"], kinds
    # One tool.called / tool.result per MCP call, named <server>.<tool>.
    assert [e["name"] for e in events if e["type"] == "tool.called"] == ["crm.lookup"]
    assert [e["status"] for e in events if e["type"] == "tool.result"] == ["completed"]
