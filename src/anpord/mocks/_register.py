"""The trial's MCP mocks, registered with a coding CLI in its own documented configuration.

- Claude Code: ``--mcp-config <file>`` takes the standard ``mcpServers`` JSON as it is;
- Gemini CLI: ``mcpServers`` in ``~/.gemini/settings.json``;
- Codex: ``[mcp_servers.<name>]`` tables in ``~/.codex/config.toml``;
- OpenCode: ``mcp.<name> = {"type": "local", "command": [...]}`` in ``~/.config/opencode/opencode.json``.

HOME is the trial's own; a file the profile put there keeps its other settings (the servers are
merged in, a server of the same name replaced).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["register_mcp"]


def _servers(config: str) -> dict[str, dict[str, Any]]:
    try:
        return dict(json.loads(Path(config).read_text(encoding="utf-8")).get("mcpServers") or {})
    except (OSError, ValueError, AttributeError):
        return {}


def _merge_json(path: Path, key: str, entries: dict[str, Any]) -> None:
    try:
        current = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(current, dict):
            current = {}
    except (OSError, ValueError):
        current = {}
    section = current.get(key) if isinstance(current.get(key), dict) else {}
    current[key] = {**section, **entries}  # type: ignore[dict-item]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(current, indent=2), encoding="utf-8")


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


def _codex(path: Path, servers: dict[str, dict[str, Any]]) -> None:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        text = ""
    for name, server in servers.items():
        header = f"[mcp_servers.{name}]"
        if header in text:
            continue  # registered by an earlier session of the trial (or the profile's own)
        args = ", ".join(_toml_string(a) for a in server.get("args", []))
        text += f"\n{header}\ncommand = {_toml_string(server['command'])}\nargs = [{args}]\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def register_mcp(cli: str, config: str, home: Path) -> tuple[str, ...]:
    """Register the servers of the ``mcpServers`` file ``config`` with coding CLI ``cli``: the
    arguments to add to its command line (files under ``home`` are written as needed)."""
    if cli == "claude":
        return ("--mcp-config", config)
    servers = _servers(config)
    if not servers:
        return ()
    if cli == "gemini":
        _merge_json(home / ".gemini" / "settings.json", "mcpServers", servers)
    elif cli == "codex":
        _codex(home / ".codex" / "config.toml", servers)
    elif cli == "opencode":
        _merge_json(home / ".config" / "opencode" / "opencode.json", "mcp", {
            name: {"type": "local", "command": [s["command"], *s.get("args", [])], "enabled": True}
            for name, s in servers.items()})
    return ()
