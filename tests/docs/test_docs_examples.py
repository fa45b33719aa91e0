"""The docs cannot rot: every Python block in README.md and docs/ parses, and every example marked
runnable is run as written, through the real ``anpord eval``.

A runnable example is the part of a page between ``<!-- example: NAME expect="CLOSING LINE" -->``
and ``<!-- /example -->``: each code block in it whose first line is a comment naming a file
(``# evals/weather/brooklyn.eval.py``) is written to that path in a fresh project folder, then
``anpord eval`` runs there (with ``args="..."`` from the marker, if any) and must end with the
expected closing line. A package named ``agents`` is importable beside it (as ``pip install
openai-agents`` puts one in site-packages), so an example whose ``agents/`` folder is not a
package (no ``__init__.py``) fails as it would for such a user.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import textwrap
from pathlib import Path

import pytest
from project_support import anpord_command, run_env

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.M | re.S)
EXAMPLE = re.compile(r"<!-- example: (\S+)(.*?)-->\n(.*?)<!-- /example -->", re.S)
FILE_COMMENT = re.compile(r"^#\s*([\w./-]+\.\w+)\s*$")


def python_blocks() -> list[tuple[str, str]]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1) == "python":
                line = text.count("\n", 0, m.start()) + 1
                out.append((f"{page.relative_to(REPO)}:{line}", m.group(2)))
    return out


def examples() -> list[tuple[str, str, str]]:
    out = []
    for page in PAGES:
        for m in EXAMPLE.finditer(page.read_text(encoding="utf-8")):
            out.append((f"{page.relative_to(REPO)}#{m.group(1)}", m.group(2), m.group(3)))
    return out


@pytest.mark.parametrize(("where", "code"), python_blocks(), ids=[w for w, _ in python_blocks()])
def test_every_python_block_parses(where: str, code: str) -> None:
    # Fragments may await at the top level (they stand for lines inside a test) and may be
    # indented (a piece of a larger file).
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | ast.PyCF_ONLY_AST
    compile(textwrap.dedent(code), where, "exec", flags=flags)


def test_the_pages_hold_runnable_examples() -> None:
    names = [name for name, _, _ in examples()]
    assert "README.md#first-eval" in names
    assert "docs/writing-evals.md#custom-matcher" in names
    assert "docs/writing-evals.md#expect-failed" in names
    assert "docs/writing-evals.md#list-of-cases" in names


@pytest.mark.parametrize(("where", "marker", "body"), examples(), ids=[w for w, _, _ in examples()])
def test_each_runnable_example_runs_as_written(where: str, marker: str, body: str, tmp_path: Path) -> None:
    attrs = dict(re.findall(r'(\w+)="([^"]*)"', marker))
    written = []
    for m in FENCE.finditer(body):
        lines = m.group(2).splitlines()
        path = FILE_COMMENT.match(lines[0]) if lines else None
        if path is None:
            continue
        target = tmp_path / path.group(1)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines[1:]) + "\n")
        written.append(path.group(1))
    assert written, f"{where}: the example names no files"
    decoy = tmp_path.parent / f"{tmp_path.name}-site" / "agents"
    decoy.mkdir(parents=True)
    (decoy / "__init__.py").write_text('"""Another installed package named agents."""\n')
    env = run_env()
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(decoy.parent)])
    done = subprocess.run(
        [*anpord_command(), "eval", *shlex.split(attrs.get("args", ""))],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    output = f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    assert done.stdout.rstrip().splitlines()[-1:] == [attrs["expect"]], output
    assert "Traceback" not in done.stderr, output


def test_the_readme_documentation_list_links_every_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    listed = readme.split("## Documentation", 1)[1].split("\n## ", 1)[0]
    missing = [p.name for p in sorted((REPO / "docs").glob("*.md")) if f"](docs/{p.name})" not in listed]
    assert missing == []


def test_the_paired_comparison_api_example_runs_as_written() -> None:
    text = (REPO / "docs" / "statistics.md").read_text(encoding="utf-8")
    (code,) = [m.group(2) for m in FENCE.finditer(text) if m.group(1) == "python" and "compare_paired(" in m.group(2)]
    scope: dict[str, object] = {}
    exec(compile(code, "docs/statistics.md", "exec"), scope)
    assert scope["cmp"].regressed  # type: ignore[attr-defined]
