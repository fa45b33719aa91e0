"""promptfoo providers as anpord variants, and graders as judge models.

A provider becomes a ``Variant`` only where anpord runs the same agent: a chat model behind an
OpenAI-compatible endpoint (``openai:<model>``, ``openai:chat:<model>``, a provider whose
``config`` names a base URL, and the few hosted or local services promptfoo addresses by
prefix that speak the same API). Any other provider (a script, an HTTP target, another vendor's
API) is a commented placeholder naming it: anpord cannot know what the agent should be.
"""

from __future__ import annotations

from typing import Any

from ._model import Arg, VariantSpec
from ._text import describe_actual

__all__ = ["grader_model", "variants_of"]

# promptfoo prefixes whose endpoint speaks the chat-completions API, with where it lives and the
# key promptfoo reads for it.
_COMPATIBLE: dict[str, tuple[str, str | None]] = {
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "togetherai": ("https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    "ollama": ("http://localhost:11434/v1", None),
}
# Model settings the openai harness reads, by promptfoo's name for them.
_SETTINGS = {"temperature": "temperature", "max_tokens": "max_tokens", "seed": "seed"}
_BASE_URL_KEYS = ("apiBaseUrl", "baseUrl", "basePath", "apiHost")


def _openai_model(ident: str) -> str | None:
    """The model of an ``openai:`` id that names a chat model, else None."""
    parts = ident.split(":")
    if parts[0] != "openai":
        return None
    if len(parts) == 2 and parts[1]:
        return parts[1]
    if len(parts) >= 3 and parts[1] == "chat" and parts[2]:
        return ":".join(parts[2:])
    return None


def _compatible(ident: str) -> tuple[str, str, str | None] | None:
    """(model, base URL, key variable) for a prefix in ``_COMPATIBLE``."""
    prefix, _, rest = ident.partition(":")
    if prefix not in _COMPATIBLE or not rest:
        return None
    if prefix == "ollama":
        kind, _, model = rest.partition(":")
        if kind == "chat" and model:
            rest = model
        elif kind in ("completion", "embeddings", "embedding"):
            return None
    url, key = _COMPATIBLE[prefix]
    return rest, url, key


def _scalar(value: Any) -> Arg | None:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)) and abs(value) < 1e15:
        return value
    if isinstance(value, str):
        return value
    return None


def _spec(ident: str, label: str, config: dict[str, Any]) -> VariantSpec:
    model = _openai_model(ident)
    url: str | None = None
    key: str | None = "OPENAI_API_KEY"
    if model is None:
        found = _compatible(ident)
        if found is None:
            return VariantSpec(label=label, harness=None)
        model, url, key = found
    for name in _BASE_URL_KEYS:
        value = config.get(name)
        if isinstance(value, str) and value.strip():
            url = value if "://" in value else f"https://{value}/v1"
            break
    env = config.get("apiKeyEnvar")
    if isinstance(env, str) and env.strip():
        key = env
    options: list[tuple[str, Arg]] = []
    if url is not None:
        options.append(("base_url", url))
    if key is not None and key != "OPENAI_API_KEY":
        options.append(("api_key_env", key))
    notes: list[str] = []
    for name, value in config.items():
        setting = _SETTINGS.get(name)
        literal = _scalar(value)
        if setting is not None and literal is not None:
            options.append((setting, literal))
        elif name not in _BASE_URL_KEYS and name != "apiKeyEnvar":
            notes.append(
                f"Not imported, from the provider's config: {name} = {describe_actual(value)}"
            )
    return VariantSpec(
        label=label,
        harness=f"openai:{model}",
        options=tuple(options),
        secrets=() if key is None else (key,),
        notes=tuple(notes),
    )


def _entries(raw: Any) -> list[tuple[str, str | None, dict[str, Any]]]:
    """(id, label, config) for each provider, whichever of promptfoo's spellings it uses."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[tuple[str, str | None, dict[str, Any]]] = []
    for item in items:
        if isinstance(item, str):
            out.append((item, None, {}))
        elif isinstance(item, dict) and isinstance(item.get("id"), str):
            label = item.get("label")
            config = item.get("config")
            out.append(
                (
                    item["id"],
                    label if isinstance(label, str) else None,
                    config if isinstance(config, dict) else {},
                )
            )
        elif isinstance(item, dict) and len(item) == 1:
            # The mapping spelling: `- openai:gpt-4o: {config: {...}}`.
            ((ident, body),) = item.items()
            body = body if isinstance(body, dict) else {}
            label, config = body.get("label"), body.get("config")
            out.append(
                (
                    str(ident),
                    label if isinstance(label, str) else None,
                    config if isinstance(config, dict) else {},
                )
            )
        else:
            out.append((describe_actual(item, 120), None, {}))
    return out


def variants_of(raw: Any) -> tuple[VariantSpec, ...]:
    """One ``VariantSpec`` per provider, labels made unique."""
    specs: list[VariantSpec] = []
    seen: set[str] = set()
    for ident, label, config in _entries(raw):
        name = label or ident
        n = 2
        base = name
        while name in seen:
            name = f"{base}-{n}"
            n += 1
        seen.add(name)
        specs.append(_spec(ident, name, config))
    return tuple(specs)


def grader_model(provider: Any) -> tuple[str | None, str | None]:
    """The judge model for a grader the file named (``openai:gpt-4o`` → ``gpt-4o``), and a note
    naming a grader anpord cannot address by model id alone."""
    if provider is None:
        return None, None
    ident = provider
    if isinstance(provider, dict):
        ident = provider.get("id", provider.get("text"))
        if isinstance(ident, dict):
            ident = ident.get("id")
    if not isinstance(ident, str):
        return None, f"The file's grader: {describe_actual(provider, 200)}"
    model = _openai_model(ident)
    if model is not None:
        return model, None
    return None, (
        f"The file's grader: {ident}. Set the judge model for it in evals.config.py "
        "(define_eval_config(judge=...)) or with model= here."
    )
