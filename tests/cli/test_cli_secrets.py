"""Declared secrets, even with quotes, backslashes and accents, reach no artifact or report."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from project_support import Project, eval_file

QUOTED = 'pa"ss\\word42'  # JSON escapes both characters: the raw value is not in JSON text
ACCENTED = "clé-sécrète-42"  # ASCII-only JSON writes it as \u00e9


def spellings(value: str) -> list[str]:
    return [value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]]


SECRET_CONFIG = """
from anpord import Variant, define_eval_config
config = define_eval_config(
    harness="python:agents.kit:agent",
    timeout=10,
    variants=[Variant(name="main", secrets=["CLI_FIX_QUOTED", "CLI_FIX_ACCENTED"])],
)
"""

SECRET_CASES = {
    "leaks": """
        @define_eval
        async def test(t):
            await t.send("env CLI_FIX_QUOTED")
            t.log("quoted " + t.reply)
            await t.send("env CLI_FIX_ACCENTED")
            t.log("accented " + t.reply)
            t.check(t.reply, equals("something else")).label("shows the secret as actual")
    """,
    "raises": """
        import os

        @define_eval
        async def test(t):
            await t.send("hi")
            raise ValueError(os.environ["CLI_FIX_QUOTED"] + " " + os.environ["CLI_FIX_ACCENTED"])
    """,
}


def test_secrets_with_quotes_backslashes_and_accents_reach_no_artifact_or_report(
    make_project: Any,
) -> None:
    project: Project = make_project(
        {f"evals/{n}.eval.py": eval_file(b) for n, b in SECRET_CASES.items()}, config=SECRET_CONFIG
    )
    junit = project.folder / "junit.xml"
    run = project.run(
        "--json",
        "--junit",
        str(junit),
        env={"CLI_FIX_QUOTED": QUOTED, "CLI_FIX_ACCENTED": ACCENTED},
    )
    assert run.code == 1, run.output
    assert run.run_dir is not None
    texts = {str(p): p.read_text(encoding="utf-8") for p in run.run_dir.rglob("*") if p.is_file()}
    texts["--json stdout"] = run.stdout
    texts["--junit"] = junit.read_text(encoding="utf-8")
    # The parsed XML too: an XML-escaped secret (&quot;) would not show in the raw text.
    root = ET.parse(junit).getroot()
    texts["--junit parsed"] = "\n".join(
        [
            *(el.text or "" for el in root.iter()),
            *(v for el in root.iter() for v in el.attrib.values()),
        ]
    )
    for where, text in texts.items():
        for secret in (QUOTED, ACCENTED):
            for spelled in spellings(secret):
                assert spelled not in text, f"{secret!r} ({spelled!r}) in {where}"
    # They were there to redact: every place that saw them says so.
    assert "[REDACTED]" in texts[str(run.run_dir / "results.jsonl")]
    assert "[REDACTED]" in run.stdout and "[REDACTED]" in texts["--junit parsed"]
    assert any("quoted value=[REDACTED]" in line for line in run.trial("leaks")["logs"])
    assert json.loads(run.stdout)["totals"]["failed"] == 2
