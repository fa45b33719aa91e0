"""Helpers for the sandbox tests: run a coroutine, open real sandboxes, look for leftovers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from proc_support import KINDS, live_with, run  # noqa: F401 - re-exported for the tests here

from anpord.authoring import Variant, files
from anpord.sandboxes import SandboxSpec
from anpord.sandboxes._watchdog import start_time
from anpord.sandboxes.bwrap import BwrapSandbox
from anpord.sandboxes.local import LocalSandbox


def make_sandbox(kind: str, tmp_root: Path) -> Any:
    return LocalSandbox(tmp_root=tmp_root) if kind == "local" else BwrapSandbox(tmp_root=tmp_root)


def spec(source: Any = None, base: Path | None = None, **variant: Any) -> SandboxSpec:
    return SandboxSpec(
        Variant(**variant), source if source is not None else files({}), base or Path.cwd()
    )


class Listener:
    """A TCP listener on 127.0.0.1 that records every connection and the bytes it received."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.received = b""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            conn.settimeout(1)
            try:
                while chunk := conn.recv(4096):
                    self.received += chunk
            except OSError:
                pass
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


# -- a real runner, to kill ------------------------------------------------------------------------

SRC = Path(__file__).resolve().parents[2] / "src"

# A runner: ``held`` trials with escaping background jobs left running, and (with ``churn``)
# trials opening and closing all along, as in a run. Prints "ready <watchdog pid>".
RUNNER = """
import asyncio, os, sys
from pathlib import Path
from anpord.authoring import Variant, files
from anpord.sandboxes import SandboxSpec
from anpord.sandboxes._owner import watchdog_pid
from anpord.sandboxes._watchdog import start_time
from anpord.sandboxes.bwrap import BwrapSandbox
from anpord.sandboxes.local import LocalSandbox

JOBS = ("sleep {t} & (sleep {t} &); (setsid sleep {t} &); nohup sleep {t} >/dev/null 2>&1 & "
        "setsid bash -c 'sleep {t} & sleep {t}' </dev/null >/dev/null 2>&1 & sleep {t}")

def sleeping(t):
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                count += f.read().split(b"\\0")[:2] == [b"sleep", t.encode()]
        except OSError:
            pass
    return count

async def churn(sandbox, t):
    while True:
        inst = await sandbox.open(SandboxSpec(Variant(), files({"a.txt": "a"})))
        try:
            await inst.exec(f"(setsid sleep {t} &); sleep 0.05", timeout=10)
        finally:
            await inst.close()

async def main(kind, t, roots, held, churning):
    kinds = {"local": LocalSandbox, "bwrap": BwrapSandbox}
    sandbox = kinds[kind](tmp_root=Path(roots))
    for _ in range(int(held)):
        inst = await sandbox.open(SandboxSpec(Variant(), files({"a.txt": "a"})))
        await inst.spawn(["bash", "-c", JOBS.format(t=t)], env=inst.environment())
    tasks = [asyncio.ensure_future(churn(sandbox, t)) for _ in range(int(churning))]
    while sleeping(t) < 7 * int(held):  # every held trial's seven jobs are up
        await asyncio.sleep(0.02)
    print("ready", watchdog_pid(), flush=True)
    await asyncio.sleep(3600)

asyncio.run(main(*sys.argv[1:]))
"""

# Stands in for init: the subreaper the runner's orphans are re-parented to once it is dead (the
# test process itself may be one), which reaps them. It exits once nothing of the runner is left.
INIT = """
import ctypes, os, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
pid = os.fork()
if pid == 0:
    os.execv(sys.executable, [sys.executable, "-c", *sys.argv[1:]])
print("runner", pid, flush=True)
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
"""


class Runner:
    """A real runner process (under a stand-in init) holding sandboxes of ``kind`` in ``roots``."""

    def __init__(self, kind: str, token: str, roots: Path, held: int = 3, churning: int = 2):
        self.init = subprocess.Popen(
            [sys.executable, "-c", INIT, RUNNER, kind, token, str(roots), str(held), str(churning)],
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(SRC)},
        )
        assert self.init.stdout is not None
        self.pid = int(self.init.stdout.readline().split()[1])
        ready = self.init.stdout.readline().split()
        assert ready[:1] == ["ready"], "the runner did not start"
        self.watchdog = int(ready[1]) if ready[1] != "None" else None
        # Who they are: a pid may be another process's by the time a failed test cleans up.
        self._started = {pid: start_time(pid) for pid in (self.pid, self.watchdog) if pid}

    def kill(self) -> None:
        os.kill(self.pid, signal.SIGKILL)

    def gone(self, within: float) -> bool:
        """Whether every process of the runner ended (the stand-in init exits then)."""
        try:
            self.init.wait(within)
            return True
        except subprocess.TimeoutExpired:
            return False

    def close(self) -> None:
        """Kill what is left (a failed test's leftovers)."""
        if self.init.poll() is None:
            for pid, started in self._started.items():
                if start_time(pid) == started:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except OSError:
                        pass
            try:
                self.init.wait(10)
            except subprocess.TimeoutExpired:
                self.init.kill()
        if self.init.stdout:
            self.init.stdout.close()
