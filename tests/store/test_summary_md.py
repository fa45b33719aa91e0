"""``anpord eval --summary md PATH``, ``$GITHUB_STEP_SUMMARY`` and ``anpord compare --format md``:
a Markdown summary with the run's totals, intervals, changes and failures, agent text escaped."""

from __future__ import annotations

import json
from pathlib import Path

from history_support import CONFIG, EVAL, anpord
from project_support import Project, build_project

AGENT = """
import os


async def agent(turn):
    if os.environ.get("MOOD") == "evil":
        return "<script>alert(1)</script> | `tick` **bold** nope"
    return "ok " + turn.input
"""

EVIL = "<script>alert(1)</script>"


def project(folder: Path, trials: int = 6) -> Project:
    return build_project(
        folder,
        {"agents/moody.py": AGENT, "evals/greet.eval.py": EVAL},
        config=CONFIG.format(trials=trials),
    )


def tables(md: str) -> list[list[list[str]]]:
    """Each table's rows, each row's cells split on the pipes Markdown splits on (unescaped)."""
    import re

    out: list[list[list[str]]] = []
    inside = False
    for line in md.splitlines():
        if line.startswith("|"):
            if not inside:
                out.append([])
            out[-1].append([c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]])
        inside = line.startswith("|")
    return out


def test_eval_writes_the_summary_and_appends_it_to_the_step_summary(tmp_path: Path) -> None:
    p = project(tmp_path / "p")
    step = tmp_path / "step.md"
    step.write_text("# earlier step\n")
    first = p.run("--summary", "md", str(tmp_path / "first.md"), env={"GITHUB_STEP_SUMMARY": str(step)})
    assert first.code == 0, first.stderr
    md = (tmp_path / "first.md").read_text()
    assert md.startswith("## 🟢 anpord run `")
    assert "**12 trials**: 12 passed, 0 failed" in md
    assert "/default` | 100% [" in md
    # appended, after what was there
    assert step.read_text().startswith("# earlier step\n") and md in step.read_text()

    bad = p.run("--summary", "md", str(tmp_path / "bad.md"), "--fail-on", "regressed",
                env={"MOOD": "evil", "GITHUB_STEP_SUMMARY": str(step)})
    assert bad.code == 1, bad.stderr
    md = (tmp_path / "bad.md").read_text()
    assert md.startswith("## 🔴 anpord run `")
    assert "0 passed, 12 failed" in md
    assert "**2** regressed" in md and "Regressed cells" in md
    assert "p = " in md and "(Holm)" in md  # the evidence
    assert "Top failures" in md
    # The agent's text: no raw HTML, no extra table column, no code span opened.
    assert EVIL not in md and "&lt;script&gt;" in md
    assert "\\`tick\\`" in md and "\\*\\*bold\\*\\*" in md
    for table in tables(md):
        assert {len(row) for row in table} == {len(table[0])}, table
    assert step.read_text().count("anpord run `") == 2

    # --summary none: not even the step summary.
    before = step.read_text()
    quiet = p.run("--summary", "none", env={"GITHUB_STEP_SUMMARY": str(step)})
    assert quiet.code == 0 and step.read_text() == before


def test_summary_flag_errors_are_one_line(tmp_path: Path) -> None:
    p = project(tmp_path / "p", trials=1)
    for args, words in (
        (["--summary", "html", "x"], "expected md PATH or none, got 'html'"),
        (["--summary", "md"], "--summary md needs a PATH"),
        (["--summary", "md", str(tmp_path / "no" / "s.md")], "does not exist"),
        (["--json", "--summary", "md", "-"], "both print on stdout"),
    ):
        out = p.run(*args)
        assert out.code == 2, out.stderr
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0], out.stderr


def test_summary_on_stdout_follows_the_console(tmp_path: Path) -> None:
    p = project(tmp_path / "p", trials=1)
    out = p.run("--summary", "md", "-", "evals/greet.eval.py")  # a target after the flag's words
    assert out.code == 0, out.stderr
    console, _, md = out.stdout.partition("## 🟢 anpord run `")
    assert "2 passed, 0 failed" in console and "**2 trials**: 2 passed, 0 failed" in md


def test_compare_formats(tmp_path: Path) -> None:
    p = project(tmp_path / "p")
    assert p.run().code == 0
    assert p.run(env={"MOOD": "evil"}).code == 1
    md = anpord(p, "compare", "--format", "md")
    assert md.returncode == 1, md.stderr
    assert "**2** regressed" in md.stdout and "0 passed, 12 failed" in md.stdout
    assert EVIL not in md.stdout and "&lt;script&gt;" in md.stdout
    doc = json.loads(anpord(p, "compare", "--format", "json").stdout)
    assert doc["counts"]["regressed"] == 2 and doc["exit_code"] == 1
    text = anpord(p, "compare", "--format", "text").stdout
    assert "regressed:" in text.splitlines()[0]
    both = anpord(p, "compare", "--json", "--format", "md")
    assert both.returncode == 2 and "--json contradicts --format md" in both.stderr
