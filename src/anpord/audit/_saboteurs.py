"""Saboteurs: stand-ins for the agent that should fail every sound case.

A saboteur is a harness. It keeps the variant it replaces — its sandbox, workspace, source and
profile files (the inner harness's ``prepare_sandbox`` still runs: that is set-up, not the
agent's work) — and answers each turn with text that does not do the task: nothing, the prompt
back, a refusal, fluent off-topic prose, another case's recorded answer, or this case's own
recorded answer damaged. It never asks for input, never calls a tool, never runs a program and
never touches the workspace, so whatever a check finds there is what was there before.
"""

from __future__ import annotations

import itertools
import json
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..events import MESSAGE_COMPLETED, TURN_COMPLETED, Event, message_text
from ..harnesses import Emit, Harness, HarnessContext, TurnOutcome, TurnRequest
from ..harnesses._stand_in import StandIn
from ._damage import damage, damage_data

__all__ = ["SABOTEURS", "RECORDED", "SPEC_PREFIX", "REFUSAL", "NOISE", "SaboteurHarness", "pick"]

SABOTEURS = ("empty", "echo", "refuse", "noise", "shuffle", "mutate")
# The saboteurs that answer from a recorded run; without one they are skipped.
RECORDED = ("shuffle", "mutate")
SPEC_PREFIX = "audit:"
REFUSAL = "I can't help with that."
# Fluent and confident, about nothing any case asks: a check that accepts it accepts anything.
NOISE = (
    "The history of lighthouse keeping is a quiet one. Keepers trimmed wicks, polished lenses and "
    "logged the weather, often for decades, on rocks that saw a supply boat once a month. Most of "
    "them kept gardens in salt-blown soil and wrote long letters home.",
    "Sourdough starters are small ecosystems. Wild yeasts and lactic bacteria settle into a "
    "balance that depends on the flour, the water and the warmth of the kitchen, which is why "
    "two bakers feeding the same culture end up with different bread.",
    "Migrating swifts can stay aloft for months, sleeping on the wing in brief glides. They "
    "follow weather fronts for the insects those fronts lift, and return each spring to the "
    "same crevice under the same roof tile.",
)


def pick(options: Sequence[str], seed: int | None, salt: str = "") -> str:
    """One of ``options``, the same for the same seed (and salt) in every audit."""
    key = zlib.crc32(f"{seed or 0}\0{salt}".encode("utf-8", "surrogatepass"))
    return options[key % len(options)]


@dataclass
class SaboteurHarness(StandIn):
    """Stands in for ``inner`` (the variant's own harness, or None when it has none).

    ``answers`` are the recorded answers ``shuffle`` and ``mutate`` replay, one per turn in
    order (then nothing); ``outputs`` the structured outputs recorded beside them (None for a
    turn that had none); the other saboteurs make theirs from the turn."""

    spec: str
    saboteur: str
    inner: Harness | None = None
    answers: tuple[str, ...] = ()
    outputs: tuple[Any, ...] = ()

    async def open_session(self, ctx: HarnessContext, session_id: str) -> SaboteurSession:
        return SaboteurSession(self, ctx, session_id)


class SaboteurSession:
    def __init__(self, harness: SaboteurHarness, ctx: HarnessContext, session_id: str):
        self.harness, self.ctx, self.session_id = harness, ctx, session_id
        self._turns = itertools.count()

    def _answer(self, request: TurnRequest) -> tuple[str, Any]:
        """The turn's text, and its structured output (replayed, or damaged, from the recording)."""
        name, seed = self.harness.saboteur, self.ctx.seed
        turn = next(self._turns)
        outputs = self.harness.outputs
        data = outputs[turn] if turn < len(outputs) else None
        if name in ("shuffle", "mutate") and data is not None:
            if name == "mutate":
                data, how = damage_data(data, seed)
                self.ctx.log(f"mutate: the structured output, {how}")
            return json.dumps(data, ensure_ascii=False), data
        return self._text(name, seed, turn, request), None

    def _text(self, name: str, seed: int | None, turn: int, request: TurnRequest) -> str:
        if name == "empty":
            return ""
        if name == "echo":
            return message_text(request.input) if request.input is not None else ""
        if name == "refuse":
            return REFUSAL
        if name == "noise":
            return pick(NOISE, seed, str(turn))
        answers = self.harness.answers
        if turn >= len(answers):
            return ""
        if name == "mutate":
            answer, how = damage(answers[turn], seed)
            self.ctx.log(f"mutate: {how}")
            return answer
        return answers[turn]

    async def run_turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        if request.responses:
            # A saboteur never asks, so there is nothing to answer.
            return TurnOutcome("failed", error="there is no pending input request to answer")
        text, data = self._answer(request)
        emit(Event(MESSAGE_COMPLETED, {"session_id": self.session_id, "role": "assistant", "text": text}))
        return TurnOutcome("completed", message=text, data=data)

    async def cancel(self) -> bool:
        return False

    async def close(self) -> None:
        pass


def describe(inner_spec: str | None) -> str:
    """What the saboteur stood in for, for the report."""
    if not inner_spec:
        return "no harness"
    kind = inner_spec.partition(":")[0]
    if inner_spec.startswith(("http://", "https://")):
        return f"HTTP agent {inner_spec}"
    words = {"python": "Python agent", "command": "command agent", "openai": "model agent"}
    from ..harnesses import CODING_AGENTS

    if kind in CODING_AGENTS:
        return f"coding CLI {inner_spec}"
    return f"{words.get(kind, 'harness')} {inner_spec}"


def outputs_of(events: Sequence[Any]) -> list[Any]:
    """The structured outputs in a recorded trial, one per completed turn, in order (None for a
    turn without one)."""
    return [e.data.get("data") for e in events if e.type == TURN_COMPLETED]


def answer_of(events: Sequence[Any]) -> list[str]:
    """The agent's answers in a recorded trial, one per turn, in order."""
    return [str(e.data.get("text") or "") for e in events
            if e.type == MESSAGE_COMPLETED and e.data.get("role", "assistant") == "assistant"]
