"""``Variant(harness="gemini")`` end to end through ``anpord eval``, in local and bwrap sandboxes: a
stand-in ``gemini`` checks its command line and replays Gemini CLI's recorded streams."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_support import SANDBOXES, coding_project, install_standins, of_type, reports, run, variant

TOOLS = "replay:gemini-cli/recorded__canned-model__tools.jsonl"
RESUMED = "replay:gemini-cli/recorded__canned-model__resumed.jsonl"
NOT_FOUND = "replay:gemini-cli/recorded__canned-model__model-not-found.jsonl"
DEBUG_TOOLS = "replay:gemini-cli/recorded__gemini-0.61-debug__tools.jsonl"
SESSION = "e09ec93c-4cc8-43c7-af0a-0a784fea7433"
SYSTEM = "Prefer small diffs."

EVALS = {
    "evals/notes.eval.py": f'''
        from anpord import define_eval, files

        def wrote(c):
            commands = [(x["command"], x["exit_code"]) for x in c.commands()]
            tools = [call.name for call in c.tool_calls()]
            ok = (
                # without --debug gemini shows no exit code for a command that printed output:
                # None, not a guess (this recording was made without it)
                commands == [("printf 'some output\\\\n'; exit 3", None), ("exit 4", 4)]
                and c.files_changed() == ["notes.txt"]
                and tools == ["run_shell_command", "run_shell_command", "write_file"]
            )
            return ok, f"commands={{commands}} files={{c.files_changed()}} tools={{tools}}"

        case = define_eval(prompt={TOOLS!r}, source=files({{}}), validate=wrote)
    ''',
    "evals/resume.eval.py": f'''
        from anpord import define_eval, files
        from anpord.expect import equals

        @define_eval(source=files({{}}))
        async def test(t):
            first = await t.send({TOOLS!r})
            t.check(first.message, equals("Done: notes.txt written.")).label("first answer")
            t.called_tool("write_file").label("wrote")
            second = await t.send({RESUMED!r})
            t.check(second.message, equals("Second turn: still here.")).label("second answer")
    ''',
    "evals/exit_codes.eval.py": f'''
        from anpord import define_eval, files

        @define_eval(source=files({{}}))
        async def test(t):
            await t.send({DEBUG_TOOLS!r})
            t.no_failed_actions().label("no failed actions")
    ''',
    "evals/missing_model.eval.py": f'''
        from anpord import define_eval, files
        case = define_eval(prompt={NOT_FOUND!r}, source=files({{}}), validate=lambda c: True)
    ''',
}


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_gemini_runs_unattended_and_resumes_its_session(tmp_path: Path, sandbox: str) -> None:
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [
        variant("gemini", sandbox, standins, model="gemini-2.5-flash", options={"system_prompt": SYSTEM}),
    ], EVALS)
    done = run(project)
    verdicts = {r["case_id"]: (r["verdict"], r["reason"]) for r in done.results()}
    assert verdicts["notes"] == ("passed", ""), verdicts
    assert verdicts["resume"] == ("passed", ""), verdicts
    # Exit 3 after printing output is in the stream (--debug), so no_failed_actions sees it.
    assert verdicts["exit_codes"][0] == "failed", verdicts
    assert "exited 3" in verdicts["exit_codes"][1], verdicts
    # --debug's trace stays out of the log, counted; gemini's other stderr lines are kept.
    logs = [e["message"] for e in of_type(done, "exit_codes", "log")]
    assert "Ripgrep is not available. Falling back to GrepTool." in logs, logs
    assert not [m for m in logs if "PolicyEngine" in m or "MESSAGE_BUS" in m], logs
    assert "[2 debug lines on stderr not kept]" in logs, logs
    codes = [(c["exit_code"], c["output"]) for c in of_type(done, "exit_codes", "command.completed")]
    assert codes == [(3, "some output"), (4, ""), (0, "fine")]
    assert verdicts["missing_model"] == (
        "failed", "unknown: [API Error: models/no-such-model is not found]"
    ), verdicts

    first, second = reports(done, "resume", "gemini")
    assert first["argv"] == ["--output-format", "stream-json", "--approval-mode=yolo", "--debug", "--model", "gemini-2.5-flash"]
    assert first["env"]["GEMINI_CLI_TRUST_WORKSPACE"] == "true"
    assert first["instructions"] == {".gemini/GEMINI.md": SYSTEM}
    assert first["prompt"] == TOOLS and first["resume"] is None
    assert second["resume"] == SESSION and second["prompt"] == RESUMED
    assert done.result("notes")["usage"] == {"input_tokens": 806, "output_tokens": 48, "cost": None}
