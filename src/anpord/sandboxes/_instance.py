"""What the ``local`` and ``bwrap`` instances share: a temp root, spawning, exec, cleanup.

Layout of one instance's root (a fresh folder named for the runner that owns it, see
``_owner``; removed on close, by the runner's watchdog if the runner is killed, or by
``sweep_stale``)::

    workspace/   the agent's working folder (filled from the case's source)
    home/        a private, empty HOME
    tmp/         TMPDIR (local; under bwrap each command gets a private, capped tmpfs /tmp)
    state/       harness files kept outside the workspace (prompt, history, answers)

The root is size-capped as a whole (see ``_size``): a tmpfs of its own where that is possible.
"""

from __future__ import annotations

import asyncio
import atexit
import errno
import os
import tempfile
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..workspace import SourceError
from ._owner import default_tmp_root, instance_place, instance_prefix, start_watchdog
from ._proc import (
    MARKER_ENV,
    CappedBuffer,
    ProcessTracker,
    close_pipes,
    drain,
    enable_subreaper,
    settle,
    wait_exit,
)
from ._protocol import ExecResult, SandboxError, SandboxSpec
from ._size import (
    SizeGuard,
    final_check,
    format_size,
    mount_capped,
    release,
    size_cap,
    unwatch,
    watch,
)
from ._watchdog import discard_folder

if TYPE_CHECKING:
    from ._cgroup import TrialCgroup

__all__ = [
    "ENV_ALLOWLIST",
    "OUTPUT_CAP",
    "BaseInstance",
    "base_environment",
    "cleanup_all",
    "copy_path",
    "default_tmp_root",
    "discard",
    "make_root",
]

# Variables a program commonly needs to run at all; everything else is dropped unless the
# variant declares it (env=) or names it as a secret (secrets=). Proxies are not passed: their
# URLs may carry credentials (declare them with env= or secrets= when an agent needs them).
ENV_ALLOWLIST = (
    "PATH",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "LC_NUMERIC",
    "LC_TIME",
    "LC_COLLATE",
    "TZ",
    "TERM",
    "SHELL",
    "USER",
    "LOGNAME",
)
# stdout and stderr of an exec keep at most this much each (head and tail; the middle is counted).
OUTPUT_CAP = 1 << 20


def base_environment(spec: SandboxSpec, home: Path, tmp: str) -> dict[str, str]:
    env = {k: os.environ[k] for k in ENV_ALLOWLIST if k in os.environ}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env.update(HOME=str(home), TMPDIR=tmp, PYTHONDONTWRITEBYTECODE="1")
    for d, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
    ):
        env[d] = str(home / sub)
    for name in spec.variant.secrets:
        if name not in os.environ:
            raise SandboxError(
                f"secret {name} is declared by the variant but not set in the environment"
            )
        env[name] = os.environ[name]
    env.update({str(k): str(v) for k, v in spec.variant.env.items()})
    return env


# Instances not closed yet, for cleanup_all().
_OPEN: weakref.WeakSet[BaseInstance] = weakref.WeakSet()


def cleanup_all() -> None:
    """Synchronously kill every open instance's processes and remove its folder. For a process
    about to exit without closing its trials (a forced exit); also run at interpreter exit."""
    for inst in list(_OPEN):
        inst._tracker.kill_now()
        if inst._guard is not None:
            unwatch(inst._guard)
        discard(inst.root)
        _OPEN.discard(inst)


atexit.register(cleanup_all)


# Writes up to this size are done in the event loop's thread (see ``write_file``).
INLINE_WRITE = 256 << 10


def write_atomically(target: Path, data: bytes) -> None:
    """``data`` into ``target`` through a temporary file beside it: a program never reads half of
    it. Makes the folders leading to it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)


def copy_path(source: Path, dest: Path) -> None:
    """Copy a file or a folder (its content merged into ``dest``), keeping links as links."""
    import shutil

    if source.is_dir() and not source.is_symlink():
        shutil.copytree(source, dest, symlinks=True, dirs_exist_ok=True)
    else:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest, follow_symlinks=False)


def discard(root: Path) -> None:
    """Remove an instance folder (unmounting it first if it is a tmpfs of its own)."""
    discard_folder(str(root))
    release(root)


def make_root(tmp_root: Path | None) -> Path:
    """A fresh instance folder, named for this runner, in a place its watchdog knows about."""
    place = instance_place(tmp_root)
    start_watchdog(place)
    return Path(tempfile.mkdtemp(prefix=instance_prefix(), dir=place))


class BaseInstance:
    """One trial's sandbox. Subclasses say how a command is started (``_start``) and which
    TMPDIR the program sees (``_tmpdir``)."""

    # The cgroup capping the trial's memory and processes, when the sandbox gives it one.
    _cgroup: TrialCgroup | None = None

    def __init__(self, root: Path, spec: SandboxSpec):
        self.root = root
        self.spec = spec
        # The host folders; where ``host_paths``, also the paths its programs see.
        self.host_workspace = root / "workspace"
        self.tmp = root / "tmp"
        for d in (self.host_workspace, root / "home", root / "state", self.tmp):
            d.mkdir()
        self.workspace = self._inside(self.host_workspace)
        self.home = self._inside(root / "home")
        self.state_dir = self._inside(root / "state")
        self.id = root.name
        self._tracker = ProcessTracker(self.id)
        self._procs: list[asyncio.subprocess.Process] = []
        self._starting: set[asyncio.Future[asyncio.subprocess.Process]] = set()
        self._closed = False
        self._guard: SizeGuard | None = None
        self._loop = asyncio.get_running_loop()
        self._base_env = base_environment(spec, self.home, self._tmpdir())
        self._base_env[MARKER_ENV] = self.id
        _OPEN.add(self)

    def _hold_to(self, cap: int, mounted: bool) -> None:
        self._guard = SizeGuard(self.root, cap, mounted, self._over_cap_soon, self._private_tmps())
        watch(self._guard)

    def _private_tmps(self) -> Callable[[], list[str]] | None:
        """Where commands get a capped tmpfs of their own outside the folder, if they do."""
        return None

    def _over_cap_soon(self) -> None:
        # From the monitor's thread: the trial's processes are killed in the loop's.
        try:
            self._loop.call_soon_threadsafe(self._over_cap)
        except RuntimeError:
            pass  # the loop is closed: nothing runs any more

    def _over_cap(self) -> None:
        if not self._closed:
            self._tracker.kill_now()

    # -- what subclasses adapt --------------------------------------------------------------

    async def _ready(self) -> None:
        """Called once the workspace is filled, before any command runs."""

    def _inside(self, host: Path) -> Path:
        """Where programs see the instance's host folder ``host`` (the same path where
        ``host_paths``)."""
        return host

    def _tmpdir(self) -> str:
        return str(self.tmp)

    async def _start(
        self, argv: list[str], env: dict[str, str], cwd: Path, **kwargs: object
    ) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            *argv,
            cwd=str(cwd),
            env=env,
            stdin=kwargs.pop("stdin", asyncio.subprocess.DEVNULL),  # type: ignore[arg-type]
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # own session and group: nothing reaches our terminal
            **kwargs,  # type: ignore[arg-type]
        )

    # -- loopback services (a trial's trace receiver, ...; see _bridge) -----------------------

    # Whether programs here cannot reach the host's loopback, so that a service must also listen
    # on a unix socket and be bridged in (``bridge_loopback``).
    loopback_bridged = False

    def extend_environment(self, env: Mapping[str, str]) -> None:
        """Variables every program started from now on gets (a trial service's address)."""
        self._base_env.update(env)

    def bridge_loopback(self, port: int, socket_path: Path) -> None:
        """Make ``127.0.0.1:port`` reach ``socket_path`` inside; nothing to do where the host's
        loopback is shared."""

    # -- files (the same paths inside and on the host) ---------------------------------------

    host_paths = True

    def _host_path(self, path: str | Path) -> Path:
        """Where ``path`` (as programs inside see it; relative: to the workspace) is on the host."""
        return self.workspace / path if not os.path.isabs(path) else Path(path)

    async def read_file(self, path: str | Path) -> bytes:
        return await asyncio.to_thread(self._host_path(path).read_bytes)

    async def write_file(self, path: str | Path, data: bytes) -> None:
        target = self._host_path(path)
        if len(data) <= INLINE_WRITE:  # a prompt, a history: cheaper than a thread hop
            write_atomically(target, data)
        else:
            await asyncio.to_thread(write_atomically, target, data)

    async def copy_in(self, source: Path, dest: str | Path) -> None:
        await asyncio.to_thread(copy_path, source, self._host_path(dest))

    async def copy_out(self, source: str | Path, dest: Path) -> None:
        await asyncio.to_thread(copy_path, self._host_path(source), dest)

    async def workspace_view(self) -> Path:
        return self.workspace

    # -- the SandboxInstance protocol -------------------------------------------------------

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(self._base_env)
        if extra:
            env.update(extra)
        return env

    async def spawn(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None = None,
        stdin: Path | bytes | None = None,
    ) -> asyncio.subprocess.Process:
        if self._closed:
            raise SandboxError("sandbox is closed")
        enable_subreaper()
        full_env = dict(env)
        full_env[MARKER_ENV] = self.id  # how escaped descendants are still found
        # Shielded: a start cancelled half-way may have forked already, and asyncio would kill
        # only the direct child, orphaning what it started. The start finishes on its own and
        # its tree is killed then; close() waits for starts still under way.
        start = asyncio.ensure_future(
            self._start_reading(list(argv), full_env, cwd or self.workspace, stdin)
        )
        self._starting.add(start)
        start.add_done_callback(self._starting.discard)
        try:
            proc = await asyncio.shield(start)
        except asyncio.CancelledError:
            start.add_done_callback(self._abandon)
            raise
        except OSError as exc:
            raise SandboxError(f"cannot start {argv[0]}: {exc.strerror or exc}") from exc
        if self._closed:  # closed while it was starting
            self._abandon(start)
            raise SandboxError("sandbox is closed")
        self._track(proc)
        return proc

    async def _start_reading(
        self, argv: list[str], env: dict[str, str], cwd: Path, stdin: Path | bytes | None
    ) -> asyncio.subprocess.Process:
        if stdin is None:
            return await self._start(argv, env, cwd)
        if isinstance(stdin, bytes):
            # A file in memory: the program reads it as it would the file on disk (seekable,
            # ending), and nothing needs writing while it starts.
            fd = os.memfd_create("anpord-stdin", os.MFD_CLOEXEC)
            with open(fd, "w+b") as held:
                held.write(stdin)
                held.seek(0)
                return await self._start(argv, env, cwd, stdin=held)
        # Opened here and inherited as fd 0, so the file need not be visible inside the sandbox;
        # our copy closes once the child has it.
        with open(stdin, "rb") as source:
            return await self._start(argv, env, cwd, stdin=source)

    def _track(self, proc: asyncio.subprocess.Process) -> None:
        self._tracker.track(proc.pid)
        self._procs.append(proc)

    def _abandon(self, start: asyncio.Future[asyncio.subprocess.Process]) -> None:
        """A start whose caller was cancelled: kill what it started, now that it has."""
        if start.cancelled() or start.exception() is not None:
            return
        proc = start.result()
        self._track(proc)  # close() reaps it
        self.kill_tree_now(proc)
        close_pipes(proc)

    async def exec(
        self, cmd: str, *, timeout: float = 60.0, env: Mapping[str, str] | None = None
    ) -> ExecResult:
        started = time.monotonic()
        proc = await self.spawn(["bash", "-o", "pipefail", "-c", cmd], env=self.environment(env))
        out, err = CappedBuffer(OUTPUT_CAP), CappedBuffer(OUTPUT_CAP)
        readers = asyncio.gather(drain(proc.stdout, out), drain(proc.stderr, err))
        code, timed_out = await settle(
            proc, readers, lambda: self.kill_tree(proc), lambda: self.kill_tree_now(proc), timeout
        )
        if not timed_out:
            failure = await self.setup_failure(proc, err.text())
            if failure:
                raise SandboxError(failure)
        return ExecResult(
            -9 if timed_out else code, out.text(), err.text(), timed_out, time.monotonic() - started
        )

    async def limit_exceeded(self) -> str | None:
        """Why the trial broke a limit of its sandbox — ``workspace size limit reached: 1 GiB``,
        or its cgroup's memory or process cap — or ``None``. Measures once more, and remembers a
        breach even when the files are gone since. The runner fails such a trial with this
        reason."""
        if self._guard is None or self._closed:
            size = self._guard.message() if self._guard and self._guard.exceeded else None
        else:
            size = self._guard.message() if await final_check(self._guard) else None
        if size is not None or self._cgroup is None:
            return size
        return self._cgroup.check()

    def _over_cgroup_cap(self) -> None:
        # A fork bomb held at the pids cap would spin until the timeout: the trial ends now.
        if not self._closed and self._cgroup is not None:
            self._tracker.kill_now()
            self._cgroup.kill()

    async def setup_failure(self, proc: asyncio.subprocess.Process, stderr: str = "") -> str | None:
        """Why the sandbox could not start ``proc``'s program, once it has exited; ``None`` when
        the program ran (whatever its exit code). Here it always runs: nothing wraps it."""
        return None

    async def kill_tree(self, proc: asyncio.subprocess.Process) -> None:
        """Kill ``proc`` and everything it started (including setsid'd and double-forked ones)."""
        await self._tracker.kill({proc.pid})
        await self._forget(proc)

    def kill_tree_now(self, proc: asyncio.subprocess.Process) -> None:
        """The synchronous part of ``kill_tree``, for cancellation handlers."""
        self._tracker.kill_now({proc.pid})

    async def kill_all(self) -> None:
        if not self._procs:
            # Every command was ended with kill_tree, which leaves nothing alive that could
            # have started anything since: no need to look again.
            return
        await self._tracker.kill()
        for proc in list(self._procs):
            await self._forget(proc)

    async def _forget(self, proc: asyncio.subprocess.Process) -> None:
        if proc.returncode is None:
            try:
                await asyncio.wait_for(wait_exit(proc), 5)
            except TimeoutError:
                return
        self._tracker.untrack(proc.pid)
        if proc in self._procs:
            self._procs.remove(proc)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._starting:  # what they start is killed as they finish (see spawn)
                await asyncio.wait(set(self._starting))
            await self.kill_all()
        finally:
            if self._guard is not None:
                unwatch(self._guard)
            await asyncio.to_thread(discard, self.root)
            _OPEN.discard(self)


async def open_instance(
    instance_type: type[BaseInstance], spec: SandboxSpec, tmp_root: Path | None, **kwargs: object
) -> BaseInstance:
    """Create an instance and fill its workspace; on any failure nothing is left behind."""
    try:
        cap = size_cap(spec.variant.options)
    except ValueError as exc:
        raise SandboxError(str(exc)) from None
    root = make_root(tmp_root)
    inst: BaseInstance | None = None
    try:
        mounted = cap is not None and mount_capped(root, cap)
        inst = instance_type(root, spec, **kwargs)
        if spec.source is not None:
            # In a thread: a clone or a large copy must not stall the other trials.
            fill = asyncio.ensure_future(
                asyncio.to_thread(spec.source.materialize, inst.host_workspace, spec.source_base)
            )
            try:
                await asyncio.shield(fill)
            except asyncio.CancelledError:
                await asyncio.wait({fill})  # let the copy stop writing before removing the folder
                raise
        await inst._ready()
        if cap is not None:
            inst._hold_to(cap, mounted)
        return inst
    except BaseException as exc:
        if inst is not None:
            _OPEN.discard(inst)
        discard(root)
        if isinstance(exc, SandboxError) or not isinstance(exc, Exception):
            raise
        raise SandboxError(_fill_failure(exc, cap)) from exc


def _fill_failure(exc: Exception, cap: int | None) -> str:
    """Why the workspace could not be filled, in the user's terms."""
    nospace = getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or (
        "No space left on device" in str(exc)
    )
    if nospace and cap is not None:
        return (
            f"the case's source does not fit in the workspace size cap of {format_size(cap)}: {exc}"
        )
    if isinstance(exc, SourceError):
        return str(exc)
    return f"could not prepare the workspace: {exc}"
