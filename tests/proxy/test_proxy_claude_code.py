"""Claude Code itself (from npm, pinned) under bwrap with the network closed, its model a scripted
server on the host's loopback, reached only through the trial's model proxy: the CLI holds a
stand-in key, the server gets the real one, each of its model calls is a ``model.called`` event,
and the trial's tokens are the CLI's own report, not that plus the proxy's. Then ``--replay``
runs the case again with the server gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cli_support import assert_no_key_kept
from npm_support import npm_program
from project_support import eval_file

from anpord.testing.model_server import ModelServer, rule, text, tool_call

VERSION = "2.1.197"  # the version the recorded Claude Code streams come from
KEY = "sk-ant-e2e-real-key-0123456789abcdef"


def claude_code() -> Path:
    """The pinned Claude Code, installed from npm on first use."""
    return npm_program("@anthropic-ai/claude-code", VERSION, "claude-code", "node_modules/.bin/claude")


CASE = eval_file('''
    @define_eval(source=files({"README.md": "a repo\\n"}))
    async def notes(t):
        turn = await t.send("write the notes file")
        t.succeeded()
        t.check(turn.message, equals("Done: notes written.")).label("answer")
        t.called_tool("Bash").label("ran Bash")
        t.check((t.workspace / "notes.txt").read_text(), equals("hi\\n")).label("notes.txt")
''')


def _config(binary: Path, server_root: str, extra: str = "") -> str:
    folder = str(binary.parents[2])
    return ("from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=120, variants=[Variant(name='cc', harness='claude', "
            f"model='claude-sonnet-4-5', sandbox='bwrap', mounts=[{folder!r}], "
            f"options={{'executable': {str(binary.resolve())!r}}}, {extra}"
            f"env={{'ANTHROPIC_BASE_URL': {server_root!r}, 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC': '1'}})])\n")


def _calls(run: Any, case: str) -> list[dict[str, Any]]:
    reading = run.reading()
    return [e.data for e in reading.events(reading.trial(case)) if e.type == "model.called"]


def test_claude_code_talks_to_its_model_through_the_proxy_and_replays(make_project: Any) -> None:
    binary = claude_code()
    rules = [rule("notes", tool_call("Bash", {"command": "echo hi > notes.txt", "description": "write"}),
                  text("Done: notes written.")),
             rule(None, text("ok"))]
    with ModelServer(rules) as server:
        root = server.url.removesuffix("/v1")
        project = make_project({"evals/notes.eval.py": CASE},
                               config=_config(binary, root, "secrets=['ANTHROPIC_API_KEY'], "))
        run = project.run("--json", timeout=300, env={"ANTHROPIC_API_KEY": KEY})
        line = run.result("notes")
        assert line["verdict"] == "passed", (line["reason"], line["assertions"], run.trial("notes")["logs"])
        asked = [r for r in server.requests if r["_path"] == "/v1/messages"]
    assert len(asked) >= 2
    calls = [c for c in _calls(run, "notes") if c["operation"] == "messages"]
    assert len(calls) == len(asked)
    for call in calls:
        assert (call["provider"], call["model"], call["status"], call["stream"]) == \
            ("anthropic", "claude-sonnet-4-5", "completed", True)
        assert call["input_tokens"] and call["output_tokens"] is not None
    # The tokens are Claude Code's own report (its result event), not that plus the proxy's.
    [result] = [e.data for e in run.reading().events(run.reading().trial("notes")) if e.type == "usage"] or [None]
    reported = sum(c["input_tokens"] for c in calls)
    assert line["usage"]["input_tokens"] == (result or {}).get("input_tokens", reported)
    assert line["usage"]["cost"] is not None  # Claude Code's total_cost_usd
    # No artifact holds the key (the CLI had a stand-in; the proxy sent the real one upstream).
    assert_no_key_kept(run, KEY)

    # The server is gone and no key is set: every answer comes from the recording.
    project.write({"evals/evals.config.py": _config(binary, root)})
    again = project.run("--json", "--replay", run.run_dir.name, timeout=300, env={"ANTHROPIC_API_KEY": ""})
    line = again.result("notes")
    recorded = [(c["path"], c["request_key"], c["status"]) for c in _calls(run, "notes")]
    asked = [(c["path"], c["request_key"], c["status"]) for c in _calls(again, "notes")]
    assert line["verdict"] == "passed", (line["reason"], recorded, asked, again.trial("notes")["logs"])
    replayed = [c for c in _calls(again, "notes") if c["operation"] == "messages"]
    assert replayed and all(c.get("replayed") for c in replayed)
