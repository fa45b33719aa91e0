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

__all__ = ["RegistrationError", "register_mcp"]


class RegistrationError(ValueError):
    """The CLI's configuration cannot take the trial's MCP mocks; ``file``: which one, relative to
    the trial's HOME (a profile's ``home/`` may have put it there)."""

    def __init__(self, message: str, file: str):
        super().__init__(message)
        self.file = file


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


def _without_comments(text: str) -> str:
    """JSON with comments (``//``, ``/* */``) and trailing commas, as Gemini CLI and OpenCode read
    their settings, as plain JSON: what is inside strings is kept as written."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            i = text.find("\n", i)
            i = n if i < 0 else i
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            if c in "}]":  # a trailing comma before it (comments are gone by now) is dropped
                k = len(out) - 1
                while k >= 0 and out[k].isspace():
                    k -= 1
                if k >= 0 and out[k] == ",":
                    del out[k]
            out.append(c)
            i += 1
    return "".join(out)


async def _merge_json(files: SandboxFiles, home: Path, file: str, key: str, entries: dict[str, Any]) -> None:
    """``entries`` merged into the ``key`` object of the JSON file ``home/file``, everything else
    kept; ``RegistrationError`` when the file there is not a JSON object (it would be lost)."""
    text = await _read_text(files, home / file)
    try:
        current = json.loads(_without_comments(text)) if text and text.strip() else {}
    except ValueError as exc:
        raise RegistrationError(f"~/{file} is not JSON ({exc}): the MCP mocks cannot be registered", file) from None
    if not isinstance(current, dict) or not isinstance(current.get(key, {}), dict):
        raise RegistrationError(f"~/{file} does not hold a JSON object with {key!r} an object: "
                                "the MCP mocks cannot be registered", file)
    current[key] = {**current.get(key, {}), **entries}
    await files.write_file(home / file, json.dumps(current, indent=2).encode("utf-8"))


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
    ``RegistrationError`` when it is not TOML, or defines a same-name server in a form (an inline
    table, dotted keys) that cannot be replaced line by line."""
    import tomllib

    def parsed(body: str) -> dict[str, Any]:
        try:
            return tomllib.loads(body)
        except tomllib.TOMLDecodeError as exc:
            raise RegistrationError(f"{where} is not TOML ({exc}): the MCP mocks cannot be registered",
                                    _CODEX) from None

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
            raise RegistrationError(f"{where} defines MCP server {name!r} in a form that cannot be replaced by "
                                    f"the trial's mock (write it as a [mcp_servers.{name}] table, or rename the mock)",
                                    _CODEX)
    return text


_CODEX = ".codex/config.toml"


async def _codex(files: SandboxFiles, home: Path, servers: dict[str, dict[str, Any]]) -> None:
    path = home / _CODEX
    text = await _read_text(files, path) or ""
    await files.write_file(path, _codex_config(text, servers, f"~/{_CODEX}").encode("utf-8"))


async def register_mcp(cli: str, config: str, home: Path, files: SandboxFiles) -> tuple[str, ...]:
    """Register the servers of the ``mcpServers`` file ``config`` with coding CLI ``cli``: the
    arguments to add to its command line (files under ``home`` are written as needed). Every
    file is read and written through ``files`` (the trial's sandbox): the paths are the ones
    its programs see. ``RegistrationError`` when a file there cannot take them."""
    if cli == "claude":
        return ("--mcp-config", config)
    servers = await _servers(files, config)
    if not servers:
        return ()
    if cli == "gemini":
        await _merge_json(files, home, ".gemini/settings.json", "mcpServers", servers)
    elif cli == "codex":
        await _codex(files, home, servers)
    elif cli == "opencode":
        await _merge_json(files, home, ".config/opencode/opencode.json", "mcp", {
            name: {"type": "local", "command": [s["command"], *s.get("args", [])], "enabled": True}
            for name, s in servers.items()})
    return ()
