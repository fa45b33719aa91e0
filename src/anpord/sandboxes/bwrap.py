"""The ``bwrap`` sandbox: each command runs under bubblewrap.

What a sandboxed program sees: ``/usr`` (and the ``/bin``, ``/lib*`` links or folders) read-only,
a minimal ``/etc`` (name resolution, TLS certificates, alternatives, a generated passwd/group),
``/proc``, ``/dev``, a private tmpfs ``/tmp``, its workspace and HOME (writable, at the same paths
as on the host), the harness state folder (read-only) and the variant's ``mounts`` (read-only).
Never the host's HOME or the project folder unless mounted. The network is unshared (loopback
only) unless ``Variant(network=True)``. Each command gets its own PID namespace and dies with the
runner (``--die-with-parent``): when a command's main process ends, everything it started ends.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from ._instance import BaseInstance, open_instance
from ._protocol import SandboxError, SandboxSpec

__all__ = ["DEFAULT_BWRAP", "ETC_PATHS", "BwrapInstance", "BwrapSandbox"]

DEFAULT_BWRAP = "/usr/bin/bwrap"
# What programs commonly need from /etc; each is bound read-only when present.
ETC_PATHS = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/nsswitch.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/locale.alias",
    "/etc/python3*",
)
_SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# Results of "can bwrap make a sandbox here" per binary, probed once per process.
_probed: dict[str, str | None] = {}


def _system_args() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _SYSTEM_DIRS:
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]  # merged /usr: /bin -> usr/bin
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for pattern in ETC_PATHS:
        for path in glob.glob(pattern) if "*" in pattern else [pattern]:
            args += ["--ro-bind-try", path, path]
    return args


def _isolation_args(network: bool, pid_namespace: bool = True) -> list[str]:
    args = [
        "--die-with-parent",
        "--new-session",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--hostname",
        "sandbox",
        "--cap-drop",
        "ALL",
    ]
    if pid_namespace:
        args.append("--unshare-pid")
    if not network:
        args.append("--unshare-net")
    return args + ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]


def _write_identity(etc: Path, home: Path) -> None:
    """A passwd/group naming only the sandbox user (the host's user list is not exposed)."""
    uid, gid = os.getuid(), os.getgid()
    name = "root" if uid == 0 else "agent"
    users = [f"{name}:x:{uid}:{gid}:{name}:{home}:/bin/bash"]
    groups = [f"{name}:x:{gid}:"]
    if uid != 0:
        users.insert(0, "root:x:0:0:root:/root:/usr/sbin/nologin")
        groups.insert(0, "root:x:0:")
    users.append("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin")
    groups.append("nogroup:x:65534:")
    etc.mkdir()
    (etc / "passwd").write_text("\n".join(users) + "\n")
    (etc / "group").write_text("\n".join(groups) + "\n")


class BwrapInstance(BaseInstance):
    def __init__(self, root: Path, spec: SandboxSpec, binary: str, mounts: Sequence[Path]):
        self.binary = binary
        self._status: dict[int, _Status] = {}  # by the pid of the bwrap that runs a command
        super().__init__(root, spec)
        etc = root / "etc"
        _write_identity(etc, self.home)
        args = [*_isolation_args(spec.variant.network), *_system_args()]
        args += [
            "--ro-bind",
            str(etc / "passwd"),
            "/etc/passwd",
            "--ro-bind",
            str(etc / "group"),
            "/etc/group",
        ]
        for m in mounts:  # before the workspace: a mount over /tmp must not hide it
            args += ["--ro-bind", str(m), str(m)]
        args += [
            "--bind",
            str(self.workspace),
            str(self.workspace),
            "--bind",
            str(self.home),
            str(self.home),
            "--ro-bind",
            str(self.state_dir),
            str(self.state_dir),
            "--remount-ro",
            "/",
        ]
        self._args = args

    def _tmpdir(self) -> str:
        return "/tmp"

    async def _start(
        self, argv: list[str], env: dict[str, str], cwd: Path, **kwargs: object
    ) -> asyncio.subprocess.Process:
        # bwrap reports on --json-status-fd its sandbox's init (pid 1 inside), which can outlive
        # bwrap itself for a moment while the namespace is torn down (it is killed, waited for
        # and reaped with the command), then the program's exit code. No exit code means the
        # program never ran: bwrap's own set-up failed.
        read_fd, write_fd = os.pipe()
        try:
            wrapped = [
                self.binary,
                *self._args,
                "--json-status-fd",
                str(write_fd),
                "--chdir",
                str(cwd),
                "--",
                *argv,
            ]
            proc = await super()._start(wrapped, env, cwd, pass_fds=(write_fd,), **kwargs)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        self._status[proc.pid] = _Status(proc.pid, read_fd, self._tracker.adopt)
        return proc

    async def setup_failure(self, proc: asyncio.subprocess.Process, stderr: str = "") -> str | None:
        status = self._status.pop(proc.pid, None)
        if status is None:
            return None
        try:
            await asyncio.wait_for(asyncio.shield(status.done), STATUS_GRACE)
        except TimeoutError:
            status.stop()
            return None  # cannot tell: never claim a failure we did not see
        if status.exit_code is not None:
            return None
        said = [line for line in stderr.splitlines() if line.startswith("bwrap: ")]
        reason = said[-1] if said else f"bwrap exited with {proc.returncode} before starting it"
        return f"the bwrap sandbox could not start the program: {reason}"

    async def close(self) -> None:
        try:
            await super().close()
        finally:
            for status in self._status.values():
                status.stop()
            self._status.clear()


# How long bwrap's status pipe may take to report after the command's exit.
STATUS_GRACE = 2.0


class _Status:
    """Reads bwrap's --json-status-fd for one command: a JSON document per line."""

    def __init__(self, root: int, fd: int, adopt: Callable[[int, int], None]):
        self.root, self.fd, self.adopt = root, fd, adopt
        self.exit_code: int | None = None
        self._buffer = b""
        self._loop = asyncio.get_running_loop()
        self.done: asyncio.Future[None] = self._loop.create_future()
        os.set_blocking(fd, False)
        self._loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            chunk = os.read(self.fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        self._buffer += chunk
        *lines, self._buffer = self._buffer.split(b"\n")
        for line in lines:
            self._take(line)
        if not chunk:
            self._take(self._buffer)
            self.stop()

    def _take(self, line: bytes) -> None:
        try:
            doc = json.loads(line) if line.strip() else {}
        except ValueError:
            return
        if isinstance(doc.get("child-pid"), int):
            self.adopt(self.root, doc["child-pid"])
        if isinstance(doc.get("exit-code"), int):
            self.exit_code = doc["exit-code"]

    def stop(self) -> None:
        if self.fd < 0:
            return
        self._loop.remove_reader(self.fd)
        os.close(self.fd)
        self.fd = -1
        if not self.done.done():
            self.done.set_result(None)


def _resolve_mounts(spec: SandboxSpec) -> list[Path]:
    mounts = []
    for raw in spec.variant.mounts:
        p = Path(str(raw)).expanduser()
        p = p if p.is_absolute() else spec.source_base / p
        if not p.exists():
            raise SandboxError(f"mount {raw!r}: {p} does not exist")
        mounts.append(Path(os.path.abspath(p)))
    return mounts


class BwrapSandbox:
    """Trials isolated by bubblewrap. ``binary`` defaults to ``$ANPORD_BWRAP``, else ``bwrap`` on
    PATH, else /usr/bin/bwrap."""

    name = "bwrap"

    def __init__(self, binary: str | None = None, tmp_root: Path | None = None):
        self.binary = (
            binary or os.environ.get("ANPORD_BWRAP") or shutil.which("bwrap") or DEFAULT_BWRAP
        )
        self.tmp_root = tmp_root

    async def _check(self) -> None:
        if not (os.path.isfile(self.binary) and os.access(self.binary, os.X_OK)):
            raise SandboxError(
                f"bubblewrap not found at {self.binary}: install it (apt-get install bubblewrap) "
                "or use sandbox='local'"
            )
        if self.binary not in _probed:
            _probed[self.binary] = await self._probe()
        problem = _probed[self.binary]
        if problem:
            raise SandboxError(f"bubblewrap cannot create a sandbox here: {problem}")

    async def _probe(self) -> str | None:
        """Namespaces may be disabled (containers, sysctls): try once, say why it fails.
        (No PID namespace here: its init would be left for this process to reap.)"""
        argv = [
            self.binary,
            *_isolation_args(False, pid_namespace=False),
            *_system_args(),
            "--",
            "true",
        ]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await asyncio.wait_for(proc.communicate(), 30)
        except (TimeoutError, OSError) as exc:
            return str(exc) or type(exc).__name__
        if proc.returncode == 0:
            return None
        lines = err.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else f"exit {proc.returncode}"

    async def open(self, spec: SandboxSpec) -> BwrapInstance:
        await self._check()
        mounts = _resolve_mounts(spec)
        inst = await open_instance(
            BwrapInstance, spec, self.tmp_root, binary=self.binary, mounts=mounts
        )
        assert isinstance(inst, BwrapInstance)
        return inst
