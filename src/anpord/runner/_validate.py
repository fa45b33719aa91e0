"""Declarative cases: send the prompt, then let ``validate(context)`` and verifiers decide."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Sequence

from ..assertions import tool_calls_from_events
from ..events import COMMAND_COMPLETED, FILES_CHANGED, MESSAGE_COMPLETED, Event
from ..results._model import AssertionRecord
from ..sandboxes._protocol import ExecResult, SandboxInstance

if TYPE_CHECKING:
    from ..assertions import ToolCall
    from ..drive import T, TrialState, Turn
    from ..judges import JudgeEnv

__all__ = ["ValidateContext", "run_declarative", "ValidateError"]


class ValidateError(Exception):
    """validate() returned something that is not a verdict (names the case)."""


class SandboxHolder:
    """Opens the trial's sandbox only when something needs it."""

    def __init__(self, opener: Callable[[], Awaitable[SandboxInstance]], instance: SandboxInstance | None):
        self._opener = opener
        self.instance = instance

    async def get(self) -> SandboxInstance:
        if self.instance is None:
            self.instance = await self._opener()
        return self.instance


class ValidateContext:
    """What ``validate(context)`` sees after the agent ran."""

    def __init__(self, t: "T", sandbox: SandboxHolder, workspace_snapshot: Any = None, *,
                 state: "TrialState | None" = None):
        self._t = t
        self._trial_state = state  # the runner's own record of the trial (its mocks)
        self._sandbox = sandbox
        self._snapshot = workspace_snapshot
        self._view: Path | None = None  # the workspace as the checks read it (see view())

    async def view(self) -> None:
        """Take the workspace's view for the checks (the sandbox's own folder where it is a host
        folder, else a copy out of it); again after each ``exec``, which may change it."""
        inst = self._sandbox.instance
        self._view = await inst.workspace_view() if inst is not None else None

    @property
    def events(self) -> list[Event]:
        return self._t.events

    @property
    def workspace(self) -> Path | None:
        if self._view is not None:
            return self._view
        inst = self._sandbox.instance
        return inst.workspace if inst is not None and inst.host_paths else None

    async def answer(self) -> str:
        """The last assistant message, or ""."""
        for event in reversed(self._t.events):
            if event.type == MESSAGE_COMPLETED and event.data.get("role") == "assistant":
                return str(event.data.get("text") or "")
        return ""

    async def transcript(self) -> str:
        lines = []
        for event in self._t.events:
            if event.type == MESSAGE_COMPLETED:
                lines.append(f"{event.data.get('role', 'assistant')}: {event.data.get('text', '')}")
        return "\n\n".join(lines)

    def turns(self) -> list["Turn"]:
        return self._t.turns

    def mock(self, name: str) -> Any:
        """One of the trial's mocks: ``.calls``, each call it received (docs/mocks.md)."""
        from ..mocks._assert import MockView

        state = self._trial_state
        mocks = {n: h.kind for n, h in state.mocks.items()} if state is not None else {}
        return MockView(name, mocks, lambda: self._t.events)

    def tool_calls(self, name: str | None = None) -> list["ToolCall"]:
        calls = tool_calls_from_events(self._t.events)
        return [c for c in calls if name is None or c.name == name]

    def commands(self) -> list[dict[str, Any]]:
        return [dict(e.data) for e in self._t.events if e.type == COMMAND_COMPLETED]

    def files_changed(self) -> list[str]:
        paths: set[str] = set()
        for e in self._t.events:
            if e.type == FILES_CHANGED:
                paths.update(str(p) for p in e.data.get("paths") or ())
        inst = self._sandbox.instance
        if inst is not None and self._snapshot is not None:
            from ..workspace import changed_paths, snapshot

            view = self.workspace
            if view is not None:
                paths.update(changed_paths(self._snapshot, snapshot(view)))
        return sorted(paths)

    def _inside(self, path: str | Path) -> Path:
        ws = self.workspace
        if ws is None:
            raise ValidateError("this case has no workspace (give it a source=, e.g. files({}))")
        root = ws.resolve()
        target = (root / path).resolve()  # resolves links: one pointing out is refused below
        if not target.is_relative_to(root):
            raise ValidateError(f"{path}: is outside the workspace")
        return target

    def read_text(self, path: str | Path) -> str:
        return self._inside(path).read_text(encoding="utf-8")

    def exists(self, path: str | Path) -> bool:
        try:
            return self._inside(path).exists()
        except ValidateError:
            if self.workspace is None:
                raise
            return False

    async def exec(self, cmd: str, *, timeout: float = 60) -> ExecResult:
        inst = await self._sandbox.get()
        try:
            return await inst.exec(cmd, timeout=timeout)
        finally:
            if not inst.host_paths:
                await self.view()


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _interpret(case_id: str, name: str, result: Any) -> tuple[bool, str]:
    if isinstance(result, bool):
        return result, ""
    if (
        isinstance(result, tuple)
        and len(result) == 2
        and isinstance(result[0], bool)
        and isinstance(result[1], (str, type(None)))
    ):
        return result[0], result[1] or ""
    shown = json.dumps(result, default=repr)[:120] if not isinstance(result, str) else repr(result[:120])
    raise ValidateError(
        f"{case_id}: {name} returned {type(result).__name__} {shown}; expected a bool or (bool, message)"
    )


async def run_declarative(t: "T", case_id: str, prompt: Any, checks: Any, sandbox: SandboxHolder,
                          snapshot: Any, *, state: "TrialState", judge_env: "JudgeEnv",
                          user: Any = None, max_turns: int | None = None,
                          judges: Sequence[Any] = (),
                          before_checks: Callable[[], Awaitable[None]] | None = None) -> None:
    """Hold the conversation (the prompt, then a simulated user's replies when there is one),
    then grade it: each judge as a gate (its call starts first and runs alongside the rest),
    each validate function / verifier as a gate."""
    from ..users import converse

    await converse(t, prompt, user, max_turns, env=judge_env, record_event=state.record_event)
    if before_checks is not None:
        await before_checks()  # what the trial's services have on its way (spans) arrives first
    for spec in judges:
        t.judge.declared(spec)
    context = ValidateContext(t, sandbox, snapshot, state=state)
    await context.view()
    from ..verifiers import Verifier

    recorder = state.recorder
    for check in _as_list(checks):
        if isinstance(check, Verifier):
            outcome = await check.verify(await sandbox.get())
            status = outcome.status
            recorder.record(AssertionRecord(
                name=check.name or "command", kind="gate", status=status,
                score=1.0 if status == "passed" else 0.0, message=outcome.message,
                actual=outcome.result.to_dict() if outcome.result is not None else None,
            ))
            continue
        if not callable(check):
            raise ValidateError(f"{case_id}: validate must be a function or command(...), got {type(check).__name__}")
        name = getattr(check, "__name__", "validate")
        if name in ("<lambda>", ""):
            name = "validate"
        result = check(context)
        if inspect.isawaitable(result):
            result = await result
        ok, message = _interpret(case_id, name, result)
        recorder.record(AssertionRecord(
            name=name, kind="gate", status="passed" if ok else "failed", score=1.0 if ok else 0.0,
            message=message,
        ))
