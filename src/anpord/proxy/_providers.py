"""What the model proxy serves: which request paths are which provider's API, where each provider's
upstream is, and the usage a response reports.

One address serves every provider; the path tells them apart, as each SDK appends it to the
base URL it is given (``OPENAI_BASE_URL`` ends in ``/v1``; Anthropic's and Gemini's are roots):

- OpenAI: ``POST /v1/chat/completions``, ``POST /v1/responses``, ``GET /v1/models``;
- Anthropic: ``POST /v1/messages`` (and ``/v1/messages/count_tokens``);
- Gemini: ``POST /v1beta/models/{model}:generateContent`` (``:streamGenerateContent``,
  ``:countTokens``; ``/v1/`` and ``/v1alpha/`` too).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BASE_URL_VARIABLES",
    "DEFAULT_UPSTREAMS",
    "KEY_VARIABLES",
    "SERVED",
    "Route",
    "route_of",
    "sse_payloads",
    "usage_of",
]

# The variables naming each provider's endpoint, first found wins (the trial's, then anpord's).
BASE_URL_VARIABLES: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_BASE_URL",),
    "anthropic": ("ANTHROPIC_BASE_URL",),
    "gemini": ("GOOGLE_GEMINI_BASE_URL", "GEMINI_BASE_URL"),
}
DEFAULT_UPSTREAMS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
# The credential variables the proxy keeps and hands the agent a stand-in for.
KEY_VARIABLES = (
    "OPENAI_API_KEY", "CODEX_API_KEY",
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
    "GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY",
)
SERVED = ("POST /v1/chat/completions, POST /v1/responses, GET /v1/models (OpenAI); "
          "POST /v1/messages, POST /v1/messages/count_tokens (Anthropic); "
          "POST /v1beta/models/{model}:generateContent, :streamGenerateContent or :countTokens, "
          "also under /v1/ and /v1alpha/ (Gemini)")

_GEMINI = re.compile(r"^/(v1|v1beta|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")
_OPENAI = {"/v1/chat/completions": "chat", "/v1/responses": "responses"}
_ANTHROPIC = {"/v1/messages": "messages", "/v1/messages/count_tokens": "count_tokens"}


@dataclass(frozen=True)
class Route:
    """A served request: its provider, its operation, the model its path names (Gemini's), and the
    path to append to the provider's upstream base URL."""

    provider: str
    operation: str
    upstream_path: str
    path_model: str | None = None

    @property
    def generates(self) -> bool:
        return self.operation not in ("count_tokens", "models")


def route_of(method: str, path: str, headers: Mapping[str, str]) -> Route | None:
    """The route serving ``method path``, or None (the proxy answers 404 naming ``SERVED``)."""
    path = path.rstrip("/") or "/"
    if method == "POST":
        if path in _OPENAI:
            return Route("openai", _OPENAI[path], path[len("/v1"):])
        if path in _ANTHROPIC:
            return Route("anthropic", _ANTHROPIC[path], path)
        m = _GEMINI.match(path)
        if m:
            op = {"generateContent": "generate_content", "streamGenerateContent": "generate_content",
                  "countTokens": "count_tokens"}[m.group(3)]
            return Route("gemini", op, path, m.group(2))
    elif method == "GET" and (path == "/v1/models" or path.startswith("/v1/models/")):
        # Both OpenAI and Anthropic list models here: Anthropic's clients say which they are.
        anthropic = "anthropic-version" in headers or "x-api-key" in headers
        return Route("anthropic", "models", path) if anthropic else Route("openai", "models", path[len("/v1"):])
    return None


def sse_payloads(text: str) -> list[Any]:
    """The JSON ``data:`` payloads of a server-sent event stream, in order (``[DONE]`` and
    anything not JSON left out)."""
    out: list[Any] = []
    for line in text.splitlines():
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if not data or data == "[DONE]":
            continue
        try:
            out.append(json.loads(data))
        except ValueError:
            pass
    return out


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _d(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _openai(usage: Mapping[str, Any]) -> dict[str, int | None]:
    # Chat completions say prompt/completion; the responses API says input/output.
    cached = _d(usage.get("prompt_tokens_details") or usage.get("input_tokens_details")).get("cached_tokens")
    reasoning = _d(usage.get("completion_tokens_details") or usage.get("output_tokens_details")).get("reasoning_tokens")
    return {
        "input_tokens": _int(usage.get("prompt_tokens", usage.get("input_tokens"))),
        "output_tokens": _int(usage.get("completion_tokens", usage.get("output_tokens"))),
        "cached_input_tokens": _int(cached),
        "reasoning_output_tokens": _int(reasoning),
    }


def _anthropic(usage: Mapping[str, Any], into: dict[str, int | None]) -> None:
    # anpord's input_tokens counts every prompt token; Anthropic's leaves out the cached ones.
    for key, ours in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens"),
                      ("cache_read_input_tokens", "cached_input_tokens"),
                      ("cache_creation_input_tokens", "cache_write_input_tokens")):
        value = _int(usage.get(key))
        if value is not None:
            into[ours] = value


def _gemini(meta: Mapping[str, Any]) -> dict[str, int | None]:
    out, thoughts = _int(meta.get("candidatesTokenCount")), _int(meta.get("thoughtsTokenCount"))
    return {
        "input_tokens": _int(meta.get("promptTokenCount")),
        "output_tokens": None if out is None and thoughts is None else (out or 0) + (thoughts or 0),
        "cached_input_tokens": _int(meta.get("cachedContentTokenCount")),
        "reasoning_output_tokens": thoughts,
    }


def usage_of(route: Route, payloads: list[Any]) -> tuple[str | None, dict[str, int | None]]:
    """``(model, usage)`` from a response's JSON body (one payload) or its stream's payloads."""
    model: str | None = route.path_model
    usage: dict[str, int | None] = {}
    for p in payloads:
        if not isinstance(p, Mapping):
            continue
        if route.provider == "openai":
            body = _d(p.get("response")) if "response" in p else p  # responses' stream events
            if isinstance(body.get("model"), str):
                model = body["model"]
            if isinstance(body.get("usage"), Mapping):
                usage = _openai(body["usage"])
        elif route.provider == "anthropic":
            message = _d(p.get("message")) if p.get("type") == "message_start" else p
            if isinstance(message.get("model"), str):
                model = message["model"]
            if isinstance(message.get("usage"), Mapping):
                _anthropic(message["usage"], usage)  # message_delta's output count is the running total
        else:
            if isinstance(p.get("modelVersion"), str):
                model = p["modelVersion"]
            if isinstance(p.get("usageMetadata"), Mapping):
                usage = _gemini(p["usageMetadata"])  # each chunk's is the running total
    if route.provider == "anthropic" and usage.get("input_tokens") is not None:
        usage["input_tokens"] = (usage["input_tokens"] or 0) + (usage.get("cached_input_tokens") or 0) \
            + (usage.get("cache_write_input_tokens") or 0)
    return model, {k: v for k, v in usage.items() if v is not None}
