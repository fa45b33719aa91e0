"""A store that cannot be used never fails nor holds up a run: the run passes, one warning line
says history was not recorded and how to fix it, and the commands that need the store say why in
one line and exit non-zero. Nothing else is harmed."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from history_support import anpord, as_json, history_project
from pg_support import free_port

WARNING = "anpord: warning: this run was not recorded in the run history"


def _one_warning(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.startswith(WARNING)]
    assert len(lines) == 1, stderr
    assert "`anpord db rebuild`" in lines[0]
    return lines[0]


def test_a_corrupt_database_file_warns_and_rebuild_recovers_every_run(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p")
    first = project.run()
    assert first.code == 0
    db = project.folder / ".anpord" / "anpord.db"
    db.write_bytes(b"this is not a database at all" * 100)
    for extra in (Path(f"{db}-wal"), Path(f"{db}-shm")):
        extra.unlink(missing_ok=True)
    run = project.run()
    assert run.code == 0 and run.stdout.rstrip().endswith("6 passed, 0 failed")
    assert "damaged" in _one_warning(run.stderr)
    listed = anpord(project, "runs")
    assert listed.returncode == 2
    assert (
        listed.stderr.count("\n") == 1
        and "damaged" in listed.stderr
        and "db rebuild" in listed.stderr
    )
    assert "Traceback" not in listed.stderr
    rebuilt = anpord(project, "db", "rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    ids = [r["run_id"] for r in as_json(anpord(project, "runs", "--json"))]
    assert ids == [run.run_dir.name, first.run_dir.name]  # both runs, the unrecorded one too


@pytest.mark.slow
def test_a_locked_database_does_not_stop_a_run_and_is_caught_up_later(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p")
    assert project.run().code == 0
    holder = sqlite3.connect(project.folder / ".anpord" / "anpord.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # another process holding the write lock
    try:
        run = project.run()
        assert run.code == 0 and run.stdout.rstrip().endswith("6 passed, 0 failed")
        assert "locked" in _one_warning(run.stderr)
        baseline = anpord(project, "baseline", "set", "latest")
        rebuild = anpord(project, "db", "rebuild")  # would lose the holder's writes: refused
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    for proc in (baseline, rebuild):
        assert proc.returncode == 2 and "locked" in proc.stderr and proc.stderr.count("\n") == 1
    # Once the lock is gone, the history commands file what they missed.
    ids = [r["run_id"] for r in as_json(anpord(project, "runs", "--json"))]
    assert run.run_dir is not None and run.run_dir.name in ids and len(ids) == 2


def test_a_store_written_by_a_newer_anpord_is_refused_and_left_alone(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p")
    assert project.run().code == 0
    db_path = project.folder / ".anpord" / "anpord.db"
    with sqlite3.connect(db_path) as db:
        db.execute("INSERT INTO schema_version (version, applied_at) VALUES (99, 0)")
    before = db_path.read_bytes()
    run = project.run()
    assert run.code == 0
    assert "newer anpord (schema 99" in _one_warning(run.stderr)
    compare = anpord(project, "compare")
    assert (
        compare.returncode == 2
        and "newer anpord" in compare.stderr
        and "upgrade anpord" in compare.stderr
    )
    regressed = project.run("--fail-on", "regressed")
    assert regressed.code == 2 and regressed.run_dir is None  # refused before anything ran
    assert "--fail-on regressed needs the run history" in regressed.stderr
    with sqlite3.connect(db_path) as db:
        assert db.execute("SELECT max(version) FROM schema_version").fetchone()[0] == 99
    assert len(db_path.read_bytes()) >= len(before) - 4096  # not truncated nor replaced


def test_postgres_down_warns_and_commands_say_so(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p")
    env = {"ANPORD_DB": f"postgresql://anpord:s3cret-pass@127.0.0.1:{free_port()}/anpord"}
    run = project.run(env=env)
    assert run.code == 0 and run.stdout.rstrip().endswith("6 passed, 0 failed")
    warning = _one_warning(run.stderr)
    assert "cannot reach the run store" in warning and "s3cret-pass" not in warning
    listed = anpord(project, "runs", env=env)
    assert listed.returncode == 2 and "cannot reach the run store" in listed.stderr
    assert "s3cret-pass" not in listed.stderr and listed.stderr.count("\n") == 1
    gate = project.run("--fail-on", "regressed", env=env)
    assert gate.code == 2 and "needs the run history" in gate.stderr


@pytest.mark.slow
def test_a_run_folder_deleted_by_hand(tmp_path: Path) -> None:
    import shutil

    project = history_project(tmp_path / "p")
    first, second = project.run(), project.run()
    assert first.run_dir is not None and second.run_dir is not None
    shutil.rmtree(first.run_dir)
    runs = anpord(project, "runs")
    assert runs.returncode == 0 and "folder deleted" in runs.stdout
    show = anpord(project, "show", first.run_dir.name)
    assert show.returncode == 2 and show.stderr.count("\n") == 1
    assert "not on this machine" in show.stderr and "db rebuild" in show.stderr
    # compare still works from the store; the other run is untouched
    assert anpord(project, "compare", first.run_dir.name, second.run_dir.name).returncode == 0
    assert anpord(project, "show", second.run_dir.name).returncode == 0
    rebuilt = anpord(project, "db", "rebuild")
    assert "from 1 run folder" in rebuilt.stdout
    assert [r["run_id"] for r in as_json(anpord(project, "runs", "--json"))] == [
        second.run_dir.name
    ]


def test_history_off_records_nothing_and_commands_say_so(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p")
    run = project.run(env={"ANPORD_DB": "off"})
    assert run.code == 0 and "warning" not in run.stderr
    assert not (project.folder / ".anpord" / "anpord.db").exists()
    listed = anpord(project, "runs", env={"ANPORD_DB": "off"})
    assert listed.returncode == 2 and "history is off" in listed.stderr


@pytest.mark.slow
def test_a_store_that_hangs_never_holds_up_the_run_past_its_wait(tmp_path: Path) -> None:
    """A server that accepts connections and never answers: the run still ends, with a warning."""
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    stop = threading.Event()
    try:
        project = history_project(tmp_path / "p", trials=1)
        env = {"ANPORD_DB": f"postgresql://anpord@127.0.0.1:{listener.getsockname()[1]}/x"}
        run = project.run(env=env, timeout=60)
        assert run.code == 0 and run.stdout.rstrip().endswith("2 passed, 0 failed")
        _one_warning(run.stderr)
    finally:
        stop.set()
        listener.close()


def _pg_urls() -> list[str]:
    port = free_port()
    return [
        f"postgresql://anpord@127.0.0.1:{port}/anpord?password=Pw9Query-secret",
        f"postgresql://anpord@127.0.0.1:{port}/anpord?sslmode=disable&password=Pw9Query-secret",
        f"postgresql://anpord:Pw9At@secret/with:odd@127.0.0.1:{port}/anpord",
        f"postgresql://anpord:Pw9Odd?secret@127.0.0.1:{port}/anpord",
        "postgresql://anpord:Pw9NoHost-secret",
        f"anpord:Pw9NoScheme-secret@127.0.0.1:{port}/anpord",
        # libpq's keyword/value form, bare and quoted, and a query key in capitals
        f"host=127.0.0.1 port={port} password=Pw9Keyword-secret dbname=anpord",
        f"host=127.0.0.1 port={port} password = 'Pw9Quoted secret' dbname=anpord",
        f"postgresql://anpord@127.0.0.1:{port}/anpord?PASSWORD=Pw9Caps-secret",
    ]


def test_a_postgres_password_is_never_printed_however_it_is_given(tmp_path: Path) -> None:
    project = history_project(tmp_path / "p")
    for url in _pg_urls():
        env = {"ANPORD_DB": url}
        run = project.run(env=env)
        listed = anpord(project, "runs", env=env)
        for text in (run.stdout, run.stderr, listed.stdout, listed.stderr):
            assert "Pw9" not in text, (url, text)
        assert listed.returncode == 2 and listed.stderr.count("\n") == 1, listed.stderr
        assert "***" in listed.stderr, listed.stderr


def test_a_store_held_locked_by_another_connection_never_holds_up_a_trial(tmp_path: Path) -> None:
    """The store is filed by a thread of its own: while another connection holds the store's
    write lock, every trial still ends (the run folder has them all) before the lock is let go;
    once it is, the run is in the store with all its trials."""
    import time

    project = history_project(tmp_path / "p", trials=20)
    assert project.run().code == 0  # the store exists
    runs = project.folder / ".anpord" / "runs"
    before = set(runs.iterdir())
    holder = sqlite3.connect(project.folder / ".anpord" / "anpord.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    finished_while_locked = 0
    try:
        proc = project.popen()
        # Held until every trial of the run has ended, or for at most 1.5 s once the run folder is
        # there — less than the writer's own wait for a lock, so a writer that only waits gets
        # through, and one that held the trials up leaves them unfinished here.
        started: float | None = None
        while proc.poll() is None:
            new = sorted(set(runs.iterdir()) - before)
            if new:
                started = started or time.monotonic()
                results = new[-1] / "results.jsonl"
                finished_while_locked = results.read_text().count("\n") if results.is_file() else 0
                if finished_while_locked == 40 or time.monotonic() - started > 1.5:
                    break
            time.sleep(0.01)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and out.rstrip().endswith("40 passed, 0 failed"), err
    assert finished_while_locked == 40, f"only {finished_while_locked} of 40 trials ended while the store was locked"
    (run_dir,) = sorted(set(runs.iterdir()) - before)
    filed = {r["run_id"]: r for r in as_json(anpord(project, "runs", "--json"))}
    assert filed[run_dir.name]["status"] == "finished"
    db = sqlite3.connect(project.folder / ".anpord" / "anpord.db")
    try:
        (count,) = db.execute("SELECT count(*) FROM trials JOIN runs ON runs.id = trials.run_pk "
                              "WHERE runs.run_id = ?", (run_dir.name,)).fetchone()
    finally:
        db.close()
    assert count == 40
