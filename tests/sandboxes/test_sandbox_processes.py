"""No process outlives its sandbox: not background jobs, not ones that setsid or double-fork,
not on timeout, not on cancellation."""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_support import KINDS, live_with, make_sandbox, run, spec

pytestmark = pytest.mark.parametrize("kind", KINDS)
_n = itertools.count()


def token() -> str:
    """A unique sleep duration: how the test finds the processes again in /proc."""
    return f"{4000 + os.getpid() % 1000}.{next(_n)}{os.getpid() % 97}"


ESCAPES = (
    "sleep {t} &",  # a background job
    "(sleep {t} &)",  # double fork: re-parented
    "setsid sleep {t} &",  # a new session and process group
    "(setsid sleep {t} &)",  # both
    "nohup sleep {t} >/dev/null 2>&1 &",
    "setsid bash -c 'sleep {t} & sleep {t}' </dev/null >/dev/null 2>&1 &",  # a new session that forks
)


@pytest.mark.parametrize("escape", ESCAPES)
def test_exec_leaves_no_process_behind(kind: str, escape: str, tmp_root: Path) -> None:
    t = token()

    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            # Had it waited for the background sleep (over an hour), it would have timed out.
            res = await inst.exec(escape.format(t=t) + "\necho started", timeout=60)
            assert res.stdout == "started\n" and res.ok, res
            assert live_with(t) == []
        finally:
            await inst.close()

    run(go())


def processes() -> Iterator[tuple[int, str, str, int, int]]:
    """Every process now: (pid, name, state, parent pid, thread count), from /proc/<pid>/stat."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                head, rest = f.read().rsplit(")", 1)
        except (OSError, ValueError):
            continue
        fields = rest.split()
        yield int(name), head.split("(", 1)[1], fields[0], int(fields[1]), int(fields[17])


def zombie_leaders_with_live_threads(t: str) -> set[int]:
    """Processes carrying ``t`` whose main thread exited while other threads run on: "Z", yet
    alive. (A live thread still shows the command line; the exited main thread does not.)"""
    found = set()
    for pid, _, state, _, threads in processes():
        if state != "Z" or threads <= 1:
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
            lines = []
            for tid in tids:
                with open(f"/proc/{pid}/task/{tid}/cmdline", "rb") as f:
                    lines.append(f.read())
        except OSError:
            continue
        if any(t.encode() in line for line in lines):
            found.add(pid)
    return found


def test_a_process_whose_main_thread_exited_is_still_killed(kind: str, tmp_root: Path) -> None:
    # Looks like a zombie ("Z") while its other threads keep running.
    t = token()
    program = (
        "import ctypes, threading, time\n"
        "threading.Thread(target=time.sleep, args=(600,)).start()\n"
        "ctypes.CDLL(None).syscall(60, 0)  # exit the main thread only\n"
    )

    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            # Not held until the thread's ten minutes end, nor until the exec's timeout.
            res = await inst.exec(f"(python3 -c '{program}' {t} &); sleep 0.5; echo ok", timeout=60)
            assert res.stdout == "ok\n" and res.ok, res
        finally:
            await inst.close()

    run(go())
    assert zombie_leaders_with_live_threads(t) == set()


def test_close_kills_a_running_tree(kind: str, tmp_root: Path) -> None:
    t = token()

    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        proc = await inst.spawn(
            ["bash", "-c", f"(setsid sleep {t} &); sleep {t}"], env=inst.environment()
        )
        try:
            # Within seconds: a loaded machine can take a while to fork and exec both.
            assert await gone_or_present(t, present=2), "the command never started"
        finally:
            await inst.close()
        # The tree is dead once close() returns; asyncio's child watcher records the exit status
        # a little later, so wait for it rather than reading returncode at once.
        await asyncio.wait_for(proc.wait(), 60)
        assert live_with(t) == []

    run(go())


def test_cancelling_an_exec_kills_its_tree(kind: str, tmp_root: Path) -> None:
    t = token()

    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            task = asyncio.ensure_future(inst.exec(f"(setsid sleep {t} &); sleep {t}", timeout=60))
            assert await gone_or_present(t, present=2), "the command never started"
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # SIGKILL is sent before the cancellation returns; dying takes a moment.
            assert await gone_or_present(t, present=0), live_with(t)
        finally:
            await inst.close()

    run(go())


async def gone_or_present(t: str, present: int, within: float = 60) -> bool:
    """Wait until at least ``present`` processes carry ``t`` (or none, for 0); ``within`` only
    bounds a hang (the processes sleep for hours)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        n = len(live_with(t))
        if (n >= present) if present else n == 0:
            return True
        await asyncio.sleep(0.02)
    return False


def test_a_start_cancelled_half_way_leaves_nothing(kind: str, tmp_root: Path) -> None:
    # Cancelled at every step of a start: asyncio alone would kill only the direct child
    # and orphan what it started (bwrap's namespace init, a shell's first children).
    t = token()
    before = set(zombie_children())  # other tests' orphans adopted by this (subreaper) process

    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            for steps in range(12):
                task = asyncio.ensure_future(inst.exec(f"sleep {t} & sleep {t}", timeout=60))
                for _ in range(steps):
                    await asyncio.sleep(0)
                task.cancel()
                if steps % 2:  # and again, while the first cancellation is being handled
                    await asyncio.sleep(0)
                    task.cancel()
                # Never waiting on pipes that orphans hold open (they sleep for hours).
                done, _ = await asyncio.wait({task}, timeout=60)
                assert done and task.cancelled(), f"cancelled after {steps} steps: still running"
            assert await gone_or_present(t, present=0), live_with(t)
        finally:
            await inst.close()

    run(go())
    assert set(zombie_children()) - before == set()


def test_no_zombie_is_left_with_the_runner(kind: str, tmp_root: Path) -> None:
    # The runner is the subreaper of what a trial orphans (and of bwrap's namespace init):
    # it must reap them, or a long run would fill the process table with zombies.
    before = set(zombie_children())  # other tests' orphans adopted by this (subreaper) process

    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            for _ in range(10):
                await inst.exec("(setsid sleep 30 &); nohup sleep 30 >/dev/null 2>&1 & echo x")
        finally:
            await inst.close()

    run(go())
    assert set(zombie_children()) - before == set()


def zombie_children() -> list[str]:
    """This process's unreaped children, as "pid (name)"."""
    me = os.getpid()
    return [f"{pid} ({name})" for pid, name, state, ppid, _ in processes() if ppid == me and state == "Z"]
