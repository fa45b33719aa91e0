"""The stream-parser seam: how a program's stdout becomes anpord events.

The command harness runs a program in the trial's sandbox and hands each stdout line to a
``StreamParser``; the parser turns it into events and, once the program has exited, says how the
turn ended. anpord's own line protocol (docs/command-protocol.md) is one parser; each coding-agent
CLI (Claude Code, Codex, Gemini CLI, OpenCode) has another for its JSON stream, and all of them
reuse the same process runner: sandbox, caps, kills, stderr as log.

A parser never relies on key order or on a line's position, skips what is not JSON, keeps event
types it does not know as raw events, and treats a stream that ends without its final event (or
whose final event reports an error) as a failed turn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..events import Event

__all__ = ["StreamParser", "TurnEnd"]


@dataclass(frozen=True)
class TurnEnd:
    """How a parsed stream says its turn ended.

    ``status``: ``completed``, ``failed`` (the stream reported an error, or ended without its final
    event) or ``waiting`` (it asked for input). ``message`` is the final answer when there is one;
    ``error`` says what went wrong; ``resume`` is the program's own session id, passed back on the
    next turn of a multi-turn case; ``data`` is a structured answer; ``usage`` sums the usage
    events already emitted (not to be emitted again).
    """

    status: Literal["completed", "failed", "waiting"]
    message: str | None = None
    error: str | None = None
    resume: str | None = None
    data: Any = None
    usage: dict[str, float] = field(default_factory=dict)
    # Events only the end of the stream could produce (an answer cut off mid-stream, say): the
    # harness emits them before the turn settles.
    trailing: tuple[Event, ...] = ()


@runtime_checkable
class StreamParser(Protocol):
    """One parser per program run (one turn)."""

    def feed(self, line: str) -> list["Event"]:
        """The events one stdout line holds (none for a blank line; a ``log`` event, or nothing,
        for a line that is not part of the stream)."""
        ...

    def finish(self, exit_code: int | None) -> TurnEnd:
        """After the program exited (``exit_code`` None when it was killed): how the turn ended."""
        ...
