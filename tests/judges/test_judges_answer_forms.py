"""The forms a judge model's answer takes, read through a real client from a real scripted server:
what names a declared choice is accepted, anything else is a failure with the reason."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from judge_support import grade

from anpord.judges import Endpoint, JudgeFailed, ask
from anpord.models import ChatClient, RetryPolicy
from anpord.testing.model_server import ModelServer, json_reply, refusal, rule, text, tool_call

ACCEPTED = [
    ("tool-call", grade("partial", "half right"), "partial", "half right"),
    ("bare-letter", text("(C)"), "C", ""),
    ("two-lines", text("Reason: same facts.\nChoice: C"), "C", "same facts."),
    ("markdown", text("**Reasoning:** close enough\n\n**Choice:** `Y`"), "Y", "close enough"),
    ("fenced-json", text('```json\n{"reason": "fine", "choice": "Y"}\n```'), "Y", "fine"),
    ("other-case", json_reply({"reason": "ok", "choice": "Correct"}), "correct", "ok"),
    ("reason-steps", json_reply({"reasons": ["a", "b"], "choice": "N", "reason": ["one", "two"]}), "N", "one two"),
    ("content-not-call", text('{"choice": "E", "reason": "style only"}'), "E", "style only"),
]

REFUSED = [
    ("off-choice", grade("maybe"), "the judge chose 'maybe', which is not one of: Y, N"),
    ("no-choice", json_reply({"reason": "hmm"}), "the judge's answer names no choice among Y, N"),
    ("bad-json", text('{"choice": "Y", "reason": '), "the judge's answer is not valid JSON"),
    ("bad-arguments", tool_call("grade", '{"choice": "Y"'), "the judge's grade call has arguments that are not a JSON object"),
    ("prose", text("I think it is mostly fine."), "the judge's answer names no choice among Y, N"),
    ("refusal", refusal("I can't help with grading that."), "the judge refused: \"I can't help with grading that.\""),
    ("empty", text(""), "the judge gave an empty answer"),
]

CHOICES = {
    "tool-call": ["correct", "partial", "incorrect"],
    "bare-letter": list("ABCDE"),
    "two-lines": list("ABCDE"),
    "other-case": ["correct", "partial", "incorrect"],
    "content-not-call": list("ABCDE"),
}


@pytest.fixture(scope="module")
def server() -> Any:
    rules = [rule(f"form-{name}", reply) for name, reply, *_ in ACCEPTED + REFUSED]
    with ModelServer(rules) as s:
        yield s


def _ask(server: ModelServer, name: str) -> Any:
    async def go() -> Any:
        endpoint = Endpoint(model="judge-model", base_url=server.url, api_key_env="NO_SUCH_KEY", timeout=5)
        async with ChatClient(server.url, api_key_env="NO_SUCH_KEY", retry=RetryPolicy(max_attempts=1)) as client:
            return await ask(client, endpoint, f"form-{name}: grade this", CHOICES.get(name, ["Y", "N"]), None)

    return asyncio.run(go())


@pytest.mark.parametrize(("name", "choice", "reason"), [(n, c, r) for n, _, c, r in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_an_answer_naming_a_declared_choice_is_read(server: ModelServer, name: str, choice: str, reason: str) -> None:
    reply = _ask(server, name)
    assert (reply.choice, reply.reason) == (choice, reason)


@pytest.mark.parametrize(("name", "message"), [(n, m) for n, _, m in REFUSED], ids=[r[0] for r in REFUSED])
def test_anything_else_fails_with_the_reason(server: ModelServer, name: str, message: str) -> None:
    with pytest.raises(JudgeFailed) as caught:
        _ask(server, name)
    assert caught.value.reason.startswith(message), caught.value.reason
    # The answer that could not be used still cost tokens: it travels with the failure.
    assert caught.value.response is not None and caught.value.response.usage.output_tokens is not None
