"""Secrets of awkward shapes, through a real ``anpord eval`` run: every record stays valid JSON and
no part of a secret worth the name is left in any output.

- a digits-only secret (``1796``) that the agent never prints, while the records hold the number
  1796 and text containing it: redaction works on decoded strings, so ``"n":1796`` stays a number
  and every line parses;
- long secrets (a 292-character JWT, a 4.5 KB value) in check values and messages, where a
  preview or a clipped ``actual`` cuts them: redacted before the cut, and what a cut leaves of
  one is redacted too;
- a multi-line secret printed in one ``print``: stored line by line, each line redacted.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from project_support import Project, Run, anpord_command, eval_file, run_env
from secret_spellings import Secret, find_leaks

_rnd = random.Random(16)


def _token(n: int) -> str:
    return "".join(_rnd.choice(string.ascii_letters + string.digits) for _ in range(n))


JWT = "eyJhbGciOiJIUzI1NiJ9.Jw7Hd" + _token(140) + "." + _token(120) + "Jw7Tl"
BIG = "Bg4Hd" + _token(4500) + "Bg4Tl"
PEM = "-----BEGIN TEST KEY-----\n" + "\n".join("Pm6" + _token(60) for _ in range(4)) + "\n-----END TEST KEY-----\n"
ENV = {"PIN": "1796", "JWT": JWT, "BIG": BIG, "PEM": PEM}
assert len(JWT) == 292

# Markers near both ends, and in the middle: a leftover prefix or suffix of 16 or more characters
# holds one of them.
LONG = [
    Secret("JWT", JWT, "Jw7Hd"), Secret("JWT", JWT, "Jw7Tl"),
    Secret("BIG", BIG, "Bg4Hd"), Secret("BIG", BIG, "Bg4Tl"), Secret("BIG", BIG, BIG[2000:2030]),
] + [Secret("PEM", PEM, line[:20]) for line in PEM.splitlines() if line.startswith("Pm6")]

CONFIG = """
from anpord import Variant, define_eval_config
config = define_eval_config(
    harness="python:agents.kit:agent",
    timeout=20,
    variants=[Variant(name="main", secrets=["PIN", "JWT", "BIG", "PEM"])],
)
"""

CASES = {
    "digits": """
        @define_eval
        async def test(t):
            await t.send("hello")
            t.log("waited 1796 ms, then 17961796")
            t.check({"n": 1796, "text": "n is 1796"}, equals({"n": 1796, "text": "n is 1796"}))
            t.check(1796, equals(1796)).label("a number")
    """,
    "long": """
        import os

        @define_eval(each=["JWT", "BIG"], id=str.lower)
        async def test(t, name):
            value = os.environ[name]
            await t.send(f"leak {name}")
            t.check(t.reply, includes("Rain")).label("the reply")
            t.check(value, equals("something else")).label("the value itself")
            t.check("x" * 250 + value, includes("Rain")).label("cut mid-secret")
            t.check(value, satisfies(lambda v: (False, "rejected " + "y" * 280 + v))).label("a long message")
    """,
    "multi_line": """
        import os

        @define_eval
        async def test(t):
            print(os.environ["PEM"])
            await t.send("hello")
    """,
}


@dataclass
class Shapes:
    project: Project
    plain: Run
    as_json: Run


def _cli(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*anpord_command(), *args], cwd=project.folder, env=run_env(ENV), capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL, check=False,
    )


@pytest.fixture(scope="module")
def shapes(make_module_project: Any) -> Shapes:
    project: Project = make_module_project(
        {f"evals/{name}.eval.py": eval_file(body) for name, body in CASES.items()}, config=CONFIG
    )
    plain = project.run(env=ENV, timeout=120)
    as_json = project.run("--json", env=ENV, timeout=120)
    return Shapes(project, plain, as_json)


def _files(run_dir: Path) -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted(run_dir.rglob("*")) if p.is_file()}


def test_every_record_stays_json_with_a_digits_only_secret(shapes: Shapes) -> None:
    assert shapes.plain.code == 1, shapes.plain.output
    assert shapes.plain.run_dir is not None
    for path, text in _files(shapes.plain.run_dir).items():
        if path.name == "run.json":
            json.loads(text)
        elif path.suffix in (".jsonl", ".ndjson"):
            for line in text.splitlines():
                json.loads(line)
    digits = shapes.plain.trial("digits")
    assert digits["verdict"] == "passed", digits
    # Numbers stay numbers; text holding the secret is redacted.
    record = next(a for a in digits["assertions"] if a["name"] != "a number")
    assert record["actual"] == {"n": 1796, "text": "n is [REDACTED]"}
    assert digits["logs"] == ["waited [REDACTED] ms, then [REDACTED][REDACTED]"]
    shown = _cli(shapes.project, "show", "latest")
    assert shown.returncode == 0, shown.stderr
    json.loads(shapes.as_json.stdout)


def test_no_part_of_a_long_secret_is_left_after_a_cut(shapes: Shapes) -> None:
    assert shapes.plain.run_dir is not None and shapes.as_json.run_dir is not None
    texts = {str(p): t for p, t in _files(shapes.plain.run_dir).items()}
    texts |= {str(p): t for p, t in _files(shapes.as_json.run_dir).items()}
    texts |= {"stdout": shapes.plain.stdout, "stderr": shapes.plain.stderr,
              "--json": shapes.as_json.stdout}
    for case in ("long/jwt", "long/big", "multi_line"):
        texts[f"show {case}"] = _cli(shapes.project, "show", "latest", case).stdout
    stores = sorted((shapes.project.folder / ".anpord").glob("anpord.db*"))  # the WAL too
    assert stores, "no run store was written"
    for store in stores:
        texts[store.name] = store.read_bytes().decode("utf-8", "replace")
    assert find_leaks(texts, LONG) == []
    jwt = shapes.plain.trial("long/jwt")
    assert "[REDACTED]" in jwt["reason"], jwt["reason"]


def test_each_line_of_a_multi_line_secret_is_redacted(shapes: Shapes) -> None:
    logs = shapes.plain.trial("multi_line")["logs"]
    assert logs[:6] == ["[REDACTED]"] * 6, logs
