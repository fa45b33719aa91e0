"""An MCP mock's server side: JSON-RPC 2.0 over the relay's stream, one message a line (the
protocol's stdio transport), answering ``initialize``, ``ping``, ``tools/list`` and
``tools/call``. Anything else gets a JSON-RPC error, never silence: a client that sends garbage
or an unknown protocol version is told so at once."""

from __future__ import annotations

import asyncio
import datetime
import json
import re
import secrets
from collections.abc import Callable
from typing import Any

from .._errors import exception_line
from ._calls import call_user
from ._declare import McpMock, McpTool

__all__ = ["serve_mcp", "PROTOCOL_VERSIONS"]

# Oldest first; the last is what a client asking for a newer (dated) version is offered, as the
# protocol's version negotiation says.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
_DATED = re.compile(r"^\d{4}-\d{2}-\d{2}$")
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
MAX_LINE = 16 << 20
OUTPUT_KEPT = 64 * 1024

Record = Callable[[str, dict[str, Any]], None]  # (event type, data)


def _error(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    err: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        err["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": err}


def _is_date(version: str) -> bool:
    """A version as the protocol dates them: ``YYYY-MM-DD``, a real day (not ``2025-13-45``)."""
    if not _DATED.match(version):
        return False
    try:
        datetime.date.fromisoformat(version)
    except ValueError:
        return False
    return True


def _initialize(mock: McpMock, params: Any) -> dict[str, Any] | tuple[int, str, Any]:
    version = params.get("protocolVersion") if isinstance(params, dict) else None
    if not isinstance(version, str):
        return (INVALID_PARAMS, "initialize needs params.protocolVersion", {"supported": list(PROTOCOL_VERSIONS)})
    if version not in PROTOCOL_VERSIONS:
        if not _is_date(version) or version < PROTOCOL_VERSIONS[0]:
            return (INVALID_PARAMS, "Unsupported protocol version",
                    {"supported": list(PROTOCOL_VERSIONS), "requested": version})
        version = PROTOCOL_VERSIONS[-1]  # newer than ours: ours is offered; the client decides
    return {"protocolVersion": version, "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": mock.name, "version": "anpord-mock"}}


class NotJson(ValueError):
    """A tool's value that no JSON can carry (NaN, infinity)."""


def _json_safe(value: Any) -> Any:
    """``value`` as the client will read it: what JSON cannot hold becomes its ``str`` (a
    ``datetime``, a ``Decimal``), as in the text; NaN and infinity, which JSON has no spelling
    for, are refused rather than sent as the non-JSON ``NaN``."""
    try:
        return json.loads(json.dumps(value, ensure_ascii=False, default=str, allow_nan=False))
    except ValueError as exc:
        raise NotJson(str(exc)) from None


def _content(value: Any) -> tuple[dict[str, Any], Any]:
    """The MCP tool result for a tool's value, and the value as the record keeps it."""
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}, value
    safe = _json_safe(value)
    if isinstance(safe, dict) and isinstance(safe.get("content"), list):
        return safe, safe  # already an MCP tool result
    out: dict[str, Any] = {"content": [{"type": "text", "text": json.dumps(safe, ensure_ascii=False)}]}
    if isinstance(safe, dict):
        out["structuredContent"] = safe
    return out, safe


async def _call_tool(mock: McpMock, params: Any, record: Record) -> dict[str, Any] | tuple[int, str, Any]:
    if not isinstance(params, dict) or not isinstance(params.get("name"), str):
        return (INVALID_PARAMS, "tools/call needs params.name", None)
    tool: McpTool | None = next((t for t in mock.tools if t.name == params["name"]), None)
    args = params.get("arguments") or {}
    full = f"{mock.name}.{params['name']}"
    call_id = f"mcp-{secrets.token_hex(6)}"
    record("tool.called", {"call_id": call_id, "name": full, "input": args, "source": "mock"})
    call = {"mock": mock.name, "kind": "mcp", "tool": params["name"], "input": args}
    if tool is None:
        why = f"unknown tool {params['name']!r} (tools: {', '.join(t.name for t in mock.tools) or 'none'})"
        _failed(record, call, call_id, full, why)
        return (INVALID_PARAMS, f"Unknown tool: {params['name']}", None)
    try:
        value = await call_user(tool.result, args) if callable(tool.result) else tool.result
        result, output = _content(value)
    except asyncio.CancelledError:
        raise
    except NotJson as exc:  # no tool result can carry it: the request fails, saying why
        why = f"tool {params['name']} returned a value that is not JSON: {exc}"
        _failed(record, call, call_id, full, why)
        return (INTERNAL_ERROR, why, None)
    except Exception as exc:  # noqa: BLE001 - a tool function that raised is a tool error
        why = f"tool {params['name']} raised {exception_line(exc)}"
        _failed(record, call, call_id, full, why)
        return {"content": [{"type": "text", "text": why}], "isError": True}
    record("tool.result", {"call_id": call_id, "name": full, "output": output, "status": "completed",
                           "error": None, "source": "mock"})
    record("mock.called", {**call, "output": output, "status": "completed", "error": None})
    return result


def _failed(record: Record, call: dict[str, Any], call_id: str, full: str, why: str) -> None:
    record("tool.result", {"call_id": call_id, "name": full, "output": None, "status": "failed",
                           "error": why, "source": "mock"})
    record("mock.called", {**call, "output": None, "status": "failed", "error": why})


async def _answer(mock: McpMock, message: Any, record: Record) -> dict[str, Any] | None:
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
        if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
            return None  # a client's answer to a request of ours: we send none
        return _error(message.get("id") if isinstance(message, dict) else None, INVALID_REQUEST,
                      "Invalid Request: a JSON-RPC 2.0 request object was expected")
    method, id_, params = message["method"], message.get("id"), message.get("params")
    if "id" not in message:
        return None  # a notification (notifications/initialized, cancelled...): no answer
    out: dict[str, Any] | tuple[int, str, Any]
    if method == "initialize":
        out = _initialize(mock, params)
    elif method == "ping":
        out = {}
    elif method == "tools/list":
        out = {"tools": [{"name": t.name, "description": t.description, "inputSchema": t.schema}
                         for t in mock.tools]}
    elif method == "tools/call":
        out = await _call_tool(mock, params, record)
    elif method in ("resources/list", "prompts/list"):
        out = {method.split("/")[0]: []}
    else:
        out = (METHOD_NOT_FOUND, f"Method not found: {method}", None)
    if isinstance(out, tuple):
        return _error(id_, *out)
    return {"jsonrpc": "2.0", "id": id_, "result": out}


def _line(reply: dict[str, Any]) -> bytes:
    """One message as the transport carries it: JSON on one line, always. A reply JSON cannot
    hold (a NaN id) becomes an error saying so, so no value ever ends the server; a lone surrogate
    (a string cut mid-emoji) is sent escaped."""
    try:
        text = json.dumps(reply, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        id_ = reply.get("id")
        text = json.dumps(_error(id_ if isinstance(id_, (str, int)) else None, INTERNAL_ERROR,
                                 f"Internal error: the answer is not JSON: {exc}"))
    try:
        return text.encode() + b"\n"
    except UnicodeEncodeError:
        return json.dumps(json.loads(text)).encode() + b"\n"


async def serve_mcp(mock: McpMock, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    record: Record) -> None:
    """Answer one client until it closes its end."""
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
            if not line.strip():
                return
        except asyncio.LimitOverrunError:
            writer.write(json.dumps(_error(None, PARSE_ERROR, f"a message over {MAX_LINE} bytes")).encode() + b"\n")
            await writer.drain()
            return
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError as exc:
            reply: dict[str, Any] | None = _error(None, PARSE_ERROR, f"Parse error: {exc}")
        else:
            if isinstance(message, list):
                reply = _error(None, INVALID_REQUEST, "Invalid Request: batches are not supported")
            else:
                reply = await _answer(mock, message, record)
        if reply is not None:
            writer.write(_line(reply))
            await writer.drain()
