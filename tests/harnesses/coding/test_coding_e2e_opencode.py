"""``Variant(harness="opencode")`` end to end through ``anpord eval``, in local and bwrap sandboxes: a
stand-in ``opencode`` checks its command line and replays OpenCode's recorded stream (an answer
with token counts, no tool call: the tool mapping is covered on built streams in
test_coding_opencode.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from e2e_support import SANDBOXES, coding_project, install_standins, reports, run, variant

ANSWER = "replay:opencode/davidzoufaly__noldor__opencode-events.jsonl"
SESSION = "ses_09ec7fc10ffekAtgUWHv9M6Y0T"
SYSTEM = "Reply in three words."

EVALS = {
    "evals/chat.eval.py": f'''
        from anpord import define_eval, files
        from anpord.expect import equals

        @define_eval(source=files({{}}))
        async def test(t):
            first = await t.send({ANSWER!r})
            t.check(first.message, equals("alpha\\nbravo\\ncharlie")).label("answer")
            t.used_no_tools().label("no tools")
            t.no_failed_actions().label("no failed actions")
            second = await t.send({ANSWER!r})
            t.check(second.status, equals("completed")).label("second turn")
    ''',
}


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_opencode_runs_unattended_and_continues_its_session(tmp_path: Path, sandbox: str) -> None:
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [
        variant("opencode", sandbox, standins, model="anthropic/claude-sonnet-4-5",
                options={"system_prompt": SYSTEM}),
    ], EVALS)
    done = run(project)
    assert done.code == 0, done.output
    assert {k: v["status"] for k, v in done.assertions("chat").items()} == {
        "answer": "passed", "no tools": "passed", "no failed actions": "passed", "second turn": "passed",
    }
    first, second = reports(done, "chat", "opencode")
    assert first["argv"] == ["run", "--format", "json", "--model", "anthropic/claude-sonnet-4-5"]
    assert first["env"]["OPENCODE_PERMISSION"] == '{"*": "allow"}'
    assert first["instructions"] == {".config/opencode/AGENTS.md": SYSTEM}
    assert first["prompt"] == ANSWER and first["resume"] is None
    assert second["argv"][-2:] == ["--session", SESSION]
    # Two turns of 17913 fresh + 1664 cached input tokens; a cost of 0 next to tokens is unknown.
    assert done.result("chat")["usage"] == {"input_tokens": 2 * 19577, "output_tokens": 2 * 38, "cost": None}


CUSTOM = '{"provider": {"canned": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "http://127.0.0.1:9/v1", "apiKey": "{env:CANNED_API_KEY}"}, "models": {"m1": {}}}, "local": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "http://127.0.0.1:9/v1"}, "models": {"m1": {}}}}}'


def test_the_credential_check_follows_the_models_provider(tmp_path: Path) -> None:
    standins = install_standins(tmp_path / "standins")
    project = coding_project(tmp_path / "proj", [
        # Anthropic's key is set and declared, but the model is OpenAI's.
        variant("opencode", "local", standins, name="openai", model="openai/gpt-5",
                secrets=["ANTHROPIC_API_KEY"]),
        # A provider of the workspace's opencode.json, signing in with {env:CANNED_API_KEY}.
        variant("opencode", "local", standins, name="canned-unset", model="canned/m1",
                secrets=["ANTHROPIC_API_KEY"]),
        variant("opencode", "local", standins, name="canned-set", model="canned/m1",
                secrets=["CANNED_API_KEY"]),
        # A provider without an apiKey (a local model): nothing to check.
        variant("opencode", "local", standins, name="local", model="local/m1", secrets=[]),
    ], {
        "evals/chat.eval.py": f'''
            from anpord import define_eval, files
            case = define_eval(prompt={ANSWER!r}, source=files({{"opencode.json": {CUSTOM!r}}}),
                               validate=lambda c: True)
        ''',
    })
    done = run(project, env={"OPENAI_API_KEY": "", "CANNED_API_KEY": ""}, timeout=180)
    got = {r["variant"]: (r["verdict"], r["reason"]) for r in done.results()}
    assert got["openai"] == ("void", (
        "OpenCode has no credential for provider 'openai' (model openai/gpt-5): set OPENAI_API_KEY "
        "in anpord's environment and declare it with Variant(secrets=['OPENAI_API_KEY']), or pass "
        "options={'check_credentials': False}")), got
    assert got["canned-unset"] == ("void", (
        "OpenCode has no credential for provider 'canned' (model canned/m1): set CANNED_API_KEY "
        "in anpord's environment and declare it with Variant(secrets=['CANNED_API_KEY']), or pass "
        "options={'check_credentials': False}")), got
    assert got["local"] == ("passed", ""), got
    done = run(project, "--variant", "canned-set", env={"CANNED_API_KEY": "sk-canned-0123456789"})
    assert [(r["variant"], r["verdict"]) for r in done.results()] == [("canned-set", "passed")]
