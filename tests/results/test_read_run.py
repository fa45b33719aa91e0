"""``anpord.results.read_run`` reads real run folders back: finished, interrupted and killed runs,
torn lines, lookups by id, prefix and ``latest``, and what it refuses."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from proc_support import wait_until
from project_support import END, Project, eval_file

from anpord._errors import UsageError
from anpord.results import FORMAT_VERSION, TrialResult, read_run

CASES = {
    "evals/mixed.eval.py": eval_file("""
        @define_eval(each=["Sunny", "Rain"], id=lambda row: row.lower())
        async def test(t, row):
            await t.send(f"echo {row}")
            t.log(f"checked {row}")
            t.check(t.reply, includes("Sunny"))
    """),
    "evals/boom.eval.py": eval_file("""
        @define_eval
        async def test(t):
            raise ValueError("the body broke")
    """),
}


@pytest.fixture(scope="module")
def finished(make_module_project: Any) -> tuple[Project, Path]:
    project = make_module_project(CASES)
    run = project.run("--trials", "2")
    assert run.code == 1, run.output
    assert run.run_dir is not None
    return project, run.run_dir


def test_a_finished_run_reads_back_as_typed_records(finished: tuple[Project, Path]) -> None:
    _, run_dir = finished
    reading = read_run(run_dir)
    assert reading.status == "finished" and reading.problems == []
    assert len(reading.trials) == 6 and all(isinstance(t, TrialResult) for t in reading.trials)
    assert reading.totals()["passed"] == 2 and reading.totals()["failed"] == 4
    cells = {(c.case_id, c.pass_rate) for c in reading.cells}
    assert cells == {("mixed/sunny", 1.0), ("mixed/rain", 0.0), ("boom", 0.0)}
    rain = reading.trial("mixed/rain", index=1)
    assert rain.assertions[0].actual.endswith("Rain") and rain.logs == ["checked Rain"]
    types = [e.type for e in reading.events(rain)]
    assert types[0] == "session.started" and "message.completed" in types
    boom = reading.trial("boom")
    assert boom.error is not None and boom.error.kind == "test"
    assert boom.error.message == "ValueError: the body broke"
    assert boom.error.where is not None and boom.error.where.endswith("boom.eval.py:8")
    tb = reading.traceback(boom)
    assert tb is not None and "the body broke" in tb and "boom.eval.py" in tb


def test_runs_are_found_by_id_unique_prefix_and_latest(finished: tuple[Project, Path], monkeypatch: Any) -> None:
    project, run_dir = finished
    run_id = run_dir.name
    monkeypatch.chdir(project.folder / "evals")  # the project is found from the current folder
    assert read_run("latest").run_id == run_id
    assert read_run(run_id).run_id == run_id
    assert read_run(run_id[:-2]).run_id == run_id
    assert read_run(str(run_dir)).run_id == run_id
    with pytest.raises(UsageError, match="unknown run 'nope'"):
        read_run("nope")


def test_an_ambiguous_prefix_names_the_runs_it_matches(tmp_path: Path) -> None:
    runs = tmp_path / "project" / ".anpord" / "runs"
    for name in ("20260101-000000-aaaaaa", "20260101-000000-aaaaab"):
        (runs / name).mkdir(parents=True)
    with pytest.raises(UsageError, match="ambiguous: it matches 20260101-000000-aaaaaa, 20260101-000000-aaaaab"):
        read_run("20260101", project=tmp_path / "project")


def test_a_torn_last_line_is_skipped_and_reported(finished: tuple[Project, Path], tmp_path: Path) -> None:
    import shutil

    _, run_dir = finished
    copy = tmp_path / "torn"
    shutil.copytree(run_dir, copy)
    with open(copy / "results.jsonl", "ab") as f:
        f.write(b'{"v":1,"case_id":"mixed/sunny","variant":"python:agents.kit:agent/defa')
    reading = read_run(copy)
    assert len(reading.trials) == 6
    assert reading.problems == [
        "results.jsonl: the last line is torn (70 bytes, the run was stopped while writing it): skipped"
    ]


def test_a_line_that_is_not_a_record_is_skipped_and_named(finished: tuple[Project, Path], tmp_path: Path) -> None:
    import shutil

    _, run_dir = finished
    copy = tmp_path / "garbled"
    shutil.copytree(run_dir, copy)
    lines = (copy / "results.jsonl").read_text().splitlines()
    lines.insert(2, "not json at all")
    lines.insert(3, json.dumps({"v": 1, "case_id": "x"}))
    (copy / "results.jsonl").write_text("\n".join(lines) + "\n")
    reading = read_run(copy)
    assert len(reading.trials) == 6
    assert len(reading.problems) == 2
    assert reading.problems[0].startswith("results.jsonl line 3: not JSON")
    assert reading.problems[1].startswith("results.jsonl line 4: not a trial record (trial record: missing field")


def test_a_run_written_by_a_newer_format_is_refused(finished: tuple[Project, Path], tmp_path: Path) -> None:
    import shutil

    _, run_dir = finished
    copy = tmp_path / "newer"
    shutil.copytree(run_dir, copy)
    doc = json.loads((copy / "run.json").read_text())
    doc["format"] = FORMAT_VERSION + 1
    (copy / "run.json").write_text(json.dumps(doc))
    with pytest.raises(UsageError, match="newer anpord"):
        read_run(copy)


def test_a_folder_that_is_not_a_run_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a run folder"):
        read_run(tmp_path)


# Long enough that a kill always lands mid-run (about 30 s at two at a time); a killed run costs
# none of it.
SLOW = eval_file(f"""
    @define_eval(each=list(range(400)))
    async def test(t, row):
        await t.send("slow 0.15")
        {END}
""")


def test_a_run_killed_with_sigkill_reads_back_as_crashed(make_project: Any) -> None:
    project = make_project({"evals/slow.eval.py": SLOW})
    proc = project.popen("--max-concurrency", "2")
    try:
        wait_until(lambda: project.finished_trials() >= 4, "four finished trials", proc=proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    run_dir = project.latest_run_dir()
    assert run_dir is not None
    assert json.loads((run_dir / "run.json").read_text())["status"] == "running"  # as the kill left it
    reading = read_run(run_dir)
    assert reading.status == "crashed"
    assert 4 <= len(reading.trials) < 400
    assert all(t.verdict == "passed" for t in reading.trials)
    # ... and it is written back: a reader that only opens run.json sees it too.
    written = json.loads((run_dir / "run.json").read_text())
    assert written["status"] == "crashed"
    assert written["totals"]["passed"] == len(reading.trials)
    assert not (project.folder / ".anpord" / "running" / run_dir.name).exists()


def test_the_next_eval_marks_a_killed_run_crashed(make_project: Any) -> None:
    project = make_project({"evals/slow.eval.py": SLOW})
    proc = project.popen("--max-concurrency", "2")
    try:
        # Killed once it is under way: its run.json says running and its running marker is down.
        wait_until(lambda: project.finished_trials() >= 1, "a finished trial", proc=proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    killed = project.latest_run_dir()
    assert killed is not None
    assert json.loads((killed / "run.json").read_text())["status"] == "running"
    project.run("--list")  # any eval command sweeps
    assert json.loads((killed / "run.json").read_text())["status"] == "crashed"


def test_latest_is_the_run_that_started_last_even_within_one_second(make_project: Any) -> None:
    """Run ids sort by their start second, then by a random suffix: two runs of the same second
    are told apart by the start times their records hold."""
    project = make_project({"evals/one.eval.py": CASES["evals/mixed.eval.py"]})
    first, second = project.run(), project.run("--trials", "2")
    assert first.run_dir is not None and second.run_dir is not None
    runs = first.run_dir.parent
    # The later run gets the suffix that sorts first, as a random suffix may.
    later = first.run_dir.rename(runs / "20990101-000000-ffffff")
    newest = second.run_dir.rename(runs / "20990101-000000-000000")
    assert later.name > newest.name
    assert read_run("latest", project=project.folder).run_dir == newest
