"""``Variant(harness="claude")`` end to end: ``anpord eval`` runs a stand-in ``claude`` (which checks
its command line and replays Claude Code's recorded stream) in local and bwrap sandboxes; the
transcript has its tool calls, shell commands with exit codes, file changes, tokens and cost, and
a second turn resumes the session of the first."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_support import SANDBOXES, coding_project, install_standins, reports, run, variant

TOOLS = "replay:claude-code/recorded__canned-model__bash-exit-codes.jsonl"
RESUMED = "replay:claude-code/recorded__canned-model__resumed.jsonl"
SESSION = "e33d7911-1906-43cc-abda-1315e69a4778"  # the recorded session
SYSTEM = "Answer tersely.\nNever push."

EVALS = {
    "evals/edits.eval.py": f'''
        from anpord import define_eval, files

        def recorded(c):
            commands = [(x["command"], x["exit_code"]) for x in c.commands()]
            tools = [(call.name, call.status) for call in c.tool_calls()]
            ok = (
                commands == [("printf 'some output\\\\n'; exit 3", 3), ("exit 4", 4)]
                and c.files_changed() == ["notes.txt"]
                and c.read_text("notes.txt") == "hello from the canned model\\n"
                and tools == [("Bash", "failed"), ("Bash", "failed"), ("Write", "completed")]
            )
            return ok, f"commands={{commands}} files={{c.files_changed()}} tools={{tools}}"

        case = define_eval(prompt={TOOLS!r}, source=files({{"README.md": "a repo\\n"}}), validate=recorded)
    ''',
    "evals/drive.eval.py": f'''
        import re
        from anpord import define_eval, files
        from anpord.expect import equals

        @define_eval(source=files({{}}))
        async def test(t):
            turn = await t.send({TOOLS!r})
            t.succeeded()
            t.called_tool("Bash", count=2).label("two Bash calls")
            t.called_tool("Write", input={{"file_path": re.compile(r"/workspace/notes[.]txt$")}}).label("wrote notes.txt")
            t.not_called_tool("Edit").label("no Edit")
            t.no_failed_actions().at_least(1).label("no failed actions")
            t.check(turn.message, equals("Done: notes.txt written.")).label("answer")
    ''',
    "evals/resume.eval.py": f'''
        from anpord import define_eval, files
        from anpord.expect import equals

        @define_eval(source=files({{}}))
        async def test(t):
            await t.send({TOOLS!r})
            second = await t.send({RESUMED!r})
            t.check(second.message, equals("Second turn: still here.")).label("second answer")
            second.no_failed_actions().label("second turn clean")
    ''',
}


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_claude_runs_unattended_and_its_stream_becomes_the_transcript(tmp_path: Path, sandbox: str) -> None:
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [
        variant("claude", sandbox, standins, model="claude-sonnet-4-5", options={"system_prompt": SYSTEM}),
    ], EVALS)
    done = run(project)
    assert done.code == 0, done.output  # drive's soft check misses: scored, not failed
    verdicts = {r["case_id"]: (r["verdict"], r["reason"]) for r in done.results()}
    assert verdicts["edits"] == ("passed", ""), verdicts
    assert verdicts["resume"] == ("passed", ""), verdicts
    assert verdicts["drive"][0] == "scored", verdicts

    # The command line, stdin, environment and folder the CLI got.
    [got] = reports(done, "edits", "claude")
    argv = got["argv"]
    assert argv[:5] == ["-p", "--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions"]
    assert argv[argv.index("--model") + 1] == "claude-sonnet-4-5"
    assert argv[argv.index("--append-system-prompt") + 1] == SYSTEM
    assert "--resume" not in argv and got["resume"] is None
    assert got["prompt"] == TOOLS  # on stdin, not in argv
    assert TOOLS not in argv
    assert got["env"]["IS_SANDBOX"] == "1"
    assert got["cwd"].endswith("/workspace") and got["home"].endswith("/home")

    # Tool assertions on the events.
    checks = done.assertions("drive")
    for label in ("two Bash calls", "wrote notes.txt", "no Edit", "answer"):
        assert checks[label]["status"] == "passed", checks[label]
    missed = checks["no failed actions"]
    assert missed["status"] == "failed"
    assert """command "printf 'some output\\\\n'; exit 3" exited 3""" in missed["message"]
    assert 'command "exit 4" exited 4' in missed["message"]

    # Tokens and cost in the record.
    assert done.result("edits")["usage"] == {"input_tokens": 406, "output_tokens": 80, "cost": 0.002418}

    # The second turn continued the session the first one reported.
    first, second = reports(done, "resume", "claude")
    assert first["resume"] is None
    assert second["resume"] == SESSION
    assert second["argv"][second["argv"].index("--resume") + 1] == SESSION
    assert done.assertions("resume")["second turn clean"]["status"] == "passed"
    usage = done.result("resume")["usage"]
    assert usage["input_tokens"] == 406 + 103 and usage["cost"] == pytest.approx(0.002418 + 0.000609)
