"""Files the CLI writes honour the umask, and these tests run this checkout's anpord."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from project_support import anpord_command, run_env

def test_init_writes_ordinary_files_honouring_the_umask(tmp_path: Path) -> None:
    done = subprocess.run(
        [*anpord_command(), "init", str(tmp_path / "proj")],
        env=run_env(),
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=lambda: os.umask(0o027),
    )
    assert done.returncode == 0, done.stderr
    written = [p for p in (tmp_path / "proj").rglob("*") if p.is_file()]
    assert written and {p.stat().st_mode & 0o777 for p in written} == {0o640}
    assert not [p for p in written if p.name.endswith(".tmp")]


def test_cli_runs_use_this_checkout(tmp_path: Path) -> None:
    # A console script on PATH (or beside the interpreter) may belong to another install.
    shim = tmp_path / "bin" / "anpord"
    shim.parent.mkdir()
    shim.write_text("#!/bin/sh\necho not this checkout >&2\nexit 99\n")
    shim.chmod(0o755)
    env = run_env({"PATH": f"{shim.parent}{os.pathsep}{os.environ.get('PATH', '')}"})
    where = subprocess.run(
        [sys.executable, "-c", "import anpord; print(anpord.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    src = Path(__file__).resolve().parents[2] / "src"
    assert Path(where).resolve().is_relative_to(src), where
    assert anpord_command() == [sys.executable, "-m", "anpord"]
    done = subprocess.run(
        [*anpord_command(), "eval", "--help"], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "usage: anpord eval" in done.stdout
