"""An MCP mock's server process (the relay, a real subprocess) faced with a client that does
things wrong: every message gets an answer or is a notification — never a hang."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from anpord import Variant
from anpord.mocks import mcp_mock, mcp_tool
from anpord.mocks._service import MockService
from anpord.runner._services import ServiceContext


async def _exchange(lines: list[str]) -> tuple[list[dict[str, Any]], list[Any], float]:
    service = MockService((mcp_mock("crm", tools=[mcp_tool("lookup", result="gold")]),))
    events: list[Any] = []
    await service.start(ServiceContext(variant=Variant(), label="t", sandbox=None, log=lambda m: None,
                                       record=events.append))
    try:
        server = service.handles["crm"].mcp_server
        assert server is not None
        started = time.monotonic()
        proc = await asyncio.create_subprocess_exec(server["command"], *server["args"],
                                                    stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        assert proc.stdin is not None
        proc.stdin.write("".join(lines).encode())
        await proc.stdin.drain()
        proc.stdin.close()
        out, _ = await asyncio.wait_for(proc.communicate(), 20)
        return [json.loads(line) for line in out.decode().splitlines()], events, time.monotonic() - started
    finally:
        await service.stop()


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
