"""``anpord show`` prints a log entry of several lines (an agent's traceback) as lines, not as one
line with its newlines replaced."""

from __future__ import annotations

import subprocess
from typing import Any

from project_support import anpord_command, eval_file, run_env


def test_a_traceback_in_the_logs_shows_as_lines(make_project: Any) -> None:
    project = make_project({"evals/boom.eval.py": eval_file("""
        @define_eval
        async def test(t):
            await t.send("raise")
            t.succeeded()
    """)})
    run = project.run()
    assert run.code == 1, run.output
    show = subprocess.run([*anpord_command(), "show", "latest", "boom"], cwd=project.folder,
                          env=run_env(), capture_output=True, text=True, check=False, timeout=60)
    assert show.returncode == 0, show.stderr
    logs = show.stdout.split("\nLogs\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert "⏎" not in "\n".join(logs)
    start = next(i for i, line in enumerate(logs) if line.strip() == "Traceback (most recent call last):")
    assert logs[start].startswith("    ")  # under the entry's first line
    assert any(line.strip().startswith("File ") for line in logs[start:])
    assert logs[-1].strip() == "RuntimeError: agent exploded", logs
