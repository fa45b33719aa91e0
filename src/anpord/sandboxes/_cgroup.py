"""Per-trial memory and process-count caps for bwrap trials, held by a cgroup of their own.

Each trial gets a memory and a pids cgroup (v1: one in each hierarchy that has the controller;
v2: one group, where the runner's own cgroup delegates both controllers), made under the
runner's own cgroup so that limits set above it still apply. Every command of the trial is
started inside it (``wrap``: a shell writes its pid into ``cgroup.procs`` and execs bwrap), so
all it forks is counted, whatever uid it switches to — root's RLIMIT_NPROC is not enforced, and
rlimits count per uid across trials, so a cgroup is the only per-trial bound.

- **memory**: the kernel's limit; over it, the kernel kills a process of the trial (OOM).
- **pids**: the number of processes and threads at once; a fork over it fails (EAGAIN).

A monitor reads the groups' event counters (``oom_kill``, pids ``max``) a few times a second;
the first breach is remembered and the trial's processes killed, so a fork bomb stops at once,
and the runner fails the trial naming the cap (``limit_exceeded``).

Where no cgroup can be made (not root, no delegated cgroup v2, a read-only cgroupfs), the caps
are not held: ``TrialCgroup.create`` returns None and says why once (``unavailable``).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import signal
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ._size import format_size, parse_size

__all__ = [
    "DEFAULT_MEMORY",
    "DEFAULT_PIDS",
    "MEMORY_ENV",
    "MEMORY_OPTION",
    "PIDS_ENV",
    "PIDS_OPTION",
    "TrialCgroup",
    "memory_cap",
    "pids_cap",
    "unavailable",
]

MEMORY_OPTION = "memory"  # Variant(options={"memory": "2G"})
PIDS_OPTION = "pids"  # Variant(options={"pids": 256})
MEMORY_ENV = "ANPORD_SANDBOX_MEMORY"  # the defaults for variants that do not say
PIDS_ENV = "ANPORD_SANDBOX_PIDS"
DEFAULT_MEMORY = 4 << 30
DEFAULT_PIDS = 1024
MIN_PIDS = 8  # bwrap, its init, a shell and the program at the least
_NO_CAP = ("none", "unlimited")
# How often the event counters are read.
POLL_INTERVAL = 0.2

_names = itertools.count(1)
_reason: list[str] = []  # why no cgroup could be made here, once known


def memory_cap(options: Mapping[str, Any]) -> int | None:
    """The memory cap for a variant: its ``memory`` option, else ``$ANPORD_SANDBOX_MEMORY``,
    else 4 GiB; None for ``"none"``. ValueError naming where a bad value came from."""
    where, value = _source(options, MEMORY_OPTION, MEMORY_ENV)
    if value is None:
        return DEFAULT_MEMORY
    try:
        return parse_size(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def pids_cap(options: Mapping[str, Any]) -> int | None:
    """The process-count cap: its ``pids`` option, else ``$ANPORD_SANDBOX_PIDS``, else 1024;
    None for ``"none"``. ValueError naming where a bad value came from."""
    where, value = _source(options, PIDS_OPTION, PIDS_ENV)
    if value is None:
        return DEFAULT_PIDS
    text = value.strip() if isinstance(value, str) else None
    if text is not None and text.lower() in _NO_CAP:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
    elif text is not None and text.isdigit():
        count = int(text)
    else:
        raise ValueError(f"{where}: {value!r} is not a number of processes (e.g. 256, or none)")
    if count < MIN_PIDS:
        raise ValueError(f"{where}: {value!r} is below the smallest cap, {MIN_PIDS}")
    return count


def _source(options: Mapping[str, Any], option: str, env: str) -> tuple[str, Any]:
    if option in options:
        return f"Variant options {option}", options[option]
    if os.environ.get(env):
        return env, os.environ[env]
    return "", None


def unavailable() -> str | None:
    """Why trials here get no cgroup (so no memory or pids cap), once one was tried."""
    return _reason[0] if _reason else None


# -- where the groups go -------------------------------------------------------------------------


def _mounts() -> dict[str, tuple[str, str]]:
    """(mount point, the hierarchy's folder mounted there) by controller (v1), and ``""`` for
    the v2 hierarchy. A container often mounts only its own part of a hierarchy."""
    found: dict[str, tuple[str, str]] = {}
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, more = left.split(), right.split()
        if len(fields) < 5 or len(more) < 3:
            continue
        kind, options = more[0], more[2].split(",")
        if kind == "cgroup":
            for controller in ("memory", "pids"):
                if controller in options:
                    found.setdefault(controller, (fields[4], fields[3]))
        elif kind == "cgroup2":
            found.setdefault("", (fields[4], fields[3]))
    return found


def _folder(mount: tuple[str, str], own: str) -> Path:
    """Where the cgroup ``own`` (a path in its hierarchy) is under ``mount``."""
    point, root = mount
    relative = os.path.relpath(own, root) if own.startswith(root) else own.lstrip("/")
    return Path(point) if relative in (".", "") else Path(point) / relative


def _own_paths() -> dict[str, str]:
    """This process's cgroup path per controller (v1), and ``""`` for v2."""
    paths: dict[str, str] = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return paths
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            paths[controller] = parts[2]
    return paths


def _parents() -> dict[str, Path] | str:
    """The folder to make trial groups in, per controller (``memory``, ``pids``; one folder for
    both on v2), or why there is none."""
    mounts, own = _mounts(), _own_paths()
    if "memory" in mounts and "pids" in mounts:
        return {c: _folder(mounts[c], own.get(c, "/")) for c in ("memory", "pids")}
    if "" in mounts:
        parent = _folder(mounts[""], own.get("", "/"))
        try:
            delegated = (parent / "cgroup.subtree_control").read_text().split()
        except OSError as exc:
            return f"cannot read {parent}/cgroup.subtree_control: {exc.strerror}"
        missing = [c for c in ("memory", "pids") if c not in delegated]
        if missing:
            return f"the runner's cgroup ({parent}) does not delegate the {' and '.join(missing)} controller"
        return {"memory": parent, "pids": parent}
    return "no cgroup hierarchy with the memory and pids controllers is mounted"


def _sweep(parent: Path) -> None:
    """Remove the groups runners that are gone left behind (they are empty by then)."""
    try:
        names = os.listdir(parent)
    except OSError:
        return
    for name in names:
        match = re.fullmatch(r"anpord-(\d+)-\d+", name)
        if match is None or _alive(int(match[1])):
            continue
        try:
            os.rmdir(parent / name)
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_swept: set[Path] = set()


def _count(path: Path, key: str) -> int:
    """The ``key N`` line's N in a cgroup's flat-keyed file (0 when it cannot be read)."""
    try:
        text = path.read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0


class TrialCgroup:
    """One trial's groups: commands are started in them, breaches are watched for."""

    def __init__(self, dirs: list[Path], v2: bool, memory: int | None, pids: int | None):
        self.dirs, self.v2 = dirs, v2
        self.memory, self.pids = memory, pids
        self.breach: str | None = None
        self._task: asyncio.Task[None] | None = None

    @classmethod
    def create(cls, memory: int | None, pids: int | None) -> TrialCgroup | None:
        """Groups holding these caps, or None when none can be made here (``unavailable``
        says why) or no cap is asked for."""
        if memory is None and pids is None:
            return None
        if _reason:
            return None
        parents = _parents()
        if isinstance(parents, str):
            _reason.append(parents)
            return None
        name = f"anpord-{os.getpid()}-{next(_names)}"
        v2 = parents["memory"] == parents["pids"]
        made: list[Path] = []
        try:
            for parent in dict.fromkeys(parents.values()):
                if parent not in _swept:
                    _swept.add(parent)
                    _sweep(parent)
                folder = parent / name
                folder.mkdir()
                made.append(folder)
            group = cls(made, v2, memory, pids)
            group._set_limits(parents)
        except OSError as exc:
            for folder in made:
                try:
                    folder.rmdir()
                except OSError:
                    pass
            _reason.append(f"cannot make a cgroup in {parents['memory']}: {exc.strerror or exc}")
            return None
        return group

    def _set_limits(self, parents: Mapping[str, Path]) -> None:
        memory_dir = parents["memory"] / self.dirs[0].name
        pids_dir = parents["pids"] / self.dirs[0].name
        if self.v2:
            if self.memory is not None:
                (memory_dir / "memory.max").write_text(str(self.memory))
                if (memory_dir / "memory.swap.max").exists():
                    (memory_dir / "memory.swap.max").write_text("0")
            if self.pids is not None:
                (pids_dir / "pids.max").write_text(str(self.pids))
            return
        if self.memory is not None:
            (memory_dir / "memory.limit_in_bytes").write_text(str(self.memory))
            memsw = memory_dir / "memory.memsw.limit_in_bytes"
            if memsw.exists():  # swap counted too: the cap is on memory, wherever it sits
                memsw.write_text(str(self.memory))
        if self.pids is not None:
            (pids_dir / "pids.max").write_text(str(self.pids))

    # -- starting commands in it ------------------------------------------------------------

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started inside the groups: the shell joins them, then becomes ``argv`` (its
        pid stays the command's). A join that fails exits 125 before anything runs."""
        procs = [str(d / "cgroup.procs") for d in self.dirs]
        script = 'for f do [ "$f" = -- ] && break; echo $$ > "$f" || exit 125; done; shift ' + str(
            len(procs) + 1
        ) + '; exec "$@"'
        return ["/bin/sh", "-c", script, "anpord-cgroup", *procs, "--", *argv]

    # -- breaches ---------------------------------------------------------------------------

    def _counters(self) -> tuple[int, int]:
        """(processes the kernel killed for memory, forks refused for the pids cap)."""
        memory = self.dirs[0] / ("memory.events" if self.v2 else "memory.oom_control")
        return _count(memory, "oom_kill"), _count(self.dirs[-1] / "pids.events", "max")

    def check(self) -> str | None:
        """The breach, if there was one (remembered once seen)."""
        if self.breach is None:
            oom, forks = self._counters()
            if oom and self.memory is not None:
                self.breach = (
                    f"memory limit reached: {format_size(self.memory)} (the kernel killed a process "
                    f"of the trial; Variant(options={{'{MEMORY_OPTION}': ...}}) raises it)"
                )
            elif forks and self.pids is not None:
                self.breach = (
                    f"process limit reached: {self.pids} processes (a fork was refused; "
                    f"Variant(options={{'{PIDS_OPTION}': ...}}) raises it)"
                )
        return self.breach

    def watch(self, on_breach: Callable[[], None]) -> None:
        """Check a few times a second until ``stop``; call ``on_breach`` at the first breach."""

        async def poll() -> None:
            while self.check() is None:
                await asyncio.sleep(POLL_INTERVAL)
            on_breach()

        self._task = asyncio.ensure_future(poll())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    # -- the end ----------------------------------------------------------------------------

    def kill(self) -> None:
        """SIGKILL whatever is still in the groups (by the kernel's own list: nothing escapes)."""
        for _ in range(20):  # repeat: a process may fork while its parent is being killed
            pids = self._members()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def _members(self) -> set[int]:
        pids: set[int] = set()
        for folder in self.dirs:
            try:
                pids.update(int(x) for x in (folder / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return pids

    def remove(self, patience: float = 1.0) -> None:
        """Remove the groups once they are empty (killed processes leave them as they die)."""
        self.stop()
        deadline = time.monotonic() + patience
        for folder in self.dirs:
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        break  # left for the next runner's sweep
                    self.kill()
                    time.sleep(0.01)
