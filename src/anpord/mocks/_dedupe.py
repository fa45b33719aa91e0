"""One ``tool.called``/``tool.result`` pair per MCP call, named ``<server>.<tool>``, in every
harness.

A coding CLI that calls an ``mcp_mock`` reports the call in its own stream, and the mock records
it too. Each CLI spells the name its own way: Claude Code ``mcp__<server>__<tool>``, Codex an
item with ``server`` and ``tool``, Gemini CLI the bare ``<tool>`` (``<server>__<tool>`` when
another server has a tool of that name), OpenCode ``<server>_<tool>``. The parsers put the unambiguous spellings as ``<server>.<tool>``
(``mcp_name``); ``McpDedupe`` does the rest for the trial's own mock servers, then pairs each
stream call with the mock's record of it (same name, the same input first, else the oldest):
whichever of the two arrived first is kept, the other — and its result — is dropped. A stream
call the mock never saw (the CLI refused it) stays, so nothing the agent tried goes unrecorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..events import TOOL_CALLED, TOOL_RESULT, Event

__all__ = ["McpDedupe", "mcp_name"]


def mcp_name(name: str, server: str | None = None) -> str:
    """``<server>.<tool>`` for a CLI's spelling of an MCP tool that says its server unambiguously
    (``mcp__crm__lookup``; Codex's ``server`` and ``tool``), else ``name`` as it came."""
    if server:
        return f"{server}.{name}"
    if name.startswith("mcp__"):
        srv, sep, tool = name[5:].partition("__")
        if sep and srv and tool:
            return f"{srv}.{tool}"
    return name


def _key(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


class McpDedupe:
    """Decides, event by event, what of a trial's MCP tool events is kept (see the module)."""

    def __init__(self, servers: Mapping[str, Sequence[str]], *, bare: bool = False):
        # server -> its tools' names; the longest server names first, so "crm_eu" wins over "crm".
        self.servers = dict(sorted(servers.items(), key=lambda kv: -len(kv[0])))
        # A CLI that names an MCP tool by its bare name (Gemini CLI): a tool name only one mock
        # server has is that server's.
        self._bare: dict[str, str] = {}
        if bare:
            owners: dict[str, list[str]] = {}
            for server, tools in self.servers.items():
                for tool in tools:
                    owners.setdefault(tool, []).append(server)
            self._bare = {tool: f"{s[0]}.{tool}" for tool, s in owners.items() if len(s) == 1}
        # Calls seen from one side only, by name: (call id, input key), oldest first.
        self._open: dict[tuple[bool, str], list[tuple[str, str]]] = {}
        self._dropped: set[tuple[bool, str]] = set()  # (from the mock, call id)
        self._renamed: dict[str, str] = {}  # a stream call id -> its <server>.<tool> name

    def _canonical(self, name: str) -> str:
        head, dot, rest = name.partition(".")
        if head in self.servers:
            return name
        if dot:  # ``mcp_name`` split at the first "__" of a server named with one ("my__crm")
            name = f"mcp__{head}__{rest}"
        for prefix in ("mcp__", "mcp_", ""):
            if not name.startswith(prefix):
                continue
            rest = name[len(prefix):]
            for server, tools in self.servers.items():
                for sep in ("__", "_"):
                    head = server + sep
                    if rest.startswith(head) and rest[len(head):] in tools:
                        return f"{server}.{rest[len(head):]}"
        return self._bare.get(name, name)

    def admit(self, event: Event) -> Event | None:
        """``event`` as it is to be recorded (a stream call renamed), or None to drop it."""
        if event.type not in (TOOL_CALLED, TOOL_RESULT):
            return event
        data = event.data
        mock = data.get("source") == "mock"
        call_id = str(data.get("call_id"))
        if event.type == TOOL_RESULT:
            if (mock, call_id) in self._dropped:
                return None
            name = self._renamed.get(call_id) if not mock else None
            return event if name is None else Event(event.type, {**data, "name": name}, event.ts)
        raw = data.get("name")
        if not isinstance(raw, str):
            return event
        name = raw if mock else self._canonical(raw)
        if name.partition(".")[0] not in self.servers:
            return event
        if name != raw:
            self._renamed[call_id] = name
            event = Event(event.type, {**data, "name": name}, event.ts)
        key = _key(data.get("input") or {})
        other = self._open.get((not mock, name))
        if other:
            pick = next((i for i, (_cid, k) in enumerate(other) if k == key), 0)
            other.pop(pick)
            self._dropped.add((mock, call_id))  # the same call, recorded already by the other side
            return None
        self._open.setdefault((mock, name), []).append((call_id, key))
        return event


def mcp_servers(mocks: Iterable[Any]) -> dict[str, list[str]]:
    """The MCP mocks among a trial's mocks: server name -> tool names."""
    from ._declare import McpMock

    return {m.name: [t.name for t in m.tools] for m in mocks if isinstance(m, McpMock)}
