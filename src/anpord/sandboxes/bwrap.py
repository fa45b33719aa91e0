"""The ``bwrap`` sandbox: each command runs under bubblewrap.

What a sandboxed program sees: ``/usr`` (and the ``/bin``, ``/lib*`` links or folders) read-only,
a minimal ``/etc`` (name resolution, TLS certificates, alternatives, a generated passwd/group),
``/proc`` (its parts that change the host read-only), ``/dev``, a private ``/tmp``, its workspace
and HOME (writable, at the same paths as on the host), the harness state folder (read-only) and
the variant's ``mounts`` (read-only). Never the host's HOME or the project folder unless mounted.
The network is unshared (loopback only) unless ``Variant(network=True)``. Each command gets its
own PID namespace and dies with the runner (``--die-with-parent``; the runner's watchdog kills
what is left if the runner is killed): when a command's main process ends, everything it started
ends. Each trial's commands share a cgroup capping its memory and process count (``_cgroup``).

Who it runs as (``Privileges``, probed once): never with a capability. When anpord runs as root,
as an unprivileged user of the host (uid 65534, or ``$ANPORD_SANDBOX_UID``): bwrap starts the
program through ``setpriv``, which switches to that user and empties the bounding set, so even
``/proc/sys`` files that root owns are not writable, and the trial's folders are handed to that
user. It has no user namespace of its own, so a seccomp filter (``_seccomp``) keeps it from
making one, where it would regain every capability. Without ``setpriv``, as that uid in a user namespace (still uid 0 to the host, hence the
read-only ``/proc``). When anpord does not run as root: as the caller, in a user namespace that
cannot make further ones.
"""

from __future__ import annotations

import asyncio
import glob
import json
import os
import shutil
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ._instance import BaseInstance, open_instance
from ._ownership import Ownership
from ._protocol import SandboxError, SandboxSpec
from ._cgroup import TrialCgroup, caps_options, memory_cap, pids_cap
from ._cgroup import unavailable as cgroup_unavailable
from ._seccomp import userns_filter
from ._size import size_cap

__all__ = [
    "DEFAULT_BWRAP",
    "DEFAULT_SANDBOX_UID",
    "ETC_PATHS",
    "PROC_READ_ONLY",
    "SANDBOX_UID_ENV",
    "BwrapInstance",
    "BwrapSandbox",
    "Privileges",
]

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
# Parts of /proc through which a process changes the host rather than itself (kernel settings,
# sysrq, IRQ and bus settings, filesystem and driver knobs): bound read-only over the fresh /proc.
# bwrap covers some of them itself, but only those it finds writable at that moment.
PROC_READ_ONLY = (
    "sys",
    "sysrq-trigger",
    "irq",
    "bus",
    "fs",
    "acpi",
    "driver",
    "scsi",
    "mtrr",
    "pressure",
    "tty",
)
SANDBOX_UID_ENV = "ANPORD_SANDBOX_UID"
DEFAULT_SANDBOX_UID = 65534
SANDBOX_USER = "agent"
# Results of "can bwrap make a sandbox here, and as whom" per binary, probed once per process.
_probed: dict[str, tuple[Privileges, bool] | str] = {}
# The capabilities bwrap hands setpriv so that it can switch users (they end with the switch).
_SWITCH_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")


@dataclass(frozen=True)
class Privileges:
    """Who a sandboxed program is: the bwrap options and the program prefix that make it so."""

    mode: str  # "host-user" | "user-namespace" | "caller"
    uid: int  # its uid inside the sandbox
    gid: int
    host_uid: int  # its uid as the host sees it (what file and /proc permissions check)
    args: tuple[str, ...] = ()
    prefix: tuple[str, ...] = ()
    description: str = ""
    # A seccomp filter (see _seccomp) that keeps it from making user namespaces: needed where
    # bwrap's --disable-userns cannot be had (no user namespace of its own).
    seccomp: bytes | None = None


def _sandbox_uid() -> int:
    raw = os.environ.get(SANDBOX_UID_ENV, "")
    try:
        uid = int(raw) if raw else DEFAULT_SANDBOX_UID
    except ValueError:
        raise SandboxError(f"{SANDBOX_UID_ENV}={raw!r} is not a user id") from None
    if not 0 < uid < 2**32 - 1:
        raise SandboxError(f"{SANDBOX_UID_ENV}={raw!r} must be a non-root user id")
    return uid


def _candidates() -> list[Privileges]:
    """What to try, best first."""
    if os.geteuid() != 0:
        uid, gid = os.getuid(), os.getgid()
        own = f"uid {uid} (the caller's) in a user namespace, no capabilities"
        return [
            Privileges(
                "caller",
                uid,
                gid,
                uid,
                ("--unshare-user", "--disable-userns"),
                (),
                own + ", no nested user namespaces",
            ),
            Privileges("caller", uid, gid, uid, ("--unshare-user",), (), own),
        ]
    uid = _sandbox_uid()
    tried = []
    setpriv = shutil.which("setpriv")
    if setpriv:
        args = [a for cap in _SWITCH_CAPS for a in ("--cap-add", cap)]
        prefix = (
            setpriv,
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--",
        )
        no_userns = userns_filter()
        tried.append(
            Privileges(
                "host-user",
                uid,
                uid,
                uid,
                tuple(args),
                prefix,
                f"uid {uid} of the host, no capabilities"
                + (", no user namespaces" if no_userns is not None else ""),
                no_userns,
            )
        )
    why = "setpriv could not switch users" if setpriv else "setpriv is not installed"
    userns = f"uid {uid} in a user namespace (uid 0 to the host: {why}), no capabilities"
    ids = ("--uid", str(uid), "--gid", str(uid))
    tried.append(
        Privileges(
            "user-namespace",
            uid,
            uid,
            0,
            ("--unshare-user", "--disable-userns", *ids),
            (),
            userns + ", no nested user namespaces",
        )
    )
    tried.append(Privileges("user-namespace", uid, uid, 0, ("--unshare-user", *ids), (), userns))
    return tried


def _system_args() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _SYSTEM_DIRS:
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]  # merged /usr: /bin -> usr/bin
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--dir", "/etc"]  # 0755: bwrap 0.8 would make it 0700 for root (see BwrapInstance)
    for pattern in ETC_PATHS:
        for path in glob.glob(pattern) if "*" in pattern else [pattern]:
            args += ["--ro-bind-try", path, path]
    return args


def _proc_args() -> list[str]:
    args = ["--proc", "/proc"]
    for name in PROC_READ_ONLY:
        args += ["--ro-bind-try", f"/proc/{name}", f"/proc/{name}"]
    return args


def _isolation_args(network: bool, privileges: Privileges, pid_namespace: bool = True) -> list[str]:
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
        *privileges.args,
    ]
    if pid_namespace:
        args.append("--unshare-pid")
    if not network:
        args.append("--unshare-net")
    return args + [*_proc_args(), "--dev", "/dev"]


def _write_identity(etc: Path, home: Path, privileges: Privileges) -> str:
    """A passwd/group naming only the sandbox user (the host's user list is not exposed).
    Returns the user's name."""
    uid, gid = privileges.uid, privileges.gid
    name = "root" if uid == 0 else SANDBOX_USER
    users = [f"{name}:x:{uid}:{gid}:{name}:{home}:/bin/bash"]
    groups = [f"{name}:x:{gid}:"]
    if uid != 0:
        users.insert(0, "root:x:0:0:root:/root:/usr/sbin/nologin")
        groups.insert(0, "root:x:0:")
    if uid != 65534:
        users.append("nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin")
    if gid != 65534:
        groups.append("nogroup:x:65534:")
    etc.mkdir()
    (etc / "passwd").write_text("\n".join(users) + "\n")
    (etc / "group").write_text("\n".join(groups) + "\n")
    return name


class BwrapInstance(BaseInstance):
    def __init__(
        self,
        root: Path,
        spec: SandboxSpec,
        binary: str,
        mounts: Sequence[Path],
        privileges: Privileges,
        sized_tmp: bool = True,
        cgroup: TrialCgroup | None = None,
    ):
        self.binary = binary
        self.privileges = privileges
        self._cgroup = cgroup
        self._sized_tmp = sized_tmp
        self._status: dict[int, _Status] = {}  # by the pid of the bwrap that runs a command
        super().__init__(root, spec)
        etc = root / "etc"
        user = _write_identity(etc, self.home, privileges)
        self._base_env.update(USER=user, LOGNAME=user)
        # Programs run as another user than the runner: the trial's folders become theirs.
        self._ownership: Ownership | None = None
        if privileges.host_uid != os.geteuid():
            self._ownership = Ownership(
                privileges.host_uid, privileges.gid, [self.workspace, self.home, self.state_dir]
            )
        self._ownership_lock = threading.Lock()
        args = [*_isolation_args(spec.variant.network, privileges), *_system_args()]
        args += [
            "--ro-bind",
            str(etc / "passwd"),
            "/etc/passwd",
            "--ro-bind",
            str(etc / "group"),
            "/etc/group",
        ]
        # A private /tmp per command, in memory, capped like the trial's folder.
        cap = size_cap(spec.variant.options)
        if sized_tmp:
            args += ["--perms", "01777", *(["--size", str(cap)] if cap else [])]
        args += ["--tmpfs", "/tmp"]
        # The folders leading to what is bound below, readable by all: bwrap 0.8 makes them
        # 0700 for root, which a program running as another user could not pass.
        for parent in sorted({str(p.parent) for p in (*mounts, self.workspace, self.home)}):
            args += ["--dir", parent]
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
        self._bridges: dict[int, Path] = {}
        self._bridge: list[str] = []  # what runs before each command's argv (see _bridge)

    @property
    def loopback_bridged(self) -> bool:  # type: ignore[override]
        return not self.spec.variant.network

    def bridge_loopback(self, port: int, socket_path: Path) -> None:
        if not self.loopback_bridged:
            return
        from ._bridge import bridge_argv, interpreter

        python, folder = interpreter()
        if folder is not None and not self._bridges:  # bound before / becomes read-only
            at = self._args.index("--remount-ro")
            self._args[at:at] = ["--dir", str(Path(folder).parent), "--ro-bind", folder, folder]
        self._bridges[port] = socket_path
        self._bridge = bridge_argv(self._bridges, python)

    def _tmpdir(self) -> str:
        return "/tmp"

    async def _ready(self) -> None:
        await asyncio.to_thread(self._give_folders)
        if self._cgroup is not None:
            self._cgroup.watch(self._over_cgroup_cap)

    def _private_tmps(self) -> Callable[[], list[str]] | None:
        return self._running_tmps if self._sized_tmp else None

    def _running_tmps(self) -> list[str]:
        """The /tmp of each command still running, as the host reaches it (for the size cap)."""
        try:
            statuses = list(self._status.values())
        except RuntimeError:  # changed meanwhile (this runs in the size monitor's thread)
            return []
        return [f"/proc/{s.init}/root/tmp" for s in statuses if s.init and s.fd >= 0]

    def _give_folders(self) -> None:
        if self._ownership is not None:
            with self._ownership_lock:
                self._ownership.apply()

    async def _start(
        self, argv: list[str], env: dict[str, str], cwd: Path, **kwargs: object
    ) -> asyncio.subprocess.Process:
        if self._ownership is not None:  # files the runner added since the last command
            await asyncio.to_thread(self._give_folders)
        # bwrap reports on --json-status-fd its sandbox's init (pid 1 inside), which can outlive
        # bwrap itself for a moment while the namespace is torn down (it is killed, waited for
        # and reaped with the command), then the program's exit code. No exit code means the
        # program never ran: bwrap's own set-up failed.
        read_fd, write_fd = os.pipe()
        filter_fd = _filter_fd(self.privileges)
        try:
            wrapped = [
                self.binary,
                *self._args,
                *(["--seccomp", str(filter_fd)] if filter_fd is not None else []),
                "--json-status-fd",
                str(write_fd),
                "--chdir",
                str(cwd),
                "--",
                *self.privileges.prefix,
                *self._bridge,
                *argv,
            ]
            if self._cgroup is not None:
                wrapped = self._cgroup.wrap(wrapped)
            fds = (write_fd,) if filter_fd is None else (write_fd, filter_fd)
            proc = await super()._start(wrapped, env, cwd, pass_fds=fds, **kwargs)
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
            if filter_fd is not None:
                os.close(filter_fd)
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
        if self._guard is not None and self._guard.exceeded:
            return None  # it ran, and was killed for going over the size cap
        if self._cgroup is not None and self._cgroup.check() is not None:
            return None  # it ran, and was killed for going over the memory or pids cap
        if status.exit_code is not None:
            # setpriv, which drops to the sandbox user, ran; the program itself may not have.
            # So may the loopback bridge (_bridge), which execs the program in its place.
            failed = [line for line in stderr.splitlines()
                      if line.startswith(("setpriv: failed to execute ", "anpord-bridge: failed to execute "))]
            if status.exit_code in (126, 127) and failed:
                return f"the bwrap sandbox could not start the program: {failed[-1]}"
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
            if self._cgroup is not None:
                self._cgroup.stop()
                self._cgroup.kill()
                await asyncio.to_thread(self._cgroup.remove)


def _filter_fd(privileges: Privileges) -> int | None:
    """A file descriptor holding the privileges' seccomp filter, read from the start (bwrap
    reads it whole), or None when they need none."""
    if privileges.seccomp is None:
        return None
    fd = os.memfd_create("anpord-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, privileges.seccomp)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd


# How long bwrap's status pipe may take to report after the command's exit.
STATUS_GRACE = 2.0


class _Status:
    """Reads bwrap's --json-status-fd for one command: a JSON document per line."""

    def __init__(self, root: int, fd: int, adopt: Callable[[int, int], None]):
        self.root, self.fd, self.adopt = root, fd, adopt
        self.exit_code: int | None = None
        self.init: int | None = None  # the sandbox's pid 1, once bwrap said it
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
            self.init = doc["child-pid"]
            self.adopt(self.root, self.init)
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

    async def privileges(self) -> Privileges:
        """Who programs in this sandbox run as (probed once per process): the first of
        ``_candidates()`` that bwrap can set up here and that really leaves the program without
        capabilities. SandboxError saying why when none can."""
        return (await self._setup())[0]

    def check(self) -> None:
        """SandboxError now (before a run starts) when there is no bubblewrap to run."""
        if not (os.path.isfile(self.binary) and os.access(self.binary, os.X_OK)):
            raise SandboxError(
                f"bubblewrap not found at {self.binary}: install it (apt-get install bubblewrap) "
                "or use sandbox='local'"
            )

    async def _setup(self) -> tuple[Privileges, bool]:
        """The privileges, and whether this bwrap can size a tmpfs (0.5 and later)."""
        self.check()
        key = f"{self.binary}\0{os.geteuid()}\0{os.environ.get(SANDBOX_UID_ENV, '')}"
        if key not in _probed:
            found: tuple[Privileges, bool] | str = "no way to run it"
            for candidate in _candidates():
                problem = await self._probe(candidate)
                if problem is None:
                    found = (candidate, await self._version() >= (0, 5))
                    break
                found = problem  # the last one tried says why the plainest way fails too
            _probed[key] = found
        result = _probed[key]
        if isinstance(result, str):
            raise SandboxError(f"bubblewrap cannot create a sandbox here: {result}")
        return result

    async def _version(self) -> tuple[int, ...]:
        try:
            proc = await asyncio.create_subprocess_exec(
                self.binary,
                "--version",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                stdin=asyncio.subprocess.DEVNULL,
            )
            out, _ = await asyncio.wait_for(proc.communicate(), 30)
            return tuple(int(n) for n in out.split()[-1].decode().split(".")[:3])
        except (OSError, TimeoutError, ValueError, IndexError):
            return (0,)

    async def _probe(self, privileges: Privileges) -> str | None:
        """Try once (namespaces may be disabled, setpriv missing); say why it fails.
        (No PID namespace here: its init would be left for this process to reap.)"""
        filter_fd = _filter_fd(privileges)
        argv = [
            self.binary,
            *_isolation_args(False, privileges, pid_namespace=False),
            *_system_args(),
            *(["--seccomp", str(filter_fd)] if filter_fd is not None else []),
            "--",
            *privileges.prefix,
            "cat",
            "/proc/self/status",
        ]
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=() if filter_fd is None else (filter_fd,),
            )
            out, err = await asyncio.wait_for(proc.communicate(), 30)
        except (TimeoutError, OSError) as exc:
            return str(exc) or type(exc).__name__
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
        if proc.returncode != 0:
            lines = err.decode("utf-8", "replace").strip().splitlines()
            return lines[-1] if lines else f"exit {proc.returncode}"
        return _held_back(out.decode("utf-8", "replace"), privileges)

    async def open(self, spec: SandboxSpec) -> BwrapInstance:
        privileges, sized_tmp = await self._setup()
        mounts = _resolve_mounts(spec)
        try:
            options = caps_options(spec.variant)
            memory, pids = memory_cap(options), pids_cap(options)
        except ValueError as exc:
            raise SandboxError(str(exc)) from None
        cgroup = TrialCgroup.create(memory, pids)
        try:
            inst = await open_instance(
                BwrapInstance,
                spec,
                self.tmp_root,
                binary=self.binary,
                mounts=mounts,
                privileges=privileges,
                sized_tmp=sized_tmp,
                cgroup=cgroup,
            )
        except BaseException:
            if cgroup is not None:
                await asyncio.to_thread(cgroup.remove)
            raise
        assert isinstance(inst, BwrapInstance)
        return inst

    def caps_unavailable(self) -> str | None:
        """Why this machine's trials get no memory or pids cap (no cgroup can be made), once a
        trial was opened; None while they do (or none was opened yet)."""
        return cgroup_unavailable()


def _held_back(status: str, privileges: Privileges) -> str | None:
    """What is wrong with a sandboxed program's /proc/self/status, if anything: it must hold no
    capability (none usable, none to regain) and run as the expected user."""
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    for name in ("CapEff", "CapPrm", "CapBnd", "CapAmb"):
        value = fields.get(name, "").strip()
        if not value or int(value, 16) != 0:
            return f"a sandboxed program would hold capabilities ({name} {value or 'unknown'})"
    uid = fields.get("Uid", "").split()
    if not uid or any(int(u) != privileges.uid for u in uid):
        seen = " ".join(uid) or "unknown"
        return f"a sandboxed program would run as uid {seen}, not {privileges.uid}"
    return None
