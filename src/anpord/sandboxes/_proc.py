"""Process-tree bookkeeping for sandboxes: find and kill everything a trial started.

A process group is not enough: a program can ``setsid`` or double-fork out of it. So each sandboxed
process carries a marker variable (``ANPORD_SANDBOX_ID``) and is attributed to its instance by any
of: being a descendant of a process the instance spawned, sharing its process group or session,
or carrying the marker in its environment. The runner process is made a child subreaper
(``PR_SET_CHILD_SUBREAPER``) so orphans are re-parented to it rather than to init: they stay
findable among its children, and it reaps the ones it kills.

Linux only (it reads ``/proc``); bwrap trials are additionally held by their PID namespace.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MARKER_ENV",
    "CappedBuffer",
    "ProcessTracker",
    "close_pipes",
    "discard",
    "drain",
    "enable_subreaper",
    "exit_code",
    "settle",
    "wait_exit",
]

MARKER_ENV = "ANPORD_SANDBOX_ID"
PR_SET_CHILD_SUBREAPER = 36

# After a command's main process exits, how long its output may still take to arrive.
DRAIN_GRACE = 2.0

_subreaper: bool | None = None
# Pids spawned (and not yet reaped) by any tracker: never attributed to another instance by
# group/session/marker, and never reaped by us (asyncio's child watcher owns them).
_SPAWNED: set[int] = set()


def enable_subreaper() -> bool:
    """Make this process the reaper of its orphaned descendants (once). Returns whether it is."""
    global _subreaper
    if _subreaper is None:
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            _subreaper = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            _subreaper = False
    return _subreaper


@dataclass(frozen=True, slots=True)
class _Proc:
    pid: int
    ppid: int
    pgrp: int
    session: int
    dead: bool  # a zombie with no thread left (one whose other threads still run is alive)
    started: int  # clock ticks after boot: tells a pid from a later process that reuses it


def _parse_stat(pid: int, raw: bytes) -> _Proc | None:
    # The command name may hold spaces and parentheses: fields start after the last ')'.
    fields = raw[raw.rfind(b")") + 2 :].split(maxsplit=20)
    if len(fields) < 20:
        return None
    return _Proc(
        pid,
        int(fields[1]),
        int(fields[2]),
        int(fields[3]),
        fields[0] == b"Z" and int(fields[17]) <= 1,
        int(fields[19]),
    )


def _scan() -> dict[int, _Proc]:
    procs: dict[int, _Proc] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
        except OSError:
            continue  # gone meanwhile
        try:
            raw = os.read(fd, 1024)
        except OSError:
            continue
        finally:
            os.close(fd)
        proc = _parse_stat(int(name), raw)
        if proc is not None:
            procs[proc.pid] = proc
    return procs


def _stat(pid: int) -> _Proc | None:
    """``pid`` as it is now, if it exists (as a zombie or alive)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return _parse_stat(pid, f.read())
    except OSError:
        return None


# How long a process may show an empty environment before we take it as having none: an execve
# in progress shows none until the new program's is set up, for microseconds.
EMPTY_ENVIRONMENT_GRACE = 0.05
_empty_since: dict[tuple[int, int], float] = {}
_no_environment: set[tuple[int, int]] = set()  # (pid, start time): not looked at again


def _has_marker(p: _Proc, needle: bytes) -> bool | None:
    """Whether ``p`` carries the marker; ``None`` while it cannot tell yet (no environment)."""
    key = (p.pid, p.started)
    if key in _no_environment:
        return False
    try:
        with open(f"/proc/{p.pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return False
    if env:
        _empty_since.pop(key, None)
        return needle in env.split(b"\0")
    now = time.monotonic()
    if len(_empty_since) > 10_000:  # of processes that vanished while being looked at
        _empty_since.clear()
    if now - _empty_since.setdefault(key, now) < EMPTY_ENVIRONMENT_GRACE:
        return None
    del _empty_since[key]
    if len(_no_environment) > 10_000:
        _no_environment.clear()
    _no_environment.add(key)
    return False


class ProcessTracker:
    """The processes one sandbox instance started, and the means to kill all of them."""

    def __init__(self, marker: str):
        self.marker = marker
        self._needle = f"{MARKER_ENV}={marker}".encode()
        self.roots: set[int] = set()
        # Attributed processes we did not spawn, by pid, with their start time. Each is reaped
        # by us once it is our child: an orphan is re-parented to us (the subreaper) only when
        # its parent dies, which may be after we killed both.
        self._unreaped: dict[int, int] = {}
        self._extras: dict[int, set[int]] = {}
        self.ever_spawned = False
        self.unsure = False  # the last find() met an orphan it could not attribute yet

    def track(self, pid: int) -> None:
        self.roots.add(pid)
        _SPAWNED.add(pid)
        self.ever_spawned = True

    def adopt(self, root: int, pid: int) -> None:
        """Attribute ``pid`` (e.g. a PID namespace's init, which outlives the ``bwrap`` that
        started it for a moment) to ``root``: killed and reaped with it."""
        self._extras.setdefault(root, set()).add(pid)

    def untrack(self, pid: int) -> None:
        self.roots.discard(pid)
        self._extras.pop(pid, None)
        _SPAWNED.discard(pid)

    def find(self, roots: set[int] | None = None, also: Collection[int] = ()) -> list[_Proc]:
        """Every live or zombie process attributed to ``roots`` (default: all this tracker's),
        plus ``also`` (processes attributed before) and their descendants."""
        roots = self.roots if roots is None else roots
        if not self.ever_spawned:
            return []
        procs = _scan()
        me = os.getpid()
        children: dict[int, list[int]] = {}
        for p in procs.values():
            children.setdefault(p.ppid, []).append(p.pid)
        found: set[int] = set()

        def take(pid: int) -> None:
            stack = [pid]
            while stack:
                cur = stack.pop()
                if cur in found or cur == me or cur not in procs:
                    continue
                found.add(cur)
                stack.extend(children.get(cur, ()))

        for pid in roots:
            take(pid)
            for extra in self._extras.get(pid, ()):
                take(extra)
        for pid in also:
            take(pid)
        foreign = _SPAWNED - roots
        orphan_parents = {me} if _subreaper else {me, 1}
        self.unsure = False
        for p in procs.values():
            if p.pid in found or p.pid in foreign or p.pid == me:
                continue
            if p.pgrp in roots or p.session in roots:
                take(p.pid)
            elif p.ppid in orphan_parents and not p.dead:
                marked = _has_marker(p, self._needle)
                if marked:
                    take(p.pid)
                elif marked is None:
                    self.unsure = True  # an orphan mid-execve: look again on the next pass
        return [procs[pid] for pid in found]

    def _sweep(self, roots: set[int] | None, seen: set[int]) -> bool:
        """One pass: find, remember, SIGKILL the live ones. Returns whether any was live (or
        an orphan could not be told apart yet)."""
        me = os.getpid()
        found = self.find(roots, seen)
        # Remembered: a dying process no longer shows its environment, yet is still ours.
        seen.update(p.pid for p in found)
        for p in found:
            if p.pid not in _SPAWNED and p.pid != me:
                self._unreaped.setdefault(p.pid, p.started)
        victims = [p for p in found if not p.dead]
        # A root leads its own process group (each command starts a session): killing the group
        # as well takes the root with its children in one step, even when the scan caught the
        # root at a moment it could not be read (a shell must never outlive the child it waits on).
        tracked = self.roots if roots is None else roots
        own = os.getpgrp()
        for group in {p.pgrp for p in victims if p.pgrp in tracked and p.pgrp not in (me, own)}:
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        # Parents before their children: a parent that sees its child killed could otherwise run
        # on for a moment (a shell's next command) before its own kill lands.
        parent = {p.pid: p.ppid for p in victims}

        def depth(pid: int) -> int:
            n = 0
            while (pid := parent.get(pid, 0)) in parent and n < len(parent):
                n += 1
            return n

        for p in sorted(victims, key=lambda v: depth(v.pid)):
            try:
                os.kill(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._reap_nowait()
        return bool(victims) or self.unsure

    def kill_now(self, roots: set[int] | None = None) -> tuple[set[int], bool]:
        """SIGKILL the tree synchronously (safe inside a cancellation handler). Returns the pids
        it attributed and whether its last pass found nothing alive."""
        seen: set[int] = set()
        if not self.ever_spawned:
            return seen, True
        for _ in range(20):  # repeat: a process may fork while we kill its parent
            if not self._sweep(roots, seen):
                return seen, True
        return seen, False

    async def kill(self, roots: set[int] | None = None, patience: float = 5.0) -> None:
        """Kill the tree and wait until every process of it is gone and adopted ones reaped."""
        seen, clean = self.kill_now(roots)
        if clean and not self._unreaped:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience
        while loop.time() < deadline:
            await asyncio.sleep(0.002)
            if not self._sweep(roots, seen) and not self._unreaped:
                return

    def _reap_nowait(self) -> None:
        me = os.getpid()
        for pid, started in list(self._unreaped.items()):
            now = _stat(pid)
            if now is None or now.started != started:
                del self._unreaped[pid]  # gone (its parent reaped it), or the pid is reused
                continue
            if now.ppid != me:
                continue  # its own parent reaps it, unless that parent dies first
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                del self._unreaped[pid]


class CappedBuffer:
    """Keeps the head and the tail of a stream up to ``cap`` bytes; counts what it dropped.
    A test runner's summary is at the end, a crash's cause often at the start."""

    def __init__(self, cap: int = 1 << 20, head: int = 128 << 10):
        self.cap, self.head_cap = cap, head
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - (self.cap - self.head_cap)
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        head = self.head.decode("utf-8", "replace")
        tail = self.tail.decode("utf-8", "replace")
        if self.dropped:
            return f"{head}\n[… {self.dropped} bytes dropped …]\n{tail}"
        return head + tail


async def drain(stream: asyncio.StreamReader | None, buffer: CappedBuffer) -> None:
    if stream is None:
        return
    while chunk := await stream.read(1 << 16):
        buffer.add(chunk)


async def wait_exit(proc: asyncio.subprocess.Process) -> None:
    """Wait until the process itself has exited.

    Not ``proc.wait()``: before Python 3.12 that also waits for its pipes to close, which a
    left-behind background process can hold open forever. A pidfd says exactly when it exits.
    """
    if proc.returncode is not None:
        return
    try:
        fd = os.pidfd_open(proc.pid)
    except ProcessLookupError:
        return  # already exited and reaped
    except (OSError, AttributeError):
        while proc.returncode is None:
            await asyncio.sleep(0.02)
        return
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        if not exited.done():
            exited.set_result(None)

    loop.add_reader(fd, readable)
    try:
        await exited
    finally:
        loop.remove_reader(fd)
        os.close(fd)


async def exit_code(proc: asyncio.subprocess.Process, grace: float = 5.0) -> int:
    """The exit code once the child watcher has reaped it (-9 if that does not happen in time)."""
    try:
        return await asyncio.wait_for(proc.wait(), grace)
    except TimeoutError:
        return proc.returncode if proc.returncode is not None else -9


def close_pipes(proc: asyncio.subprocess.Process) -> None:
    """Close a finished or killed command's pipes now.

    asyncio closes them when they reach end of file on a running loop. One still open when its
    loop closes (a test's ``asyncio.run``, a run that is interrupted) raises "Event loop is
    closed" from the transport's finalizer at some random later moment.
    """
    transport = getattr(proc, "_transport", None)  # private attribute; its methods are public
    if transport is None:
        return
    for fd in (0, 1, 2):
        pipe = transport.get_pipe_transport(fd)
        if pipe is not None:
            pipe.close()


def discard(future: asyncio.Future[Any]) -> None:
    """Cancel a future nobody will await again (output readers of a killed command)."""
    future.cancel()
    future.add_done_callback(lambda f: f.cancelled() or f.exception())


async def settle(
    proc: asyncio.subprocess.Process,
    readers: asyncio.Future[Any],
    kill: Callable[[], Awaitable[None]],
    kill_now: Callable[[], None],
    timeout: float | None = None,
) -> tuple[int, bool]:
    """Wait for ``proc`` to exit (at most ``timeout``), then kill what it left running (which
    would hold its pipes open), let ``readers`` drain and return (exit code, timed out). If the
    caller is cancelled meanwhile, the tree is killed at once."""
    timed_out = False
    try:
        try:
            await asyncio.wait_for(wait_exit(proc), timeout)
        except TimeoutError:
            timed_out = True
        await kill()
        try:
            await asyncio.wait_for(asyncio.shield(readers), DRAIN_GRACE)
        except TimeoutError:
            discard(readers)
        code = await exit_code(proc)
        close_pipes(proc)
        return code, timed_out
    except asyncio.CancelledError:
        kill_now()
        discard(readers)
        close_pipes(proc)
        raise
