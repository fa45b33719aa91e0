"""Declared secrets reach no output of a real ``anpord eval`` run, in any spelling.

The agent and the eval put each secret in every channel they have: the reply, tool inputs and
outputs (JSON text inside the JSON record, URL-encoded), a failing tool's error, a custom event,
stdout and stderr, ``t.log``, check values and messages (the secret as expected value, JSON text
and JSON-in-JSON as actual value, a message quoting it with ``repr``), exceptions raised by the
eval and by the agent, with their tracebacks. The secrets are the awkward kinds: a quote and a
backslash, a trailing newline the agent strips, accents, URL-special characters, both quotes.

Then every file under the run folder, stdout and stderr of a plain, a ``--verbose`` and a
``--json`` run, a run on a pseudo-terminal (colours and the live region) and the JUnit reports are
searched for every spelling of every secret (``secret_spellings``).
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
import threading
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from project_support import Project, Run, anpord_command, eval_file, run_env
from secret_spellings import Secret, find_leaks

SECRETS = [
    Secret("SECRET_QUOTED", 'pa"ss\\word-Zq8Jx', "Zq8Jx"),
    Secret("SECRET_NEWLINE", "trailing-Nl4Kp\n", "Nl4Kp"),
    Secret("SECRET_ACCENTED", "clé-sécrète-Ac9Vm", "Ac9Vm"),
    Secret("SECRET_URL", "a/b?c=d&e f=Ur7Wd%", "Ur7Wd"),
    Secret("SECRET_QUOTES", 'don\'t say "Qp3Hs" \\', "Qp3Hs"),
]
# Declared too, and redacting nothing: too short once stripped to tell from ordinary text.
HARMLESS = {"SECRET_SHORT": "abc", "SECRET_BLANK": " \n\t "}
ENV = {s.name: s.value for s in SECRETS} | HARMLESS
NAMES = [s.name for s in SECRETS]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

CONFIG = f"""
from anpord import Variant, define_eval_config
config = define_eval_config(
    harness="python:agents.kit:agent",
    timeout=20,
    variants=[Variant(name="main", secrets={sorted(ENV)!r})],
)
"""

CASES = {
    "leak": f"""
        import os

        @define_eval(each={NAMES!r}, id=lambda name: name.lower())
        async def test(t, name):
            value = os.environ[name]
            core = value.strip()
            await t.send(f"leak {{name}}")
            t.log("reply " + t.reply)
            t.log(json.dumps({{"logged": core, "nested": json.dumps({{"token": core}})}}))
            print("printed", value)
            t.check(t.reply, equals("no such reply")).label("the reply as actual")
            t.check(json.dumps({{"token": core}}), equals(core)).label("JSON text as actual")
            t.check({{"nested": json.dumps([core])}}, matches({{"nested": includes("absent")}})).label(
                "JSON in JSON"
            )
            t.check(core, satisfies(lambda v: (False, f"rejected {{v!r}}"))).label("repr in a message")
    """,
    "raises": f"""
        import os

        @define_eval(each={NAMES!r}, id=lambda name: name.lower())
        async def test(t, name):
            core = os.environ[name].strip()
            t.log(f"about to raise for {{core}}")
            raise LookupError(f"no user for {{core!r}} in {{json.dumps({{'token': core}})}}")
    """,
    "agent_raises": f"""
        @define_eval(each={NAMES!r}, id=lambda name: name.lower())
        async def test(t, name):
            await t.send(f"leak_raise {{name}}")
            t.check(t.reply, equals("an answer")).label("no reply from a failed turn")
    """,
    "ordinary": """
        @define_eval
        async def test(t):
            await t.send("hello")
            t.log("abc abcdef and some spaces:  \\t end")
            t.check(t.reply, equals("echo: hello"))
    """,
}


@dataclass
class Runs:
    project: Project
    plain: Run
    verbose: Run
    json: Run
    terminal: str
    junit: dict[str, Path]


def _read_all(fd: int, sink: list[bytes]) -> None:
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # EIO once the other side is closed
            return
        if not chunk:
            return
        sink.append(chunk)


def _run_on_terminal(project: Project, *args: str) -> str:
    """``anpord eval`` with stdout and stderr on a pseudo-terminal: colours and the live region."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    chunks: list[bytes] = []
    reader = threading.Thread(target=_read_all, args=(master, chunks), daemon=True)
    reader.start()
    env = run_env(ENV)
    env.pop("NO_COLOR", None)
    env.update(TERM="xterm-256color", COLUMNS="120", LINES="40")
    try:
        proc = subprocess.run(
            [*anpord_command(), "eval", *args],
            cwd=project.folder,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            timeout=120,
            check=False,
        )
    finally:
        os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    assert proc.returncode == 1
    return b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def runs(make_module_project: Any) -> Runs:
    project: Project = make_module_project(
        {f"evals/{name}.eval.py": eval_file(body) for name, body in CASES.items()}, config=CONFIG
    )
    junit = {"plain": project.folder / "plain.xml", "json": project.folder / "json.xml"}
    plain = project.run("--junit", str(junit["plain"]), env=ENV, timeout=120)
    verbose = project.run("--verbose", env=ENV, timeout=120)
    as_json = project.run("--json", "--junit", str(junit["json"]), env=ENV, timeout=120)
    terminal = _run_on_terminal(project, "--verbose", "--trials", "2")
    return Runs(project, plain, verbose, as_json, terminal, junit)


def _folder_texts(folder: Path) -> dict[str, str]:
    """Every file under a run folder, whatever the layout, as text."""
    texts = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            texts[str(path.relative_to(folder.parent))] = path.read_bytes().decode(
                "utf-8", "replace"
            )
    return texts


def _junit_texts(path: Path) -> dict[str, str]:
    root = ET.parse(path).getroot()
    parsed = "\n".join(
        [
            *(el.text or "" for el in root.iter()),
            *(v for el in root.iter() for v in el.attrib.values()),
        ]
    )
    # The parsed XML too: an XML-escaped secret (&quot;) is another spelling in the raw file.
    return {f"{path.name}": path.read_text(encoding="utf-8"), f"{path.name} parsed": parsed}


def test_every_run_went_through_every_case(runs: Runs) -> None:
    for run in (runs.plain, runs.verbose, runs.json):
        assert run.code == 1, run.output
        verdicts = run.verdicts()
        assert len(verdicts) == 3 * len(SECRETS) + 1, verdicts
        assert verdicts["ordinary"] == "passed", run.output
        assert {v for k, v in verdicts.items() if k.startswith("leak/")} == {"failed"}, run.output


def test_no_spelling_of_any_secret_is_in_any_file_of_the_run_folders(runs: Runs) -> None:
    texts: dict[str, str] = {}
    for run in (runs.plain, runs.verbose, runs.json):
        assert run.run_dir is not None
        texts |= _folder_texts(run.run_dir)
    folders = runs.project.folder / ".anpord" / "runs"
    assert len(list(folders.iterdir())) == 4  # the three above and the terminal's
    for folder in folders.iterdir():
        texts |= _folder_texts(folder)
    assert len(texts) > 4 * len(CASES) * 2, sorted(texts)
    assert find_leaks(texts, SECRETS) == []


def test_no_spelling_of_any_secret_is_on_the_console(runs: Runs) -> None:
    texts = {
        "plain stdout": runs.plain.stdout,
        "plain stderr": runs.plain.stderr,
        "--verbose stdout": runs.verbose.stdout,
        "--verbose stderr": runs.verbose.stderr,
        "--json stderr": runs.json.stderr,
        "terminal": runs.terminal,
    }
    assert find_leaks(texts, SECRETS) == []
    # They were there to redact: check values, messages, errors and (--verbose) log lines.
    plain = runs.plain.stdout
    assert "actual:   'token=[REDACTED] json=" in plain, plain
    assert "rejected '[REDACTED]'" in plain
    assert "error: LookupError: no user for '[REDACTED]'" in plain
    assert "ValueError: bad token '[REDACTED]'" in plain
    verbose = runs.verbose.stdout
    assert "leak/secret_quoted | printed [REDACTED]" in verbose, verbose
    assert "leak/secret_newline | stdout [REDACTED]" in verbose
    assert (
        'leak/secret_url | {"logged": "[REDACTED]", "nested": "{\\"token\\": \\"[REDACTED]\\"}"}'
        in verbose
    )
    assert "[REDACTED]" in runs.json.stderr
    assert "\x1b[" in runs.terminal  # coloured, with a live region
    terminal = ANSI.sub("", runs.terminal)
    assert "leak/secret_accented [main #1] | printed [REDACTED]" in terminal, terminal
    assert "rejected '[REDACTED]'" in terminal


def test_no_spelling_of_any_secret_is_in_the_json_or_junit_reports(runs: Runs) -> None:
    texts = {"--json stdout": runs.json.stdout}
    for path in runs.junit.values():
        texts |= _junit_texts(path)
    assert find_leaks(texts, SECRETS) == []
    doc = json.loads(runs.json.stdout)
    assert doc["totals"]["failed"] == len(SECRETS) * 3 and "[REDACTED]" in runs.json.stdout
    for path in runs.junit.values():
        assert "[REDACTED]" in _junit_texts(path)[f"{path.name} parsed"]


def test_every_channel_carried_the_secrets_to_redaction(runs: Runs) -> None:
    """Each channel held a secret and now holds ``[REDACTED]`` in its place: the leak checks
    above looked at text that had something to hide."""
    run = runs.plain
    for secret in SECRETS:
        key = secret.name.lower()
        record = run.trial(f"leak/{key}")
        logs = "\n".join(record["logs"])
        assert "stdout [REDACTED]" in logs and "[stderr] stderr [REDACTED]" in logs, logs
        assert "printed [REDACTED]" in logs and "reply token=[REDACTED] json=" in logs
        checks = {a["label"]: a for a in record["assertions"]}
        assert checks["JSON text as actual"]["expected"] == 'equals("[REDACTED]")', checks
        assert json.loads(checks["JSON text as actual"]["actual"]) == {"token": "[REDACTED]"}
        assert "[REDACTED]" in checks["JSON in JSON"]["message"], checks
        assert checks["repr in a message"]["message"].endswith(": rejected '[REDACTED]'")
        assert checks["the reply as actual"]["actual"].startswith("token=[REDACTED] json=")

        events = run.events(f"leak/{key}")
        calls = {e["name"]: e for e in events if e["type"] == "tool.called"}
        assert calls["store"]["input"]["token"] in ("[REDACTED]", "[REDACTED]\n"), calls
        assert json.loads(calls["store"]["input"]["json"]) == {"token": "[REDACTED]"}
        assert calls["store"]["input"]["url"].endswith("?token=[REDACTED]&path=[REDACTED]")
        results = {e["name"]: e for e in events if e["type"] == "tool.result"}
        stored = json.loads(results["store"]["output"])
        assert stored == {"stored": "[REDACTED]", "json": json.dumps({"token": "[REDACTED]"})}
        assert results["check_token"]["error"] == "ValueError: rejected token '[REDACTED]'"
        note = next(e for e in events if e["type"] == "note")
        assert note["text"] == "[REDACTED]" and json.loads(note["nested"]) == {
            "token": "[REDACTED]"
        }

        raised = run.trial(f"raises/{key}")
        assert 'no user for \'[REDACTED]\' in {"token": "[REDACTED]"}' in raised["error"]["message"], raised
        assert "[REDACTED]" in raised["traceback"] and "[REDACTED]" in "".join(raised["logs"])
        agent = run.trial(f"agent_raises/{key}")
        assert agent["error"]["message"] == "agent raised ValueError: bad token '[REDACTED]'", agent
        assert agent["traceback"].endswith("ValueError: bad token '[REDACTED]'\n")


def test_short_and_blank_secrets_redact_nothing(runs: Runs) -> None:
    record = runs.plain.trial("ordinary")
    assert record["logs"] == ["abc abcdef and some spaces:  \t end"]
    assert "[REDACTED]" not in json.dumps(record)
    assert "✓ ordinary" in runs.plain.stdout or "+ ordinary" in runs.plain.stdout
    # Said once at the start, by name: the short one only (a blank value has nothing to leak).
    warnings = [line for line in runs.plain.stderr.splitlines() if "too short to redact" in line]
    assert warnings == [
        "anpord: warning: secret SECRET_SHORT is shorter than 4 characters, too short to redact "
        "without hiding ordinary text: it is not redacted from the outputs"
    ], runs.plain.stderr
