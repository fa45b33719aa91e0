"""Harnesses run the agent under test. ``resolve_harness(spec)`` turns a spec string into one:
``python:pkg.mod:attr``, ``command:<shell command>``, or a coding-agent CLI by name (``claude``,
``codex``, ``gemini``, ``opencode``, or ``claude:/path/to/claude``)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from ._profile import Profile, ProfileError, load_profile
from ._protocol import (
    Emit,
    Harness,
    HarnessContext,
    HarnessSession,
    HarnessSpecError,
    HarnessStartError,
    InputResponse,
    TurnOutcome,
    TurnRequest,
)

__all__ = [
    "Emit",
    "Harness",
    "HarnessContext",
    "HarnessSession",
    "HarnessSpecError",
    "HarnessStartError",
    "InputResponse",
    "Profile",
    "ProfileError",
    "TurnOutcome",
    "TurnRequest",
    "load_profile",
    "register_harness",
    "resolve_harness",
]

Resolver = Callable[[str, "Path | None"], Harness]

def _python(spec: str, project_dir: Path | None) -> Harness:
    from .python import resolve

    return resolve(spec, project_dir)


def _command(spec: str, project_dir: Path | None) -> Harness:
    from .command import resolve

    return resolve(spec)


def _http(spec: str, project_dir: Path | None) -> Harness:
    from .http import resolve

    return resolve(spec)


def _openai(spec: str, project_dir: Path | None) -> Harness:
    from .openai import resolve

    return resolve(spec, project_dir)


def _coding(spec: str, project_dir: Path | None) -> Harness:
    from .coding.harness import resolve

    return resolve(spec, project_dir)


_RESOLVERS: dict[str, Resolver] = {
    "python:": _python,
    "command:": _command,
    "openai:": _openai,
    "http://": _http,
    "https://": _http,
}
# The coding-agent CLIs, by exact name (or ``name:/path/to/binary``); see harnesses/coding.
CODING_AGENTS = ("claude", "codex", "gemini", "opencode")


def register_harness(prefix: str, resolver: Resolver) -> None:
    """Teach ``resolve_harness`` a new spec prefix (e.g. ``"myproto:"``)."""
    _RESOLVERS[prefix] = resolver


def resolve_harness(spec: str, project_dir: Path | None = None) -> Harness:
    """Resolve before running: a bad spec raises HarnessSpecError (the CLI exits 2)."""
    if not isinstance(spec, str) or not spec.strip():
        raise HarnessSpecError("harness spec is empty")
    for prefix, resolver in _RESOLVERS.items():
        if spec.startswith(prefix):
            return resolver(spec, project_dir)
    if spec.partition(":")[0] in CODING_AGENTS:
        return _coding(spec, project_dir)
    import difflib

    known = ", ".join([*(f"{p}..." for p in _RESOLVERS), *CODING_AGENTS])
    head = spec.partition(":")[0]
    close = difflib.get_close_matches(head, [*CODING_AGENTS, *(p.rstrip(":/") for p in _RESOLVERS)], n=1)
    hint = f" (did you mean {close[0]!r}?)" if close and close[0] != head else ""
    raise HarnessSpecError(f"unknown harness spec {spec!r}{hint}: expected one of {known}")
