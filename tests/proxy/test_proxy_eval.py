"""``anpord eval`` with ``Variant(model_proxy=True)``: a command agent calls its model at
``OPENAI_BASE_URL`` with the ``OPENAI_API_KEY`` it was given; the proxy forwards to the caller's
upstream (a scripted model server on the host) with the real key, and the call is a
``model.called`` event in the trial's record. Under bwrap with the network closed the agent
reaches its proxy and nothing else (a listener on the host stays out of reach). ``--replay RUN``
then re-runs the suite with the upstream gone: every answer comes from the recording; a request
it does not hold makes the trial void, naming it."""

from __future__ import annotations

import json
import socket
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import assert_no_key_kept
from mocks_support import write_agent
from project_support import eval_file

from anpord.testing.model_server import ModelServer, rule, text

KEY = "sk-e2e-proxy-key-0123456789abcdefQW"

AGENT = r'''
import json, os, socket, sys, urllib.request
base, key = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
prompt = os.environ["ANPORD_PROMPT"]
body = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": prompt}]}).encode()
req = urllib.request.Request(base + "/chat/completions", body,
                             {"Content-Type": "application/json", "Authorization": "Bearer " + key})
try:
    with urllib.request.urlopen(req, timeout=20) as r:
        answer = json.loads(r.read())["choices"][0]["message"]["content"]
except urllib.error.HTTPError as exc:
    answer = "HTTP %d %s" % (exc.code, exc.read().decode()[:300])
try:
    socket.create_connection(("127.0.0.1", int(os.environ["HOST_PORT"])), timeout=3).close()
    host = True
except OSError:
    host = False
print(json.dumps({"answer": answer, "key_is_real": key == os.environ.get("REAL_KEY_FOR_TEST"),
                  "host": host, "base": base}))
'''

CASES = eval_file('''
    @define_eval
    async def ask(t):
        await t.send(PROMPT)
        out = json.loads(t.reply)
        t.check(out["answer"], equals("answer: " + PROMPT)).label("answer")
        t.check(out["key_is_real"], equals(False)).label("stand-in key")
        t.check(out["host"], equals(EXPECT_HOST)).label("host reach")
''', imports="import os\nPROMPT = os.environ.get('PROMPT', 'what is two plus two')\n"
             "EXPECT_HOST = os.environ['EXPECT_HOST'] == '1'\n")


def _config(agent: Path, sandbox: str, upstream: str, host_port: int) -> str:
    python = "python3" if sandbox == "bwrap" else sys.executable
    return ("from anpord import Variant, define_eval_config\n"
            "config = define_eval_config(timeout=60, variants=[Variant(name='cmd', sandbox=%r, "
            "harness=%r, mounts=[%r], model_proxy=True, secrets=['OPENAI_API_KEY'], "
            "env={'OPENAI_BASE_URL': %r, 'HOST_PORT': %r})])\n"
            % (sandbox, f"command:{python} {agent}", str(agent.parent), upstream, str(host_port)))


def _listener() -> socket.socket:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    return s


def _calls(run: Any, case: str) -> list[dict[str, Any]]:
    reading = run.reading()
    return [e.data for e in reading.events(reading.trial(case)) if e.type == "model.called"]


@pytest.mark.parametrize("sandbox", ["local", "bwrap"])
def test_an_agents_model_calls_go_through_its_proxy(make_project: Any, tmp_path: Path, sandbox: str) -> None:
    agent = write_agent(tmp_path / "agents", "model_agent.py", AGENT)
    host = _listener()
    with ModelServer([rule(None, text("answer: {input}"))]) as server:
        project = make_project({"evals/ask.eval.py": CASES},
                               config=_config(agent, sandbox, server.url, host.getsockname()[1]))
        env = {"OPENAI_API_KEY": KEY, "REAL_KEY_FOR_TEST": KEY, "EXPECT_HOST": "1" if sandbox == "local" else "0"}
        run = project.run("--json", timeout=180, env=env)
        line = run.result("ask")
        assert line["verdict"] == "passed", (line["reason"], line["assertions"], run.trial("ask")["logs"])
        [received] = server.requests
        assert received["_headers"]["Authorization"] == f"Bearer {KEY}"
    host.close()
    [call] = _calls(run, "ask")
    assert (call["source"], call["provider"], call["operation"], call["status"]) == ("proxy", "openai", "chat", "completed")
    assert call["input_tokens"] and call["output_tokens"]
    assert call["upstream"] == server.url
    # The trial's usage counts the proxy's call (the command agent reported none of its own).
    assert line["usage"]["input_tokens"] == call["input_tokens"]
    # No artifact holds the key.
    assert_no_key_kept(run, KEY)


def test_replay_answers_from_the_recording_and_voids_a_request_it_lacks(make_project: Any, tmp_path: Path) -> None:
    agent = write_agent(tmp_path / "agents", "model_agent.py", AGENT)
    host = _listener()
    port = host.getsockname()[1]
    with ModelServer([rule(None, text("answer: {input}"))]) as server:
        project = make_project({"evals/ask.eval.py": CASES}, config=_config(agent, "local", server.url, port))
        first = project.run("--json", timeout=180, env={"OPENAI_API_KEY": KEY, "EXPECT_HOST": "1"})
        assert first.result("ask")["verdict"] == "passed", first.output
        url = server.url
    # The upstream is gone, and no key is set: the replay needs neither.
    env = {"OPENAI_API_KEY": "", "EXPECT_HOST": "1"}
    project.write({"evals/evals.config.py": _config(agent, "local", url, port).replace(
        "secrets=['OPENAI_API_KEY'], ", "")})
    again = project.run("--json", "--replay", first.run_dir.name, timeout=180, env=env)
    line = again.result("ask")
    assert line["verdict"] == "passed", (line["reason"], again.trial("ask")["logs"])
    [call] = _calls(again, "ask")
    assert call["replayed"] is True and call["status"] == "completed"
    assert again.run_json()["options"]["replay"] == str(first.run_dir.resolve())
    # A prompt the recording never saw: void, naming the request.
    changed = project.run("--json", "--replay", str(first.run_dir), timeout=180, env={**env, "PROMPT": "something else"})
    assert changed.code == 1, changed.output
    line = changed.result("ask")
    assert line["verdict"] == "void", line
    assert "--replay" in line["reason"] and "POST /v1/chat/completions (model scripted)" in line["reason"]
    assert "holds 1 call for this trial, 1 not replayed yet" in line["reason"]
    # A run that does not exist: exit 2, one line.
    missing = project.run("--replay", "nosuchrun", timeout=60, env=env)
    assert missing.code == 2 and "Traceback" not in missing.stderr, missing.output
    # An empty one (``--replay "$RUN"`` with RUN unset) is no run: exit 2, never a live run.
    for empty in (["--replay", ""], ["--replay="], ["--resume", " "]):
        refused = project.run(*empty, timeout=60, env=env)
        assert refused.code == 2 and "needs a run" in refused.stderr and "Traceback" not in refused.stderr, refused.output
    host.close()


LOOPING = r'''
import json, os, urllib.request
base, key = os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"]
for i in range(50):  # far more calls than the limit allows: the trial must be stopped
    body = json.dumps({"model": "scripted", "messages": [{"role": "user", "content": "call %d" % i}]}).encode()
    req = urllib.request.Request(base + "/chat/completions", body,
                                 {"Content-Type": "application/json", "Authorization": "Bearer " + key})
    with urllib.request.urlopen(req, timeout=20) as r:
        r.read()
print("made every call")
'''


def test_proxied_calls_count_toward_the_trials_token_limit(make_project: Any, tmp_path: Path) -> None:
    agent = write_agent(tmp_path / "agents", "looping_agent.py", LOOPING)
    with ModelServer([rule(None, text("a reply of five words"))], latency=0.05) as server:
        config = _config(agent, "local", server.url, 9).replace("model_proxy=True,", "model_proxy=True, token_limit=40,")
        project = make_project({"evals/loop.eval.py": eval_file('''
            @define_eval
            async def loop(t):
                await t.send("go")
        ''')}, config=config)
        run = project.run("--json", timeout=180, env={"OPENAI_API_KEY": KEY})
        served = len(server.requests)
    line = run.result("loop")
    assert line["verdict"] == "failed" and line["reason"].startswith("token limit reached: "), line
    assert "of 40" in line["reason"]
    assert served < 50  # stopped, not left to make every call
    calls = _calls(run, "loop")
    assert calls and all(c["source"] == "proxy" for c in calls)


def test_a_price_registered_in_the_config_prices_proxied_calls_and_the_runs_cost_limit(
        make_project: Any, tmp_path: Path) -> None:
    """``register_price`` runs in the runner's process; the proxy's process prices the calls it
    records, so it is sent the registered prices with the variant's."""
    agent = write_agent(tmp_path / "agents", "model_agent.py", AGENT)
    with ModelServer([rule(None, text("answer: {input}"))]) as server:
        config = ("import anpord.models\n"
                  "anpord.models.register_price('scripted', input=10000.0, output=10000.0)\n"
                  + _config(agent, "local", server.url, 9))
        project = make_project({"evals/ask.eval.py": CASES}, config=config)
        run = project.run("--json", "--max-run-cost", "0.05", "--trials", "3", "--max-concurrency", "1",
                          timeout=180, env={"OPENAI_API_KEY": KEY, "EXPECT_HOST": "0"})
    results = sorted(run.results(), key=lambda r: r["trial"])
    reading = run.reading()
    calls = [e.data for e in reading.events(reading.trials[0]) if e.type == "model.called"]
    tokens = calls[0]["input_tokens"] + calls[0]["output_tokens"]
    assert calls[0]["cost"] == pytest.approx(tokens * 10000.0 / 1e6)
    assert results[0]["usage"]["cost"] == pytest.approx(calls[0]["cost"])
    # The first trial alone spends more than the limit: the other two are not run.
    assert [r["verdict"] for r in results][1:] == ["void", "void"], results
    assert run.json()["run_cost"]["reached"] is True
