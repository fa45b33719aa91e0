"""``Variant(harness="codex")`` end to end through ``anpord eval``, in local and bwrap sandboxes: a
stand-in ``codex`` checks its command line and replays codex's recorded ``exec --json`` streams;
the system prompt reaches it as ``~/.codex/AGENTS.md`` and a second turn resumes the thread."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_support import SANDBOXES, coding_project, install_standins, reports, run, variant

LS = "replay:codex/jnarowski__agentcmd__stream-output-2.jsonl"
ADD_FILE = "replay:codex/jnarowski__agentcmd__stream-output-3.jsonl"
ANSWER = "replay:codex/jnarowski__agentcmd__stream-output-1.jsonl"
FAILED = "replay:codex/recorded__canned-model__reconnect-then-fail.jsonl"
THREAD = "019a2d7a-6455-7170-a661-c6d8b94c630a"  # the thread of the LS recording
SYSTEM = "Work only inside the repository."

EVALS = {
    "evals/add_file.eval.py": f'''
        from anpord import define_eval, files

        def added(c):
            tools = [(call.name, call.status) for call in c.tool_calls()]
            ok = c.files_changed() == ["hello.txt"] and c.exists("hello.txt") and tools == [("file_change", "completed")]
            return ok, f"files={{c.files_changed()}} tools={{tools}} commands={{c.commands()}}"

        case = define_eval(prompt={ADD_FILE!r}, source=files({{"README.md": "x\\n"}}), validate=added)
    ''',
    "evals/listing.eval.py": f'''
        from anpord import define_eval, files
        from anpord.expect import equals

        @define_eval(source=files({{}}))
        async def test(t):
            turn = await t.send({LS!r})
            t.called_tool("command_execution", input={{"command": "ls"}}, status="completed").label("ran ls")
            t.no_failed_actions().label("no failed actions")
            commands = [(e.data["command"], e.data["exit_code"]) for e in t.events if e.type == "command.completed"]
            t.check(commands, equals([("ls", 0)])).label("commands")
            second = await t.send({ANSWER!r})
            t.check(second.message, equals("4")).label("second answer")
    ''',
    "evals/broken.eval.py": f'''
        from anpord import define_eval, files
        case = define_eval(prompt={FAILED!r}, source=files({{}}), validate=lambda c: True)
    ''',
}


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_codex_runs_unattended_and_resumes_its_thread(tmp_path: Path, sandbox: str) -> None:
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [
        variant("codex", sandbox, standins, model="gpt-5-codex", options={"system_prompt": SYSTEM}),
    ], EVALS)
    done = run(project)
    verdicts = {r["case_id"]: (r["verdict"], r["reason"]) for r in done.results()}
    assert verdicts["add_file"] == ("passed", ""), verdicts
    assert verdicts["listing"] == ("passed", ""), verdicts
    assert verdicts["broken"] == (
        "failed", "stream disconnected before completion: error sending request"
    ), verdicts
    assert done.code == 1, done.output

    first, second = reports(done, "listing", "codex")
    # Its built-in OpenAI provider points at the trial's model proxy (on by default).
    assert first["argv"][1] == "-c" and first["argv"][2].startswith('openai_base_url="http://127.0.0.1:')
    assert first["argv"][:1] + first["argv"][3:] == [
        "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
        "--model", "gpt-5-codex", "-",
    ]
    assert first["prompt"] == LS and first["resume"] is None
    assert first["instructions"] == {".codex/AGENTS.md": SYSTEM}
    assert second["argv"][-3:] == ["resume", THREAD, "-"] and second["prompt"] == ANSWER
    checks = done.assertions("listing")
    assert {k: v["status"] for k, v in checks.items()} == {
        "ran ls": "passed", "no failed actions": "passed", "commands": "passed", "second answer": "passed",
    }
    # Codex reports tokens, no cost: the cost is unknown, never 0.
    assert done.result("add_file")["usage"] == {"input_tokens": 6008, "output_tokens": 51, "cost": None}


@pytest.mark.parametrize("proxied", [False, True])
def test_an_openai_key_alone_reaches_codex_as_codex_api_key(tmp_path: Path, proxied: bool) -> None:
    # codex exec 0.171 sends CODEX_API_KEY and ignores OPENAI_API_KEY.
    import hashlib

    key = "sk-openai-only-0123456789"
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [
        variant("codex", "local", standins, secrets=["OPENAI_API_KEY"], model_proxy=proxied),
    ], {"evals/answer.eval.py": f'''
        from anpord import define_eval, files
        case = define_eval(prompt={ANSWER!r}, source=files({{}}), validate=lambda c: True)
    '''})
    done = run(project, env={"OPENAI_API_KEY": key, "CODEX_API_KEY": ""})
    assert done.result("answer")["verdict"] == "passed", done.output
    (report,) = reports(done, "answer", "codex")
    digest = hashlib.sha256(key.encode()).hexdigest()[:16]
    if proxied:  # the model proxy (on by default) keeps the key: codex gets its stand-in, twice
        assert report["keys"]["OPENAI_API_KEY"] == report["keys"]["CODEX_API_KEY"] != digest
    else:
        assert report["keys"] == {"OPENAI_API_KEY": digest, "CODEX_API_KEY": digest}
