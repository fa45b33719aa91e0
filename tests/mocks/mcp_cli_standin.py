#!/usr/bin/env python3
"""A coding CLI that calls an MCP server for real (installed as ``claude``, ``codex``, ``gemini``
or ``opencode``): it finds the ``crm`` server where its CLI reads its MCP configuration, starts
it, calls ``lookup`` over JSON-RPC on stdio, and reports that call in its own stream, in its CLI's
spelling, the way the CLI does — the call announced before it runs where the CLI does so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib

NAME = os.path.basename(sys.argv[0])
HOME = os.environ["HOME"]
ARGS = {"email": "ada@example.com"}


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def server() -> list[str]:
    if "--version" in sys.argv:
        print("1.0.0")
        sys.exit(0)
    if NAME == "claude":
        with open(sys.argv[sys.argv.index("--mcp-config") + 1]) as f:
            s = json.load(f)["mcpServers"]["crm"]
        return [s["command"], *s.get("args", [])]
    if NAME == "codex":
        with open(os.path.join(HOME, ".codex", "config.toml"), "rb") as f:
            s = tomllib.load(f)["mcp_servers"]["crm"]
        return [s["command"], *s.get("args", [])]
    if NAME == "gemini":
        with open(os.path.join(HOME, ".gemini", "settings.json")) as f:
            s = json.load(f)["mcpServers"]["crm"]
        return [s["command"], *s.get("args", [])]
    with open(os.path.join(HOME, ".config", "opencode", "opencode.json")) as f:
        return list(json.load(f)["mcp"]["crm"]["command"])


def call_lookup(argv: list[str]) -> str:
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None

    def rpc(message: dict) -> dict | None:
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        return json.loads(proc.stdout.readline()) if "id" in message else None

    rpc({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": NAME, "version": "1"}}})
    rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})
    answer = rpc({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "lookup", "arguments": ARGS}})
    proc.stdin.close()
    proc.wait(timeout=10)
    return answer["result"]["content"][0]["text"]  # type: ignore[index]


def main() -> None:
    argv = server()
    if NAME == "claude":
        emit({"type": "system", "subtype": "init", "session_id": "s1", "tools": ["mcp__crm__lookup"]})
        emit({"type": "assistant", "session_id": "s1", "message": {"id": "m1", "role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "mcp__crm__lookup", "input": ARGS}]}})
        text = call_lookup(argv)
        emit({"type": "user", "session_id": "s1", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": text}]}})
        emit({"type": "result", "subtype": "success", "is_error": False, "result": f"found: {text}",
              "session_id": "s1", "num_turns": 2})
    elif NAME == "codex":
        emit({"type": "thread.started", "thread_id": "t1"})
        emit({"type": "turn.started"})
        item = {"id": "item_0", "type": "mcp_tool_call", "server": "crm", "tool": "lookup", "arguments": ARGS,
                "result": None, "error": None, "status": "in_progress"}
        emit({"type": "item.started", "item": item})
        text = call_lookup(argv)
        emit({"type": "item.completed", "item": {**item, "status": "completed",
                                                 "result": {"content": [{"type": "text", "text": text}]}}})
        emit({"type": "item.completed", "item": {"id": "item_1", "type": "agent_message", "text": f"found: {text}"}})
        emit({"type": "turn.completed", "usage": {"input_tokens": 10, "cached_input_tokens": 0, "output_tokens": 2}})
    elif NAME == "gemini":
        emit({"type": "init", "session_id": "g1", "model": "gemini-2.5-flash"})
        # Gemini CLI registers an MCP tool under its bare name when no other tool has it.
        emit({"type": "tool_use", "tool_name": "lookup", "tool_id": "lookup_1", "parameters": ARGS})
        text = call_lookup(argv)
        emit({"type": "tool_result", "tool_id": "lookup_1", "status": "success", "output": text})
        emit({"type": "message", "role": "assistant", "content": f"found: {text}", "delta": True})
        emit({"type": "result", "status": "success", "stats": {"input_tokens": 10, "output_tokens": 2}})
    else:  # opencode prints a tool call once it has finished
        text = call_lookup(argv)
        sid = "ses_1"
        emit({"type": "step_start", "sessionID": sid, "part": {"type": "step-start", "sessionID": sid}})
        emit({"type": "tool_use", "sessionID": sid, "part": {"type": "tool", "tool": "crm_lookup", "callID": "call_0",
              "state": {"status": "completed", "input": ARGS, "output": text}}})
        emit({"type": "text", "sessionID": sid, "part": {"type": "text", "text": f"found: {text}"}})
        emit({"type": "step_finish", "sessionID": sid, "part": {"type": "step-finish", "reason": "stop",
              "tokens": {"input": 10, "output": 2}, "cost": 0}})


main()
