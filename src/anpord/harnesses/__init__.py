"""Harnesses run the agent under test. ``resolve_harness(spec)`` turns a spec string into one:
``python:pkg.mod:attr``, ``command:<shell command>``, or a coding-agent CLI by name (``claude``,
``codex``, ``gemini``, ``opencode``, or ``claude:/path/to/claude``)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from .._registry import PluginError, Registry
from ._profile import Profile, ProfileError, load_profile
from ._program import CODING_AGENTS, program_of, spec_head
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
    "program_of",
    "HARNESSES",
    "register_harness",
    "resolve_harness",
    "spec_head",
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


# Built-ins by the spec's head (what comes before its first ``:``); third-party harnesses add
# names through the ``anpord.harnesses`` entry-point group, each a resolver like these.
_RESOLVERS: dict[str, Resolver | str] = {
    "python": _python,
    "command": _command,
    "openai": _openai,
    "http": _http,
    "https": _http,
}
_RESOLVERS.update(dict.fromkeys(CODING_AGENTS, _coding))

HARNESSES: Registry[Resolver] = Registry("anpord.harnesses", _RESOLVERS, kind="harness", kinds="harnesses")


def register_harness(prefix: str, resolver: Resolver) -> None:
    """Teach ``resolve_harness`` a new spec head: ``register_harness("myproto", resolve)`` makes
    ``"myproto:anything"`` resolve through ``resolve("myproto:anything", project_dir)``. A
    trailing ``:`` (``"myproto:"``) is accepted. An installed package does the same with an
    ``anpord.harnesses`` entry point (docs/plugins.md)."""
    HARNESSES.register(prefix.partition(":")[0], resolver, replace=True)


def resolve_harness(spec: str, project_dir: Path | None = None) -> Harness:
    """Resolve before running: a bad spec raises HarnessSpecError (the CLI exits 2)."""
    if not isinstance(spec, str) or not spec.strip():
        raise HarnessSpecError("harness spec is empty")
    head = spec_head(spec)
    if HARNESSES.known(head):
        try:
            resolver = HARNESSES.get(head)
        except PluginError as exc:
            raise HarnessSpecError(f"{spec}: {exc}") from None
        return resolver(spec, project_dir)
    import difflib

    names = HARNESSES.names()
    known = ", ".join(n if n in CODING_AGENTS else f"{n}:..." for n in names)
    close = difflib.get_close_matches(head, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close and close[0] != head else ""
    raise HarnessSpecError(f"unknown harness spec {spec!r}{hint}: expected one of {known}")
