"""A small project for the history tests: an agent whose answers the test steers through the
environment, and helpers to run the history commands."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from project_support import Project, anpord_command, build_project, run_env

MOODY = """
import os
import itertools

_calls = itertools.count()


async def agent(turn):
    mood = os.environ.get("MOOD", "good")
    if mood == "good":
        return "ok " + turn.input
    if mood == "flaky":  # every other call fails
        return ("ok " if next(_calls) % 2 == 0 else "nope ") + turn.input
    return "nope " + turn.input
"""

CONFIG = """
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.moody:agent", trials={trials}, timeout=20)
"""

EVAL = """
from anpord import define_eval
from anpord.expect import includes


@define_eval(each=["alpha", "beta"])
async def test(t, row):
    await t.send(row)
    t.check(t.reply, includes("ok"))
"""


def history_project(folder: Path, trials: int = 3) -> Project:
    project = build_project(
        folder,
        {"agents/moody.py": MOODY, "evals/greet.eval.py": EVAL},
        config=CONFIG.format(trials=trials),
    )
    return project


def anpord(
    project: Project | Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    folder = project.folder if isinstance(project, Project) else project
    return subprocess.run(
        [*anpord_command(), *args],
        cwd=cwd or folder,
        env=run_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.stdout.strip(), f"no JSON on stdout (exit {proc.returncode}): {proc.stderr}"
    return json.loads(proc.stdout)
