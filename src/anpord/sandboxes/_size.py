"""The size cap of a trial's folder (workspace, HOME and temp files together).

Two ways to hold it, chosen per instance:

- **tmpfs** (a hard cap): when anpord runs as root and instance folders are in memory anyway
  (``/dev/shm``, the default), each instance folder is a tmpfs of its own, mounted with
  ``size=<cap>``: a write past the cap fails with ENOSPC. The mount also caps inodes, since empty
  files cost kernel memory without counting towards ``size``.
- **watch** (everywhere else: not root, or folders on a disk): a thread measures the folder
  (allocated blocks, each inode once) and kills the trial's processes when it is over the cap. It
  measures every 0.5 s, or less often for a large folder (so that measuring costs at most ~5 % of
  a core), so a trial can overshoot by what it writes in between.

Either way a breach is remembered (a trial that hit the cap and then deleted files still hit it)
and read by the runner through ``SandboxInstance.limit_exceeded()``.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "DEFAULT_SIZE",
    "SIZE_ENV",
    "SIZE_OPTION",
    "SizeGuard",
    "format_size",
    "inode_cap",
    "mount_capped",
    "parse_size",
    "release",
    "size_cap",
    "usage",
]

SIZE_OPTION = "sandbox_size"  # Variant(options={"sandbox_size": "2G"})
SIZE_ENV = "ANPORD_SANDBOX_SIZE"  # the default for every variant that does not say
DEFAULT_SIZE = 1 << 30
MIN_SIZE = 1 << 20
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?", re.IGNORECASE)
_NO_CAP = ("none", "unlimited")


def parse_size(value: object) -> int | None:
    """Bytes from ``2G``, ``512M``, ``1.5GiB``, ``3000k`` (binary units) or an int; ``None`` for
    ``"none"``/``"unlimited"`` (no cap). Anything else: ValueError saying what is accepted."""
    # Options are plain data read from a config: a wrong type is a wrong value here.
    text = value.strip() if isinstance(value, str) else None
    if text is not None and text.lower() in _NO_CAP:
        return None
    match = _SIZE.fullmatch(text) if text is not None else None
    if isinstance(value, int) and not isinstance(value, bool):
        size = value
    elif match is not None:
        size = int(float(match[1]) * _UNITS[match[2].lower()])
    else:
        raise ValueError(f"{value!r} is not a size (e.g. 512M, 2G, or none)")
    if size < MIN_SIZE:
        raise ValueError(f"{value!r} is below the smallest cap, 1M")
    return size


def format_size(size: int) -> str:
    for unit, factor in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size} bytes"


def size_cap(options: Mapping[str, Any]) -> int | None:
    """The cap for a variant with these ``options``: its ``sandbox_size``, else
    ``$ANPORD_SANDBOX_SIZE``, else 1 GiB. ValueError naming where a bad value came from."""
    if SIZE_OPTION in options:
        where, value = f"Variant options {SIZE_OPTION}", options[SIZE_OPTION]
    elif os.environ.get(SIZE_ENV):
        where, value = SIZE_ENV, os.environ[SIZE_ENV]
    else:
        return DEFAULT_SIZE
    try:
        return parse_size(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


# -- tmpfs: a hard cap ----------------------------------------------------------------------------

MS_NOSUID, MS_NODEV = 2, 4
TMPFS_MAGIC = 0x01021994
_in_memory: dict[str, bool] = {}
_cannot_mount: list[str] = []  # why mounting failed once (not tried again)


def _is_tmpfs(path: str) -> bool:
    if path not in _in_memory:
        best, fstype = "", ""
        try:
            real = os.path.realpath(path)
            with open("/proc/self/mounts") as f:
                for line in f:
                    fields = line.split()
                    point = fields[1].replace("\\040", " ")
                    inside = real == point or real.startswith(point.rstrip("/") + "/")
                    if inside and len(point) >= len(best):
                        best, fstype = point, fields[2]
        except (OSError, IndexError):
            pass
        _in_memory[path] = fstype == "tmpfs"
    return _in_memory[path]


# Caps of the tmpfs mounts this process holds open, by folder: together they stay within the
# room the memory-backed folder they sit in had (its own size limit no longer covers them).
_mounted: dict[str, int] = {}
_mounted_lock = threading.Lock()


def mount_capped(folder: Path, size: int) -> bool:
    """Mount a tmpfs of ``size`` bytes on the empty ``folder`` when that is possible and keeps
    the data where it was going anyway (in memory), within the room there. Returns whether it
    did; ``release`` it when the folder is gone."""
    if _cannot_mount or os.geteuid() != 0 or not _is_tmpfs(str(folder.parent)):
        return False
    with _mounted_lock:
        try:
            st = os.statvfs(folder.parent)
        except OSError:
            return False
        if sum(_mounted.values()) + size > st.f_bavail * st.f_frsize:
            return False  # watched instead, inside the folder's own limit
        _mounted[str(folder)] = size
    options = f"size={size},nr_inodes={inode_cap(size)},mode=0700"
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"anpord", os.fsencode(folder), b"tmpfs", MS_NOSUID | MS_NODEV, options.encode()):
        _cannot_mount.append(os.strerror(ctypes.get_errno()))
        release(folder)
        return False
    return True


def release(folder: Path) -> None:
    """Forget the mount on ``folder`` (unmounted, or never made)."""
    with _mounted_lock:
        _mounted.pop(str(folder), None)


# -- the guard ------------------------------------------------------------------------------------

WATCH_INTERVAL = 0.5  # seconds between two measurements of a folder (at least)
WATCH_SHARE = 20  # ... and at least this many times what the last measurement took
TMPFS_INTERVAL = 0.25
PAGE = 4096


def inode_cap(size: int) -> int:
    """How many files a cap of ``size`` bytes allows: one per 4 KiB, never fewer than 16384
    (empty files cost kernel memory, or disk inodes, without counting towards the bytes)."""
    return max(size // 4096, 16384)


def usage(top: str) -> tuple[int, int]:
    """(bytes allocated, inodes) under ``top``: every inode once, links never followed.
    Descends by file descriptor (one open per level), so an agent swapping a folder for a link
    mid-walk cannot send it elsewhere."""
    seen: set[int] = set()
    total = 0
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
    try:
        fd = os.open(top, flags)
    except OSError:
        return 0, 0
    stack: list[tuple[int, list[str]]] = []
    while True:
        subdirs: list[str] = []
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if st.st_ino not in seen:
                        seen.add(st.st_ino)
                        total += st.st_blocks * 512
                    if stat.S_ISDIR(st.st_mode):
                        subdirs.append(entry.name)
        except OSError:
            pass
        stack.append((fd, subdirs))
        fd = -1
        while stack and fd < 0:
            parent, pending = stack[-1]
            if not pending:
                os.close(parent)
                stack.pop()
                continue
            try:
                fd = os.open(pending.pop(), flags, dir_fd=parent)
            except OSError:
                fd = -1
        if fd < 0:
            return total, len(seen)


FULL_SLACK = 16 * PAGE  # see _full


def _full(mount: str) -> bool:
    """Whether the capped tmpfs at ``mount`` has no room left (blocks or inodes)."""
    try:
        st = os.statvfs(mount)
    except OSError:
        return False
    # A write was refused when less than a few pages are left: a harness may have deleted a
    # small file of its own since (its prompt, its history), which must not hide the breach.
    return st.f_bavail * st.f_frsize < FULL_SLACK or (st.f_files > 0 and st.f_favail <= 2)


class SizeGuard:
    """Holds one instance folder to its cap (see the module's docstring)."""

    def __init__(
        self,
        root: Path,
        cap: int,
        mounted: bool,
        on_exceeded: Callable[[], None] | None = None,
        private_tmps: Callable[[], list[str]] | None = None,
    ):
        self.root = root
        # Capped tmpfs mounts outside the folder that count too (bwrap's per-command /tmp).
        self.private_tmps = private_tmps
        self.cap = cap
        self.mounted = mounted
        self.exceeded = False
        self._on_exceeded = on_exceeded
        self._lock = threading.Lock()  # one measurement at a time (monitor and final check)
        self.due = 0.0  # when the monitor measures next
        self._walk_due = 0.0  # when the folder is walked next (watch mode)

    def over(self, final: bool = False) -> bool:
        """Measure what is due (everything when ``final``); remember a breach; return whether
        the trial is over its cap now."""
        with self._lock:
            now = time.monotonic()
            over = walked_over = False
            if self.mounted:
                over = _full(str(self.root))
            elif final or now >= self._walk_due:
                used, inodes = usage(str(self.root))
                over = walked_over = used > self.cap or inodes > inode_cap(self.cap)
                took = time.monotonic() - now
                self._walk_due = time.monotonic() + max(WATCH_INTERVAL, WATCH_SHARE * took)
            if self.private_tmps is not None and any(_full(p) for p in self.private_tmps()):
                over = True
            self.due = now + TMPFS_INTERVAL
            if not self.mounted and self.private_tmps is None:
                self.due = self._walk_due
            if over:
                self.exceeded = True
        # Only a walked folder needs its processes killed: a tmpfs refuses the writes itself.
        if walked_over and self._on_exceeded is not None:
            self._on_exceeded()
        return over

    def message(self) -> str:
        return (
            f"workspace size limit reached: {format_size(self.cap)} "
            f"(Variant(options={{'{SIZE_OPTION}': ...}}) raises it)"
        )


class _Monitor:
    """One thread measuring every open guard when it is due."""

    def __init__(self) -> None:
        self.guards: set[SizeGuard] = set()
        self.wake = threading.Condition()
        self.thread: threading.Thread | None = None
        self.owner = 0

    def add(self, guard: SizeGuard) -> None:
        with self.wake:
            self.guards.add(guard)
            if self.thread is None or self.owner != os.getpid():  # none yet, or we were forked
                self.owner = os.getpid()
                self.thread = threading.Thread(
                    target=self._run, name="anpord-size-cap", daemon=True
                )
                self.thread.start()
            self.wake.notify()

    def remove(self, guard: SizeGuard) -> None:
        with self.wake:
            self.guards.discard(guard)

    def _run(self) -> None:
        while True:
            with self.wake:
                while not self.guards:
                    self.wake.wait()
                now = time.monotonic()
                due = [g for g in self.guards if g.due <= now]
            for guard in due:
                try:
                    guard.over()
                except Exception:  # noqa: BLE001 - a failed measurement is retried next time
                    guard.due = time.monotonic() + WATCH_INTERVAL
            with self.wake:
                if self.guards:
                    nearest = min(g.due for g in self.guards)
                    self.wake.wait(max(0.01, nearest - time.monotonic()))


_MONITOR = _Monitor()


def watch(guard: SizeGuard) -> None:
    _MONITOR.add(guard)


def unwatch(guard: SizeGuard) -> None:
    _MONITOR.remove(guard)


async def final_check(guard: SizeGuard) -> bool:
    """Measure once more (in a thread when it walks the folder); whether the cap was ever hit."""
    import asyncio

    if guard.mounted:
        guard.over(final=True)
    else:
        await asyncio.to_thread(guard.over, True)
    return guard.exceeded
