"""``sweep_stale()`` removes what a runner killed together with its watchdog left behind (its
instance folders, and processes still carrying its marker), and nothing else: not a live run's
folders, not a folder whose pid was reused, not what is not an instance folder of this user."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from proc_support import wait_until
from sandbox_support import KINDS, Runner, live_with

from anpord.sandboxes import sweep_stale
from anpord.sandboxes._watchdog import boot_id, start_time


def kill_with_its_watchdog(runner: Runner) -> None:
    """What the watchdog cannot clean up after: both killed at once (an OOM kill, a kill of
    the whole process tree)."""
    assert runner.watchdog is not None
    os.kill(runner.watchdog, signal.SIGKILL)  # alive: its parent, the runner, has not reaped it
    runner.kill()
    # Dead and reaped (by the stand-in init): their pids name no process any more.
    pids = (runner.watchdog, runner.pid)
    wait_until(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in pids), "both to be gone")


@pytest.mark.parametrize("kind", KINDS)
def test_a_sweep_removes_a_dead_runs_leftovers_and_nothing_else(kind: str, shm_root: Path) -> None:
    t_dead, t_live = (
        f"{8000 + os.getpid() % 1000}.{len(kind)}1",
        f"{8000 + os.getpid() % 1000}.{len(kind)}2",
    )
    dead = Runner(kind, t_dead, shm_root, held=3, churning=0)
    live = None
    try:
        kill_with_its_watchdog(dead)
        leftovers = set(shm_root.iterdir())
        assert len(leftovers) == 3  # real leftovers: a killed runner's in-flight folders
        if kind == "local":
            assert live_with(t_dead), "its background jobs survive it"
        live = Runner(kind, t_live, shm_root, held=2, churning=0)
        live_folders = set(shm_root.iterdir()) - leftovers
        assert len(live_folders) == 2
        # Named like an instance folder of a live process, which started at another time:
        # the pid was reused, its runner is gone.
        reused = shm_root / f"anpord-{live.pid}-{start_time(live.pid) + 1}-{boot_id()}-reused01"
        (reused / "workspace").mkdir(parents=True)
        foreign = {
            shm_root / "anpord-notes",  # not an instance folder's name
            shm_root / "anpord-1-2-deadbeef-notadir1",  # the name, but a file
            shm_root / f"anpord-{dead.pid}-1-{boot_id()}-others01",  # another user's
        }
        for path in foreign:
            path.mkdir() if "notadir" not in path.name else path.write_text("keep me")
        os.chown(shm_root / f"anpord-{dead.pid}-1-{boot_id()}-others01", 65534, 65534)

        assert sweep_stale(shm_root) == 4
        assert set(shm_root.iterdir()) == live_folders | foreign
        assert live_with(t_dead) == []
        assert len(live_with(t_live)) >= 8  # the live run's trials run on
        assert grep_mounts(shm_root) == len(live_folders)

        live.kill()  # its watchdog cleans up after it
        assert live.gone(60.0)
        assert set(shm_root.iterdir()) == foreign
    finally:
        for runner in (dead, live):
            if runner is not None:
                runner.close()
        for path in shm_root.iterdir():
            path.rmdir() if path.is_dir() else path.unlink()


def grep_mounts(under: Path) -> int:
    with open("/proc/self/mounts") as f:
        return sum(line.split()[1].startswith(f"{under}/") for line in f)


def test_a_sweep_of_the_default_place_finds_leftovers_there(
    shm_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANPORD_SANDBOX_TMP", str(shm_root))
    dead = Runner("local", f"{8100 + os.getpid() % 1000}.5", shm_root, held=1, churning=0)
    try:
        kill_with_its_watchdog(dead)
        assert len(list(shm_root.iterdir())) == 1
        assert sweep_stale() == 1
        assert list(shm_root.iterdir()) == []
        assert sweep_stale() == 0
    finally:
        dead.close()


def test_a_sweep_never_raises(tmp_path: Path) -> None:
    assert sweep_stale(tmp_path / "missing") == 0
    (tmp_path / "a-file").write_text("x")
    assert sweep_stale(tmp_path / "a-file") == 0
    # A stale folder an agent made hard to remove.
    stale = tmp_path / f"anpord-999999999-1-{boot_id()}-locked01"
    (stale / "workspace" / "locked").mkdir(parents=True)
    (stale / "workspace" / "locked" / "f").write_text("x")
    os.chmod(stale / "workspace" / "locked", 0)
    assert sweep_stale(tmp_path) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]
