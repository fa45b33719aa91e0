"""The command line end to end: secrets kept out of every artifact and report, a clean ``--json``
stdout whatever writes to file descriptor 1, one-line exit 2 for mistakes in definitions, files
written with ordinary modes, and these tests running this checkout's anpord."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from core_support import END, Project, anpord_command, eval_file, run_env

from anpord import Variant, define_eval, define_eval_config, define_suite, files
from anpord.authoring import DefinitionError

# -- secrets ---------------------------------------------------------------------------------------

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


# -- --json and file descriptor 1 ------------------------------------------------------------------

NOISY_AGENT = """
import os
import subprocess


def agent(turn):
    subprocess.run(["echo", "SUBPROCESS-NOISE"], check=True)
    os.write(1, b"FD1-NOISE\\n")
    return "quiet answer"
"""


def test_json_stdout_parses_when_a_subprocess_or_os_write_uses_fd_1(make_project: Any) -> None:
    project: Project = make_project(
        {
            "agents/fd_noise.py": NOISY_AGENT,
            "evals/noisy.eval.py": eval_file(f"""
                import os
                os.write(1, b"EVAL-IMPORT-FD1\\n")

                @define_eval
                async def test(t):
                    await t.send("hi")
                    os.write(1, b"TEST-BODY-FD1\\n")
                    t.check(t.reply, equals("quiet answer"))
                    {END}
            """),
        }
    )
    for args in (["--list", "--json"], ["--json", "--harness", "python:agents.fd_noise:agent"]):
        run = project.run(*args)
        assert run.code == 0, run.output
        doc = json.loads(run.stdout)  # the whole of stdout parses
        assert "NOISE" not in run.stdout and "FD1" not in run.stdout
        assert "EVAL-IMPORT-FD1" in run.stderr
    assert doc["totals"]["passed"] == 1
    assert "SUBPROCESS-NOISE" in run.stderr and "FD1-NOISE" in run.stderr


# -- definition mistakes -------------------------------------------------------------------------

CASE = eval_file(f"""
    @define_eval
    async def test(t):
        {END}
""")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("max_sandboxes=-1", "ValueError: max_sandboxes must be a positive integer, got -1"),
        ("max_sandboxes=0", "ValueError: max_sandboxes must be a positive integer, got 0"),
        ("max_sandboxes='2'", "ValueError: max_sandboxes must be a positive integer, got '2'"),
        ("trials=True", "ValueError: trials must be a positive integer, got True"),
        ("sandbox=None", "TypeError: sandbox must be a sandbox name such as 'local', got None"),
        (
            "variants=[Variant(secrets=5)]",
            "TypeError: Variant secrets= must be a list of strings, got int",
        ),
        (
            "variants=[Variant(mounts=['/opt', 7])]",
            "TypeError: Variant mounts= must be a list of non-empty strings, got 7",
        ),
    ],
)
def test_config_mistakes_are_one_line_naming_the_file(
    make_project: Any, config: str, message: str
) -> None:
    project: Project = make_project(
        {"evals/case.eval.py": CASE},
        config=(
            "from anpord import Variant, define_eval_config\n"
            f"config = define_eval_config(harness='python:agents.kit:agent', {config})\n"
        ),
    )
    run = project.run()
    assert (run.code, run.stdout) == (2, ""), run.output
    assert run.stderr == f"anpord eval: evals/evals.config.py:2: {message}\n"
    assert run.run_dir is None  # refused before a run folder (and a run.json stuck at running)


@pytest.mark.parametrize(
    ("suite", "message"),
    [
        ("timeout=-5", "timeout must be a positive number of seconds, got -5"),
        ("source='x'", "source must be files(...), directory(...) or repo(...), got str"),
        ("tags=[1]", "define_suite tags must be non-empty strings, got 1"),
    ],
)
def test_suite_mistakes_are_one_line_naming_the_file(
    make_project: Any, suite: str, message: str
) -> None:
    body = (
        "suite = define_suite(cases=[define_eval(prompt='hi', validate=lambda c: True)], "
        f"{suite})\n"
    )
    project: Project = make_project({"evals/s.eval.py": eval_file(body)})
    run = project.run()
    assert (run.code, run.stderr) == (2, f"anpord eval: evals/s.eval.py: {message}\n"), run.output


def test_a_single_string_is_one_tag_one_secret_one_mount() -> None:
    case = define_eval(prompt="hi", validate=lambda c: True)
    assert define_suite([case], tags="smoke").tags == ("smoke",)
    assert define_eval(prompt="hi", tags="smoke").tags == ("smoke",)
    v = Variant(secrets="API_KEY", mounts=Path("/opt/a"))
    assert (v.secrets, v.mounts) == (("API_KEY",), ("/opt/a",))
    assert Variant(secrets=["A", "B"], mounts=("/x",)).secrets == ("A", "B")
    assert define_eval_config(max_sandboxes=2, variants=[v]).max_sandboxes == 2
    with pytest.raises(DefinitionError, match="cases must be a list"):
        define_suite(case)
    with pytest.raises(DefinitionError, match="source must be"):
        define_suite([case], source=files)  # the function, not files({...})


def test_a_suite_tag_given_as_a_string_selects_its_cases(make_project: Any) -> None:
    body = (
        "suite = define_suite(cases=[define_eval(prompt='hi', validate=lambda c: True)], "
        "source=files({}), tags='smoke')\n"
    )
    project: Project = make_project({"evals/s.eval.py": eval_file(body)})
    assert project.run("--list", "--tag", "smoke").stdout == "s/0000  [smoke]\n1 case\n"
    assert project.run("--list", "--tag", "s").stdout == "0 cases\n"  # not one tag per letter


# -- files written the same way everywhere ---------------------------------------------------------


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
