"""Command agents driven through real ``anpord eval`` runs: a cancel that arrives before the program
is spawned, the history after a started turn, one text for structured messages, and SIGTERM/SIGHUP
leaving no process or folder behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from command_support import live_with


SRC = Path(__file__).resolve().parents[3] / "src"


def anpord_cmd() -> list[str]:
    # This checkout's anpord, whatever `anpord` on PATH points at.
    return [sys.executable, "-m", "anpord"]


def project(tmp_path: Path, harness: str, evals: str, **config: Any) -> Path:
    folder = tmp_path / "proj"
    (folder / "evals").mkdir(parents=True)
    (folder / "sbx").mkdir()
    extra = "".join(f", {k}={v!r}" for k, v in config.items())
    (folder / "evals" / "evals.config.py").write_text(
        "from anpord import define_eval_config\n"
        f"config = define_eval_config(harness={harness!r}{extra})\n"
    )
    head = "import time\nfrom anpord import define_eval, define_suite, files\nfrom anpord.expect import equals\n\n"
    (folder / "evals" / "cases.eval.py").write_text(head + textwrap.dedent(evals).lstrip("\n"))
    return folder


def env_for(folder: Path) -> dict[str, str]:
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "NO_COLOR": "1", "ANPORD_SANDBOX_TMP": str(folder / "sbx")}


def run(
    folder: Path, *args: str
) -> tuple[subprocess.CompletedProcess[str], dict[str, dict[str, Any]]]:
    done = subprocess.run(
        [*anpord_cmd(), "eval", *args],
        cwd=folder,
        env=env_for(folder),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    return done, results(folder)


def run_dir(folder: Path) -> Path:
    return max((folder / ".anpord" / "runs").iterdir())


def results(folder: Path) -> dict[str, dict[str, Any]]:
    path = run_dir(folder) / "results.jsonl"
    lines = (
        [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
    )
    return {r["case_id"]: r for r in lines}


def test_a_cancel_sent_before_the_program_is_spawned_cancels_the_turn(tmp_path: Path) -> None:
    folder = project(
        tmp_path,
        "command:sleep 3; echo hi",
        """
        @define_eval(source=files({}))
        async def test(t):
            started = time.monotonic()
            live = await t.start("x")
            t.check(await live.cancel(), equals(True)).label("live.cancel() accepted")
            t.check((await live.result()).status, equals("cancelled")).label("live turn cancelled")
            live = await t.start("y")
            t.check(await t.cancel(), equals("accepted")).label("t.cancel() accepted")
            t.check((await live.result()).status, equals("cancelled")).label("t.cancel() settles")
            t.check(time.monotonic() - started < 2.5, equals(True)).label("killed, not waited for")
    """,
    )
    done, got = run(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert got["cases"]["verdict"] == "passed"
    assert list((folder / "sbx").iterdir()) == []


ROLES = (
    "command:python3 -c 'import json, os; "
    'print(",".join(m["role"] for m in json.load(open(os.environ["ANPORD_HISTORY_FILE"]))))\''
)


def test_a_reply_taken_with_start_and_result_is_in_the_next_history(tmp_path: Path) -> None:
    folder = project(
        tmp_path,
        ROLES,
        """
        @define_eval(source=files({}))
        async def test(t):
            live = await t.start("one")
            t.check((await live.result()).message, equals("user")).label("first")
            t.check((await t.send("two")).message, equals("user,assistant,user")).label("second")
            t.check((await t.send("three")).message, equals("user,assistant,user,assistant,user"))
    """,
    )
    done, got = run(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert got["cases"]["verdict"] == "passed"


PROMPT = 'command:printf %s "$ANPORD_PROMPT"'


def test_a_structured_message_is_the_same_text_in_events_and_the_prompt(tmp_path: Path) -> None:
    folder = project(
        tmp_path,
        PROMPT,
        """
        PARTS = {"role": "user", "content": [
            {"type": "text", "text": "one"},
            {"type": "image", "url": "x.png", "text": "not text"},
            {"type": "text", "text": "two"},
        ]}

        @define_eval(source=files({}))
        async def test(t):
            for message, text in [({"foo": [1, "é"]}, '{"foo":[1,"é"]}'), (PARTS, "one\\ntwo")]:
                turn = await t.send(message)
                user = [e.data["text"] for e in turn.events
                        if e.type == "message.completed" and e.data["role"] == "user"]
                t.check(user, equals([text])).label(f"event {text}")
                t.check(turn.message, equals(text)).label(f"prompt {text}")
    """,
    )
    done, got = run(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert got["cases"]["verdict"] == "passed"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_sigterm_and_sighup_leave_no_process_or_folder(tmp_path: Path, signum: int) -> None:
    marker = f"{600 + os.getpid() % 1000}.{signum}9"
    folder = project(
        tmp_path,
        f'command:if [ "$ANPORD_PROMPT" = hang ]; then (setsid sleep {marker} &); sleep {marker}; else echo ok; fi',
        """
        suite = define_suite(source=files({}), cases=[
            define_eval(id="quick", prompt="hi", validate=lambda c: True),
            define_eval(id="hang", prompt="hang", validate=lambda c: True),
        ])
        """,
        timeout=600,
    )
    proc = subprocess.Popen(
        [*anpord_cmd(), "eval"],
        cwd=folder,
        env=env_for(folder),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if (
                len(live_with(marker)) >= 2
                and (folder / ".anpord" / "runs").exists()
                and results(folder)
            ):
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert live_with(marker), "the agent did not start"
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 128 + signum, out + err
    assert "Traceback" not in err
    assert live_with(marker) == []
    assert list((folder / "sbx").iterdir()) == [], "a trial folder was left behind"
    got = results(folder)
    assert (
        list(got) == ["cases/quick"] and got["cases/quick"]["verdict"] == "passed"
    )  # finished trials are kept
    info = json.loads((run_dir(folder) / "run.json").read_text())
    assert (info["status"], info["exit_code"]) == ("interrupted", 128 + signum)


def test_what_a_command_agent_prints_reaches_the_trial_log(tmp_path: Path) -> None:
    folder = project(tmp_path, "command:echo starting >&2; echo the answer", """
        @define_eval
        async def test(t):
            turn = await t.send("hi")
            t.check(turn.message, equals("the answer"))
    """)
    done, _ = run(folder, "--verbose")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cases | [stderr] starting" in done.stdout and "cases | the answer" in done.stdout
    from anpord.results import read_run

    (trial,) = read_run(run_dir(folder)).trials
    # stdout and stderr are read side by side, so their relative order is not fixed.
    assert sorted(trial.logs) == ["[stderr] starting", "the answer"]
