"""Gemini CLI itself (from npm, pinned) under bwrap with the network closed, its model a scripted
generateContent server on the host's loopback, reached only through the trial's model proxy: the
CLI holds a stand-in key, the server gets the real one, each model call is a ``model.called``
event, and the trial's tokens are the CLI's own report, not that plus the proxy's. Then
``--replay`` runs the case again with the server gone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from npm_support import npm_program
from project_support import eval_file
from proxy_support import Loop, Upstream

VERSION = "0.61.0"
KEY = "AIza-gemini-e2e-real-key-0123456789abcdef"

CASE = eval_file('''
    @define_eval(source=files({"README.md": "a repo\\n"}))
    async def hello(t):
        turn = await t.send("say hello")
        t.succeeded()
        t.check(turn.message, includes("Done: all good.")).label("answer")
''')


def gemini_cli() -> Path:
    """The pinned Gemini CLI, installed from npm on first use."""
    return npm_program("@google/gemini-cli", VERSION, "gemini-cli", "node_modules/.bin/gemini")


def _config(binary: Path, upstream: str) -> str:
    folder = str(binary.parents[2])
    return ("from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=120, variants=[Variant(name='gm', harness='gemini', "
            f"model='gemini-2.5-flash', sandbox='bwrap', mounts=[{folder!r}], "
            f"options={{'executable': {str(binary.resolve())!r}}}, secrets=['GEMINI_API_KEY'], "
            f"env={{'GOOGLE_GEMINI_BASE_URL': {upstream!r}}})])\n")


def _calls(run: Any) -> list[dict[str, Any]]:
    reading = run.reading()
    return [e.data for e in reading.events(reading.trial("hello")) if e.type == "model.called"]


def test_gemini_cli_talks_to_its_model_through_the_proxy_and_replays(make_project: Any) -> None:
    binary = gemini_cli()
    loop = Loop()
    upstream = Upstream(reply="Done: all good.", gap=0.0)
    loop.run(upstream.start())
    try:
        project = make_project({"evals/hello.eval.py": CASE}, config=_config(binary, upstream.url))
        run = project.run("--json", timeout=300, env={"GEMINI_API_KEY": KEY})
        line = run.result("hello")
        assert line["verdict"] == "passed", (line["reason"], line["assertions"], run.trial("hello")["logs"])
        asked = list(upstream.seen)
    finally:
        loop.run(upstream.stop())
        loop.close()
    assert asked and all(s["path"].endswith(":streamGenerateContent") for s in asked), asked
    # The server got the real key; the CLI only ever held its stand-in.
    assert {s["headers"].get("x-goog-api-key") for s in asked} == {KEY}
    calls = _calls(run)
    assert len(calls) == len(asked)
    for call in calls:
        assert (call["source"], call["provider"], call["status"], call["stream"]) == \
            ("proxy", "gemini", "completed", True), call
    # The tokens are the CLI's own report (6 in, 2 out a call from this server), not doubled.
    assert line["usage"]["input_tokens"] == 6 * len(calls) and line["usage"]["output_tokens"] == 2 * len(calls)
    for path in run.run_dir.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path

    # The server is gone and no key is set: every answer comes from the recording.
    project.write({"evals/evals.config.py": _config(binary, "http://127.0.0.1:9")})
    again = project.run("--json", "--replay", run.run_dir.name, timeout=300, env={"GEMINI_API_KEY": ""})
    line = again.result("hello")
    assert line["verdict"] == "passed", (line["reason"], again.trial("hello")["logs"])
    replayed = _calls(again)
    assert len(replayed) == len(calls) and all(c.get("replayed") for c in replayed)
