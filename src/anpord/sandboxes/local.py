"""The ``local`` sandbox: a fresh temp workspace and a private HOME, an environment scrubbed to an
allowlist. Processes run as the caller, unconfined: this isolates files and environment, not the
machine (use ``bwrap`` for that)."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
import time
from pathlib import Path
from typing import Mapping, Sequence

from ._protocol import ExecResult, SandboxError, SandboxSpec

__all__ = ["LocalSandbox", "LocalInstance", "ENV_ALLOWLIST", "scrubbed_environment"]

# Variables a program commonly needs to run at all; everything else is dropped unless the
# variant declares it (env=) or names it as a secret (secrets=).
ENV_ALLOWLIST = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "SHELL", "USER", "LOGNAME")


def scrubbed_environment(spec: SandboxSpec, home: Path, workspace: Path) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["HOME"] = str(home)
    env["TMPDIR"] = str(home / "tmp")
    env["PWD"] = str(workspace)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    for name in spec.variant.secrets:
        if name not in os.environ:
            raise SandboxError(f"secret {name} is declared by the variant but not set in the environment")
        env[name] = os.environ[name]
    env.update({str(k): str(v) for k, v in spec.variant.env.items()})
    return env


class LocalInstance:
    def __init__(self, root: Path, spec: SandboxSpec):
        self.root = root
        self.spec = spec
        self.workspace = root / "workspace"
        self.home = root / "home"
        self._procs: list[asyncio.subprocess.Process] = []
        self._closed = False
        self.workspace.mkdir()
        (self.home / "tmp").mkdir(parents=True)
        self._base_env = scrubbed_environment(spec, self.home, self.workspace)

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(self._base_env)
        if extra:
            env.update(extra)
        return env

    async def spawn(
        self, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path | None = None
    ) -> asyncio.subprocess.Process:
        if self._closed:
            raise SandboxError("sandbox is closed")
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd or self.workspace),
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # own process group, so kill_all reaches its children
        )
        self._procs.append(proc)
        return proc

    async def exec(
        self, cmd: str, *, timeout: float = 60.0, env: Mapping[str, str] | None = None
    ) -> ExecResult:
        started = time.monotonic()
        proc = await self.spawn(["bash", "-o", "pipefail", "-c", cmd], env=self.environment(env))
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except asyncio.TimeoutError:
            _kill_group(proc)
            out, err = await proc.communicate()
            return ExecResult(
                -9, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), True,
                time.monotonic() - started,
            )
        except asyncio.CancelledError:
            _kill_group(proc)
            raise
        return ExecResult(
            proc.returncode if proc.returncode is not None else -1,
            out.decode("utf-8", "replace"),
            err.decode("utf-8", "replace"),
            False,
            time.monotonic() - started,
        )

    async def kill_all(self) -> None:
        for proc in self._procs:
            _kill_group(proc)
        for proc in self._procs:
            if proc.returncode is None:
                try:
                    await asyncio.wait_for(proc.wait(), 5)
                except asyncio.TimeoutError:
                    pass
        self._procs.clear()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        await self.kill_all()
        shutil.rmtree(self.root, ignore_errors=True)


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class LocalSandbox:
    name = "local"

    def __init__(self, tmp_root: Path | None = None):
        self.tmp_root = tmp_root

    async def open(self, spec: SandboxSpec) -> LocalInstance:
        root = Path(tempfile.mkdtemp(prefix="anpord-", dir=self.tmp_root))
        try:
            inst = LocalInstance(root, spec)
            if spec.source is not None:
                spec.source.materialize(inst.workspace, spec.source_base)
        except Exception as exc:
            shutil.rmtree(root, ignore_errors=True)
            if isinstance(exc, SandboxError):
                raise
            raise SandboxError(f"could not prepare the workspace: {exc}") from exc
        return inst
