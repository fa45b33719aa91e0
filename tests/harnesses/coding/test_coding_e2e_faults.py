"""What goes wrong with a coding-agent CLI becomes a clear verdict and the run goes on: a CLI that
dies mid-stream, cuts its last line, reports an API error, prints event types never seen or floods
its output, or hangs (nothing left running); a CLI that is missing, cannot start in the sandbox,
or has no credential makes its trials void with the reason."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from e2e_support import SANDBOXES, coding_project, install_standins, run, variant
from proc_support import live_with

RESULT_EXIT = "replay:claude-code/recorded__canned-model__bash-exit-codes.jsonl"
FIXTURE = "claude-code/recorded__canned-model__bash-exit-codes.jsonl"


def faults_eval(token: str) -> str:
    return f'''
        from anpord import define_eval, define_suite, files

        suite = define_suite(source=files({{}}), cases=[
            define_eval(id="cut", prompt="cut:{FIXTURE}", validate=lambda c: True),
            define_eval(id="truncated", prompt="truncate:{FIXTURE}", validate=lambda c: True),
            define_eval(id="api-error", prompt="replay:claude-code/recorded__canned-model__model-not-found.jsonl",
                        validate=lambda c: True),
            define_eval(id="strange", prompt="strange:{FIXTURE}", validate=lambda c: c.files_changed() == ["notes.txt"]),
            define_eval(id="flood", prompt="flood:{FIXTURE}", validate=lambda c: len(c.commands()) == 2),
            define_eval(id="hang", prompt="hang:{token}", timeout=2, validate=lambda c: True),
        ])
    '''


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_misbehaving_cli_fails_its_trial_with_the_cause(tmp_path: Path, sandbox: str) -> None:
    token = f"{7000 + os.getpid() % 1000}.{len(sandbox)}9"
    standins = install_standins(tmp_path / "standins")
    cancelled = f"{token}1"
    project = coding_project(tmp_path / "proj", [variant("claude", sandbox, standins)], {
        "evals/faults.eval.py": faults_eval(token),
        "evals/cancel.eval.py": f'''
            from anpord import define_eval, files
            from anpord.expect import equals

            @define_eval(source=files({{}}))
            async def test(t):
                live = await t.start("hang:{cancelled}")
                await live.wait_for_event("claude.system")
                await live.cancel()
                turn = await live.result()
                t.check(turn.status, equals("cancelled")).label("cancelled")
        ''',
    })
    done = run(project)
    assert done.code == 1, done.output
    got = {r["case_id"].split("/")[-1]: (r["verdict"], r["reason"]) for r in done.results()}
    assert got["cut"] == (
        "failed",
        "claude exited with code 1 before its final result event (stderr: claude: connection reset by peer)",
    )
    assert got["truncated"] == ("failed", "claude exited with code 0 before its final result event")
    assert got["api-error"][0] == "failed"
    assert got["api-error"][1].startswith("API error 404: There's an issue with the selected model")
    assert got["strange"] == ("passed", "")
    assert got["flood"] == ("passed", "")
    assert got["hang"] == ("timed_out", "timed out after 2s")
    assert got["cancel"] == ("passed", "")
    assert live_with(token) == []  # the CLI and the sleep it detached are gone, also when cancelled

    strange = {e["type"]: e for e in done.events("faults/strange")}
    assert strange["claude.telemetry.v9"]["raw"] == {"type": "telemetry.v9", "payload": {"n": 1}}
    assert strange["claude.untyped"]["raw"] == {"no_type": True}
    logs = [e["message"] for e in done.events("faults/strange") if e["type"] == "log"]
    assert '["a", "list", "not an object"]' in logs
    flood = [e["message"] for e in done.events("faults/flood") if e["type"] == "log"]
    assert any("bytes of output not kept: log cap" in m for m in flood), flood[-3:]
    # A failed turn is in the transcript, and its agent program's exit code with it.
    cut = done.events("faults/cut")
    assert [e["exit_code"] for e in cut if e["type"] == "process.exited"] == [1]
    assert [e["type"] for e in cut][-2:] == ["turn.failed", "session.completed"]


def test_a_cli_that_cannot_run_makes_its_trials_void_with_the_reason(tmp_path: Path) -> None:
    standins = install_standins(tmp_path / "standins")
    hidden = tmp_path / "hidden"  # on the trial's PATH but not mounted into bwrap
    hidden.mkdir()
    shutil.copy2(standins / "claude", hidden / "claude")
    shutil.copytree(standins / "streams", hidden / "streams")
    not_executable = tmp_path / "claude.txt"
    not_executable.write_text("not a program\n")
    variants = [
        variant("claude", "local", standins, name="not-installed", path="/usr/bin:/bin"),
        variant("claude", "bwrap", standins, name="not-mounted", path=f"{hidden}:/usr/bin:/bin"),
        variant("claude", "local", standins, name="not-executable", options={"executable": str(not_executable)}),
        variant("claude", "local", standins, name="undeclared-key", secrets=[]),
        variant("gemini", "bwrap", standins, name="no-key", secrets=[]),
        variant("codex", "local", standins, name="bad-option", options={"sandbox_mode": "x"}),
    ]
    project = coding_project(tmp_path / "proj", variants, {
        "evals/task.eval.py": f'''
            from anpord import define_eval, files
            case = define_eval(prompt={RESULT_EXIT!r}, source=files({{}}), validate=lambda c: True)
        ''',
    })
    # Only Claude's key is set: gemini has none at all.
    done = run(project, env={"GEMINI_API_KEY": "", "GOOGLE_API_KEY": "", "GOOGLE_APPLICATION_CREDENTIALS": ""})
    assert done.code == 1, done.output
    got = {r["variant"]: (r["verdict"], r["reason"]) for r in done.results()}
    assert got["not-installed"] == ("void", ("claude is not installed: npm install -g @anthropic-ai/claude-code, "
                                            "or point the variant at it with options={'executable': ...}"))
    verdict, reason = got["not-mounted"]
    assert verdict == "void"
    # bwrap says it (run as a user), or setpriv, which drops root to the sandbox user, does.
    assert reason.startswith((
        "the bwrap sandbox could not start the program: bwrap: execvp",
        f"the bwrap sandbox could not start the program: setpriv: failed to execute {hidden}/claude",
        # the loopback bridge to the trial's model proxy execs it in bwrap's place
        f"the bwrap sandbox could not start the program: anpord-bridge: failed to execute {hidden}/claude",
    )), reason
    assert reason.endswith(f"{hidden}/claude must be visible inside the sandbox; mount the folder that "
                           "holds it (and its interpreter) with Variant(mounts=[...])")
    assert got["not-executable"] == ("void", f"Claude Code (claude) at {not_executable}: not an executable file")
    # Claude Code's own key, set here, reaches it undeclared (as a secret: redacted).
    assert got["undeclared-key"] == ("passed", ""), got
    verdict, reason = got["no-key"]
    assert verdict == "void" and reason.startswith(
        "Gemini CLI has no credential: set GEMINI_API_KEY (or GOOGLE_API_KEY + GOOGLE_GENAI_USE_VERTEXAI, ")
    assert "declare it with Variant(secrets=['GEMINI_API_KEY'])" in reason
    assert got["bad-option"] == ("void", ("the codex harness has no option 'sandbox_mode'; its options are "
                                         "args, check_credentials, executable, pricing, system_prompt"))


def test_a_cli_that_refuses_its_arguments_fails_with_the_first_stderr_line(tmp_path: Path) -> None:
    # gemini 0.61 names the cause first, then prints its whole --help (the last line is help).
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [variant("gemini", "local", standins)], {
        "evals/args.eval.py": '''
            from anpord import define_eval, files
            case = define_eval(prompt="stderr:gemini-cli/recorded__gemini-0.61__unknown-argument.stderr",
                               source=files({}), validate=lambda c: True)
        ''',
    })
    done = run(project)
    (result,) = done.results()
    assert result["verdict"] == "failed"
    assert result["reason"] == (
        "gemini exited with code 1 before its final result event "
        "(stderr: Unknown arguments: max-session-turns, maxSessionTurns)"
    ), result["reason"]
