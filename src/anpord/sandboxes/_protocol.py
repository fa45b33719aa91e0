"""The ``Sandbox`` protocol: where a trial's agent commands and checks run.

The runner asks a ``Sandbox`` (chosen by the variant's ``sandbox`` name) to ``open`` one
``SandboxInstance`` per trial, and always ``close``\\ s it — on success, failure, timeout and
Ctrl-C. Everything a trial starts (agent programs, ``context.exec``, shell verifiers) goes through
``spawn``/``exec`` so the instance can isolate it and later kill it, and every file the runner
puts in or takes out goes through the file methods (``read_file``, ``write_file``, ``copy_in``,
``copy_out``, ``workspace_view``): a host path is an optimisation a sandbox may offer
(``host_paths``), not what callers rely on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # asyncio only for annotations: importing the package stays cheap
    import asyncio

    from ..workspace import Source

__all__ = [
    "CheckedSandbox",
    "ExecResult",
    "Sandbox",
    "SandboxError",
    "SandboxFiles",
    "SandboxInstance",
    "SandboxSpec",
]


class SandboxError(Exception):
    """The sandbox could not be set up (missing binary, bad source, …): the trial is ``void``."""


@dataclass(frozen=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    duration: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def to_dict(self) -> dict[str, object]:
        return {
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "timed_out": self.timed_out,
            "duration": round(self.duration, 4),
        }


class SandboxVariant(Protocol):
    """What a sandbox reads of the trial's variant (an ``anpord.Variant`` is one): sandboxes
    stand below the definitions, so they name the settings they use rather than the class."""

    @property
    def env(self) -> Mapping[str, str]: ...

    @property
    def secrets(self) -> Sequence[str]: ...

    @property
    def network(self) -> bool: ...

    @property
    def mounts(self) -> Sequence[str]: ...

    @property
    def options(self) -> Mapping[str, Any]: ...


@dataclass(frozen=True)
class SandboxSpec:
    """What one trial asks of its sandbox."""

    variant: SandboxVariant
    source: Source | None = None
    # The folder relative source paths start from (the eval file's folder).
    source_base: Path = field(default_factory=Path.cwd)
    label: str = "trial"


class SandboxFiles(Protocol):
    """The file methods of a ``SandboxInstance``: what code that only reads and writes a trial's
    files (a coding CLI's settings, sign-in files) needs of it. ``anpord._fs.HostFiles`` is the
    same on host paths."""

    async def read_file(self, path: str | Path) -> bytes: ...

    async def write_file(self, path: str | Path, data: bytes) -> None: ...


@runtime_checkable
class SandboxInstance(Protocol):
    workspace: Path  # the agent's working folder, filled from the case's source
    home: Path  # a private, empty HOME
    # Harness files kept outside the workspace (prompt, history, answers); programs inside the
    # sandbox can read it.
    state_dir: Path

    # Whether ``workspace``, ``home`` and ``state_dir`` are host folders that the runner may read
    # and write directly, seen at the same paths inside (``local``, ``bwrap``, ``docker`` with
    # its folders bound in). An optimisation: the file methods below work either way, and a
    # path given to them is one the sandbox's programs see (``docker`` copying the workspace
    # in and out: paths in the container only).
    host_paths: bool

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment a process inside the sandbox gets (already scrubbed), plus ``extra``."""
        ...

    async def read_file(self, path: str | Path) -> bytes:
        """The content of the file at ``path`` inside (relative: to the workspace).
        ``FileNotFoundError`` when there is none."""
        ...

    async def write_file(self, path: str | Path, data: bytes) -> None:
        """Make the file at ``path`` inside (relative: to the workspace) hold ``data``, making
        its folders."""
        ...

    async def copy_in(self, source: Path, dest: str | Path) -> None:
        """Copy the host file or folder ``source`` to ``dest`` inside (a folder's content
        merges into ``dest``)."""
        ...

    async def copy_out(self, source: str | Path, dest: Path) -> None:
        """Copy the file or folder ``source`` inside to the host path ``dest``."""
        ...

    async def workspace_view(self) -> Path:
        """A host folder holding the workspace as it is now, for checks and snapshots to read:
        the workspace itself where ``host_paths``, else a copy made now."""
        ...

    # Whether its programs cannot reach the host's loopback (a closed network): a trial service
    # then also listens on a unix socket in the trial's folder and is bridged in.
    loopback_bridged: bool

    def extend_environment(self, env: Mapping[str, str]) -> None:
        """Variables every program started from now on gets (a trial service's address)."""
        ...

    def bridge_loopback(self, port: int, socket_path: Path) -> None:
        """Make ``127.0.0.1:port`` inside reach the unix socket ``socket_path`` (a no-op where
        the host's loopback is shared)."""
        ...

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None = None,
        stdin: Path | bytes | None = None,
    ) -> asyncio.subprocess.Process:
        """Start a process inside the sandbox with stdout/stderr piped. Its stdin reads the host
        file ``stdin`` (opened here, outside the sandbox: its path need not be visible inside),
        or the bytes given, else an empty input (/dev/null). Its whole process tree is killed by
        ``kill_all``/``close``."""
        ...

    async def exec(
        self, cmd: str, *, timeout: float = 60.0, env: Mapping[str, str] | None = None
    ) -> ExecResult:
        """Run ``cmd`` under ``bash -o pipefail -c`` inside the sandbox, in the workspace.
        Raises ``SandboxError`` when the sandbox itself could not start it."""
        ...

    async def setup_failure(self, proc: asyncio.subprocess.Process, stderr: str = "") -> str | None:
        """After ``proc`` (from ``spawn``) exited: why the sandbox itself could not start its
        program (a failed mount, say), given what it wrote on stderr; ``None`` when the program
        ran, whatever its exit code. Callers make such a run ``void``, not a failure of the
        program."""
        ...

    async def limit_exceeded(self) -> str | None:
        """Why the trial broke a limit of its sandbox (``workspace size limit reached: 1 GiB
        …``), or ``None``. Call it once the agent and the checks are done, before ``close``;
        a breach is remembered even if the files are gone since. Callers fail the trial with
        this reason: the agent did run, and wrote too much."""
        ...

    async def kill_tree(self, proc: asyncio.subprocess.Process) -> None:
        """Kill ``proc`` (from ``spawn``) and everything it started, and wait until they are gone."""
        ...

    def kill_tree_now(self, proc: asyncio.subprocess.Process) -> None:
        """The synchronous part of ``kill_tree`` (SIGKILL now), for cancellation handlers."""
        ...

    async def kill_all(self) -> None:
        """Kill every process this instance started (and their descendants)."""
        ...

    async def close(self) -> None:
        """Kill what is left and remove every file this instance made. Idempotent."""
        ...


@runtime_checkable
class Sandbox(Protocol):
    name: str

    async def open(self, spec: SandboxSpec) -> SandboxInstance: ...


@runtime_checkable
class CheckedSandbox(Protocol):
    """A sandbox that can tell before a run starts whether this machine can open its instances
    at all (``docker``: a container CLI whose engine answers). The runner calls ``check`` once
    per run for each such sandbox its variants use; a ``SandboxError`` makes every trial of
    those variants ``void`` with its one line, and none of them starts."""

    def check(self) -> None: ...
