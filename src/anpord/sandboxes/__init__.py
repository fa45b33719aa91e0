"""Sandboxes: where a trial's agent commands and checks run.

``get_sandbox(name)`` returns the sandbox a variant names (``local``, ``bwrap``, or one added with
``register_sandbox``), so a new kind (``docker``) plugs in without touching the runner.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from .._registry import Registry
from ._owner import sweep_stale
from ._protocol import ExecResult, Sandbox, SandboxError, SandboxInstance, SandboxSpec
from ._size import DEFAULT_SIZE, SIZE_ENV, SIZE_OPTION, parse_size

__all__ = [
    "DEFAULT_SIZE",
    "SIZE_ENV",
    "SIZE_OPTION",
    "ExecResult",
    "Sandbox",
    "SandboxError",
    "SandboxInstance",
    "SANDBOXES",
    "SandboxSpec",
    "cleanup_all",
    "get_sandbox",
    "parse_size",
    "register_sandbox",
    "sandbox_names",
    "sweep_stale",
]

SandboxFactory = Callable[[], Sandbox]

# Built-ins by "module:attr", imported on first use so ``import anpord.sandboxes`` stays cheap.
_FACTORIES: dict[str, SandboxFactory | str] = {
    "local": "anpord.sandboxes.local:LocalSandbox",
    "bwrap": "anpord.sandboxes.bwrap:BwrapSandbox",
    "docker": "anpord.sandboxes.docker:DockerSandbox",
}


# Sandboxes by name (``Variant(sandbox=...)``); packages add more through ``anpord.sandboxes``
# entry points, each a factory like these.
SANDBOXES: Registry[SandboxFactory] = Registry("anpord.sandboxes", _FACTORIES, kind="sandbox", kinds="sandboxes")


def register_sandbox(name: str, factory: SandboxFactory, *, replace: bool = False) -> None:
    """Make ``Variant(sandbox=name)`` use ``factory()`` (a class or a function returning a Sandbox)."""
    SANDBOXES.register(name, factory, replace=replace)


def sandbox_names() -> list[str]:
    return SANDBOXES.names()


def cleanup_all() -> None:
    """Kill the processes and remove the folders of every sandbox instance still open, at once
    (synchronous). Call it before a forced exit (``os._exit``); it also runs at normal exit."""
    if "anpord.sandboxes._instance" in sys.modules:
        sys.modules["anpord.sandboxes._instance"].cleanup_all()


def get_sandbox(name: str) -> Sandbox:
    """A new sandbox of the named kind. Unknown, or a plugin that does not load: ValueError
    (a ``PluginError``) whose one line lists the known ones or says why."""
    return SANDBOXES.get(name)()
