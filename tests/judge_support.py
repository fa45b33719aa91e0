"""Helpers for the judge and simulated-user tests: projects whose judge model is a scripted
model server on 127.0.0.1 (``anpord.testing.model_server``), and readers for what it was sent.

The agent under test is the core tests' Python agent (``agents.kit:agent``: it echoes what it is
sent); the judge's answers are the server's rules, matched on the judge prompt.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from anpord.judges import SYSTEM_PROMPT
from anpord.testing.model_server import ModelServer, tool_call

JUDGE_MODEL = "judge-model"


def judge_config(url: str | None, *, model: str | None = JUDGE_MODEL, harness: str = "python:agents.kit:agent",
                 timeout: float = 20, **judge: Any) -> str:
    """An evals.config.py whose judge is ``model`` at ``url`` (no judge at all when ``url`` is None)."""
    if url is None:
        setting = ""
    else:
        fields = {"model": model, "base_url": url, **judge}
        setting = ", judge=JudgeConfig(" + ", ".join(f"{k}={v!r}" for k, v in fields.items() if v is not None) + ")"
    return (
        "from anpord import JudgeConfig, define_eval_config\n"
        f"config = define_eval_config(harness={harness!r}, timeout={timeout!r}{setting})\n"
    )


def grade(choice: Any, reason: str = "because", **extra: Any) -> dict[str, Any]:
    """The judge's answer as a call of its ``grade`` tool."""
    return tool_call("grade", {"reason": reason, "choice": choice}, **extra)


def is_judge_request(body: dict[str, Any]) -> bool:
    messages = body.get("messages") or []
    return bool(messages) and messages[0].get("content") == SYSTEM_PROMPT


def judge_requests(server: ModelServer, marker: str | None = None) -> list[dict[str, Any]]:
    """The judge requests the server received (those whose prompt holds ``marker``), oldest first."""
    return [
        r for r in server.requests
        if is_judge_request(r) and (marker is None or marker in prompt_of(r))
    ]


def prompt_of(body: dict[str, Any]) -> str:
    """The last user message of a request: the judge's question, or the agent's latest reply."""
    users = [m for m in body["messages"] if m.get("role") == "user"]
    return str(users[-1]["content"]) if users else ""


def mode_of(body: dict[str, Any]) -> str:
    """How a judge request asked for its answer: a tool call, a JSON schema, or plain text."""
    if "tools" in body:
        return "tool"
    if "response_format" in body:
        return "json"
    return "text"


def judgments(run: Any, case_id: str, trial: int = 0) -> dict[str, Any]:
    """The trial's judgments by name, as ``anpord.results.read_run`` gives them."""
    return {j.name: j for j in run.reading().trial(case_id, index=trial).judgments}


def events_of(run: Any, case_id: str, kind: str, trial: int = 0) -> list[dict[str, Any]]:
    return [e for e in run.events(case_id, trial) if e["type"] == kind]


@pytest.fixture
def model_server() -> Iterator[Callable[..., ModelServer]]:
    """``model_server(rules, latency=0.0, unsupported=())`` → a started server, stopped after the test."""
    started: list[ModelServer] = []

    def start(rules: Sequence[Any] = (), **kwargs: Any) -> ModelServer:
        server = ModelServer(rules, **kwargs).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
