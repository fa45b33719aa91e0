"""End to end: ``anpord eval`` in a subprocess runs command agents in local and bwrap sandboxes,
and turns each fault into a clear verdict while the run goes on and nothing is left behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from command_support import live_with

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "command_agent"
SRC = Path(__file__).resolve().parents[3] / "src"
# This checkout's anpord, never a console script on PATH (it may belong to another install).
ANPORD = [sys.executable, "-m", "anpord"]


def checkout_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    return env


def anpord(
    cwd: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    full_env = checkout_env(NO_COLOR="1", TMPDIR=str(cwd / "tmp"), **(env or {}))
    (cwd / "tmp").mkdir(exist_ok=True)
    return subprocess.run(
        [*ANPORD, "eval", *args],
        check=False,
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def results(project: Path) -> dict[str, dict[str, Any]]:
    [run_dir] = sorted((project / ".anpord" / "runs").iterdir())[-1:]
    lines = [
        json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines() if x.strip()
    ]
    return {f"{r['case_id']}@{r['variant']}": r for r in lines}


def no_temp_left(project: Path) -> None:
    assert [p.name for p in (project / "tmp").iterdir()] == [], "a trial left a temp folder"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    copy = tmp_path / "command_agent"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns(".anpord", "__pycache__"))
    return copy


@pytest.mark.parametrize("sandbox", [[], ["--sandbox", "bwrap"]], ids=["local", "bwrap"])
def test_the_example_passes(example: Path, sandbox: list[str]) -> None:
    done = anpord(example, *sandbox)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.rstrip().endswith("3 passed, 0 failed")
    got = results(example)
    assert {k: v["verdict"] for k, v in got.items()} == {
        "approval@notes-agent": "passed",
        "notes/list@notes-agent": "passed",
        "notes/note@notes-agent": "passed",
    }
    no_temp_left(example)


FAULTS_CONFIG = """
from pathlib import Path
from anpord import Variant, define_eval_config
HERE = Path(__file__).resolve().parent
config = define_eval_config(
    variants=[
        Variant(name="good", harness="command:echo fine"),
        Variant(name="broken", harness="command:no-such-agent --go"),
    ],
    timeout=20,
)
"""

FAULTS_EVAL = """
from anpord import command, define_eval, define_suite, directory, files

suite = define_suite(
    source=files({"a.txt": "a"}),
    cases=[
        define_eval(id="ok", prompt="hi", validate=lambda c: (c.read_text("a.txt") == "a", "a.txt intact")),
        define_eval(id="missing-source", prompt="hi", source=directory("fixtures/not-there")),
        define_eval(id="checks", prompt="hi",
                    validate=[command("test -f a.txt"), command("echo nope; exit 1"), command("pytest-missing -q")]),
    ],
)
"""


def test_faults_become_clear_verdicts_and_the_run_goes_on(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "evals").mkdir(parents=True)
    (project / "evals" / "evals.config.py").write_text(textwrap.dedent(FAULTS_CONFIG))
    (project / "evals" / "faults.eval.py").write_text(textwrap.dedent(FAULTS_EVAL))
    done = anpord(project)
    assert done.returncode == 1, done.stdout + done.stderr
    got = results(project)
    verdict = {k: (v["verdict"], v["reason"]) for k, v in got.items()}
    assert verdict["faults/ok@good"][0] == "passed"
    assert verdict["faults/ok@broken"] == ("void", "agent command not found: no-such-agent")
    status, reason = verdict["faults/missing-source@good"]
    assert (
        status == "void"
        and "directory('fixtures/not-there')" in reason
        and "does not exist" in reason
    )
    checks = {
        a["name"]: (a["status"], a["message"]) for a in got["faults/checks@good"]["assertions"]
    }
    assert checks["test -f a.txt"] == ("passed", "passed")
    assert checks["echo nope; exit 1"][0] == "failed"
    assert checks["pytest-missing -q"][0] == "void"
    assert got["faults/checks@good"]["verdict"] == "failed"  # a failed gate wins over a void one
    no_temp_left(project)


def test_a_missing_bwrap_voids_every_trial_with_the_reason(example: Path) -> None:
    done = anpord(example, "--sandbox", "bwrap", env={"ANPORD_BWRAP": "/nonexistent/bwrap"})
    assert done.returncode == 1, done.stdout + done.stderr
    for line in results(example).values():
        assert (line["verdict"], line["reason"]) == (
            "void",
            "bubblewrap not found at /nonexistent/bwrap: install it (apt-get install bubblewrap) or use sandbox='local'",
        )
    assert "3 void" in done.stdout
    no_temp_left(example)


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_a_hanging_agent_times_out_and_nothing_outlives_the_run(
    tmp_path: Path, sandbox: str
) -> None:
    t = f"{9000 + os.getpid() % 1000}.{len(sandbox)}7"
    project = tmp_path / "proj"
    (project / "evals").mkdir(parents=True)
    (project / "evals" / "evals.config.py").write_text(
        "from anpord import define_eval_config\n"
        f"config = define_eval_config(harness='command:(setsid sleep {t} &); sleep {t}', sandbox={sandbox!r})\n"
    )
    (project / "evals" / "hang.eval.py").write_text(
        "from anpord import define_eval, files\n"
        "case = define_eval(prompt='hi', source=files({}), validate=lambda c: True)\n"
    )
    done = anpord(project, "--timeout", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = results(project).values()
    assert (line["verdict"], line["reason"]) == ("timed_out", "timed out after 1s")
    assert live_with(t) == []
    no_temp_left(project)


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_ctrl_c_stops_the_run_and_leaves_nothing(tmp_path: Path, sandbox: str) -> None:
    t = f"{9000 + os.getpid() % 1000}.{len(sandbox)}3"
    project = tmp_path / "proj"
    (project / "evals").mkdir(parents=True)
    (project / "tmp").mkdir()
    (project / "evals" / "evals.config.py").write_text(
        "from anpord import define_eval_config\n"
        f"config = define_eval_config(harness='command:(setsid sleep {t} &); sleep {t}', sandbox={sandbox!r})\n"
    )
    (project / "evals" / "hang.eval.py").write_text(
        "from anpord import define_eval, files\n"
        "case = define_eval(prompt='hi', source=files({}), validate=lambda c: True)\n"
    )
    env = checkout_env(NO_COLOR="1", TMPDIR=str(project / "tmp"))
    proc = subprocess.Popen(
        [*ANPORD, "eval"],
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(200):
            if len(live_with(t)) >= 2:
                break
            time.sleep(0.05)
        assert live_with(t), "the agent did not start"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert live_with(t) == []
    no_temp_left(project)
