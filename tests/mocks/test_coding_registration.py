"""MCP mocks registered with coding CLIs: Claude Code run by the real claude harness gets
``--mcp-config`` (the CLI here is itself a ``cli_mock``, which records its command line), and the
other CLIs' configuration files hold the servers in their documented formats."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from project_support import END, assert_passed, eval_file

import asyncio

from anpord._fs import HostFiles
from anpord.mocks._register import RegistrationError, _codex_config
from anpord.mocks._register import register_mcp as register_in


def register_mcp(cli: str, config: str, home: Path) -> tuple[str, ...]:
    """``register_mcp`` on a HOME of the host's."""
    return asyncio.run(register_in(cli, config, home, HostFiles()))

RESULT = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": "done",
                     "session_id": "s1", "num_turns": 1})

CASE = eval_file(f'''
    from anpord.mocks import cli_mock, mcp_mock, mcp_tool

    @define_eval(source=files({{}}), mocks=[
        cli_mock("claude", default={{"stdout": {RESULT + chr(10)!r}}}),
        mcp_mock("crm", tools=[mcp_tool("lookup", result="gold")]),
    ])
    async def registered(t):
        await t.send("look the customer up")
        argv = t.mock("claude").calls[0]["argv"]
        config = json.loads(Path(argv[argv.index("--mcp-config") + 1]).read_text())
        t.check(sorted(config["mcpServers"]), equals(["crm"]))
        t.check(t.reply, equals("done"))
        t.check("end", equals("end")).label("reached the end")
''')


def test_claude_code_gets_the_trials_mcp_servers(make_project: Any) -> None:
    config = ("from anpord import Variant, define_eval_config\n"
              "config = define_eval_config(timeout=30, variants=[Variant(name='cc', harness='claude', "
              "options={'check_credentials': False})])\n")
    project = make_project({"evals/registered.eval.py": CASE}, config=config)
    run = project.run("--json", timeout=120)
    assert_passed(run, "registered")


def test_gemini_codex_and_opencode_configurations(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"crm": {"command": "/usr/bin/python3", "args": ["-I", "relay.py"]}}}))
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps({"theme": "dark"}))  # a profile's own
    for cli in ("gemini", "codex", "opencode"):
        assert register_mcp(cli, str(config), home) == ()
    register_mcp("codex", str(config), home)  # a second session: still one table
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())
    assert gemini == {"theme": "dark", "mcpServers": {"crm": {"command": "/usr/bin/python3", "args": ["-I", "relay.py"]}}}
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())
    assert codex == {"mcp_servers": {"crm": {"command": "/usr/bin/python3", "args": ["-I", "relay.py"]}}}
    opencode = json.loads((home / ".config" / "opencode" / "opencode.json").read_text())
    assert opencode["mcp"] == {"crm": {"type": "local", "command": ["/usr/bin/python3", "-I", "relay.py"], "enabled": True}}
    assert register_mcp("claude", str(config), home) == ("--mcp-config", str(config))


RELAY = {"command": "/usr/bin/python3", "args": ["-I", "relay.py", "crm"]}


def test_a_profiles_json_settings_with_comments_keep_their_settings(tmp_path: Path) -> None:
    # Gemini CLI and OpenCode read their settings as JSON with comments; before, such a file was
    # taken as empty and written back holding the mock alone: the profile's settings were gone.
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"crm": RELAY}}))
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(
        '{\n  // the profile\'s\n  "model": {"name": "gemini-2.5-pro"}, /* kept */\n'
        '  "note": "a // b, /* c */ ,}",\n  "mcpServers": {"other": {"command": "x",},},\n}\n')
    register_mcp("gemini", str(config), home)
    assert json.loads((home / ".gemini" / "settings.json").read_text()) == {
        "model": {"name": "gemini-2.5-pro"}, "note": "a // b, /* c */ ,}",
        "mcpServers": {"other": {"command": "x"}, "crm": RELAY}}


@pytest.mark.parametrize("cli, file, text, message", [
    ("gemini", ".gemini/settings.json", '{"theme": "dark"', r"~/\.gemini/settings\.json is not JSON \(.*\): the MCP mocks"),
    ("opencode", ".config/opencode/opencode.json", '["a"]', "does not hold a JSON object with 'mcp' an object"),
    ("opencode", ".config/opencode/opencode.json", '{"mcp": 3}', "does not hold a JSON object with 'mcp' an object"),
])
def test_a_json_settings_file_that_cannot_take_the_mock_is_refused_and_kept(
        tmp_path: Path, cli: str, file: str, text: str, message: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"crm": RELAY}}))
    (tmp_path / file).parent.mkdir(parents=True)
    (tmp_path / file).write_text(text)
    with pytest.raises(RegistrationError, match=message) as raised:
        register_mcp(cli, str(config), tmp_path)
    assert raised.value.file == file
    assert (tmp_path / file).read_text() == text


def test_codex_config_has_the_mock_replace_a_same_name_server_and_keep_everything_else() -> None:

    text = '''model = "o4-mini"
# [mcp_servers.crm] was here once: a comment names it, no table does
note = "[mcp_servers.crm]"

[mcp_servers.crm]
command = "npx"
args = ["-y", "@acme/real-crm"]

[mcp_servers.crm.env]
CRM_TOKEN = "live"

[mcp_servers.docs]
command = "docs-server"

[model_providers.local]
base_url = "http://127.0.0.1:1/v1"
'''
    out = tomllib.loads(_codex_config(text, {"crm": RELAY}, "config.toml"))
    assert out["mcp_servers"]["crm"] == RELAY  # the mock, not the real server, nor its env
    assert out["mcp_servers"]["docs"] == {"command": "docs-server"}
    assert out["model"] == "o4-mini" and out["note"] == "[mcp_servers.crm]"
    assert out["model_providers"] == {"local": {"base_url": "http://127.0.0.1:1/v1"}}
    commented = tomllib.loads(_codex_config("# [mcp_servers.crm]\n", {"crm": RELAY}, "config.toml"))
    assert commented["mcp_servers"]["crm"] == RELAY  # before: skipped, as if registered
    again = _codex_config(_codex_config("", {"crm": RELAY}, "c"), {"crm": RELAY}, "c")
    assert again.count("[mcp_servers.crm]") == 1


@pytest.mark.parametrize("text, message", [
    ('[mcp_servers]\ncrm = { command = "npx" }\n', "defines MCP server 'crm' in a form that cannot be replaced"),
    ("model = \n", "config.toml is not TOML"),
])
def test_codex_config_that_cannot_take_the_mock_says_why(text: str, message: str) -> None:

    with pytest.raises(ValueError, match=message):
        _codex_config(text, {"crm": RELAY}, "config.toml")


CODEX_CASE = eval_file(f'''
    from anpord.mocks import cli_mock, mcp_mock, mcp_tool

    @define_eval(source=files({{}}), mocks=[
        cli_mock("codex", default={{"stdout": ""}}),
        mcp_mock("crm", tools=[mcp_tool("lookup", result="gold")]),
    ])
    async def registered(t):
        await t.send("look the customer up")
        {END}
''')


def test_a_profiles_codex_config_that_cannot_take_the_mock_makes_the_trial_void_naming_its_file(
        make_project: Any) -> None:
    # The CLI here is a cli_mock; the trial never gets to run it.
    config = ("from anpord import Variant, define_eval_config\n"
              "config = define_eval_config(timeout=30, variants=[Variant(name='cx', harness='codex', "
              "profile='p', options={'check_credentials': False})])\n")
    project = make_project({"evals/registered.eval.py": CODEX_CASE,
                            "evals/profiles/p/home/.codex/config.toml": "model = \n"}, config=config)
    run = project.run("--json", timeout=120)
    line = run.result("registered")
    written = project.path("evals/profiles/p/home/.codex/config.toml")
    assert line["verdict"] == "void", (line["verdict"], line["reason"])
    assert line["reason"] == (f"the codex harness: ~/.codex/config.toml is not TOML (Invalid value (at line 1, "
                              f"column 9)): the MCP mocks cannot be registered (copied from {written})"), line["reason"]
    assert not codex_runs(run), "the CLI ran with its MCP mocks unregistered"


def codex_runs(run: Any) -> list[dict[str, Any]]:
    return [e for e in run.events("registered") if e["type"] == "mock.called" and e["data"]["mock"] == "codex"]
