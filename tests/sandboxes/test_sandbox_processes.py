"""No process outlives its sandbox: not background jobs, not ones that setsid or double-fork,
not on timeout, not on cancellation."""

from __future__ import annotations

import asyncio
import itertools
import os
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
            res = await inst.exec(escape.format(t=t) + "\necho started", timeout=10)
            assert res.stdout == "started\n" and res.exit_code == 0, res.stderr
            assert res.duration < 5  # did not wait for the background sleep
            assert live_with(t) == []
        finally:
            await inst.close()

    run(go())


def test_close_kills_a_running_tree(kind: str, tmp_root: Path) -> None:
    t = token()

    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        proc = await inst.spawn(
            ["bash", "-c", f"(setsid sleep {t} &); sleep {t}"], env=inst.environment()
        )
        for _ in range(100):
            if len(live_with(t)) >= 2:
                break
            await asyncio.sleep(0.02)
        assert len(live_with(t)) >= 2
        await inst.close()
        # The tree is dead once close() returns; asyncio's child watcher records the exit status
        # a little later, so wait for it rather than reading returncode at once.
        await asyncio.wait_for(proc.wait(), 5)
        assert live_with(t) == []

    run(go())


def test_cancelling_an_exec_kills_its_tree(kind: str, tmp_root: Path) -> None:
    t = token()

    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            task = asyncio.ensure_future(inst.exec(f"(setsid sleep {t} &); sleep {t}", timeout=60))
            for _ in range(100):
                if len(live_with(t)) >= 2:
                    break
                await asyncio.sleep(0.02)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await asyncio.sleep(0.1)
            assert live_with(t) == []
        finally:
            await inst.close()

    run(go())


def test_no_zombie_is_left_with_the_runner(kind: str, tmp_root: Path) -> None:
    # The runner is the subreaper of what a trial orphans (and of bwrap's namespace init):
    # it must reap them, or a long run would fill the process table with zombies.
    async def go() -> None:
        inst = await make_sandbox(kind, tmp_root).open(spec())
        try:
            for _ in range(10):
                await inst.exec("(setsid sleep 30 &); nohup sleep 30 >/dev/null 2>&1 & echo x")
        finally:
            await inst.close()

    run(go())
    me = str(os.getpid())
    children = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == me:
            children.append((name, fields[0]))
    assert [c for c in children if c[1] == "Z"] == []
