"""The request cache: a repeated request in the same trial position is answered from disk, a
different trial index or any changed parameter is a miss, and a corrupt entry is ignored."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from anpord.models import CacheScope, ChatClient, RequestCache
from anpord.testing.model_server import ModelServer


def run_calls(url: str, folder: Path, calls: list[tuple[Any, str, dict[str, Any]]]) -> list[Any]:
    """Each call is (trial index, prompt, extra params); one scope per trial index."""

    async def go() -> list[Any]:
        scopes: dict[Any, CacheScope] = {}
        async with ChatClient(url, cache=RequestCache(folder)) as client:
            out = []
            for trial, prompt, params in calls:
                scope = scopes.setdefault(trial, CacheScope(trial))
                out.append(
                    await client.chat(
                        [{"role": "user", "content": prompt}],
                        model="gpt-4o-mini",
                        cache_scope=scope,
                        **params,
                    )
                )
            return out

    return asyncio.run(go())


def test_a_cached_answer_is_replayed_without_a_request(model_server: Any, tmp_path: Path) -> None:
    server: ModelServer = model_server()
    first = run_calls(server.url, tmp_path, [(0, "hello", {})])[0]
    again = run_calls(server.url, tmp_path, [(0, "hello", {})])[0]
    assert len(server.requests) == 1
    assert (first.cached, again.cached) == (False, True)
    assert again.text == first.text == "echo: hello"
    assert again.usage == first.usage and again.cost == first.cost and again.cost is not None


def test_trials_and_parameters_are_cached_apart(model_server: Any, tmp_path: Path) -> None:
    server: ModelServer = model_server()
    run_calls(server.url, tmp_path, [(0, "hello", {})])
    replay = run_calls(
        server.url,
        tmp_path,
        [
            (1, "hello", {}),  # another trial: its own draw
            (0, "hello", {"temperature": 0.5}),  # another parameter
            (0, "hello", {"seed": 3}),
            (0, "hello!", {}),  # another message
            (0, "hello", {}),  # the same as before: a hit
        ],
    )
    assert [r.cached for r in replay] == [False, False, False, False, True]
    assert len(server.requests) == 5


def test_the_same_request_twice_in_one_trial_is_two_entries(
    model_server: Any, tmp_path: Path
) -> None:
    server: ModelServer = model_server()
    run_calls(server.url, tmp_path, [(0, "same", {}), (0, "same", {})])
    assert len(server.requests) == 2
    replay = run_calls(server.url, tmp_path, [(0, "same", {}), (0, "same", {}), (0, "same", {})])
    assert [r.cached for r in replay] == [True, True, False]


def test_a_corrupt_entry_is_a_miss_and_is_rewritten(model_server: Any, tmp_path: Path) -> None:
    server: ModelServer = model_server()
    run_calls(server.url, tmp_path, [(0, "hello", {})])
    entries = list(tmp_path.rglob("*.json"))
    assert len(entries) == 1
    entries[0].write_text('{"format": 1, "response": {"choi')
    replay = run_calls(server.url, tmp_path, [(0, "hello", {})])[0]
    assert replay.cached is False and replay.text == "echo: hello"
    assert len(server.requests) == 2
    assert run_calls(server.url, tmp_path, [(0, "hello", {})])[0].cached is True
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")], "a temp file was left"


def test_failed_calls_are_not_cached(model_server: Any, tmp_path: Path) -> None:
    from anpord.testing.model_server import malformed, rule

    server: ModelServer = model_server([rule("odd", fault=malformed())])
    for _ in range(2):
        try:
            run_calls(server.url, tmp_path, [(0, "odd", {})])
        except Exception:  # noqa: BLE001 - the malformed answer raises each time
            pass
    assert len(server.requests) == 2
    assert not list(tmp_path.rglob("*.json"))
