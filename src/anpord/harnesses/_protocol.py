"""The ``Harness`` protocol: what runs the agent under test.

A harness opens one ``HarnessSession`` per conversation. The drive API calls ``run_turn`` for
each message (or batch of input-request answers); the harness streams content events through
``emit`` as they happen and returns a ``TurnOutcome`` when the turn settles. The drive API itself
emits the boundary events (``session.started``, ``turn.started``, ``turn.completed`` /
``turn.failed`` / ``turn.cancelled``, ``session.waiting``) so every harness produces the same shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from ..authoring._config import Variant
    from ..events import Event
    from ..results._model import ErrorInfo
    from ..sandboxes._protocol import SandboxInstance

__all__ = [
    "Harness",
    "HarnessSession",
    "HarnessContext",
    "HarnessStartError",
    "HarnessSpecError",
    "TurnRequest",
    "TurnOutcome",
    "InputResponse",
    "Emit",
]

TurnStatus = Literal["completed", "waiting", "failed", "cancelled"]
Emit = Callable[["Event"], None]


class HarnessSpecError(ValueError):
    """A harness spec cannot be resolved before running (exit 2)."""


class HarnessStartError(Exception):
    """The agent could not be started (not found, not executable): the trial is ``void``."""


@dataclass(frozen=True)
class InputResponse:
    request_id: str
    option_id: str | None = None
    value: Any = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"request_id": self.request_id}
        if self.option_id is not None:
            out["option_id"] = self.option_id
        if self.value is not None:
            out["value"] = self.value
        return out


@dataclass(slots=True)
class TurnRequest:
    """One turn: a new message, or answers to the pending input requests (then ``input`` is None)."""

    input: Any = None
    responses: tuple[InputResponse, ...] = ()
    # The conversation so far, oldest first, this turn's input last (when there is one).
    messages: tuple[dict[str, Any], ...] = ()


@dataclass(slots=True)
class TurnOutcome:
    """How a turn settled. ``error`` says why a turn failed, in one line. ``failure`` is set when
    it failed through the agent's own fault (it raised, its stream reported an error or stopped
    short, it looped past its step limit): such a turn fails the trial unless the test said it
    expected it (``turn.expect_failed()``). A turn refused for the eval's misuse (answering a
    request that is not pending) has ``error`` but no ``failure``."""

    status: TurnStatus
    message: str | None = None
    error: str | None = None
    data: Any = None  # structured output, when the agent returned one
    failure: ErrorInfo | None = None


@dataclass
class HarnessContext:
    """What a harness gets for one trial."""

    variant: "Variant"
    model: str | None
    sandbox: "SandboxInstance | None"
    log: Callable[[str], None]
    trial_id: str = "trial"
    max_concurrency: int = 8
    seed: int | None = None  # the trial's seed, for harnesses that pass one to a model
    cache_dir: Path | None = None  # set when the run reuses model calls (``--cache``)
    trial_index: int = 0  # which trial of its cell: part of a cache key, so trials stay independent
    # Per-trial scratch space a harness may keep state in, shared by the trial's sessions.
    extra: dict[str, Any] = field(default_factory=dict)
    # The folder holding evals.config.py, when the runner says (harnesses that read files kept
    # beside the evals, such as profiles, find it themselves otherwise).
    evals_root: Path | None = None
    # Records an event in the trial's own log, in no session (set once the trial's state exists):
    # for a harness that replays what arrived outside any turn (regrade's recorded trace spans).
    record_event: Callable[["Event"], None] | None = None

    @property
    def workspace(self) -> Path | None:
        return self.sandbox.workspace if self.sandbox is not None else None


@runtime_checkable
class HarnessSession(Protocol):
    session_id: str

    async def run_turn(self, request: TurnRequest, emit: Emit) -> TurnOutcome:
        """Run one turn to its settling point, emitting content events as they happen."""
        ...

    async def cancel(self) -> bool:
        """Ask the active turn to stop. Returns whether a turn was active."""
        ...

    async def close(self) -> None:
        """End the session: stop any parked or running work and release resources."""
        ...


@runtime_checkable
class Harness(Protocol):
    """Resolved once per run (per process that runs trials) from a spec string.

    The executor calls ``setup`` once before the first session it opens in that process and
    ``teardown`` once after the last one closed — also after an interrupt — so a harness (or the
    agent it wraps) can share one HTTP session or connection pool across all its trials.

    ``prepare_sandbox`` sets up each trial's sandbox before the agent runs (a coding agent's
    profile: files in its HOME and workspace, an install step): the runner calls it once per
    trial after the sandbox opened and before it snapshots the workspace, so what it writes is
    not taken for the agent's changes. It raises ``HarnessStartError`` (the trial is ``void``)
    when it fails; most harnesses have nothing to do there.
    """

    spec: str

    # Whether this harness runs programs that need a sandbox instance (a workspace) per trial.
    # Read-only to the runner: a plain attribute or a property (a wrapper asks what it wraps).
    @property
    def needs_sandbox(self) -> bool: ...

    async def setup(self) -> None: ...

    async def teardown(self) -> None: ...

    async def prepare_sandbox(self, ctx: HarnessContext) -> None: ...

    async def open_session(self, ctx: HarnessContext, session_id: str) -> HarnessSession: ...
