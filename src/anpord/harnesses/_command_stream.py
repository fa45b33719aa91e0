"""anpord's own line protocol (docs/command-protocol.md) as a ``StreamParser``.

Each stdout line that is a JSON object with a string ``type`` is an event, its data fields at the
top level; an unknown type is kept as a custom event; ``session.*``/``turn.*`` types are the
runner's and are ignored (with a note in the log). Any other line is log, and also part of the
answer: a program that prints no assistant ``message.completed`` has its plain stdout, stripped,
taken as its answer, so ``print(answer)`` is a complete agent. ``input.requested`` events park the
turn (``waiting``); requests already answered on an earlier run of the same turn are not asked
again.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from ..events import INPUT_REQUESTED, LOG, MESSAGE_COMPLETED, TOOL_RESULT, Event, message_text
from ..results._encode import decode
from ._stream import TurnEnd

__all__ = ["ANSWER_CAP", "CommandStreamParser", "request_options"]

ANSWER_CAP = 1 << 20  # bytes of plain stdout kept as the answer
# The drive API emits these itself; a program printing them would break the turn's shape.
_RESERVED = re.compile(r"(session|turn)\.")


def request_options(raw: Any) -> list[dict[str, str]]:
    """An input request's options as ``{id, label}`` items (default: approve / deny)."""
    if raw is None:
        raw = ["approve", "deny"]
    out = []
    for opt in raw if isinstance(raw, list) else [raw]:
        if isinstance(opt, dict) and "id" in opt:
            out.append({"id": str(opt["id"]), "label": str(opt.get("label", opt["id"]))})
        else:
            out.append({"id": str(opt), "label": str(opt)})
    return out


class CommandStreamParser:
    def __init__(self, answered: set[str] | frozenset[str] = frozenset()):
        self.answered = answered  # request ids answered already (a re-run asks them again)
        self.answer: list[str] = []
        self._answer_bytes = 0
        self.answer_cut = False
        self.message: str | None = None  # the last assistant message.completed, if any
        self.data: Any = None
        self.requests: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)

    def feed(self, line: str) -> list[Event]:
        if line.lstrip().startswith("{"):
            try:
                # Bounded nesting: a line nested past MAX_DEPTH is log, never an event a reader
                # of the run could not take back (nor a RecursionError failing the trial).
                obj = decode(line)
            except ValueError:
                obj = None
            if isinstance(obj, dict) and isinstance(obj.get("type"), str) and obj["type"]:
                return self._event(obj)
        size = len(line.encode("utf-8", "replace")) + 1
        if self._answer_bytes + size > ANSWER_CAP:
            self.answer_cut = True
        else:
            self._answer_bytes += size
            self.answer.append(line)
        return [Event(LOG, {"message": line, "stream": "stdout"})]

    def _event(self, obj: dict[str, Any]) -> list[Event]:
        kind = obj["type"]
        data = {k: v for k, v in obj.items() if k not in ("type", "ts", "session_id")}
        if _RESERVED.match(kind):
            note = f"ignored event type {kind!r}: session.* and turn.* events are the runner's"
            return [Event(LOG, {"message": note, "stream": "stdout"})]
        if kind == MESSAGE_COMPLETED:
            data["role"] = str(data.get("role") or "assistant")
            text = data.get("text", "")
            data["text"] = text if isinstance(text, str) else message_text(text)
            if data["role"] == "assistant":
                self.message = data["text"]
                self.data = data.get("data")
        elif kind == INPUT_REQUESTED:
            rid = str(data.get("request_id") or f"input-{next(self._ids)}")
            if rid in self.answered or rid in self.requests:
                return []  # already answered (a re-run asks again) or already asked in this run
            data.update(request_id=rid, prompt=str(data.get("prompt", "")), options=request_options(data.get("options")))
            data.setdefault("tool_name", None)
            data.setdefault("input", None)
            self.requests[rid] = data
        elif kind == TOOL_RESULT:
            data.setdefault("status", "completed")
        return [Event(kind, data)]

    def finish(self, exit_code: int | None) -> TurnEnd:
        # The exit code is recorded, not judged: the protocol has no failure of its own.
        if self.requests:
            return TurnEnd("waiting")
        if self.message is not None:
            return TurnEnd("completed", message=self.message, data=self.data)
        return TurnEnd("completed", message="\n".join(self.answer).strip() or None)

    @property
    def message_from_stdout(self) -> bool:
        """Whether the answer is plain stdout (no message.completed event was printed for it)."""
        return self.message is None
