"""A run's filing from a process of its own (``ANPORD_STORE_FILER``, store/_filer): it files each
trial while the run goes on, it files what ``anpord db rebuild`` files from the same folder, and
a filer that cannot write, or dies, costs the run one warning line and nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from history_support import anpord, as_json
from proc_support import wait_until
from project_support import Project, anpord_command, build_project, run_env

WARNING = "anpord: warning: this run was not recorded in the run history"

# The second case's agent waits until the store holds the first case's trial (at most 8 s), and
# says whether it saw it: a filer files each trial as it ends, a thread only in batches it
# makes when a later trial ends (every 1,000 trials or every second).
WATCHER = '''
import asyncio
import os
import time


def _filed(case_id):
    from anpord.store import StoreError, open_store

    try:
        with open_store(os.getcwd(), create=False) as store:
            return any(t.case_id == case_id for t in store.trials("latest"))
    except (LookupError, StoreError):  # the store, being created by the first run, has no run yet
        return False


async def agent(turn):
    if turn.input == "first":
        return "done first"
    if turn.input == "nap":
        await asyncio.sleep(0.5)
        return "done nap"
    if turn.input == "lock":  # hold the store's write lock for 3 s: longer than a filer waits
        import sqlite3

        db = sqlite3.connect(os.path.join(".anpord", "anpord.db"), isolation_level=None)
        db.execute("BEGIN EXCLUSIVE")
        await asyncio.sleep(3)
        db.execute("ROLLBACK")
        db.close()
        return "done lock"
    if turn.input == "kill":  # the filer dies mid-run
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"anpord.store._filer" in f.read():
                        os.kill(int(pid), 9)
            except (OSError, ValueError):
                pass
        return "done kill"
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        if await asyncio.to_thread(_filed, "watch/0000"):
            return "done: seen"
        await asyncio.sleep(0.05)
    return "done: not seen"
'''

CONFIG = """
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.watcher:agent", max_concurrency=1, timeout=30)
"""

EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each={rows!r})
async def watch(t, row):
    await t.send(row)
    t.check(t.reply, includes("done"))
"""


def _project(folder: Path, rows: list[str]) -> Project:
    return build_project(folder, {"agents/watcher.py": WATCHER, "evals/watch.eval.py": EVAL.format(rows=rows)},
                         config=CONFIG)


def _reply(project_run: Any, case_id: str) -> str:
    events = project_run.events(case_id)
    return next(e["text"] for e in events if e["type"] == "message.completed" and e.get("role") == "assistant")


def _rows(project: Project) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The latest run's cells and trials as the store holds them (``ANPORD_DB`` as this process has it)."""
    from anpord.store import open_store

    with open_store(project.folder, create=False) as store:
        return ([c.to_dict() for c in store.cells("latest")], [t.to_dict() for t in store.trials("latest")])


@pytest.mark.parametrize("mode, seen", [("process", "done: seen"), ("thread", "done: not seen")])
def test_a_filer_process_files_each_trial_while_the_run_goes_on(
    tmp_path: Path, backend_env: dict[str, str], mode: str, seen: str
) -> None:
    project = _project(tmp_path / "p", ["first", "second"])
    env = {**backend_env, "ANPORD_STORE_FILER": mode}
    assert project.run(env=env).code == 0  # the store exists: the watcher reads it
    run = project.run(env=env)
    assert run.code == 0, run.output
    assert WARNING not in run.stderr
    assert _reply(run, "watch/0001") == seen
    runs = as_json(anpord(project, "runs", "--json", env=env))
    assert runs[0]["run_id"] == run.run_dir.name and runs[0]["status"] == "finished"
    assert runs[0]["totals"]["passed"] == 2


def test_what_the_filer_process_files_is_what_a_rebuild_files(
    tmp_path: Path, backend_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Verdicts of every kind, several trials a cell, a secret in a reason (redacted in the folder).
    project = build_project(tmp_path / "p", {
        "agents/mixed.py": '''
import asyncio
import os

async def agent(turn):
    if turn.input == "boom":
        raise RuntimeError("the agent broke: " + os.environ["FILER_TEST_KEY"])
    if turn.input == "slow":
        await asyncio.sleep(5)
    return turn.input
''',
        "evals/mixed.eval.py": '''
from anpord import define_eval
from anpord.expect import includes

@define_eval(each=["ok", "no", "boom", "slow"], trials=3, timeout=0.5)
async def mixed(t, row):
    await t.send(row)
    t.check(t.reply, includes("ok"))
''',
    }, config='''
from anpord import Variant, define_eval_config
config = define_eval_config(variants=[Variant(harness="python:agents.mixed:agent", secrets=["FILER_TEST_KEY"])],
                            max_concurrency=4)
''')
    env = {**backend_env, "ANPORD_STORE_FILER": "process", "FILER_TEST_KEY": "sk-filer-0123456789abcdef"}
    run = project.run(env=env)
    assert run.code == 1, run.output
    assert WARNING not in run.stderr
    for name, value in backend_env.items():
        monkeypatch.setenv(name, value)
    cells, trials = _rows(project)
    assert len(cells) == 4 and len(trials) == 12
    by_case = {c["case_id"]: (c["trials"], c["passed"], c["failed"], c["timed_out"]) for c in cells}
    # ok, no, boom, slow
    assert by_case == {"mixed/0000": (3, 3, 0, 0), "mixed/0001": (3, 0, 3, 0), "mixed/0002": (3, 0, 3, 0),
                       "mixed/0003": (3, 0, 0, 3)}, by_case
    broke = [t for t in trials if t["case_id"] == "mixed/0002"]
    assert all(t["error_kind"] and "the agent broke" in t["error_message"] for t in broke), broke
    assert not any("sk-filer" in str(t) for t in trials)
    rebuilt = anpord(project, "db", "rebuild", env=env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert _rows(project) == (cells, trials)


@pytest.mark.parametrize(("fault", "said"), [
    ("lock", "locked"),  # it cannot write: the store's lock held past its busy timeout
    ("kill", "filer ended without an answer"),  # it dies mid-run
])
def test_a_filer_that_fails_costs_one_warning_and_history_catches_up(tmp_path: Path, fault: str, said: str) -> None:
    project = _project(tmp_path / "p", ["first", fault, "after"])
    env = {"ANPORD_STORE_FILER": "process"}
    assert project.run(env=env).code == 0
    run = project.run(env=env)
    assert run.code == 0, run.output
    warnings = [line for line in run.stderr.splitlines() if line.startswith(WARNING)]
    assert len(warnings) == 1 and said in warnings[0], run.stderr
    runs = as_json(anpord(project, "runs", "--json", env=env))  # files what the store missed
    assert runs[0]["run_id"] == run.run_dir.name and runs[0]["totals"]["trials"] == 3


def test_an_unknown_filer_setting_is_one_warning_naming_it(tmp_path: Path) -> None:
    project = _project(tmp_path / "p", ["first"])
    run = project.run(env={"ANPORD_STORE_FILER": "sideways"})
    assert run.code == 0, run.output
    warnings = [line for line in run.stderr.splitlines() if line.startswith(WARNING)]
    assert len(warnings) == 1 and "ANPORD_STORE_FILER is 'sideways': use one of auto, process, thread" in warnings[0]


@pytest.fixture
def session_run(tmp_path: Path) -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_ctrl_c_at_the_terminal_stops_the_run_and_its_trials_are_filed(
    tmp_path: Path, session_run: list[subprocess.Popen[str]]
) -> None:
    # The terminal sends SIGINT to the whole foreground group: the run's process and its children.
    project = _project(tmp_path / "p", ["first"] + ["nap"] * 40)
    env = {"ANPORD_STORE_FILER": "process"}
    first = project.run("watch/0000", env=env)
    assert first.code == 0 and first.run_dir is not None
    proc = subprocess.Popen([*anpord_command(), "eval"], cwd=project.folder, env=run_env(env), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            start_new_session=True)  # a group of its own, as a terminal's job is
    session_run.append(proc)
    # The new run's folder: run ids sort by their second, then by a random suffix.
    def finished() -> int:
        runs = [d for d in (project.folder / ".anpord" / "runs").iterdir() if d != first.run_dir]
        results = runs[0] / "results.jsonl" if runs else None
        return results.read_text().count("\n") if results is not None and results.is_file() else 0

    wait_until(lambda: finished() >= 2, "two finished trials", proc=proc)
    os.killpg(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, (stdout, stderr)
    assert WARNING not in stderr
    done = finished()
    runs = as_json(anpord(project, "runs", "--json"))
    assert runs[0]["status"] == "interrupted" and runs[0]["totals"]["trials"] == done
    _, trials = _rows(project)
    assert len(trials) == done


def test_the_filer_reads_lines_longer_than_one_read_and_many_reads_of_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run's folder, filed again by the filer's own code with reads of 200 bytes: every line is
    # longer than one read, and each read holds at most one line.
    from anpord.store import _filer, open_store
    from anpord.store._location import store_location
    from anpord.store._writes import open_db, run_pk

    project = _project(tmp_path / "p", ["first"] * 5)
    run = project.run(env={"ANPORD_STORE_FILER": "thread"})
    assert run.code == 0 and run.run_dir is not None
    monkeypatch.chdir(project.folder)
    before = _rows(project)
    assert len(before[1]) == 5
    location = store_location(project.folder)
    db = open_db(location)
    pk = run_pk(db, location.project, run.run_dir.name)
    with db.transaction():
        db.execute("DELETE FROM trials WHERE run_pk = ?", (pk,)).close()
        db.execute("DELETE FROM cells WHERE run_pk = ?", (pk,)).close()
    monkeypatch.setattr(_filer, "READ_LIMIT", 200)
    filing = _filer._Filing(db, run.run_dir, pk)
    filing.read()
    filing.finish()
    db.close()
    assert _rows(project) == before
    with open_store(project.folder) as store:
        assert store.run("latest").totals["trials"] == 5


def test_an_abandoned_filer_files_what_it_read_and_is_reaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A run ended without its final state (a forced exit) abandons its filer: the filer files
    # what is in the folder and ends, and the process is reaped without anyone waiting for it,
    # so a program running many runs collects no defunct filer per run.
    from anpord.store._filer import Filer
    from anpord.store._location import store_location
    from anpord.store._writes import open_db, run_pk

    project = _project(tmp_path / "p", ["first"] * 3)
    run = project.run(env={"ANPORD_STORE_FILER": "thread"})
    assert run.code == 0 and run.run_dir is not None
    monkeypatch.chdir(project.folder)
    location = store_location(project.folder)
    db = open_db(location)
    pk = run_pk(db, location.project, run.run_dir.name)
    with db.transaction():
        db.execute("DELETE FROM trials WHERE run_pk = ?", (pk,)).close()
    db.close()
    filer = Filer.start(location, str(run.run_dir), pk, busy_timeout=2.0)
    filer.abandon()
    wait_until(lambda: filer.process.returncode is not None, "the filer reaped")  # by the reaping wait()
    assert not os.path.exists(f"/proc/{filer.process.pid}")  # no zombie left behind
    assert len(_rows(project)[1]) == 3  # what it read was filed
