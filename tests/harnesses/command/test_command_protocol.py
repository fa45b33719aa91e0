"""The command protocol, spoken by real agent programs in real sandboxes: environment, event
lines, the answer rule, multi-turn history and input requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from command_support import KINDS, Rig, of_type, run, write_agent

from anpord.harnesses import HarnessSpecError, resolve_harness
from anpord.harnesses.command import CommandHarness, resolve

ENV_AGENT = """
import json, os, sys
keys = ["ANPORD_PROMPT", "ANPORD_PROMPT_FILE", "ANPORD_MODEL", "ANPORD_WORKSPACE", "ANPORD_HOME",
        "ANPORD_SESSION_ID", "ANPORD_HISTORY_FILE", "ANPORD_INPUT_RESPONSES_FILE", "ANPORD_INPUT_FILE"]
report = {k: os.environ.get(k) for k in keys}
report["cwd"] = os.getcwd()
report["stdin"] = sys.stdin.read()
report["prompt_file"] = open(os.environ["ANPORD_PROMPT_FILE"], encoding="utf-8").read()
report["history"] = json.load(open(os.environ["ANPORD_HISTORY_FILE"]))
report["answers"] = json.load(open(os.environ["ANPORD_INPUT_RESPONSES_FILE"]))
report["leak"] = os.environ.get("ANPORD_TEST_LEAK")
print(json.dumps({"type": "message.completed", "text": json.dumps(report)}))
"""


@pytest.mark.parametrize("kind", KINDS)
def test_the_environment_a_program_gets(
    kind: str, tmp_path: Path, agents: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANPORD_TEST_LEAK", "no")
    agent = write_agent(agents, "env_agent.py", ENV_AGENT)

    async def go() -> None:
        async with Rig(kind, tmp_path, f"python3 {agent}", mounts=[str(agents)]) as rig:
            outcome, _ = await rig.send("hello, 'world' \"quoted\" $HOME")
            report = json.loads(outcome.message or "")
            ws = rig.instance.workspace
            assert (
                report["ANPORD_PROMPT"]
                == report["prompt_file"]
                == "hello, 'world' \"quoted\" $HOME"
            )
            assert report["ANPORD_MODEL"] == "test-model"
            assert report["ANPORD_WORKSPACE"] == report["cwd"] == str(ws)
            assert report["ANPORD_HOME"] == str(rig.instance.home)
            assert report["ANPORD_SESSION_ID"] == "ses_test"
            assert report["stdin"] == ""  # stdin is closed
            assert report["history"] == [
                {"role": "user", "content": "hello, 'world' \"quoted\" $HOME"}
            ]
            assert report["answers"] == [] and report["ANPORD_INPUT_FILE"] is None
            assert report["leak"] is None
            # Harness files live outside the workspace.
            for key in ("ANPORD_PROMPT_FILE", "ANPORD_HISTORY_FILE", "ANPORD_INPUT_RESPONSES_FILE"):
                assert not Path(report[key]).is_relative_to(ws)
            assert list(ws.iterdir()) == []

    run(go())


def test_a_long_prompt_is_only_in_the_file(tmp_path: Path, agents: Path) -> None:
    agent = write_agent(agents, "env_agent.py", ENV_AGENT)
    prompt = "x" * 100_000 + "\nend\x01"

    async def go() -> None:
        async with Rig("local", tmp_path, f"python3 {agent}") as rig:
            outcome, _ = await rig.send(prompt)
            report = json.loads(outcome.message or "")
            assert report["ANPORD_PROMPT"] is None
            assert report["prompt_file"] == prompt

    run(go())


def test_a_structured_message_comes_as_text_and_as_json(tmp_path: Path, agents: Path) -> None:
    agent = write_agent(agents, "env_agent.py", ENV_AGENT)
    message = {
        "role": "user",
        "content": [{"type": "text", "text": "look"}, {"type": "file", "name": "a.png"}],
    }

    async def go() -> None:
        async with Rig("local", tmp_path, f"python3 {agent}") as rig:
            outcome, _ = await rig.send(message)
            report = json.loads(outcome.message or "")
            assert report["ANPORD_PROMPT"] == "look"
            assert json.loads(Path(report["ANPORD_INPUT_FILE"]).read_text()) == message

    run(go())


EVENTS_AGENT = """
import json
def out(**e): print(json.dumps(e), flush=True)
out(type="tool.called", call_id="c1", name="get_weather", input={"city": "Brooklyn"})
out(type="tool.result", call_id="c1", name="get_weather", output={"sky": "sunny"})
out(type="usage", input_tokens=10, output_tokens=5, cost=0.001)
out(type="my.custom", anything=[1, 2])
out(type="turn.completed")
print("plain log line")
print('{"not": "an event"}')
print('{"type": broken json')
out(type="message.completed", role="assistant", text="It is sunny.", data={"sky": "sunny"})
"""


@pytest.mark.parametrize("kind", KINDS)
def test_event_lines_become_events_and_other_lines_log(
    kind: str, tmp_path: Path, agents: Path
) -> None:
    agent = write_agent(agents, "events_agent.py", EVENTS_AGENT)

    async def go() -> None:
        async with Rig(kind, tmp_path, f"python3 {agent}", mounts=[str(agents)]) as rig:
            outcome, events = await rig.send("weather?")
            assert (outcome.status, outcome.message, outcome.data) == (
                "completed",
                "It is sunny.",
                {"sky": "sunny"},
            )
            kinds = [e.type for e in events]
            assert kinds[:4] == ["tool.called", "tool.result", "usage", "my.custom"]
            assert of_type(events, "tool.called") == [
                {"call_id": "c1", "name": "get_weather", "input": {"city": "Brooklyn"}}
            ]
            assert of_type(events, "tool.result")[0]["status"] == "completed"  # filled in
            assert of_type(events, "my.custom") == [{"anything": [1, 2]}]
            assert "turn.completed" not in kinds  # reserved for the runner
            logs = [d["message"] for d in of_type(events, "log")]
            assert (
                "plain log line" in logs
                and '{"not": "an event"}' in logs
                and '{"type": broken json' in logs
            )
            assert any("ignored event type 'turn.completed'" in m for m in logs)
            assert of_type(events, "message.completed") == [
                {"role": "assistant", "text": "It is sunny.", "data": {"sky": "sunny"}}
            ]
            assert of_type(events, "process.exited")[0]["exit_code"] == 0

    run(go())


def test_stdout_is_the_answer_when_no_message_event(tmp_path: Path) -> None:
    async def go() -> None:
        async with Rig(
            "local", tmp_path, "echo; echo '  The answer is 42.  '; echo; echo noise >&2; exit 7"
        ) as rig:
            outcome, events = await rig.send("q")
            assert (outcome.status, outcome.message) == ("completed", "The answer is 42.")
            assert of_type(events, "message.completed") == [
                {"role": "assistant", "text": "The answer is 42."}
            ]
            assert {"message": "noise", "stream": "stderr"} in of_type(events, "log")
            # The exit code is recorded, not judged.
            assert of_type(events, "process.exited") == [
                {
                    "command": "echo; echo '  The answer is 42.  '; echo; echo noise >&2; exit 7",
                    "exit_code": 7,
                    "duration": of_type(events, "process.exited")[0]["duration"],
                }
            ]

    run(go())


def test_a_silent_program_has_no_answer(tmp_path: Path) -> None:
    async def go() -> None:
        async with Rig("local", tmp_path, "true") as rig:
            outcome, events = await rig.send("q")
            assert (outcome.status, outcome.message) == ("completed", None)
            assert of_type(events, "message.completed") == []

    run(go())


HISTORY_AGENT = """
import json, os
history = json.load(open(os.environ["ANPORD_HISTORY_FILE"]))
print(" | ".join(f"{m['role']}:{m['content']}" for m in history))
"""


@pytest.mark.parametrize("kind", KINDS)
def test_each_turn_reruns_the_program_with_the_history(
    kind: str, tmp_path: Path, agents: Path
) -> None:
    agent = write_agent(agents, "history_agent.py", HISTORY_AGENT)

    async def go() -> None:
        async with Rig(kind, tmp_path, f"python3 {agent}", mounts=[str(agents)]) as rig:
            first, _ = await rig.send("one")
            second, _ = await rig.send("two")
            assert first.message == "user:one"
            assert second.message == "user:one | assistant:user:one | user:two"

    run(go())


@pytest.mark.parametrize("kind", KINDS)
def test_input_requests_park_the_turn_and_answers_rerun_it(kind: str, tmp_path: Path) -> None:
    agent_dir = Path(__file__).resolve().parents[3] / "examples" / "command_agent" / "agent"
    command = f"python3 {agent_dir}/notes_agent.py"

    async def go() -> None:
        async with Rig(kind, tmp_path, command, source=None, mounts=[str(agent_dir)]) as rig:
            (rig.instance.workspace / "old.txt").write_text("stale")
            outcome, events = await rig.send("delete old.txt")
            assert outcome.status == "waiting" and outcome.message is None
            [request] = of_type(events, "input.requested")
            assert (
                request["request_id"] == "delete:old.txt" and request["tool_name"] == "delete_file"
            )
            assert [o["id"] for o in request["options"]] == ["approve", "deny"]
            assert (rig.instance.workspace / "old.txt").exists()

            outcome, events = await rig.respond(("delete:old.txt", "approve"))
            assert (outcome.status, outcome.message) == ("completed", "Deleted old.txt.")
            assert of_type(events, "input.resolved") == [
                {"request_id": "delete:old.txt", "option_id": "approve"}
            ]
            assert of_type(events, "tool.called") == [
                {"call_id": "c1", "name": "delete_file", "input": {"path": "old.txt"}}
            ]
            assert not (rig.instance.workspace / "old.txt").exists()

    run(go())


ASK_TWICE = """
import json, os
answers = {a["request_id"]: a.get("option_id") for a in json.load(open(os.environ["ANPORD_INPUT_RESPONSES_FILE"]))}
def ask(rid):
    print(json.dumps({"type": "input.requested", "request_id": rid, "prompt": rid + "?"}))
# Asks both every run; answered ones are dropped by the harness, so only open ones show.
for rid in ("first", "second"):
    if rid not in answers:
        ask(rid)
ask("first")  # re-asking an answered request is ignored
if len(answers) == 2:
    print(json.dumps({"type": "message.completed", "text": f"first={answers['first']} second={answers['second']}"}))
"""


def test_several_requests_rerun_once_all_are_answered(tmp_path: Path, agents: Path) -> None:
    agent = write_agent(agents, "ask_twice.py", ASK_TWICE)

    async def go() -> None:
        async with Rig("local", tmp_path, f"python3 {agent}") as rig:
            outcome, events = await rig.send("go")
            assert outcome.status == "waiting"
            assert [r["request_id"] for r in of_type(events, "input.requested")] == [
                "first",
                "second",
            ]
            outcome, events = await rig.respond(("first", "approve"))
            assert (
                outcome.status == "waiting" and of_type(events, "process.exited") == []
            )  # not re-run yet
            bad, _ = await rig.respond(("nope", "approve"))
            assert (bad.status, bad.error) == ("failed", "no pending input request 'nope'")
            outcome, events = await rig.respond(("second", "deny"))
            assert (outcome.status, outcome.message) == ("completed", "first=approve second=deny")
            assert of_type(events, "input.requested") == []
            again, _ = await rig.respond(("first", "approve"))
            assert (again.status, again.error) == (
                "failed",
                "there is no pending input request to answer",
            )

    run(go())


def test_specs_resolve_and_an_empty_command_is_refused() -> None:
    harness = resolve_harness("command:python3 agent.py")
    assert isinstance(harness, CommandHarness) and harness.needs_sandbox
    assert (harness.spec, harness.command) == ("command:python3 agent.py", "python3 agent.py")
    assert resolve("echo hi").spec == "command:echo hi"
    for spec in ("command:", "command:   "):
        with pytest.raises(HarnessSpecError, match="command harness needs a command"):
            resolve(spec)
