"""`anpord eval --resume RUN` after SIGKILL, and `--rerun-failed RUN`: every planned trial is in
the run exactly once, its events readable, the totals right."""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import subprocess
import time
from pathlib import Path

import pytest
from proc_support import wait_until
from project_support import Project, anpord_command, build_project, run_env

SLOW = """
import asyncio


async def agent(turn):
    await asyncio.sleep(0.04)
    return "ok " + turn.input
"""

CONFIG = """
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.slow:agent", trials=2, max_concurrency=3, timeout=20)
"""

EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=range(30))
async def test(t, row):
    await t.send(f"ping {row}")
    t.check(t.reply, includes("ok ping"))
"""

PLANNED = {
    (f"work/{i:04d}", "python:agents.slow:agent/default", k) for i in range(30) for k in range(2)
}


def _project(folder: Path) -> Project:
    return build_project(
        folder, {"agents/slow.py": SLOW, "evals/work.eval.py": EVAL}, config=CONFIG
    )


def _start(project: Project, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*anpord_command(), "eval", *args],
        cwd=project.folder,
        env=run_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )


def _resumes(run_dir: Path) -> int:
    try:
        record = json.loads((run_dir / "run.json").read_text())
    except (OSError, ValueError):
        return -1
    return len(record["resumed_at"]) if record.get("status") == "running" else -1


def _kill_while_running(
    proc: subprocess.Popen[str], run_dir: Path | None, rng: random.Random, runs: Path
) -> Path:
    """SIGKILL the run at a random moment once it is running (a resume: once it has said so in
    run.json); returns the run folder."""
    deadline = time.monotonic() + 30
    while run_dir is None and time.monotonic() < deadline:
        found = sorted(runs.glob("*/run.json")) if runs.is_dir() else []
        run_dir = found[-1].parent if found else None
        time.sleep(0.01)
    assert run_dir is not None, "the run never wrote its folder"
    before = (
        len(json.loads((run_dir / "run.json").read_text())["resumed_at"])
        if proc.args[-1] != "eval"
        else -1
    )
    while _resumes(run_dir) <= before and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(rng.uniform(0.02, 0.8))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    return run_dir


@pytest.mark.slow
def test_a_run_killed_five_times_and_resumed_has_every_trial_exactly_once(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    runs = project.folder / ".anpord" / "runs"
    rng = random.Random(int(time.time()))
    run_dir = _kill_while_running(_start(project), None, rng, runs)
    kills, resumes = 1, 0
    while kills < 5:
        proc = _start(project, "--resume", run_dir.name)
        resumes += 1
        _kill_while_running(proc, run_dir, rng, runs)
        kills += 1
        lines = (run_dir / "results.jsonl").read_bytes().count(b"\n")
        if lines >= len(PLANNED):
            break  # finished before the kill landed: nothing left to resume
    final = subprocess.run(
        [*anpord_command(), "eval", "--resume", run_dir.name],
        cwd=project.folder,
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # Every trial may already be written by the last kill: the resume then only closes the run.
    done_already = "nothing to resume" in final.stderr
    assert final.returncode == (2 if done_already else 0), final.stderr
    assert sorted(runs.iterdir()) == [run_dir], "a resume must not start another run"

    raw = (run_dir / "results.jsonl").read_bytes()
    assert raw.endswith(b"\n"), "a torn line was left behind"
    records = [json.loads(line) for line in raw.splitlines()]
    keys = collections.Counter((r["case_id"], r["variant"], r["trial"]) for r in records)
    assert set(keys) == PLANNED
    assert max(keys.values()) == 1, [k for k, n in keys.items() if n > 1]

    from anpord.results import read_run

    reading = read_run(run_dir)
    assert reading.problems == []
    for trial in reading.trials:
        events = reading.events(trial)
        assert [e.type for e in events if e.type == "message.completed"], trial.key
        assert any(e.get("text") == f"ok ping {int(trial.case_id[-4:])}" for e in events)
    record = json.loads((run_dir / "run.json").read_text())
    assert record["status"] == "finished"
    assert record["totals"]["passed"] == record["totals"]["trials"] == len(PLANNED)
    assert len(record["resumed_at"]) >= resumes

    # The store agrees with the folder.
    listed = subprocess.run(
        [*anpord_command(), "runs", "--json"],
        cwd=project.folder,
        env=run_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (row,) = json.loads(listed.stdout)
    assert row["status"] == "finished" and row["totals"]["passed"] == len(PLANNED)


def test_resume_runs_a_changed_case_again_and_reports_a_removed_one(tmp_path: Path) -> None:
    project = _project(tmp_path / "p")
    project.write({"evals/other.eval.py": EVAL.replace("range(30)", "range(2)")})
    first = project.run("--max-concurrency", "8")
    assert first.code == 0 and first.run_dir is not None
    run_json = first.run_dir / "run.json"
    # Make the run look unfinished: drop some trials of work/0000 and other/*, mark it crashed.
    lines = (first.run_dir / "results.jsonl").read_text().splitlines()
    keep = [ln for ln in lines if json.loads(ln)["case_id"] not in ("work/0001",)]
    (first.run_dir / "results.jsonl").write_text("\n".join(keep) + "\n")
    record = json.loads(run_json.read_text())
    record["status"] = "crashed"
    run_json.write_text(json.dumps(record))
    # Change work.eval.py (every work/* case changes) and remove other.eval.py.
    project.write({"evals/work.eval.py": EVAL.replace("ok ping", "ok")})
    project.path("evals/other.eval.py").unlink()
    resumed = project.run("--resume", "latest")
    assert resumed.code == 0, resumed.output
    assert "other/0000 on python:agents.slow:agent/default: its eval file is gone" in resumed.stderr
    assert (
        "work/0000 on python:agents.slow:agent/default: the case changed since the run started"
        in resumed.stderr
    )
    reading = resumed.reading() if resumed.run_dir else None
    from anpord.results import read_run

    reading = read_run(first.run_dir)
    work = [t for t in reading.trials if t.case_id.startswith("work/")]
    assert len(work) == 60 and all(t.verdict == "passed" for t in work)
    hashes = {c.case_hash for c in reading.record.cells if c.case_id.startswith("work/")}
    assert len(hashes) == 30  # the record took the new content's hashes
    assert {t.case_id for t in reading.trials if t.case_id.startswith("other/")} == {
        "other/0000",
        "other/0001",
    }


def test_rerun_failed_runs_only_failed_trials_as_a_new_linked_run(tmp_path: Path) -> None:
    project = build_project(
        tmp_path / "p",
        {
            "agents/coin.py": """
import os


async def agent(turn):
    return "ok" if os.environ.get("FIXED") or turn.input.endswith(("0", "2")) else "bad"
""",
            "evals/coin.eval.py": """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=range(4))
async def test(t, row):
    await t.send(f"try {row}")
    t.check(t.reply, includes("ok"))
""",
        },
        config='from anpord import define_eval_config\nconfig = define_eval_config(harness="python:agents.coin:agent", trials=2)\n',
    )
    first = project.run()
    assert first.code == 1 and first.run_dir is not None
    again = project.run("--rerun-failed", first.run_dir.name, env={"FIXED": "1"})
    assert again.code == 0, again.output
    assert "re-running 4 failed, timed-out and void trials" in again.stderr
    assert again.run_dir is not None and again.run_dir != first.run_dir
    record = again.run_json()
    assert record["rerun_of"] == first.run_dir.name
    ran = sorted((r["case_id"], r["trial"]) for r in again.results())
    assert ran == [("coin/0001", 0), ("coin/0001", 1), ("coin/0003", 0), ("coin/0003", 1)]
    assert again.stdout.rstrip().endswith("4 passed, 0 failed")
    nothing = project.run("--rerun-failed", again.run_dir.name)
    assert nothing.code == 2 and "nothing to re-run" in nothing.stderr


# An agent that answers once the test creates the file ``release``: its run is live until then.
GATED = """
import asyncio
from pathlib import Path


async def agent(turn):
    while not (Path(__file__).parents[1] / "release").exists():
        await asyncio.sleep(0.02)
    return "ok " + turn.input
"""


def test_resume_refuses_selection_flags_and_a_live_run(tmp_path: Path) -> None:
    project = build_project(tmp_path / "p", {"agents/slow.py": GATED, "evals/work.eval.py": EVAL},
                            config=CONFIG)
    bad = project.run("--resume", "latest", "--trials", "3")
    assert bad.code == 2 and "takes no --trials" in bad.stderr
    proc = _start(project)
    runs = project.folder / ".anpord" / "runs"
    try:
        wait_until(lambda: list(runs.glob("*/run.json")), "the run's run.json", proc=proc)
        live = project.run("--resume", "latest")
        assert live.code == 2 and "is still running" in live.stderr
    finally:
        project.path("release").write_text("")
        proc.wait(timeout=120)
        proc.communicate()


def test_resuming_a_crashed_run_that_has_every_trial_closes_it(tmp_path: Path) -> None:
    """Killed after its last trial was written but before its record was closed: nothing is left
    to run, and resuming it closes it as finished with its totals (a finished run is refused)."""
    project = _project(tmp_path / "p")
    first = project.run()
    assert first.code == 0 and first.run_dir is not None, first.output
    record = first.run_json()
    record["status"] = "crashed"  # what the next command finds after such a kill
    (first.run_dir / "run.json").write_text(json.dumps(record))
    resumed = project.run("--resume", first.run_dir.name)
    assert resumed.code == 0, resumed.output
    assert "0 trials to run" in resumed.stderr
    closed = json.loads((first.run_dir / "run.json").read_text())
    assert closed["status"] == "finished"
    assert closed["totals"]["passed"] == closed["totals"]["trials"] == len(PLANNED)
    again = project.run("--resume", first.run_dir.name)
    assert again.code == 2 and "nothing to resume" in again.stderr
