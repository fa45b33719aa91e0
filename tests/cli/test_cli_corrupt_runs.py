"""History commands on damaged run folders: a one-line reason, never a traceback or a hang.

Each damage is made to a copy of a real run: a results.jsonl line nested 5,000 levels deep,
run.json, results.jsonl or events.ndjson as a FIFO (reading one waits for a writer forever),
results.jsonl as a folder, run.json as a link to a file outside the run folder. ``runs``, ``show``
(the grid and one trial), ``compare`` and ``db rebuild`` read only regular files, never follow a
link, and bound nesting.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from project_support import END, Project, anpord_command, eval_file, run_env

DEEP = ("[" * 5000 + "]" * 5000).encode()
OUTSIDE = "root:$6$outside-the-run-Ou7Zx:19000:0:99999:7:::\n"


def _deep_line(run: Path) -> None:
    with open(run / "results.jsonl", "ab") as f:
        f.write(b'{"v":1,"case_id":"deep","x":' + DEEP + b"}\n")


def _deep_record(run: Path) -> None:
    (run / "run.json").write_bytes(b'{"format":1,"x":' + DEEP + b"}")


def _fifo(name: str) -> Callable[[Path], None]:
    def damage(run: Path) -> None:
        (run / name).unlink()
        os.mkfifo(run / name)
    return damage


def _folder(run: Path) -> None:
    (run / "results.jsonl").unlink()
    (run / "results.jsonl").mkdir()


def _link_out(run: Path) -> None:
    outside = run.parent.parent.parent / "outside.txt"
    outside.write_text(OUTSIDE)
    (run / "run.json").unlink()
    (run / "run.json").symlink_to(outside)


DAMAGES = {
    "deep-line": _deep_line,
    "deep-record": _deep_record,
    "run-json-fifo": _fifo("run.json"),
    "results-fifo": _fifo("results.jsonl"),
    "events-fifo": _fifo("events.ndjson"),
    "results-folder": _folder,
    "run-json-link": _link_out,
}


@pytest.fixture(scope="module")
def project(make_module_project: Any) -> Project:
    project: Project = make_module_project({
        "evals/w.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("weather")
                {END}
        """),
    })
    run = project.run()
    assert run.code == 0 and run.run_dir is not None, run.output
    for n, (name, damage) in enumerate(DAMAGES.items()):
        copy = run.run_dir.parent / f"20991231-0000{n:02d}-{name}"
        shutil.copytree(run.run_dir, copy)
        record = json.loads((copy / "run.json").read_text())
        record["run_id"] = copy.name
        (copy / "run.json").write_text(json.dumps(record))
        damage(copy)
    return project


def _cli(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run([*anpord_command(), *args], cwd=project.folder, env=run_env(),
                              capture_output=True, text=True, timeout=60, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"anpord {' '.join(args)} hung")


def _no_traceback(done: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in done.stderr, done.stderr
    assert "Ou7Zx" not in done.stdout + done.stderr


@pytest.mark.parametrize("args", [["runs"], ["compare"], ["db", "rebuild"], ["show", "latest"]])
def test_listing_and_history_commands_go_past_damaged_runs(project: Project, args: list[str]) -> None:
    done = _cli(project, *args)
    _no_traceback(done)
    if args[0] == "show":  # the latest run is a damaged one
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    else:
        assert done.returncode in (0, 1), (args, done.returncode, done.stderr)


@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_show_gives_one_line_for_each_damage(project: Project, name: str) -> None:
    run_id = next(p.name for p in (project.folder / ".anpord" / "runs").iterdir() if p.name.endswith(name))
    for args in (["show", run_id], ["show", run_id, "w"]):
        done = _cli(project, *args)
        _no_traceback(done)
        if done.returncode == 2:
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and run_id in lines[0], done.stderr
        else:
            assert done.returncode == 0, (args, done.stderr)


def test_what_each_damage_reads_as(project: Project) -> None:
    def show(name: str, *case: str) -> subprocess.CompletedProcess[str]:
        run_id = next(p.name for p in (project.folder / ".anpord" / "runs").iterdir() if p.name.endswith(name))
        return _cli(project, "show", run_id, *case)

    assert "is a link, which is not followed" in show("run-json-link").stderr
    assert "is a FIFO, not a file" in show("run-json-fifo").stderr
    assert "is a FIFO, not a file" in show("results-fifo").stderr
    assert "is a folder, not a file" in show("results-folder").stderr
    assert "nested more than 255 levels deep" in show("deep-record").stderr
    deep = show("deep-line")
    assert deep.returncode == 0 and "nested more than 255 levels deep" in deep.stdout + deep.stderr
    events = show("events-fifo", "w")
    assert "is a FIFO, not a file" in events.stdout + events.stderr, events


def test_the_view_answers_every_damaged_run(project: Project) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "view"))
    from view_support import trial_path, view_server

    runs = sorted(p.name for p in (project.folder / ".anpord" / "runs").iterdir())
    with view_server(project.folder) as server:
        status, _, body = server.get("/")
        assert status == 200 and "Ou7Zx" not in body
        for run_id in runs:
            for target in (f"/runs/{run_id}", trial_path(run_id, "w", "python:agents.kit:agent/default", 0)):
                status, _, body = server.get(target, timeout=30)
                assert status in (200, 404), (target, status, body[:300])
                assert "Ou7Zx" not in body and "Traceback" not in body
        # The undamaged run's trial page is there: the paths above are the right ones.
        assert server.get(trial_path(runs[0], "w", "python:agents.kit:agent/default", 0))[0] == 200
