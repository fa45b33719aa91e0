"""The ``openai:`` harness through its protocol (what the runner calls), against a real server:
the request cache across trials, one client per endpoint for the run, and teardown."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from anpord.authoring import Variant
from anpord.events import Event
from anpord.harnesses import HarnessContext, TurnRequest, resolve_harness
from anpord.testing.model_server import rule, text


def run_trials(
    url: str, trials: list[dict[str, Any]], prompt: str = "hello"
) -> tuple[list[list[Event]], Any]:
    """One harness for the run; each trial gets its own context (its cache folder and trial
    index, as the runner sets them) and one turn."""
    harness = resolve_harness("openai:scripted-model")
    variant = Variant(harness="openai:scripted-model", options={"base_url": url})

    async def go() -> list[list[Event]]:
        await harness.setup()
        out = []
        for extra in trials:
            ctx = HarnessContext(
                variant=variant, model=None, sandbox=None, log=lambda m: None,
                cache_dir=extra.get("cache_dir"), trial_index=extra.get("trial_index", 0),
            )
            session = await harness.open_session(ctx, "ses_1")
            events: list[Event] = []
            outcome = await session.run_turn(TurnRequest(input=prompt), events.append)
            assert outcome.status == "completed", outcome
            await session.close()
            out.append(events)
        await harness.teardown()
        return out

    return asyncio.run(go()), harness


def usage_of(events: list[Event]) -> dict[str, Any]:
    return next(dict(e.data) for e in events if e.type == "usage")


def test_the_cache_replays_a_trial_and_keeps_trials_apart(
    model_server: Any, tmp_path: Path
) -> None:
    server = model_server([rule("hello", text("hi there"))])
    cache = tmp_path / "cache"
    first, _ = run_trials(
        server.url, [{"cache_dir": cache, "trial_index": 0}, {"cache_dir": cache, "trial_index": 1}]
    )
    assert len(server.requests) == 2, "each trial index is its own draw"
    again, _ = run_trials(
        server.url, [{"cache_dir": cache, "trial_index": 1}, {"cache_dir": cache, "trial_index": 0}]
    )
    assert len(server.requests) == 2, "the second run was answered from the cache"
    assert [usage_of(t)["cached"] for t in first + again] == [False, False, True, True]
    message = [e for e in again[0] if e.type == "message.completed"]
    assert message[0].data == {"role": "assistant", "text": "hi there"}
    run_trials(server.url, [{"trial_index": 0}])
    assert len(server.requests) == 3, "without cache_dir nothing is cached"


def test_trials_share_one_client_and_teardown_closes_it(model_server: Any) -> None:
    server = model_server(latency=0.01)
    _, harness = run_trials(server.url, [{}, {}, {}])
    assert len(harness.clients.clients) == 0, "teardown released the run's clients"
    assert server.stats()["connections"] == 1, "the trials reused one kept-alive connection"
