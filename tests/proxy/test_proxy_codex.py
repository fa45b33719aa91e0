"""Codex itself (from npm, pinned) under bwrap with the network closed, its model a scripted
Responses API server on the host's loopback, reached only through the trial's model proxy: the
CLI holds a stand-in key, the server gets the real one, each model call is a ``model.called``
event, and the trial's tokens are Codex's own report, not that plus the proxy's. Then
``--replay`` runs the case again with the server gone: Codex's per-run ids and the day it tells
its model are not part of what a replay matches on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from npm_support import npm_program
from project_support import eval_file
from proxy_support import Loop, Upstream

VERSION = "0.171.0"
KEY = "sk-codex-e2e-real-key-0123456789abcdef"

CASE = eval_file('''
    @define_eval(source=files({"README.md": "a repo\\n"}))
    async def hello(t):
        turn = await t.send("say hello")
        t.succeeded()
        t.check(turn.message, includes("Done: all good.")).label("answer")
''')


def codex() -> Path:
    """The pinned Codex CLI, installed from npm on first use."""
    return npm_program("@openai/codex", VERSION, "codex", "node_modules/.bin/codex")


def _config(binary: Path, upstream: str) -> str:
    folder = str(binary.parents[2])
    return ("from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=120, variants=[Variant(name='cx', harness='codex', "
            f"model='gpt-5', sandbox='bwrap', mounts=[{folder!r}], "
            f"options={{'executable': {str(binary.resolve())!r}}}, secrets=['OPENAI_API_KEY'], "
            f"env={{'OPENAI_BASE_URL': {upstream + '/v1'!r}}})])\n")


def _calls(run: Any) -> list[dict[str, Any]]:
    reading = run.reading()
    return [e.data for e in reading.events(reading.trial("hello")) if e.type == "model.called"]


def test_codex_talks_to_its_model_through_the_proxy_and_replays(make_project: Any) -> None:
    binary = codex()
    loop = Loop()
    upstream = Upstream(reply="Done: all good.", gap=0.0)
    loop.run(upstream.start())
    try:
        project = make_project({"evals/hello.eval.py": CASE}, config=_config(binary, upstream.url))
        run = project.run("--json", timeout=300, env={"OPENAI_API_KEY": KEY})
        line = run.result("hello")
        assert line["verdict"] == "passed", (line["reason"], line["assertions"], run.trial("hello")["logs"])
        asked = list(upstream.seen)
    finally:
        loop.run(upstream.stop())
        loop.close()
    assert asked and all((s["method"], s["path"]) == ("POST", "/v1/responses") for s in asked), asked
    # The server got the real key; Codex only ever held its stand-in.
    assert {s["headers"]["authorization"] for s in asked} == {f"Bearer {KEY}"}
    calls = _calls(run)
    assert len(calls) == len(asked)
    for call in calls:
        assert (call["source"], call["provider"], call["model"], call["status"], call["stream"]) == \
            ("proxy", "openai", "gpt-5", "completed", True), call
    # The tokens are Codex's own report (20 in, 5 out a call from this server), not doubled.
    assert line["usage"]["input_tokens"] == 20 * len(calls) and line["usage"]["output_tokens"] == 5 * len(calls)
    for path in run.run_dir.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path

    # The server is gone and no key is set: every answer comes from the recording.
    project.write({"evals/evals.config.py": _config(binary, "http://127.0.0.1:9")})
    again = project.run("--json", "--replay", run.run_dir.name, timeout=300, env={"OPENAI_API_KEY": ""})
    line = again.result("hello")
    assert line["verdict"] == "passed", (line["reason"], again.trial("hello")["logs"])
    replayed = _calls(again)
    assert len(replayed) == len(calls) and all(c.get("replayed") for c in replayed)
    assert [c["request_key"] for c in replayed] == [c["request_key"] for c in calls]
