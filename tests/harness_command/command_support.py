"""Helpers for the command-harness tests: a real sandbox + command session ("rig"), agent
scripts written to a folder the sandbox mounts, and leftover-process checks."""

from __future__ import annotations

import asyncio
import os
import textwrap
from collections.abc import Awaitable
from pathlib import Path
from typing import Any, Self, TypeVar

from anpord.authoring import Variant, files
from anpord.events import Event
from anpord.harnesses import HarnessContext, InputResponse, TurnOutcome, TurnRequest
from anpord.harnesses.command import CommandSession, resolve
from anpord.sandboxes import SandboxSpec
from anpord.sandboxes.bwrap import BwrapSandbox
from anpord.sandboxes.local import LocalSandbox

T = TypeVar("T")
KINDS = ("local", "bwrap")


def run(coro: Awaitable[T], timeout: float = 60) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def write_agent(folder: Path, name: str, source: str) -> Path:
    """A Python agent script (run it with ``python3 <path>``; bwrap needs ``folder`` mounted)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source).lstrip("\n"))
    return path


def live_with(token: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains ``token``."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token in cmdline and state != b"Z":
            found.append(int(name))
    return found


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
