"""Helpers for the command-harness tests: a real sandbox + command session ("rig"), agent
scripts written to a folder the sandbox mounts, and leftover-process checks."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, Self

from anpord.authoring import Variant, files
from anpord.events import Event
from anpord.harnesses import HarnessContext, InputResponse, TurnOutcome, TurnRequest
from anpord.harnesses.command import CommandSession, resolve
from anpord.sandboxes import SandboxSpec
from anpord.sandboxes.bwrap import BwrapSandbox
from anpord.sandboxes.local import LocalSandbox

from proc_support import KINDS, live_with, run  # noqa: F401 - re-exported for the tests here



def write_agent(folder: Path, name: str, source: str) -> Path:
    """A Python agent script (run it with ``python3 <path>``; bwrap needs ``folder`` mounted)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    return path



class Rig:
    """One trial: a sandbox instance and a command-harness session, driven like the drive API."""

    def __init__(
        self,
        kind: str,
        tmp_path: Path,
        command: str,
        *,
        source: Any = None,
        model: str | None = "test-model",
        **variant: Any,
    ):
        self.kind = kind
        self.roots = tmp_path / "roots"
        self.roots.mkdir(exist_ok=True)
        self.command = command
        self.source = source if source is not None else files({})
        self.model = model
        self.variant = Variant(**variant)
        self.base = tmp_path
        self.events: list[Event] = []
        self.messages: list[dict[str, Any]] = []
        self.logs: list[str] = []

    async def __aenter__(self) -> Self:
        sandbox = (
            LocalSandbox(tmp_root=self.roots)
            if self.kind == "local"
            else BwrapSandbox(tmp_root=self.roots)
        )
        self.instance = await sandbox.open(SandboxSpec(self.variant, self.source, self.base))
        ctx = HarnessContext(
            variant=self.variant, model=self.model, sandbox=self.instance, log=self.logs.append
        )
        self.session: CommandSession = await resolve(f"command:{self.command}").open_session(
            ctx, "ses_test"
        )
        return self

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self.session.close()
        finally:
            await self.instance.close()

    async def send(self, text: Any) -> tuple[TurnOutcome, list[Event]]:
        self.messages.append(
            {"role": "user", "content": text if isinstance(text, str) else str(text)}
        )
        return await self._turn(TurnRequest(input=text, messages=tuple(self.messages)))

    async def respond(self, *answers: tuple[str, str]) -> tuple[TurnOutcome, list[Event]]:
        responses = tuple(InputResponse(rid, option_id=opt) for rid, opt in answers)
        return await self._turn(TurnRequest(responses=responses, messages=tuple(self.messages)))

    async def _turn(self, request: TurnRequest) -> tuple[TurnOutcome, list[Event]]:
        events: list[Event] = []
        outcome = await self.session.run_turn(request, events.append)
        self.events.extend(events)
        if outcome.message is not None:
            self.messages.append({"role": "assistant", "content": outcome.message})
        return outcome, events


def of_type(events: list[Event], kind: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in events if e.type == kind]
