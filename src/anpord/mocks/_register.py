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


def _without_table(text: str, name: str) -> str:
    """``text`` without the ``[mcp_servers.<name>]`` table (and its sub-tables, such as its
    ``env``): every line from its header to the next table's."""
    heads = (f"[mcp_servers.{name}]", f'[mcp_servers."{name}"]', f"[mcp_servers.{name}.",
             f'[mcp_servers."{name}".')
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        bare = line.strip()
        if bare.startswith("["):
            skipping = bare.startswith(heads)
        if not skipping:
            kept.append(line)
    return "".join(kept)


def _codex_config(text: str, servers: dict[str, dict[str, Any]], where: str) -> str:
    """Codex's ``config.toml`` with each server as the trial's mock: a server of the same name
    (the profile's own, or an earlier session's) is replaced, everything else kept as written.
    The file is read as TOML, so a table named only in a comment or a string counts for nothing;
    ``ValueError`` when it is not TOML, or defines a same-name server in a form (an inline
    table, dotted keys) that cannot be replaced line by line."""
    import tomllib

    def parsed(body: str) -> dict[str, Any]:
        try:
            return tomllib.loads(body)
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"{where} is not TOML ({exc}): the MCP mocks cannot be registered") from None

    current = parsed(text).get("mcp_servers")
    for name, server in servers.items():
        wanted = {"command": server["command"], "args": list(server.get("args", []))}
        if isinstance(current, dict) and name in current:
            if current[name] == wanted:
                continue  # registered by an earlier session of the trial
            text = _without_table(text, name)
        args = ", ".join(_toml_string(a) for a in wanted["args"])
        text += f"\n[mcp_servers.{name}]\ncommand = {_toml_string(wanted['command'])}\nargs = [{args}]\n"
    try:
        final = tomllib.loads(text).get("mcp_servers") or {}
    except tomllib.TOMLDecodeError:  # a same-name server left in place clashes with ours
        final = {}
    for name, server in servers.items():
        if final.get(name) != {"command": server["command"], "args": list(server.get("args", []))}:
            raise ValueError(f"{where} defines MCP server {name!r} in a form that cannot be replaced by the "
                             f"trial's mock (write it as a [mcp_servers.{name}] table, or rename the mock)")
    return text


async def _codex(files: SandboxFiles, path: Path, servers: dict[str, dict[str, Any]]) -> None:
    text = await _read_text(files, path) or ""
    await files.write_file(path, _codex_config(text, servers, str(path)).encode("utf-8"))


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
