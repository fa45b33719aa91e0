"""The sync agents' thread pool: work that must run side by side gets a thread each, also when
it arrives at once while a worker sits idle."""

from __future__ import annotations

import threading

from anpord.harnesses.python import _DaemonPool


def test_work_submitted_at_once_beside_an_idle_worker_runs_side_by_side() -> None:
    pool = _DaemonPool(4)
    pool.submit(lambda: None).result(timeout=5)  # one worker now waits, idle
    meeting = threading.Barrier(4, timeout=5)
    # Each waits for all four: one idle worker must not be counted for every one of them.
    futures = [pool.submit(meeting.wait) for _ in range(4)]
    assert sorted(f.result(timeout=10) for f in futures) == [0, 1, 2, 3]


def test_the_pool_never_grows_past_its_size() -> None:
    pool = _DaemonPool(2)
    release = threading.Event()
    running: list[str] = []
    lock = threading.Lock()

    def hold() -> None:
        with lock:
            running.append(threading.current_thread().name)
        release.wait(5)

    futures = [pool.submit(hold) for _ in range(5)]
    for _ in range(500):  # until two run (a loaded machine may take a moment)
        if len(running) >= 2:
            break
        threading.Event().wait(0.01)
    threading.Event().wait(0.2)  # room for a third, were the pool to start one
    assert len(running) == 2  # two at a time; the rest wait their turn
    release.set()
    for f in futures:
        f.result(timeout=10)
    assert len(running) == 5
