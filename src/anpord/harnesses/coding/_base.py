"""What every coding-agent stream parser shares: line handling, raw events, paths, exit codes.

A parser reads one CLI run's stdout, line by line. The rules common to all of them live here:

- a blank line is nothing; a line that is not a JSON object is a ``log`` event (stream
  ``stdout``) holding the line, so nothing the CLI printed is lost;
- a JSON object is handed to the parser's ``handle(kind, obj)`` whatever its key order, with
  ``kind`` its string ``type`` (None when it has none);
- a line the parser does not map onto anpord events is kept as a raw event, ``<cli>.<type>``
  with the object under ``raw`` (``claude.rate_limit_event``), or ``<cli>.untyped`` for an
  object without a ``type`` (each parser returns ``self.raw(...)`` for such lines);
- a line of a shape the parser did not expect (a string where an object should be) is kept raw
  too, with the reason, instead of stopping the run.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
from collections.abc import Iterable, Mapping
from typing import Any

from ...events import (
    COMMAND_COMPLETED,
    FILES_CHANGED,
    LOG,
    MESSAGE_COMPLETED,
    TOOL_CALLED,
    TOOL_RESULT,
    Event,
)
from .._stream import TurnEnd
from ._usage import UsageMeter

__all__ = [
    "JsonStreamParser",
    "as_dict",
    "as_int",
    "as_list",
    "as_str",
    "exit_code_in",
    "patch_paths",
    "text_of",
    "unwrap_shell",
]

# A message assembled from many lines (deltas) keeps at most this much text.
MESSAGE_CAP = 4 << 20
_NO_JSON = object()


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def as_int(value: Any) -> int | None:
    # bool is an int in Python; a JSON true is never a count or an exit code.
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def text_of(value: Any) -> str:
    """Tool output as text: a string is itself; a list of content blocks is its text blocks, one per
    line (non-text blocks are named); anything else is compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for block in value:
            if isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif isinstance(block, dict) and isinstance(block.get("type"), str):
                parts.append(f"[{block['type']}]")
            elif isinstance(block, str):
                parts.append(block)
        return "\n".join(parts)
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


_EXIT_CODE = re.compile(
    r"(?:^|\n)\s*(?:Error:\s*)?(?:Exit code|Exit Code:|Command exited with code:?|exited with code)\s*(-?\d+)\b"
)


def exit_code_in(text: str | None) -> int | None:
    """An exit code a CLI wrote into a tool's text ("Exit code 2", "Exit Code: 2", "Command exited
    with code: 2"), or None when the text names none."""
    if not text:
        return None
    m = _EXIT_CODE.search(text)
    return int(m.group(1)) if m else None


_SHELLS = {"bash", "sh", "zsh", "/bin/bash", "/bin/sh", "/bin/zsh", "/usr/bin/bash", "/usr/bin/zsh"}


def unwrap_shell(command: Any) -> str:
    """The script a CLI ran through a shell: ``bash -lc 'cat a.js'`` (or the same as an argv list)
    is ``cat a.js``; any other command is itself, joined with shell quoting when it is a list."""
    if isinstance(command, list):
        argv = [str(a) for a in command]
    elif isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError:
            return command
    else:
        return text_of(command)
    if len(argv) == 3 and argv[0] in _SHELLS and argv[1] in ("-c", "-lc", "-l", "-cl"):
        return argv[2]
    if isinstance(command, str):
        return command
    return shlex.join(argv)


_PATCH_HEADER = re.compile(
    r"^\*\*\* (?:Add|Update|Delete) File: (.+?)\s*$|^\*\*\* Move to: (.+?)\s*$", re.MULTILINE
)


def patch_paths(patch: str) -> list[str]:
    """The files an ``apply_patch`` envelope (``*** Add File: x`` …) touches, in order."""
    out: list[str] = []
    for m in _PATCH_HEADER.finditer(patch or ""):
        path = m.group(1) or m.group(2)
        if path and path not in out:
            out.append(path)
    return out


class JsonStreamParser:
    """The line handling every CLI parser shares; subclasses implement ``handle`` and ``end``.

    ``workspace`` is the folder the CLI runs in, as the CLI sees it: file paths under it are
    reported relative to it (``files.changed`` paths are workspace-relative); a CLI that reports its
    own working folder (Claude Code's ``init``) fills it in when it was not given.
    """

    cli = "cli"

    def __init__(self, *, workspace: str | os.PathLike[str] | None = None):
        self.workspace = posixpath.normpath(os.fspath(workspace)) if workspace else None
        self.usage = UsageMeter()
        self.message: str | None = None  # the final answer so far
        self.session_id: str | None = None
        self.lines = 0

    # -- the StreamParser protocol ------------------------------------------------------------

    def feed(self, line: str) -> list[Event]:
        text = line.strip()
        if not text:
            return []
        self.lines += 1
        obj = _load(text) if text[0] == "{" else _NO_JSON
        if not isinstance(obj, dict):
            return [Event(LOG, {"message": line.rstrip("\r\n"), "stream": "stdout"})]
        kind = obj.get("type")
        kind = kind if isinstance(kind, str) and kind else None
        try:
            return self.handle(kind, obj)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            # A shape this parser did not expect: keep the line and say why, never stop the run.
            return [self.raw(kind, obj, error=f"{type(exc).__name__}: {exc}")]

    def finish(self, exit_code: int | None) -> TurnEnd:
        return self.end(exit_code)

    # -- for subclasses ------------------------------------------------------------------------

    def handle(self, kind: str | None, obj: dict[str, Any]) -> list[Event]:
        raise NotImplementedError

    def end(self, exit_code: int | None) -> TurnEnd:
        raise NotImplementedError

    def raw(self, kind: str | None, obj: Mapping[str, Any], **extra: Any) -> Event:
        return Event(f"{self.cli}.{kind or 'untyped'}", {"raw": obj, **extra})

    def ended_early(self, final: str, exit_code: int | None, cause: str | None = None) -> TurnEnd:
        """The turn of a stream that stopped before its final event: failed, naming why."""
        how = "was killed" if exit_code is None else f"exited with code {exit_code}"
        error = f"{self.cli} {how} before its final {final} event"
        if cause:
            error += f" (last error: {cause})"
        return TurnEnd(
            "failed",
            message=self.message,
            error=error,
            resume=self.session_id,
            usage=self.usage.totals(),
        )

    def relative(self, path: Any) -> str | None:
        """A path as ``files.changed`` reports it: workspace-relative when under the workspace,
        normalised; absolute when outside it."""
        if not isinstance(path, str) or not path.strip():
            return None
        path = path.strip()
        path = path.removeprefix("file://")
        norm = posixpath.normpath(path)
        if not posixpath.isabs(norm):
            return norm
        if self.workspace:
            if norm == self.workspace:
                return "."
            if norm.startswith(self.workspace.rstrip("/") + "/"):
                return posixpath.relpath(norm, self.workspace)
        return norm

    def files_changed(self, paths: Iterable[Any]) -> list[Event]:
        out: list[str] = []
        for p in paths:
            rel = self.relative(p)
            if rel is not None and rel not in out:
                out.append(rel)
        return [Event(FILES_CHANGED, {"paths": out})] if out else []

    def assistant(self, text: str) -> Event:
        self.message = text
        return Event(MESSAGE_COMPLETED, {"role": "assistant", "text": text})

    @staticmethod
    def tool_called(call_id: str, name: str, input: Any, **extra: Any) -> Event:
        return Event(TOOL_CALLED, {"call_id": call_id, "name": name, "input": input, **extra})

    @staticmethod
    def tool_result(
        call_id: str,
        name: str | None,
        output: Any,
        *,
        failed: bool,
        error: str | None = None,
        **extra: Any,
    ) -> Event:
        data = {
            "call_id": call_id,
            "name": name,
            "output": output,
            "status": "failed" if failed else "completed",
            "error": (error or text_of(output) or None) if failed else None,
            **extra,
        }
        return Event(TOOL_RESULT, data)

    @staticmethod
    def command(command: str, exit_code: int | None, output: str, **extra: Any) -> Event:
        return Event(
            COMMAND_COMPLETED,
            {"command": command, "exit_code": exit_code, "output": output, **extra},
        )


def _load(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # cut, garbled, or absurdly deep: not an event
        return _NO_JSON
