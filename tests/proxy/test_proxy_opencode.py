"""OpenCode itself (from npm, pinned) under bwrap with the network closed, its model a scripted
server on the host's loopback, reached only through the trial's model proxy: OpenCode's
``anthropic`` provider is pointed at the proxy through its inline configuration
(``OPENCODE_CONFIG_CONTENT``), the CLI holds a stand-in key, the server gets the real one, each
model call is a ``model.called`` event, and the trial's tokens are OpenCode's own report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_support import assert_no_key_kept, model_calls, run_hello
from npm_support import npm_program
from project_support import eval_file

from anpord.testing.model_server import ModelServer, rule, text, tool_call

VERSION = "1.18.33"
KEY = "sk-ant-opencode-e2e-real-0123456789abcdef"


def opencode() -> Path:
    """The pinned OpenCode, installed from npm on first use. Its platform binary is run directly: a
    program of its own, no node launcher."""
    return npm_program("opencode-ai", VERSION, "opencode", "node_modules/opencode-linux-x64/bin/opencode")


CASE = eval_file('''
    @define_eval(source=files({"README.md": "a repo\\n"}))
    async def notes(t):
        turn = await t.send("write the notes file")
        t.succeeded()
        t.check(turn.message, equals("Done: notes written.")).label("answer")
        t.called_tool("bash").label("ran bash")
        t.check((t.workspace / "notes.txt").read_text(), equals("hi\\n")).label("notes.txt")
''')


def _config(binary: Path, server_root: str, sandbox: str) -> str:
    folder = str(binary.parents[1])
    return ("from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=150, variants=[Variant(name='oc', harness='opencode', "
            f"model='anthropic/claude-sonnet-4-5', sandbox={sandbox!r}, mounts=[{folder!r}], "
            f"options={{'executable': {str(binary.resolve())!r}}}, secrets=['ANTHROPIC_API_KEY'], "
            f"env={{'ANTHROPIC_BASE_URL': {server_root!r}, 'OPENCODE_DISABLE_MODELS_FETCH': '1'}})])\n")


def _events(run: Any, case: str, kind: str) -> list[dict[str, Any]]:
    reading = run.reading()
    return [e.data for e in reading.events(reading.trial(case)) if e.type == kind]


def test_opencode_talks_to_its_model_through_the_proxy(make_project: Any) -> None:
    binary = opencode()
    rules = [rule("notes", tool_call("bash", {"command": "echo hi > notes.txt", "description": "write notes"}),
                  text("Done: notes written.")),
             rule(None, text("Notes"))]  # anything else OpenCode asks (a title for the session)
    with ModelServer(rules) as server:
        root = server.url.removesuffix("/v1")
        project = make_project({"evals/notes.eval.py": CASE}, config=_config(binary, root, "bwrap"))
        run = project.run("--json", timeout=300, env={"ANTHROPIC_API_KEY": KEY})
        line = run.result("notes")
        assert line["verdict"] == "passed", (line["reason"], line["assertions"], run.trial("notes")["logs"])
        asked = [r for r in server.requests if r["_path"] == "/v1/messages"]
        keys = {r["_headers"].get("x-api-key") for r in asked}
    # Every call reached the server through the proxy, with the real key (OpenCode held a stand-in).
    assert len(asked) >= 2 and keys == {KEY}, keys
    calls = [c for c in _events(run, "notes", "model.called") if c["operation"] == "messages"]
    assert len(calls) == len(asked)
    assert all((c["source"], c["provider"], c["status"]) == ("proxy", "anthropic", "completed") for c in calls)
    assert {c["path"] for c in calls} == {"/v1/messages"} and all(c["upstream"] == root for c in calls)
    assert "claude-sonnet-4-5" in {c["model"] for c in calls}
    # The trial's tokens are OpenCode's own step_finish report, not that plus the proxy's.
    reported = sum(u.get("input_tokens") or 0 for u in _events(run, "notes", "usage"))
    assert reported and line["usage"]["input_tokens"] == reported
    assert_no_key_kept(run, KEY)


def test_a_provider_endpoint_of_the_trials_own_is_left_alone(tmp_path: Path) -> None:
    import asyncio

    from anpord._fs import HostFiles
    from anpord.harnesses.coding.opencode import configured_base_urls
    from anpord.proxy._clis import for_cli as for_cli_in
    from anpord.proxy._service import ProxyHandle

    def for_cli(cli: str, proxy: Any, env: dict[str, str], home: Path, own: set[str]) -> Any:
        return asyncio.run(for_cli_in(cli, proxy, env, home, HostFiles(), own))

    url = "http://127.0.0.1:9/trial/abc"
    proxy = ProxyHandle(url, {"ANTHROPIC_API_KEY": "anpord-proxy-a", "OPENAI_API_KEY": "anpord-proxy-o"})
    home, workspace = tmp_path / "home", tmp_path / "ws"
    (home / ".config" / "opencode").mkdir(parents=True)
    workspace.mkdir()
    # The workspace's opencode.json sends openai to a gateway of its own (JSONC, as OpenCode reads it).
    (workspace / "opencode.json").write_text('{\n  // ours\n  "provider": {"openai": {"options": '
                                             '{"baseURL": "http://gateway.invalid/v1"}}},\n}\n')
    inline = json.dumps({"provider": {"google": {"options": {"baseURL": "http://other.invalid"}}}, "theme": "x"})
    own = asyncio.run(configured_base_urls(home, workspace, HostFiles()))
    assert own == {"openai"}
    env, args = for_cli("opencode", proxy, {"OPENCODE_CONFIG_CONTENT": inline}, home, own)
    assert args == ()
    config = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    assert config["theme"] == "x"  # the trial's own inline configuration is kept
    assert config["provider"]["anthropic"]["options"]["baseURL"] == f"{url}/v1"
    assert "openai" not in config["provider"]  # its gateway: not ours to change, and no stand-in sent
    assert config["provider"]["google"]["options"]["baseURL"] == "http://other.invalid"
    assert env["ANTHROPIC_API_KEY"] == "anpord-proxy-a" and "OPENAI_API_KEY" not in env
    # Nothing of the trial's own: every built-in provider goes to the proxy.
    env, _ = for_cli("opencode", proxy, {}, home, set())
    providers = json.loads(env["OPENCODE_CONFIG_CONTENT"])["provider"]
    assert {k: v["options"]["baseURL"] for k, v in providers.items()} == {
        "anthropic": f"{url}/v1", "openai": f"{url}/v1", "google": f"{url}/v1beta"}


@pytest.mark.parametrize(("model", "base_variable", "key_variable", "key_header", "provider", "path_end"), [
    ("openai/gpt-5", "OPENAI_BASE_URL", "OPENAI_API_KEY", "authorization", "openai", "/v1/responses"),
    ("google/gemini-2.5-flash", "GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENERATIVE_AI_API_KEY", "x-goog-api-key",
     "gemini", ":streamGenerateContent"),
])
def test_opencodes_openai_and_google_providers_reach_their_model_through_the_proxy(
        make_project: Any, model: str, base_variable: str, key_variable: str, key_header: str, provider: str,
        path_end: str) -> None:
    """OpenCode's ``openai`` provider (the Responses API) and its ``google`` one (generateContent,
    streamed) go through the proxy too: the server gets the real key, OpenCode a stand-in."""
    binary = opencode()
    key = f"real-{provider}-opencode-key-0123456789abcdef"

    def config(upstream: str) -> str:
        base = upstream + ("/v1" if provider == "openai" else "")
        return ("from anpord import Variant, define_eval_config\n"
                "config = define_eval_config(timeout=150, variants=[Variant(name='oc', harness='opencode', "
                f"model={model!r}, sandbox='bwrap', mounts=[{str(binary.parents[1])!r}], "
                f"options={{'executable': {str(binary.resolve())!r}}}, secrets=[{key_variable!r}], "
                f"env={{{base_variable!r}: {base!r}, 'OPENCODE_DISABLE_MODELS_FETCH': '1'}})])\n")

    _, run, asked = run_hello(make_project, config, {key_variable: key})
    assert asked and all(s["path"].endswith(path_end) for s in asked), asked
    assert {s["headers"].get(key_header, "").removeprefix("Bearer ") for s in asked} == {key}
    calls = model_calls(run)
    assert len(calls) == len(asked)
    assert all((c["source"], c["provider"], c["status"]) == ("proxy", provider, "completed") for c in calls), calls
    assert_no_key_kept(run, key)
