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
- OpenCode: its built-in ``anthropic``, ``openai`` and ``google`` providers' ``options.baseURL``
  in ``OPENCODE_CONFIG_CONTENT`` (its inline configuration, merged over every file's; one the
  trial already has is kept, with ours added), and ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY`` /
  ``GOOGLE_GENERATIVE_AI_API_KEY`` / ``GEMINI_API_KEY`` as stand-ins. A provider whose
  ``baseURL`` the trial's own configuration sets (a gateway, a local server, a provider of your
  own) keeps its endpoint and key: its calls go straight there.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
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
    cli: str, proxy: Any, env: Mapping[str, str], home: Path, files: SandboxFiles,
    own_endpoints: Collection[str] = (),
) -> tuple[dict[str, str], tuple[str, ...]]:
    """``(variables to set, arguments to add)`` pointing ``cli`` at ``proxy`` for one turn. A
    settings file under ``home`` it needs changed is read and written through ``files`` (the
    trial's sandbox); ``own_endpoints``: the providers whose endpoint the CLI's own configuration
    files set."""
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
    if cli == "opencode":
        return _opencode(proxy, env, own_endpoints), ()
    return {}, ()


# OpenCode's built-in providers the proxy speaks for: the provider id, the proxy's base URL for it
# (OpenCode's SDKs take the URL their paths follow: Anthropic's and OpenAI's end in /v1, Google's
# in /v1beta), and the variables it signs in with.
_OPENCODE_PROVIDERS = (
    ("anthropic", "anthropic", "/v1", ("ANTHROPIC_API_KEY",)),
    ("openai", "openai", "", ("OPENAI_API_KEY",)),
    ("google", "gemini", "/v1beta", ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY")),
)


def _opencode(proxy: Any, env: Mapping[str, str], own_endpoints: Collection[str]) -> dict[str, str]:
    inline: dict[str, Any] = {}
    raw = env.get("OPENCODE_CONFIG_CONTENT")
    if raw:
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {}  # an inline configuration we cannot read: left to the CLI, as it is
        if not isinstance(parsed, dict):
            return {}
        inline = parsed
    providers = inline.setdefault("provider", {}) if isinstance(inline.get("provider", {}), dict) else None
    if providers is None:
        return {}
    own = set(own_endpoints) | {name for name, entry in providers.items()
                                if isinstance(entry, dict) and isinstance(entry.get("options"), dict)
                                and entry["options"].get("baseURL")}
    out: dict[str, str] = {}
    for provider, api, suffix, keys in _OPENCODE_PROVIDERS:
        if provider in own:
            continue  # the trial's own endpoint for it: not ours to change
        entry = providers.setdefault(provider, {})
        if not isinstance(entry, dict) or not isinstance(entry.setdefault("options", {}), dict):
            continue
        entry["options"]["baseURL"] = proxy.base_url(api) + suffix
        out.update(_stand_ins(proxy, keys))
    out["OPENCODE_CONFIG_CONTENT"] = json.dumps(inline)
    return out


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
