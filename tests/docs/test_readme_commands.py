"""The README's first code block: two commands, each run from the checkout's root, that work on
their own and pasted together, and the second is what ``.ci/run`` runs.

They run in real bash in a copy of the checkout. The system tools they call (``apt-get``,
``python3 -m venv``, ``pip``, ``pytest``) are stand-ins on ``PATH`` that record where and how they
were called and fail as the real ones do outside a Python project; ``anpord`` is this checkout's
own, so the first command's eval really runs.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from project_support import run_env

REPO = Path(__file__).resolve().parents[2]

# Each stand-in appends "<folder it ran in>\t<command line>" to $README_LOG.
LOG_LINE = 'printf \'%s\\t%s\\n\' "$PWD" "$(basename "$0") $*" >> "$README_LOG"\n'

APT_GET = "#!/bin/bash\n" + LOG_LINE

# python3 / python, outside the venv and in it: makes a venv, or "runs" pytest where a project is.
PYTHON = "#!/bin/bash\n" + LOG_LINE + """\
if [ "$1 $2" = "-m venv" ]; then
  mkdir -p "$3/bin"
  venv=$(cd "$3" && pwd)
  printf 'export VIRTUAL_ENV=%s\\nexport PATH="%s/bin:$PATH"\\n' "$venv" "$venv" > "$3/bin/activate"
  for tool in python python3 pip anpord; do cp "$README_STUBS/$tool" "$3/bin/$tool"; done
  exit 0
fi
if [ "$1 $2" = "-m pytest" ]; then
  [ -f pyproject.toml ] || { echo "pytest: no pyproject.toml in $PWD" >&2; exit 4; }
  exit 0
fi
echo "python3 stand-in: unexpected arguments: $*" >&2
exit 2
"""

PIP = "#!/bin/bash\n" + LOG_LINE + """\
if [ "$1 $2" = "install -e" ]; then
  spec=${3%%[*}
  if [ ! -f "$spec/pyproject.toml" ]; then
    echo "ERROR: file://$(cd "$spec" && pwd) does not appear to be a Python project" >&2
    exit 1
  fi
  exit 0
fi
echo "pip stand-in: unexpected arguments: $*" >&2
exit 2
"""

# This checkout's anpord (the tests' interpreter, PYTHONPATH=src from run_env).
ANPORD = "#!/bin/bash\n" + LOG_LINE + 'exec "$README_REAL_PYTHON" -m anpord "$@"\n'


def first_block() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^```\w*\n(.*?)^```", text, re.M | re.S)
    assert m is not None, "README.md has no code block"
    return m.group(1).splitlines()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """What a fresh clone holds of what the commands touch, with no venv and no earlier run."""
    root = tmp_path / "anpord"
    root.mkdir()
    for name in ("README.md", "pyproject.toml"):
        shutil.copy(REPO / name, root / name)
    (root / ".ci").mkdir()
    shutil.copy(REPO / ".ci" / "run", root / ".ci" / "run")
    shutil.copytree(REPO / "examples" / "weather", root / "examples" / "weather",
                    ignore=shutil.ignore_patterns(".anpord", "__pycache__"))
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    stubs = tmp_path / "stubs"
    stubs.mkdir()
    for name, body in {"apt-get": APT_GET, "python3": PYTHON, "python": PYTHON, "pip": PIP,
                       "anpord": ANPORD}.items():
        path = stubs / name
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    environ = run_env({
        "README_LOG": str(tmp_path / "calls.log"),
        "README_STUBS": str(stubs),
        "README_REAL_PYTHON": sys.executable,
        "PATH": os.pathsep.join([str(stubs), "/usr/bin", "/bin"]),
    })
    environ.pop("VIRTUAL_ENV", None)  # a fresh shell, not the tests' venv
    return environ


def run_bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-o", "pipefail", "-c", script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def calls(env: dict[str, str]) -> list[tuple[str, str]]:
    log = Path(env["README_LOG"])
    lines = log.read_text().splitlines() if log.exists() else []
    return [tuple(line.split("\t", 1)) for line in lines]  # type: ignore[misc]


def assert_ran_from(root: Path, seen: list[tuple[str, str]], expected: list[str]) -> None:
    """The calls began as ``expected`` says, in that order, and every one but anpord's (which
    may look for its project anywhere) ran in the checkout's root."""
    assert len(seen) == len(expected), seen
    for (folder, cmd), start in zip(seen, expected):
        assert cmd.startswith(start), seen
        if not start.startswith("anpord"):
            assert Path(folder) == root, f"{cmd!r} ran in {folder}, not the checkout's root"


FIRST = ["python3 -m venv .venv", "pip install -e .", "anpord eval"]
# The suite runs twice: on the default event loop, then on asyncio's (ANPORD_LOOP=asyncio).
SECOND = ["apt-get update", "apt-get install -y", "python3 -m venv .venv", "pip install -e .[test]",
          "python -m pytest", "python -m pytest"]


def assert_first_ran(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    assert "14 passed, 0 failed" in done.stdout.splitlines(), done.stdout


def test_the_first_block_is_the_two_commands() -> None:
    lines = first_block()
    assert len(lines) == 2 and all(line.strip() for line in lines), lines
    assert "anpord eval" in lines[0]
    # The suite, on the default event loop (uvloop's) and on asyncio's own.
    assert lines[1].endswith("python -m pytest -q && ANPORD_LOOP=asyncio python -m pytest -q")
    # What the sandbox tests run on: bubblewrap, and a container engine for the docker sandbox.
    assert {"bubblewrap", "podman", "runc"} <= set(lines[1].split()), lines[1]


def test_the_second_command_installs_the_programs_the_suite_runs() -> None:
    # bwrap sandboxes, npm for the coding-agent CLIs the proxy tests install (Claude Code), ...
    packages = first_block()[1].split("apt-get install -y ", 1)[1].split(" && ", 1)[0].split()
    assert {"bubblewrap", "git", "nodejs", "postgresql", "chromium"} <= set(packages), packages
    # npm comes with NodeSource's nodejs (whose package conflicts with Debian's npm), and
    # separately with Debian's: installed only when the nodejs at hand did not bring it.
    assert "&& (command -v npm >/dev/null || apt-get install -y npm) &&" in first_block()[1]


def test_the_first_command_runs_on_its_own(checkout: Path, env: dict[str, str]) -> None:
    done = run_bash(first_block()[0], checkout, env)
    assert_first_ran(done)
    assert_ran_from(checkout, calls(env), FIRST)


def test_the_second_command_runs_on_its_own(checkout: Path, env: dict[str, str]) -> None:
    done = run_bash(first_block()[1], checkout, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_ran_from(checkout, calls(env), SECOND)


def test_the_two_pasted_together_run_both_from_the_root(checkout: Path, env: dict[str, str]) -> None:
    # As a terminal runs a pasted block: one shell, line after line.
    done = run_bash("\n".join(first_block()) + "\n", checkout, env)
    assert_first_ran(done)
    assert_ran_from(checkout, calls(env), FIRST + SECOND)


def test_ci_runs_the_second_command(checkout: Path, env: dict[str, str]) -> None:
    done = subprocess.run([str(checkout / ".ci" / "run")], cwd=checkout / "examples", env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"ci: {first_block()[1]}" in done.stdout
    assert_ran_from(checkout, calls(env), SECOND)
