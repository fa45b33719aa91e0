"""Concurrent turns of an async Python agent awaiting one shared future — a client or server
started lazily by the first turn and awaited by every turn until it is up — all get its result.
Before, each turn started while the future was pending failed with "await wasn't used with future"."""

from __future__ import annotations

from typing import Any

from project_support import eval_file

AGENT = """
import asyncio

_client = None


async def _connect():
    await asyncio.sleep(0.05)
    return "connected"


async def agent(turn):
    global _client
    if _client is None:  # one start, however many turns ask at once
        _client = asyncio.ensure_future(_connect())
    return f"{await _client} {turn.input}"
"""


def test_every_concurrent_turn_awaiting_a_shared_start_up_gets_its_result(make_project: Any) -> None:
    project = make_project({
        "agents/shared.py": AGENT,
        "evals/shared.eval.py": eval_file("""
            @define_eval(each=list(range(20)))
            async def shared(t, row):
                await t.send(f"hello {row}")
                t.check(t.reply, equals(f"connected hello {row}"))
        """),
    }, config="""
from anpord import define_eval_config
config = define_eval_config(harness="python:agents.shared:agent", max_concurrency=10, timeout=30)
""")
    run = project.run("--json")
    assert run.code == 0, run.output
    assert set(run.verdicts().values()) == {"passed"} and len(run.results()) == 20, run.verdicts()
