"""Codex itself (from npm, pinned) under bwrap with the network closed, its model a scripted
Responses API server on the host's loopback, reached only through the trial's model proxy: the
CLI holds a stand-in key, the server gets the real one, each model call is a ``model.called``
event, and the trial's tokens are Codex's own report, not that plus the proxy's. Then
``--replay`` runs the case again with the server gone: Codex's per-run ids and the day it tells
its model are not part of what a replay matches on."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from cli_support import assert_no_key_kept, assert_replays, model_calls, run_hello
from npm_support import npm_program

VERSION = "0.171.0"
KEY = "sk-codex-e2e-real-key-0123456789abcdef"


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


def test_codex_talks_to_its_model_through_the_proxy_and_replays(make_project: Any) -> None:
    config = partial(_config, codex())
    project, run, asked = run_hello(make_project, config, {"OPENAI_API_KEY": KEY})
    line = run.result("hello")
    assert asked and all((s["method"], s["path"]) == ("POST", "/v1/responses") for s in asked), asked
    # The server got the real key; Codex only ever held its stand-in.
    assert {s["headers"]["authorization"] for s in asked} == {f"Bearer {KEY}"}
    calls = model_calls(run)
    assert len(calls) == len(asked)
    for call in calls:
        assert (call["source"], call["provider"], call["model"], call["status"], call["stream"]) == \
            ("proxy", "openai", "gpt-5", "completed", True), call
    # The tokens are Codex's own report (20 in, 5 out a call from this server), not doubled.
    assert line["usage"]["input_tokens"] == 20 * len(calls) and line["usage"]["output_tokens"] == 5 * len(calls)
    assert_no_key_kept(run, KEY)
    # The server is gone and no key is set: every answer comes from the recording.
    assert_replays(project, config, run, "OPENAI_API_KEY")
