"""What each coding CLI is given to reach the trial's proxy (``proxy._clis.for_cli``): only what
it honours, so no CLI sends a stand-in to a real endpoint."""

from __future__ import annotations

import json
from pathlib import Path

import asyncio
from typing import Any

from anpord._fs import HostFiles
from anpord.proxy._service import ProxyHandle
from anpord.proxy._clis import for_cli as for_cli_in


def for_cli(cli: str, proxy: Any, env: dict[str, str], home: Path) -> Any:
    """``for_cli`` on a HOME of the host's."""
    return asyncio.run(for_cli_in(cli, proxy, env, home, HostFiles()))

URL = "http://127.0.0.1:4321"
PROXY = ProxyHandle(URL, {"ANTHROPIC_API_KEY": "anpord-proxy-a", "CODEX_API_KEY": "anpord-proxy-c",
                          "OPENAI_API_KEY": "anpord-proxy-o", "GEMINI_API_KEY": "anpord-proxy-g"})


def test_claude_code_gets_the_base_url_and_its_stand_ins_unless_on_bedrock(tmp_path: Path) -> None:
    env, args = for_cli("claude", PROXY, {}, tmp_path)
    assert env == {"ANTHROPIC_BASE_URL": URL, "ANTHROPIC_API_KEY": "anpord-proxy-a"} and args == ()
    assert for_cli("claude", PROXY, {"CLAUDE_CODE_USE_BEDROCK": "1"}, tmp_path) == ({}, ())


def test_codex_gets_its_provider_moved_by_a_config_override(tmp_path: Path) -> None:
    env, args = for_cli("codex", PROXY, {}, tmp_path)
    assert args == ("-c", f'openai_base_url="{URL}/v1"')
    assert env["CODEX_API_KEY"] == "anpord-proxy-c" and env["OPENAI_API_KEY"] == "anpord-proxy-o"


def test_gemini_gets_the_api_key_sign_in_chosen_unless_one_is(tmp_path: Path) -> None:
    env, _ = for_cli("gemini", PROXY, {}, tmp_path)
    assert env == {"GOOGLE_GEMINI_BASE_URL": URL, "GEMINI_API_KEY": "anpord-proxy-g"}
    settings = json.loads((tmp_path / ".gemini" / "settings.json").read_text())
    assert settings == {"security": {"auth": {"selectedType": "gemini-api-key"}}}
    # A profile's own choice and other settings are kept.
    (tmp_path / ".gemini" / "settings.json").write_text(json.dumps(
        {"security": {"auth": {"selectedType": "oauth-personal"}}, "general": {"maxAttempts": 1}}))
    for_cli("gemini", PROXY, {}, tmp_path)
    assert json.loads((tmp_path / ".gemini" / "settings.json").read_text())["security"]["auth"] == \
        {"selectedType": "oauth-personal"}
    # Vertex AI, or no Gemini key at all: left direct.
    assert for_cli("gemini", PROXY, {"GOOGLE_GENAI_USE_VERTEXAI": "true"}, tmp_path) == ({}, ())
    assert for_cli("gemini", ProxyHandle(URL, {}), {}, tmp_path / "other") == ({}, ())


def test_opencode_gets_its_providers_moved_by_its_inline_configuration(tmp_path: Path) -> None:
    env, args = for_cli("opencode", PROXY, {}, tmp_path)
    assert args == ()
    providers = json.loads(env.pop("OPENCODE_CONFIG_CONTENT"))["provider"]
    assert providers["anthropic"] == {"options": {"baseURL": f"{URL}/v1"}}
    assert env == {"ANTHROPIC_API_KEY": "anpord-proxy-a", "OPENAI_API_KEY": "anpord-proxy-o",
                   "GEMINI_API_KEY": "anpord-proxy-g"}
    # An inline configuration that is not JSON: left to the CLI, as it is.
    assert for_cli("opencode", PROXY, {"OPENCODE_CONFIG_CONTENT": "{nope"}, tmp_path) == ({}, ())
