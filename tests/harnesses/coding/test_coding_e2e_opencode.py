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
