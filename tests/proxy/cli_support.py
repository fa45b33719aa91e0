"""A real coding CLI's case against the scripted upstream (``proxy_support.Upstream``), through
the trial's model proxy: the one case each CLI's test runs, the run made with the upstream up,
what the trial recorded, and the replay made with the upstream gone."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from project_support import eval_file
from proxy_support import Loop, Upstream

REPLY = "Done: all good."  # what the upstream answers every call

HELLO = eval_file(f'''
    @define_eval(source=files({{"README.md": "a repo\\n"}}))
    async def hello(t):
        turn = await t.send("say hello")
        t.succeeded()
        t.check(turn.message, includes({REPLY!r})).label("answer")
''')


def run_hello(make_project: Any, config: Callable[[str], str], env: Mapping[str, str]) -> tuple[Any, Any, list[dict[str, Any]]]:
    """``HELLO`` run once, its config made for the upstream's URL (``config(url)``): the project,
    the run (its case passed) and every request the upstream got."""
    loop = Loop()
    upstream = Upstream(reply=REPLY, gap=0.0)
    loop.run(upstream.start())
    try:
        project = make_project({"evals/hello.eval.py": HELLO}, config=config(upstream.url))
        run = project.run("--json", timeout=300, env=dict(env))
        line = run.result("hello")
        assert line["verdict"] == "passed", (line["reason"], line["assertions"], run.trial("hello")["logs"])
        return project, run, list(upstream.seen)
    finally:
        loop.run(upstream.stop())
        loop.close()


def model_calls(run: Any, case: str = "hello") -> list[dict[str, Any]]:
    reading = run.reading()
    return [e.data for e in reading.events(reading.trial(case)) if e.type == "model.called"]


def assert_no_key_kept(run: Any, key: str) -> None:
    """No file of the run holds ``key`` (the CLI had a stand-in; the proxy sent the real one)."""
    for path in Path(run.run_dir).rglob("*"):
        if path.is_file():
            assert key not in path.read_text(errors="replace"), path


def assert_replays(project: Any, config: Callable[[str], str], run: Any, key_variable: str) -> None:
    """``HELLO`` again with ``--replay`` of ``run``, the upstream gone and no key set: it passes,
    and each of its calls is answered from the recording, matched on the same request keys."""
    project.write({"evals/evals.config.py": config("http://127.0.0.1:9")})
    again = project.run("--json", "--replay", run.run_dir.name, timeout=300, env={key_variable: ""})
    line = again.result("hello")
    assert line["verdict"] == "passed", (line["reason"], again.trial("hello")["logs"])
    recorded, replayed = model_calls(run), model_calls(again)
    assert len(replayed) == len(recorded) and all(c.get("replayed") for c in replayed)
    assert [c["request_key"] for c in replayed] == [c["request_key"] for c in recorded]
