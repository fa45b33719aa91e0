"""History commands piped into a reader that stops early (``| head -1``) end quietly: no
traceback, no ``[Errno 32] Broken pipe`` line."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from project_support import anpord_command, eval_file, run_env


@pytest.mark.parametrize("command", [["show", "latest"], ["compare"], ["harnesses"], ["runs"]])
def test_a_reader_that_stops_early_gets_no_error(make_project: Any, command: list[str]) -> None:
    cases = {f"evals/c{i}.eval.py": eval_file("""
        @define_eval
        async def test(t):
            await t.send("hello")
            t.message_includes("nothing of the sort")
    """) for i in range(40)}
    project = make_project(cases)
    assert project.run().code == 1
    # A reader that has closed its end before anpord writes: every write fails with EPIPE.
    reader = subprocess.Popen(["true"], stdin=subprocess.PIPE)
    reader.wait(timeout=30)
    done = subprocess.run([*anpord_command(), *command], cwd=project.folder, env=run_env(),
                          stdout=reader.stdin, stderr=subprocess.PIPE, text=True, check=False, timeout=60)
    reader.stdin.close()
    assert "Broken pipe" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stderr
