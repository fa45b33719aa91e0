"""A run loads of the statistics only what it uses: a fixed trial count loads neither the adaptive
allocator nor the planner, the flakiness estimate or the confidence sequence; a range of trials
loads the allocator. What the process has is read by the agent's run-level teardown."""

from __future__ import annotations

import json
from typing import Any

from project_support import END, eval_file

WATCHING_AGENT = '''
import json, sys
from pathlib import Path


class Agent:
    async def setup(self):
        pass

    async def teardown(self):
        Path("stats.json").write_text(json.dumps(sorted(
            name for name in sys.modules if name.startswith("anpord.stats."))))

    async def __call__(self, turn):
        return "an answer"


agent = Agent()
'''

CONFIG = """
from anpord import define_eval_config

config = define_eval_config(harness="python:watching:agent", timeout=30)
"""


def _project(make_project: Any) -> Any:
    """One case of the watching agent."""
    return make_project(
        {"watching.py": WATCHING_AGENT,
         "evals/seen.eval.py": eval_file(f"""
            @define_eval
            async def test(t):
                await t.send("a question")
                {END}
        """)},
        config=CONFIG,
    )


def _loaded(make_project: Any, *args: str) -> list[str]:
    project = _project(make_project)
    run = project.run(*args)
    assert run.code == 0, run.output
    loaded: list[str] = json.loads((project.folder / "stats.json").read_text())
    return loaded


def test_a_run_of_fixed_trials_loads_no_adaptive_planning_or_flakiness_statistics(make_project: Any) -> None:
    loaded = _loaded(make_project)
    assert "anpord.stats._trial_count" in loaded  # the trial count was read
    for unused in ("_adaptive", "_plan", "_flaky", "_sequence", "_stream", "_evidence"):
        assert f"anpord.stats.{unused}" not in loaded, loaded


def test_a_run_of_a_range_of_trials_loads_the_allocator(make_project: Any) -> None:
    loaded = _loaded(make_project, "--trials", "2..3")
    assert "anpord.stats._adaptive" in loaded, loaded


RUNNER_API = """
import sys
from anpord.runner import RunOptions, build_plan, execute, find_project, load_cases, select_files

project = find_project([])
opts = RunOptions(compare={compare})
result = execute(build_plan(project, load_cases(select_files(project, [])), opts), opts, reporters=[])
assert result.summary.totals["passed"] == 1, result.summary.totals
print(sorted(m for m in ("anpord.store._compare", "anpord.stats._paired") if m in sys.modules))
print(result.summary.comparison is not None)
"""


def test_a_run_that_compares_nothing_loads_no_comparison(make_project: Any) -> None:
    """Through the runner API (which compares only when asked): filed in the store, but neither
    the store's comparison nor the paired statistics are loaded; asked to compare, both are."""
    import subprocess
    import sys

    from project_support import run_env

    project = _project(make_project)
    seen = []
    for compare in (False, True):
        out = subprocess.run([sys.executable, "-c", RUNNER_API.format(compare=compare)], cwd=project.folder,
                             env=run_env(), capture_output=True, text=True, timeout=120, check=False)
        assert out.returncode == 0, out.stderr
        seen.append(out.stdout.split("\n")[:2])
    assert seen == [["[]", "False"], ["['anpord.stats._paired', 'anpord.store._compare']", "True"]]
