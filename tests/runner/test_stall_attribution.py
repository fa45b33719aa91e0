"""Who a stall of the event loop is blamed on. A process that is descheduled (a loaded machine;
here SIGSTOP) stalls its loop without any trial blocking it: the task that was running when it
got the CPU back must not be told it blocked the loop. A task that really blocks it still is."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from project_support import run_env

CHILD = r"""
import asyncio, json, os, signal, sys, time
from anpord.runner._stalls import StallMonitor

def spin(seconds):
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        pass

async def descheduled():
    # A well-behaved trial in the middle of a short computation when the machine takes the CPU
    # away: once a heartbeat is pending, the process is stopped (the test resumes it), then the
    # computation goes on a little before the task yields.
    while monitor._answered.is_set():
        pass
    os.kill(os.getpid(), signal.SIGSTOP)
    spin(0.3)

async def blocker():
    time.sleep(1.5)  # blocks the loop itself

async def main():
    global monitor
    monitor = StallMonitor(asyncio.get_running_loop())
    monitor.start()
    await asyncio.sleep(0.2)
    for name, body in (("descheduled", descheduled), ("blocker", blocker)):
        task = asyncio.ensure_future(body())
        task._anpord_trial = name
        await task
        await asyncio.sleep(0.2)
    monitor.stop()
    print(json.dumps({
        "stalls": [[s.duration, s.culprit] for s in monitor.stalls],
        "descheduled": len(monitor.caused_by("descheduled")),
        "blocker": len(monitor.caused_by("blocker")),
    }), flush=True)

from anpord._loop import run_bounded
run_bounded(main())  # on the loop ANPORD_LOOP names
"""


def stopped(pid: int) -> bool:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_a_descheduled_process_blames_no_trial_and_a_blocking_one_is_blamed(loop: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=run_env({"ANPORD_LOOP": loop}))
    try:
        deadline = time.monotonic() + 60
        while not stopped(proc.pid):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.01)
        time.sleep(1.5)  # how long the process is kept off the CPU: the stall under test
        proc.send_signal(signal.SIGCONT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    got = json.loads(out)
    assert any(d >= 1.5 for d, _ in got["stalls"]), got  # the stop was a stall of the loop
    assert got["descheduled"] == 0, got  # not blamed on the task running when it ended
    assert got["blocker"] == 1, got
