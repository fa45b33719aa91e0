"""How ``anpord`` ends: nothing a Python agent (which runs in anpord's process) left for the
interpreter's exit to finish is lost. Its atexit handlers run, a file it kept open is flushed as
the exit closes it, a non-daemon thread it started is waited for. An exit made faster by leaving
the objects alive at the end out of the cyclic collector (``gc.freeze()``) or by ``os._exit``
would lose the file's buffer: a module's globals are freed by that collector."""

from __future__ import annotations

import json
from typing import Any

from project_support import END, eval_file

CONFIG = """
from anpord import define_eval_config

config = define_eval_config(harness="python:leaving:agent", timeout=30)
"""

# An agent that leaves work for the interpreter's exit: a log it writes to and never flushes or
# closes, an atexit handler, and a non-daemon thread that writes a file a while after the run.
LEAVING_AGENT = '''
import atexit, json, threading, time
from pathlib import Path

log = open("agent.log", "w")  # buffered, never flushed or closed by the agent


def _at_exit():
    Path("at_exit.json").write_text(json.dumps({"log_open": not log.closed}))


atexit.register(_at_exit)


def _late():
    time.sleep(0.5)
    Path("late.txt").write_text("written after the run")


async def agent(turn):
    log.write(f"answered {turn.input}\\n")
    if turn.input == "start the late writer":
        threading.Thread(target=_late, daemon=False).start()
    return "done"
'''


def test_an_agents_open_file_atexit_handler_and_thread_all_finish_at_the_exit(make_project: Any) -> None:
    project = make_project(
        {"leaving.py": LEAVING_AGENT,
         "evals/leave.eval.py": eval_file(f"""
            @define_eval(each=["one", "two", "start the late writer"])
            async def test(t, row):
                await t.send(row)
                t.check(t.reply, equals("done"))
                {END}
        """)},
        config=CONFIG,
    )
    run = project.run()
    assert run.code == 0, run.output
    lines = (project.folder / "agent.log").read_text().splitlines()
    assert sorted(lines) == ["answered one", "answered start the late writer", "answered two"]
    # The handler ran, before the exit closed the agent's file.
    assert json.loads((project.folder / "at_exit.json").read_text()) == {"log_open": True}
    assert (project.folder / "late.txt").read_text() == "written after the run"
