"""Sandboxes: where a trial's agent commands and checks run."""

from __future__ import annotations

from ._protocol import ExecResult, Sandbox, SandboxError, SandboxInstance, SandboxSpec

__all__ = ["ExecResult", "Sandbox", "SandboxError", "SandboxInstance", "SandboxSpec", "get_sandbox"]


def get_sandbox(name: str) -> Sandbox:
    if name == "local":
        from .local import LocalSandbox

        return LocalSandbox()
    raise ValueError(f"unknown sandbox {name!r}: known sandboxes are local")
