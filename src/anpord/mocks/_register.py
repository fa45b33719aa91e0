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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sandboxes._protocol import SandboxFiles

__all__ = ["register_mcp"]


async def _read_text(files: SandboxFiles, path: str | Path) -> str | None:
    try:
        return (await files.read_file(path)).decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


async def _servers(files: SandboxFiles, config: str) -> dict[str, dict[str, Any]]:
    try:
        return dict(json.loads(await _read_text(files, config) or "{}").get("mcpServers") or {})
    except (ValueError, AttributeError):
        return {}


async def _merge_json(files: SandboxFiles, path: Path, key: str, entries: dict[str, Any]) -> None:
    try:
        current = json.loads(await _read_text(files, path) or "{}")
        if not isinstance(current, dict):
            current = {}
    except ValueError:
        current = {}
    section = current.get(key) if isinstance(current.get(key), dict) else {}
    current[key] = {**section, **entries}  # type: ignore[dict-item]
    await files.write_file(path, json.dumps(current, indent=2).encode("utf-8"))


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string


async def _codex(files: SandboxFiles, path: Path, servers: dict[str, dict[str, Any]]) -> None:
    text = await _read_text(files, path) or ""
    for name, server in servers.items():
        header = f"[mcp_servers.{name}]"
        if header in text:
            continue  # registered by an earlier session of the trial (or the profile's own)
        args = ", ".join(_toml_string(a) for a in server.get("args", []))
        text += f"\n{header}\ncommand = {_toml_string(server['command'])}\nargs = [{args}]\n"
    await files.write_file(path, text.encode("utf-8"))


async def register_mcp(cli: str, config: str, home: Path, files: SandboxFiles) -> tuple[str, ...]:
    """Register the servers of the ``mcpServers`` file ``config`` with coding CLI ``cli``: the
    arguments to add to its command line (files under ``home`` are written as needed). Every
    file is read and written through ``files`` (the trial's sandbox): the paths are the ones
    its programs see."""
    if cli == "claude":
        return ("--mcp-config", config)
    servers = await _servers(files, config)
    if not servers:
        return ()
    if cli == "gemini":
        await _merge_json(files, home / ".gemini" / "settings.json", "mcpServers", servers)
    elif cli == "codex":
        await _codex(files, home / ".codex" / "config.toml", servers)
    elif cli == "opencode":
        await _merge_json(files, home / ".config" / "opencode" / "opencode.json", "mcp", {
            name: {"type": "local", "command": [s["command"], *s.get("args", [])], "enabled": True}
            for name, s in servers.items()})
    return ()
