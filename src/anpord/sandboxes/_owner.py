"""Which runner owns an instance folder, the watchdog that cleans up after a killed runner, and
``sweep_stale`` for what a runner and its watchdog both left behind.

An instance folder is named ``anpord-<pid>-<start>-<boot>-<random>``: the runner's pid, its start
time (clock ticks after boot, from ``/proc/<pid>/stat``) and a short id of the boot. A folder whose
runner is gone — no process with that pid, or one that started at another time (a reused pid),
or another boot — is stale. The same prefix is the value every sandboxed process's marker
(``ANPORD_SANDBOX_ID``) starts with, which is how the runner's leftover processes are found.
"""

from __future__ import annotations

import json
import atexit
import os
import re
import stat
import sys
import threading

from . import _watchdog
from ._watchdog import boot_id, discard_folder, kill_marked, start_time

__all__ = [
    "default_tmp_root",
    "instance_place",
    "instance_prefix",
    "start_watchdog",
    "sweep_stale",
    "watchdog_pid",
]

INSTANCE_NAME = re.compile(r"anpord-(\d+)-(\d+)-([0-9a-f]{8})-[a-z0-9_]{8}\Z")
# The note a docker instance leaves beside its folder, naming its container (see _container).
CONTAINER_NOTE = re.compile(r"(anpord-(\d+)-(\d+)-([0-9a-f]{8})-[a-z0-9_]{8})\.container\Z")

_tag: tuple[int, str] | None = None  # (pid, prefix): recomputed in a forked child


def instance_prefix() -> str:
    """``anpord-<pid>-<start>-<boot>-``: how this process's instance folders and markers start."""
    global _tag
    pid = os.getpid()
    if _tag is None or _tag[0] != pid:
        _tag = (pid, f"anpord-{pid}-{start_time(pid) or 0}-{boot_id()}-")
    return _tag[1]


# A memory-backed folder is used for trial folders when it has at least this much room.
SHM = "/dev/shm"
SHM_MIN_FREE = 4 << 30
_default_root: list[str | None] = []


def default_tmp_root() -> str | None:
    """Where instance folders go: ``$ANPORD_SANDBOX_TMP``, else ``$TMPDIR`` when set, else
    /dev/shm when it is a tmpfs with room (filling a workspace in memory is several times
    faster than on disk: a small file costs a block allocation there), else the system default."""
    explicit = os.environ.get("ANPORD_SANDBOX_TMP") or os.environ.get("TMPDIR")
    if explicit:
        return explicit
    if not _default_root:
        choice = None
        try:
            with open("/proc/self/mounts") as f:
                tmpfs = any(line.split()[1:3] == [SHM, "tmpfs"] for line in f)
            st = os.statvfs(SHM)
            if tmpfs and st.f_bavail * st.f_frsize >= SHM_MIN_FREE and os.access(SHM, os.W_OK):
                choice = SHM
        except (OSError, IndexError):
            pass
        _default_root.append(choice)
    return _default_root[0]


def instance_place(tmp_root: str | os.PathLike[str] | None = None) -> str:
    """The absolute folder instance folders go in: ``tmp_root``, else the default."""
    if tmp_root is None:
        tmp_root = default_tmp_root()
        if tmp_root is None:
            import tempfile

            tmp_root = tempfile.gettempdir()
    return os.path.abspath(tmp_root)


# -- the watchdog ---------------------------------------------------------------------------------


class _Lifeline:
    """The runner's end of the pipe the watchdog waits on."""

    def __init__(self) -> None:
        import subprocess

        self.owner = os.getpid()
        self.roots: set[str] = set()
        read_end, self.fd = os.pipe()  # both ends close on exec: no program inherits them
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-S", _watchdog.__file__, instance_prefix()],
                stdin=read_end,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                start_new_session=True,  # a signal to the runner's group must not end it
            )
        except BaseException:
            os.close(self.fd)
            raise
        finally:
            os.close(read_end)

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None

    def release(self, wait: float = 2.0) -> None:
        """At this runner's normal exit: close the pipe, so the watchdog does its (by now empty)
        sweep and exits, and reap it. Left to exit on its own it would be re-parented to whoever
        reaps orphans, and in a process that is itself a subreaper (a test runner running anpord
        both in-process and as subprocesses) stay a zombie there."""
        if self.owner != os.getpid():
            return  # a forked child's copy: the pipe and the watchdog are its parent's
        try:
            os.close(self.fd)
        except OSError:
            return
        try:
            self.proc.wait(wait)
        except Exception:  # noqa: BLE001 - still busy: it finishes (and is reaped) without us
            pass

    def tell(self, root: str) -> bool:
        try:
            os.write(self.fd, json.dumps(root).encode() + b"\n")
        except OSError:
            return False
        self.roots.add(root)
        return True


_lifeline: _Lifeline | None = None
_unavailable: str | None = None  # why no watchdog could be started (then only sweep_stale helps)
_lock = threading.Lock()


def start_watchdog(root: str) -> None:
    """Make sure this runner has a live watchdog that knows instance folders are made in ``root``.
    Costs a process start once per runner, then nothing unless ``root`` is new."""
    global _lifeline, _unavailable
    with _lock:
        for _ in range(2):  # a watchdog that died meanwhile is replaced once
            if _unavailable is not None:
                return
            if _lifeline is None or not _lifeline.alive():
                # A dead watchdog's folders are the new one's to watch (a forked child's are not).
                mine = _lifeline is not None and _lifeline.owner == os.getpid()
                roots = _lifeline.roots if _lifeline is not None and mine else set()
                try:
                    _lifeline = _Lifeline()
                    atexit.register(_lifeline.release)
                except OSError as exc:
                    _unavailable = f"{sys.executable}: {exc.strerror or exc}"
                    return
                for known in roots:
                    _lifeline.tell(known)
            if root in _lifeline.roots or _lifeline.tell(root):
                return
            _lifeline = None


def watchdog_pid() -> int | None:
    """The pid of this runner's watchdog, if one runs."""
    if _lifeline is not None and _lifeline.alive():
        return _lifeline.proc.pid
    return None


# -- leftovers ------------------------------------------------------------------------------------


def _owner_alive(pid: int, started: int, boot: str, this_boot: str) -> bool:
    return boot == this_boot and start_time(pid) == started


def sweep_stale(tmp_root: str | os.PathLike[str] | None = None) -> int:
    """Remove the instance folders whose runner is gone (killed before it could clean up, and
    its watchdog with it), after killing any process still carrying their marker. Looks in
    ``tmp_root``, by default where this process makes instance folders. Never touches a live
    runner's folders, nor anything not named and owned like an instance folder of this user.
    Also removes the containers of the docker instances of such runners. Never raises; returns
    how many folders it removed."""
    try:
        base = instance_place(tmp_root)
        with os.scandir(base) as entries:
            candidates = [(e.name, INSTANCE_NAME.match(e.name)) for e in entries]
        this_boot = boot_id()
        me = os.geteuid()
        stale: list[str] = []
        owners: set[str] = set()
        notes = [
            os.path.join(base, name)
            for name, match in candidates
            if match is None
            and (note := CONTAINER_NOTE.match(name)) is not None
            and not _owner_alive(int(note[2]), int(note[3]), note[4], this_boot)
        ]
        if notes:  # containers of killed runners (the CLI runs only when there are some)
            from ._container import remove_containers

            remove_containers(notes)
        for name, match in candidates:
            if match is None:
                continue
            pid, started, boot = int(match[1]), int(match[2]), match[3]
            if _owner_alive(pid, started, boot, this_boot):
                continue
            path = os.path.join(base, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != me:
                continue
            stale.append(path)
            owners.add(name[: match.end(3) + 1])
        if not stale:
            return 0
        kill_marked(sorted(owners), patience=2.0)
        for path in stale:
            discard_folder(path)
        return sum(not os.path.lexists(p) for p in stale)
    except Exception:  # noqa: BLE001 - a sweep must never stop the command that runs it
        return 0
