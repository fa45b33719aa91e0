"""Sandboxes: where a trial's agent commands and checks run.

``get_sandbox(name)`` returns the sandbox a variant names (``local``, ``bwrap``, or one added with
``register_sandbox``), so a new kind (``docker``) plugs in without touching the runner.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

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


def register_sandbox(name: str, factory: SandboxFactory, *, replace: bool = False) -> None:
    """Make ``Variant(sandbox=name)`` use ``factory()`` (a class or a function returning a Sandbox)."""
    if not name or not isinstance(name, str):
        raise ValueError(f"a sandbox name must be a non-empty string, got {name!r}")
    if name in _FACTORIES and not replace:
        raise ValueError(
            f"sandbox {name!r} is already registered (pass replace=True to override it)"
        )
    _FACTORIES[name] = factory


def sandbox_names() -> list[str]:
    return sorted(_FACTORIES)


def cleanup_all() -> None:
    """Kill the processes and remove the folders of every sandbox instance still open, at once
    (synchronous). Call it before a forced exit (``os._exit``); it also runs at normal exit."""
    if "anpord.sandboxes._instance" in sys.modules:
        sys.modules["anpord.sandboxes._instance"].cleanup_all()


def get_sandbox(name: str) -> Sandbox:
    """A new sandbox of the named kind. Unknown name: ValueError listing the known ones."""
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ValueError(
            f"unknown sandbox {name!r}: known sandboxes are {', '.join(sandbox_names())}"
        )
    if isinstance(factory, str):
        module, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    return factory()
