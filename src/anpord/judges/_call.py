"""One judge call: a question to a model, answered with one declared choice and a short reason.

The model answers through the most structured means its endpoint offers — a forced tool call,
else a JSON-schema response format, else two lines of plain text. A 400 that names the request
field an endpoint lacks (``tools``, ``response_format``; also ``temperature`` or ``seed``, which
some models refuse) is remembered per endpoint and model for the rest of the process, and the
call goes on without it: only the first call pays for finding out. Temperature 0 and a fixed
seed by default, so a judge is as repeatable as its server allows.

Anything short of a declared choice — a timeout, a provider error, a refusal, an answer that
does not parse or names another choice — raises ``JudgeFailed`` with the reason, never a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._render import redact_before_cut
from ._endpoint import Endpoint
from ._prompts import SYSTEM_PROMPT, format_instructions

if TYPE_CHECKING:
    from ..models import CacheScope, ChatClient, ChatResponse

__all__ = ["SEED", "TOOL_NAME", "JudgeFailed", "JudgeReply", "ask", "forget_endpoints"]

TOOL_NAME = "grade"
SEED = 1234
REASON_LIMIT = 1_000
MODES = ("tool", "json", "text")
# Request fields a mode cannot do without: once an endpoint refuses one, the mode is skipped.
_NEEDS = {"tool": "tools", "json": "response_format"}
# How a provider's 400 names a field it does not take, in the order they are looked for.
_FIELD_WORDS = (
    (
        "response_format",
        ("response_format", "response format", "json_schema", "json schema", "structured output"),
    ),
    ("tools", ("tool", "function")),
    ("temperature", ("temperature",)),
    ("seed", ("seed",)),
)
_REFUSAL_STATUSES = frozenset({400, 404, 422, 501})

# (base URL, model) → request fields that endpoint refused.
_refused: dict[tuple[str, str], set[str]] = {}


def forget_endpoints() -> None:
    """Forget what endpoints were found to lack (for tests that change a server's abilities)."""
    _refused.clear()


class JudgeFailed(Exception):
    """The judge gave no usable answer. ``response`` is the answer that could not be used, when
    there was one: its tokens were spent all the same."""

    def __init__(self, reason: str, response: ChatResponse | None = None):
        super().__init__(reason)
        self.reason = reason
        self.response = response


@dataclass(frozen=True)
class JudgeReply:
    choice: str
    reason: str
    mode: str  # tool, json or text: how the answer came
    response: ChatResponse


def _schema(choices: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "Why, in one or two sentences."},
            "choice": {"type": "string", "enum": list(choices)},
        },
        "required": ["reason", "choice"],
        "additionalProperties": False,
    }


def _body(
    mode: str, endpoint: Endpoint, question: str, choices: Sequence[str], refused: set[str]
) -> dict[str, Any]:
    from ..models import json_schema_format

    body: dict[str, Any] = {
        "model": endpoint.model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": f"{question}\n\n{format_instructions(mode, choices, TOOL_NAME)}",
            },
        ],
    }
    if "temperature" not in refused:
        body["temperature"] = 0
    if "seed" not in refused:
        body["seed"] = SEED
    if mode == "tool":
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": TOOL_NAME,
                    "description": "Record your grade.",
                    "parameters": _schema(choices),
                },
            }
        ]
        body["tool_choice"] = {"type": "function", "function": {"name": TOOL_NAME}}
    elif mode == "json":
        body["response_format"] = json_schema_format(_schema(choices), TOOL_NAME)
    return body


def _refused_field(exc: Exception, body: Mapping[str, Any]) -> str | None:
    """The request field a provider's error says it does not take, if it names one we sent."""
    from ..models import ProviderError, RateLimitedError

    if not isinstance(exc, ProviderError) or isinstance(exc, RateLimitedError):
        return None
    if exc.status not in _REFUSAL_STATUSES:
        return None
    text = (
        exc.body.lower()
    )  # the provider's own words: never the model id or host we put around them
    for field, words in _FIELD_WORDS:
        if field in body and any(w in text for w in words):
            return field
    return None


async def ask(
    client: ChatClient,
    endpoint: Endpoint,
    question: str,
    choices: Sequence[str],
    scope: CacheScope | None,
) -> JudgeReply:
    """Ask ``question``; the answer must be one of ``choices``. Raises ``JudgeFailed``."""
    from ..models import ModelError

    refused = _refused.setdefault((endpoint.base_url, endpoint.model), set())
    while True:
        mode = next(m for m in MODES if _NEEDS.get(m) not in refused)
        body = _body(mode, endpoint, question, choices, refused)
        try:
            response = await client.complete(body, cache_scope=scope)
        except ModelError as exc:
            field = _refused_field(exc, body)
            if field is None:
                raise JudgeFailed(f"the judge model could not answer: {exc}") from None
            refused.add(field)  # then ask again without it
            continue
        choice, reason = read_answer(response, choices)
        return JudgeReply(choice, reason, mode, response)


# -- reading the answer ------------------------------------------------------------------------

_CHOICE_LINE = re.compile(
    r"^[\s*_#>-]*choice[\s*_]*[:：=][\s*_]*(.+?)\s*$", re.IGNORECASE | re.MULTILINE
)
_REASON_LINE = re.compile(
    r"^[\s*_#>-]*reason(?:ing)?[\s*_]*[:：=][\s*_]*(.+?)\s*$", re.IGNORECASE | re.MULTILINE
)
_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_WRAPPING = " \t\n\"'`*_()[]{}<>.,;:!"


def _preview(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _json_fields(text: str) -> dict[str, Any] | None:
    """The JSON object in ``text`` (a code fence around it is fine); None when it is not JSON.
    Raises ``JudgeFailed`` for text that starts as a JSON object but does not parse."""
    stripped = _FENCE.sub("", text.strip())
    if not stripped.startswith("{"):
        return None
    try:
        value = json.loads(stripped)
    except ValueError as exc:
        raise JudgeFailed(
            f"the judge's answer is not valid JSON ({exc}): {_preview(text)}"
        ) from None
    if not isinstance(value, dict):
        return None
    return value


def _text_fields(text: str) -> dict[str, Any]:
    choice = _CHOICE_LINE.findall(text)
    reason = _REASON_LINE.findall(text)
    fields: dict[str, Any] = {"reason": reason[0] if reason else ""}
    if choice:
        fields["choice"] = choice[-1]
    else:
        fields["choice"] = text  # a bare answer ("Y", "(C)") is a choice too
        fields["bare"] = True
    return fields


def _match(raw: Any, choices: Sequence[str]) -> str | None:
    """The declared choice ``raw`` names: exactly, once stripped of quotes, brackets and
    emphasis (``"(C)"``, ``**Y**``), or ignoring case when that names just one."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        raw = str(raw)
    if not isinstance(raw, str):
        return None
    candidate = raw.strip(_WRAPPING)
    if candidate in choices:
        return candidate
    folded = [c for c in choices if c.casefold() == candidate.casefold()]
    return folded[0] if len(folded) == 1 else None


def read_answer(response: ChatResponse, choices: Sequence[str]) -> tuple[str, str]:
    """(choice, reason) from a judge's answer; raises ``JudgeFailed`` naming what is wrong."""
    first = response.choice
    listed = ", ".join(choices)
    if first.refusal:
        raise JudgeFailed(f"the judge refused: {_preview(first.refusal)}", response)
    if response.finish_reason == "content_filter":
        raise JudgeFailed(
            "the judge's answer was withheld by the provider's content filter", response
        )
    bare = False
    if first.tool_calls:
        call = next((c for c in first.tool_calls if c.name == TOOL_NAME), first.tool_calls[0])
        try:
            fields = json.loads(call.arguments) if call.arguments.strip() else None
        except ValueError:
            fields = None
        if not isinstance(fields, dict):
            raise JudgeFailed(
                f"the judge's {call.name} call has arguments that are not a JSON object: "
                f"{_preview(call.arguments)}",
                response,
            )
    elif first.content and first.content.strip():
        try:
            parsed = _json_fields(first.content)
        except JudgeFailed as exc:
            raise JudgeFailed(exc.reason, response) from None
        fields = parsed if parsed is not None else _text_fields(first.content)
        bare = bool(fields.pop("bare", False))
    else:
        cut = " (it ran out of tokens)" if response.finish_reason == "length" else ""
        raise JudgeFailed(f"the judge gave an empty answer{cut}", response)
    raw = fields.get("choice")
    if raw is None:
        raise JudgeFailed(
            f"the judge's answer names no choice among {listed}: {_preview(str(fields))}", response
        )
    choice = _match(raw, choices)
    if choice is None:
        shown = _preview(raw if isinstance(raw, str) else json.dumps(raw))
        if bare:
            raise JudgeFailed(
                f"the judge's answer names no choice among {listed}: {shown}", response
            )
        raise JudgeFailed(f"the judge chose {shown}, which is not one of: {listed}", response)
    reason = fields.get("reason")
    if isinstance(reason, list):  # some models write their reasons as a list of steps
        reason = " ".join(str(r) for r in reason)
    reason = " ".join(str(reason or "").split())
    if len(reason) > REASON_LIMIT:
        reason = redact_before_cut(reason)
    if len(reason) > REASON_LIMIT:
        reason = reason[: REASON_LIMIT - 1] + "…"
    return choice, reason
