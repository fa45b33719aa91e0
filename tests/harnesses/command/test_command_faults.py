"""Faults, each with a real program: could not start, hangs, forks and exits, prints megabytes,
writes outside its workspace, is cancelled. Each ends cleanly and leaves nothing behind."""

from __future__ import annotations

import asyncio
import itertools
import os
from pathlib import Path

import pytest
from command_support import KINDS, Rig, live_with, of_type, run, write_agent

from anpord import files
from anpord.harnesses import HarnessStartError, TurnRequest
from anpord.harnesses.command import ANSWER_CAP, LOG_CAP

_n = itertools.count()


def token() -> str:
    return f"{8000 + os.getpid() % 1000}.{next(_n)}{os.getpid() % 89}"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("command", "reason"),
    [
        ("no-such-agent --flag", "agent command not found: no-such-agent"),
        ("./agent.sh", "agent command is not executable: ./agent.sh"),
        ("./missing.sh", "agent command not found: ./missing.sh"),
    ],
)
def test_a_program_that_cannot_start_is_a_start_error(
    kind: str, command: str, reason: str, tmp_path: Path
) -> None:
    async def go() -> None:
        async with Rig(
            kind, tmp_path, command, source=files({"agent.sh": "#!/bin/sh\necho hi\n"})
        ) as rig:
            with pytest.raises(HarnessStartError) as info:
                await rig.send("hi")
            assert str(info.value) == reason

    run(go())


def test_bwrap_failing_to_set_up_is_a_start_error_not_an_exit_1(tmp_path: Path) -> None:
    # A mounted folder removed after the sandbox opened: bwrap exits 1 before the program runs.
    shared = tmp_path / "shared"
    shared.mkdir()

    async def go() -> None:
        async with Rig("bwrap", tmp_path, "echo ran", mounts=[str(shared)]) as rig:
            outcome, _ = await rig.send("first")
            assert outcome.message == "ran"
            shared.rmdir()
            with pytest.raises(HarnessStartError) as info:
                await rig.send("second")
            assert str(info.value).startswith(
                "the bwrap sandbox could not start the program: bwrap: Can't find source path"
            ), str(info.value)

    run(go())


def test_a_program_exiting_1_under_bwrap_is_recorded_not_a_start_error(tmp_path: Path) -> None:
    async def go() -> None:
        async with Rig("bwrap", tmp_path, "echo 'bwrap: a line that only looks like one' >&2; exit 1") as rig:
            _, events = await rig.send("hi")
            assert of_type(events, "process.exited")[0]["exit_code"] == 1

    run(go())


def test_exit_127_after_printing_is_recorded_not_a_start_error(tmp_path: Path) -> None:
    async def go() -> None:
        async with Rig("local", tmp_path, "echo 'done, then a missing tool'; missing-tool") as rig:
            outcome, events = await rig.send("hi")
            assert outcome.message == "done, then a missing tool"
            assert of_type(events, "process.exited")[0]["exit_code"] == 127

    run(go())


@pytest.mark.parametrize("kind", KINDS)
def test_a_hanging_agent_is_killed_by_the_timeout(kind: str, tmp_path: Path) -> None:
    t = token()

    async def go() -> None:
        async with Rig(kind, tmp_path, f"echo working; (setsid sleep {t} &); sleep {t}") as rig:
            # The runner's per-trial timeout cancels the task running the turn; the cancellation
            # returns (it would hang were it held by the processes, which sleep for hours).
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(rig.send("hi"), 0.7)
            assert live_with(t) == []

    run(go())
    assert live_with(t) == []


@pytest.mark.parametrize("kind", KINDS)
def test_cancel_stops_the_turn_and_its_processes(kind: str, tmp_path: Path) -> None:
    t = token()

    async def go() -> None:
        async with Rig(kind, tmp_path, f"echo started; sleep {t}") as rig:
            events: list = []
            task = asyncio.ensure_future(
                rig.session.run_turn(TurnRequest(input="hi"), events.append)
            )
            while not any(e.type == "log" for e in events):  # the agent has started
                await asyncio.sleep(0.01)
            assert await rig.session.cancel() is True
            outcome = await asyncio.wait_for(task, 60)
            assert outcome.status == "cancelled"
            assert await rig.session.cancel() is False
            assert live_with(t) == []

    run(go())


FORKER = """
import os, subprocess, sys
t = sys.argv[1]
subprocess.Popen(["sleep", t])  # a plain child
subprocess.Popen(["setsid", "sleep", t])  # a new session
if os.fork() == 0:  # a double fork: the grandchild is orphaned
    if os.fork() == 0:
        os.setsid()
        os.execvp("sleep", ["sleep", t])
    os._exit(0)
print("spawned and leaving")
"""


@pytest.mark.parametrize("kind", KINDS)
def test_an_agent_that_forks_children_and_exits_leaves_no_process(
    kind: str, tmp_path: Path, agents: Path
) -> None:
    agent = write_agent(agents, "forker.py", FORKER)
    t = token()

    async def go() -> None:
        async with Rig(kind, tmp_path, f"python3 {agent} {t}", mounts=[str(agents)]) as rig:
            # Not held by the children's open stdout: they sleep for hours.
            outcome, _ = await rig.send("hi")
            assert outcome.message == "spawned and leaving"
            assert live_with(t) == []

    run(go())


SPAMMER = """
import json, sys
line = "y" * 1000 + "\\n"
for _ in range(20_000):  # 20 MB of log
    sys.stdout.write(line)
sys.stdout.write("z" * 3_000_000 + "\\n")  # one 3 MB line
sys.stderr.write("e" * 2_000_000)
print(json.dumps({"type": "message.completed", "text": "finally"}))
"""


def test_an_agent_printing_megabytes_is_capped(tmp_path: Path, agents: Path) -> None:
    agent = write_agent(agents, "spammer.py", SPAMMER)

    async def go() -> None:
        async with Rig("local", tmp_path, f"python3 {agent}") as rig:
            outcome, events = await rig.send("hi")
            assert outcome.message == "finally"  # the event after the flood still arrives
            logged = sum(len(d["message"]) for d in of_type(events, "log"))
            assert logged <= LOG_CAP + 2000
            notes = [d["message"] for d in of_type(events, "log") if d["stream"] == "anpord"]
            assert any("bytes of output not kept: log cap" in n for n in notes)

    run(go())


def test_a_huge_plain_answer_is_cut(tmp_path: Path) -> None:
    async def go() -> None:
        async with Rig("local", tmp_path, "yes answer | head -c 5000000") as rig:
            outcome, events = await rig.send("hi")
            assert outcome.message is not None and len(outcome.message) <= ANSWER_CAP
            assert any("answer cut at" in d["message"] for d in of_type(events, "log"))

    run(go())


WRITER = """
import os, sys
from pathlib import Path
ws = Path(os.environ["ANPORD_WORKSPACE"])
(ws / "inside.txt").write_text("fine")
results = []
for target in sys.argv[1:] + [str(ws.parent / "next-to-workspace.txt")]:
    try:
        Path(target).write_text("escaped")
        results.append("wrote " + target)
    except OSError as exc:
        results.append(f"refused {target}: {exc.strerror}")
print("; ".join(results))
"""


@pytest.mark.parametrize("kind", KINDS)
def test_an_agent_writing_outside_its_workspace(kind: str, tmp_path: Path, agents: Path) -> None:
    agent = write_agent(agents, "writer.py", WRITER)
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "escape.txt"
    home_target = Path.home() / f".anpord-escape-{os.getpid()}"

    async def go() -> None:
        async with Rig(
            kind, tmp_path, f"python3 {agent} {target} {home_target}", mounts=[str(agents)]
        ) as rig:
            outcome, _ = await rig.send("hi")
            assert (rig.instance.workspace / "inside.txt").read_text() == "fine"
            return outcome.message

    message = run(go())
    if kind == "bwrap":
        # Isolated: the host's files and HOME cannot be written.
        assert not target.exists() and not home_target.exists(), message
        assert f"refused {target}" in message and f"refused {home_target}" in message
    else:
        # local isolates files by convention only (documented): the write lands, which is why
        # bwrap exists. What the trial wrote inside its own folders is gone with it.
        assert target.exists()
        target.unlink()
        home_target.unlink(missing_ok=True)
    # nothing_left (conftest) checks the sandbox root, next-to-workspace.txt included, is gone.
