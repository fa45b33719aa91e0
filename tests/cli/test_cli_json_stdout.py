"""``--json`` stdout carries the document alone, whatever writes to file descriptor 1."""

from __future__ import annotations

import json
from typing import Any

from project_support import END, Project, eval_file

NOISY_AGENT = """
import os
import subprocess


def agent(turn):
    subprocess.run(["echo", "SUBPROCESS-NOISE"], check=True)
    os.write(1, b"FD1-NOISE\\n")
    return "quiet answer"
"""


def test_json_stdout_parses_when_a_subprocess_or_os_write_uses_fd_1(make_project: Any) -> None:
    project: Project = make_project(
        {
            "agents/fd_noise.py": NOISY_AGENT,
            "evals/noisy.eval.py": eval_file(f"""
                import os
                os.write(1, b"EVAL-IMPORT-FD1\\n")

                @define_eval
                async def test(t):
                    await t.send("hi")
                    os.write(1, b"TEST-BODY-FD1\\n")
                    t.check(t.reply, equals("quiet answer"))
                    {END}
            """),
        }
    )
    for args in (["--list", "--json"], ["--json", "--harness", "python:agents.fd_noise:agent"]):
        run = project.run(*args)
        assert run.code == 0, run.output
        doc = json.loads(run.stdout)  # the whole of stdout parses
        assert "NOISE" not in run.stdout and "FD1" not in run.stdout
        assert "EVAL-IMPORT-FD1" in run.stderr
    assert doc["totals"]["passed"] == 1
    assert "SUBPROCESS-NOISE" in run.stderr and "FD1-NOISE" in run.stderr
