"""MCP mocks registered with coding CLIs: Claude Code run by the real claude harness gets
``--mcp-config`` (the CLI here is itself a ``cli_mock``, which records its command line), and the
other CLIs' configuration files hold the servers in their documented formats."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
from project_support import assert_passed, eval_file

import asyncio

from anpord._fs import HostFiles
from anpord.mocks._register import _codex_config
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
