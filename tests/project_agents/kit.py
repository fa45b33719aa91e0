"""Example agents for the core tests, written on the public Python agent API.

``agent`` is an async agent driven by the first word of its input::

    weather CITY        calls the get_weather tool, answers "It is Sunny in CITY."
    plan CITY           calls lookup, then get_weather, then answers
    combo CITY [broken] lookup, get_weather, a custom "note" event, usage (and a failing tool when
                        "broken"); answers with a structured forecast
    edit                reads seed.txt from the workspace with a tool, writes result.txt (upper case)
    env NAME            prints and answers with the environment variable NAME
    leak NAME           puts the environment variable NAME, as it is and stripped, in every channel
                        an agent has: stdout, stderr, tool inputs (JSON text, URL-encoded), a tool
                        output that is JSON text, a failing tool's error, a custom event, the reply
    leak_raise NAME     raises ValueError naming the stripped variable NAME with repr
    broken              calls a tool that raises, recovers, answers "the tool failed"
    approve PATH        asks for approval (delete_file) and answers with the choice
    two                 asks two questions at once (send_email, book_flight)
    history             answers with the session's messages as JSON
    json                answers with a structured value
    slow SECONDS        emits progress step 1, sleeps, emits step 2, answers
    slow_tool SECONDS   calls the "wait" tool, which sleeps
    write_after PATH S  sleeps S seconds, then writes PATH (proves cancellation when absent)
    raise               raises RuntimeError
    exit                raises SystemExit
    exit_in_task        starts a task that calls sys.exit(3), answers "answered anyway"
    print               prints to stdout and stderr
    secret              prints and answers with key-shaped strings
    usage               reports token usage
    workspace NAME      reports whether NAME existed in the workspace, then writes it
    flip COUNTER        passes ("pass") on even calls, "fail" on odd ones, counting in COUNTER
    model               answers with the model id
    block SECONDS       blocks the event loop (time.sleep in an async agent), then answers
    chdir PATH          changes the process's working folder, then answers
    close_std           closes file descriptors 1 and 2, then answers
    flood MB            prints MB megabytes, then answers
    anything else       "echo: <input>"

A structured input (``t.send_file``) is answered with the attached file's name, media type and text.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from anpord.agent import TurnContext


def get_weather(inp: dict[str, Any]) -> dict[str, Any]:
    return {"city": inp["city"], "forecast": "Sunny", "high": 21}


async def lookup(inp: dict[str, Any]) -> str:
    await asyncio.sleep(0)
    return f"{inp['city']}, NY"


async def _leave(code: int) -> None:
    await asyncio.sleep(0)
    sys.exit(code)


def broken_tool(inp: Any) -> Any:
    raise ValueError("tool exploded")


def _reject(inp: dict[str, Any]) -> Any:
    raise ValueError(f"rejected token {inp['token']!r}")


async def _leak(turn: TurnContext, value: str) -> str:
    core = value.strip()
    print(f"stdout {value}")
    print(f"stderr {core}", file=sys.stderr)
    as_json = json.dumps({"token": core})
    url = f"https://example.com/login?token={quote_plus(core)}&path={quote(core)}"
    stored = await turn.call_tool(
        "store",
        {"token": value, "json": as_json, "url": url},
        lambda i: json.dumps({"stored": i["token"].strip(), "json": i["json"]}),
    )
    try:
        await turn.call_tool("check_token", {"token": core}, _reject)
    except ValueError:
        pass
    turn.emit("note", text=core, nested=as_json)
    return f"token={core} json={as_json} stored={stored} url={url}"


def _attached(message: dict[str, Any]) -> str:
    parts = message["content"]
    file = next(p for p in parts if p.get("type") == "file")
    header, _, b64 = file["data_url"].partition(",")
    text = next(p["text"] for p in parts if p.get("type") == "text")
    return f"{text} | {file['name']} | {header} | {base64.b64decode(b64).decode()}"


async def agent(turn: TurnContext) -> Any:
    if not isinstance(turn.input, str):
        return _attached(turn.input)
    cmd, _, arg = turn.input.partition(" ")
    if cmd == "weather":
        w = await turn.call_tool("get_weather", {"city": arg or "Brooklyn"}, get_weather)
        return f"It is {w['forecast']} in {w['city']}."
    if cmd == "plan":
        where = await turn.call_tool("lookup", {"city": arg}, lookup)
        w = await turn.call_tool("get_weather", {"city": arg}, get_weather)
        return f"{where}: {w['forecast']}"
    if cmd == "combo":
        city, _, extra = arg.partition(" ")
        await turn.call_tool("lookup", {"city": city}, lookup)
        w = await turn.call_tool("get_weather", {"city": city}, get_weather)
        turn.emit("note", level="info", text="looked it up")
        turn.usage(input_tokens=12, output_tokens=3, cost=0.002)
        if extra == "broken":
            try:
                await turn.call_tool("broken_tool", {"x": 1}, broken_tool)
            except ValueError:
                pass
        return w
    if cmd == "edit":
        assert turn.workspace is not None, "no workspace"
        ws = turn.workspace
        text = await turn.call_tool("read_file", {"path": "seed.txt"}, lambda i: (ws / i["path"]).read_text())
        (ws / "result.txt").write_text(text.upper())
        return "done: result.txt"
    if cmd == "env":
        value = os.environ.get(arg, "")
        print(f"the value is {value}")
        return f"value={value}"
    if cmd == "leak":
        return await _leak(turn, os.environ.get(arg, ""))
    if cmd == "leak_raise":
        raise ValueError(f"bad token {os.environ.get(arg, '').strip()!r}")
    if cmd == "broken":
        try:
            await turn.call_tool("broken_tool", {"x": 1}, broken_tool)
        except ValueError:
            return "the tool failed"
    if cmd == "approve":
        choice = await turn.request_input(
            "Delete the file?",
            options=[{"id": "approve", "label": "Yes"}, {"id": "deny", "label": "No"}],
            tool_name="delete_file",
            input={"path": arg},
        )
        return f"you chose {choice}"
    if cmd == "two":
        a, b = await asyncio.gather(
            turn.request_input("Send the email?", tool_name="send_email", input={"to": "ana@example.com"}),
            turn.request_input("Book the flight?", tool_name="book_flight", input={"to": "LIS"}),
        )
        return f"email={a} flight={b}"
    if cmd == "history":
        return json.dumps(turn.messages)
    if cmd == "json":
        return {"city": "Brooklyn", "temp": 21, "tags": ["sunny", "warm"]}
    if cmd == "slow":
        turn.emit("progress", step=1)
        await asyncio.sleep(float(arg or 5))
        turn.emit("progress", step=2)
        return "finished slowly"
    if cmd == "slow_tool":
        await turn.call_tool("wait", {"seconds": float(arg)}, lambda i: asyncio.sleep(i["seconds"]))
        return "waited"
    if cmd == "write_after":
        path, _, seconds = arg.partition(" ")
        await asyncio.sleep(float(seconds))
        Path(path).write_text("the agent was not cancelled")
        return "wrote it"
    if cmd == "raise":
        raise RuntimeError("agent exploded")
    if cmd == "exit":
        raise SystemExit(3)
    if cmd == "exit_in_task":
        asyncio.ensure_future(_leave(3))  # fire and forget
        await asyncio.sleep(0.05)
        return "answered anyway"
    if cmd == "print":
        print("AGENT-STDOUT-LINE")
        print("AGENT-STDERR-LINE", file=sys.stderr)
        return "printed"
    if cmd == "secret":
        print("my key is sk-abcdefghijklmnopqrstuvwxyz123456")
        return "use sk-proj-ABCDEFGHIJKLMNOPQRSTUV1234"
    if cmd == "usage":
        turn.usage(input_tokens=10, output_tokens=5, cost=0.01)
        return "used"
    if cmd == "workspace":
        assert turn.workspace is not None, "no workspace"
        target = turn.workspace / arg
        existed = target.exists()
        target.write_text("written by a trial")
        return f"{'existed' if existed else 'fresh'} {turn.workspace}"
    if cmd == "flip":
        counter = Path(arg)
        n = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(n + 1))
        return "pass" if n % 2 == 0 else "fail"
    if cmd == "model":
        return str(turn.model)
    if cmd == "block":
        time.sleep(float(arg))  # what an async agent must not do
        return "unblocked"
    if cmd == "chdir":
        os.chdir(arg)
        return f"now in {arg}"
    if cmd == "close_std":
        os.close(1)
        os.close(2)
        return "closed"
    if cmd == "flood":
        line = "x" * 1023
        for _ in range(int(float(arg) * 1024)):
            print(line)
        return "flooded"
    return f"echo: {turn.input}"


def sync_agent(turn: Any) -> str:
    """A blocking agent: ``sleep S`` blocks the thread; ``meet FOLDER N`` blocks until N calls are
    in it at once (answers "met N"); ``tool`` and ``approve`` use the sync API."""
    cmd, _, arg = str(turn.input).partition(" ")
    if cmd == "sleep":
        time.sleep(float(arg))
        return f"slept {arg}"
    if cmd == "tool":
        w = turn.call_tool("get_weather", {"city": "Paris"}, get_weather)
        return f"sync {w['forecast']}"
    if cmd == "approve":
        return f"sync chose {turn.request_input('Proceed?')}"
    if cmd == "meet":
        return f"met {_meet(*arg.split())}"
    if cmd == "sleep_then_write":
        path, _, seconds = arg.partition(" ")
        time.sleep(float(seconds))
        turn.emit("woke")  # raises once the turn was cancelled
        Path(path).write_text("the sync agent was not cancelled")
        return "wrote"
    return f"sync echo: {turn.input} ({len(turn.messages)} messages)"


def _meet(folder: str, count: str) -> int:
    """Arrive at ``folder`` and block until ``count`` callers have (at most a minute); how many
    had arrived."""
    import threading
    import uuid

    Path(folder).mkdir(exist_ok=True)
    (Path(folder) / f"{os.getpid()}-{threading.get_ident()}-{uuid.uuid4().hex}").touch()
    deadline = time.monotonic() + 60
    while (arrived := len(os.listdir(folder))) < int(count) and time.monotonic() < deadline:
        time.sleep(0.01)
    return arrived


class LifecycleAgent:
    """An agent with run-level hooks: ``setup`` opens what every trial shares (here a counter
    file standing in for an HTTP session), ``teardown`` closes it. Each hook appends a line to
    ``$LIFECYCLE_LOG``."""

    def __init__(self) -> None:
        self.session: list[str] | None = None

    def _note(self, text: str) -> None:
        with open(os.environ["LIFECYCLE_LOG"], "a") as f:
            f.write(f"{text} {os.getpid()}\n")

    async def setup(self) -> None:
        if os.environ.get("LIFECYCLE_FAIL") == "setup":
            raise ConnectionError("cannot reach the model server")
        self.session = []
        self._note("setup")

    async def teardown(self) -> None:
        self._note(f"teardown after {len(self.session or [])} turns")
        self.session = None

    async def __call__(self, turn: TurnContext) -> str:
        assert self.session is not None, "setup did not run"
        self.session.append(str(turn.input))
        return f"turn {len(self.session)} on the shared session"


lifecycle_agent = LifecycleAgent()


class CallableAgent:
    """A callable object as an agent (its state lives on the instance)."""

    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, turn: TurnContext) -> str:
        self.calls += 1
        return f"object says {turn.input}"


callable_agent = CallableAgent()


class SyncCallableAgent:
    def __call__(self, turn: Any) -> str:
        return f"sync object says {turn.input}"


sync_callable_agent = SyncCallableAgent()
not_callable = 42
