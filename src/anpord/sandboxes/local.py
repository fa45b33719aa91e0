"""The ``local`` sandbox: a fresh temp workspace and a private HOME, an environment scrubbed to an
allowlist plus what the variant declares.

Processes run as the caller, unconfined: this isolates files and environment, not the machine
(use ``bwrap`` for that). ``mounts`` and ``network`` have no effect here: everything is visible.
Every process a trial starts is still killed at the end, including ones that ``setsid`` or
double-fork (see ``_proc``).
"""

from __future__ import annotations

from pathlib import Path

from ._instance import ENV_ALLOWLIST, BaseInstance, open_instance
from ._protocol import SandboxSpec

__all__ = ["ENV_ALLOWLIST", "LocalInstance", "LocalSandbox"]


class LocalInstance(BaseInstance):
    """A local trial sandbox (see ``BaseInstance`` for the folder layout)."""


class LocalSandbox:
    name = "local"

    def __init__(self, tmp_root: Path | None = None):
        self.tmp_root = tmp_root

    async def open(self, spec: SandboxSpec) -> LocalInstance:
        inst = await open_instance(LocalInstance, spec, self.tmp_root)
        assert isinstance(inst, LocalInstance)
        return inst
