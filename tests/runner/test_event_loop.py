"""The event loop a run uses: uvloop's where it is installed, asyncio's when ``ANPORD_LOOP=asyncio``
asks for it or uvloop cannot be imported; and on either, time lost to another trial's stall never counts against a deadline
that came due during it (uvloop runs due timers before the stall's heartbeat gets through)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from project_support import END, eval_file, run_env

LOOP_EVAL = """
@define_eval(each=["hi"])
async def test(t, row):
    loop = asyncio.get_running_loop()
    Path("loop.txt").write_text(type(loop).__module__ + "." + type(loop).__name__)
    await t.send(row)
    {end}
"""


@pytest.mark.parametrize(("asked", "expected"), [
    (None, "uvloop.Loop"),
    ("", "uvloop.Loop"),
    ("uvloop", "uvloop.Loop"),
    ("UVLoop ", "uvloop.Loop"),
    ("asyncio", "asyncio.unix_events._UnixSelectorEventLoop"),
    (" AsyncIO", "asyncio.unix_events._UnixSelectorEventLoop"),
    ("no-such-loop", "uvloop.Loop"),
])
def test_a_run_uses_uvloop_unless_asked_for_asyncio(make_project: Any, asked: str | None,
                                                    expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANPORD_LOOP", raising=False)  # the suite may run with it set
    project = make_project({"evals/loop.eval.py": eval_file(LOOP_EVAL.format(end=END))})
    run = project.run(env={"ANPORD_LOOP": asked} if asked is not None else None)
    assert run.code == 0, run.output
    assert (project.folder / "loop.txt").read_text() == expected


def test_without_uvloop_a_run_uses_asyncio_silently(make_project: Any, tmp_path: Path) -> None:
    hidden = tmp_path / "no-uvloop"  # first on the path: `import uvloop` fails as uninstalled
    hidden.mkdir()
    (hidden / "uvloop.py").write_text("raise ImportError('No module named uvloop')\n")
    project = make_project({"evals/loop.eval.py": eval_file(LOOP_EVAL.format(end=END))})
    env = run_env({"ANPORD_LOOP": ""})
    env["PYTHONPATH"] = f"{hidden}:{env['PYTHONPATH']}"
    run = project.run(env=env)
    assert run.code == 0 and not run.stderr.strip(), run.output
    assert (project.folder / "loop.txt").read_text() == "asyncio.unix_events._UnixSelectorEventLoop"


DEADLINE_CHILD = r"""
import asyncio, json, time
from anpord._loop import run_bounded
from anpord.runner._stalls import StallMonitor

async def main():
    loop = asyncio.get_running_loop()
    monitor = StallMonitor(loop)
    monitor.start()
    await asyncio.sleep(0.2)
    seen = {}
    started = loop.time(), time.monotonic()

    def deadline():  # comes due in the middle of the stall below
        seen["lost"] = monitor.lost_time("waiting", started[1])
        seen["late"] = loop.time() - started[0]

    loop.call_later(0.3, deadline)

    async def blocker():
        time.sleep(1.2)  # holds the loop

    task = asyncio.ensure_future(blocker())
    task._anpord_trial = "blocker"
    await task
    await asyncio.sleep(0.3)
    monitor.stop()
    seen["blamed"] = len(monitor.caused_by("blocker"))
    seen["loop"] = type(loop).__module__
    print(json.dumps(seen), flush=True)

run_bounded(main())
"""


@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
def test_a_deadline_due_during_a_stall_sees_the_stall_already(loop: str) -> None:
    proc = subprocess.run([sys.executable, "-c", DEADLINE_CHILD], capture_output=True, text=True,
                          env=run_env({"ANPORD_LOOP": loop}), timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["loop"].startswith(loop), seen
    # The timer ran once the loop was free again, after the stall, and found it recorded: the
    # time a trial lost to it (by the blocker) is given back.
    assert seen["late"] >= 1.1, seen  # due at 0.3 s (uvloop's clock counts milliseconds)
    assert seen["lost"] >= 1.0, seen
    assert seen["blamed"] == 1, seen


def test_the_loop_setting_is_documented() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "python-agents.md").read_text()
    assert "ANPORD_LOOP" in doc
