"""Helpers shared by the tests that drive processes: run a coroutine with a bound, find live
processes by a token in their command line, and wait for a condition."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")
KINDS = ("local", "bwrap")


def run(coro: Awaitable[T], timeout: float = 120) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


def live_with(token: str) -> list[int]:
    """Pids of live (non-zombie) processes whose command line contains ``token``."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if token in cmdline and state != b"Z":
            found.append(int(name))
    return found


def wait_until(condition: Callable[[], object], what: str, *, proc: subprocess.Popen[Any] | None = None,
               timeout: float = 120) -> None:
    """Poll until ``condition()`` is true. The timeout only bounds a hang (a broken feature): the
    test waits on the condition itself, never on a margin. With ``proc``, that process ending
    first is a failure that shows its output."""
    deadline = time.monotonic() + timeout
    while not condition():
        if proc is not None and proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the process ended (exit {proc.returncode}) before {what}\n{out}\n{err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:.0f} s waiting for {what}")
        time.sleep(0.02)
