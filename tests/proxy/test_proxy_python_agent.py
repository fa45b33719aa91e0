"""A Python agent with ``Variant(model_proxy=True)`` calls its model through ``turn.model_proxy``
(the ``openai`` SDK given ``base_url("openai")`` and ``api_key("openai")``): it never holds the
real key, each call is a ``model.called`` event of its trial, and — its model having no price in
the table — the call is priced with the variant's ``options["pricing"]``, which is the trial's
cost (a Python agent that reports no usage has its totals from the proxy)."""

from __future__ import annotations

from typing import Any

import pytest
from project_support import eval_file

from anpord.testing.model_server import ModelServer, rule, text

KEY = "sk-python-agent-real-0123456789abcdef"

AGENT = '''
import os
from openai import AsyncOpenAI, OpenAI

async def agent(turn):
    proxy = turn.model_proxy
    client = AsyncOpenAI(base_url=proxy.base_url("openai"), api_key=proxy.api_key("openai"), max_retries=0)
    answer = await client.chat.completions.create(model="house-7", messages=[{"role": "user", "content": turn.input}])
    await client.close()
    held = proxy.api_key("openai")
    return f"{answer.choices[0].message.content} | {held != os.environ.get('OPENAI_API_KEY')} | {proxy.url == proxy.env['ANPORD_MODEL_PROXY_URL']}"

def sync_agent(turn):
    proxy = turn.model_proxy
    client = OpenAI(base_url=proxy.base_url("openai"), api_key=proxy.api_key("openai"), max_retries=0)
    answer = client.chat.completions.create(model="house-7", messages=[{"role": "user", "content": turn.input}])
    client.close()
    return f"{answer.choices[0].message.content} | sync"
'''

CASE = eval_file('''
    @define_eval
    async def ask(t):
        await t.send("hello there")
        t.check(t.reply, includes("answer: hello there")).label("answer")
''')


def _config(upstream: str) -> str:
    common = (f"model='house-7', model_proxy=True, env={{'OPENAI_BASE_URL': {upstream!r}}}, "
              "options={'pricing': {'input': 1.0, 'output': 2.0}}")
    return ("from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=60, variants=[\n"
            f"    Variant(name='async', harness='python:agents.proxied:agent', {common}),\n"
            f"    Variant(name='sync', harness='python:agents.proxied:sync_agent', {common}),\n"
            "    Variant(name='bare', harness='python:agents.proxied:agent', model='house-7')])\n")


def test_a_python_agent_calls_its_model_through_turn_model_proxy(make_project: Any) -> None:
    with ModelServer([rule(None, text("answer: {input}"))]) as server:
        project = make_project({"agents/proxied.py": AGENT, "evals/ask.eval.py": CASE}, config=_config(server.url))
        run = project.run("--json", timeout=180, env={"OPENAI_API_KEY": KEY})
        keys = [r["_headers"].get("Authorization") for r in server.requests]
    reading = run.reading()
    for variant in ("async", "sync"):
        [trial] = [t for t in reading.trials if t.variant == variant]
        assert trial.verdict == "passed", (trial.reason, trial.logs)
        [call] = [e.data for e in reading.events(trial) if e.type == "model.called"]
        assert (call["source"], call["model"], call["status"]) == ("proxy", "house-7", "completed")
        inp, out = call["input_tokens"], call["output_tokens"]
        assert inp and out
        # Priced with the variant's own table (house-7 is in no built-in one).
        assert call["cost"] == pytest.approx((inp * 1.0 + out * 2.0) / 1e6)
        assert trial.usage["cost"] == pytest.approx(call["cost"])
    [mine] = [t for t in reading.trials if t.variant == "async"]
    answer = next(e.data["text"] for e in reading.events(mine) if e.type == "message.completed"
                  and e.data.get("role") == "assistant")
    assert answer.endswith("| True | True"), answer  # a stand-in, not the real key; url is the address
    # The upstream got the real key, once per proxied trial; without model_proxy, turn.model_proxy is None.
    assert keys == [f"Bearer {KEY}"] * 2, keys
    [bare] = [t for t in reading.trials if t.variant == "bare"]
    assert bare.verdict == "failed" and "NoneType" in (bare.reason + str(bare.error)), bare.reason
