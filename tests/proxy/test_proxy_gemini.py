"""Gemini CLI itself (from npm, pinned) under bwrap with the network closed, its model a scripted
generateContent server on the host's loopback, reached only through the trial's model proxy: the
CLI holds a stand-in key, the server gets the real one, each model call is a ``model.called``
event, and the trial's tokens are the CLI's own report, not that plus the proxy's. Then
``--replay`` runs the case again with the server gone."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from cli_support import assert_no_key_kept, assert_replays, model_calls, run_hello
from npm_support import npm_program

VERSION = "0.61.0"
KEY = "AIza-gemini-e2e-real-key-0123456789abcdef"


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


def test_gemini_cli_talks_to_its_model_through_the_proxy_and_replays(make_project: Any) -> None:
    config = partial(_config, gemini_cli())
    project, run, asked = run_hello(make_project, config, {"GEMINI_API_KEY": KEY})
    line = run.result("hello")
    assert asked and all(s["path"].endswith(":streamGenerateContent") for s in asked), asked
    # The server got the real key; the CLI only ever held its stand-in.
    assert {s["headers"].get("x-goog-api-key") for s in asked} == {KEY}
    calls = model_calls(run)
    assert len(calls) == len(asked)
    for call in calls:
        assert (call["source"], call["provider"], call["status"], call["stream"]) == \
            ("proxy", "gemini", "completed", True), call
    # The tokens are the CLI's own report (6 in, 2 out a call from this server), not doubled.
    assert line["usage"]["input_tokens"] == 6 * len(calls) and line["usage"]["output_tokens"] == 2 * len(calls)
    assert_no_key_kept(run, KEY)
    # The server is gone and no key is set: every answer comes from the recording.
    assert_replays(project, config, run, "GEMINI_API_KEY")
