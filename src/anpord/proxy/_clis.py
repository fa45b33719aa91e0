"""Pointing each coding CLI at the trial's model proxy: the variables (and arguments) that make
its model calls go there, with the proxy's stand-in for each key it would send.

Only what the CLI is known to honour is changed, so a CLI never sends a stand-in to a real
endpoint; a sign-in the proxy cannot carry (Bedrock, Vertex AI) is left as it is:

- Claude Code: ``ANTHROPIC_BASE_URL``, and ``ANTHROPIC_API_KEY`` / ``ANTHROPIC_AUTH_TOKEN`` /
  ``CLAUDE_CODE_OAUTH_TOKEN`` as stand-ins (not with ``CLAUDE_CODE_USE_BEDROCK``/``_VERTEX``);
- Codex: ``-c openai_base_url=<proxy>/v1`` (it ignores ``OPENAI_BASE_URL``) and
  ``CODEX_API_KEY`` / ``OPENAI_API_KEY`` as stand-ins; a ``model_providers`` gateway of its own
  configuration keeps its own endpoint and key;
- Gemini CLI: ``GOOGLE_GEMINI_BASE_URL`` and ``GEMINI_API_KEY`` as a stand-in, with the API-key
  sign-in chosen in ``~/.gemini/settings.json`` when none is (the variable alone makes it pick
  one it refuses); not with ``GOOGLE_GENAI_USE_VERTEXAI``;
- OpenCode: nothing (its providers' endpoints live in its own configuration): its calls go
  straight to them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..sandboxes._protocol import SandboxFiles

__all__ = ["for_cli"]

_CLAUDE_KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN")
_CODEX_KEYS = ("CODEX_API_KEY", "OPENAI_API_KEY")


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no")


def _stand_ins(proxy: Any, names: tuple[str, ...]) -> dict[str, str]:
    return {n: proxy.env[n] for n in names if n in proxy.env}


async def for_cli(
    cli: str, proxy: Any, env: Mapping[str, str], home: Path, files: SandboxFiles
) -> tuple[dict[str, str], tuple[str, ...]]:
    """``(variables to set, arguments to add)`` pointing ``cli`` at ``proxy`` for one turn. A
    settings file under ``home`` it needs changed is read and written through ``files`` (the
    trial's sandbox)."""
    if cli == "claude":
        if _truthy(env.get("CLAUDE_CODE_USE_BEDROCK")) or _truthy(env.get("CLAUDE_CODE_USE_VERTEX")):
            return {}, ()
        return {"ANTHROPIC_BASE_URL": proxy.base_url("anthropic"), **_stand_ins(proxy, _CLAUDE_KEYS)}, ()
    if cli == "codex":
        url = proxy.base_url("openai")
        return ({"OPENAI_BASE_URL": url, **_stand_ins(proxy, _CODEX_KEYS)},
                ("-c", f"openai_base_url={json.dumps(url)}"))
    if cli == "gemini":
        if _truthy(env.get("GOOGLE_GENAI_USE_VERTEXAI")) or "GEMINI_API_KEY" not in proxy.env:
            return {}, ()
        await _choose_api_key_sign_in(home, files)
        return {"GOOGLE_GEMINI_BASE_URL": proxy.base_url("gemini"), **_stand_ins(proxy, ("GEMINI_API_KEY",))}, ()
    return {}, ()


async def _choose_api_key_sign_in(home: Path, files: SandboxFiles) -> None:
    path = home / ".gemini" / "settings.json"
    try:
        settings = json.loads((await files.read_file(path)).decode("utf-8"))
    except FileNotFoundError:
        settings = {}
    except (OSError, ValueError):
        return  # a settings file of the profile's we cannot read: left to the CLI
    if not isinstance(settings, dict):
        return
    auth = settings.setdefault("security", {}).setdefault("auth", {}) if isinstance(settings.get("security", {}), dict) else None
    if not isinstance(auth, dict) or auth.get("selectedType"):
        return
    auth["selectedType"] = "gemini-api-key"
    await files.write_file(path, json.dumps(settings, indent=2).encode("utf-8"))
