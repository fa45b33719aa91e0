"""The console when its reader goes away: `anpord eval | head -1` ends quietly."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_closed_pipe_ends_the_console_quietly(tmp_path: Path) -> None:
    project = tmp_path / "weather"
    shutil.copytree(REPO / "examples" / "weather", project, ignore=shutil.ignore_patterns(".anpord"))
    env = {**os.environ, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run(
        f"{sys.executable} -m anpord eval --exclude-tag demo-failure | head -1",
        shell=True, cwd=project, env=env, capture_output=True, text=True, timeout=120,
        executable="/bin/bash",
    )
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("✓"), done.stdout
    assert "Broken pipe" not in done.stderr and "reporter" not in done.stderr, done.stderr
    # The run itself still finished and wrote every trial.
    runs = list((project / ".anpord" / "runs").iterdir())
    assert len(runs) == 1
    lines = (runs[0] / "results.jsonl").read_text().splitlines()
    assert len(lines) == 14
