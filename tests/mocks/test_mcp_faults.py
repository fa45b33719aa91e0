"""An MCP mock's server process (the relay, a real subprocess) faced with a client that does
things wrong: every message gets an answer or is a notification — never a hang."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from anpord import Variant
from anpord.mocks import McpTool, mcp_mock, mcp_tool
from anpord.mocks._service import MockService
from anpord.runner._services import ServiceContext


@contextlib.asynccontextmanager
async def _crm(tools: tuple[McpTool, ...]) -> AsyncIterator[tuple[dict[str, Any], list[Any]]]:
    """A running MCP mock ``crm``: its ``mcpServers`` entry, and the events it records."""
    service = MockService((mcp_mock("crm", tools=tools),))
    events: list[Any] = []
    await service.start(ServiceContext(variant=Variant(), label="t", sandbox=None, log=lambda m: None,
                                       record=events.append))
    try:
        server = service.handles["crm"].mcp_server
        assert server is not None
        yield server, events
    finally:
        await service.stop()


async def _exchange(lines: list[str], tools: tuple[McpTool, ...] = (mcp_tool("lookup", result="gold"),),
                    ) -> tuple[list[dict[str, Any]], list[Any], float]:
    async with _crm(tools) as (server, events):
        started = time.monotonic()
        proc = await asyncio.create_subprocess_exec(server["command"], *server["args"],
                                                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        assert proc.stdin is not None
        proc.stdin.write("".join(lines).encode())
        await proc.stdin.drain()
        proc.stdin.close()
        out, _ = await asyncio.wait_for(proc.communicate(), 20)
        return [json.loads(line) for line in out.decode().splitlines()], events, time.monotonic() - started


def test_garbage_and_unknowns_get_json_rpc_errors() -> None:
    replies, events, _ = asyncio.run(_exchange([
        "not json at all\n",
        "[1, 2]\n",
        '{"id": 1, "method": "initialize"}\n',
        '{"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"protocolVersion": "v1"}}\n',
        '{"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": "2099-01-01"}}\n',
        '{"jsonrpc": "2.0", "method": "notifications/initialized"}\n',
        '{"jsonrpc": "2.0", "id": 4, "method": "sampling/createMessage"}\n',
        '{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "nope"}}\n',
        '{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "lookup", "arguments": {"q": 1}}}\n',
        '{"jsonrpc": "2.0", "id": 7, "method": "ping"}',  # no newline, then EOF
    ]))
    codes = [(r.get("id"), r["error"]["code"] if "error" in r else "ok") for r in replies]
    assert codes == [(None, -32700), (None, -32600), (1, -32600), (2, -32602), (3, "ok"), (4, -32601),
                     (5, -32602), (6, "ok"), (7, "ok")], replies
    assert replies[3]["error"]["data"]["requested"] == "v1"
    assert replies[4]["result"]["protocolVersion"] == "2025-11-25"  # newer than ours: ours is offered
    assert replies[7]["result"]["content"][0]["text"] == "gold"
    assert [(e.type, e.data.get("name"), e.data.get("status")) for e in events if e.type.startswith("tool.")] == [
        ("tool.called", "crm.nope", None), ("tool.result", "crm.nope", "failed"),
        ("tool.called", "crm.lookup", None), ("tool.result", "crm.lookup", "completed")]


def test_a_client_that_closes_at_once_ends_the_server() -> None:
    replies, events, _ = asyncio.run(_exchange([]))
    assert replies == [] and events == []


def _call(id_: int, tool: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": tool}}) + "\n"


def test_a_tool_value_json_cannot_hold_never_ends_the_server() -> None:
    tools = (mcp_tool("when", result=lambda args: {"at": datetime.datetime(2020, 1, 1)}),
             mcp_tool("nan", result={"v": float("nan")}),
             mcp_tool("wrapped", result={"content": [{"type": "text", "text": "x"}], "at": datetime.date(2021, 2, 3)}),
             mcp_tool("ping", result="pong"))
    replies, events, _ = asyncio.run(_exchange(
        [_call(1, "when"), _call(2, "nan"), _call(3, "wrapped"), _call(4, "ping"),
         '{"jsonrpc": "2.0", "id": NaN, "method": "ping"}\n', _call(5, "ping")], tools))
    assert [r.get("id") for r in replies] == [1, 2, 3, 4, None, 5], replies
    when = replies[0]["result"]
    assert when["structuredContent"] == {"at": "2020-01-01 00:00:00"}
    assert json.loads(when["content"][0]["text"]) == when["structuredContent"]
    assert replies[1]["error"]["code"] == -32603
    assert "tool nan returned a value that is not JSON" in replies[1]["error"]["message"]
    assert replies[2]["result"]["at"] == "2021-02-03"
    assert replies[3]["result"]["content"][0]["text"] == "pong"
    assert replies[4]["error"]["code"] == -32603 and replies[5]["result"]["content"][0]["text"] == "pong"
    results = {e.data["name"]: e.data for e in events if e.type == "tool.result"}
    assert results["crm.when"]["status"] == "completed"
    assert results["crm.when"]["output"] == {"at": "2020-01-01 00:00:00"}  # what the client got
    assert results["crm.nan"]["status"] == "failed" and "not JSON" in results["crm.nan"]["error"]
    called = [e.data for e in events if e.type == "mock.called" and e.data["tool"] == "nan"]
    assert called[0]["status"] == "failed"


async def _sdk_calls(tools: tuple[McpTool, ...], names: list[str]) -> tuple[list[Any], list[Any]]:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async with _crm(tools) as (server, events):
        params = StdioServerParameters(command=server["command"], args=server["args"])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await asyncio.wait_for(session.initialize(), 20)
            return [await asyncio.wait_for(session.call_tool(n, {}), 20) for n in names], events


def test_the_sdk_client_reads_a_datetime_result_and_the_server_goes_on() -> None:
    tools = (mcp_tool("when", result=lambda args: {"at": datetime.datetime(2020, 1, 1)}),
             mcp_tool("ping", result="pong"))
    (when, ping), events = asyncio.run(_sdk_calls(tools, ["when", "ping"]))
    assert when.structured_content == {"at": "2020-01-01 00:00:00"} and not when.is_error
    assert ping.content[0].text == "pong"
    outputs = [e.data["output"] for e in events if e.type == "tool.result"]
    assert outputs == [when.structured_content, "pong"]


def test_a_protocol_version_that_is_no_real_date_is_unsupported() -> None:
    def init(id_: int, version: str) -> str:
        return json.dumps({"jsonrpc": "2.0", "id": id_, "method": "initialize",
                           "params": {"protocolVersion": version}}) + "\n"

    replies, _, _ = asyncio.run(_exchange([init(1, "2025-13-45"), init(2, "2026-02-30"), init(3, "2026-02-28")]))
    assert [r["error"]["message"] for r in replies[:2]] == ["Unsupported protocol version"] * 2, replies
    assert replies[0]["error"]["code"] == -32602 and replies[0]["error"]["data"]["requested"] == "2025-13-45"
    assert replies[2]["result"]["protocolVersion"] == "2025-11-25"  # a real, newer date: ours is offered
