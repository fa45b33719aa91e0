"""``anpord.loaders``: fixtures read relative to the project folder (the evals root's parent)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from anpord.loaders import LoaderError, load_json, load_yaml, project_folder


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "evals" / "sub").mkdir(parents=True)
    (tmp_path / "evals" / "evals.config.py").write_text("")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.json").write_text('[{"q": "a"}, {"q": "b"}]')
    (tmp_path / "data" / "rows.yaml").write_text("rows:\n  - q: a\n  - q: b\n")
    return tmp_path


def test_project_folder_from_a_file_inside_the_evals_root(project: Path) -> None:
    assert project_folder(project / "evals" / "sub" / "x.eval.py") == project.resolve()


def test_relative_to_the_project_folder_from_the_current_folder(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project)
    assert load_json("data/rows.json") == [{"q": "a"}, {"q": "b"}]
    assert load_yaml("data/rows.yaml") == {"rows": [{"q": "a"}, {"q": "b"}]}
    monkeypatch.chdir(project / "evals" / "sub")  # found upward, too
    assert load_json("data/rows.json")[1] == {"q": "b"}


def test_absolute_paths_are_read_as_they_are(project: Path, tmp_path: Path) -> None:
    assert load_json(project / "data" / "rows.json")[0] == {"q": "a"}


def test_missing_file_names_it(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    with pytest.raises(LoaderError, match=r"load_yaml: data/nope.yaml: no such file"):
        load_yaml("data/nope.yaml")


def test_bad_json_and_yaml_say_where(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    (project / "data" / "bad.json").write_text('{"a": 1,\n "b": }')
    (project / "data" / "bad.yaml").write_text("a: [1, 2\nb: 3\n")
    with pytest.raises(LoaderError, match=r"bad\.json:2:\d+: "):
        load_json("data/bad.json")
    with pytest.raises(LoaderError, match=r"load_yaml: .*bad\.yaml:\d+:\d+: "):
        load_yaml("data/bad.yaml")


def test_no_project_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LoaderError, match="no evals.config.py"):
        load_json("x.json")


def test_an_eval_file_loads_relative_to_its_own_project(project: Path, tmp_path: Path) -> None:
    """Run from another folder, pointing at the eval file: the loader follows the eval file."""
    (project / "agents").mkdir()
    (project / "agents" / "__init__.py").write_text("")
    (project / "agents" / "echo.py").write_text("async def agent(turn):\n    return turn.input\n")
    (project / "evals" / "evals.config.py").write_text(
        "from anpord import define_eval_config\nconfig = define_eval_config(harness='python:agents.echo:agent')\n"
    )
    (project / "evals" / "sub" / "rows.eval.py").write_text(
        "from anpord import define_eval\n"
        "from anpord.expect import includes\n"
        "from anpord.loaders import load_yaml\n\n"
        "@define_eval(each=load_yaml('data/rows.yaml')['rows'], id=lambda r: r['q'])\n"
        "async def test(t, row):\n"
        "    await t.send(row['q'])\n"
        "    t.check(t.reply, includes(row['q']))\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    proc = subprocess.run(
        [sys.executable, "-m", "anpord", "eval", str(project / "evals" / "sub" / "rows.eval.py")],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "2 passed, 0 failed"
    assert "sub/rows/a" in proc.stdout and "sub/rows/b" in proc.stdout


def test_a_missing_fixture_is_a_one_line_usage_error(project: Path) -> None:
    (project / "evals" / "broken.eval.py").write_text(
        "from anpord.loaders import load_json\nROWS = load_json('data/missing.json')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "anpord", "eval", "--list"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "broken.eval.py" in proc.stderr and "data/missing.json" in proc.stderr
