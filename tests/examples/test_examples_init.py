"""``anpord init``: scaffold a project that passes straight away; never overwrite without --force."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCAFFOLD = (
    "evals/evals.config.py",
    "evals/example.eval.py",
    "agents/__init__.py",
    "agents/example.py",
)


def anpord(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "anpord", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_init_then_eval_passes(tmp_path: Path) -> None:
    init = anpord("init", "proj", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    project = tmp_path / "proj"
    for rel in SCAFFOLD:
        assert (project / rel).is_file(), rel
        assert f"created  {os.path.join('proj', rel)}" in init.stdout
    assert "Next: cd proj && anpord eval" in init.stdout

    run = anpord("eval", cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip().splitlines()[-1] == "1 passed, 0 failed"
    assert "✓ example" in run.stdout

    listed = anpord("eval", "--list", cwd=project)
    assert listed.stdout.splitlines() == ["example", "1 case"]


def test_init_in_the_current_folder(tmp_path: Path) -> None:
    init = anpord("init", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert "Next: anpord eval" in init.stdout
    assert anpord("eval", cwd=tmp_path).returncode == 0


def test_init_refuses_to_overwrite(tmp_path: Path) -> None:
    config = tmp_path / "evals" / "evals.config.py"
    config.parent.mkdir()
    config.write_text("# mine\n")

    proc = anpord("init", str(tmp_path), cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "evals.config.py" in lines[0] and "--force" in lines[0]
    assert config.read_text() == "# mine\n"
    # A refusal writes nothing at all, not even the files that did not exist.
    assert not (tmp_path / "evals" / "example.eval.py").exists()
    assert not (tmp_path / "agents").exists()
    assert proc.stdout == ""


def test_init_refuses_when_only_the_agent_exists(tmp_path: Path) -> None:
    agent = tmp_path / "agents" / "example.py"
    agent.parent.mkdir()
    agent.write_text("# mine\n")
    proc = anpord("init", cwd=tmp_path)
    assert proc.returncode == 2
    assert "agents/example.py" in proc.stderr
    assert agent.read_text() == "# mine\n"
    assert not (tmp_path / "evals").exists()


def test_init_force_overwrites_but_keeps_an_existing_package_init(tmp_path: Path) -> None:
    assert anpord("init", cwd=tmp_path).returncode == 0
    config = tmp_path / "evals" / "evals.config.py"
    config.write_text("# broken\n")
    package_init = tmp_path / "agents" / "__init__.py"
    package_init.write_text("# my package\n")

    proc = anpord("init", "--force", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "replaced evals/evals.config.py" in proc.stdout
    assert "kept     agents/__init__.py" in proc.stdout
    assert "define_eval_config" in config.read_text()
    assert package_init.read_text() == "# my package\n"
    assert anpord("eval", cwd=tmp_path).returncode == 0


def test_init_on_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    proc = anpord("init", "afile", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "anpord init: afile exists and is not a folder"


def test_init_leaves_no_temp_files(tmp_path: Path) -> None:
    assert anpord("init", cwd=tmp_path).returncode == 0
    names = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert names == sorted(SCAFFOLD)


def test_init_help() -> None:
    proc = anpord("init", "--help", cwd=Path.cwd())
    assert proc.returncode == 0
    assert "--force" in proc.stdout
