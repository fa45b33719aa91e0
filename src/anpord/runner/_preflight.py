"""Checks made once, before a run's first trial, of what its trials would otherwise each find
broken: a sandbox this machine cannot open at all (no container CLI, a daemon that is down).

Each sandbox the plan's variants use that can tell (``CheckedSandbox``) is asked once; the
trials of a variant whose sandbox cannot open here are recorded ``void`` with the sandbox's one
line, without starting (no harness set-up, no services, no sandbox).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator

from ..results._model import TrialResult
from ._spec import TrialSpec

__all__ = ["sandbox_problems", "without_unusable_sandboxes"]


def _name(sandbox: str | None) -> str:
    return sandbox or "local"


async def sandbox_problems(sandboxes: Iterable[str | None]) -> dict[str, str]:
    """Why each of these sandboxes cannot open here, by name (those that can are left out)."""
    from ..sandboxes import get_sandbox
    from ..sandboxes._protocol import CheckedSandbox, SandboxError

    problems: dict[str, str] = {}
    for name in sorted({_name(s) for s in sandboxes}):
        try:
            sandbox = get_sandbox(name)
        except ValueError:
            continue  # planning named it already: not this check's to report
        if not isinstance(sandbox, CheckedSandbox):
            continue
        try:
            # In a thread: a CLI probe is a subprocess, and may hang up to its timeout.
            await asyncio.to_thread(sandbox.check)
        except SandboxError as exc:
            problems[name] = str(exc) or type(exc).__name__
    return problems


def without_unusable_sandboxes(
    specs: Iterator[TrialSpec],
    problems: dict[str, str],
    not_run: Callable[[TrialSpec, str], TrialResult],
    finished: Callable[[TrialSpec, TrialResult], None],
) -> Iterator[TrialSpec]:
    """``specs``, but each trial whose sandbox is in ``problems`` is ``finished`` as not run."""
    for spec in specs:
        reason = problems.get(_name(spec.variant.sandbox))
        if reason is None:
            yield spec
        else:
            finished(spec, not_run(spec, reason))
