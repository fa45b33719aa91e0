"""The view takes baselines and a cell's history from the run store: a baseline set with
``anpord baseline set RUN`` is what the grid's deltas compare with."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from project_support import anpord_command, eval_file, run_env

from anpord.view import StoreViewData

FLIP = """
import os
from pathlib import Path

async def agent(turn):
    counter = Path(os.environ["FLIP_COUNTER"])
    n = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(n + 1))
    return "Sunny" if n != 1 else "Rain"   # the second run fails
"""


@pytest.mark.slow
def test_deltas_compare_with_the_baseline_a_team_set(make_project: Any, tmp_path: Any) -> None:
    project = make_project({
        "agents/flip.py": FLIP,
        "evals/sky.eval.py": eval_file("""
            @define_eval
            async def test(t):
                await t.send("sky?")
                t.check(t.reply, includes("Sunny"))
        """),
    })
    env = {"FLIP_COUNTER": str(tmp_path / "n")}
    runs = [project.run("--harness", "python:agents.flip:agent", env=env).run_dir for _ in range(3)]
    first, failing, last = (r.name for r in runs)  # type: ignore[union-attr]
    data = StoreViewData(project.folder)
    # The first reading is the baseline until one is set: the last run is level with it.
    (key, delta), = data.baseline_deltas(last).items()
    assert key[0] == "sky" and delta.baseline_run_id == first and delta.delta == 0 and not delta.regressed
    done = subprocess.run([*anpord_command(), "baseline", "set", failing], cwd=project.folder,
                          env=run_env(), capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    data = StoreViewData(project.folder)
    (_, delta), = data.baseline_deltas(last).items()
    assert delta.baseline_run_id == failing and delta.delta == 1.0 and not delta.regressed
    history = data.cell_history("sky", key[1])
    assert [p.run_id for p in history] == [first, failing, last]
    assert [p.pass_rate for p in history] == [1.0, 0.0, 1.0]
