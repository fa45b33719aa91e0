"""``script([...])``: a user who sends fixed replies, in order, then is done."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..authoring._user import UserContext

__all__ = ["Script", "script"]


@dataclass(frozen=True)
class Script:
    replies: tuple[str, ...]

    @property
    def default_max_turns(self) -> int:
        return len(self.replies) + 1

    def open(self, context: UserContext) -> _ScriptSession:
        return _ScriptSession(self.replies)


class _ScriptSession:
    def __init__(self, replies: tuple[str, ...]):
        self._left = iter(replies)

    async def next_message(self, reply: str) -> str | None:
        return next(self._left, None)


def script(replies: Sequence[str]) -> Script:
    """A simulated user for ``define_eval(prompt=..., user=script([...]))``: after each agent
    turn it sends the next of ``replies``; when they run out the conversation ends."""
    from .._errors import DefinitionError

    if isinstance(replies, str) or not isinstance(replies, Sequence):
        raise DefinitionError(f"script() takes a list of replies, got {type(replies).__name__}")
    for i, reply in enumerate(replies):
        if not isinstance(reply, str) or not reply.strip():
            raise DefinitionError(f"script() reply {i} must be a non-empty string, got {reply!r}")
    if not replies:
        raise DefinitionError("script() needs at least one reply")
    return Script(tuple(replies))
